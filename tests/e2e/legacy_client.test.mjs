// legacy_client.test.mjs: a legacy (handshake) client. sluice holds a gated call and asks with its
// own server→client elicitation/create (PROTOCOL §4.2); only an exact accept + approve true runs it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LINE_DEADLINE_MS, policyPath, startSluice, suiteOptions } from './lib.mjs';

const GATE = policyPath('gate.yaml');

function req(id, method, params) {
  const m = { jsonrpc: '2.0', id, method };
  if (params !== undefined) m.params = params;
  return m;
}

/** Starts sluice and runs the 2025 handshake with the given version and capabilities. */
async function handshake(t, { version = '2025-11-25', capabilities = { elicitation: { form: {} } }, era = 'legacy' } = {}) {
  const s = startSluice(t, { policy: GATE, era });
  const r = await s.request(req(0, 'initialize', { protocolVersion: version, capabilities, clientInfo: { name: 'legacy-e2e', version: '1' } }));
  assert.ok(r.result, `initialize failed: ${r.raw}`);
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { s, init: r.result };
}

/** Waits for sluice's elicitation/create request. */
async function nextElicitation(s) {
  const l = await s.next((m) => m.method === 'elicitation/create' && 'id' in m, LINE_DEADLINE_MS, 'an elicitation/create request from sluice');
  return l.msg;
}

function call(id, name, args, extra = {}) {
  return req(id, 'tools/call', { name, arguments: args, ...extra });
}

async function legacySync(s, n) {
  const r = await s.request(call(`sync-${n}`, 'echo', { __sync: n }));
  assert.ok(r.result, r.raw);
}

describe('legacy client', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`initialize is answered with the client's version, capabilities and serverInfo (${era} upstream)`, async (t) => {
      const { s, init } = await handshake(t, { era });
      assert.equal(init.protocolVersion, '2025-11-25');
      assert.ok(init.capabilities && init.capabilities.tools, JSON.stringify(init));
      assert.equal(typeof init.serverInfo.name, 'string');
      assert.ok(!('tasks' in init.capabilities), `sluice must not advertise tasks (a task defers execution past the question): ${JSON.stringify(init)}`);
      const list = await s.request(req(1, 'tools/list', {}));
      assert.ok(list.result.tools.some((x) => x.name === 'write_file'), list.raw);
      const r = await s.request(call(2, 'echo', { a: 1 }));
      assert.deepEqual(r.result.structuredContent, { echoed: { a: 1 } }, r.raw);
    });
  }

  test('ping is answered', async (t) => {
    const { s } = await handshake(t);
    const r = await s.request(req('p', 'ping'));
    assert.deepEqual(r.result, {}, r.raw);
  });

  test('deny: isError naming the rule, nothing forwarded', async (t) => {
    const { s } = await handshake(t);
    const r = await s.request(call(1, 'drop_table', { table: 'x' }));
    assert.equal(r.result.isError, true, r.raw);
    assert.match(r.result.content[0].text, /tools\.drop_table/);
    await legacySync(s, 1);
    assert.equal(s.upstreamCalls('drop_table').length, 0);
  });

  test('confirm: the held call runs once after accept + approve true, answered under the original id', async (t) => {
    const { s } = await handshake(t);
    const args = { path: '/srv/x', content: 'hello' };
    s.send(call(7, 'write_file', args));
    const e = await nextElicitation(s);
    assert.ok(typeof e.id === 'string' || typeof e.id === 'number', JSON.stringify(e));
    assert.notEqual(JSON.stringify(e.id), '7', 'sluice must use its own id space for its requests');
    assert.equal(e.params.mode, 'form', JSON.stringify(e));
    assert.match(e.params.message, /write_file/);
    assert.ok(e.params.message.includes('/srv/x') && e.params.message.includes('hello'), e.params.message);
    assert.equal(e.params.requestedSchema.properties.approve.type, 'boolean');
    await legacySync(s, 1);
    assert.equal(s.upstreamCalls('write_file').length, 0, 'nothing may run before the answer');
    s.send({ jsonrpc: '2.0', id: e.id, result: { action: 'accept', content: { approve: true } } });
    const r = await s.responseTo(7);
    assert.ok(r.result && !r.result.isError, r.raw);
    await legacySync(s, 2);
    const calls = s.upstreamCalls('write_file');
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].params.arguments, args);
    // A second answer to the same question does not run it again.
    s.send({ jsonrpc: '2.0', id: e.id, result: { action: 'accept', content: { approve: true } } });
    await legacySync(s, 3);
    assert.equal(s.upstreamCalls('write_file').length, 1);
  });

  const NO = [
    ['decline', { result: { action: 'decline' } }],
    ['cancel', { result: { action: 'cancel' } }],
    ['approve false', { result: { action: 'accept', content: { approve: false } } }],
    ['approve "true"', { result: { action: 'accept', content: { approve: 'true' } } }],
    ['no content', { result: { action: 'accept' } }],
    ['an error response', { error: { code: -32602, message: 'mode not supported' } }],
  ];
  for (const [label, answer] of NO) {
    test(`${label}: isError, nothing forwarded`, async (t) => {
      const { s } = await handshake(t);
      s.send(call(7, 'write_file', { path: 'a', content: 'b' }));
      const e = await nextElicitation(s);
      s.send({ jsonrpc: '2.0', id: e.id, ...answer });
      const r = await s.responseTo(7);
      assert.equal(r.result && r.result.isError, true, r.raw);
      await legacySync(s, 1);
      assert.equal(s.upstreamCalls('write_file').length, 0);
    });
  }

  test('two held calls: each answer applies to its own call only', async (t) => {
    const { s } = await handshake(t);
    s.send(call('A', 'write_file', { path: 'A', content: 'a' }));
    const eA = await nextElicitation(s);
    s.send(call('B', 'write_file', { path: 'B', content: 'b' }));
    const eB = await nextElicitation(s);
    assert.notDeepEqual(eA.id, eB.id);
    s.send({ jsonrpc: '2.0', id: eB.id, result: { action: 'accept', content: { approve: true } } });
    s.send({ jsonrpc: '2.0', id: eA.id, result: { action: 'decline' } });
    const rA = await s.responseTo('A');
    const rB = await s.responseTo('B');
    assert.equal(rA.result.isError, true, rA.raw);
    assert.ok(rB.result && !rB.result.isError, rB.raw);
    await legacySync(s, 1);
    const calls = s.upstreamCalls('write_file');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].params.arguments.path, 'B');
  });

  test('an answer with an id sluice never asked runs nothing', async (t) => {
    const { s } = await handshake(t);
    s.send(call(7, 'write_file', { path: 'a', content: 'b' }));
    const e = await nextElicitation(s);
    for (const id of [7, `${e.id}x`, 999999, 'sluice-e-999']) {
      s.send({ jsonrpc: '2.0', id, result: { action: 'accept', content: { approve: true } } });
    }
    await legacySync(s, 1);
    assert.equal(s.upstreamCalls('write_file').length, 0);
    s.send({ jsonrpc: '2.0', id: e.id, result: { action: 'decline' } });
    const r = await s.responseTo(7);
    assert.equal(r.result.isError, true, r.raw);
  });

  test('the client cancels the held call: no answer, nothing forwarded even if it then accepts', async (t) => {
    const { s } = await handshake(t);
    s.send(call(7, 'write_file', { path: 'a', content: 'b' }));
    const e = await nextElicitation(s);
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user' } });
    const c = await s.next((m) => m.method === 'notifications/cancelled', 1000, "sluice's cancellation of its elicitation (PROTOCOL §7.5)").catch(() => null);
    if (c) assert.deepEqual(c.msg.params.requestId, e.id, c.raw);
    s.send({ jsonrpc: '2.0', id: e.id, result: { action: 'accept', content: { approve: true } } });
    await s.noResponseTo(7, 500);
    await legacySync(s, 1);
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  for (const [label, caps, version] of [
    ['no elicitation capability', {}, '2025-11-25'],
    ['only url elicitation', { elicitation: { url: {} } }, '2025-11-25'],
  ]) {
    test(`${label}: a gated call fails closed with isError, nothing forwarded, nothing asked`, async (t) => {
      const { s } = await handshake(t, { version, capabilities: caps });
      const r = await s.request(call(7, 'write_file', { path: 'a', content: 'b' }));
      assert.equal(r.result && r.result.isError, true, r.raw);
      await legacySync(s, 1);
      assert.equal(s.upstreamCalls('write_file').length, 0);
      assert.ok(!s.lines.some((l) => l.msg.method === 'elicitation/create'), 'no question to a client that cannot answer it');
    });
  }

  test('a 2025-03-26 client is never asked under 2025-03-26 (that revision has no elicitation)', async (t) => {
    const { s, init } = await handshake(t, { version: '2025-03-26', capabilities: { elicitation: {} } });
    s.send(call(7, 'write_file', { path: 'a', content: 'b' }));
    const l = await s.next((m) => (m.method === 'elicitation/create' && 'id' in m) || (!('method' in m) && m.id === 7), LINE_DEADLINE_MS, 'a question or a refusal');
    if (init.protocolVersion === '2025-03-26') {
      assert.equal(l.msg.result && l.msg.result.isError, true, `negotiated 2025-03-26, so no question may be asked: ${l.raw}`);
    } else {
      // sluice answered another version (the spec lets a server do so); the client chose to go on.
      assert.ok(['2025-11-25', '2025-06-18'].includes(init.protocolVersion), JSON.stringify(init));
      if (l.msg.method === 'elicitation/create') s.send({ jsonrpc: '2.0', id: l.msg.id, result: { action: 'decline' } });
    }
    await legacySync(s, 1);
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('a 2025-06-18 client is asked without a mode field (its schema has none)', async (t) => {
    const { s } = await handshake(t, { version: '2025-06-18', capabilities: { elicitation: {} } });
    s.send(call(7, 'write_file', { path: 'a', content: 'b' }));
    const e = await nextElicitation(s);
    assert.ok(!('mode' in e.params), JSON.stringify(e));
    s.send({ jsonrpc: '2.0', id: e.id, result: { action: 'accept', content: { approve: true } } });
    const r = await s.responseTo(7);
    assert.ok(r.result && !r.result.isError, r.raw);
  });

  test('a task-augmented gated call is still asked first (a task must not defer execution past the question)', async (t) => {
    const { s } = await handshake(t);
    s.send(call(7, 'write_file', { path: 'a', content: 'b' }, { task: { ttl: 60000 } }));
    const l = await s.next((m) => (m.method === 'elicitation/create' && 'id' in m) || (!('method' in m) && JSON.stringify(m.id) === '7'), LINE_DEADLINE_MS, 'a question or a refusal');
    if (l.msg.method === 'elicitation/create') s.send({ jsonrpc: '2.0', id: l.msg.id, result: { action: 'decline' } });
    await legacySync(s, 1);
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });
});
