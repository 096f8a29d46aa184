// per_session.test.mjs: per-client upstream sessions over the HTTP front (issue 20).
//
// A handshake-era server asks its client things during a call. Over the HTTP front one shared
// upstream session cannot route those questions, so each legacy client session gets an upstream
// of its own: a child with --child-per-session, or a session of its own with an HTTP upstream.
// Asserted on what the upstreams saw: which initialize (whose capabilities and clientInfo), which
// session a call came on, which client answered which question, and that a child ends with its
// session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import {
  FAKE_UPSTREAM, FORM_CAPS, LEGACY, readJsonLines, requireBinary, resultText, runSluice, scaled,
  sleep, suiteOptions, tmpDir, VALGRIND, waitPidGone, writePolicy,
} from './lib.mjs';
import { LegacyHttpSession, legacyToolCall, rawConnect, startHttpSluice, startSluiceOverHttp, rpc, waitLog } from './http_lib.mjs';
import { RawUpstream, headBytes, sseBytes } from './raw_http_upstream.mjs';

requireBinary();

const POLICY = 'version: 1\ndefaults:\n  action: allow\ntools:\n  drop_table:\n    action: confirm\n';


/** A legacy session whose initialize names the client (clientInfo.name) and its capabilities. */
async function openSession(target, name, capabilities = FORM_CAPS) {
  const s = new LegacyHttpSession(target);
  const msg = { jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: LEGACY, capabilities, clientInfo: { name, version: '1' } } };
  const r = await rpc(target, msg, { modern: false });
  assert.equal(r.status, 200, `initialize of ${name}: HTTP ${r.status} ${r.raw}`);
  assert.ok(r.msg && r.msg.result, `initialize of ${name} failed: ${r.raw}`);
  s.sessionId = r.headers['mcp-session-id'];
  assert.ok(s.sessionId, 'an Mcp-Session-Id');
  assert.equal((await s.notify('notifications/initialized')).status, 202);
  return s;
}

/** The pids of pid's children that are not gone (a zombie still counts: it is not reaped). */
function childrenOf(pid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")"
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) out.push(Number(d));
  }
  return out;
}

function pids(file) {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : [];
}

async function waitFor(pred, ms, what) {
  const end = Date.now() + scaled(ms);
  while (Date.now() < end) {
    const v = pred();
    if (v) return v;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** Starts legacy_ask in session s and returns {post, question}: the upstream's question as the
 * client received it on the call's stream or the session's GET stream. */
async function askVia(s, id, topic) {
  const post = await s.post(legacyToolCall(id, 'legacy_ask', { topic }));
  assert.equal(post.status, 200, `legacy_ask: HTTP ${post.status}`);
  const question = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, `the upstream's question to ${topic}`);
  return { post, question };
}

// A soft limit on sluice's file descriptors (`ulimit -Sn`: the children inherit it, and node, the
// fake upstream, raises its own to the hard limit), so that a test can leave sluice none for a
// child's pipes.
const FD_LIMIT = 64;
const FD_WRAP = ['sh', '-c', `ulimit -Sn ${FD_LIMIT} && exec "$0" "$@"`];

/** A legacy session that holds no child: its initialize is sent while idle connections hold all
 * but one of sluice's descriptors, so the child's pipes cannot be made (own_open fails) and the
 * initialize gets an error, yet the session stays, idle, like any other. Returns its id. */
async function childlessSession(t, s, headers = {}) {
  const used = () => fs.readdirSync(`/proc/${s.pid}/fd`).length;
  const fillers = [];
  for (let round = 0; used() < FD_LIMIT - 1; round++) {
    assert.ok(round < 20, `sluice holds ${used()} descriptors, not ${FD_LIMIT - 1}`);
    const n = FD_LIMIT - 1 - used();
    for (let i = 0; i < n; i++) fillers.push(await rawConnect(s.target, t));
    const before = Date.now(); // accepted in a moment; a connection that was closing may go
    while (used() < FD_LIMIT - 1 && Date.now() - before < 500) await sleep(10);
  }
  const from = s.stderr.length;
  const r = await rpc(s.target, { jsonrpc: '2.0', id: 'init-nochild', method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'nochild', version: '1' } } }, { modern: false, headers });
  for (const c of fillers) c.destroy();
  assert.match(r.raw, /cannot start the server for this session/, `the initialize without a child: HTTP ${r.status} ${r.raw}`);
  await waitLog(s, /cannot open the child of a new session: pipe: Too many open files/, 5000, from);
  const sid = r.headers['mcp-session-id'];
  assert.ok(sid, 'the session stays, with its id');
  await waitFor(() => used() < FD_LIMIT / 2, 5000, 'the idle connections to close');
  return sid;
}

test('per-client upstream sessions', suiteOptions(), async (t) => {
  await t.test('--child-per-session: each client has its own child, initialized as that client, and gets its own questions', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), fake: { FAKE_EXTRA_TOOLS: '1' }, args: ['--child-per-session'] });
    const pidFile = s.pidFile;
    const log = s.upstreamLog;
    await waitFor(() => pids(pidFile).length === 1, 10000, 'the shared child');
    const a = await openSession(s.target, 'client-A');
    const b = await openSession(s.target, 'client-B', { elicitation: { form: {} }, roots: {} });
    assert.equal(pids(pidFile).length, 3, 'the shared child and one child per session');
    const inits = readJsonLines(log).filter((m) => m.method === 'initialize');
    const names = inits.map((m) => m.params.clientInfo.name).sort();
    assert.deepEqual(names, ['client-A', 'client-B', 'sluice'], 'each child is initialized with its client\'s clientInfo');
    const initB = inits.find((m) => m.params.clientInfo.name === 'client-B');
    assert.deepEqual(initB.params.capabilities, { elicitation: { form: {} }, roots: {} }, 'and its capabilities');
    const initShared = inits.find((m) => m.params.clientInfo.name === 'sluice');
    assert.deepEqual(initShared.params.capabilities, {}, 'the shared child declares nothing');

    // Both ask at once; each answers only its own question.
    const qa = await askVia(a, 'ca', 'A');
    const qb = await askVia(b, 'cb', 'B');
    assert.match(qa.question.params.message, /topic "A"/);
    assert.match(qb.question.params.message, /topic "B"/);
    await b.answer(qb.question.id, { action: 'accept', content: { answer: 'from B' } });
    await a.answer(qa.question.id, { action: 'accept', content: { answer: 'from A' } });
    const ra = await qa.post.nextEvent((m) => m && m.id === 'ca', 10000, 'A\'s result');
    const rb = await qb.post.nextEvent((m) => m && m.id === 'cb', 10000, 'B\'s result');
    const got = (r) => JSON.parse(r.result.content[0].text).answer.result.content.answer;
    assert.equal(got(ra), 'from A');
    assert.equal(got(rb), 'from B');

    // A's session ends: its child ends with it; B's stays.
    const [, childA] = pids(pidFile);
    assert.equal((await a.remove()).status, 200);
    assert.ok(await waitPidGone(childA, scaled(5000)), 'A\'s child ends with its session');
    const echo = await b.rpc(legacyToolCall('e', 'echo', { text: 'still here' }));
    assert.ok(echo.msg && echo.msg.result, `B still works: ${echo.raw}`);
  });

  await t.test('--child-per-session: a gated call asks sluice\'s confirmation first, then the server asks', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  legacy_ask:\n    action: confirm\n');
    const s = await startHttpSluice(t, { dir, policy, fake: { FAKE_EXTRA_TOOLS: '1' }, args: ['--child-per-session'] });
    const a = await openSession(s.target, 'client-A');
    const post = await a.post(legacyToolCall('g1', 'legacy_ask', { topic: 'gated' }));
    const confirm = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, 'sluice\'s confirmation');
    assert.match(String(confirm.id), /^sluice-e-/, 'sluice asks first');
    assert.equal(readJsonLines(s.upstreamLog).filter((m) => m.method === 'tools/call').length, 0, 'nothing forwarded before the accept');
    await a.answer(confirm.id, { action: 'accept', content: { approve: true } });
    const question = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, 'the server\'s question');
    assert.match(String(question.id), /^sluice-u-/, 'then the server asks');
    await a.answer(question.id, { action: 'accept', content: { answer: 'yes' } });
    const r = await post.nextEvent((m) => m && m.id === 'g1', 10000, 'the result');
    assert.equal(JSON.parse(r.result.content[0].text).answer.result.content.answer, 'yes');
  });

  // An approved call runs on after its client left, and its server then asks the client
  // something. Before, the question was kept for an answer that never came: the session was never
  // freed, with its child and its place under --max-children, so one client could take them all.
  await t.test('--child-per-session: the server asks after the client left: it gets an error at once, and the session and its child end with the call', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  legacy_ask:\n    action: confirm\n');
    const s = await startHttpSluice(t, { dir, policy, fake: { FAKE_EXTRA_TOOLS: '1', FAKE_ASK_WAIT_MS: '60000' }, args: ['--child-per-session', '--max-children', '1'] });
    const a = await openSession(s.target, 'client-A');
    const post = await a.post(legacyToolCall('g1', 'legacy_ask', { topic: 'left', askAfterMs: scaled(1500) }));
    const confirm = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, 'sluice\'s confirmation');
    await a.answer(confirm.id, { action: 'accept', content: { approve: true } });
    await waitFor(() => readJsonLines(s.upstreamLog).some((m) => m.method === 'tools/call' && m.params.name === 'legacy_ask'), 5000, 'the approved call upstream');
    assert.equal((await a.remove()).status, 200);
    // The server asks (askAfterMs) and gets an error, not silence until FAKE_ASK_WAIT_MS.
    const answered = await waitFor(() => readJsonLines(s.upstreamLog).find((m) => m.id === 7001 && !m.method), 10000, 'the server\'s question answered');
    assert.equal(answered.error && answered.error.message, 'the client went away; nobody can answer this request', JSON.stringify(answered));
    // The call ends with it, and so do the session and its child: another client gets the one child.
    const init = { jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'client-B', version: '1' } } };
    let r;
    const end = Date.now() + scaled(10000);
    do {
      r = await rpc(s.target, init, { modern: false });
      if (r.status === 200) break;
      await sleep(100);
    } while (Date.now() < end);
    assert.equal(r.status, 200, `a new session after the call ended: HTTP ${r.status} ${r.raw}`);
  });

  await t.test('--child-per-session: the client leaves with the server\'s question open: the server gets an error at once; the approved call ends with it', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  legacy_ask:\n    action: confirm\n');
    const s = await startHttpSluice(t, { dir, policy, fake: { FAKE_EXTRA_TOOLS: '1', FAKE_ASK_WAIT_MS: '60000' }, args: ['--child-per-session', '--max-children', '1'] });
    const a = await openSession(s.target, 'client-A');
    const post = await a.post(legacyToolCall('g1', 'legacy_ask', { topic: 'open' }));
    const confirm = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, 'sluice\'s confirmation');
    await a.answer(confirm.id, { action: 'accept', content: { approve: true } });
    const question = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, 'the server\'s question');
    assert.match(String(question.id), /^sluice-u-/);
    assert.equal((await a.remove()).status, 200);
    const answered = await waitFor(() => readJsonLines(s.upstreamLog).find((m) => m.id === 7001 && !m.method), 10000, 'the server\'s question answered');
    assert.equal(answered.error && answered.error.message, 'the client went away; nobody can answer this request', JSON.stringify(answered));
  });

  // The server's question is tied to no call sluice can name, so nothing ended it but an answer
  // or the server's notifications/cancelled: a client that never answered kept its session busy
  // (never idle) after the server gave up and the call completed, with its child and its place
  // under --max-sessions-per-principal, for ever. It now ends at --upstream-timeout.
  await t.test('--child-per-session: the client never answers the server\'s question: it is withdrawn at --upstream-timeout, and the session expires idle', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), fake: { FAKE_EXTRA_TOOLS: '1', FAKE_ASK_WAIT_MS: '1000' },
      args: ['--child-per-session', '--upstream-timeout', '2', '--session-idle', '1', '--max-sessions-per-principal', '1', '--principal', 'header:X-User'] });
    const hdr = { 'X-User': 'mallory' };
    const a = new LegacyHttpSession(s.target, { headers: hdr });
    await a.initialize();
    const { post, question } = await askVia(a, 'q1', 'never');
    assert.match(String(question.id), /^sluice-u-\d+$/);
    await post.nextEvent((m) => m && m.id === 'q1', 10000, 'the call\'s reply once the server gave up');
    await waitLog(s, /session [0-9a-f]+ expired after 1 s without use/, 8000);
    const ping = await a.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(ping.status, 404, `the session outlived --session-idle: ${ping.status} ${ping.raw}`);
    const b = new LegacyHttpSession(s.target, { headers: hdr });
    await b.initialize(); // its principal's one session is free again
    assert.match(s.stderr, new RegExp(`did not answer the server's ${question.id} within 2 s`));
  });

  await t.test('--child-per-session: a child that dies with its question out: the question is cancelled, and a late answer never reaches the next child', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), fake: { FAKE_EXTRA_TOOLS: '1', FAKE_ASK_WAIT_MS: '60000' }, args: ['--child-per-session'] });
    const a = await openSession(s.target, 'client-A');
    const qa = await askVia(a, 'ca', 'A');
    const stream = await a.openStream(); // opened after the question, which went on the call's stream
    assert.equal(stream.status, 200);
    t.after(() => stream.abort());
    const [, childA] = pids(s.pidFile);
    process.kill(childA, 'SIGKILL');

    const res = await qa.post.nextEvent((m) => m && m.id === 'ca', 10000, 'the call\'s answer');
    assert.ok(res.error || (res.result && res.result.isError), `the call fails: ${JSON.stringify(res)}`);
    // The cancellation goes wherever sluice's requests to this client go: the call's stream
    // while it is open, else the session's stream.
    const isCancel = (m) => m && m.method === 'notifications/cancelled' && m.params && m.params.requestId === qa.question.id;
    const cancel = await waitFor(() => [...qa.post.events, ...stream.events].map((e) => e.json).find(isCancel), 10000, 'the question\'s cancellation');
    assert.match(cancel.params.reason, /stopped/);

    // The next child is up (initialized as client-A again); only then the person's answer comes.
    await waitFor(() => pids(s.pidFile).length === 3, 10000, 'the session\'s next child');
    await waitFor(() => readJsonLines(s.upstreamLog).filter((m) => m.method === 'initialize' && m.params.clientInfo.name === 'client-A').length === 2, 10000, 'its initialize');
    const late = await a.answer(qa.question.id, { action: 'accept', content: { answer: 'late answer' } });
    assert.ok(late.status === 202 || late.status === 200, `the late answer: HTTP ${late.status}`);
    // A call after it: whatever sluice wrote to the child before it has been read by then.
    const echo = await a.rpc(legacyToolCall('e', 'echo', { text: 'after' }));
    assert.ok(echo.msg && echo.msg.result, `the session works on its next child: ${echo.raw}`);
    const leaked = readJsonLines(s.upstreamLog).filter((m) => !m.method && JSON.stringify(m.result ?? null).includes('late answer'));
    assert.deepEqual(leaked, [], 'the answer to the dead child\'s question reached no child');
  });

  // A session's child that stopped reading its stdin takes no new call: it is stopped (what it
  // wrote is still read) and opened again. A call sent meanwhile waits for the session's next
  // child (--upstream-wait), as calls wait for the shared child while it restarts, rather than
  // failing at once with "not running", or going into a pipe nobody reads and failing unrun.
  const calls = (s, marker) => readJsonLines(s.upstreamLog).filter((m) => m.method === 'tools/call' && m.params.arguments && m.params.arguments.marker === marker);
  async function deafen(s, a, afterMs = 1000) {
    const deaf = a.rpc(legacyToolCall('deaf', 'deaf', { afterMs, bytes: 1000 }), { timeoutMs: 20000 });
    await waitLog(s, /deaf: stdin closed/, 5000);
    const next = a.rpc(legacyToolCall('next', 'echo', { marker: 'next' }), { timeoutMs: 20000 }); // its write fails
    await waitLog(s, /stopped reading its stdin/, 5000);
    return { deaf, next };
  }

  await t.test('--child-per-session: a child that stops reading its stdin: a call sent then waits and runs on the session\'s next child', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session'] });
    const a = await openSession(s.target, 'client-A');
    const { deaf, next } = await deafen(s, a);
    const later = await a.rpc(legacyToolCall('later', 'echo', { marker: 'later' }), { timeoutMs: 20000 });
    assert.ok(later.msg && later.msg.result && !later.msg.result.isError, `the call sent while the child was deaf: ${later.raw}`);
    assert.match(resultText(later.msg), /later/, later.raw);
    const d = await deaf;
    assert.ok(d.msg && d.msg.result, `the answer the child wrote: ${d.raw.slice(0, 300)}`);
    assert.equal(d.msg.result.content[0].text.length, 1000);
    const n = await next;
    assert.ok(n.msg && (n.msg.error || n.msg.result.isError), `the call the child never read fails: ${n.raw}`);
    assert.equal(pids(s.pidFile).length, 3, 'the shared child, the session\'s, and its next');
    assert.equal(calls(s, 'next').length, 0);
    assert.equal(calls(s, 'later').length, 1, 'the call sent meanwhile ran once, on the next child');
  });

  await t.test('--child-per-session, --upstream-wait 0: a call to a session whose child stopped reading its stdin is refused at once, saying so', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--upstream-wait', '0'] });
    const a = await openSession(s.target, 'client-A');
    const { deaf } = await deafen(s, a);
    const t0 = Date.now();
    const later = await a.rpc(legacyToolCall('later', 'echo', { marker: 'later' }), { timeoutMs: 20000 });
    assert.ok(later.msg && later.msg.error, `refused: ${later.raw}`);
    assert.match(later.msg.error.message, /stopped reading its input/, later.raw);
    assert.ok(Date.now() - t0 < scaled(900), 'at once, not when the child is gone');
    assert.ok((await deaf).msg.result, 'the call the child read is still answered');
    assert.equal(calls(s, 'later').length, 0);
  });

  // A gated call is refused as plainly: nobody is asked about a call no child can run now.
  await t.test('--child-per-session, --upstream-wait 0: a gated call to a session whose child stopped reading is refused, nobody asked', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--upstream-wait', '0'] });
    const a = await openSession(s.target, 'client-A');
    const { deaf } = await deafen(s, a);
    const post = await a.post(legacyToolCall('g2', 'drop_table', { table: 'g2' }));
    // The refusal is the POST's JSON reply; a question would come first on an event stream.
    const first = post.sse ? await post.nextEvent(() => true, 5000, 'the first event')
                           : (await post.complete(5000)).json();
    assert.equal(first.method, undefined, `nobody is asked: ${JSON.stringify(first)}`);
    assert.equal(first.id, 'g2', JSON.stringify(first));
    assert.ok(first.error, JSON.stringify(first));
    assert.equal(first.error.code, -32000, JSON.stringify(first));
    assert.match(first.error.message, /stopped reading its input/, JSON.stringify(first));
    assert.ok((await deaf).msg.result, 'the call the child read is still answered');
  });

  // The same while a session's child that died is opened again (1 s later): a call waits for it.
  await t.test('--child-per-session: a call sent while the session\'s child is opened again waits and runs on it', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session'] });
    const a = await openSession(s.target, 'client-A');
    const [, childA] = pids(s.pidFile);
    process.kill(childA, 'SIGKILL');
    await waitLog(s, /the child of a session .*; opening it again in 1 s/, 5000);
    const r = await a.rpc(legacyToolCall('during', 'echo', { marker: 'during' }), { timeoutMs: 20000 });
    assert.ok(r.msg && r.msg.result && !r.msg.result.isError, `the call sent during the restart: ${r.raw}`);
    assert.equal(pids(s.pidFile).length, 3, 'the shared child, the session\'s, and its next');
    assert.equal(calls(s, 'during').length, 1);
  });

  // --upstream-wait bounds the whole wait: a request woken because another upstream became ready
  // (here the shared child, back after a restart) and still waiting for its session's own keeps
  // its first deadline rather than starting a new one.
  await t.test('--child-per-session: a call waiting for its session\'s child keeps its --upstream-wait deadline when another upstream becomes ready', async (t) => {
    const dir = tmpDir(t);
    const WAIT_S = 6;
    const mark = `${dir}/slow-next`;
    // The first child to start after the mark is made takes 30 s to start: the session's next.
    const upstream = ['sh', '-c', 'if rm "$1" 2>/dev/null; then sleep 30; fi; shift; exec "$@"', 'sh', mark, process.execPath, FAKE_UPSTREAM];
    const s = await startHttpSluice(t, { dir, upstream, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--upstream-wait', String(WAIT_S)] });
    const a = await openSession(s.target, 'client-A');
    const [shared] = pids(s.pidFile);
    fs.writeFileSync(mark, '');
    await deafen(s, a);
    const t0 = Date.now();
    const later = a.rpc(legacyToolCall('later', 'echo', { marker: 'later' }), { timeoutMs: 30000 });
    await waitFor(() => !fs.existsSync(mark), 10000, 'the session\'s next child to start (slowly)');
    process.kill(shared, 'SIGKILL');
    await waitLog(s, /the upstream server .*; starting it again in 1 s/, 5000);
    await waitFor(() => pids(s.pidFile).length === 3, 10000, 'the shared child\'s next');
    const r = await later;
    const took = Date.now() - t0;
    assert.ok(r.msg && r.msg.error, `the call gets an error once the wait is over: ${r.raw}`);
    assert.match(r.msg.error.message, /upstream not ready: the server of this session is starting/, r.raw);
    assert.ok(took < WAIT_S * 1000 + scaled(1500), `answered after ${took} ms, not ${WAIT_S} s after it was sent`);
    assert.equal(calls(s, 'later').length, 0);
  });

  // Only what must reach the session's child waits for its next one. An answer to sluice's
  // question goes to the call held in sluice, and a cancellation must end its call now: both are
  // taken at once, while the child that stopped reading is still being stopped, rather than once
  // the next child is up (by then the child's exit had refused both held calls as unanswered).
  await t.test('--child-per-session: while the session\'s child is being replaced, an answer and a cancellation are taken at once', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session'] });
    const a = await openSession(s.target, 'client-A');
    const held = async (id) => {
      const post = await a.post(legacyToolCall(id, 'drop_table', { table: id }));
      const q = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, `sluice's question about ${id}`);
      return { post, q };
    };
    const g1 = await held('g1');
    const g2 = await held('g2');
    await deafen(s, a, 8000); // the child is stopped 2 s after its write failed
    const t0 = Date.now();
    const acc = await a.answer(g1.q.id, { action: 'accept', content: { approve: true } });
    assert.equal(acc.status, 202, `the answer: HTTP ${acc.status}`);
    const cancel = await a.notify('notifications/cancelled', { requestId: 'g2', reason: 'not now' });
    assert.equal(cancel.status, 202, `the cancellation: HTTP ${cancel.status}`);
    assert.ok(Date.now() - t0 < scaled(900), `taken at once, not after the next child: ${Date.now() - t0} ms`);
    const r1 = await g1.post.nextEvent((m) => m && m.id === 'g1', 5000, 'g1\'s answer');
    const text1 = JSON.stringify(r1);
    assert.ok(r1.error || (r1.result && r1.result.isError), `the accepted call cannot run on a child that reads nothing: ${text1}`);
    assert.doesNotMatch(text1, /before the person answered/, 'the person\'s answer was taken');
    await g2.post.complete(5000);
    const r2 = g2.post.events.map((e) => e.json).find((m) => m && m.id === 'g2');
    assert.equal(r2, undefined, `the cancelled call gets no response: ${JSON.stringify(r2)}`);
    assert.equal(readJsonLines(s.upstreamLog).filter((m) => m.method === 'tools/call' && m.params.name === 'drop_table').length, 0, 'neither reached any child');
  });

  // The journal says what happened to such an accepted call: it was let through and never sent.
  // No `forwarding` line (it went nowhere), and its decision record's outcome is `unavailable`,
  // not an upstream `error` (the upstream never saw it); the journal still verifies.
  await t.test('--child-per-session: a call accepted while the session\'s child reads nothing is journaled as never sent', async (t) => {
    const dir = tmpDir(t);
    const audit = `${dir}/audit.jsonl`;
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--audit', audit] });
    const a = await openSession(s.target, 'client-A');
    const post = await a.post(legacyToolCall('g1', 'drop_table', { table: 'g1' }));
    const q = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, 'sluice\'s question about g1');
    await deafen(s, a, 8000);
    assert.equal((await a.answer(q.id, { action: 'accept', content: { approve: true } })).status, 202);
    const r = await post.nextEvent((m) => m && m.id === 'g1', 5000, 'g1\'s answer');
    assert.ok(r.error, `the accepted call is refused: ${JSON.stringify(r)}`);
    const recs = readJsonLines(audit).filter((l) => l.tool === 'drop_table' && l.id === 'g1');
    assert.deepEqual(recs.map((l) => [l.decision, l.reason, l.upstream]),
      [['asked', recs[0].reason, 'not-forwarded'], ['client-accepted', 'accept', 'unavailable']], JSON.stringify(recs));
    assert.match(r.error.message, /stopped reading its input/, JSON.stringify(r));
    const v = runSluice(['audit', 'verify', audit]);
    assert.equal(v.status, 0, `audit verify: ${v.stdout}${v.stderr}`);
    assert.equal(readJsonLines(s.upstreamLog).filter((m) => m.method === 'tools/call' && m.params.name === 'drop_table').length, 0, 'it reached no child');
  });

  // A request that waits for its session's next child is answered as soon as the session ends,
  // as any request to an ended session is (404), not at the end of --upstream-wait.
  await t.test('--child-per-session: a call waiting for its session\'s next child gets 404 at once when the session ends', async (t) => {
    const dir = tmpDir(t);
    const mark = `${dir}/slow-next`;
    const upstream = ['sh', '-c', 'if rm "$1" 2>/dev/null; then sleep 30; fi; shift; exec "$@"', 'sh', mark, process.execPath, FAKE_UPSTREAM];
    const s = await startHttpSluice(t, { dir, upstream, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--upstream-wait', '20'] });
    const a = await openSession(s.target, 'client-A');
    const [, childA] = pids(s.pidFile);
    fs.writeFileSync(mark, '');
    process.kill(childA, 'SIGKILL');
    await waitLog(s, /the child of a session .*; opening it again in 1 s/, 5000);
    const later = a.rpc(legacyToolCall('later', 'echo', { marker: 'later' }), { timeoutMs: 30000 });
    await waitFor(() => !fs.existsSync(mark), 10000, 'the session\'s next child to start (slowly)');
    await sleep(scaled(300));
    const t0 = Date.now();
    assert.equal((await a.remove()).status, 200);
    const r = await later;
    assert.equal(r.status, 404, `the waiting call: HTTP ${r.status} ${r.raw}`);
    assert.ok(Date.now() - t0 < scaled(1500), `answered ${Date.now() - t0} ms after the session ended`);
    assert.equal(calls(s, 'later').length, 0);
  });

  // As the shared child's: the delay doubles while the session's child dies soon after it got
  // ready, and starts over at 1 s once one served 10 s.
  await t.test('--child-per-session: a session child\'s restart delay doubles, and starts over once it ran 10 s', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session'] });
    const a = await openSession(s.target, 'client-A');
    const last = () => pids(s.pidFile).at(-1);
    const killed = async (n, delay) => {
      const from = s.stderr.length;
      process.kill(last(), 'SIGKILL');
      await waitLog(s, new RegExp(`the child of a session .*; opening it again in ${delay} s`), 5000, from);
      await waitFor(() => pids(s.pidFile).length === n, 15000, `the session's child number ${n - 1}`);
      const echo = await a.rpc(legacyToolCall('e', 'echo', { text: 'up' }), { timeoutMs: 20000 });
      assert.ok(echo.msg && echo.msg.result, `the session works on it: ${echo.raw}`);
    };
    await killed(3, 1);
    await killed(4, 2); // it served less than 10 s
    await sleep(10500);
    await killed(5, 1);
  });

  // A session whose child went says what happened, not "is starting": gone before it was ever
  // ready (and not opened again), or gone and opened again in N s.
  await t.test('--child-per-session: a session whose child died before it was ever ready says so', async (t) => {
    const dir = tmpDir(t);
    const mark = `${dir}/fail-next`;
    const upstream = ['sh', '-c', 'if rm "$1" 2>/dev/null; then exit 3; fi; shift; exec "$@"', 'sh', mark, process.execPath, FAKE_UPSTREAM];
    const s = await startHttpSluice(t, { dir, upstream, policy: writePolicy(dir, POLICY), args: ['--child-per-session'] });
    await waitFor(() => pids(s.pidFile).length === 1, 10000, 'the shared child');
    fs.writeFileSync(mark, '');
    const init = await rpc(s.target, { jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'client-A', version: '1' } } }, { modern: false });
    assert.ok(init.msg && init.msg.error, `the initialize fails: ${init.raw}`);
    const a = new LegacyHttpSession(s.target);
    a.sessionId = init.headers['mcp-session-id'];
    assert.ok(a.sessionId, 'the session stays');
    const t0 = Date.now();
    const r = await a.rpc(legacyToolCall('c', 'echo', { text: 'x' }));
    assert.ok(r.msg && r.msg.error, `refused: ${r.raw}`);
    assert.match(r.msg.error.message, /^upstream not ready: the server of this session stopped before it was ready and is not started again/, r.raw);
    assert.ok(Date.now() - t0 < scaled(900), 'at once: nothing is coming');
  });

  await t.test('--child-per-session, --upstream-wait 0: a session whose child went says it is opened again in N s, and whether it had got ready', async (t) => {
    const dir = tmpDir(t);
    const mark = `${dir}/fail-next`;
    const upstream = ['sh', '-c', 'if rm "$1" 2>/dev/null; then exit 3; fi; shift; exec "$@"', 'sh', mark, process.execPath, FAKE_UPSTREAM];
    const s = await startHttpSluice(t, { dir, upstream, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--upstream-wait', '0'] });
    const a = await openSession(s.target, 'client-A');
    let from = s.stderr.length;
    process.kill(pids(s.pidFile).at(-1), 'SIGKILL');
    await waitLog(s, /the child of a session .*; opening it again in 1 s/, 5000, from);
    const r1 = await a.rpc(legacyToolCall('c1', 'echo', { text: 'x' }));
    assert.match(r1.msg && r1.msg.error && r1.msg.error.message, /^upstream not ready: the server of this session stopped; it is started again in 1 s$/, r1.raw);
    await waitFor(() => pids(s.pidFile).length === 3, 10000, 'the session\'s next child');
    for (const end = Date.now() + scaled(10000); ; await sleep(100)) { // refused while it starts
      const up = await a.rpc(legacyToolCall('up', 'echo', { text: 'up' }));
      if (up.msg && up.msg.result) break;
      assert.ok(Date.now() < end, `the session's next child serves: ${up.raw}`);
    }
    fs.writeFileSync(mark, ''); // the one after it exits before its handshake
    from = s.stderr.length;
    process.kill(pids(s.pidFile).at(-1), 'SIGKILL');
    await waitLog(s, /the child of a session .*; opening it again in 4 s/, 8000, from);
    const r2 = await a.rpc(legacyToolCall('c2', 'echo', { text: 'x' }));
    assert.match(r2.msg && r2.msg.error && r2.msg.error.message, /^upstream not ready: the server of this session stopped before it was ready; it is started again in [34] s$/, r2.raw);
  });

  await t.test('--max-children: beyond it a new session gets 503 with a JSON-RPC error', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--max-children', '1'] });
    const a = await openSession(s.target, 'client-A');
    const stream = await a.openStream(); // a session with a stream open is not idle: not evicted
    assert.equal(stream.status, 200);
    const msg = { jsonrpc: '2.0', id: 'init2', method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'client-B', version: '1' } } };
    const r = await rpc(s.target, msg, { modern: false });
    assert.equal(r.status, 503, r.raw);
    assert.equal(r.msg.error.code, -32000, r.raw);
    assert.match(r.msg.error.message, /--max-children/);
    assert.equal(r.msg.id, 'init2');
    stream.abort();
  });

  await t.test('--max-children: an idle session gives its child up to a new session at once', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--max-children', '1'] });
    const a = await openSession(s.target, 'client-A'); // no stream open, nothing in flight: idle
    const b = await openSession(s.target, 'client-B');
    const echo = await b.rpc(legacyToolCall('e', 'echo', { text: 'b' }));
    assert.ok(echo.msg && echo.msg.result, echo.raw);
    const gone = await a.rpc(legacyToolCall('e', 'echo', { text: 'a' }));
    assert.equal(gone.status, 404, `the evicted session is gone: ${gone.raw}`);
  });

  // Ending a principal's own idle session (or the table's least recently used one) to make room
  // gives its child up for the new session: the initialize that ended it is served.
  for (const [label, extra, second] of [
    ['--max-sessions-per-principal', ['--max-sessions-per-principal', '1'], 'alice'],
    ['--max-sessions', ['--max-sessions', '2'], 'carol'],
  ]) {
    await t.test(`--max-children full: a session ended for ${label} gives its child to the initialize that ended it`, async (t) => {
      const dir = tmpDir(t);
      const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), args: ['--child-per-session', '--max-children', '2', '--principal', 'header:X-User', ...extra] });
      const init = (user, n) => rpc(s.target, { jsonrpc: '2.0', id: `init-${user}-${n}`, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: `${user}-${n}`, version: '1' } } }, { modern: false, headers: { 'X-User': user } });
      const sid = {};
      for (const user of ['alice', 'bob']) {
        const r = await init(user, 1);
        assert.equal(r.status, 200, r.raw);
        sid[user] = r.headers['mcp-session-id'];
      }
      const r = await init(second, 2);
      assert.equal(r.status, 200, `the initialize that ended a session: ${r.raw}`);
      // One session was ended for it, alice's; not bob's as well.
      const bob = new LegacyHttpSession(s.target, { headers: { 'X-User': 'bob' } });
      bob.sessionId = sid.bob;
      const ping = await bob.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
      assert.equal(ping.status, 200, `bob's session is still there: ${ping.raw}`);
    });
  }

  // A session can hold no child (its initialize could not start one). With the children full,
  // ending it makes no room: the initialize that ended it was then served over --max-children,
  // or refused after all, the session ended for nothing.
  const fdOpts = { skip: VALGRIND && 'valgrind keeps descriptors of its own under the limit' };
  await t.test('--max-children full: a session without a child is not ended to make room, one with a child is', fdOpts, async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), wrap: FD_WRAP, args: ['--child-per-session', '--max-children', '1'] });
    const [shared] = pids(s.pidFile);
    const sessionChildren = () => childrenOf(s.pid).filter((p) => p !== shared).length;
    const none = new LegacyHttpSession(s.target);
    none.sessionId = await childlessSession(t, s); // the least recently used
    const a = await openSession(s.target, 'client-A'); // the one child: full
    assert.equal(sessionChildren(), 1);
    const b = await openSession(s.target, 'client-B');
    const ping = await none.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(ping.status, 200, `the session without a child is still there: ${ping.raw}`);
    const gone = await a.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(gone.status, 404, `A gave its child up: ${gone.raw}`);
    await waitFor(() => sessionChildren() === 1, 5000, 'one session child: B\'s');
    const echo = await b.rpc(legacyToolCall('e', 'echo', { text: 'b' }));
    assert.ok(echo.msg && echo.msg.result, echo.raw);
  });

  await t.test('--max-children full: a principal at its cap with no idle session holding a child is refused, its sessions kept', fdOpts, async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), wrap: FD_WRAP, args: ['--child-per-session', '--max-children', '1', '--principal', 'header:X-User', '--max-sessions-per-principal', '1'] });
    const alice = { 'X-User': 'alice' };
    const none = new LegacyHttpSession(s.target, { headers: alice });
    none.sessionId = await childlessSession(t, s, alice);
    const bob = new LegacyHttpSession(s.target, { headers: { 'X-User': 'bob' } });
    assert.equal((await bob.initialize()).status, 200); // the one child
    const stream = await bob.openStream(); // busy: not ended
    assert.equal(stream.status, 200);
    t.after(() => stream.abort());
    const r = await rpc(s.target, { jsonrpc: '2.0', id: 'init-alice', method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'alice-2', version: '1' } } }, { modern: false, headers: alice });
    assert.equal(r.status, 429, `alice's initialize: ${r.raw}`);
    assert.match(r.msg.error.message, /--max-sessions-per-principal/);
    const ping = await none.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(ping.status, 200, `alice's session is not ended for an initialize refused after: ${ping.raw}`);
  });

  // The same with bob's session idle: alice's session without a child makes room under her cap,
  // and bob's idle one gives its child up, so her initialize is served. Before, she was refused
  // (429) until her session without a child expired, though both could end at once.
  await t.test('--max-children full: a principal at its cap whose idle sessions hold no child is served when another idle session gives its child up', fdOpts, async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), wrap: FD_WRAP, args: ['--child-per-session', '--max-children', '1', '--principal', 'header:X-User', '--max-sessions-per-principal', '1'] });
    const alice = { 'X-User': 'alice' };
    const none = new LegacyHttpSession(s.target, { headers: alice });
    none.sessionId = await childlessSession(t, s, alice);
    const bob = new LegacyHttpSession(s.target, { headers: { 'X-User': 'bob' } });
    assert.equal((await bob.initialize()).status, 200); // the one child; idle
    const r = await rpc(s.target, { jsonrpc: '2.0', id: 'init-alice', method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'alice-2', version: '1' } } }, { modern: false, headers: alice });
    assert.equal(r.status, 200, `alice's initialize: ${r.raw}`);
    const sid = r.headers['mcp-session-id'];
    assert.ok(sid && sid !== none.sessionId, 'a new session');
    const gone = await none.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(gone.status, 404, `alice's session without a child ended: ${gone.raw}`);
    const bobGone = await bob.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(bobGone.status, 404, `bob's idle session gave its child up: ${bobGone.raw}`);
    const fresh = new LegacyHttpSession(s.target, { headers: alice });
    fresh.sessionId = sid;
    const echo = await fresh.rpc(legacyToolCall('e', 'echo', { text: 'alice' }));
    assert.ok(echo.msg && echo.msg.result, `alice's new session runs on its child: ${echo.raw}`);
  });

  // A child counts until it has exited. One that ignores its stdin's end lives about a second
  // more (then SIGTERM); before, its place was given back at once, so a client that opened and
  // ended sessions in a loop had any number of children running (34 under --max-children 4).
  await t.test('--max-children counts a child until it has exited: sessions opened and ended in a loop never run more', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), fake: { FAKE_IGNORE_EOF: '1' }, args: ['--child-per-session', '--max-children', '2'] });
    const [shared] = pids(s.pidFile); // the shared child, started before sluice is ready
    assert.ok(shared, 'the shared child\'s pid');
    const sessionChildren = () => childrenOf(s.pid).filter((p) => p !== shared).length;
    let most = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, sessionChildren());
    }, 10);
    t.after(() => clearInterval(sampler));
    const init = (n) => rpc(s.target, { jsonrpc: '2.0', id: `init-${n}`, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: `churn-${n}`, version: '1' } } }, { modern: false });
    let opened = 0;
    let refused;
    const end = Date.now() + scaled(3000);
    for (let n = 0; Date.now() < end && n < 200; n++) {
      const r = await init(n);
      if (r.status === 200) {
        opened++;
        const a = new LegacyHttpSession(s.target);
        a.sessionId = r.headers['mcp-session-id'];
        assert.equal((await a.remove()).status, 200);
      } else {
        assert.equal(r.status, 503, r.raw);
        refused = r;
        await sleep(20);
      }
    }
    clearInterval(sampler);
    most = Math.max(most, sessionChildren());
    assert.ok(opened >= 2, `sessions opened: ${opened}`);
    assert.ok(most <= 2, `${most} session children at once under --max-children 2`);
    assert.ok(refused, 'an initialize refused while the ended sessions\' children still ran');
    assert.equal(refused.msg.error.code, -32000, refused.raw);
    assert.match(refused.msg.error.message, /--max-children\), \d+ of them still ending after their session; try again in a moment/);
    assert.match(String(refused.msg.id), /^init-\d+$/, refused.raw);
    // Once they have exited their places come back.
    let r;
    const stop = Date.now() + scaled(10000);
    do {
      r = await init('after');
      if (r.status === 200) break;
      await sleep(100);
    } while (Date.now() < stop);
    assert.equal(r.status, 200, `a session once the children exited: HTTP ${r.status} ${r.raw}`);
  });

  await t.test('--max-children with named principals: warned when one principal may take them all; its share holds', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY);
    const args = ['--child-per-session', '--max-children', '3', '--principal', 'header:X-User'];
    const loose = await startHttpSluice(t, { dir, policy, args, tag: 'loose' });
    assert.match(loose.stderr, /--max-sessions-per-principal \(64\) is not below --max-children \(3\)/, loose.stderr);
    const anon = await startHttpSluice(t, { dir, policy, args: ['--child-per-session', '--max-children', '3'], tag: 'anon' });
    assert.doesNotMatch(anon.stderr, /is not below --max-children/, anon.stderr);

    const s = await startHttpSluice(t, { dir, policy, args: [...args, '--max-sessions-per-principal', '2'], tag: 'share' });
    assert.doesNotMatch(s.stderr, /is not below --max-children/, s.stderr);
    const init = (user, n) => rpc(s.target, { jsonrpc: '2.0', id: `init-${user}-${n}`, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: `${user}-${n}`, version: '1' } } }, { modern: false, headers: { 'X-User': user } });
    const streams = [];
    for (const n of [1, 2]) { // busy sessions: a GET stream open each
      const r = await init('alice', n);
      assert.equal(r.status, 200, r.raw);
      const a = new LegacyHttpSession(s.target, { headers: { 'X-User': 'alice' } });
      a.sessionId = r.headers['mcp-session-id'];
      assert.equal((await a.notify('notifications/initialized')).status, 202);
      const stream = await a.openStream();
      assert.equal(stream.status, 200);
      streams.push(stream);
    }
    const third = await init('alice', 3);
    assert.equal(third.status, 429, `alice's third session: ${third.raw}`);
    const bob = await init('bob', 1);
    assert.equal(bob.status, 200, `bob still gets a child: ${bob.raw}`);
    for (const stream of streams) stream.abort();
  });

  await t.test('--child-per-session needs --listen and a command upstream', async () => {
    const r = runSluice(['--child-per-session', '--', 'node', FAKE_UPSTREAM]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--child-per-session needs --listen/);
  });

  await t.test('an HTTP upstream: a session of its own per client, and the server\'s question reaches that client', async (t) => {
    const dir = tmpDir(t);
    const up = new RawUpstream({ era: 'legacy' });
    await up.listen(0);
    t.after(() => up.close());
    // ask: the server asks its client on the call's own stream, waits for the answer, returns it.
    up.tool('ask', async (req, res, msg) => {
      const rid = `q-${msg.id}`;
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(sseBytes([{ jsonrpc: '2.0', id: rid, method: 'elicitation/create', params: { mode: 'form', message: `server asks ${JSON.stringify(msg.params.arguments)}`, requestedSchema: { type: 'object', properties: {} } } }]));
      const answer = await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === rid && !('method' in r.json)), scaled(10000), 'the answer');
      await res.write(sseBytes([up.textResult(msg, JSON.stringify({ session: req.headers['mcp-session-id'], answer: answer.json.result, answerSession: answer.headers['mcp-session-id'] }))]));
      await res.end();
    });
    const s = await startSluiceOverHttp(t, writePolicy(dir, POLICY), up.url());
    const a = await openSession(s.target, 'client-A');
    const b = await openSession(s.target, 'client-B');
    const inits = up.posts('initialize');
    assert.deepEqual(inits.map((r) => r.json.params.clientInfo.name).sort(), ['client-A', 'client-B', 'sluice']);
    const post = await a.post(legacyToolCall('c1', 'ask', { who: 'A' }));
    const q = await post.nextEvent((m) => m && m.method === 'elicitation/create', 10000, 'the server\'s question');
    assert.match(q.params.message, /"who":"A"/);
    await a.answer(q.id, { action: 'accept', content: { ok: true } });
    const res = await post.nextEvent((m) => m && m.id === 'c1', 10000, 'the result');
    const out = JSON.parse(res.result.content[0].text);
    assert.deepEqual(out.answer, { action: 'accept', content: { ok: true } });
    const sidA = inits.find((r) => r.json.params.clientInfo.name === 'client-A');
    assert.equal(out.answerSession, out.session, 'the answer comes back on the same upstream session');
    assert.ok(sidA, 'client A initialized its own upstream session');
    // B's session never saw A's call.
    const callB = await b.rpc(legacyToolCall('c2', 'echo', { who: 'B' }));
    assert.ok(callB.msg && callB.msg.result, callB.raw);
    const calls = up.posts('tools/call');
    const sessOf = (name) => calls.find((r) => r.json.params.name === name).headers['mcp-session-id'];
    assert.notEqual(sessOf('ask'), sessOf('echo'), 'A and B call on different upstream sessions');
  });
});
