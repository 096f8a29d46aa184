// http_upstream_streams.test.mjs: what sluice asks of a 2025-11-25 Streamable HTTP upstream
// besides POSTs (PROTOCOL.md §5.3): the session's GET stream, the resumption of a call's event
// stream by GET with Last-Event-ID (SEP-1699), and the DELETE of a session that ended.
//
// The upstream is raw_http_upstream.mjs, scripted here through up.hook: it names each session
// after its client (sess-<clientInfo.name>; sluice's shared session is sess-sluice) and records
// every request, so each test asserts on what the server received (which method, on which
// connection, with which Mcp-Session-Id and Last-Event-ID), not only on what a client got.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { FORM_CAPS, LEGACY, modernRequest, requireBinary, scaled, sleep, suiteOptions, tmpDir, toolCall, writePolicy } from './lib.mjs';
import { LegacyHttpSession, legacyToolCall, postMcp, rpc, startSluiceOverHttp, waitLog } from './http_lib.mjs';
import { RawUpstream, headBytes, sseBytes } from './raw_http_upstream.mjs';

requireBinary();

const POLICY = 'version: 1\ndefaults:\n  action: allow\n';
const SSE_HEAD = [['Content-Type', 'text/event-stream'], ['Cache-Control', 'no-cache']];
const WAIT_MS = 5000;

/** sluice's HTTP front before the HTTP upstream at url. */
function startOverHttp(t, url) {
  return startSluiceOverHttp(t, writePolicy(tmpDir(t), POLICY), url);
}

/** A legacy upstream whose sessions are named after their clients. up.onGet and up.onDelete
 * (req, res) answer GETs and DELETEs (unset: the default 405). */
async function legacyUpstream(t) {
  const up = new RawUpstream({ era: 'legacy' });
  up.hook = async (req, res) => {
    const msg = req.json;
    if (req.method === 'POST' && msg && msg.method === 'initialize') {
      const sid = `sess-${msg.params.clientInfo.name}`;
      up.sessions.add(sid);
      await res.json(200, up.result(msg, {
        protocolVersion: LEGACY, capabilities: { tools: {}, resources: { subscribe: true } }, serverInfo: { name: 'streams', version: '1' },
      }), [['Mcp-Session-Id', sid]]);
      return true;
    }
    if (req.method === 'GET' && up.onGet) return up.onGet(req, res);
    if (req.method === 'DELETE' && up.onDelete) return up.onDelete(req, res);
    return false;
  };
  await up.listen(0);
  t.after(() => up.close());
  return up;
}

/** A legacy upstream whose GET streams stay open, kept by session id in open. */
async function upstreamWithGets(t) {
  const up = await legacyUpstream(t);
  const open = new Map();
  up.onGet = async (req, res) => {
    await res.write(headBytes(200, SSE_HEAD));
    open.set(req.headers['mcp-session-id'], res);
    return true;
  };
  return { up, open };
}

/** Asserts no client GET stream in streams ({name: stream}) got a notifications/message: anything
 * misrouted there comes before a list_changed broadcast on the shared session, sent now. Then
 * closes them. */
async function assertNoLogsOnGets(open, streams, what) {
  await open.get('sess-sluice').write(sseBytes([{ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }]));
  for (const [name, stream] of Object.entries(streams)) {
    await stream.nextEvent((m) => m && m.method === 'notifications/prompts/list_changed', WAIT_MS, `the shared list_changed at ${name}`);
    const seen = stream.events.map((e) => e.json).filter((m) => m && m.method === 'notifications/message');
    assert.deepEqual(seen, [], `${name}'s GET stream got ${what}`);
  }
  for (const stream of Object.values(streams)) stream.abort();
}

/** The GETs the upstream received for session sid (all of them without sid). */
function gets(up, sid) {
  return up.requests.filter((r) => r.method === 'GET' && (sid === undefined || r.headers['mcp-session-id'] === sid));
}

/** A legacy client session over sluice's HTTP front, named in its clientInfo. */
async function openSession(target, name, capabilities = FORM_CAPS) {
  const s = new LegacyHttpSession(target);
  const msg = { jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: LEGACY, capabilities, clientInfo: { name, version: '1' } } };
  const r = await rpc(target, msg, { modern: false });
  assert.equal(r.status, 200, `initialize of ${name}: HTTP ${r.status} ${r.raw}`);
  s.sessionId = r.headers['mcp-session-id'];
  assert.ok(s.sessionId, 'an Mcp-Session-Id');
  assert.equal((await s.notify('notifications/initialized')).status, 202);
  return s;
}

const updated = (uri) => ({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });

function textOf(r) {
  assert.ok(r.msg && r.msg.result, `expected a result: HTTP ${r.status} ${r.raw}`);
  return r.msg.result.content[0].text;
}

test('the upstream session\'s GET stream', suiteOptions(), async (t) => {
  await t.test('opened after the handshake with the session id; its notifications and requests reach that client only', async (t) => {
    const up = await legacyUpstream(t);
    const open = new Map(); // session id -> the Res of its GET stream
    up.onGet = async (req, res) => {
      await res.write(headBytes(200, SSE_HEAD));
      open.set(req.headers['mcp-session-id'], res);
      return true;
    };
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const b = await openSession(s.target, 'client-B', { ...FORM_CAPS, roots: {} });
    await up.waitFor(() => ['sess-sluice', 'sess-client-A', 'sess-client-B'].every((sid) => open.has(sid)), scaled(WAIT_MS), 'a GET stream per upstream session');
    for (const sid of ['sess-sluice', 'sess-client-A', 'sess-client-B']) {
      const [get, ...more] = gets(up, sid);
      assert.equal(more.length, 0, `one GET for ${sid}: ${up.describe()}`);
      assert.equal(get.headers.accept, 'text/event-stream', get.headText);
      assert.equal(get.headers['mcp-protocol-version'], LEGACY, get.headText);
      assert.equal(get.headers['last-event-id'], undefined, 'a first GET resumes nothing');
      const initialized = up.posts('notifications/initialized').find((r) => r.headers['mcp-session-id'] === sid);
      assert.ok(initialized && initialized.seq < get.seq, `the GET of ${sid} follows its notifications/initialized: ${up.describe()}`);
      assert.ok(up.requests.filter((r) => r.connId === get.connId).length === 1, 'the GET has a connection of its own');
    }
    const streamA = await a.openStream();
    const streamB = await b.openStream();
    assert.equal(streamA.status, 200);
    assert.equal(streamB.status, 200);

    // B's upstream session: a notification and a question outside any call, on its GET stream.
    await open.get('sess-client-B').write(sseBytes([updated('test://b'), { jsonrpc: '2.0', id: 'roots-1', method: 'roots/list' }]));
    const noteB = await streamB.nextEvent((m) => m && m.method === 'notifications/resources/updated', WAIT_MS, 'B\'s resources/updated');
    assert.equal(noteB.params.uri, 'test://b');
    const q = await streamB.nextEvent((m) => m && m.method === 'roots/list', WAIT_MS, 'the server\'s roots/list');
    assert.match(String(q.id), /^sluice-u-/);
    assert.equal((await b.answer(q.id, { roots: [{ uri: 'file:///b', name: 'b' }] })).status, 202);
    const answer = await up.waitFor(() => up.requests.find((r) => r.method === 'POST' && r.json && r.json.id === 'roots-1' && !('method' in r.json)), scaled(WAIT_MS), 'the answer to roots/list');
    assert.equal(answer.headers['mcp-session-id'], 'sess-client-B', 'the answer goes back to B\'s upstream session');
    assert.deepEqual(answer.json.result, { roots: [{ uri: 'file:///b', name: 'b' }] });

    // A's upstream session: to A.
    await open.get('sess-client-A').write(sseBytes([updated('test://a')]));
    const noteA = await streamA.nextEvent((m) => m && m.method === 'notifications/resources/updated', WAIT_MS, 'A\'s resources/updated');
    assert.equal(noteA.params.uri, 'test://a');

    // The shared session's GET stream: to every session, as its notifications always went.
    await open.get('sess-sluice').write(sseBytes([{ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }]));
    await streamA.nextEvent((m) => m && m.method === 'notifications/prompts/list_changed', WAIT_MS, 'the shared list_changed at A');
    await streamB.nextEvent((m) => m && m.method === 'notifications/prompts/list_changed', WAIT_MS, 'the shared list_changed at B');

    const seen = (stream) => stream.events.map((e) => e.json).filter(Boolean);
    assert.ok(!seen(streamA).some((m) => m.method === 'roots/list' || (m.params && m.params.uri === 'test://b')), `A got nothing of B's: ${JSON.stringify(seen(streamA))}`);
    assert.ok(!seen(streamB).some((m) => m.params && m.params.uri === 'test://a'), `B got nothing of A's: ${JSON.stringify(seen(streamB))}`);
    streamA.abort();
    streamB.abort();
  });

  await t.test('a question on a call\'s event stream goes to that call\'s POST stream, not the GET stream or another call\'s', async (t) => {
    // 2025-11-25: what a server sends on a POST's stream relates to that request; on the GET
    // stream, to none. The client's two calls are in flight and its GET stream is open: the
    // question about the first reaches the client on the first call's own stream.
    const { up } = await upstreamWithGets(t);
    let releaseSlow;
    const slowGate = new Promise((resolve) => { releaseSlow = resolve; });
    up.tool('slow', async (req, res, msg) => { await slowGate; await res.json(200, up.textResult(msg, 'slow done')); });
    up.tool('ask', async (req, res, msg) => {
      await res.write(headBytes(200, SSE_HEAD));
      await res.write(sseBytes([{ jsonrpc: '2.0', id: 'q-1', method: 'elicitation/create', params: { mode: 'form', message: 'which?', requestedSchema: { type: 'object', properties: {} } } }]));
      const answer = await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === 'q-1' && !('method' in r.json)), scaled(WAIT_MS), 'the answer');
      await res.write(sseBytes([up.textResult(msg, JSON.stringify(answer.json.result))]));
      await res.end();
    });
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const stream = await a.openStream();
    assert.equal(stream.status, 200);
    const askP = a.post(legacyToolCall('ask-1', 'ask', {}));
    askP.catch(() => {});
    await up.waitCall('ask', scaled(WAIT_MS));
    const slowP = a.post(legacyToolCall('slow-1', 'slow', {}));
    slowP.catch(() => {});
    await up.waitCall('slow', scaled(WAIT_MS));
    const ask = await askP;
    const q = await ask.nextEvent((m) => m && m.method === 'elicitation/create', WAIT_MS, 'the question on the ask call\'s stream');
    assert.match(String(q.id), /^sluice-u-/);
    assert.equal((await a.answer(q.id, { action: 'accept', content: { pick: 'x' } })).status, 202);
    const done = await ask.nextEvent((m) => m && m.id === 'ask-1', WAIT_MS, 'the ask call\'s result');
    assert.deepEqual(JSON.parse(done.result.content[0].text), { action: 'accept', content: { pick: 'x' } });
    releaseSlow();
    const slow = await (await slowP).complete();
    const slowResult = slow.sse ? slow.events.map((e) => e.json).find((m) => m && m.id === 'slow-1') : slow.json();
    assert.equal(slowResult && slowResult.result.content[0].text, 'slow done', slow.text);
    const elsewhere = [...stream.events, ...slow.events].map((e) => e.json).filter((m) => m && m.method === 'elicitation/create');
    assert.deepEqual(elsewhere, [], 'the question went to another stream too');
    stream.abort();
  });

  await t.test('a server that answers GET with 405 has none: it is not asked again', async (t) => {
    const up = await legacyUpstream(t); // GET: the default 405
    const s = await startOverHttp(t, up.url());
    await openSession(s.target, 'client-A');
    await up.waitFor(() => gets(up, 'sess-client-A').length >= 1 && gets(up, 'sess-sluice').length >= 1, scaled(WAIT_MS), 'the GETs');
    await sleep(scaled(2500)); // a retry would come after 1 s
    assert.equal(gets(up, 'sess-client-A').length, 1, up.describe());
    assert.equal(gets(up, 'sess-sluice').length, 1, up.describe());
  });

  await t.test('a GET stream that ends is reopened with Last-Event-ID, after the server\'s retry time', async (t) => {
    const up = await legacyUpstream(t);
    let clientReady;
    const ready = new Promise((resolve) => { clientReady = resolve; });
    const ended = [];
    up.onGet = async (req, res) => {
      const sid = req.headers['mcp-session-id'];
      if (sid !== 'sess-client-A') return false; // 405
      const n = gets(up, sid).length;
      await res.write(headBytes(200, SSE_HEAD));
      await ready;
      if (n === 1) { // a priming event with retry, a message, then a clean end
        await res.write(sseBytes([{ id: 'ev-1', retry: 300, data: '' }, { id: 'ev-2', data: JSON.stringify(updated('test://first')) }]));
        ended.push(Date.now());
        await res.end();
      } else if (n === 2) { // a message, then the connection is cut
        await res.write(sseBytes([{ id: 'ev-3', data: JSON.stringify(updated('test://second')) }]));
        await sleep(50);
        ended.push(Date.now());
        res.destroy();
      }
      return true; // the third stays open
    };
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const stream = await a.openStream();
    clientReady();
    const third = await up.waitFor(() => gets(up, 'sess-client-A')[2], scaled(WAIT_MS), 'the third GET');
    const [first, second] = gets(up, 'sess-client-A');
    assert.equal(first.headers['last-event-id'], undefined);
    assert.equal(second.headers['last-event-id'], 'ev-2', second.headText);
    assert.equal(third.headers['last-event-id'], 'ev-3', third.headText);
    assert.equal(second.headers['mcp-session-id'], 'sess-client-A');
    assert.ok(second.at - ended[0] >= 250, `the server's retry (300 ms) is honoured: ${second.at - ended[0]} ms`);
    const uris = [];
    while (uris.length < 2) uris.push((await stream.nextEvent((m) => m && m.method === 'notifications/resources/updated', WAIT_MS, 'the notifications')).params.uri);
    assert.deepEqual(uris, ['test://first', 'test://second']);
    stream.abort();
  });

  await t.test('a 2026-07-28 server is never sent a GET', async (t) => {
    const up = new RawUpstream({ era: 'modern' });
    await up.listen(0);
    t.after(() => up.close());
    const s = await startOverHttp(t, up.url());
    await sleep(scaled(500));
    assert.ok(up.posts('server/discover').length >= 1);
    assert.deepEqual(gets(up).map((r) => r.headText), []);
    void s;
  });
});

test('a call\'s event stream resumed by GET with Last-Event-ID (SEP-1699)', suiteOptions(), async (t) => {
  await t.test('a stream closed after its priming event: the answer comes on the resumed stream, the call is POSTed once', async (t) => {
    const up = await legacyUpstream(t);
    up.tool('slow', async (req, res) => {
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(sseBytes([{ id: 'p-1', retry: 50, data: '' }]));
      await res.end();
    });
    const resumes = [];
    up.onGet = async (req, res) => {
      const last = req.headers['last-event-id'];
      if (!last) return false; // no session stream: 405
      resumes.push(req);
      const call = up.calls('slow')[0].json;
      await res.write(headBytes(200, SSE_HEAD));
      if (last === 'p-1') { // progress, a new id, then the connection is cut again
        await res.write(sseBytes([{ id: 'p-2', data: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'half way' } }) }]));
        await sleep(20);
        res.destroy();
      } else { // the answer; the stream stays open (as the TypeScript SDK's replay does)
        await res.write(sseBytes([{ id: 'p-3', data: JSON.stringify(up.textResult(call, 'resumed answer')) }]));
      }
      return true;
    };
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const streamA = await a.openStream(); // the session's stream: not where the call's log goes
    t.after(() => streamA.abort());
    const r = await a.rpc(legacyToolCall('c1', 'slow', {}), { timeoutMs: scaled(WAIT_MS) });
    assert.equal(textOf(r), 'resumed answer');
    const logs = r.events.filter((m) => m && m.method === 'notifications/message').map((m) => m.params.data);
    assert.deepEqual(logs, ['half way'], `the resumed stream's log reaches the call's stream: ${JSON.stringify(r.events)}`);
    assert.deepEqual(resumes.map((q) => q.headers['last-event-id']), ['p-1', 'p-2'], up.describe());
    for (const q of resumes) {
      assert.equal(q.headers['mcp-session-id'], 'sess-client-A', q.headText);
      assert.equal(q.headers.accept, 'text/event-stream', q.headText);
      assert.equal(q.headers['mcp-protocol-version'], LEGACY, q.headText);
    }
    assert.equal(up.calls('slow').length, 1, 'a request is never POSTed again');
    await up.waitFor(() => resumes[1].conn.closed, scaled(WAIT_MS), 'sluice to close the resumed stream once it brought the answer');
  });

  await t.test('a resumed stream passes on only its own request\'s answer, the GET stream no answer at all', async (t) => {
    const up = await legacyUpstream(t);
    let release;
    const released = new Promise((resolve) => { release = resolve; });
    up.tool('held', async (req, res, msg) => {
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await released;
      await res.write(sseBytes([up.textResult(msg, 'held answer')]));
      await res.end();
    });
    up.tool('slow', async (req, res) => {
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(sseBytes([{ id: 's-1', retry: 20, data: '' }]));
      await res.end();
    });
    let listen;
    up.onGet = async (req, res) => {
      await res.write(headBytes(200, SSE_HEAD));
      if (!req.headers['last-event-id']) {
        if (req.headers['mcp-session-id'] === 'sess-client-A') listen = res;
        return true;
      }
      // The resumed stream of slow: first an answer to held's id, then slow's own.
      const heldMsg = up.calls('held')[0].json;
      const slowMsg = up.calls('slow')[0].json;
      await res.write(sseBytes([{ id: 's-2', data: JSON.stringify(up.textResult(heldMsg, 'FORGED on the resumed stream')) },
        { id: 's-3', data: JSON.stringify(up.textResult(slowMsg, 'slow answer')) }]));
      return true;
    };
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    await up.waitFor(() => listen, scaled(WAIT_MS), 'A\'s GET stream');
    const heldCall = a.rpc(legacyToolCall('c-held', 'held', {}), { timeoutMs: scaled(4 * WAIT_MS) }); // its head comes with its answer
    const heldMsg = (await up.waitCall('held', scaled(WAIT_MS))).json;
    const from = s.stderr.length;
    await listen.write(sseBytes([up.textResult(heldMsg, 'FORGED on the GET stream')]));
    await waitLog(s, /a response on the session's GET stream; dropped/, WAIT_MS, from);
    const slow = await a.rpc(legacyToolCall('c-slow', 'slow', {}), { timeoutMs: scaled(WAIT_MS) });
    assert.equal(textOf(slow), 'slow answer');
    assert.match(s.stderr.slice(from), /a response on a resumed stream, not for its request; dropped/);
    release();
    assert.equal(textOf(await heldCall), 'held answer', 'held gets its own answer, not a forged one');
  });

  await t.test('a server that never moves on is asked 5 times, then the call fails', async (t) => {
    const up = await legacyUpstream(t);
    up.tool('stuck', async (req, res) => {
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(sseBytes([{ id: 'same', retry: 20, data: '' }]));
      await res.end();
    });
    up.onGet = async (req, res) => { // replays the same event, never the answer
      if (!req.headers['last-event-id']) return false;
      await res.write(headBytes(200, [...SSE_HEAD, ['Connection', 'close']]));
      await res.write(sseBytes([{ id: 'same', data: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'again' } }) }]));
      await res.end();
      return true;
    };
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const r = await a.rpc(legacyToolCall('c1', 'stuck', {}), { timeoutMs: scaled(WAIT_MS) });
    assert.ok(r.msg && r.msg.error, r.raw);
    assert.match(r.msg.error.message, /ended its event stream without an answer/);
    const resumes = gets(up, 'sess-client-A').filter((q) => q.headers['last-event-id'] === 'same');
    assert.equal(resumes.length, 5, up.describe());
    assert.equal(up.calls('stuck').length, 1);
  });

  // An id that cannot go into a header is not kept (nor an older one in its place), so such a
  // stream is not resumed either.
  for (const [what, id] of [['no event id', undefined], ['an id with a space', 'p 1'], ['an id with a control byte', 'p\x01']]) {
    await t.test(`a stream with ${what} is not resumed: the call fails as before`, async (t) => {
      const up = await legacyUpstream(t);
      up.tool('cut', async (req, res) => {
        await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
        await res.write(sseBytes([{ id: 'good-1', data: '' }, { ...(id === undefined ? { id: '' } : { id }), retry: 20, data: '' }]));
        await res.end();
      });
      const s = await startOverHttp(t, up.url());
      const a = await openSession(s.target, 'client-A');
      const r = await a.rpc(legacyToolCall('c1', 'cut', {}), { timeoutMs: scaled(WAIT_MS) });
      assert.ok(r.msg && r.msg.error, r.raw);
      assert.match(r.msg.error.message, /ended its event stream without an answer/);
      assert.deepEqual(gets(up).filter((q) => q.headers['last-event-id'] !== undefined).map((q) => q.headText), []);
      assert.equal(up.calls('cut').length, 1);
    });
  }
  // A carriage return ends a line in an event stream, so "id: p\rX-Injected: 1" is the id "p"
  // and a line of an unknown field: the stream is resumed from "p", and nothing after the CR
  // reaches a header.
  await t.test('an id followed by a carriage return is the id up to it; nothing after it reaches the GET', async (t) => {
    const up = await legacyUpstream(t);
    up.tool('cut', async (req, res) => {
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(sseBytes([{ id: 'p\rX-Injected: 1', retry: 20, data: '' }]));
      await res.end();
    });
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const r = await a.rpc(legacyToolCall('c1', 'cut', {}), { timeoutMs: scaled(WAIT_MS) });
    assert.ok(r.msg && r.msg.error, r.raw);
    const resumes = gets(up).filter((q) => q.headers['last-event-id'] !== undefined);
    assert.ok(resumes.length >= 1, up.describe());
    for (const q of resumes) {
      assert.equal(q.headers['last-event-id'], 'p', q.headText);
      assert.equal(q.headers['x-injected'], undefined, q.headText);
    }
    assert.equal(up.calls('cut').length, 1);
  });
});

test('a notification on a call\'s own event stream (PROTOCOL.md §7.4)', suiteOptions(), async (t) => {
  await t.test('reaches that call\'s client on that call\'s stream, never the other sessions\' GET streams', async (t) => {
    const { up, open } = await upstreamWithGets(t);
    // The tool logs for the upstream session it runs in, then answers, on the POST's stream.
    up.tool('logs', async (req, res) => {
      const sid = req.headers['mcp-session-id'];
      await res.write(headBytes(200, [...SSE_HEAD, ['Connection', 'close']]));
      await res.write(sseBytes([{ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `for ${sid}` } },
        up.textResult(req.json, `ran in ${sid}`)]));
      await res.end();
    });
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const b = await openSession(s.target, 'client-B');
    await up.waitFor(() => ['sess-sluice', 'sess-client-A', 'sess-client-B'].every((sid) => open.has(sid)), scaled(WAIT_MS), 'a GET stream per upstream session');
    const streamA = await a.openStream();
    const streamB = await b.openStream();
    const logs = (r) => r.events.filter((m) => m && m.method === 'notifications/message').map((m) => m.params.data);

    const ra = await a.rpc(legacyToolCall('a1', 'logs', {}), { timeoutMs: scaled(WAIT_MS) });
    assert.equal(textOf(ra), 'ran in sess-client-A');
    assert.deepEqual(logs(ra), ['for sess-client-A'], `A's log on A's call stream: ${JSON.stringify(ra.events)}`);
    assert.equal(ra.events.findIndex((m) => m && m.method), 0, 'the log comes before the answer');

    // A 2026-07-28 client's call runs in the shared session: the log is its own, and only when
    // its request asked for logs (MUST NOT otherwise).
    const asked = await rpc(s.target, toolCall('m1', 'logs', {}, { caps: {}, meta: { 'io.modelcontextprotocol/logLevel': 'info' } }));
    assert.equal(textOf(asked), 'ran in sess-sluice');
    assert.deepEqual(logs(asked), ['for sess-sluice'], JSON.stringify(asked.events));
    const above = await rpc(s.target, toolCall('m2', 'logs', {}, { caps: {}, meta: { 'io.modelcontextprotocol/logLevel': 'error' } }));
    assert.equal(textOf(above), 'ran in sess-sluice');
    assert.deepEqual(logs(above), [], `an info log to a request that asked for error and above: ${JSON.stringify(above.events)}`);
    const unasked = await rpc(s.target, toolCall('m3', 'logs', {}, { caps: {} }));
    assert.equal(textOf(unasked), 'ran in sess-sluice');
    assert.deepEqual(logs(unasked), [], `a log to a request that asked for none: ${JSON.stringify(unasked.events)}`);

    await assertNoLogsOnGets(open, { A: streamA, B: streamB }, 'another call\'s log');
  });

  // After its answer a request is no client's: a server that goes on writing on that stream
  // speaks about a call that is over. Its lines are dropped, never handed to the session's GET
  // streams, where every legacy client of the shared session would read them.
  await t.test('a notification after its call\'s answer, on that call\'s stream, reaches nobody', async (t) => {
    const { up, open } = await upstreamWithGets(t);
    up.tool('late', async (req, res) => {
      await res.write(headBytes(200, [...SSE_HEAD, ['Connection', 'close']]));
      await res.write(sseBytes([up.textResult(req.json, 'answered'),
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'after the answer' } }]));
      await res.end();
    });
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const b = await openSession(s.target, 'client-B');
    await up.waitFor(() => ['sess-sluice', 'sess-client-A', 'sess-client-B'].every((sid) => open.has(sid)), scaled(WAIT_MS), 'a GET stream per upstream session');
    const streamA = await a.openStream();
    const streamB = await b.openStream();
    // A 2026-07-28 client's call runs in the shared session, whose GET stream every legacy
    // session of it reads; a legacy client's runs in its own.
    const m = await rpc(s.target, toolCall('m1', 'late', {}, { caps: {}, meta: { 'io.modelcontextprotocol/logLevel': 'debug' } }));
    assert.equal(textOf(m), 'answered');
    const ra = await a.rpc(legacyToolCall('a1', 'late', {}), { timeoutMs: scaled(WAIT_MS) });
    assert.equal(textOf(ra), 'answered');
    await up.waitFor(() => up.calls('late').length === 2, scaled(WAIT_MS), 'both calls');
    await sleep(scaled(200));
    await assertNoLogsOnGets(open, { A: streamA, B: streamB }, 'a line about a call that was over');
  });

  await t.test('a legacy client\'s call to a modern server, its second round: progress under the client\'s token, never another call\'s', async (t) => {
    const up = new RawUpstream({ era: 'modern' });
    await up.listen(0);
    t.after(() => up.close());
    let release;
    let bCall;
    const held = new Promise((r) => { release = r; });
    up.tool('hold', async (req, res, msg) => { // B's call: open until the end
      await res.write(headBytes(200, [...SSE_HEAD, ['Connection', 'close']]));
      await held;
      await res.write(sseBytes([up.textResult(msg, 'held done')]));
      await res.end();
    });
    up.tool('mq', async (req, res, msg) => { // asks once, then answers; progress in each round
      const round = msg.params.inputResponses ? 2 : 1;
      await res.write(headBytes(200, [...SSE_HEAD, ['Connection', 'close']]));
      const fin = round === 1
        ? up.result(msg, { resultType: 'input_required', inputRequests: { q1: { method: 'elicitation/create', params: { mode: 'form', message: 'which?', requestedSchema: { type: 'object', properties: {} } } } }, requestState: 'st' })
        : up.textResult(msg, 'done');
      // And one naming B's call, on A's stream: a server may not speak for another request.
      const forged = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: bCall.json.params._meta.progressToken, progress: 9, message: 'forged for B' } };
      await res.write(sseBytes([{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: msg.params._meta.progressToken, progress: round, message: `A's round ${round}` } }, forged, fin]));
      await res.end();
    });
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const b = await openSession(s.target, 'client-B');
    const bDone = b.rpc(legacyToolCall('b1', 'hold', {}, { _meta: { progressToken: 'tok-b' } }), { timeoutMs: scaled(3 * WAIT_MS) });
    bCall = await up.waitCall('hold', scaled(WAIT_MS));
    const bId = bCall.json.params._meta.progressToken; // sluice's id for B's call upstream
    // A picks B's upstream id as its own token: sent upstream unmapped, it would name B's call.
    const reply = await a.post(legacyToolCall('c1', 'mq', {}, { _meta: { progressToken: bId } }));
    const q = await reply.nextEvent((m) => m && m.method === 'elicitation/create', WAIT_MS, 'the question');
    await a.answer(q.id, { action: 'accept', content: {} });
    await reply.complete(scaled(WAIT_MS));
    const aEvents = reply.events.map((e) => e.json).filter((m) => m && m.method === 'notifications/progress');
    assert.deepEqual(aEvents.map((m) => [m.params.progressToken, m.params.message]), [[bId, 'A\'s round 1'], [bId, 'A\'s round 2']], JSON.stringify(aEvents));
    const tokens = up.calls('mq').map((r) => r.json.params._meta.progressToken);
    assert.equal(tokens.length, 2);
    assert.ok(tokens.every((tok) => typeof tok === 'number' && tok !== bId), `each round carries sluice's own token: ${JSON.stringify(tokens)}`);
    release();
    const bR = await bDone;
    assert.equal(textOf(bR), 'held done');
    assert.deepEqual(bR.events.filter((m) => m && m.method === 'notifications/progress'), [], 'B got none of A\'s progress');
  });

  // A 2026-07-28 client's call that the server asks about is parked between rounds; the request
  // waiting when the server goes on is a later round, with its own _meta. Only what that
  // request asked for reaches it, and only what 2026-07-28 has (progress, message).
  for (const [name, m1, m2, want] of [
    ['round one asked for logs and progress, round two for none', { 'io.modelcontextprotocol/logLevel': 'debug', progressToken: 'tok-1' }, {}, []],
    ['round one asked for progress only, round two for logs and progress', { progressToken: 'tok-1' }, { 'io.modelcontextprotocol/logLevel': 'info', progressToken: 'tok-2' },
      [['notifications/message', 'after the answer'], ['notifications/progress', 'tok-2']]],
  ]) {
    await t.test(`a parked call: ${name}`, async (t) => {
      const up = await legacyUpstream(t);
      up.tool('ask', async (req, res) => {
        const msg = req.json;
        const rid = `q-${msg.id}`;
        await res.write(headBytes(200, [...SSE_HEAD, ['Connection', 'close']]));
        await res.write(sseBytes([{ jsonrpc: '2.0', id: rid, method: 'elicitation/create', params: { mode: 'form', message: 'which?', requestedSchema: { type: 'object', properties: {} } } }]));
        await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === rid && !('method' in r.json)), scaled(WAIT_MS), 'the answer');
        const tok = msg.params._meta && msg.params._meta.progressToken;
        await res.write(sseBytes([
          { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'after the answer' } },
          { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: tok, progress: 1 } },
          { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: 'e1' } },
          { jsonrpc: '2.0', method: 'notifications/tasks/status', params: { taskId: 't1', status: 'working' } },
          up.textResult(msg, 'done')]));
        await res.end();
      });
      const s = await startOverHttp(t, up.url());
      const r1 = await rpc(s.target, toolCall('u1', 'ask', {}, { meta: m1 }));
      assert.equal(r1.msg && r1.msg.result && r1.msg.result.resultType, 'input_required', r1.raw);
      const [key] = Object.keys(r1.msg.result.inputRequests);
      const r2 = await rpc(s.target, toolCall('u2', 'ask', {}, { meta: m2, params: { inputResponses: { [key]: { action: 'accept', content: {} } }, requestState: r1.msg.result.requestState } }));
      assert.equal(textOf(r2), 'done');
      const got = r2.events.filter((m) => m && m.method && !(m.params && m.params.logger === 'sluice'))
        .map((m) => [m.method, m.method === 'notifications/progress' ? m.params.progressToken : m.params.data]);
      assert.deepEqual(got, want, JSON.stringify(r2.events));
    });
  }

  // A 2026-07-28 client's listen, forwarded to a 2026-07-28 server: its stream is the
  // subscription. The acknowledgement and the changes on it are that listener's, under the id
  // the client sent (the server tagged them with sluice's), and no legacy session's.
  await t.test('a listen forwarded to a 2026-07-28 server: its stream reaches the listener only, under its id', async (t) => {
    const up = new RawUpstream({ era: 'modern' });
    let listen;
    up.hook = async (req, res) => {
      const msg = req.json;
      if (req.method === 'POST' && msg && msg.method === 'subscriptions/listen') {
        await res.write(headBytes(200, SSE_HEAD));
        await res.write(sseBytes([{ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: { toolsListChanged: true } } }]));
        listen = { res, id: msg.id };
        return true;
      }
      return false;
    };
    await up.listen(0);
    t.after(() => up.close());
    const s = await startOverHttp(t, up.url());
    const b = new LegacyHttpSession(s.target); // a legacy session with its GET stream open
    await b.initialize({ protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'client-B', version: '1' } });
    const streamB = await b.openStream();
    const reply = await postMcp(s.target, modernRequest('L1', 'subscriptions/listen', { notifications: { toolsListChanged: true } }, { caps: {} }));
    t.after(() => reply.abort());
    const ack = await reply.nextEvent((m) => m && m.method === 'notifications/subscriptions/acknowledged', WAIT_MS, 'the acknowledgement');
    assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], 'L1', JSON.stringify(ack));
    await up.waitFor(() => listen, scaled(WAIT_MS), 'the listen upstream');
    await listen.res.write(sseBytes([{ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': listen.id } } }]));
    const changed = await reply.nextEvent((m) => m && m.method === 'notifications/tools/list_changed', WAIT_MS, 'the change');
    assert.equal(changed.params._meta['io.modelcontextprotocol/subscriptionId'], 'L1', JSON.stringify(changed));
    await sleep(scaled(200));
    assert.deepEqual(streamB.events.map((e) => e.json).filter((m) => m && m.method), [], 'the legacy session got none of it');
    streamB.abort();
  });
});

test('the DELETE of an upstream session', suiteOptions(), async (t) => {
  await t.test('a client\'s session that ends deletes its upstream session, with its id, and closes its GET stream', async (t) => {
    const up = await legacyUpstream(t);
    up.onGet = async (req, res) => {
      await res.write(headBytes(200, SSE_HEAD));
      return true;
    };
    up.onDelete = async (req, res) => {
      await res.empty(200);
      return true;
    };
    const s = await startOverHttp(t, up.url());
    const a = await openSession(s.target, 'client-A');
    const b = await openSession(s.target, 'client-B');
    const getA = await up.waitFor(() => gets(up, 'sess-client-A')[0], scaled(WAIT_MS), 'A\'s GET');
    assert.equal(up.requests.filter((r) => r.method === 'DELETE').length, 0, 'nothing deleted before a session ends');
    assert.equal((await a.remove()).status, 200);
    const del = await up.waitFor(() => up.requests.find((r) => r.method === 'DELETE'), scaled(WAIT_MS), 'the DELETE');
    assert.equal(del.headers['mcp-session-id'], 'sess-client-A', del.headText);
    assert.equal(del.headers['mcp-protocol-version'], LEGACY, del.headText);
    assert.equal(del.target, '/mcp');
    await up.waitFor(() => getA.conn.closed, scaled(WAIT_MS), 'A\'s GET stream to close');
    await sleep(scaled(300));
    assert.equal(up.requests.filter((r) => r.method === 'DELETE').length, 1, up.describe());
    const echo = await b.rpc(legacyToolCall('e', 'echo', { who: 'B' }));
    assert.ok(echo.msg && echo.msg.result, `B's session still works: ${echo.raw}`);
  });

  await t.test('a DELETE the server never answers holds sluice\'s stop 2 s at most', async (t) => {
    const up = await legacyUpstream(t);
    up.onDelete = async () => true; // never answered
    const s = await startOverHttp(t, up.url());
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    const del = await up.waitFor(() => up.requests.find((r) => r.method === 'DELETE'), scaled(WAIT_MS), 'the shared session\'s DELETE');
    assert.equal(del.headers['mcp-session-id'], 'sess-sluice');
    const exit = await Promise.race([s.exitPromise, sleep(scaled(6000)).then(() => null)]);
    assert.ok(exit, `sluice exits although its DELETE is not answered (waited ${Date.now() - t0} ms)`);
    assert.ok(Date.now() - t0 >= 1900, `it waited for the answer: ${Date.now() - t0} ms`);
    assert.equal(exit.code, 0, s.stderr.slice(-2000));
  });
});
