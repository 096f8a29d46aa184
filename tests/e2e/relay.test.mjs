// relay.test.mjs: era detection, discovery, pass-through, ordering and notifications.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import {
  LINE_DEADLINE_MS, MODERN, envelope, legacyCall, legacyHandshake, modernRequest, policyPath, resultText,
  scaled, sleep, startSluice, suiteOptions, toolCall, waitPidGone,
} from './lib.mjs';

const GATE = policyPath('gate.yaml');
const ERAS = ['legacy', 'modern'];

/** Waits (bounded) until the upstream received a tools/call of name. A cancellation sent before
 *  the call was forwarded would test nothing, and a sluice under valgrind starts slowly. */
async function forwarded(s, name) {
  const end = Date.now() + LINE_DEADLINE_MS;
  while (s.upstreamCalls(name).length === 0) {
    if (Date.now() > end) throw new Error(`the upstream did not receive ${name} within ${LINE_DEADLINE_MS} ms`);
    await sleep(20);
  }
}
const TOOL_NAMES = ['echo', 'write_file', 'delete_file', 'drop_table', 'ask', 'progress', 'sleep', 'fail', 'rpc_error', 'big', 'srvreq'];

function hasEnvelope(params) {
  const m = params && params._meta;
  return !!m && m['io.modelcontextprotocol/protocolVersion'] === MODERN
    && typeof m['io.modelcontextprotocol/clientCapabilities'] === 'object';
}

describe('upstream era detection (PROTOCOL §1.8)', suiteOptions(), () => {
  test('modern upstream: server/discover with the envelope first, never initialize', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'modern' });
    const r = await s.request(modernRequest(1, 'tools/list'));
    assert.ok(r.result, r.raw);
    const log = s.upstreamMessages();
    assert.equal(log[0].method, 'server/discover', `first upstream message: ${log[0] && log[0].raw}`);
    assert.ok(hasEnvelope(log[0].params), `discover without a full envelope: ${log[0].raw}`);
    assert.ok(!log.some((m) => m.method === 'initialize'), 'a modern upstream must not be initialized');
    assert.ok(!log.some((m) => m.parse_error), 'sluice sent the upstream a non-JSON line');
    const list = log.find((m) => m.method === 'tools/list');
    assert.ok(hasEnvelope(list.params), `requests to a modern upstream need the envelope: ${list.raw}`);
  });

  test('legacy upstream: discover fails, then initialize and notifications/initialized before anything else', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy' });
    const r = await s.request(modernRequest(1, 'tools/list'));
    assert.ok(r.result, r.raw);
    const log = s.upstreamMessages();
    const methods = log.map((m) => m.method);
    assert.equal(methods[0], 'server/discover', JSON.stringify(methods));
    const iInit = methods.indexOf('initialize');
    const iDone = methods.indexOf('notifications/initialized');
    const iList = methods.indexOf('tools/list');
    assert.ok(iInit > 0 && iDone > iInit && iList > iDone, `order: ${JSON.stringify(methods)}`);
    assert.equal(methods.filter((m) => m === 'initialize').length, 1, 'initialize exactly once');
    const init = log[iInit];
    assert.equal(typeof init.params.protocolVersion, 'string', init.raw);
    assert.equal(typeof init.params.capabilities, 'object', init.raw);
    assert.equal(typeof init.params.clientInfo.name, 'string', init.raw);
    assert.notEqual(JSON.stringify(init.id), JSON.stringify(log[0].id), 'initialize must not reuse the discover id');
    assert.ok(!('id' in log[iDone]) || log[iDone].id === undefined, 'notifications/initialized is a notification');
  });

  test('legacy upstream that never answers discover: falls back to initialize after a timeout', { timeout: scaled(45000) }, async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy', fake: { FAKE_SILENT_DISCOVER: '1' } });
    const r = await s.request(modernRequest(1, 'tools/list'), 30000);
    assert.ok(r.result, r.raw);
    assert.ok(s.upstreamMessages().some((m) => m.method === 'initialize'));
  });
});

describe('discovery and listing', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`server/discover is answered for a modern client (${era} upstream)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const r = await s.request(modernRequest('d', 'server/discover'));
      assert.ok(r.result, r.raw);
      assert.equal(r.result.resultType, 'complete', r.raw);
      assert.ok(Array.isArray(r.result.supportedVersions) && r.result.supportedVersions.includes(MODERN), r.raw);
      assert.ok(r.result.capabilities && r.result.capabilities.tools, `tools capability from the upstream: ${r.raw}`);
      assert.ok(Number.isInteger(r.result.ttlMs) && r.result.ttlMs >= 0, `ttlMs is required on DiscoverResult: ${r.raw}`);
      assert.ok(['public', 'private'].includes(r.result.cacheScope), `cacheScope is required on DiscoverResult: ${r.raw}`);
      assert.ok(!('tasks' in r.result.capabilities), `no tasks capability on the modern wire: ${r.raw}`);
    });

    test(`tools/list passes through with resultType/ttlMs/cacheScope (${era} upstream)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const r = await s.request(modernRequest(2, 'tools/list'));
      assert.ok(r.result, r.raw);
      assert.equal(r.result.resultType, 'complete', r.raw);
      assert.deepEqual(r.result.tools.map((x) => x.name).sort(), [...TOOL_NAMES].sort());
      assert.ok(Number.isInteger(r.result.ttlMs) && r.result.ttlMs >= 0, r.raw);
      assert.ok(['public', 'private'].includes(r.result.cacheScope), r.raw);
      if (era === 'legacy') {
        assert.equal(r.result.ttlMs, 0, r.raw);
        assert.equal(r.result.cacheScope, 'private', r.raw);
      }
      // PROTOCOL §4.7/§7.7: the 2026 wire has no execution.taskSupport (SDK2 strips it too).
      for (const tool of r.result.tools) assert.ok(!('execution' in tool), `execution must be stripped for a modern client: ${JSON.stringify(tool)}`);
    });

    test(`tools/list is the same on two connections (${era} upstream)`, async (t) => {
      const a = startSluice(t, { policy: GATE, era });
      const b = startSluice(t, { policy: GATE, era });
      const ra = await a.request(modernRequest(1, 'tools/list'));
      const rb = await b.request(modernRequest(1, 'tools/list', {}, { caps: {} }));
      assert.deepEqual(ra.result.tools, rb.result.tools);
    });
  }
});

describe('tools/call pass-through', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`upstream tool error and JSON-RPC error are relayed under the client's id (${era})`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const r1 = await s.request(toolCall('f', 'fail', {}));
      assert.equal(r1.result.resultType, 'complete', r1.raw);
      assert.equal(r1.result.isError, true, r1.raw);
      const r2 = await s.request(toolCall('e', 'rpc_error', {}));
      assert.ok(r2.error, r2.raw);
      assert.equal(r2.error.code, -32603, r2.raw);
      const r3 = await s.request(toolCall('u', 'no_such_tool', {}));
      assert.ok(r3.error, r3.raw);
      assert.equal(r3.error.code, -32602, r3.raw);
    });

    test(`a 2 MB result is relayed intact (${era})`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const r = await s.request(toolCall('big', 'big', { bytes: 2 * 1024 * 1024 }), 15000);
      assert.equal(resultText(r).length, 2 * 1024 * 1024);
    });
  }

  test('an allowed tool whose modern upstream answers input_required: passed through untouched', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'modern' });
    const r1 = await s.request(toolCall(1, 'ask', { topic: 'x' }));
    assert.equal(r1.result.resultType, 'input_required', r1.raw);
    assert.deepEqual(Object.keys(r1.result.inputRequests), ['upstream.q'], r1.raw);
    assert.equal(r1.result.inputRequests['upstream.q'].params.message, 'What is your answer?');
    assert.match(r1.result.requestState, /^fake-upstream-state-1-\d+$/, `the upstream's state must pass untouched: ${r1.raw}`);
    const answer = { 'upstream.q': { action: 'accept', content: { answer: 'blue' } } };
    const r2 = await s.request(toolCall(2, 'ask', { topic: 'x' }, { params: { inputResponses: answer, requestState: r1.result.requestState } }));
    assert.equal(r2.result.resultType, 'complete', r2.raw);
    assert.equal(resultText(r2), `answered: blue (state ${r1.result.requestState})`);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2);
    assert.equal(calls[1].params.requestState, r1.result.requestState);
    assert.deepEqual(calls[1].params.inputResponses, answer);
  });

  test('responses come back in the order the upstream answered', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.send(toolCall('slow', 'sleep', { ms: 700 }));
    s.send(toolCall('fast', 'echo', { x: 1 }));
    const first = await s.next((m) => m && !('method' in m), LINE_DEADLINE_MS, 'the first response');
    const second = await s.next((m) => m && !('method' in m), LINE_DEADLINE_MS, 'the second response');
    assert.equal(first.msg.id, 'fast', first.raw);
    assert.equal(second.msg.id, 'slow', second.raw);
  });

  test('40 interleaved calls: every one answered exactly once, with its own result', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const ids = [];
    let batch = '';
    for (let i = 0; i < 40; i++) {
      const id = i % 2 ? `s${i}` : i;
      ids.push(id);
      batch += JSON.stringify(toolCall(id, 'sleep', { ms: (i * 37) % 200, tag: i })) + '\n';
    }
    s.sendRaw(batch);
    for (let i = 0; i < 40; i++) {
      const r = await s.responseTo(ids[i]);
      assert.equal(resultText(r), `slept ${(i * 37) % 200}`, r.raw);
    }
    await sleep(300);
    assert.equal(s.lines.filter((l) => !('method' in l.msg)).length, 0, 'no duplicate responses');
    assert.equal(s.upstreamCalls('sleep').length, 40);
  });

  test('a request split over several writes is served', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const line = JSON.stringify(toolCall('split', 'echo', { s: 'ü'.repeat(50) })) + '\n';
    const buf = Buffer.from(line);
    // Split inside a multi-byte character too.
    const cuts = [5, 40, buf.indexOf(Buffer.from('ü')) + 1, buf.length - 2];
    let prev = 0;
    for (const c of cuts) {
      s.sendRaw(buf.subarray(prev, c));
      prev = c;
      await sleep(50);
    }
    s.sendRaw(buf.subarray(prev));
    const r = await s.responseTo('split');
    assert.ok(r.result, r.raw);
    assert.deepEqual(r.result.structuredContent, { echoed: { s: 'ü'.repeat(50) } });
  });

  test('a misbehaving upstream (non-JSON lines, unknown ids) does not disturb the relay', async (t) => {
    const s = startSluice(t, { policy: GATE, fake: { FAKE_NOISE: '1' } });
    for (const id of [1, 2, 3]) {
      const r = await s.request(toolCall(id, 'echo', { id }));
      assert.deepEqual(r.result.structuredContent, { echoed: { id } }, r.raw);
    }
    await sleep(200);
    assert.ok(!s.lines.some((l) => l.msg && l.msg.id === 987654321), 'a response to an id the client never used must not be relayed');
  });
});

describe('pressure and misbehaviour', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`an upstream request is never written to a modern client (${era} upstream; 2026 servers send no requests)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const r = await s.request(toolCall('sr', 'srvreq', {}), 8000);
      assert.ok(r.result || r.error, r.raw);
      await sleep(200);
      const leaked = s.lines.filter((l) => l.msg && typeof l.msg.method === 'string' && 'id' in l.msg);
      assert.deepEqual(leaked.map((l) => l.raw), [], 'sluice wrote a JSON-RPC request to a modern client');
      const r2 = await s.request(toolCall('after', 'echo', {}));
      assert.ok(r2.result, r2.raw);
    });
  }

  // A handshake-era client is asked only what it declared at initialize: sluice refuses the
  // server's request for anything else at once (the upstream gets an error), and never writes it
  // to the client, which could not answer it.
  test('a handshake client without elicitation: the server\'s elicitation/create is refused upstream, never written to it', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '20000' } });
    await legacyHandshake(s, { capabilities: { sampling: {}, roots: {} } });
    const r = await s.request(legacyCall('la', 'legacy_ask', {}), 10000);
    assert.ok(r.result, r.raw);
    const got = JSON.parse(resultText(r));
    assert.ok(got.answer && got.answer.error, `the upstream's request must get an error at once: ${r.raw}`);
    assert.match(got.answer.error.message, /cannot answer/, r.raw);
    const leaked = s.lines.filter((l) => l.msg && l.msg.method === 'elicitation/create');
    assert.deepEqual(leaked.map((l) => l.raw), [], 'sluice wrote the server\'s question to a client that cannot answer it');
  });

  test('a client that stops reading: everything arrives once it reads again, and sluice memory stays bounded', { timeout: scaled(90000) }, async (t) => {
    // MALLOC_PERTURB_ (meson sets it for every test) makes glibc fill each block it hands out
    // and each it frees, so the RSS then counts the allocator's free lists in full, not what
    // sluice holds: 32.2 MiB with it against 13.3 without, for replies the client's output
    // holds by reference (17.2 and 13.3 for copies). The bound is about sluice; glibc's
    // default is what runs in production.
    const s = startSluice(t, { policy: GATE, env: { MALLOC_PERTURB_: '0' } });
    await s.request(toolCall(0, 'echo', {}));
    const rss = () => Number((/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${s.pid}/status`, 'utf8')) || [0, 0])[1]) * 1024;
    // Under ASan or valgrind's memcheck the RSS is the tool's (shadow memory, redzones, memcheck's
    // 20 MB queue of freed blocks), so the bound below says nothing there; the rest of the test does.
    const sanitized = /libasan|libubsan|vgpreload_memcheck/.test(fs.readFileSync(`/proc/${s.pid}/maps`, 'utf8'));
    const before = rss();
    s.proc.stdout.pause();
    const N = 40;
    const BYTES = 1024 * 1024;
    for (let i = 1; i <= N; i++) s.send(toolCall(i, 'big', { bytes: BYTES }));
    await sleep(3000);
    const during = rss();
    s.proc.stdout.resume();
    for (let i = 1; i <= N; i++) {
      const r = await s.responseTo(i, 20000);
      assert.equal(resultText(r).length, BYTES, `response ${i}`);
    }
    if (!sanitized) {
      assert.ok(during - before < 32 * 1024 * 1024, `sluice grew by ${((during - before) / 1048576).toFixed(1)} MiB while the client was not reading (40 MiB was pending)`);
    }
  });

  test('a client that closes its read end: sluice exits cleanly on EOF and the upstream is gone', async (t) => {
    const s = startSluice(t, { policy: GATE });
    await s.request(toolCall(1, 'echo', {}));
    const child = await s.upstreamPid();
    s.proc.stdout.destroy();
    s.send(toolCall(2, 'big', { bytes: 1024 * 1024 }));
    s.send(toolCall(3, 'echo', {}));
    await sleep(500);
    s.proc.stdin.end();
    const { signal } = await s.waitExit(8000);
    assert.ok(signal === null || signal === 'SIGPIPE', `sluice died of ${signal}`);
    assert.ok(await waitPidGone(child, 3000), `upstream pid ${child} survived`);
  });
});

describe('notifications', suiteOptions(), () => {
  for (const era of ERAS) {
    for (const token of ['tok-1', 42]) {
      test(`notifications/progress reach the client with its token ${JSON.stringify(token)} (${era})`, async (t) => {
        const s = startSluice(t, { policy: GATE, era });
        s.send(toolCall('p', 'progress', {}, { meta: { progressToken: token } }));
        const n1 = await s.next((m) => m.method === 'notifications/progress', LINE_DEADLINE_MS, 'progress 1');
        const n2 = await s.next((m) => m.method === 'notifications/progress', LINE_DEADLINE_MS, 'progress 2');
        assert.deepEqual(n1.msg.params.progressToken, token, n1.raw);
        assert.equal(n1.msg.params.progress, 1);
        assert.deepEqual(n2.msg.params.progressToken, token, n2.raw);
        assert.equal(n2.msg.params.progress, 2);
        const r = await s.responseTo('p');
        assert.ok(r.result, r.raw);
        // The notifications arrived before the result (they were queued first).
      });
    }
  }

  test('notifications/cancelled reaches the upstream for the forwarded id; no response follows', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.send(toolCall('c1', 'sleep', { ms: 800 }));
    await forwarded(s, 'sleep');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1', reason: 'user', _meta: envelope() } });
    await s.noResponseTo('c1', 1500);
    const end = Date.now() + LINE_DEADLINE_MS;
    while (!s.upstreamMessages().some((m) => m.method === 'notifications/cancelled') && Date.now() < end) await sleep(20);
    const log = s.upstreamMessages();
    const call = log.find((m) => m.method === 'tools/call' && m.params.name === 'sleep');
    const cancel = log.find((m) => m.method === 'notifications/cancelled');
    assert.ok(cancel, 'the cancellation must be relayed upstream');
    assert.deepEqual(cancel.params.requestId, call.id, `requestId must be the upstream's id for the call: ${cancel.raw} vs ${call.raw}`);
  });

  test('a late upstream answer to a cancelled call is not relayed (PROTOCOL §4.4)', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.send(toolCall('c2', 'sleep', { ms: 500, ignoreCancel: true }));
    await forwarded(s, 'sleep');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c2', _meta: envelope() } });
    await s.noResponseTo('c2', 1200);
    // The connection still works.
    const r = await s.request(toolCall('after', 'echo', {}));
    assert.ok(r.result, r.raw);
  });

  test('cancelling a confirmation question that was already answered changes nothing', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const r = await s.request(toolCall('q', 'write_file', { path: 'a', content: 'b' }));
    assert.equal(r.result.resultType, 'input_required', r.raw);
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'q', _meta: envelope() } });
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });
});

describe('envelope checks (PROTOCOL §1.3)', suiteOptions(), () => {
  test('a gated call whose envelope lacks clientCapabilities: -32602, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const r = await s.request({
      jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'write_file', arguments: { path: 'a', content: 'b' }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } },
    });
    assert.ok(r.error, r.raw);
    assert.equal(r.error.code, -32602, r.raw);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('a request naming an unknown modern version: -32022 with data.supported', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const r = await s.request({
      jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'write_file', arguments: { path: 'a', content: 'b' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } },
    });
    assert.ok(r.error, r.raw);
    assert.equal(r.error.code, -32022, r.raw);
    assert.ok(Array.isArray(r.error.data.supported) && r.error.data.supported.includes(MODERN), r.raw);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });
});
