// upstream_wait.test.mjs: the HTTP front while its upstream is not ready (issue 20, "Start and
// restart"; "/readyz"). A request to /mcp that arrives while sluice starts, while a child
// restarts, or while an HTTP upstream cannot be reached waits for the upstream, up to
// --upstream-wait, and goes on once it is there; only then does the -32000 "upstream not ready"
// error go out. A client that leaves while its request waits is forgotten; a waiting request
// holds a connection, so --max-connections bounds them. An HTTP upstream that goes away while
// nobody calls it is found by a liveness probe (a bare TCP connection: no request, no error
// counted): /readyz says 503 within 5 s, and 200 again once it is back.
//
// Each test asserts on what the upstream executed (the fake's log, or the scripted HTTP server's
// requests), not only on sluice's replies. Every wait has a deadline; every process and server is
// stopped in an after hook.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import * as lib from './lib.mjs';
import {
  FAKE_UPSTREAM, LEGACY, SluiceProc, deadline, policyPath, resultText, sleep,
  suiteOptions, tmpDir, toolCall,
} from './lib.mjs';
import {
  LegacyHttpSession, get, httpSync, legacyToolCall, mcpHeadersFor, metrics, rawConnect,
  rawRequest, rpc, startHttpSluice, waitLog, waitReady,
} from './http_lib.mjs';
import { RawUpstream } from './raw_http_upstream.mjs';

const GATE = policyPath('gate.yaml');
const LONG_MS = 20000; // a reply that waits for a (slow) upstream, generously
// A waiting request goes on as soon as the upstream is ready: well before the 10 s default wait
// runs out (after which it would also go on, since the upstream is ready by then).
const SOON_MS = lib.scaled(6000);

/** The fake upstream, started only after ms: a server that takes a while to come up. */
function slowChild(ms) {
  return ['sh', '-c', `sleep ${ms / 1000}; exec "$0" "$@"`, process.execPath, FAKE_UPSTREAM];
}

/** A child that exits on its first tools/call; the one started again runs normally, after
 * sleeping restartS seconds (a slow start). */
function crashOnce(dir, restartS) {
  const mark = path.join(dir, 'crashed-once');
  return ['sh', '-c', `m="$1"; shift; if [ -e "$m" ]; then sleep ${restartS}; exec "$@"; fi; : > "$m"; FAKE_EXIT_AFTER=1 exec "$@"`,
    'sh', mark, process.execPath, FAKE_UPSTREAM];
}

/** The marker a test's echo call carried, as the upstream executed it. */
function executed(s, marker) {
  return s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.marker === marker);
}

function echoed(r, marker) {
  assert.equal(r.status, 200, `HTTP ${r.status}: ${r.raw}`);
  assert.ok(r.msg && r.msg.result, `expected a result: ${r.raw}`);
  assert.match(resultText(r.msg), new RegExp(marker), r.raw);
}

function legacyInitialize(id) {
  return {
    jsonrpc: '2.0', id, method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'upstream-wait-e2e', version: '1.0.0' } },
  };
}

/** Polls /readyz until it answers want; returns the ms it took. */
async function readyzBecomes(target, want, ms, s) {
  const t0 = Date.now();
  const end = t0 + deadline(ms);
  let last = 'no answer';
  while (Date.now() < end) {
    try {
      const r = await get(target, '/readyz', { timeoutMs: 1000 });
      if (r.status === want) return Date.now() - t0;
      last = r.status;
    } catch (e) {
      last = e.message;
    }
    await sleep(100);
  }
  throw new Error(`/readyz not ${want} within ${ms} ms (last: ${last}); stderr:\n${s.stderr.slice(-3000)}`);
}

describe('HTTP front: requests wait for the upstream (--upstream-wait)', suiteOptions(), () => {
  test('initialize and a call sent before a slow child is ready get their answers once it is', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, upstream: slowChild(1500), waitReady: false });
    assert.equal((await get(s.target, '/readyz')).status, 503, 'not ready while the child starts');
    const t0 = Date.now();
    const [init, call] = await Promise.all([
      rpc(s.target, legacyInitialize('init-early'), { modern: false, timeoutMs: LONG_MS }),
      rpc(s.target, toolCall('early', 'echo', { marker: 'early' }), { timeoutMs: LONG_MS }),
    ]);
    const waited = Date.now() - t0;
    assert.equal(init.status, 200, `initialize: HTTP ${init.status} ${init.raw}`);
    assert.ok(init.msg && init.msg.result, init.raw);
    assert.equal(init.msg.result.serverInfo.name, 'fake-upstream', init.raw);
    assert.ok(init.headers['mcp-session-id'], 'initialize minted a session');
    echoed(call, 'early');
    assert.ok(waited >= 1000, `the answers came after the child started, not before (${waited} ms)`);
    assert.ok(waited < SOON_MS, `the answers came as soon as the child was ready, not when the wait ran out (${waited} ms)`);
    await httpSync(s);
    assert.equal(executed(s, 'early').length, 1, 'the waiting call ran once');
  });

  test('--upstream-wait 1: an upstream still not ready gets -32000 after about 1 s, and the call never runs', async (t) => {
    // The child stays silent to server/discover; sluice falls back to initialize after 4 s.
    const s = await startHttpSluice(t, {
      policy: GATE, fake: { FAKE_SILENT_DISCOVER: '1' }, env: { SLUICE_DISCOVER_TIMEOUT_MS: '4000' },
      args: ['--upstream-wait', '1'], waitReady: false,
    });
    const t0 = Date.now();
    const r = await rpc(s.target, toolCall('late', 'echo', { marker: 'late' }), { timeoutMs: LONG_MS });
    const waited = Date.now() - t0;
    assert.equal(r.status, 503, r.raw);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.msg.error.code, -32000, r.raw);
    assert.match(r.msg.error.message, /upstream not ready/, r.raw);
    assert.ok(waited >= 900, `the error waited for --upstream-wait (${waited} ms)`);
    assert.ok(waited < 1000 + lib.scaled(2500), `the error came after about 1 s, not when the upstream got ready (${waited} ms)`);
    await waitLog(s, /still not ready after 1 s \(--upstream-wait\)/, 2000);
    await waitReady(s.target, 15000, s);
    await httpSync(s);
    assert.equal(executed(s, 'late').length, 0, 'a request answered with the error never runs later');
  });

  test('--upstream-wait 0 answers at once, as before', async (t) => {
    const port = await lib.stablePort(); // nothing listens there: the upstream never gets ready
    const s = await startUrlSluice(t, `http://127.0.0.1:${port}/mcp`, ['--upstream-wait', '0']);
    const t0 = Date.now();
    const r = await rpc(s.target, toolCall('now', 'echo', { marker: 'now' }));
    assert.equal(r.status, 503, r.raw);
    assert.equal(r.msg.error.code, -32000, r.raw);
    assert.ok(Date.now() - t0 < lib.scaled(800), `answered at once (${Date.now() - t0} ms)`);
  });

  test('a client that leaves while its request waits is forgotten: the call never runs', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, upstream: slowChild(2000), waitReady: false });
    const msg = toolCall('left', 'echo', { marker: 'left' });
    const c = await rawConnect(s.target, t);
    await c.write(rawRequest('POST', '/mcp', mcpHeadersFor(msg), JSON.stringify(msg)));
    await sleep(300);
    assert.equal(c.text, '', 'no answer yet: the request waits');
    c.destroy();
    await waitReady(s.target, 15000, s);
    await httpSync(s);
    await sleep(200);
    await httpSync(s);
    assert.equal(executed(s, 'left').length, 0, 'the request of a client that left must not run');
  });

  // on_read stops reading a connection that piles up more than --max-body plus the head limit
  // behind a waiting request. The wait's end must read it again: if the waiting request is
  // answered at once (no exchange whose end would), the rest of what it sent stayed unread.
  test('requests piled up past the limits behind a waiting one: all answered once it is', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, upstream: slowChild(1500), waitReady: false, args: ['--max-body', '1024'] });
    const c = await rawConnect(s.target, t);
    // A legacy notification without a session: it waits, then is answered 400 at once.
    const first = rawRequest('POST', '/mcp', mcpHeadersFor(null), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/x' }));
    const n = 600; // about 36 KiB: past 16 KiB of head and 1 KiB of body
    const piled = Buffer.concat(Array.from({ length: n }, () => rawRequest('GET', '/healthz', { 'X-Pad': 'p'.repeat(20) })));
    await c.write(Buffer.concat([first, piled]));
    const answers = () => (c.text.match(/HTTP\/1\.1 \d{3} /g) || []).length;
    await c.waitFor(() => answers() === n + 1, SOON_MS, `${n + 1} answers`).catch(() => {});
    assert.equal(answers(), n + 1, `every piled-up request is answered (closed: ${c.closed}); stderr:\n${s.stderr.slice(-1500)}`);
    assert.match(c.text, /^HTTP\/1\.1 400 /, 'the waiting request first (no session)');
    assert.equal(c.closed, false, 'the connection stays open');
  });

  // --approval-listen's listener serves the approval page and /healthz alone: a /mcp request
  // there can never be served, so it gets its 404 at once, not after waiting for the upstream.
  test('/mcp on the approval page\'s own listener: 404 at once while the upstream starts', async (t) => {
    const s = await startHttpSluice(t, {
      policy: GATE, upstream: slowChild(4000), waitReady: false,
      args: ['--approval-listen', '127.0.0.1:0', '--approval-principal', 'header:X-Approver'],
    });
    await waitLog(s, /listening on http:\/\/\S+\/approve\/ \(port \d+\)/, 5000);
    const port = Number(/\/approve\/ \(port (\d+)\)/.exec(s.stderr)[1]);
    const t0 = Date.now();
    const r = await rpc({ ...s.target, port }, toolCall('page-port', 'echo', { marker: 'page-port' }), { timeoutMs: LONG_MS });
    const took = Date.now() - t0;
    assert.equal(r.status, 404, r.raw);
    assert.ok(took < 1500, `answered at once, not after the upstream got ready (${took} ms)`);
    await waitReady(s.target, 15000, s);
    await httpSync(s);
    assert.equal(executed(s, 'page-port').length, 0);
  });

  test('waiting requests hold connections: --max-connections bounds them', async (t) => {
    const s = await startHttpSluice(t, {
      policy: GATE, upstream: slowChild(2500), waitReady: false, args: ['--max-connections', '2'],
    });
    const conns = [];
    for (const marker of ['held-a', 'held-b']) {
      const msg = toolCall(marker, 'echo', { marker });
      const c = await rawConnect(s.target, t);
      await c.write(rawRequest('POST', '/mcp', { ...mcpHeadersFor(msg), Connection: 'close' }, JSON.stringify(msg)));
      conns.push(c);
    }
    await sleep(200);
    const third = await rawConnect(s.target, t);
    const refused = await third.response(3000);
    assert.equal(refused.status, 503, refused.head);
    assert.match(refused.body, /too many connections/, refused.body);
    const t0 = Date.now();
    for (const [i, c] of conns.entries()) {
      const r = await c.response(LONG_MS);
      assert.ok(Date.now() - t0 < SOON_MS, `answered once the child was ready (${Date.now() - t0} ms)`);
      assert.equal(r.status, 200, `${i}: ${r.head}`);
      assert.match(r.body, /held-/, r.body);
    }
    await httpSync(s);
    assert.equal(executed(s, 'held-a').length, 1);
    assert.equal(executed(s, 'held-b').length, 1);
  });

  test('a child that restarts: calls sent meanwhile wait and run on the new child', async (t) => {
    const dir = tmpDir(t);
    const upstream = crashOnce(dir, 0);
    const s = await startHttpSluice(t, { policy: GATE, dir, upstream });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const crash = await rpc(s.target, toolCall('crash', 'echo', { marker: 'crash' }));
    assert.ok(crash.msg && (crash.msg.error || crash.msg.result.isError), `the call the child died on fails: ${crash.raw}`);
    await waitLog(s, /starting it again in 1 s/, 5000);
    const t0 = Date.now();
    const [modern, legacy] = await Promise.all([
      rpc(s.target, toolCall('during', 'echo', { marker: 'during' }), { timeoutMs: LONG_MS }),
      sess.rpc(legacyToolCall('during-legacy', 'echo', { marker: 'during-legacy' }), { timeoutMs: LONG_MS }),
    ]);
    echoed(modern, 'during');
    echoed(legacy, 'during-legacy');
    assert.ok(Date.now() - t0 >= 200, 'they waited for the new child');
    assert.ok(Date.now() - t0 < SOON_MS, `they went on as soon as the new child was ready (${Date.now() - t0} ms)`);
    assert.equal(s.upstreamPids().length, 2, 'the child was restarted once');
    await httpSync(s);
    assert.equal(executed(s, 'during').length, 1);
    assert.equal(executed(s, 'during-legacy').length, 1);
  });

  // A child whose stdin closed is stopped once a write to it failed (what it wrote is read to
  // the end first). Until it is gone and started again it is not ready: a call sent meanwhile
  // waits for the new child, as during a restart, rather than going into a pipe nobody reads
  // and failing unrun when the child is gone.
  test('a child that stops reading its stdin: /readyz 503 at once; a call sent then runs on the new child', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const deaf = rpc(s.target, toolCall('deaf', 'deaf', { afterMs: 1000, bytes: 1000 }), { timeoutMs: LONG_MS });
    await waitLog(s, /deaf: stdin closed/, 5000);
    // Its write fails: the child reads no more.
    const next = rpc(s.target, toolCall('next', 'echo', { marker: 'next' }), { timeoutMs: LONG_MS });
    await waitLog(s, /stopped reading its stdin/, 5000);
    assert.equal((await get(s.target, '/readyz')).status, 503, 'ready while the child cannot hear');
    const later = await rpc(s.target, toolCall('later', 'echo', { marker: 'later' }), { timeoutMs: LONG_MS });
    echoed(later, 'later');
    const d = await deaf;
    assert.ok(d.msg && d.msg.result, `the answer the child wrote: ${d.raw.slice(0, 300)}`);
    assert.equal(d.msg.result.content[0].text.length, 1000);
    const n = await next;
    assert.ok(n.msg && (n.msg.error || n.msg.result.isError), `the call the child never read fails: ${n.raw}`);
    assert.equal(s.upstreamPids().length, 2, 'the child was restarted once');
    await httpSync(s);
    assert.equal(executed(s, 'next').length, 0);
    assert.equal(executed(s, 'later').length, 1, 'the call sent meanwhile ran once, on the new child');
  });

  test('a legacy session whose request waits for a restarting child is not ended by --session-idle meanwhile', async (t) => {
    const dir = tmpDir(t);
    // The restarted child takes 5 s to start, more than --session-idle 2 (and the sweep after
    // it): the waiting request must keep its session.
    const upstream = crashOnce(dir, 5);
    const s = await startHttpSluice(t, { policy: GATE, dir, upstream, args: ['--session-idle', '2', '--upstream-wait', '20'] });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const crash = await rpc(s.target, toolCall('crash', 'echo', { marker: 'crash' }));
    assert.ok(crash.msg && (crash.msg.error || crash.msg.result.isError), `the call the child died on fails: ${crash.raw}`);
    await waitLog(s, /starting it again in 1 s/, 5000);
    const t0 = Date.now();
    const r = await sess.rpc(legacyToolCall('kept', 'echo', { marker: 'kept' }), { timeoutMs: 30000 });
    assert.ok(Date.now() - t0 >= 4000, `the call waited for the slow child (${Date.now() - t0} ms)`);
    echoed(r, 'kept');
    assert.doesNotMatch(s.stderr, /expired after 2 s without use/, 'the session expired while its request waited');
    await httpSync(s);
    assert.equal(executed(s, 'kept').length, 1, 'the waiting call ran once');
  });

  // A session's DELETE needs no upstream: it ends the session at once, and a request that waits
  // for the restarting child in that session is answered as any request to an ended session is
  // (404), not with 503 at the end of --upstream-wait. So is any later request naming it.
  test('a call waiting for a restarting child gets 404 at once when its session is deleted, which does not wait', async (t) => {
    const dir = tmpDir(t);
    const upstream = crashOnce(dir, 6);
    const s = await startHttpSluice(t, { policy: GATE, dir, upstream, args: ['--upstream-wait', '20'] });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const crash = await rpc(s.target, toolCall('crash', 'echo', { marker: 'crash' }));
    assert.ok(crash.msg && (crash.msg.error || crash.msg.result.isError), `the call the child died on fails: ${crash.raw}`);
    await waitLog(s, /starting it again in 1 s/, 5000);
    const waiting = sess.rpc(legacyToolCall('waiting', 'echo', { marker: 'waiting' }), { timeoutMs: 30000 });
    await sleep(lib.scaled(300));
    const t0 = Date.now();
    const d = await sess.remove();
    assert.equal(d.status, 200, `the DELETE: HTTP ${d.status} ${d.raw}`);
    const r = await waiting;
    assert.equal(r.status, 404, `the waiting call: HTTP ${r.status} ${r.raw}`);
    assert.equal(r.msg && r.msg.error && r.msg.error.message, 'Session not found', r.raw);
    assert.ok(Date.now() - t0 < lib.scaled(1500), `answered ${Date.now() - t0} ms after the DELETE was sent`);
    // The child is still not ready: a request naming the ended session does not wait for it.
    const t1 = Date.now();
    const again = await sess.rpc(legacyToolCall('again', 'echo', { marker: 'again' }));
    assert.equal(again.status, 404, `a later call: HTTP ${again.status} ${again.raw}`);
    const stream = await sess.openStream();
    assert.equal(stream.status, 404, 'a GET stream naming the ended session');
    assert.ok(Date.now() - t1 < lib.scaled(1500), `answered after ${Date.now() - t1} ms`);
    assert.equal((await get(s.target, '/readyz')).status, 503, 'the child was ready meanwhile: the test proves nothing');
    await readyzBecomes(s.target, 200, 15000, s);
    await httpSync(s);
    assert.equal(executed(s, 'waiting').length + executed(s, 'again').length, 0, 'neither ran');
  });

  test('another principal\'s request naming a session does not wait, nor keep that session alive', async (t) => {
    const dir = tmpDir(t);
    const upstream = crashOnce(dir, 5);
    const s = await startHttpSluice(t, { policy: GATE, dir, upstream, args: ['--principal', 'header:X-User', '--session-idle', '2', '--upstream-wait', '20'] });
    const alice = new LegacyHttpSession(s.target, { headers: { 'X-User': 'alice' } });
    await alice.initialize();
    const crash = await rpc(s.target, toolCall('crash', 'echo', { marker: 'crash' }), { headers: { 'X-User': 'alice' } });
    assert.ok(crash.msg && (crash.msg.error || crash.msg.result.isError), `the call the child died on fails: ${crash.raw}`);
    await waitLog(s, /starting it again in 1 s/, 5000);
    // Bob names Alice's session (its id leaked): to him it is no session, so his request does not
    // wait for the child (it needs none) and is refused at once, as any naming a session that is
    // gone.
    const bob = new LegacyHttpSession(s.target, { headers: { 'X-User': 'bob' } });
    bob.sessionId = alice.sessionId;
    const t0 = Date.now();
    const r = await bob.rpc(legacyToolCall('not-his', 'echo', { marker: 'not-his' }), { timeoutMs: 30000 });
    assert.equal(r.status, 404, r.raw);
    assert.ok(Date.now() - t0 < lib.scaled(1500), `refused after ${Date.now() - t0} ms`);
    // Meanwhile (the child takes 5 s) Alice's session is idle for longer than 2 s: it ends, not
    // held by Bob's request.
    await waitLog(s, /expired after 2 s without use/, 8000);
    const late = await alice.rpc(legacyToolCall('late', 'echo', { marker: 'late' }));
    assert.equal(late.status, 404, late.raw);
    s.syncHeaders = { 'X-User': 'alice' };
    await httpSync(s);
    assert.equal(executed(s, 'not-his').length, 0);
  });

  test('held calls across a long child restart: their answers wait, then are taken; a decline refuses, an accept is refused unsent', async (t) => {
    // Before: an answer that waited --upstream-wait got 503, refused unread; the SDKs do not
    // send a response again, so the held call ended at its confirm_ttl as unanswered.
    const dir = tmpDir(t);
    const upstream = crashOnce(dir, 8); // down for 1 s + 8 s: far longer than --upstream-wait 1
    const s = await startHttpSluice(t, { policy: GATE, dir, upstream, args: ['--upstream-wait', '1'] });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const held = async (id) => {
      const reply = await sess.post(legacyToolCall(id, 'write_file', { path: id, content: 'x' }));
      assert.equal(reply.status, 200, `tools/call: HTTP ${reply.status} ${reply.text}`);
      const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create', undefined, "sluice's question");
      return { reply, ask };
    };
    const a = await held('held-a');
    const b = await held('held-b');
    const crash = await rpc(s.target, toolCall('crash', 'echo', { marker: 'crash' }));
    assert.ok(crash.msg && (crash.msg.error || crash.msg.result.isError), `the call the child died on fails: ${crash.raw}`);
    await waitLog(s, /starting it again in 1 s/, 5000);

    const t0 = Date.now();
    const decline = await sess.answer(b.ask.id, { action: 'decline' });
    const took = Date.now() - t0;
    assert.equal(decline.status, 202, `the decline: HTTP ${decline.status} ${decline.text}`);
    assert.ok(took >= 800, `the answer waited for the upstream first (${took} ms)`);
    const finB = await b.reply.nextEvent((m) => m && m.id === 'held-b' && !('method' in m), undefined, 'the declined call\'s response');
    assert.ok(finB.result && finB.result.isError === true, `a decline refuses: ${JSON.stringify(finB)}`);

    const accept = await sess.answer(a.ask.id, { action: 'accept', content: { approve: true } });
    assert.equal(accept.status, 202, `the accept: HTTP ${accept.status} ${accept.text}`);
    const finA = await a.reply.nextEvent((m) => m && m.id === 'held-a' && !('method' in m), undefined, 'the accepted call\'s response');
    // Refused, never sent: the tool's definition is not known while no child has listed it, so
    // it cannot be shown to be the one the person saw.
    assert.ok(finA.result && finA.result.isError === true, `an accepted call whose upstream is not back is refused: ${JSON.stringify(finA)}`);
    assert.match(resultText(finA), /does not list this tool now \(it may be restarting\)/, JSON.stringify(finA));
    assert.ok(Date.now() - t0 < lib.scaled(5000), 'both were answered before the new child came up');

    // A request still waits, and fails the same way as before once --upstream-wait runs out.
    const call = await sess.rpc(legacyToolCall('during', 'echo', { marker: 'during' }), { timeoutMs: LONG_MS });
    assert.equal(call.status, 503, `a request meanwhile: HTTP ${call.status} ${call.raw}`);

    await readyzBecomes(s.target, 200, 20000, s);
    await httpSync(s);
    assert.equal(s.upstreamCalls('write_file').length, 0, 'neither held call ran');
    assert.equal(executed(s, 'during').length, 0);
  });
});

/** sluice --listen in front of --upstream URL (no child); resolves once it listens. */
async function startUrlSluice(t, url, args = []) {
  const dir = tmpDir(t);
  const all = ['--policy', GATE, '--upstream', url, '--listen', '127.0.0.1:0', '--drain-grace', '1', ...args];
  const env = { ...process.env };
  delete env.SLUICE_STATE_KEY;
  delete env.SLUICE_UPSTREAM_AUTHORIZATION;
  const cmd = lib.sluiceCommand(all);
  const proc = spawn(cmd.file, cmd.args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const s = new SluiceProc(proc, { dir, args: all, memcheck: cmd.memcheck });
  t.after(() => s.kill());
  const m = await waitLog(s, /listening on http:\/\/\S+ \(port (\d+)\)/, 10000);
  s.port = Number(m[1]);
  s.target = { port: s.port };
  return s;
}

describe('HTTP upstream liveness: /readyz follows it', suiteOptions(), () => {
  test('/readyz 503 within 5 s of the server going away, 200 when it is back on its port; probes send no request and count no error', async (t) => {
    const up = new RawUpstream({ era: 'modern' });
    const port = await up.listen(await lib.stablePort());
    t.after(() => up.close());
    const s = await startUrlSluice(t, up.url());
    await waitReady(s.target, 15000, s);
    // Idle: the probe connects about once a second and sends nothing.
    const requests = up.requests.length, tcp = up.tcpConnections;
    await sleep(2500);
    assert.equal(up.requests.length, requests, `an idle probe sent a request: ${up.describe()}`);
    assert.ok(up.tcpConnections >= tcp + 1, `the idle upstream was probed (${up.tcpConnections - tcp} connections)`);
    assert.equal((await get(s.target, '/readyz')).status, 200, 'a probe that connects keeps it ready');

    await up.close();
    const down = await readyzBecomes(s.target, 503, 5000, s);
    assert.ok(down < 5000, `/readyz turned 503 after ${down} ms`);
    // A request meanwhile waits for the server (--upstream-wait, 10 s by default).
    const pending = rpc(s.target, toolCall('back', 'echo', { marker: 'back' }), { timeoutMs: LONG_MS });
    await sleep(1500);
    assert.equal((await get(s.target, '/readyz')).status, 503, 'still 503 while nothing listens');

    const again = new RawUpstream({ era: 'modern' });
    await again.listen(port);
    t.after(() => again.close());
    await readyzBecomes(s.target, 200, 5000, s);
    const backAt = Date.now();
    const r = await pending;
    assert.ok(Date.now() - backAt < lib.scaled(2000), `the waiting call went on once the server was back (${Date.now() - backAt} ms)`);
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result, r.raw);
    const calls = again.calls('echo');
    assert.equal(calls.length, 1, again.describe());
    assert.equal(calls[0].json.params.arguments.marker, 'back');
    assert.ok(again.requests.every((q) => q.json && q.json.method === 'tools/call'), `only the call reached the server: ${again.describe()}`);

    const lines = s.stderr.split('\n');
    assert.equal(lines.filter((l) => /cannot be reached/.test(l)).length, 1, `one line for the outage:\n${s.stderr}`);
    assert.match(s.stderr, /answers again, after 0 failed requests over \d+ s \(and \d+ failed liveness probes?\)/);
    const m = await metrics(s.target);
    assert.ok(!m.some((x) => x.name === 'sluice_upstream_errors_total'), `a probe counted as an upstream error: ${JSON.stringify(m.filter((x) => /upstream/.test(x.name)))}`);
  });
});
