// http_gate.test.mjs: the confirmation gate over the HTTP front, 2026-07-28 (one POST per round),
// the header/body agreement rules (§5.2), and progress on a request's event stream. Every gated
// case asserts on what the fake upstream received (its log), after an HTTP sync barrier.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, assertInvalidState, assertReplayed, assertRefusal, confirmRetry, modernRequest, policyPath,
  resultText, scaled, sleep, suiteOptions, toolCall,
} from './lib.mjs';
import {
  asResponse, assertForwardedOnceHttp, assertNotForwardedHttp, assertRpcError, httpSync,
  keepAliveAgent, mcpHeadersFor, modernCall, rawConnect, rawRequest, rpc, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

async function askRound(s, id, name, args, opts = {}) {
  const r = await modernCall(s.target, toolCall(id, name, args, opts), { status: 200, agent: opts.agent });
  return assertAsked(r);
}

describe('HTTP 2026-07-28: the gate', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`round one asks (input_required + requestState, nothing forwarded); the exact accept forwards once (${era} upstream)`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE, era });
      const args = { path: '/srv/a.txt', content: 'hello over http' };
      const r1 = await rpc(s.target, toolCall('r1', 'write_file', args));
      assert.equal(r1.status, 200, r1.raw);
      assert.match(r1.headers['content-type'], /^application\/json/, 'round one is a plain JSON answer');
      assert.ok(r1.headers['x-request-id'], 'every /mcp answer names its request id');
      const q = assertAsked(asResponse(r1));
      assert.equal(r1.msg.id, 'r1');
      assert.match(q.message, /write_file/);
      await assertNotForwardedHttp(s, 'write_file');
      const r2 = await modernCall(s.target, confirmRetry('r2', 'write_file', args, q.state, ACCEPT), { status: 200 });
      assert.equal(r2.id, 'r2');
      assert.equal(r2.result && r2.result.resultType, 'complete', r2.raw);
      assert.notEqual(r2.result.isError, true, r2.raw);
      assert.equal(resultText(r2), 'wrote "/srv/a.txt"');
      await assertForwardedOnceHttp(s, 'write_file', args, q.state);
    });
  }

  const REFUSED = [
    ['approve "yes"', { action: 'accept', content: { approve: 'yes' } }],
    ['approve false', { action: 'accept', content: { approve: false } }],
    ['decline', { action: 'decline' }],
    ['cancel', { action: 'cancel' }],
  ];
  test('"yes", false, decline and cancel: isError refusals, nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    let id = 0;
    for (const [label, answer] of REFUSED) {
      const args = { path: `/srv/${label.replace(/\W/g, '')}`, content: 'c' };
      const q = await askRound(s, ++id, 'write_file', args);
      const r = await modernCall(s.target, confirmRetry(++id, 'write_file', args, q.state, answer), { status: 200 });
      try {
        assertRefusal(r);
      } catch (e) {
        e.message = `${label}: ${e.message}`;
        throw e;
      }
    }
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('changed arguments on round two: isError "arguments changed", nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const q = await askRound(s, 1, 'write_file', { path: 'f', content: 'c' });
    const r = await modernCall(s.target, confirmRetry(2, 'write_file', { path: 'f', content: 'EVIL' }, q.state, ACCEPT), { status: 200 });
    const text = assertRefusal(r);
    assert.match(text, /argument/i, r.raw);
    assert.match(text, /chang/i, r.raw);
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('replayed state: the second use gets the first run\'s result, marked replayed; forwarded exactly once', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const ok = await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    for (const agent of [undefined, keepAliveAgent(t, s.target)]) {
      const r = await modernCall(s.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { agent });
      assertReplayed(r, ok);
    }
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('replay race: two retries with one state on two connections at once forward exactly once; both get the result', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, fake: { FAKE_SLOW_MS: 200 } });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const [ra, rb] = await Promise.all([
      modernCall(s.target, confirmRetry('a', 'write_file', args, q.state, ACCEPT)),
      modernCall(s.target, confirmRetry('b', 'write_file', args, q.state, ACCEPT)),
    ]);
    const replayed = [ra, rb].filter((r) => r.result && r.result._meta && r.result._meta['dev.sluice/replayed']);
    assert.equal(replayed.length, 1, `one runs, the other gets its result: ${ra.raw} / ${rb.raw}`);
    const first = replayed[0] === ra ? rb : ra;
    assert.ok(first.result && !first.result.isError, first.raw);
    assertReplayed(replayed[0], first);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('tampered state: -32602 invalid_request_state, nothing forwarded; the intact state still works', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const mid = Math.floor(q.state.length / 2);
    const flipped = q.state.slice(0, mid) + (q.state[mid] === 'A' ? 'B' : 'A') + q.state.slice(mid + 1);
    let id = 10;
    for (const bad of [flipped, q.state.slice(0, -1), `${q.state}A`, 'not-a-state']) {
      assertInvalidState(await modernCall(s.target, confirmRetry(++id, 'write_file', args, bad, ACCEPT)));
    }
    await assertNotForwardedHttp(s, 'write_file');
    const ok = await modernCall(s.target, confirmRetry(++id, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('round two on a new TCP connection (a fresh agent) forwards; round one\'s connection stays open meanwhile', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const args = { path: '/srv/two-connections', content: 'x' };
    const agentA = keepAliveAgent(t, s.target, { maxSockets: 1 });
    const r1 = await rpc(s.target, toolCall(1, 'write_file', args), { agent: agentA });
    const q = assertAsked(asResponse(r1));
    const r2 = await rpc(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { agent: false });
    assert.notEqual(r2.reply.localPort, r1.reply.localPort, 'round two must travel on another TCP connection');
    const m = asResponse(r2);
    assert.ok(m.result && m.result.resultType === 'complete' && !m.result.isError, m.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
    // Round one's keep-alive connection is still usable afterwards.
    const e = await rpc(s.target, toolCall(3, 'echo', { after: true }), { agent: agentA });
    assert.equal(e.reply.localPort, r1.reply.localPort, 'the keep-alive connection was reused');
    assert.ok(e.msg && e.msg.result, e.raw);
  });

  for (const era of ['legacy', 'modern']) {
    test(`pretty-printed bodies with escapes reach the stdio upstream as compact, unescaped lines (a gated call's rounds, a passthrough read; ${era} upstream)`, async (t) => {
      // sluice copies the text of a container it read without whitespace or escapes; these
      // have both, so they must be written from the tree: one line (stdio framing), no \u0041.
      const s = await startHttpSluice(t, { policy: GATE, era });
      const compact = (raw) => !raw.includes('\\u0041') && !/\s/.test(raw.replace(/"(?:[^"\\]|\\.)*"/g, ''));
      const args = { path: '/srv/pretty.txt', content: 'A\nB "q"', list: [1, { k: 'v' }] };
      const pretty = (m) => JSON.stringify(m, null, 2).replaceAll('"A', '"\\u0041');
      const m1 = toolCall('p1', 'write_file', args);
      assert.match(pretty(m1), /\\u0041/);
      const q = assertAsked(asResponse(await rpc(s.target, m1, { rawBody: pretty(m1) })));
      const m2 = confirmRetry('p2', 'write_file', args, q.state, ACCEPT);
      const r2 = await modernCall(s.target, m2, { rawBody: pretty(m2), status: 200 });
      assert.ok(r2.result && r2.result.resultType === 'complete' && !r2.result.isError, r2.raw);
      const call = await assertForwardedOnceHttp(s, 'write_file', args, q.state);
      assert.ok(compact(call.raw), `not compact: ${call.raw}`);
      // A read is forwarded with its params as the client sent them (no canonical arguments):
      // once with whitespace only, once compact with escapes only, so neither hides the other.
      const extra = { a: [1, 'A', { b: 'A' }], c: {} };
      const read = modernRequest('p3', 'resources/read', { uri: 'file:///pretty', extra });
      const bodies = [JSON.stringify(read, null, '\t'), JSON.stringify(read).replaceAll('"A', '"\\u0041')];
      for (const body of bodies) assertRpcError(await rpc(s.target, read, { rawBody: body }), 404, -32601);
      const got = s.upstreamMessages().filter((m) => m.method === 'resources/read');
      assert.equal(got.length, 2, `two reads, each parsed whole: ${JSON.stringify(s.upstreamMessages().slice(-4))}`);
      for (const g of got) {
        assert.deepEqual(g.params.extra, extra);
        assert.ok(compact(g.raw), `not compact: ${g.raw}`);
      }
      assert.equal(s.upstreamMessages().filter((m) => m.parse_error !== undefined).length, 0, 'every line the upstream got was whole JSON');
    });
  }

  test('round two after round one\'s connection was closed forwards', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const args = { path: '/srv/closed-first', content: 'x' };
    const agentA = keepAliveAgent(t, s.target);
    const q = assertAsked(asResponse(await rpc(s.target, toolCall(1, 'write_file', args), { agent: agentA })));
    agentA.destroy();
    await sleep(100);
    const r2 = await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { agent: false, status: 200 });
    assert.ok(r2.result && !r2.result.isError, r2.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('deny: isError naming the rule, nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const r = await modernCall(s.target, toolCall(1, 'drop_table', { table: 'users' }), { status: 200 });
    assertRefusal(r, /tools\.drop_table/);
    await assertNotForwardedHttp(s, 'drop_table');
  });

  test('a client without form elicitation: HTTP 400 with -32021, nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const r = await rpc(s.target, toolCall(1, 'write_file', { path: 'a', content: 'b' }, { caps: {} }));
    assertRpcError(r, 400, -32021);
    assert.deepEqual(r.msg.error.data && r.msg.error.data.requiredCapabilities, { elicitation: { form: {} } }, r.raw);
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('an unknown method from a modern client: HTTP 404 with -32601', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const r = await rpc(s.target, modernRequest(1, 'ping', {}));
    assertRpcError(r, 404, -32601);
  });

  test('closing the connection of a forwarded modern call cancels it upstream (§5.2)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const msg = toolCall('long', 'sleep', { ms: 20000 });
    const c = await rawConnect(s.target, t);
    await c.write(rawRequest('POST', '/mcp', { ...mcpHeadersFor(msg) }, JSON.stringify(msg)));
    const end = Date.now() + scaled(5000);
    while (s.upstreamCalls('sleep').length === 0 && Date.now() < end) await sleep(20);
    assert.equal(s.upstreamCalls('sleep').length, 1, 'the sleep call reached the upstream');
    const upstreamId = s.upstreamCalls('sleep')[0].id;
    c.destroy(); // the client goes away: that is the cancellation in 2026-07-28
    const deadline = Date.now() + scaled(5000);
    let cancelled;
    while (Date.now() < deadline) {
      cancelled = s.upstreamMessages().find((m) => m.method === 'notifications/cancelled' && JSON.stringify(m.params && m.params.requestId) === JSON.stringify(upstreamId));
      if (cancelled) break;
      await sleep(25);
    }
    assert.ok(cancelled, `the upstream must get notifications/cancelled for request ${JSON.stringify(upstreamId)}; upstream log: ${JSON.stringify(s.upstreamMessages().map((m) => m.raw)).slice(0, 1500)}`);
  });
});

describe('HTTP 2026-07-28: mirrored headers (§5.2)', suiteOptions(), () => {
  const CASES = [
    ['Mcp-Method names another method', { 'Mcp-Method': 'tools/list' }, /^Header mismatch: Mcp-Method does not match/],
    ['Mcp-Method missing', { 'Mcp-Method': null }, /^Header missing: Mcp-Method /],
    ['Mcp-Method differs in case', { 'Mcp-Method': 'Tools/Call' }],
    ['Mcp-Name names another tool', { 'Mcp-Name': 'write_file' }, /^Header mismatch: Mcp-Name does not match/],
    ['Mcp-Name missing', { 'Mcp-Name': null }, /^Header missing: Mcp-Name /],
    ['Mcp-Name differs in case', { 'Mcp-Name': 'ECHO' }],
    ['Mcp-Name base64 of another name', { 'Mcp-Name': `=?base64?${Buffer.from('echo2').toString('base64')}?=` }],
    ['Mcp-Name base64 without padding', { 'Mcp-Name': '=?base64?ZWNobw?=' }],
    ['Mcp-Name base64 with a bad character', { 'Mcp-Name': '=?base64?ZWNob*==?=' }],
    ['MCP-Protocol-Version names the legacy era', { 'MCP-Protocol-Version': '2025-11-25' }, /^Header mismatch: MCP-Protocol-Version does not match/],
    ['MCP-Protocol-Version missing', { 'MCP-Protocol-Version': null }, /^Header missing: MCP-Protocol-Version \(it must repeat/],
    ['MCP-Protocol-Version names an unknown version', { 'MCP-Protocol-Version': '2027-01-01' }],
  ];
  test('each mismatch: HTTP 400 with -32020 under the request id, and the call is not forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    let n = 0;
    for (const [label, headers, said] of CASES) {
      const id = `mm-${++n}`;
      const r = await rpc(s.target, toolCall(id, 'echo', { mismatch: label }), { headers });
      try {
        // A missing header is called missing, a wrong one a mismatch.
        assertRpcError(r, 400, -32020, said);
        assert.equal(r.msg.id, id, 'the error carries the request id');
      } catch (e) {
        e.message = `${label}: ${e.message}`;
        throw e;
      }
    }
    await httpSync(s);
    const leaked = s.upstreamCalls('echo').filter((c) => c.params.arguments && 'mismatch' in c.params.arguments);
    assert.deepEqual(leaked.map((c) => c.params.arguments.mismatch), [], 'no mismatched call may reach the upstream');
  });

  test('a gated call with a mismatched Mcp-Name is refused before the gate: no question, nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const r = await rpc(s.target, toolCall(1, 'write_file', { path: 'a', content: 'b' }), { headers: { 'Mcp-Name': 'echo' } });
    assertRpcError(r, 400, -32020);
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('header names are case-insensitive and values are trimmed of SP/HTAB', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const r = await rpc(s.target, toolCall(1, 'echo', { casing: 1 }), {
      headers: { 'mcp-protocol-version': null, 'MCP-Protocol-Version': null, 'mCp-PrOtOcOl-VeRsIoN': '2026-07-28', 'Mcp-Method': null, 'MCP-METHOD': 'tools/call', 'Mcp-Name': ' echo\t' },
    });
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result, r.raw);
  });

  test('base64 sentinel: =?base64?...?= for Mcp-Name is decoded and matches (ASCII and non-ASCII names)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const b64 = (v) => `=?base64?${Buffer.from(v, 'utf8').toString('base64')}?=`;
    const r1 = await rpc(s.target, toolCall(1, 'echo', { sentinel: 'ascii' }), { headers: { 'Mcp-Name': b64('echo') } });
    assert.equal(r1.status, 200, r1.raw);
    assert.ok(r1.msg && r1.msg.result && !r1.msg.result.isError, r1.raw);
    // A name that is not header-safe must be sent encoded; sluice decodes and forwards it (the fake
    // upstream does not know the tool and says so, which proves it was forwarded).
    const odd = 'écho ✓';
    const r2 = await rpc(s.target, toolCall(2, odd, { sentinel: 'utf8' }), { headers: { 'Mcp-Name': b64(odd) } });
    assert.equal(r2.status, 200, r2.raw);
    assert.ok(r2.msg && r2.msg.error && /Unknown tool/.test(r2.msg.error.message), `the upstream should have answered for the unknown tool: ${r2.raw}`);
    await httpSync(s);
    assert.equal(s.upstreamCalls(odd).length, 1, 'the base64-named call reached the upstream');
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments.sentinel === 'ascii').length, 1);
  });

  test('a base64 sentinel for a gated tool still goes through the gate', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const h = { 'Mcp-Name': `=?base64?${Buffer.from('write_file').toString('base64')}?=` };
    const args = { path: 'b64', content: 'x' };
    const q = assertAsked(asResponse(await rpc(s.target, toolCall(1, 'write_file', args), { headers: h })));
    await assertNotForwardedHttp(s, 'write_file');
    const r = asResponse(await rpc(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { headers: h }));
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('MCP-Protocol-Version 2026-07-28 on a body without the envelope: HTTP 400 -32602, not forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const msg = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { noenvelope: 1 } } };
    const r = await rpc(s.target, msg, { modern: false, headers: { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'echo' } });
    assertRpcError(r, 400, -32602);
    await httpSync(s);
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.noenvelope).length, 0);
  });
});

describe('HTTP 2026-07-28: envelope and session headers', suiteOptions(), () => {
  test('an envelope naming the legacy era (header and body agree): HTTP 400 -32022 with data.supported, not forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const msg = toolCall(1, 'echo', { marker: 'old-claim' });
    msg.params._meta['io.modelcontextprotocol/protocolVersion'] = '2025-11-25';
    const r = await rpc(s.target, msg);
    assertRpcError(r, 400, -32022);
    assert.ok(Array.isArray(r.msg.error.data && r.msg.error.data.supported) && r.msg.error.data.supported.includes('2026-07-28'), r.raw);
    await httpSync(s);
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments.marker === 'old-claim').length, 0);
  });

  test('a modern request ignores Mcp-Session-Id and never gets one back', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const r = await rpc(s.target, toolCall(1, 'echo', { sid: 1 }), { headers: { 'Mcp-Session-Id': 'f'.repeat(32) } });
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result, r.raw);
    assert.equal(r.headers['mcp-session-id'], undefined, 'no session id in 2026-07-28');
    const args = { path: 'sid', content: 'x' };
    const q = assertAsked(asResponse(await rpc(s.target, toolCall(2, 'write_file', args), { headers: { 'Mcp-Session-Id': 'a'.repeat(32) } })));
    const r2 = asResponse(await rpc(s.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { headers: { 'Mcp-Session-Id': 'b'.repeat(32) } }));
    assert.ok(r2.result && !r2.result.isError, r2.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('a modern notification POST: 202 without a body', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const note = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } };
    const r = await rpc(s.target, note);
    assert.equal(r.status, 202, r.raw);
    assert.equal(r.reply.text, '');
  });

  test('resources/read mirrors params.uri in Mcp-Name: a mismatch is 400 -32020; a match is forwarded (the fake has no resources: 404 -32601)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, era: 'modern' });
    const msg = modernRequest(1, 'resources/read', { uri: 'file:///etc/motd' });
    const bad = await rpc(s.target, msg, { headers: { 'Mcp-Name': 'file:///etc/passwd' } });
    assertRpcError(bad, 400, -32020);
    const none = await rpc(s.target, msg, { headers: { 'Mcp-Name': null } });
    assertRpcError(none, 400, -32020);
    await httpSync(s);
    assert.equal(s.upstreamMessages().filter((m) => m.method === 'resources/read').length, 0, 'mismatched reads are not forwarded');
    const ok = await rpc(s.target, msg);
    assertRpcError(ok, 404, -32601);
    assert.equal(s.upstreamMessages().filter((m) => m.method === 'resources/read').length, 1, 'the matching read reached the upstream');
  });
});

describe('HTTP 2026-07-28: progress', suiteOptions(), () => {
  test('progress of a forwarded call arrives on that request\'s event stream with the client\'s own token', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const r = await rpc(s.target, toolCall('p1', 'progress', {}, { meta: { progressToken: 'client-token-A' } }));
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.sse, `a call with progress must be answered as an event stream; got ${r.headers['content-type']}: ${r.reply.text.slice(0, 300)}`);
    const notes = r.events.filter((m) => m && m.method === 'notifications/progress');
    assert.equal(notes.length, 2, `two progress notifications: ${JSON.stringify(r.events)}`);
    for (const n of notes) assert.equal(n.params.progressToken, 'client-token-A', JSON.stringify(n));
    assert.deepEqual(notes.map((n) => n.params.progress), [1, 2]);
    const last = r.events[r.events.length - 1];
    assert.equal(JSON.stringify(last.id), '"p1"', `the final response closes the stream: ${JSON.stringify(r.events)}`);
    assert.ok(last.result && last.result.resultType === 'complete', JSON.stringify(last));
    // The upstream saw sluice's own token, not the client's.
    const call = s.upstreamCalls('progress')[0];
    assert.ok(call, 'forwarded');
    assert.ok(!call.raw.includes('client-token-A'), `the client's token must not reach the upstream: ${call.raw}`);
  });

  test('two clients with the same progress token each get only their own progress', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, fake: { FAKE_SLOW_MS: 300 } });
    const [a, b] = await Promise.all([
      rpc(s.target, toolCall('a', 'progress', { who: 'a' }, { meta: { progressToken: 7 } })),
      rpc(s.target, toolCall('b', 'progress', { who: 'b' }, { meta: { progressToken: 7 } })),
    ]);
    for (const [r, id] of [[a, 'a'], [b, 'b']]) {
      assert.ok(r.sse, r.reply.text);
      const notes = r.events.filter((m) => m && m.method === 'notifications/progress');
      assert.equal(notes.length, 2, `${id}: exactly its own two notifications: ${JSON.stringify(r.events)}`);
      for (const n of notes) assert.equal(n.params.progressToken, 7);
      const fin = r.events.filter((m) => m && 'id' in m && !('method' in m));
      assert.deepEqual(fin.map((m) => m.id), [id], `${id}: its own response only`);
      assert.match(fin[0].result.content[0].text, /progress sent/);
    }
  });
});
