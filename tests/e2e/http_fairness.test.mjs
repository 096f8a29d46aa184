// http_fairness.test.mjs: one HTTP client must not deny service to others, and the HTTP front
// reads request heads the way a proxy in front of it does.
//   - a flood of principals asking questions does not push out another principal's pending
//     question, nor stop that principal from asking (asks.c);
//   - one principal flooding `initialize` is stopped at its own cap (--max-sessions-per-principal)
//     and, when the table is full, idle sessions are evicted before a new client is refused;
//   - a request head with a line ended by a bare LF gets 400 and nothing runs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, assertRefusal, confirmRetry, policyPath, suiteOptions, toolCall,
} from './lib.mjs';
import {
  LegacyHttpSession, asResponse, assertForwardedOnceHttp, httpSync, keepAliveAgent, legacyToolCall,
  mcpHeadersFor, modernCall, rawConnect, rawRequest, rpc, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

/** echo calls carrying marker that reached the upstream. */
function marked(s, marker) {
  return s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.marker === marker);
}

describe('HTTP: a bare LF in a request head', suiteOptions(), () => {
  // Each variant is an allowed echo call whose head ends one line with a bare LF.
  const VARIANTS = [
    ['the request line', (h) => h.replace('HTTP/1.1\r\n', 'HTTP/1.1\n')],
    ['a header line', (h) => h.replace(/\r\nContent-Type:/i, '\nContent-Type:')],
    ['the final empty line', (h) => h.replace(/\r\n\r\n$/, '\r\n\n')],
  ];
  for (const [where, bend] of VARIANTS) {
    test(`in ${where}: 400, the connection closes, the upstream runs nothing`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE });
      const marker = `bare-lf ${where}`;
      const msg = toolCall(1, 'echo', { marker });
      const body = JSON.stringify(msg);
      const raw = rawRequest('POST', '/mcp', { ...mcpHeadersFor(msg), 'Content-Length': Buffer.byteLength(body) }).toString('latin1');
      const head = bend(raw);
      assert.notEqual(head, raw, 'the variant changed the head');
      const c = await rawConnect(s.target, t);
      await c.write(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]));
      const r = await c.response();
      assert.equal(r.status, 400, r.head);
      assert.ok(await c.waitClosed(3000), 'the connection closes after a 400');
      await httpSync(s);
      assert.equal(marked(s, marker).length, 0, 'the upstream ran the call');
    });
  }

  test('the same request with CRLF everywhere is served', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const msg = toolCall(1, 'echo', { marker: 'crlf' });
    const body = JSON.stringify(msg);
    const c = await rawConnect(s.target, t);
    await c.write(rawRequest('POST', '/mcp', { ...mcpHeadersFor(msg), 'Content-Length': Buffer.byteLength(body) }, body));
    const r = await c.response();
    assert.equal(r.status, 200, r.head);
    await httpSync(s);
    assert.equal(marked(s, 'crlf').length, 1);
  });
});

const bearer = (tok) => ({ Authorization: `Bearer ${tok}` });

/** Runs fn(i) for i in [0, n) with at most width in flight. */
async function pool(n, width, fn) {
  let next = 0;
  const worker = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: width }, worker));
}

describe('HTTP: a flood of principals and the open questions', suiteOptions(), () => {
  test('4,200 bearer tokens asking at once (ASKS_PRINCIPALS 2,048): the flood is refused, another principal\'s pending question stays answerable and it can still ask', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer'] });
    s.syncHeaders = bearer('sync');
    const victim = { headers: bearer('victim'), status: 200 };
    const a1 = { path: '/victim/1', content: 'one' };
    const q1 = assertAsked(await modernCall(s.target, toolCall(1, 'write_file', a1), victim));
    // More principals than the table holds (ASKS_PRINCIPALS 2048), each asking once.
    const FLOOD = 4200;
    const agent = keepAliveAgent(t, s.target, { maxSockets: 32 });
    const seen = { asked: 0, principals: 0, other: [] };
    await pool(FLOOD, 32, async (i) => {
      const r = asResponse(await rpc(s.target, toolCall(`f${i}`, 'write_file', { path: `/flood/${i}`, content: 'x' }), { headers: bearer(`flood-${i}`), agent }));
      if (r.result && r.result.resultType === 'input_required') seen.asked++;
      else if (r.result && r.result.isError && /too many principals/.test(JSON.stringify(r.result))) seen.principals++;
      else seen.other.push(r.raw);
    });
    assert.deepEqual(seen.other.slice(0, 3), [], 'every flood call is asked or refused for too many principals');
    assert.ok(seen.principals > 0, `the flood was refused at some point: ${JSON.stringify(seen)}`);
    assert.ok(seen.asked < FLOOD - 1, `${JSON.stringify(seen)}`);
    // The victim is not locked out: its identical call gets the same question, a new one is asked.
    const same = assertAsked(await modernCall(s.target, toolCall(2, 'write_file', a1), victim));
    assert.equal(same.state, q1.state, 'the pending question is still the open one');
    const a2 = { path: '/victim/2', content: 'two' };
    assertAsked(await modernCall(s.target, toolCall(3, 'write_file', a2), victim));
    // A new principal gets a clear refusal, and nothing of the flood ran.
    assertRefusal(await modernCall(s.target, toolCall(4, 'write_file', { path: '/late', content: 'z' }), { headers: bearer('late'), status: 200 }), /too many principals/);
    // The victim's first question is still answerable, and runs exactly what was shown.
    const r = await modernCall(s.target, confirmRetry(5, 'write_file', a1, q1.state, ACCEPT), victim);
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(s, 'write_file', a1, q1.state);
  });
});

describe('HTTP: a flood of legacy sessions', suiteOptions(), () => {
  /** n initialize requests from principal tok; returns {ok, capped, other, sessions}. */
  async function floodInit(s, tok, n, agent) {
    const out = { ok: 0, capped: 0, other: [], sessions: [] };
    await pool(n, 16, async () => {
      const sess = new LegacyHttpSession(s.target, { agent, headers: bearer(tok) });
      const r = await sess.initialize({ expectStatus: 0 });
      if (r.status === 200 && r.headers['mcp-session-id']) {
        out.ok++;
        sess.sessionId = r.headers['mcp-session-id'];
        out.sessions.push(sess);
      } else if (r.status === 429 && r.msg && r.msg.error && /--max-sessions-per-principal/.test(r.msg.error.message)) {
        out.capped++;
      } else {
        out.other.push(`${r.status} ${r.raw}`);
      }
    });
    return out;
  }

  /** How many of sessions sluice still knows (a ping answered 200, not 404). */
  async function alive(sessions) {
    let n = 0;
    for (const sess of sessions) {
      const r = await sess.rpc({ jsonrpc: '2.0', id: 'alive', method: 'ping' });
      if (r.status === 200) n++;
      else assert.equal(r.status, 404, r.raw);
    }
    return n;
  }

  test('a principal flooding initialize ends only its own idle sessions; a full table ends idle ones, never one holding a call', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer', '--max-sessions', '100'] });
    s.syncHeaders = bearer('sync');
    const agent = keepAliveAgent(t, s.target);
    // The victim first: a session with a call held (its question is out).
    const victim = new LegacyHttpSession(s.target, { headers: bearer('victim') });
    await victim.initialize();
    const args = { path: '/victim', content: 'kept' };
    const held = await victim.post(legacyToolCall(1, 'write_file', args));
    const ask = await held.nextEvent((m) => m && m.method === 'elicitation/create');
    // Three principals flood initialize with sessions they leave idle: at its cap (64) each
    // one's own least recently used idle session ends to make room, so every initialize is
    // served and none holds more than 64; past 100 sessions in all, idle ones are ended too.
    for (const tok of ['flood-a', 'flood-b', 'flood-c']) {
      const f = await floodInit(s, tok, 80, agent);
      assert.deepEqual(f.other, [], `${tok}: every initialize is served`);
      assert.equal(f.ok, 80, `${tok}: ${JSON.stringify({ ok: f.ok, capped: f.capped })}`);
      const n = await alive(f.sessions);
      assert.ok(n <= 64, `${tok}: ${n} sessions alive, over the cap of 64`);
    }
    // Another principal still initializes and calls.
    const late = new LegacyHttpSession(s.target, { headers: bearer('late') });
    await late.initialize();
    const echo = await late.rpc(legacyToolCall(2, 'echo', { marker: 'late-call' }));
    assert.equal(echo.status, 200, echo.raw);
    assert.ok(echo.msg && echo.msg.result, echo.raw);
    // The victim's session, holding a call, was never ended: its answer runs exactly that call.
    const ans = await victim.answer(ask.id, ACCEPT);
    assert.equal(ans.status, 202, ans.text);
    const fin = await held.nextEvent((m) => m && m.id === 1 && !('method' in m));
    assert.ok(fin.result && !fin.result.isError, JSON.stringify(fin));
    await assertForwardedOnceHttp(s, 'write_file', args);
    assert.equal(marked(s, 'late-call').length, 1);
  });

  test('a principal whose sessions are all busy is refused at its cap (429 naming the option); others are not', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer', '--max-sessions-per-principal', '3'] });
    s.syncHeaders = bearer('sync');
    const streams = [];
    for (let i = 0; i < 3; i++) {
      const sess = new LegacyHttpSession(s.target, { headers: bearer('busy') });
      await sess.initialize();
      const st = await sess.openStream(); // an open GET stream: the session is in use
      assert.equal(st.status, 200);
      streams.push(st);
    }
    const over = new LegacyHttpSession(s.target, { headers: bearer('busy') });
    const r = await over.initialize({ expectStatus: 0 });
    assert.equal(r.status, 429, r.raw);
    assert.match(r.msg.error.message, /--max-sessions-per-principal/);
    const other = new LegacyHttpSession(s.target, { headers: bearer('other') });
    await other.initialize();
    // One stream closes: that session is idle now, and makes room for the next one.
    streams[0].abort();
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      await new Promise((res) => setTimeout(res, 20));
      const again = new LegacyHttpSession(s.target, { headers: bearer('busy') });
      ok = (await again.initialize({ expectStatus: 0 })).status === 200;
    }
    assert.ok(ok, 'after a stream closed, its idle session made room');
  });

  test('--principal anonymous: every client is one principal, so only --max-sessions bounds them', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--max-sessions-per-principal', '2'] });
    for (let i = 0; i < 4; i++) {
      const sess = new LegacyHttpSession(s.target);
      await sess.initialize();
      const st = await sess.openStream();
      assert.equal(st.status, 200);
    }
  });
});
