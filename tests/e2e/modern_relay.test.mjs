// modern_relay.test.mjs: a 2026-07-28 client in front of a handshake-era server that asks its
// client something during a call (issue 20). The server's request reaches the client as an
// input_required round (inputRequests "sluice-u-N", a requestState sealed by sluice); the retry
// with the answer hands it to the server's waiting request, and the server's result answers the
// retry. Over stdio (the one child), over HTTP with --child-per-session (a child of the call's
// own) and with an HTTP upstream (a session of the call's own). Every refusal is checked against
// what the upstream received: it never gets an answer the client did not give for that call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import {
  ACCEPT, assertReplayed, FORM_CAPS, assertAsked, confirmRetry, modernRequest, resultText, scaled, sleep,
  startSluice, suiteOptions, tmpDir, toolCall, waitPidGone, writePolicy,
} from './lib.mjs';
import { get, mcpHeadersFor, modernCall, rawRequest, rpc, startHttpSluice, startSluiceOverHttp, waitLog } from './http_lib.mjs';
import { RawUpstream, headBytes, sseBytes } from './raw_http_upstream.mjs';
import { slowRelay, startRedis } from './redis_lib.mjs';

const ALLOW = 'version: 1\ndefaults:\n  action: allow\n';
const GATED = 'version: 1\ndefaults:\n  action: allow\ntools:\n  legacy_ask:\n    action: confirm\n';
const SHORT = 'version: 1\ndefaults:\n  action: allow\n  confirm_ttl: 2\n';
const UP_ANSWER = { action: 'accept', content: { answer: 'blue' } };

/** Asserts r is the server's question as a round and returns {key, state, request}. */
function assertUpstreamRound(r, topic) {
  assert.ok(r.result, `expected input_required, got ${r.raw}`);
  assert.equal(r.result.resultType, 'input_required', r.raw);
  const keys = Object.keys(r.result.inputRequests || {});
  assert.equal(keys.length, 1, r.raw);
  assert.match(keys[0], /^sluice-u-\d+$/, r.raw);
  const request = r.result.inputRequests[keys[0]];
  assert.equal(request.method, 'elicitation/create', r.raw);
  if (topic !== undefined) assert.equal(request.params.message, `The upstream itself asks (topic ${JSON.stringify(topic)})`, r.raw);
  assert.equal(typeof r.result.requestState, 'string', r.raw);
  assert.ok(!('id' in request) && !('jsonrpc' in request), r.raw);
  return { key: keys[0], state: r.result.requestState, request };
}

function retry(id, name, args, key, state, answer = UP_ANSWER, caps = FORM_CAPS) {
  return toolCall(id, name, args, { caps, params: { inputResponses: { [key]: answer }, requestState: state } });
}

/** What the upstream's legacy_ask returned: {requestId, answer}. */
function asked(r) {
  assert.ok(r.result, r.raw);
  assert.equal(r.result.resultType, 'complete', r.raw);
  return JSON.parse(resultText(r));
}

/** Responses the upstream received (answers to its own requests). */
/** POSTs msg on a connection of its own, closed once it is sent: a client that leaves. */
function postAndLeave(s, msg) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port: s.port }, () => sock.end(rawRequest('POST', '/mcp', mcpHeadersFor(msg), JSON.stringify(msg))));
    sock.on('error', reject);
    sock.on('close', resolve);
    sock.resume();
  });
}

function upstreamAnswers(messages) {
  return messages.filter((m) => m.method === undefined && m.id !== undefined && ('result' in m || 'error' in m));
}

function assertRefusedState(r, re) {
  assert.ok(r.error, `expected a JSON-RPC error, got ${r.raw}`);
  assert.equal(r.error.code, -32602, r.raw);
  assert.equal(r.error.data && r.error.data.reason, 'invalid_request_state', r.raw);
  if (re) assert.match(r.error.message, re, r.raw);
}

function tamper(state) {
  const i = Math.floor(state.length / 2);
  return state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1);
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

// ===== stdio =====

test('stdio: a legacy server asks a modern client during a call', suiteOptions(), async (t) => {
  await t.test('the question arrives as input_required, the retry gets the result with the answer', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
    const r1 = await s.request(toolCall('c1', 'legacy_ask', { topic: 'colour' }));
    const q = assertUpstreamRound(r1, 'colour');
    const init = s.upstreamMessages().find((m) => m.method === 'initialize');
    assert.deepEqual(init.params.capabilities, FORM_CAPS, 'the child is initialized with the envelope capabilities');
    assert.equal(init.params.clientInfo.name, 'sluice-e2e', 'and the envelope clientInfo');
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 0, 'nothing answered yet');
    const r2 = await s.request(retry('c2', 'legacy_ask', { topic: 'colour' }, q.key, q.state));
    const got = asked(r2);
    assert.deepEqual(got.answer.result, UP_ANSWER, r2.raw);
    assert.equal(got.answer.id, got.requestId, 'under the upstream\'s own id');
    assert.equal(s.upstreamCalls('legacy_ask').length, 1, 'the call ran once');
    // A replay after completion: refused, and the upstream gets nothing more.
    const r3 = await s.request(retry('c3', 'legacy_ask', { topic: 'colour' }, q.key, q.state));
    assertRefusedState(r3, /No call waits/);
    await s.sync();
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1);
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  });

  await t.test('between rounds the answered round\'s id is free: a request may use it; the retry still runs', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
    const q = assertUpstreamRound(await s.request(toolCall('r1', 'legacy_ask', { topic: 'tea' })), 'tea');
    // r1 was answered (input_required): its call is parked, but no request of the client's
    // with that id is in flight any more (2026-07-28 forbids only outstanding ids).
    const ping = await s.request({ jsonrpc: '2.0', id: 'r1', method: 'ping' });
    assert.deepEqual(ping.result, {}, ping.raw);
    // A late cancel of the answered round names no request in flight: the call stays parked.
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'r1' } });
    const got = asked(await s.request(retry('r2', 'legacy_ask', { topic: 'tea' }, q.key, q.state)));
    assert.deepEqual(got.answer.result, UP_ANSWER);
  });

  await t.test('progress while the next round is open goes nowhere: the request it was for is answered', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    const args = { gapMs: 100 };
    const call = (id, params) => toolCall(id, 'legacy_ask_twice', args, { meta: { progressToken: `tok-${id}` }, params });
    const r1 = await s.request(call('c1'));
    const [k1] = Object.keys(r1.result.inputRequests);
    const r2 = await s.request(call('c2', { inputResponses: { [k1]: UP_ANSWER }, requestState: r1.result.requestState }));
    assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
    await sleep(scaled(600)); // the server reports progress 100, 200 and 300 ms into round two
    const progress = s.lines.filter((l) => l.msg && l.msg.method === 'notifications/progress');
    assert.deepEqual(progress.map((l) => l.raw), [], 'progress for a request already answered');
    const [k2] = Object.keys(r2.result.inputRequests);
    const done = await s.request(call('c3', { inputResponses: { [k2]: UP_ANSWER }, requestState: r2.result.requestState }));
    assert.equal(done.result && done.result.resultType, 'complete', done.raw);
    assert.equal(JSON.parse(resultText(done)).twice.length, 2, done.raw);
  });

  await t.test('a tampered state, another tool, other arguments: refused; the upstream gets no forged answer', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '20000' } });
    const q = assertUpstreamRound(await s.request(toolCall('c1', 'legacy_ask', { topic: 'x' })), 'x');
    assertRefusedState(await s.request(retry('t1', 'legacy_ask', { topic: 'x' }, q.key, tamper(q.state))));
    assertRefusedState(await s.request(retry('t2', 'echo', { topic: 'x' }, q.key, q.state)));
    assertRefusedState(await s.request(retry('t3', 'legacy_ask', { topic: 'y' }, q.key, q.state)));
    await s.sync();
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 0, 'no answer reached the upstream');
    assert.equal(s.upstreamCalls('echo').length, 0, 'the other tool did not run');
    assert.equal(s.upstreamCalls('legacy_ask').length, 1, 'no second call');
    // The genuine round still works.
    const got = asked(await s.request(retry('ok', 'legacy_ask', { topic: 'x' }, q.key, q.state)));
    assert.deepEqual(got.answer.result, UP_ANSWER);
  });

  await t.test('one state sent twice at once: one round takes the call, the other is refused', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
    const q = assertUpstreamRound(await s.request(toolCall('c1', 'legacy_ask', { topic: 'twice' })), 'twice');
    s.send(retry('a', 'legacy_ask', { topic: 'twice' }, q.key, q.state));
    s.send(retry('b', 'legacy_ask', { topic: 'twice' }, q.key, q.state, { action: 'accept', content: { answer: 'second' } }));
    const ra = await s.responseTo('a');
    const rb = await s.responseTo('b');
    assert.deepEqual(asked(ra).answer.result, UP_ANSWER, ra.raw);
    assertRefusedState(rb, /No call waits/);
    await s.sync();
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1, 'one answer reached the upstream');
  });

  await t.test('a round cancelled while its call runs frees its id: a later request may use it', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), GATED), era: 'legacy' });
    const args = { topic: 'quit', replyAfterMs: scaled(1500) };
    const mine = assertAsked(await s.request(toolCall('k0', 'legacy_ask', args)));
    const q = assertUpstreamRound(await s.request(confirmRetry('k1', 'legacy_ask', args, mine.state, ACCEPT)), 'quit');
    s.send(retry('k2', 'legacy_ask', args, q.key, q.state));
    const end = Date.now() + scaled(5000);
    while (upstreamAnswers(s.upstreamMessages()).length === 0) { // the round took the call
      assert.ok(Date.now() < end, 'the answer never reached the upstream');
      await sleep(20);
    }
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'k2', reason: 'enough' } });
    // The round spent its state: nothing answers the cancelled request, so nothing may keep its
    // id in flight either.
    const ping = await s.request({ jsonrpc: '2.0', id: 'k2', method: 'ping' });
    assert.deepEqual(ping.result, {}, `the id is free again: ${ping.raw}`);
    await s.noResponseTo('k2', scaled(2000)); // and the cancelled round gets no response
  });

  await t.test('a state sent again while its call still runs is refused; the first round keeps the reply', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
    const args = { topic: 'again', replyAfterMs: scaled(1500) };
    const q = assertUpstreamRound(await s.request(toolCall('c1', 'legacy_ask', args)), 'again');
    s.send(retry('a', 'legacy_ask', args, q.key, q.state));
    const end = Date.now() + scaled(5000);
    while (upstreamAnswers(s.upstreamMessages()).length === 0) { // the first round took the call
      assert.ok(Date.now() < end, 'the answer never reached the upstream');
      await sleep(20);
    }
    const rb = await s.request(retry('b', 'legacy_ask', args, q.key, q.state, { action: 'accept', content: { answer: 'second' } }));
    assertRefusedState(rb, /No call waits/);
    const ra = await s.responseTo('a', scaled(10000));
    assert.deepEqual(asked(ra).answer.result, UP_ANSWER, ra.raw);
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1, 'one answer reached the upstream');
  });

  await t.test('an answer under another key is not handed over: the question is asked again', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '20000' } });
    const q = assertUpstreamRound(await s.request(toolCall('c1', 'legacy_ask', { topic: 'key' })), 'key');
    const r2 = await s.request(toolCall('c2', 'legacy_ask', { topic: 'key' }, { params: { inputResponses: { other: UP_ANSWER }, requestState: q.state } }));
    const again = assertUpstreamRound(r2, 'key');
    assert.equal(again.key, q.key, 'the same question, under the same key');
    assert.notEqual(again.state, q.state, 'under a new state');
    await s.sync();
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 0, 'nothing handed over');
    assertRefusedState(await s.request(retry('c3', 'legacy_ask', { topic: 'key' }, q.key, q.state)), /No call waits/);
    const got = asked(await s.request(retry('c4', 'legacy_ask', { topic: 'key' }, again.key, again.state)));
    assert.deepEqual(got.answer.result, UP_ANSWER);
  });

  // A round without an answer is asked again, but it does not buy the call more time or rounds:
  // else a client that never answers would keep the call, its server and its principal's share
  // of the table for ever.
  await t.test('rounds without an answer do not extend the call: it ends ttl after its question', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), SHORT), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    let q = assertUpstreamRound(await s.request(toolCall('c1', 'legacy_ask', { topic: 'stall' })), 'stall');
    const start = Date.now();
    const cancelled = () => s.upstreamMessages().some((m) => m.method === 'notifications/cancelled');
    let rounds = 0;
    let last;
    for (let i = 0; i < 40 && !cancelled() && Date.now() - start < scaled(8000); i++) {
      last = await s.request(toolCall(`r${i}`, 'legacy_ask', { topic: 'stall' }, { params: { inputResponses: { other: UP_ANSWER }, requestState: q.state } }));
      if (!last.result) break;
      q = assertUpstreamRound(last, 'stall');
      rounds++;
      await sleep(300);
    }
    assert.ok(rounds >= 1, `rounds were asked again meanwhile (${rounds})`);
    await waitFor(cancelled, 3000, 'the call cancelled upstream');
    assert.ok(Date.now() - start < scaled(4500), `the call ended about 2 s after its question, not ${Date.now() - start} ms`);
    const r = await s.request(retry('late', 'legacy_ask', { topic: 'stall' }, q.key, q.state));
    assert.ok(r.error, `the last state opens nothing: ${r.raw}`);
    await s.sync();
    const answers = upstreamAnswers(s.upstreamMessages());
    assert.equal(answers.length, 1, JSON.stringify(answers));
    assert.ok(answers[0].error, `the server's question got an error, no answer: ${JSON.stringify(answers[0])}`);
  });

  await t.test('a question asked after the last was answered gets its ttl: answered after the first ttl, it still runs', async (t) => {
    // A state opens for ttl - 1 to ttl seconds (its expiry is in whole seconds).
    const ttl = Math.ceil(scaled(4000) / 1000);
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), SHORT.replace('confirm_ttl: 2', `confirm_ttl: ${ttl}`)), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    const call = (id, params) => toolCall(id, 'legacy_ask_twice', { gapMs: 10 }, { params });
    const r1 = await s.request(call('c1'));
    const [k1] = Object.keys(r1.result.inputRequests);
    await sleep(ttl * 500); // half the ttl
    const r2 = await s.request(call('c2', { inputResponses: { [k1]: UP_ANSWER }, requestState: r1.result.requestState }));
    assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
    await sleep(ttl * 650); // 1.15 ttl after the first question, 0.65 ttl after its answer
    const [k2] = Object.keys(r2.result.inputRequests);
    const done = await s.request(call('c3', { inputResponses: { [k2]: UP_ANSWER }, requestState: r2.result.requestState }));
    assert.equal(done.result && done.result.resultType, 'complete', done.raw);
    assert.equal(JSON.parse(resultText(done)).twice.length, 2, done.raw);
  });

  // The time is the client's to answer in: a server that works longer than the ttl between
  // its questions does not cost the call.
  await t.test('a second question asked after more than the ttl of work: still a round', async (t) => {
    const ttl = Math.ceil(scaled(2000) / 1000);
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), SHORT.replace('confirm_ttl: 2', `confirm_ttl: ${ttl}`)), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    const call = (id, params) => toolCall(id, 'legacy_ask_twice', { gapMs: 10, secondAfterMs: ttl * 1500 }, { params });
    const r1 = await s.request(call('c1'));
    const [k1] = Object.keys(r1.result.inputRequests);
    const r2 = await s.request(call('c2', { inputResponses: { [k1]: UP_ANSWER }, requestState: r1.result.requestState }), scaled(15000));
    assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
    const [k2] = Object.keys(r2.result.inputRequests);
    const done = await s.request(call('c3', { inputResponses: { [k2]: UP_ANSWER }, requestState: r2.result.requestState }));
    assert.equal(done.result && done.result.resultType, 'complete', done.raw);
  });

  await t.test('a question the server withdraws is not asked again, and an answer to it is not handed over', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    const call = (id, params) => toolCall(id, 'legacy_ask_withdraw', { withdrawAfterMs: 50 }, { params });
    const r1 = await s.request(call('c1'));
    assert.equal(r1.result && r1.result.resultType, 'input_required', r1.raw);
    const [k1] = Object.keys(r1.result.inputRequests);
    assert.equal(r1.result.inputRequests[k1].params.message, 'Question 1', r1.raw);
    await waitLog(s, /withdrew a question of a parked call/, 5000);
    // A round without answers: only the question still open comes back.
    const r2 = await s.request(call('c2', { inputResponses: {}, requestState: r1.result.requestState }));
    assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
    const keys = Object.keys(r2.result.inputRequests);
    assert.equal(keys.length, 1, r2.raw);
    assert.equal(r2.result.inputRequests[keys[0]].params.message, 'Question 2', r2.raw);
    // The client answers the withdrawn question too: only the open one reaches the server.
    const done = await s.request(call('c3', { inputResponses: { [k1]: UP_ANSWER, [keys[0]]: UP_ANSWER }, requestState: r2.result.requestState }));
    assert.equal(done.result && done.result.resultType, 'complete', done.raw);
    const second = JSON.parse(resultText(done)).second;
    assert.deepEqual(second.result, UP_ANSWER, done.raw);
    assert.match(second.id, /^withdraw-\d+-2$/, done.raw);
    await s.sync();
    const answers = upstreamAnswers(s.upstreamMessages());
    assert.deepEqual(answers.map((a) => a.id), [second.id], JSON.stringify(answers));
  });

  await t.test('a parked call gets at most 64 rounds; then it is cancelled', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    let q = assertUpstreamRound(await s.request(toolCall('c1', 'legacy_ask', { topic: 'many' })), 'many');
    let rounds = 1;
    let last;
    for (let i = 0; i < 70; i++) {
      last = await s.request(toolCall(`r${i}`, 'legacy_ask', { topic: 'many' }, { params: { inputResponses: { other: UP_ANSWER }, requestState: q.state } }));
      if (!last.result) break;
      q = assertUpstreamRound(last, 'many');
      rounds++;
    }
    assert.equal(rounds, 64, `rounds before the refusal: ${rounds}`);
    assert.ok(last.error, last.raw);
    assert.match(last.error.message, /more rounds than sluice allows/, last.raw);
    await waitFor(() => s.upstreamMessages().some((m) => m.method === 'notifications/cancelled'), 5000, 'the call cancelled upstream');
    const answers = upstreamAnswers(s.upstreamMessages());
    assert.equal(answers.length, 1, JSON.stringify(answers));
    assert.ok(answers[0].error, JSON.stringify(answers[0]));
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  });

  await t.test('another sluice process with the same key cannot resume the call, and says so', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, ALLOW);
    const key = 'c3'.repeat(32);
    const a = startSluice(t, { policy, dir, era: 'legacy', tag: 'shared', env: { SLUICE_STATE_KEY: key } });
    const b = startSluice(t, { policy, dir, era: 'legacy', tag: 'shared', env: { SLUICE_STATE_KEY: key } });
    const q = assertUpstreamRound(await a.request(toolCall('c1', 'legacy_ask', { topic: 'r' })), 'r');
    assertRefusedState(await b.request(retry('c2', 'legacy_ask', { topic: 'r' }, q.key, q.state)), /only be resumed by the replica that asked/);
    assert.equal(upstreamAnswers(a.upstreamMessages()).length, 0, 'no answer reached the upstream');
    const got = asked(await a.request(retry('c3', 'legacy_ask', { topic: 'r' }, q.key, q.state)));
    assert.deepEqual(got.answer.result, UP_ANSWER);
  });

  // With a shared store every replica opens a gated round's state: the one that does not hold
  // the call must refuse it before spending it, or the replica that does can no longer take it.
  await t.test('a gated round sent to a replica that does not hold the call is refused unspent; the right one still takes it', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const policy = writePolicy(dir, GATED);
    const key = 'c4'.repeat(32);
    const opts = { policy, dir, era: 'legacy', tag: 'shared', env: { SLUICE_STATE_KEY: key }, args: ['--store', `redis://127.0.0.1:${redis.port}`] };
    const a = startSluice(t, opts);
    const b = startSluice(t, opts);
    const args = { topic: 'replica' };
    const mine = assertAsked(await a.request(toolCall('g1', 'legacy_ask', args)));
    const q = assertUpstreamRound(await a.request(confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT)), 'replica');
    assertRefusedState(await b.request(retry('g3', 'legacy_ask', args, q.key, q.state)), /another sluice replica/);
    assert.equal(upstreamAnswers(b.upstreamMessages()).length, 0, 'no answer reached the other upstream');
    const got = asked(await a.request(retry('g4', 'legacy_ask', args, q.key, q.state)));
    assert.deepEqual(got.answer.result, UP_ANSWER);
    assert.equal(a.upstreamCalls('legacy_ask').length, 1);
  });

  await t.test('a parked call nobody resumes expires: the upstream gets an error, the call is cancelled, the state is refused', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), SHORT), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    const q = assertUpstreamRound(await s.request(toolCall('c1', 'legacy_ask', { topic: 'late' })), 'late');
    await waitFor(() => upstreamAnswers(s.upstreamMessages()).length > 0, 8000, 'the upstream\'s request to be answered');
    const [ans] = upstreamAnswers(s.upstreamMessages());
    assert.ok(ans.error, `the upstream gets an error, not an answer: ${JSON.stringify(ans)}`);
    await waitFor(() => s.upstreamMessages().some((m) => m.method === 'notifications/cancelled'), 5000, 'the call cancelled upstream');
    const r = await s.request(retry('c2', 'legacy_ask', { topic: 'late' }, q.key, q.state));
    assertRefusedState(r);
    await s.sync();
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1, 'nothing after the expiry');
  });

  // A retry of the accept waits for the call's outcome, which no reply brings once the parked call
  // expires: it is told so at the expiry, not after polling until --upstream-timeout (30 s here).
  await t.test('a gated parked call that expires: a retry of its accept waiting meanwhile is told the outcome is unknown', async (t) => {
    // Scaled: the accept's state must still be valid when its retry comes (a slower sluice).
    const policy = writePolicy(tmpDir(t), SHORT.replace('confirm_ttl: 2', `confirm_ttl: ${scaled(2)}`) + 'tools:\n  legacy_ask:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' }, args: ['--upstream-timeout', '30'] });
    const args = { topic: 'expires' };
    const mine = assertAsked(await s.request(toolCall('e1', 'legacy_ask', args)));
    assertUpstreamRound(await s.request(confirmRetry('e2', 'legacy_ask', args, mine.state, ACCEPT)), 'expires');
    const r = await s.request(confirmRetry('e3', 'legacy_ask', args, mine.state, ACCEPT), scaled(8000));
    assertReplayed(r);
    assert.equal(r.result.isError, true, r.raw);
    assert.match(resultText(r), /\(the client did not answer the server's question in time\)\. Whether it ran is unknown/, r.raw);
    await waitFor(() => s.upstreamMessages().some((m) => m.method === 'notifications/cancelled'), 5000, 'the call cancelled upstream');
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  });

  // The server gave up its own question and answered before the round expired: that reply is
  // the call's outcome. Before, the expiry threw it away and told the retry "unknown".
  await t.test('a gated parked call that expires after the server answered: a retry of its accept gets that answer', async (t) => {
    // Scaled: the accept's state must still be valid when its retry comes (a slower sluice).
    const policy = writePolicy(tmpDir(t), SHORT.replace('confirm_ttl: 2', `confirm_ttl: ${scaled(2)}`) + 'tools:\n  legacy_ask:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '500' }, args: ['--upstream-timeout', '30'] });
    const args = { topic: 'answered' };
    const mine = assertAsked(await s.request(toolCall('k1', 'legacy_ask', args)));
    const q = assertUpstreamRound(await s.request(confirmRetry('k2', 'legacy_ask', args, mine.state, ACCEPT)), 'answered');
    const r = await s.request(confirmRetry('k3', 'legacy_ask', args, mine.state, ACCEPT), scaled(8000));
    assertReplayed(r);
    assert.ok(!r.result.isError, r.raw);
    assert.equal(r.result.resultType, 'complete', r.raw);
    assert.deepEqual(JSON.parse(resultText(r)).answer, null, r.raw);
    assertRefusedState(await s.request(retry('k4', 'legacy_ask', args, q.key, q.state)));
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  });

  // No person approved a call that began ungated: a reload that gates its tool must not let
  // its next round pass the gate as an approved one (before, its state read as the person's).
  await t.test('a parked ungated call whose tool a reload gates: its next round is refused, the server gets no answer', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, ALLOW);
    const s = startSluice(t, { dir, policy, era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '30000' } });
    const args = { topic: 'reload' };
    const q = assertUpstreamRound(await s.request(toolCall('u1', 'legacy_ask', args)), 'reload');
    writePolicy(dir, GATED);
    s.proc.kill('SIGHUP');
    await waitLog(s, /SIGHUP: policy reloaded from/);
    const r = await s.request(retry('u2', 'legacy_ask', args, q.key, q.state));
    assertRefusedState(r, /began before the policy gated its tool; nobody approved it/);
    await s.sync();
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 0, 'the answer reached the server');
  });

  await t.test('a call without the capability: today\'s behaviour (the upstream gets an error, the call completes)', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
    assert.ok((await s.request(modernRequest('l', 'tools/list'))).result); // initializes with FORM_CAPS
    const r = await s.request(toolCall('c1', 'legacy_ask', {}, { caps: {} }));
    const got = asked(r);
    assert.ok(got.answer && got.answer.error, r.raw);
    assert.equal(got.answer.id, got.requestId, r.raw);
  });

  await t.test('two calls in flight: the question cannot be attributed and gets an error', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy', fake: { FAKE_SLOW_MS: '1500' } });
    s.send(toolCall('slow', 'sleep', { ms: 1 }));
    const r = await s.request(toolCall('c1', 'legacy_ask', {}));
    const got = asked(r);
    assert.ok(got.answer && got.answer.error, r.raw);
    assert.match(s.stderr, /cannot be told which one/);
    assert.ok((await s.responseTo('slow')).result);
  });

  await t.test('a gated call: sluice\'s confirmation first, then the server\'s question, then the result', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), GATED), era: 'legacy' });
    const args = { topic: 'gated' };
    const mine = assertAsked(await s.request(toolCall('g1', 'legacy_ask', args)));
    await s.sync();
    assert.equal(s.upstreamCalls('legacy_ask').length, 0, 'nothing runs before the confirmation');
    const r2 = await s.request(confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT));
    const q = assertUpstreamRound(r2, 'gated');
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
    const other = await s.request(retry('g3', 'legacy_ask', { topic: 'other' }, q.key, q.state));
    assert.ok(other.error || (other.result && other.result.isError === true), `other arguments must be refused: ${other.raw}`);
    const r4 = await s.request(retry('g4', 'legacy_ask', args, q.key, q.state));
    const got = asked(r4);
    assert.deepEqual(got.answer.result, UP_ANSWER);
    assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1, 'one answer, the genuine one');
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
    // The accept again: the call's outcome is its result, not the round that answered g2
    // (the first final message under the accept's id).
    assertReplayed(await s.request(confirmRetry('g5', 'legacy_ask', args, mine.state, ACCEPT)), r4);
    // The answer to the server's question again: its state was spent too, and the call ran.
    assertReplayed(await s.request(retry('g6', 'legacy_ask', args, q.key, q.state)), r4);
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  });
});

// The client's answers to the server's questions are checked against the result each kind
// needs (PROTOCOL.md §2.3, §3.3) before any is handed over: an answer of null once reached the
// server as "result": null.
test('stdio: a malformed answer to a parked call\'s question', suiteOptions(), async (t) => {
  await t.test('-32602, the server gets no answer from it, and the call ends', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '20000' } });
    const bad = [null, 'accept', [], {}, { action: 'maybe' }, { action: 'accept' }, { action: 'accept', content: [] },
      { action: 'accept', content: { answer: { nested: 1 } } }, { action: 'accept', content: { answer: [1] } }, { action: 'decline', content: 'x' }];
    for (const [i, answer] of bad.entries()) {
      const args = { topic: `bad-${i}` };
      const q = assertUpstreamRound(await s.request(toolCall(`b${i}`, 'legacy_ask', args)), args.topic);
      const r = await s.request(retry(`r${i}`, 'legacy_ask', args, q.key, q.state, answer));
      assert.equal(r.error && r.error.code, -32602, `${JSON.stringify(answer)}: ${r.raw}`);
      assert.match(r.error.message, /answer/, r.raw);
      // The call ended: its state opens nothing any more.
      assertRefusedState(await s.request(retry(`x${i}`, 'legacy_ask', args, q.key, q.state)), /No call waits/);
    }
    await s.sync();
    const answers = upstreamAnswers(s.upstreamMessages());
    assert.deepEqual(answers.filter((m) => 'result' in m), [], 'a malformed answer reached the server');
    assert.equal(answers.length, bad.length, 'each question got an error instead');
    assert.equal(s.upstreamMessages().filter((m) => m.method === 'notifications/cancelled').length, bad.length, 'each call was cancelled');
  });

  await t.test('a gated call: the approved call ends, and neither of its states runs it again', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), GATED), era: 'legacy', fake: { FAKE_ASK_WAIT_MS: '20000' } });
    const args = { topic: 'gated-bad' };
    const mine = assertAsked(await s.request(toolCall('g1', 'legacy_ask', args)));
    const q = assertUpstreamRound(await s.request(confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT)), 'gated-bad');
    const r = await s.request(retry('g3', 'legacy_ask', args, q.key, q.state, null));
    assert.equal(r.error && r.error.code, -32602, r.raw);
    const round = await s.request(retry('g4', 'legacy_ask', args, q.key, q.state));
    assertRefusedState(round, /already used/);
    const accept = await s.request(confirmRetry('g5', 'legacy_ask', args, mine.state, ACCEPT));
    assert.equal(accept.result && accept.result.isError, true, accept.raw);
    assert.equal(accept.result._meta && accept.result._meta['dev.sluice/replayed'], true, accept.raw);
    assert.match(resultText(accept), /malformed/, accept.raw);
    await s.sync();
    assert.equal(s.upstreamCalls('legacy_ask').length, 1, 'the call ran once');
    assert.deepEqual(upstreamAnswers(s.upstreamMessages()).filter((m) => 'result' in m), [], 'a malformed answer reached the server');
  });

  await t.test('well-formed answers of every action still go through', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
    const good = [{ action: 'decline' }, { action: 'cancel' }, { action: 'cancel', content: null },
      { action: 'accept', content: { answer: 'x', n: 1, ok: true, many: ['a', 'b'] } }];
    for (const [i, answer] of good.entries()) {
      const args = { topic: `good-${i}` };
      const q = assertUpstreamRound(await s.request(toolCall(`g${i}`, 'legacy_ask', args)), args.topic);
      assert.deepEqual(asked(await s.request(retry(`h${i}`, 'legacy_ask', args, q.key, q.state, answer))).answer.result, answer);
    }
  });
});

// Every round's questions are checked against what the request holding the call declared, not
// only the first's: a later request that declares less is not asked what it cannot answer.
test('stdio: a later round of a parked call asks only what its request declared', suiteOptions(), async (t) => {
  for (const [label, caps] of [['nothing', {}], ['url elicitation only', { elicitation: { url: {} } }], ['sampling only', { sampling: {} }]]) {
    await t.test(`the round-two request declares ${label}: the server's next question gets an error, the call completes`, async (t) => {
      const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
      const args = { gapMs: 100 };
      const r1 = await s.request(toolCall('a1', 'legacy_ask_twice', args));
      const [k1] = Object.keys(r1.result.inputRequests);
      const r2 = await s.request(toolCall('a2', 'legacy_ask_twice', args, { caps, params: { inputResponses: { [k1]: UP_ANSWER }, requestState: r1.result.requestState } }));
      assert.equal(r2.result && r2.result.resultType, 'complete', r2.raw);
      const twice = JSON.parse(resultText(r2)).twice;
      assert.deepEqual(twice[0].result, UP_ANSWER, r2.raw);
      assert.ok(twice[1] && twice[1].error && twice[1].error.code === -32601, r2.raw);
    });
  }

  await t.test('a question left open is not asked again of a request that did not declare it', async (t) => {
    const s = startSluice(t, { policy: writePolicy(tmpDir(t), ALLOW), era: 'legacy' });
    const q = assertUpstreamRound(await s.request(toolCall('o1', 'legacy_ask', { topic: 'open' })), 'open');
    const r = await s.request(toolCall('o2', 'legacy_ask', { topic: 'open' }, { caps: { sampling: {} }, params: { inputResponses: {}, requestState: q.state } }));
    const got = asked(r);
    assert.ok(got.answer && got.answer.error && got.answer.error.code === -32601, r.raw);
  });
});

// ===== HTTP =====


test('HTTP --child-per-session: a call of its own child, parked between rounds', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, SHORT.replace('confirm_ttl: 2', `confirm_ttl: ${scaled(3)}`) + 'tools:\n  drop_table:\n    action: confirm\n'), fake: { FAKE_EXTRA_TOOLS: '1', FAKE_ASK_WAIT_MS: '30000' }, args: ['--child-per-session'] });
  const call = (id, args, opts) => modernCall(s.target, toolCall(id, 'legacy_ask', args, opts));
  const r1 = await call('h1', { topic: 'http' });
  const q = assertUpstreamRound(r1, 'http');
  const inits = s.upstreamMessages().filter((m) => m.method === 'initialize');
  assert.ok(inits.some((m) => m.params.clientInfo.name === 'sluice-e2e' && m.params.capabilities.elicitation), 'the call\'s child is initialized as the client');
  assertRefusedState(await modernCall(s.target, retry('h2', 'legacy_ask', { topic: 'http' }, q.key, tamper(q.state))));
  assertRefusedState(await modernCall(s.target, retry('h3', 'legacy_ask', { topic: 'other' }, q.key, q.state)));
  assert.equal(upstreamAnswers(s.upstreamMessages()).length, 0, 'no forged answer');
  const r4 = await modernCall(s.target, retry('h4', 'legacy_ask', { topic: 'http' }, q.key, q.state));
  const got = asked(r4);
  assert.deepEqual(got.answer.result, UP_ANSWER, r4.raw);
  assertRefusedState(await modernCall(s.target, retry('h5', 'legacy_ask', { topic: 'http' }, q.key, q.state)), /another sluice replica/);
  assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1);
  const children = s.upstreamPids();
  assert.equal(children.length, 2, 'the shared child and the call\'s own');
  assert.ok(await waitPidGone(children[1], scaled(5000)), 'the call\'s child ends with the call');

  // Without the capability: the shared child, which declared nothing (today's behaviour).
  const plain = asked(await call('h6', {}, { caps: {} }));
  assert.ok(plain.answer && plain.answer.error, JSON.stringify(plain));

  // Expiry: the upstream's request gets an error, and the state is refused.
  const errorsBefore = upstreamAnswers(s.upstreamMessages()).filter((m) => m.error).length;
  const e = assertUpstreamRound(await call('h7', { topic: 'late' }), 'late');
  await waitFor(() => upstreamAnswers(s.upstreamMessages()).filter((m) => m.error).length > errorsBefore, 9000, 'the expired question answered with an error');
  assertRefusedState(await modernCall(s.target, retry('h8', 'legacy_ask', { topic: 'late' }, e.key, e.state)));
});

// The retry that answered round one is over once round two is its answer, and its session may
// be freed with its exchange. The server's progress while round two is open must go nowhere: it
// once went to that freed session, whose memory the next request's session had taken (another
// client's stream got it, or sluice crashed).
test('HTTP --child-per-session: progress between two rounds reaches no other request', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, ALLOW), fake: { FAKE_ASK_WAIT_MS: '30000' }, args: ['--child-per-session'] });
  const args = { gapMs: 150 };
  const call = (id, params) => toolCall(id, 'legacy_ask_twice', args, { meta: { progressToken: `tok-${id}` }, params });
  const round = (r) => {
    assert.equal(r.result && r.result.resultType, 'input_required', r.raw);
    const [key] = Object.keys(r.result.inputRequests);
    return { key, state: r.result.requestState };
  };
  const q1 = round(await modernCall(s.target, call('a1')));
  const q2 = round(await modernCall(s.target, call('a2', { inputResponses: { [q1.key]: UP_ANSWER }, requestState: q1.state })));
  // Other requests while the server reports progress (3 x 150 ms): none may carry it.
  const others = [];
  for (let i = 0; i < 4; i++) others.push(await rpc(s.target, toolCall(`b${i}`, 'sleep', { ms: 200 }, { caps: {}, meta: { progressToken: `tok-b${i}` } })));
  for (const o of others) {
    assert.equal(o.status, 200, o.raw);
    const foreign = o.events.filter((m) => m && m.method === 'notifications/progress' && !String(m.params.progressToken).startsWith('tok-b'));
    assert.deepEqual(foreign, [], `another request's progress on this stream: ${JSON.stringify(o.events)}`);
  }
  const done = await modernCall(s.target, call('a3', { inputResponses: { [q2.key]: { action: 'accept', content: { answer: 'second' } } }, requestState: q2.state }));
  assert.equal(done.result && done.result.resultType, 'complete', done.raw);
  const got = JSON.parse(resultText(done));
  assert.deepEqual(got.twice.map((a) => a && a.result), [UP_ANSWER, { action: 'accept', content: { answer: 'second' } }], done.raw);
});

test('HTTP --child-per-session, a gated call: the confirmation first (no child for it), then the server\'s question', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, GATED), fake: { FAKE_EXTRA_TOOLS: '1' }, args: ['--child-per-session'] });
  const args = { topic: 'gated-http' };
  const mine = assertAsked(await modernCall(s.target, toolCall('g1', 'legacy_ask', args)));
  assert.equal(s.upstreamPids().length, 1, 'no child is started to ask sluice\'s own question');
  assert.equal(s.upstreamCalls('legacy_ask').length, 0);
  const q = assertUpstreamRound(await modernCall(s.target, confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT)), 'gated-http');
  assert.equal(s.upstreamPids().length, 2, 'the approved call runs in a child of its own');
  const r3 = await modernCall(s.target, retry('g3', 'legacy_ask', args, q.key, q.state));
  const got = asked(r3);
  assert.deepEqual(got.answer.result, UP_ANSWER);
  assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1);
  // Each spent state of the call, retried (its own POST, its own session): the call's result.
  // The round's session is not the one the call was forwarded from; its state was once kept
  // as "not run", and the retry refused as a replay.
  assertReplayed(await modernCall(s.target, retry('g4', 'legacy_ask', args, q.key, q.state)), r3);
  assertReplayed(await modernCall(s.target, confirmRetry('g5', 'legacy_ask', args, mine.state, ACCEPT)), r3);
  assert.equal(s.upstreamCalls('legacy_ask').length, 1);
});

// The round's client leaves before sluice has spent its state (its POST and the close read at
// once). The call's reply once went to that round's session, freed meanwhile: whatever request
// took its memory next got it, or sluice crashed (ASan: heap-use-after-free).
for (const store of ['memory', 'redis']) {
test(`HTTP --child-per-session, a gated call: the answer's client leaves at once; its reply reaches no other request (${store} store)`, suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  let storeArgs = [];
  let relay = null;
  if (store === 'redis') {
    const redis = await startRedis(t);
    relay = await slowRelay(t, redis.port);
    storeArgs = ['--store', `redis://127.0.0.1:${relay.port}`];
  }
  const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, GATED), fake: { FAKE_EXTRA_TOOLS: '1' }, args: ['--child-per-session', ...storeArgs] });
  const args = { topic: 'gone' };
  const mine = assertAsked(await modernCall(s.target, toolCall('g1', 'legacy_ask', args)));
  const q = assertUpstreamRound(await modernCall(s.target, confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT)), 'gone');
  const msg = retry('g3', 'legacy_ask', args, q.key, q.state);
  // With Redis, the spend's reply comes 300 ms late: the client is gone before it. With the
  // memory store, the state is spent first and the client leaves while the call runs.
  if (relay) relay.setDelay(300);
  await postAndLeave(s, msg);
  // Back to no delay only once the spend's late reply is in: the relay would otherwise let a
  // later reply overtake it, and hiredis match each to the other's command.
  if (relay) {
    await sleep(600);
    relay.setDelay(0);
  }
  for (let i = 0; i < 4; i++) {
    const o = await rpc(s.target, toolCall(`b${i}`, 'sleep', { ms: 50 }, { caps: {} }));
    assert.equal(o.status, 200, o.raw);
    assert.doesNotMatch(o.reply.text, /g3|blue|legacy_ask/, `another request's stream carries the call's reply: ${o.reply.text}`);
  }
  assert.equal((await get(s.target, '/healthz')).status, 200);
  // Nothing waits on the left request's state: its retry is answered at once.
  // The call was approved: it finishes as any approved call whose client left, the answer
  // handed over, and a retry of either state gets its result.
  const again = await modernCall(s.target, retry('g4', 'legacy_ask', args, q.key, q.state), { timeoutMs: scaled(5000) });
  assert.equal(again.result && again.result._meta && again.result._meta['dev.sluice/replayed'], true, again.raw);
  assert.deepEqual(asked(again).answer.result, UP_ANSWER, again.raw);
  assertReplayed(await modernCall(s.target, confirmRetry('g5', 'legacy_ask', args, mine.state, ACCEPT), { timeoutMs: scaled(5000) }), again);
  assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  assert.equal(upstreamAnswers(s.upstreamMessages()).length, 1, 'the answer reached the server once');
});
}

// The round's client leaves once its answer was handed over, while it waits for the call's
// result (not before its state was spent, as above, which timing decides): the approved call
// finishes for nobody, and a retry of the round gets its result.
test('HTTP --child-per-session, a gated call: the answer\'s client leaves while the call runs; a retry gets the result', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, GATED), fake: { FAKE_EXTRA_TOOLS: '1' }, args: ['--child-per-session'] });
  const args = { topic: 'left', replyAfterMs: scaled(1500) };
  const mine = assertAsked(await modernCall(s.target, toolCall('g1', 'legacy_ask', args)));
  const q = assertUpstreamRound(await modernCall(s.target, confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT)), 'left');
  const msg = retry('g3', 'legacy_ask', args, q.key, q.state);
  const sock = net.connect({ host: '127.0.0.1', port: s.port }, () => sock.write(rawRequest('POST', '/mcp', mcpHeadersFor(msg), JSON.stringify(msg))));
  sock.on('error', () => {});
  sock.resume();
  t.after(() => sock.destroy());
  await waitFor(() => upstreamAnswers(s.upstreamMessages()).length === 1, 5000, 'the answer handed over');
  sock.destroy();
  await sleep(200);
  const again = await modernCall(s.target, retry('g4', 'legacy_ask', args, q.key, q.state), { timeoutMs: scaled(8000) });
  assert.equal(again.result && again.result._meta && again.result._meta['dev.sluice/replayed'], true, again.raw);
  assert.deepEqual(asked(again).answer.result, UP_ANSWER, again.raw);
  assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  assert.ok(!s.upstreamMessages().some((m) => m.method === 'notifications/cancelled'), 'the approved call was not cancelled');
});

// The shared child dies while an approved round's state is being spent (Redis answers late).
// The new shared child has no era until its probe ends (3 s here: it never answers
// server/discover), and the round once read that as "not a legacy server": the approved call
// went to the new child as a new tools/call, the park handle as its requestState, and a server
// that does not insist on its handshake would have run it twice.
test('HTTP --child-per-session: a round spent while the shared child starts again is still its parked call\'s', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const redis = await startRedis(t);
  const relay = await slowRelay(t, redis.port);
  const s = await startHttpSluice(t, {
    dir, policy: writePolicy(dir, GATED), readyDeadlineMs: 20000,
    fake: { FAKE_ASK_WAIT_MS: '60000', FAKE_SILENT_DISCOVER: '1' }, env: { SLUICE_DISCOVER_TIMEOUT_MS: '3000' },
    args: ['--child-per-session', '--store-timeout', '8000', '--store', `redis://127.0.0.1:${relay.port}`],
  });
  const args = { topic: 'once' };
  const mine = assertAsked(await modernCall(s.target, toolCall('g1', 'legacy_ask', args), { timeoutMs: scaled(10000) }));
  const q = assertUpstreamRound(await modernCall(s.target, confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT), { timeoutMs: scaled(10000) }), 'once');
  const shared = s.upstreamPids()[0];
  relay.setDelay(2000);
  const round = modernCall(s.target, retry('g3', 'legacy_ask', args, q.key, q.state), { timeoutMs: scaled(20000) });
  await sleep(100);
  process.kill(shared, 'SIGKILL');
  const r = await round;
  await sleep(200); // the reply waited for no later write: anything sent is in the log now
  relay.setDelay(0);
  assert.equal(s.upstreamCalls('legacy_ask').length, 1, `the approved call reached a server once: ${JSON.stringify(s.upstreamCalls('legacy_ask').map((m) => m.params))}`);
  assert.deepEqual(asked(r).answer.result, UP_ANSWER, r.raw);
});

// The client of an approved call leaves before the server asks anything: nobody can answer, and
// the server must hear so at once. Its question was once sealed as a round for the gone request,
// and the call was cancelled at the round's expiry, its outcome lost (a retry waited 300 s).
test('HTTP --child-per-session, a gated call whose client leaves before the server asks: the server gets an error at once, the retry the result', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, GATED), fake: { FAKE_EXTRA_TOOLS: '1', FAKE_ASK_WAIT_MS: '60000' }, args: ['--child-per-session'] });
  const args = { topic: 'left', askAfterMs: 400 };
  const mine = assertAsked(await modernCall(s.target, toolCall('g1', 'legacy_ask', args)));
  const accept = confirmRetry('g2', 'legacy_ask', args, mine.state, ACCEPT);
  await postAndLeave(s, accept);
  const again = await modernCall(s.target, confirmRetry('g3', 'legacy_ask', args, mine.state, ACCEPT), { timeoutMs: scaled(5000) });
  assert.equal(again.result && again.result._meta && again.result._meta['dev.sluice/replayed'], true, again.raw);
  const got = asked(again);
  assert.ok(got.answer && got.answer.error, `the server's question got an error, not an answer: ${again.raw}`);
  assert.match(got.answer.error.message, /went away/, again.raw);
  assert.equal(s.upstreamCalls('legacy_ask').length, 1);
});

test('HTTP upstream of the legacy era: a session of the call\'s own, its question as a round', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const up = new RawUpstream({ era: 'legacy' });
  await up.listen(0);
  t.after(() => up.close());
  up.tool('ask', async (req, res, msg) => {
    const rid = `q-${msg.id}`;
    await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
    await res.write(sseBytes([{ jsonrpc: '2.0', id: rid, method: 'elicitation/create', params: { mode: 'form', message: `server asks ${JSON.stringify(msg.params.arguments)}`, requestedSchema: { type: 'object', properties: {} } } }]));
    const answer = await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === rid && !('method' in r.json)), scaled(10000), 'the answer');
    await res.write(sseBytes([up.textResult(msg, JSON.stringify({ session: req.headers['mcp-session-id'], answer: answer.json.result, answerSession: answer.headers['mcp-session-id'] }))]));
    await res.end();
  });
  const s = await startSluiceOverHttp(t, writePolicy(dir, ALLOW), up.url());
  const r1 = await modernCall(s.target, toolCall('u1', 'ask', { who: 'M' }));
  assert.equal(r1.result && r1.result.resultType, 'input_required', r1.raw);
  const [key] = Object.keys(r1.result.inputRequests);
  assert.match(key, /^sluice-u-\d+$/);
  assert.match(r1.result.inputRequests[key].params.message, /"who":"M"/);
  const inits = up.posts('initialize').map((r) => r.json.params);
  assert.ok(inits.some((p) => p.clientInfo.name === 'sluice-e2e' && p.capabilities.elicitation), 'an upstream session initialized as the client');
  const bad = await modernCall(s.target, toolCall('u2', 'ask', { who: 'M' }, { params: { inputResponses: { [key]: { action: 'accept', content: { forged: true } } }, requestState: tamper(r1.result.requestState) } }));
  assertRefusedState(bad);
  const r2 = await modernCall(s.target, toolCall('u3', 'ask', { who: 'M' }, { params: { inputResponses: { [key]: { action: 'accept', content: { ok: true } } }, requestState: r1.result.requestState } }));
  assert.equal(r2.result && r2.result.resultType, 'complete', r2.raw);
  const out = JSON.parse(resultText(r2));
  assert.deepEqual(out.answer, { action: 'accept', content: { ok: true } });
  assert.equal(out.answerSession, out.session, 'the answer goes back on the call\'s upstream session');
  const answers = up.requests.filter((r) => r.json && !('method' in r.json) && String(r.json.id).startsWith('q-'));
  assert.equal(answers.length, 1, 'one answer reached the upstream, the genuine one');
});

test('HTTP upstream of the legacy era: one principal\'s parked calls are capped; another principal\'s still park', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const up = new RawUpstream({ era: 'legacy' });
  await up.listen(0);
  t.after(() => up.close());
  let nq = 0; // each call's upstream session numbers its requests from 1: ours are unique
  up.tool('ask', async (req, res, msg) => {
    const rid = `q-${++nq}`;
    await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
    await res.write(sseBytes([{ jsonrpc: '2.0', id: rid, method: 'elicitation/create', params: { mode: 'form', message: 'which?', requestedSchema: { type: 'object', properties: {} } } }]));
    const answer = await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === rid && !('method' in r.json)), scaled(10000), 'the answer');
    await res.write(sseBytes([up.textResult(msg, JSON.stringify(answer.json))]));
    await res.end();
  });
  const s = await startSluiceOverHttp(t, writePolicy(dir, ALLOW), up.url(), ['--principal', 'header:X-User', '--max-sessions-per-principal', '2']);
  const as = (who) => ({ headers: { 'X-User': who } });
  const park = async (id, who) => {
    const r = await modernCall(s.target, toolCall(id, 'ask', { id }), as(who));
    return assertUpstreamRound(r);
  };
  const a1 = await park('a1', 'alice');
  await park('a2', 'alice');
  // alice's third call: the server's question cannot be parked, so the server hears an error
  // and its call completes with it; nothing was asked of alice.
  const a3 = await modernCall(s.target, toolCall('a3', 'ask', { id: 'a3' }), as('alice'));
  const out = asked(a3);
  assert.ok(out.error, a3.raw);
  assert.match(out.error.message, /cannot park more calls/, a3.raw);
  assert.match(s.stderr, /header:alice already has 2 parked calls \(--max-sessions-per-principal\)/);
  // bob is not denied by alice's parked calls.
  await park('b1', 'bob');
  // alice's resumed call frees its place: her next call parks again.
  const done = await modernCall(s.target, retry('a1r', 'ask', { id: 'a1' }, a1.key, a1.state), as('alice'));
  assert.deepEqual(asked(done).result, UP_ANSWER, done.raw);
  await park('a4', 'alice');
});

test('HTTP upstream of the legacy era: a question whose params are not an object is not passed on', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const up = new RawUpstream({ era: 'legacy' });
  await up.listen(0);
  t.after(() => up.close());
  up.tool('ask', async (req, res, msg) => {
    const rid = `q-list-${msg.id}`;
    await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
    await res.write(sseBytes([{ jsonrpc: '2.0', id: rid, method: 'elicitation/create', params: ['form', 'which?'] }]));
    const answer = await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === rid && !('method' in r.json)), scaled(10000), 'the answer');
    await res.write(sseBytes([up.textResult(msg, JSON.stringify(answer.json))]));
    await res.end();
  });
  const s = await startSluiceOverHttp(t, writePolicy(dir, ALLOW), up.url());
  const r = await modernCall(s.target, toolCall('l1', 'ask', {}));
  const out = asked(r); // complete: the client was asked nothing
  assert.equal(out.error && out.error.code, -32602, r.raw);
  assert.match(out.error.message, /params are an object/, r.raw);
});

// An approved call whose client left runs on with nobody to ask; a server that keeps asking (each
// question gets an error at once) once kept it, its parked place and its child for ever. It ends
// --upstream-timeout after its client left: cancelled upstream and journaled so.
test('HTTP --child-per-session, a gated call whose client left and whose server keeps asking: cancelled after --upstream-timeout', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const audit = `${dir}/audit.jsonl`;
  const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  legacy_ask_chatty:\n    action: confirm\n');
  const s = await startHttpSluice(t, { dir, policy, audit, fake: { FAKE_EXTRA_TOOLS: '1' }, args: ['--child-per-session', '--upstream-timeout', '2'] });
  const args = { askAfterMs: 400, gapMs: 100 };
  const mine = assertAsked(await modernCall(s.target, toolCall('g1', 'legacy_ask_chatty', args)));
  const accept = confirmRetry('g2', 'legacy_ask_chatty', args, mine.state, ACCEPT);
  await postAndLeave(s, accept);
  await waitFor(() => upstreamAnswers(s.upstreamMessages()).length >= 3, 5000, 'the server asking on');
  await waitFor(() => s.upstreamMessages().some((m) => m.method === 'notifications/cancelled'), 8000, 'the call cancelled upstream');
  await waitLog(s, /client left/);
  const n = upstreamAnswers(s.upstreamMessages()).length;
  await sleep(scaled(500));
  assert.equal(upstreamAnswers(s.upstreamMessages()).length, n, 'the server is no longer answered: the call is over');
  const again = await modernCall(s.target, confirmRetry('g3', 'legacy_ask_chatty', args, mine.state, ACCEPT), { timeoutMs: scaled(5000) });
  assert.equal(again.result && again.result._meta && again.result._meta['dev.sluice/replayed'], true, again.raw);
  assert.equal(again.result.isError, true, again.raw);
  const fs = await import('node:fs');
  const lines = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.some((l) => l.tool === 'legacy_ask_chatty' && l.upstream === 'cancelled'), JSON.stringify(lines));
});

// The same, but the client leaves while the call is parked between its rounds: it answered the
// server's first question and closed the connection that waits for the next event. The call is
// then an orphan of the park (session_park.c park_orphan), not of the relay: the server's next
// questions get an error at once, and the park's own bound ends it --upstream-timeout later.
test('HTTP --child-per-session, a parked gated call whose client left between rounds and whose server keeps asking: cancelled after --upstream-timeout', suiteOptions(), async (t) => {
  const dir = tmpDir(t);
  const audit = `${dir}/audit.jsonl`;
  const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  legacy_ask_chatty:\n    action: confirm\n');
  const s = await startHttpSluice(t, { dir, policy, audit, fake: { FAKE_EXTRA_TOOLS: '1' }, args: ['--child-per-session', '--upstream-timeout', '2'] });
  const args = { askAfterMs: 100, gapMs: 300 };
  const mine = assertAsked(await modernCall(s.target, toolCall('g1', 'legacy_ask_chatty', args)));
  const round = await modernCall(s.target, confirmRetry('g2', 'legacy_ask_chatty', args, mine.state, ACCEPT), { timeoutMs: scaled(5000) });
  assert.equal(round.result && round.result.resultType, 'input_required', round.raw);
  const [key] = Object.keys(round.result.inputRequests);
  const answer = toolCall('g3', 'legacy_ask_chatty', args, { params: { inputResponses: { [key]: UP_ANSWER }, requestState: round.result.requestState } });
  await postAndLeave(s, answer);
  await waitFor(() => upstreamAnswers(s.upstreamMessages()).length >= 3, 5000, 'the server asking on');
  await waitFor(() => s.upstreamMessages().some((m) => m.method === 'notifications/cancelled'), 8000, 'the call cancelled upstream');
  await waitLog(s, /a parked call whose client left still ran/);
  const n = upstreamAnswers(s.upstreamMessages()).length;
  await sleep(scaled(700));
  assert.equal(upstreamAnswers(s.upstreamMessages()).length, n, 'the server is no longer answered: the call is over');
  const fs = await import('node:fs');
  const lines = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.some((l) => l.tool === 'legacy_ask_chatty' && l.upstream === 'cancelled'), JSON.stringify(lines));
});
