// http_handshake.test.mjs: the 2025-11-25 (handshake) era over the HTTP front (§5.3, §4.2):
// initialize mints an Mcp-Session-Id; a gated tools/call is answered as an event stream that
// carries sluice's own elicitation/create; the client POSTs its answer (202) on another request;
// the stream then delivers the tool result. Sessions: 400 without an id, 404 for an unknown or
// ended one (also a live id with one character changed), DELETE, the standalone GET stream (one
// per session).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, test } from 'node:test';
import { policyPath, scaled, sleep, suiteOptions } from './lib.mjs';
import {
  LegacyHttpSession, assertForwardedOnceHttp, assertNotForwardedHttp, httpRequest, keepAliveAgent,
  legacyToolCall, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');
const ACCEPT_ANSWER = { action: 'accept', content: { approve: true } };

/** Starts a gated call on s and returns {reply, ask}: the open stream and sluice's question. */
async function heldCall(sess, id, name, args, extra) {
  const reply = await sess.post(legacyToolCall(id, name, args, extra));
  assert.equal(reply.status, 200, `tools/call: HTTP ${reply.status} ${reply.text}`);
  assert.ok(reply.sse, `a gated tools/call must be answered as an event stream; got ${reply.contentType}`);
  const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create', undefined, "sluice's elicitation/create");
  return { reply, ask };
}

describe('HTTP legacy era: the held call', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`initialize -> session; gated call -> SSE elicitation; answer POST 202; stream delivers the result (${era} upstream)`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE, era });
      const sess = new LegacyHttpSession(s.target);
      const init = await sess.initialize();
      assert.match(sess.sessionId, /^[\x21-\x7e]+$/, 'visible ASCII only');
      assert.ok(sess.sessionId.length >= 16, `a session id with enough entropy: ${sess.sessionId}`);
      assert.equal(init.msg.result.protocolVersion, '2025-11-25');
      const list = await sess.rpc({ jsonrpc: '2.0', id: 'l1', method: 'tools/list' });
      assert.equal(list.status, 200, list.raw);
      assert.ok(list.msg.result.tools.some((x) => x.name === 'write_file'), list.raw);

      const args = { path: '/srv/legacy.txt', content: 'over http' };
      const { reply, ask } = await heldCall(sess, 7, 'write_file', args);
      assert.match(String(ask.id), /^sluice-e-/, `sluice's own id space: ${JSON.stringify(ask)}`);
      assert.equal(ask.params.mode, 'form');
      assert.match(ask.params.message, /write_file/);
      assert.equal(ask.params.requestedSchema.properties.approve.type, 'boolean');
      assert.equal(s.upstreamCalls('write_file').length, 0, 'nothing forwarded while the question is open');

      const ans = await sess.answer(ask.id, ACCEPT_ANSWER);
      assert.equal(ans.status, 202, `the answer POST: HTTP ${ans.status} ${ans.text}`);
      assert.equal(ans.text, '', '202 carries no body');
      const fin = await reply.nextEvent((m) => m && m.id === 7 && !('method' in m), undefined, 'the tool result on the original stream');
      assert.ok(fin.result, JSON.stringify(fin));
      assert.notEqual(fin.result.isError, true, JSON.stringify(fin));
      assert.equal(fin.result.content[0].text, 'wrote "/srv/legacy.txt"');
      assert.ok(!('resultType' in fin.result), `no resultType for a legacy client: ${JSON.stringify(fin)}`);
      await reply.complete();
      assert.equal(reply.error, null, 'the stream ends cleanly after the final response');
      assert.deepEqual(reply.unread, [], `nothing after the final response: ${JSON.stringify(reply.unread)}`);
      await assertForwardedOnceHttp(s, 'write_file', args);
    });
  }

  test('a POST reusing the id of the held call is refused on its own POST; the held call\'s stream goes on', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const args = { path: '/srv/held', content: 'x' };
    const { reply, ask } = await heldCall(sess, 9, 'write_file', args);
    for (const msg of [{ jsonrpc: '2.0', id: 9, method: 'ping' }, legacyToolCall(9, 'echo', { text: 'x' })]) {
      const dup = await sess.rpc(msg);
      assert.equal(dup.status, 200, dup.raw);
      assert.equal(dup.msg && dup.msg.error && dup.msg.error.code, -32600, `refused on its own POST: ${dup.raw}`);
    }
    assert.equal((await sess.answer(ask.id, ACCEPT_ANSWER)).status, 202);
    const fin = await reply.nextEvent((m) => m && m.id === 9 && !('method' in m), undefined, 'the tool result on the original stream');
    assert.equal(fin.result && fin.result.content[0].text, 'wrote "/srv/held"', JSON.stringify(fin));
    await reply.complete();
    assert.deepEqual(reply.unread, [], `nothing else on the held call's stream: ${JSON.stringify(reply.unread)}`);
    await assertForwardedOnceHttp(s, 'write_file', args);
    await assertNotForwardedHttp(s, 'echo');
  });

  test('the answer may come on a keep-alive connection, and the stream survives it', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target, { agent: keepAliveAgent(t, s.target) });
    await sess.initialize();
    const args = { path: 'ka', content: 'x' };
    const { reply, ask } = await heldCall(sess, 'k1', 'write_file', args);
    const ans = await sess.answer(ask.id, ACCEPT_ANSWER);
    assert.equal(ans.status, 202);
    const fin = await reply.nextEvent((m) => m && m.id === 'k1');
    assert.ok(fin.result && !fin.result.isError, JSON.stringify(fin));
    await assertForwardedOnceHttp(s, 'write_file', args);
  });

  for (const [label, answer] of [
    ['decline', { action: 'decline' }],
    ['cancel', { action: 'cancel' }],
    ['approve "yes"', { action: 'accept', content: { approve: 'yes' } }],
  ]) {
    test(`${label}: the stream delivers an isError refusal, nothing forwarded`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE });
      const sess = new LegacyHttpSession(s.target);
      await sess.initialize();
      const { reply, ask } = await heldCall(sess, 8, 'write_file', { path: 'd', content: 'x' });
      const ans = await sess.answer(ask.id, answer);
      assert.equal(ans.status, 202);
      const fin = await reply.nextEvent((m) => m && m.id === 8);
      assert.ok(fin.result && fin.result.isError === true, `expected a refusal: ${JSON.stringify(fin)}`);
      await reply.complete();
      await assertNotForwardedHttp(s, 'write_file');
    });
  }

  test('an error answer to the elicitation refuses the call, nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const { reply, ask } = await heldCall(sess, 9, 'write_file', { path: 'e', content: 'x' });
    const ans = await sess.answerError(ask.id, { code: -32602, message: 'mode not supported' });
    assert.equal(ans.status, 202);
    const fin = await reply.nextEvent((m) => m && m.id === 9);
    assert.ok(fin.result && fin.result.isError === true, JSON.stringify(fin));
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('an answer POSTed under another session does not release the held call', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const a = new LegacyHttpSession(s.target);
    const b = new LegacyHttpSession(s.target);
    await a.initialize();
    await b.initialize();
    assert.notEqual(a.sessionId, b.sessionId);
    const { reply, ask } = await heldCall(a, 10, 'write_file', { path: 'x', content: 'y' });
    await b.answer(ask.id, ACCEPT_ANSWER);
    await sleep(300);
    assert.equal(reply.unread.filter((m) => m.json && m.json.id === 10).length, 0, 'no result yet');
    assert.equal(s.upstreamCalls('write_file').length, 0, "another session's answer must not approve the call");
    // The rightful answer still works.
    await a.answer(ask.id, { action: 'decline' });
    const fin = await reply.nextEvent((m) => m && m.id === 10);
    assert.equal(fin.result.isError, true);
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('an allowed call in a session is answered (JSON or a stream) and forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const r = await sess.rpc(legacyToolCall(11, 'echo', { hi: 1 }));
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result && !r.msg.result.isError, r.raw);
    assert.deepEqual(r.msg.result.structuredContent, { echoed: { hi: 1 } });
  });

  test('concurrent calls whose ids share a long prefix each get their own answer (ids inside and past the inline buffer)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const p = 'i'.repeat(400);
    // As JSON text: 47 and 48 bytes (the exchange keeps up to 47 inline), then 402 and 403.
    const ids = ['j'.repeat(44) + 'a', 'j'.repeat(44) + 'ab', p, p + 'b', 12345678901234567890n.toString()];
    const replies = await Promise.all(ids.map((id, i) => sess.rpc(legacyToolCall(id, 'echo', { n: i }))));
    replies.forEach((r, i) => {
      assert.equal(r.status, 200, r.raw);
      assert.equal(r.msg && r.msg.id, ids[i], `the answer to id #${i} carries that id`);
      assert.deepEqual(r.msg.result.structuredContent, { echoed: { n: i } }, r.raw);
    });
  });

  test('progress of a forwarded call arrives on its POST stream with the client\'s token', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const r = await sess.rpc(legacyToolCall(12, 'progress', {}, { _meta: { progressToken: 'legacy-tok' } }));
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.sse, `progress needs the event stream; got ${r.headers['content-type']}`);
    const notes = r.events.filter((m) => m.method === 'notifications/progress');
    assert.equal(notes.length, 2, JSON.stringify(r.events));
    for (const n of notes) assert.equal(n.params.progressToken, 'legacy-tok');
    assert.ok(r.msg && r.msg.result, r.raw);
  });
});

describe('HTTP legacy era: disconnects and connection reuse', suiteOptions(), () => {
  test('the held POST\'s connection closing is no cancellation (§4.4), but notifications/cancelled is: the call never runs', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const { reply, ask } = await heldCall(sess, 21, 'write_file', { path: 'c', content: 'x' });
    reply.abort();
    await sleep(100);
    const n = await sess.notify('notifications/cancelled', { requestId: 21, reason: 'user gave up' });
    assert.equal(n.status, 202, n.text);
    await sleep(100);
    const late = await sess.answer(ask.id, ACCEPT_ANSWER);
    assert.ok(late.status === 202 || late.status === 404, `a late answer: ${late.status}`);
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('notifications/cancelled for a forwarded call: its POST ends without a response, and the upstream is told', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const pending = sess.post(legacyToolCall(31, 'sleep', { ms: 60000 }));
    const end = Date.now() + scaled(5000);
    while (!s.upstreamCalls('sleep').length) {
      assert.ok(Date.now() < end, 'the call never reached the upstream');
      await sleep(20);
    }
    const n = await sess.notify('notifications/cancelled', { requestId: 31, reason: 'user gave up' });
    assert.equal(n.status, 202, n.text);
    const reply = await pending;
    await reply.complete(scaled(5000)); // before: it waited for a reply that never comes
    assert.equal(reply.status, 200);
    assert.ok(!reply.events.some((m) => m && m.id === 31), `no response: ${reply.text}`);
  });

  test('a held POST\'s connection drops: its question is withdrawn, the same call from a new session is asked anew', async (t) => {
    // MCP Inspector after a reload: the old session's stream is gone, and the reloaded client
    // (same principal) asks the same call again. It must get a question, not "already waiting".
    const s = await startHttpSluice(t, { policy: GATE });
    const args = { path: 'reload', content: 'x' };
    const old = new LegacyHttpSession(s.target);
    await old.initialize();
    const first = await heldCall(old, 41, 'write_file', args);
    first.reply.abort();
    await sleep(100);
    const fresh = new LegacyHttpSession(s.target);
    await fresh.initialize();
    const again = await heldCall(fresh, 42, 'write_file', args);
    assert.notEqual(again.ask.id, undefined);
    await assertNotForwardedHttp(s, 'write_file');
    const ans = await fresh.answer(again.ask.id, ACCEPT_ANSWER);
    assert.equal(ans.status, 202, ans.text);
    const done = await again.reply.nextEvent((m) => m && m.id === 42);
    assert.ok(done.result && !done.result.isError, JSON.stringify(done));
    await assertForwardedOnceHttp(s, 'write_file', args);
  });

  test('without a drop, the same call from a second session of the principal is refused as already waiting', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const args = { path: 'twice', content: 'x' };
    const a = new LegacyHttpSession(s.target);
    await a.initialize();
    await heldCall(a, 51, 'write_file', args);
    const b = new LegacyHttpSession(s.target);
    await b.initialize();
    const r = await b.rpc(legacyToolCall(52, 'write_file', args));
    assert.ok(r.msg && r.msg.result && r.msg.result.isError, r.raw);
    assert.match(r.msg.result.content[0].text, /already waiting/);
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('after a call\'s event stream ends, its keep-alive connection carries the next request', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const pool = keepAliveAgent(t, s.target, { maxSockets: 1 });
    const sess = new LegacyHttpSession(s.target, { agent: pool });
    await sess.initialize();
    const first = await sess.post(legacyToolCall(31, 'write_file', { path: 'r', content: 'x' }));
    const ask = await first.nextEvent((m) => m && m.method === 'elicitation/create');
    const ans = await sess.answer(ask.id, ACCEPT_ANSWER, { agent: false });
    assert.equal(ans.status, 202);
    await first.nextEvent((m) => m && m.id === 31);
    await first.complete();
    const next = await sess.rpc(legacyToolCall(32, 'echo', { after: 'stream' }));
    assert.equal(next.status, 200, next.raw);
    assert.equal(next.reply.localPort, first.localPort, 'the same connection was reused after the chunked stream');
  });

  test('--max-sessions 2: a full table ends the least recently used idle session; with none idle, 503; DELETE frees a slot', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--max-sessions', '2'] });
    const a = new LegacyHttpSession(s.target);
    const b = new LegacyHttpSession(s.target);
    await a.initialize();
    await b.initialize();
    // a holds a call (its question is out): a session with a held call is never ended.
    const heldA = await a.post(legacyToolCall(1, 'write_file', { path: 'held-a', content: 'x' }));
    await heldA.nextEvent((m) => m && m.method === 'elicitation/create');
    // The table is full and b is idle: b ends, c gets its place, b's next request gets 404.
    const c = new LegacyHttpSession(s.target);
    await c.initialize();
    const rb = await b.rpc(legacyToolCall(2, 'echo', { marker: 'b-after' }));
    assert.equal(rb.status, 404, rb.raw);
    // c holds a call too: nothing is idle, so a new client is refused, naming the limit.
    const heldC = await c.post(legacyToolCall(3, 'write_file', { path: 'held-c', content: 'x' }));
    await heldC.nextEvent((m) => m && m.method === 'elicitation/create');
    const d = new LegacyHttpSession(s.target);
    const r = await d.initialize({ expectStatus: 503 });
    assert.equal(r.status, 503, r.raw);
    assert.match(r.msg.error.message, /--max-sessions/, r.raw);
    assert.equal(r.headers['mcp-session-id'], undefined);
    const del = await a.remove();
    assert.ok(del.status === 200 || del.status === 204);
    await d.initialize();
    assert.ok(d.sessionId);
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('a doubled Mcp-Session-Id header is refused (400)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const r = await sess.rpc(legacyToolCall(1, 'echo', { marker: 'double' }), { headers: { 'Mcp-Session-Id': [sess.sessionId, sess.sessionId] } });
    assert.equal(r.status, 400, r.raw);
  });
});

describe('HTTP legacy era: sessions', suiteOptions(), () => {
  test('a request without Mcp-Session-Id: 400; with an unknown or malformed one: 404; nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const none = new LegacyHttpSession(s.target);
    const r1 = await none.rpc(legacyToolCall(1, 'echo', { nosession: 1 }));
    assert.equal(r1.status, 400, r1.raw);
    for (const sid of [crypto.randomBytes(16).toString('hex'), 'not-a-session', 'A'.repeat(32)]) {
      const bad = new LegacyHttpSession(s.target);
      bad.sessionId = sid;
      const r = await bad.rpc(legacyToolCall(2, 'echo', { nosession: sid }));
      assert.equal(r.status, 404, `session ${sid}: ${r.raw}`);
    }
    // A live session's id with one character changed: same hash bucket (the first four
    // characters), so only the comparison of the whole id can refuse it.
    const live = new LegacyHttpSession(s.target);
    await live.initialize();
    const flip = (c) => (c === '0' ? '1' : '0');
    for (const at of [4, 15, 16, 31]) {
      const sid = live.sessionId.slice(0, at) + flip(live.sessionId[at]) + live.sessionId.slice(at + 1);
      const forged = new LegacyHttpSession(s.target);
      forged.sessionId = sid;
      const r = await forged.rpc(legacyToolCall(3, 'echo', { nosession: sid }));
      assert.equal(r.status, 404, `a live id changed at ${at}: ${r.raw}`);
    }
    await assertNotForwardedHttp(s, 'write_file');
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments && 'nosession' in c.params.arguments).length, 0);
  });

  test('a second initialize in a session is refused (400)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const r = await sess.rpc({ jsonrpc: '2.0', id: 'again', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    assert.equal(r.status, 400, r.raw);
  });

  test('DELETE ends the session: later requests and a second DELETE get 404', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const ok = await sess.rpc(legacyToolCall(1, 'echo', {}));
    assert.equal(ok.status, 200, ok.raw);
    const d = await sess.remove();
    assert.ok(d.status === 200 || d.status === 204, `DELETE: ${d.status} ${d.text}`);
    const after = await sess.rpc(legacyToolCall(2, 'echo', { afterDelete: 1 }));
    assert.equal(after.status, 404, after.raw);
    const d2 = await sess.remove();
    assert.equal(d2.status, 404, d2.text);
    await assertNotForwardedHttp(s, 'write_file');
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.afterDelete).length, 0);
  });

  test('DELETE while a call is held ends its stream and the call never runs', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const { reply, ask } = await heldCall(sess, 5, 'write_file', { path: 'del', content: 'x' });
    const d = await sess.remove();
    assert.ok(d.status === 200 || d.status === 204, `DELETE: ${d.status}`);
    await reply.complete();
    const late = await sess.answer(ask.id, ACCEPT_ANSWER);
    assert.equal(late.status, 404, 'the session is gone');
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('GET opens the standalone stream (200 text/event-stream); a second GET gets 409; GET without a session 405', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const g1 = await sess.openStream();
    assert.equal(g1.status, 200, g1.text);
    assert.ok(g1.sse, `content-type ${g1.contentType}`);
    const g2 = await sess.openStream();
    await g2.complete();
    assert.equal(g2.status, 409, g2.text);
    assert.equal(g1.ended, false, 'the first stream stays open');
    const none = await httpRequest(s.target, { method: 'GET', path: '/mcp', headers: { Accept: 'text/event-stream' } });
    await none.complete();
    assert.equal(none.status, 405, none.text);
    // Once the first stream is gone, a new one may be opened.
    g1.abort();
    let g3;
    const end = Date.now() + scaled(3000);
    do {
      await sleep(50);
      g3 = await sess.openStream();
      if (g3.status !== 200) await g3.complete();
    } while (g3.status === 409 && Date.now() < end);
    assert.equal(g3.status, 200, 'a stream may be reopened after the first one closed');
    g3.abort();
  });

  test('GET for an unknown session: 404', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    sess.sessionId = crypto.randomBytes(16).toString('hex');
    const g = await sess.openStream();
    await g.complete();
    assert.equal(g.status, 404, g.text);
  });

  test('initialize from a client without elicitation: a gated call is refused, not held', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize({ capabilities: {} });
    const r = await sess.rpc(legacyToolCall(1, 'write_file', { path: 'n', content: 'x' }));
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result && r.msg.result.isError === true, r.raw);
    assert.ok(!r.events.some((m) => m.method === 'elicitation/create'), 'no question to a client that cannot answer');
    await assertNotForwardedHttp(s, 'write_file');
  });
});
