// rounds.test.mjs: a legacy client (2025-11-25 / 2025-06-18) in front of a 2026-07-28
// upstream that answers a forwarded tools/call with `input_required` (README "Across eras").
// sluice asks the client each entry of `inputRequests` as its own request (id "sluice-u-N",
// method and params as the upstream gave them, `mode` removed for 2025-06-18), collects the
// answers and retries the same call upstream under a new id with `inputResponses` {key: answer}
// and the upstream's `requestState` unchanged, up to 8 rounds; the final result reaches the client
// under its original id without `resultType`. Every check of what was retried is made against the
// fake upstream's log of what it received.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  LINE_DEADLINE_MS, MODERN, jcs, legacyCall, legacyHandshake, legacySync, nextElicitation,
  deadline, policyPath, readJsonLines, reloadPolicy, resultText, scaled, sleep, startSluice, suiteOptions, tmpDir, waitPidGone, writePolicy,
} from './lib.mjs';
import { LegacyHttpSession, legacyToolCall, startHttpSluice, waitLog } from './http_lib.mjs';

const GATE = policyPath('gate.yaml'); // echo and ask allowed; other names allowed by default
const ACCEPT = { action: 'accept', content: { approve: true } };
const UP_QUESTION = {
  mode: 'form',
  message: 'What is your answer?',
  requestedSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
};
const answerOf = (text) => ({ action: 'accept', content: { answer: text } });

function hasEnvelope(params) {
  const m = params && params._meta;
  return !!m && m['io.modelcontextprotocol/protocolVersion'] === MODERN
    && typeof m['io.modelcontextprotocol/clientCapabilities'] === 'object';
}

/** A legacy session in front of a modern fake upstream. */
async function start(t, { policy = GATE, hs = {}, dir } = {}) {
  const s = startSluice(t, { policy, era: 'modern', dir });
  s.init = await legacyHandshake(s, hs);
  return s;
}

/** The next request sluice sends the client that relays an upstream question (sluice-u-N). */
async function nextRelayed(s, ms = LINE_DEADLINE_MS) {
  const e = await nextElicitation(s, ms);
  assert.match(String(e.id), /^sluice-u-\d+$/, `an upstream question needs an id of sluice's own: ${e.raw}`);
  assert.equal(typeof e.id, 'string', e.raw);
  return e;
}

function answer(s, id, result) {
  s.send({ jsonrpc: '2.0', id, result });
}

/** Asserts the client got the upstream's final result, handshake-style (no resultType). */
function assertFinal(r, id, text) {
  assert.ok(r.result, `expected a result, got ${r.raw}`);
  assert.deepEqual(r.id, id, r.raw);
  assert.ok(!('resultType' in r.result), `a 2025 client gets no resultType: ${r.raw}`);
  for (const k of ['inputRequests', 'requestState', 'ttlMs', 'cacheScope']) assert.ok(!(k in r.result), `${k} reached the client: ${r.raw}`);
  assert.ok(!r.result.isError, r.raw);
  assert.equal(resultText(r), text, r.raw);
}

/** Asserts r is an isError tool result (handshake-style) and returns its text. */
function assertIsError(r, id, re) {
  assert.ok(r.result, `expected an isError result, got ${r.raw}`);
  assert.deepEqual(r.id, id, r.raw);
  assert.equal(r.result.isError, true, r.raw);
  assert.ok(!('resultType' in r.result), `a 2025 client gets no resultType: ${r.raw}`);
  const text = resultText(r);
  if (re) assert.match(text, re, r.raw);
  return text;
}

/** Requests (method + id) sluice sent the client and the test has not consumed. */
function requestsToClient(s) {
  return s.lines.filter((l) => typeof l.msg.method === 'string' && 'id' in l.msg).map((l) => l.raw);
}

/** Checks a call forwarded by sluice: the envelope, the arguments and no sluice internals. An
 * allowed call's arguments go untouched (as the client wrote them, JSON.stringify here); an
 * approved gated call's go in canonical form (gated = true). */
function assertWellFormedCall(c, name, args, gated = false) {
  assert.equal(c.params.name, name, c.raw);
  assert.deepEqual(c.params.arguments, args, c.raw);
  if (gated) assert.ok(c.raw.includes(`"arguments":${jcs(args)}`), `approved arguments not forwarded in canonical form: ${c.raw}`);
  else assert.ok(c.raw.includes(`"arguments":${JSON.stringify(args)}`), `allowed arguments not forwarded as the client sent them: ${c.raw}`);
  assert.ok(hasEnvelope(c.params), `a modern upstream needs the envelope: ${c.raw}`);
  for (const k of ['sluice-u-', 'sluice-e-', 'sluice.confirm', 'dev.sluice/']) assert.ok(!c.raw.includes(k), `${k} leaked upstream: ${c.raw}`);
}

function assertFirstCall(c, name, args, gated = false) {
  assertWellFormedCall(c, name, args, gated);
  for (const k of ['inputResponses', 'requestState']) assert.ok(!(k in c.params), `the first call carries no ${k}: ${c.raw}`);
}

/** A retry: same call, a new upstream id, exactly these answers and exactly this state. */
function assertRetry(first, c, name, args, responses, state, gated = false) {
  assertWellFormedCall(c, name, args, gated);
  assert.notDeepEqual(c.id, first.id, `a retry needs a new upstream id: ${first.raw} then ${c.raw}`);
  assert.deepEqual(c.params.inputResponses, responses, c.raw);
  assert.equal(typeof c.params.requestState, 'string', c.raw);
  assert.ok(Buffer.from(c.params.requestState, 'utf8').equals(Buffer.from(state, 'utf8')),
    `requestState must come back byte for byte: expected ${JSON.stringify(state)}, got ${JSON.stringify(c.params.requestState)} in ${c.raw}`);
}

async function waitUpstreamCalls(s, name, n, ms = LINE_DEADLINE_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const calls = s.upstreamCalls(name);
    if (calls.length >= n) return calls;
    if (Date.now() > end) throw new Error(`the upstream received ${calls.length} ${name} calls, expected ${n}: ${JSON.stringify(calls.map((c) => c.raw))}`);
    await sleep(20);
  }
}

describe('legacy client, modern upstream: the upstream asks during a tools/call', suiteOptions(), () => {
  test('an allowed ask: one round relayed as sluice-u-N, retried with exactly the answer and the state, result under the original id', async (t) => {
    const s = await start(t);
    const args = { topic: 'colour', n: 2 };
    s.send(legacyCall('c1', 'ask', args));
    const q = await nextRelayed(s);
    assert.equal(q.method, 'elicitation/create', q.raw);
    assert.deepEqual(q.params, UP_QUESTION, `the upstream's params, as given (2025-11-25 keeps mode): ${q.raw}`);
    // While the client is being asked, the upstream has had the one call, and no retry yet.
    await legacySync(s);
    const before = s.upstreamCalls('ask');
    assert.equal(before.length, 1, JSON.stringify(before.map((c) => c.raw)));
    assertFirstCall(before[0], 'ask', args);
    await s.noResponseTo('c1', 100);

    const pid = await s.upstreamPid();
    const state = `fake-upstream-state-1-${pid}`;
    const ans = answerOf('blue');
    answer(s, q.id, ans);
    const r = await s.responseTo('c1');
    assertFinal(r, 'c1', `answered: blue (state ${state})`);

    await legacySync(s);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2, JSON.stringify(calls.map((c) => c.raw)));
    assertFirstCall(calls[0], 'ask', args);
    assertRetry(calls[0], calls[1], 'ask', args, { 'upstream.q': ans }, state);
    assert.deepEqual(requestsToClient(s), [], 'no further question after the final result');
  });

  test('the upstream state comes back byte for byte even with escapes and non-ASCII in it', async (t) => {
    const s = await start(t);
    const tail = '|+/=\\"\u00e9\u2028\u{1F600}\t<>&\'';
    const args = { stateTail: tail };
    s.send(legacyCall('c2', 'ask', args));
    const q = await nextRelayed(s);
    const ans = answerOf('green');
    answer(s, q.id, ans);
    const pid = await s.upstreamPid();
    const state = `fake-upstream-state-1-${pid}${tail}`;
    assertFinal(await s.responseTo('c2'), 'c2', `answered: green (state ${state})`);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2, JSON.stringify(calls.map((c) => c.raw)));
    assertRetry(calls[0], calls[1], 'ask', args, { 'upstream.q': ans }, state);
  });

  test('a gated ask: sluice asks first (sluice-e-N), then the upstream (sluice-u-N); two upstream calls, both with the approved canonical arguments', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  echo:\n    action: allow\n  ask:\n    action: confirm\n');
    const s = await start(t, { policy, dir });
    const args = { z: 1, a: { y: [1, 'two', null], b: true }, m: 'text' };
    s.send(legacyCall('g1', 'ask', args));
    const mine = await nextElicitation(s);
    assert.match(String(mine.id), /^sluice-e-\d+$/, `sluice's own question comes first: ${mine.raw}`);
    assert.equal(mine.params.requestedSchema.properties.approve.type, 'boolean', mine.raw);
    await legacySync(s);
    assert.equal(s.upstreamCalls('ask').length, 0, 'forwarded before the approval');

    answer(s, mine.id, ACCEPT);
    const theirs = await nextRelayed(s);
    assert.notEqual(theirs.id, mine.id, theirs.raw);
    assert.deepEqual(theirs.params, UP_QUESTION, theirs.raw);
    const pid = await s.upstreamPid();
    const state = `fake-upstream-state-1-${pid}`;
    const ans = answerOf('approved-answer');
    answer(s, theirs.id, ans);
    const r = await s.responseTo('g1');
    assertFinal(r, 'g1', `answered: approved-answer (state ${state})`);

    await legacySync(s);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2, `exactly two calls: ${JSON.stringify(calls.map((c) => c.raw))}`);
    assertFirstCall(calls[0], 'ask', args, true);
    assertRetry(calls[0], calls[1], 'ask', args, { 'upstream.q': ans }, state, true);
    assert.deepEqual(requestsToClient(s), []);
  });

  for (const [label, from, to] of [
    ['an approved call whose tool the reloaded policy denies', 'confirm', 'deny'],
    ['an allowed call whose tool the reloaded policy gates', 'allow', 'confirm'],
  ]) {
    test(`${label} between the rounds is not sent again (as a 2026-07-28 client's next round is refused)`, async (t) => {
      const dir = tmpDir(t);
      const text = (a) => `version: 1\ntools:\n  echo:\n    action: allow\n  ask:\n    action: ${a}\n`;
      const policy = writePolicy(dir, text(from));
      const s = await start(t, { policy, dir });
      s.send(legacyCall('p1', 'ask', { a: 1 }));
      if (from === 'confirm') answer(s, (await nextElicitation(s)).id, ACCEPT);
      const q = await nextRelayed(s);
      writePolicy(dir, text(to));
      await reloadPolicy(s);
      answer(s, q.id, answerOf('late'));
      assertIsError(await s.responseTo('p1'), 'p1', /policy/);
      await legacySync(s);
      assert.equal(s.upstreamCalls('ask').length, 1, 'sent again under a policy that no longer lets it go');
    });
  }

  test('the client answers the relayed question with a JSON-RPC error: isError result, no retry upstream', async (t) => {
    const s = await start(t);
    s.send(legacyCall(5, 'ask', { x: 1 }));
    const q = await nextRelayed(s);
    s.send({ jsonrpc: '2.0', id: q.id, error: { code: -32603, message: 'the UI crashed' } });
    const r = await s.responseTo(5);
    assertIsError(r, 5);
    await legacySync(s);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 1, `no retry may reach the upstream: ${JSON.stringify(calls.map((c) => c.raw))}`);
    assertFirstCall(calls[0], 'ask', { x: 1 });
    assert.ok(!s.upstreamMessages().some((m) => m.method === undefined && ('result' in m || 'error' in m)), 'the client\'s error was passed to the upstream');
    assert.deepEqual(requestsToClient(s), []);
    await s.noResponseTo(5, 200); // exactly one response
  });

  // The server is not waiting for the answers (it answered input_required), so
  // --upstream-timeout never applies: before, a client that never answered held the call, its
  // request and its session for ever. The round has the tool's confirm_ttl, as a parked call.
  test('the client never answers the relayed question: isError after confirm_ttl, the question withdrawn, no retry upstream', async (t) => {
    const dir = tmpDir(t);
    const s = await start(t, { dir, policy: writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\n  confirm_ttl: 1\n') });
    const t0 = Date.now();
    s.send(legacyCall('slow', 'ask', { x: 1 }));
    const q = await nextRelayed(s);
    const r = await s.responseTo('slow', Math.max(4000, LINE_DEADLINE_MS));
    const elapsed = Date.now() - t0;
    assert.ok(elapsed >= 900, `ended after ${elapsed} ms; the client had confirm_ttl (1 s)`);
    assertIsError(r, 'slow', /did not answer the server's question within 1 s/);
    const c = s.lines.find((l) => l.msg.method === 'notifications/cancelled');
    assert.ok(c, 'the question was not withdrawn at the client');
    assert.deepEqual(c.msg.params.requestId, q.id, c.raw);
    answer(s, q.id, answerOf('late')); // a late answer is dropped
    await legacySync(s);
    assert.equal(s.upstreamCalls('ask').length, 1, 'a retry reached the upstream');
    assert.match(s.stderr, /did not answer the server's question within 1 s/);
    await s.noResponseTo('slow', 200);
  });

  // The call ran upstream as far as the question, so the error the client got is its outcome:
  // kept for the token, which then answers a retry at once. Before, the answer went out without
  // settling the token, and its retry polled the store until --upstream-timeout (here 30 s).
  test('a token-approved call whose relayed question the client answers with an error: a retry with the token gets that answer at once, marked replayed', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  ask:\n    action: confirm\n    fallback: token\n');
    const s = startSluice(t, { policy, era: 'modern', dir, args: ['--upstream-timeout', '30'] });
    await legacyHandshake(s, { capabilities: { sampling: {} } }); // cannot ask a person: the token
    const args = { askMethod: 'sampling/createMessage', askParams: { messages: [], maxTokens: 1 } };
    const refused = await s.request(legacyCall('t1', 'ask', args));
    const tok = refused.result && refused.result._meta && refused.result._meta['dev.sluice/token'];
    assert.equal(typeof tok, 'string', refused.raw);
    const withToken = (id) => legacyCall(id, 'ask', args, { _meta: { 'dev.sluice/token': tok } });
    s.send(withToken('t2'));
    const q = await s.next((m) => m.method === 'sampling/createMessage' && 'id' in m, undefined, 'the relayed sampling request');
    assert.match(String(q.msg.id), /^sluice-u-\d+$/, q.raw);
    s.send({ jsonrpc: '2.0', id: q.msg.id, error: { code: -32603, message: 'no model' } });
    const text = assertIsError(await s.responseTo('t2'), 't2', /could not answer/);
    const t0 = Date.now();
    const again = await s.request(withToken('t3'), 5000);
    assert.ok(Date.now() - t0 < scaled(5000), `the retry waited ${Date.now() - t0} ms`);
    assert.equal(again.result && again.result._meta && again.result._meta['dev.sluice/replayed'], true, again.raw);
    assert.equal(resultText(again), text, again.raw);
    assert.equal((await waitUpstreamCalls(s, 'ask', 1)).length, 1, 'the retry reached the upstream');
  });

  for (const [label, hs] of [
    ['capabilities {}', { capabilities: {} }],
    ['sampling and roots but no elicitation', { capabilities: { sampling: {}, roots: { listChanged: true } } }],
  ]) {
    test(`a client that declared no elicitation (${label}): isError saying the question cannot be relayed, nothing asked`, async (t) => {
      const s = await start(t, { hs });
      const r = await s.request(legacyCall('n1', 'ask', { q: 1 }));
      assertIsError(r, 'n1', /cannot relay/);
      await legacySync(s);
      assert.deepEqual(requestsToClient(s), [], 'a client that cannot answer was asked');
      const calls = s.upstreamCalls('ask');
      assert.equal(calls.length, 1, JSON.stringify(calls.map((c) => c.raw)));
      assertFirstCall(calls[0], 'ask', { q: 1 });
    });
  }

  for (const [label, askParams] of [['a string', 'str'], ['an array', [1, 2]], ['null', null]]) {
    test(`a question whose params are ${label}, not an object: isError saying it cannot be relayed, nothing asked`, async (t) => {
      const s = await start(t);
      const args = { askParams };
      const r = await s.request(legacyCall('p1', 'ask', args));
      assertIsError(r, 'p1', /cannot relay/);
      await legacySync(s);
      assert.deepEqual(requestsToClient(s), [], 'the malformed question reached the client');
      const calls = s.upstreamCalls('ask');
      assert.equal(calls.length, 1, JSON.stringify(calls.map((c) => c.raw)));
      assertFirstCall(calls[0], 'ask', args);
    });
  }

  test('a 2025-06-18 client: the relayed elicitation/create has no "mode"; the round completes', async (t) => {
    const s = await start(t, { hs: { version: '2025-06-18', capabilities: { elicitation: {} } } });
    assert.equal(s.init.protocolVersion, '2025-06-18', JSON.stringify(s.init));
    s.send(legacyCall('o1', 'ask', { old: true }));
    const q = await nextRelayed(s);
    assert.equal(q.method, 'elicitation/create', q.raw);
    assert.ok(!('mode' in q.params), `2025-06-18 has no "mode": ${q.raw}`);
    const { mode, ...rest } = UP_QUESTION;
    assert.equal(mode, 'form');
    assert.deepEqual(q.params, rest, q.raw);
    const ans = answerOf('old-client');
    answer(s, q.id, ans);
    const pid = await s.upstreamPid();
    const state = `fake-upstream-state-1-${pid}`;
    assertFinal(await s.responseTo('o1'), 'o1', `answered: old-client (state ${state})`);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2, JSON.stringify(calls.map((c) => c.raw)));
    assertRetry(calls[0], calls[1], 'ask', { old: true }, { 'upstream.q': ans }, state);
  });

  test('notifications/cancelled while the relayed question is pending: no response, a late answer is ignored, sluice keeps serving', async (t) => {
    const s = await start(t);
    s.send(legacyCall('x1', 'ask', { c: 1 }));
    const q = await nextRelayed(s);
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'x1', reason: 'user gave up' } });
    await legacySync(s);
    assert.ok(s.lines.some((l) => l.msg.method === 'notifications/cancelled' && l.msg.params && l.msg.params.requestId === q.id),
      'the relayed question is withdrawn at the client');
    answer(s, q.id, answerOf('too late'));
    await legacySync(s);
    await s.noResponseTo('x1', 300);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 1, `no retry after the cancellation: ${JSON.stringify(calls.map((c) => c.raw))}`);
    assert.ok(!s.upstreamMessages().some((m) => m.method === undefined && ('result' in m || 'error' in m)), 'the late answer was passed to the upstream');
    // Still serving: a plain call and a whole new round.
    const e = await s.request(legacyCall('after', 'echo', { after: 1 }));
    assert.deepEqual(e.result && e.result.structuredContent, { echoed: { after: 1 } }, e.raw);
    s.send(legacyCall('x2', 'ask', { c: 2 }));
    const q2 = await nextRelayed(s);
    assert.notEqual(q2.id, q.id, `a new question needs a new id: ${q2.raw}`);
    answer(s, q2.id, answerOf('fresh'));
    const pid = await s.upstreamPid();
    assertFinal(await s.responseTo('x2'), 'x2', `answered: fresh (state fake-upstream-state-2-${pid})`);
    await s.noResponseTo('x1', 100);
  });

  test('a state-only round (requestState, no inputRequests): retried at once with the state, nothing asked', async (t) => {
    const s = await start(t);
    const args = { k: 'v', list: [3, 1, 2] };
    const r = await s.request(legacyCall('s1', 'shed', args));
    const pid = await s.upstreamPid();
    const state = `fake-shed-state-1-${pid}`;
    assertFinal(r, 's1', `shed done (state ${state})`);
    assert.deepEqual(requestsToClient(s), [], 'a state-only round asks the client nothing');
    await legacySync(s);
    const calls = s.upstreamCalls('shed');
    assert.equal(calls.length, 2, JSON.stringify(calls.map((c) => c.raw)));
    assertFirstCall(calls[0], 'shed', args);
    const c = calls[1];
    assertWellFormedCall(c, 'shed', args);
    assert.notDeepEqual(c.id, calls[0].id, c.raw);
    assert.equal(c.params.requestState, state, c.raw);
    // There were no questions, so there are no answers: absent or empty.
    if ('inputResponses' in c.params) assert.deepEqual(c.params.inputResponses, {}, c.raw);
  });

  test('two questions in one round: each its own sluice-u request; answered out of order; one retry with both', async (t) => {
    const s = await start(t);
    s.send(legacyCall('two', 'ask_two', { t: 2 }));
    const q1 = await nextRelayed(s);
    const q2 = await nextRelayed(s);
    assert.notEqual(q1.id, q2.id, `${q1.raw} ${q2.raw}`);
    const byMessage = Object.fromEntries([q1, q2].map((q) => [q.params.message, q]));
    assert.deepEqual(Object.keys(byMessage).sort(), ['First question?', 'Second question?'], `${q1.raw} ${q2.raw}`);
    const qa = byMessage['First question?'];
    const qb = byMessage['Second question?'];
    // Answer the second first: no retry until both are in.
    answer(s, qb.id, answerOf('B'));
    await legacySync(s);
    assert.equal(s.upstreamCalls('ask_two').length, 1, 'retried before every question was answered');
    await s.noResponseTo('two', 100);
    answer(s, qa.id, answerOf('A'));
    const pid = await s.upstreamPid();
    const state = `fake-two-state-1-${pid}`;
    assertFinal(await s.responseTo('two'), 'two', `two: A,B (state ${state})`);
    const calls = s.upstreamCalls('ask_two');
    assert.equal(calls.length, 2, JSON.stringify(calls.map((c) => c.raw)));
    assertRetry(calls[0], calls[1], 'ask_two', { t: 2 }, { 'upstream.a': answerOf('A'), 'upstream.b': answerOf('B') }, state);
  });

  test('one of two questions answered with an error: the other is withdrawn at the client before the call\'s reply', async (t) => {
    const s = await start(t);
    s.send(legacyCall('two-err', 'ask_two', { t: 3 }));
    const q1 = await nextRelayed(s);
    const q2 = await nextRelayed(s);
    s.send({ jsonrpc: '2.0', id: q1.id, error: { code: -32603, message: 'no person here' } });
    // Unconsumed lines keep their order: wait for the reply there, then look at what came first.
    const at = (pred) => s.lines.findIndex((l) => pred(l.msg));
    const end = Date.now() + deadline(LINE_DEADLINE_MS);
    while (at((m) => m.id === 'two-err') < 0 && Date.now() < end) await sleep(20);
    const cancelled = at((m) => m.method === 'notifications/cancelled' && m.params && m.params.requestId === q2.id);
    assert.ok(cancelled >= 0, `the open question ${q2.id} was not withdrawn: ${s.lines.map((l) => l.raw).join('\n')}`);
    assert.ok(cancelled < at((m) => m.id === 'two-err'), 'withdrawn before the reply (over HTTP the reply ends the stream)');
    assert.equal(at((m) => m.method === 'notifications/cancelled' && m.params && m.params.requestId === q1.id), -1,
      'the question the client answered is not cancelled');
    assertIsError(await s.responseTo('two-err'), 'two-err', /could not answer/);
    answer(s, q2.id, answerOf('late'));
    await legacySync(s);
    assert.equal(s.upstreamCalls('ask_two').length, 1, 'no retry upstream');
  });

  test('more than 8 rounds: isError after the 8th retry; 9 upstream calls, each retry with the previous round\'s state', async (t) => {
    const s = await start(t);
    const args = { forever: true };
    s.send(legacyCall('loop', 'ask_loop', args));
    const asked = [];
    let final;
    for (let i = 0; i < 20 && !final; i++) {
      const l = await s.next((m) => (m.method === 'elicitation/create' && 'id' in m) || (!('method' in m) && m.id === 'loop'), LINE_DEADLINE_MS, `question ${i + 1} or the final response`);
      if (l.msg.method) {
        assert.match(String(l.msg.id), /^sluice-u-\d+$/, l.raw);
        assert.equal(l.msg.params.message, `Round ${asked.length + 1}`, l.raw);
        asked.push(l.msg);
        answer(s, l.msg.id, answerOf(`a${asked.length}`));
      } else {
        final = { ...l.msg, raw: l.raw };
      }
    }
    assert.ok(final, 'no final response');
    assertIsError(final, 'loop');
    assert.equal(asked.length, 8, `the client was asked ${asked.length} rounds: ${JSON.stringify(asked.map((m) => m.params.message))}`);
    assert.equal(new Set(asked.map((m) => m.id)).size, 8, 'each question needs its own id');
    await legacySync(s);
    const calls = s.upstreamCalls('ask_loop');
    assert.equal(calls.length, 9, `1 call and 8 retries: ${JSON.stringify(calls.map((c) => c.raw)).slice(0, 3000)}`);
    const pid = await s.upstreamPid();
    assertFirstCall(calls[0], 'ask_loop', args);
    for (let k = 1; k <= 8; k++) {
      assertRetry(calls[k - 1], calls[k], 'ask_loop', args, { 'loop.q': answerOf(`a${k}`) }, `fake-loop-state-${k}-${pid}`);
    }
    assert.equal(new Set(calls.map((c) => JSON.stringify(c.id))).size, 9, 'each retry needs a new upstream id');
    assert.deepEqual(requestsToClient(s), [], 'a 9th question was asked');
    await s.noResponseTo('loop', 100);
  });

  test('the client disconnects while the relayed question is pending: exit 0, no retry, the upstream is gone', async (t) => {
    const s = await start(t);
    s.send(legacyCall('eof', 'ask', { bye: 1 }));
    await nextRelayed(s);
    const pid = await s.upstreamPid();
    await waitUpstreamCalls(s, 'ask', 1);
    const { code, signal } = await s.closeStdin(8000);
    assert.equal(signal, null, s.stderr);
    assert.equal(code, 0, s.stderr);
    assert.ok(await waitPidGone(pid, 3000), `the upstream (pid ${pid}) outlived sluice`);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 1, `a retry reached the upstream after the client left: ${JSON.stringify(calls.map((c) => c.raw))}`);
    s.assertClean();
  });
});

// Over HTTP a legacy session ends without ending sluice, and a retry with the token may come on
// another session: it gets the call's outcome, or is told at once that it is unknown.
describe('legacy client over HTTP, modern upstream: the client leaves during an approved call', suiteOptions(), () => {
  const POLICY = 'version: 1\ntools:\n  ask:\n    action: confirm\n    fallback: token\n  shed:\n    action: confirm\n    fallback: token\n'
    + '  progress_forever:\n    action: confirm\n    fallback: token\n';
  const ARGS = { askMethod: 'sampling/createMessage', askParams: { messages: [], maxTokens: 1 } };
  const TOKEN = 'dev.sluice/token';

  async function setup(t, fake = {}, tool = 'ask', args = ARGS, { timeout = 30, audit } = {}) {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { policy: writePolicy(dir, POLICY), era: 'modern', dir, fake, audit, args: ['--upstream-timeout', String(timeout)] });
    const a = new LegacyHttpSession(s.target);
    await a.initialize({ capabilities: { sampling: {} } }); // cannot ask a person: the token
    const refused = await a.rpc(legacyToolCall('t1', tool, args));
    const tok = refused.msg && refused.msg.result && refused.msg.result._meta && refused.msg.result._meta[TOKEN];
    assert.equal(typeof tok, 'string', refused.raw);
    return { s, a, tok, call: (id) => legacyToolCall(id, tool, args, { _meta: { [TOKEN]: tok } }) };
  }

  async function retryElsewhere(s, call, isError = true) {
    const b = new LegacyHttpSession(s.target);
    await b.initialize({ capabilities: { sampling: {} } });
    const t0 = Date.now();
    const r = await b.rpc(call('t3'), { timeoutMs: 5000 });
    assert.ok(Date.now() - t0 < scaled(5000), r.raw);
    assert.ok(r.msg && r.msg.result && r.msg.result._meta && r.msg.result._meta['dev.sluice/replayed'] === true, r.raw);
    assert.equal(r.msg.result.isError === true, isError, r.raw);
    return resultText(r.msg);
  }

  test('it leaves while the server\'s relayed question is open: the call is cancelled, and a retry is told at once its outcome is unknown', async (t) => {
    const { s, a, call } = await setup(t);
    const reply = await a.post(call('t2'));
    const q = await reply.nextEvent((m) => m && m.method === 'sampling/createMessage', undefined, 'the relayed question');
    assert.match(String(q.id), /^sluice-u-\d+$/);
    await a.remove(); // the session ends with the question unanswered
    assert.match(await retryElsewhere(s, call), /the client went away while the server asked it something\)\. Whether it ran is unknown/);
    assert.equal(s.upstreamCalls('ask').length, 1, 'the retry reached the upstream');
  });

  // The question went out on the call's POST stream, which is never sent again: once that stream
  // closes nobody can answer it. Before, the call, its 3 MiB of arguments and the session (never
  // idle, so never expired) stayed until DELETE, and one principal could fill its session cap
  // with them and keep it full with no connection open.
  test('its POST stream closes while the server\'s question is open: the call ends, and the session expires idle', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { policy: writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\n'), era: 'modern', dir,
      args: ['--session-idle', '1', '--max-sessions-per-principal', '1', '--principal', 'header:X-User'] });
    const hdr = { 'X-User': 'mallory' };
    const a = new LegacyHttpSession(s.target, { headers: hdr });
    await a.initialize();
    const reply = await a.post(legacyToolCall('t1', 'ask', { pad: 'x'.repeat(1 << 20) }));
    await reply.nextEvent((m) => m && m.method === 'elicitation/create', undefined, 'the relayed question');
    reply.abort(); // no DELETE, no answer
    await waitLog(s, /session [0-9a-f]+ expired after 1 s without use/, 8000);
    assert.match(s.stderr, /stream for a call closed while the server's question to it was open/);
    const ping = await a.rpc({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(ping.status, 404, `the session outlived --session-idle: ${ping.status} ${ping.raw}`);
    const b = new LegacyHttpSession(s.target, { headers: hdr });
    await b.initialize(); // its principal's one session is free again
    assert.equal(s.upstreamCalls('ask').length, 1, 'a retry reached the upstream');
  });

  // The approved call runs on after its client left; the server's question then has nobody to
  // ask. Before, it was relayed to the gone session and waited for an answer until sluice
  // stopped: the call and its session were never freed, and a retry polled the store until
  // --upstream-timeout.
  test('it leaves while the approved call runs, and the server then asks: the call ends, and a retry is told at once it did not complete', async (t) => {
    const { s, a, call } = await setup(t, { FAKE_SLOW_MS: scaled(1500) });
    const pending = a.post(call('t2')).catch(() => null); // its head comes with the reply
    const end = Date.now() + deadline(5000);
    while (s.upstreamCalls('ask').length === 0 && Date.now() < end) await sleep(20);
    assert.equal(s.upstreamCalls('ask').length, 1, 'the approved call reached the upstream');
    await a.remove(); // before the server's question comes (FAKE_SLOW_MS)
    assert.match(await retryElsewhere(s, call), /asked a follow-up question after the client went away; the call did not complete/);
    await pending;
    assert.equal(s.upstreamCalls('ask').length, 1, 'the retry reached the upstream');
  });

  // A round with a state and no question needs nobody to answer it: the approved call goes on.
  test('it leaves while the approved call runs, and the server sheds a state-only round: the call finishes, and a retry gets its result', async (t) => {
    const { s, a, call } = await setup(t, { FAKE_SLOW_MS: scaled(1000) }, 'shed', {});
    const pending = a.post(call('t2')).catch(() => null);
    const end = Date.now() + deadline(5000);
    while (s.upstreamCalls('shed').length === 0 && Date.now() < end) await sleep(20);
    assert.equal(s.upstreamCalls('shed').length, 1, 'the approved call reached the upstream');
    await a.remove(); // before the server's round comes (FAKE_SLOW_MS)
    assert.match(await retryElsewhere(s, call, false), /^shed done \(state fake-shed-state-/);
    await pending;
    assert.equal(s.upstreamCalls('shed').length, 2, 'the call and its state-only retry, and no more');
  });

  // A server that keeps reporting progress is never silent, so the silence bound
  // (--upstream-timeout) never ends the call, and no round parks it with a timer of its own.
  // Before, the call, its session and its upstream request lived for ever once its client left.
  // It ends --upstream-timeout after its client left: cancelled upstream and journaled so.
  test('it leaves while the approved call runs, and the server reports progress for ever: cancelled after --upstream-timeout', async (t) => {
    const audit = `${tmpDir(t)}/audit.jsonl`;
    const { s, a, call } = await setup(t, {}, 'progress_forever', { gapMs: 100 }, { timeout: 2, audit });
    const pending = a.post(call('t2')).catch(() => null);
    const end = Date.now() + deadline(5000);
    while (s.upstreamCalls('progress_forever').length === 0 && Date.now() < end) await sleep(20);
    const calls = s.upstreamCalls('progress_forever');
    assert.equal(calls.length, 1, 'the approved call reached the upstream');
    await a.remove();
    const cancelled = () => s.upstreamMessages().some((m) => m.method === 'notifications/cancelled'
      && m.params && JSON.stringify(m.params.requestId) === JSON.stringify(calls[0].id));
    const until = Date.now() + deadline(6000);
    while (!cancelled() && Date.now() < until) await sleep(50);
    assert.ok(cancelled(), 'the call was not cancelled upstream after its client left');
    await waitLog(s, /an approved call whose client left still ran 2 s later \(--upstream-timeout\): cancelled upstream/);
    assert.match(await retryElsewhere(s, call), /Whether it ran is unknown/);
    await pending;
    const rec = readJsonLines(audit).filter((l) => !l.event && l.tool === 'progress_forever');
    assert.ok(rec.some((l) => l.upstream === 'cancelled'), JSON.stringify(rec));
    assert.equal(s.upstreamCalls('progress_forever').length, 1, 'the retry reached the upstream');
  });
});
