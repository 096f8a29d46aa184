// smuggling.test.mjs: ways to make the upstream run something other than what the gate checked,
// found in review. Each one must be refused before anything reaches the upstream: near-miss
// params keys (peers such as Go's encoding/json match "Name" and "ARGUMENTS" without case), a
// tools/call sent as a notification, a method that is almost "tools/call", a NUL in a key, keys
// that differ only in case in gated arguments. Also: a second SIGTERM with a call in flight.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACCEPT, assertAsked, confirmRetry, envelope, policyPath, sleep, startSluice, suiteOptions, toolCall } from './lib.mjs';

const GATE = policyPath('gate.yaml');
const META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}';
const line = (id, method, body) => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":{${body},${META}}}`;

describe('smuggling past the gate', suiteOptions(), () => {
  const nearMisses = [
    ['a second tool name in "Name"', '"name":"echo","Name":"write_file","arguments":{"path":"/etc/x","content":"c"}'],
    ['a second argument set in "Arguments"', '"name":"write_file","arguments":{"path":"/tmp/ok","content":"c"},"Arguments":{"path":"/root/.ssh/authorized_keys","content":"k"}'],
    ['"ARGUMENTS" on an allowed tool', '"name":"echo","arguments":{},"ARGUMENTS":{"x":1}'],
    ['an unknown params member', '"name":"echo","arguments":{},"extra":1'],
    ['a NUL in a params key', '"name":"echo","name\\u0000":"write_file","arguments":{}'],
    ['a NUL in the tool name', '"name":"write_file\\u0000","arguments":{}'],
  ];
  for (const [label, body] of nearMisses) {
    test(`${label}: refused, nothing forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(line(1, 'tools/call', body) + '\n');
      const r = await s.next((m) => m && m.error && (m.id === 1 || m.id === null), undefined, 'the refusal');
      assert.ok([-32602, -32700].includes(r.msg.error.code), r.raw);
      await s.sync();
      assert.deepEqual(s.upstreamCalls(), [], 'nothing may reach the upstream');
    });
  }

  test('a gated call whose arguments hold keys differing only in case: -32602, never asked', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const r = await s.request(toolCall(1, 'write_file', { path: '/tmp/ok', Path: '/etc/passwd', content: 'c' }));
    assert.equal(r.error && r.error.code, -32602, r.raw);
    await s.sync();
    assert.deepEqual(s.upstreamCalls('write_file'), []);
  });

  for (const method of ['Tools/Call', 'tools/call ', 'TOOLS/CALL', 'tools/call\\u0000', 'tools\\/call\\u200b']) {
    test(`method ${JSON.stringify(method)}: -32601 or a parse error, nothing forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(line(1, method, '"name":"write_file","arguments":{"path":"/etc/x","content":"c"}') + '\n');
      const r = await s.next((m) => m && m.error && (m.id === 1 || m.id === null), undefined, 'the refusal');
      assert.ok([-32601, -32700, -32600].includes(r.msg.error.code), r.raw);
      await s.sync();
      assert.equal(s.upstreamMessages().filter((m) => m.params && m.params.name === 'write_file').length, 0);
    });
  }

  // Outside the gated method too: a method with a space (or another byte no MCP method has) is
  // refused, so no upstream is left to guess what "resources/read x" or "tools/list " means.
  for (const method of ['tools/list ', 'resources/read x', ' ping', 'prompts/get\\t']) {
    test(`method ${JSON.stringify(method)}: -32601, never reaches the upstream`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(`{"jsonrpc":"2.0","id":7,"method":"${method}","params":{"name":"x","uri":"file:///etc/passwd",${META}}}\n`);
      const r = await s.next((m) => m && m.id === 7, undefined, 'the refusal');
      assert.equal(r.msg.error && r.msg.error.code, -32601, r.raw);
      await s.sync();
      assert.deepEqual(s.upstreamMessages().filter((m) => m.id !== undefined && typeof m.method === 'string' && m.method.trim() !== m.method || /\s/.test(m.method || '')), []);
    });
  }

  test('tools/call sent as a notification (no id): dropped, never forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.send({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'write_file', arguments: { path: '/etc/x', content: 'c' }, _meta: envelope() } });
    s.send({ jsonrpc: '2.0', method: 'notifications/whatever', params: {} });
    await s.sync();
    const seen = s.upstreamMessages().filter((m) => m.method === 'tools/call' || m.method === 'notifications/whatever');
    assert.deepEqual(seen.filter((m) => !(m.params && m.params.arguments && '__sync' in m.params.arguments)), []);
  });

  test('an approved call is forwarded with rebuilt params: no round-two fields', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await s.request(toolCall(1, 'write_file', args));
    assertAsked(q);
    const r = await s.request(confirmRetry(2, 'write_file', args, q.result.requestState, ACCEPT));
    assert.ok(r.result && !r.result.isError, r.raw);
    await s.sync();
    const [call] = s.upstreamCalls('write_file');
    const extra = Object.keys(call.params).filter((k) => !['_meta', 'arguments', 'name'].includes(k));
    assert.deepEqual(extra, [], call.raw);
    assert.deepEqual(call.params.arguments, { content: 'c', path: 'f' });
  });
});

describe('signals', suiteOptions(), () => {
  test('a second SIGTERM while a call is in flight: sluice exits, no crash, upstream gone', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.send(toolCall(1, 'sleep', { ms: 5000 }));
    await sleep(300);
    const pid = await s.upstreamPid();
    s.proc.kill('SIGTERM');
    await sleep(30);
    s.proc.kill('SIGTERM');
    const { code, signal } = await s.waitExit(5000);
    assert.equal(signal, null, `sluice died of ${signal}: ${s.stderr}`);
    assert.equal(code, 0);
    await sleep(200);
    assert.throws(() => process.kill(pid, 0), 'the upstream must be gone');
  });
});
