// store_asks.test.mjs: approval fatigue shared by replicas through Redis (--store redis://...).
// Two replicas, one Redis, a policy with max_open_confirmations 2 and max_questions_per_minute 3:
//   - an identical call at A and then at B gets the same question (the same requestState);
//     answered at B it runs once; once answered, or once expired, the same call is asked anew;
//   - open questions are bounded across A and B together, and an answer at one replica frees a
//     place at the other;
//   - the per-minute rate counts the questions of both replicas;
//   - a legacy client's held call withdrawn at one replica (cancelled) no longer blocks the same
//     call at the other;
//   - Redis gone: a new question is refused (fail closed), not asked without its limits;
//   - a question whose reply came too late (refused, nobody asked) but whose script ran is
//     closed once sluice is connected again: it holds no place under max_open;
//   - an accept whose spend reply came too late (refused, not run) does not leave its call
//     "running": a retry is refused at once instead of waiting --upstream-timeout.
// Every "runs" assertion counts what the replicas' upstreams executed.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, FAKE_UPSTREAM, assertAsked, assertInvalidState, confirmRetry, resultText, scaled, sleep,
  suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';
import {
  LegacyHttpSession, asResponse, httpSync, legacyToolCall, modernCall, startHttpSluice, waitLog,
} from './http_lib.mjs';
import { redisCli, redisSuiteOptions, slowRelay, startRedis } from './redis_lib.mjs';

const POLICY = 'version: 1\ndefaults:\n  max_open_confirmations: 2\n  max_questions_per_minute: 3\n' +
  'tools:\n  write_file:\n    action: confirm\n  echo:\n    action: allow\n';

/** A replica: same key, policy and upstream command line; its own fake upstream and log. */
async function replica(t, dir, tag, store, extra = [], policy = POLICY) {
  const key = path.join(dir, 'state.key');
  if (!fs.existsSync(key)) fs.writeFileSync(key, crypto.randomBytes(32), { mode: 0o600 });
  const s = await startHttpSluice(t, {
    policy: writePolicy(dir, policy, `policy-${tag}.yaml`), /* replicas start at once: one file each */
    dir,
    tag,
    era: 'modern',
    upstream: [process.execPath, FAKE_UPSTREAM, 'FAKE_ERA=modern'],
    args: ['--state-key-file', key, '--store', store, ...extra],
  });
  await waitLog(s, /store: connected to redis/, 10000);
  return s;
}

async function pair(t) {
  const redis = await startRedis(t);
  const dir = tmpDir(t);
  const [a, b] = await Promise.all([replica(t, dir, 'a', redis.url), replica(t, dir, 'b', redis.url)]);
  return { redis, a, b };
}

async function runs(replicas) {
  let n = 0;
  for (const s of replicas) {
    await httpSync(s);
    n += s.upstreamCalls('write_file').length;
  }
  return n;
}

const call = (s, id, args) => modernCall(s.target, toolCall(id, 'write_file', args), { status: 200 });
const answer = (s, id, args, state, ans) =>
  modernCall(s.target, confirmRetry(id, 'write_file', args, state, ans), { status: 200 });

function assertRefused(r, re) {
  assert.ok(r.result && r.result.isError, `expected a refusal, got ${r.raw}`);
  assert.match(resultText(r), re);
}

/**
 * The first message of a legacy POST's reply that matches pred: a question comes on an event
 * stream, a refusal may come as plain JSON (on a slow machine the withdrawal at A may not have
 * reached Redis when B's first retry arrives, and that retry is refused at once).
 */
async function firstMessage(r, pred) {
  if (!/text\/event-stream/.test(r.contentType || '')) {
    await r.complete();
    return r.json();
  }
  return r.nextEvent(pred);
}

describe('Redis: approval fatigue shared by replicas', redisSuiteOptions(suiteOptions()), () => {
  test('an identical call at A and then at B shares the question; answered at B it runs once', async (t) => {
    const { a, b } = await pair(t);
    const args = { path: '/srv/same', content: '1' };
    const qa = assertAsked(await call(a, 1, args));
    const qb = assertAsked(await call(b, 2, { content: '1', path: '/srv/same' }));
    assert.equal(qb.state, qa.state, 'B hands out the question A asked, not a second one');
    assert.equal(qb.message, qa.message);
    const r = await answer(b, 3, args, qb.state, ACCEPT);
    assert.ok(r.result && !r.result.isError, r.raw);
    assert.equal(await runs([a, b]), 1, 'one question, one run');
    assert.equal(b.upstreamCalls('write_file').length, 1, 'B ran it');
    // Answered: no longer open, so the same call is asked anew (at either replica).
    const again = assertAsked(await call(a, 4, args));
    assert.notEqual(again.state, qa.state, 'an answered question is not handed out again');
    assert.equal(await runs([a, b]), 1);
  });

  test('open questions are bounded across A and B together', async (t) => {
    const { a, b } = await pair(t);
    const qa = assertAsked(await call(a, 1, { path: '/srv/a', content: '1' }));
    assertAsked(await call(b, 2, { path: '/srv/b', content: '1' }));
    assertRefused(await call(a, 3, { path: '/srv/c', content: '1' }), /max_open_confirmations/);
    assertRefused(await call(b, 4, { path: '/srv/d', content: '1' }), /max_open_confirmations/);
    // A's question declined at B: a place is free again, at A as at B.
    assertRefused(await answer(b, 5, { path: '/srv/a', content: '1' }, qa.state, { action: 'decline' }), /declined/);
    assertAsked(await call(a, 6, { path: '/srv/c', content: '1' }));
    assert.equal(await runs([a, b]), 0, 'nothing ran');
  });

  test('an expired question holds no place; the asked set outlives it while a later one is open', async (t) => {
    // A asks with a long confirm_ttl, B (another policy, as in a rolling change) with a short
    // one: B's question expires while A's keeps the asked set alive. max_questions_per_minute
    // is raised, so that the set is never trimmed here: an expired question must hold no place
    // by its score alone.
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const short = Math.max(2, Math.round(scaled(2000) / 1000));
    const policy = (ttl) => POLICY.replace('per_minute: 3', 'per_minute: 100')
      .replace('defaults:\n', `defaults:\n  confirm_ttl: ${ttl}\n`);
    const [a, b] = await Promise.all([
      replica(t, dir, 'a', redis.url, [], policy(600)),
      replica(t, dir, 'b', redis.url, [], policy(short)),
    ]);
    assertAsked(await call(a, 1, { path: '/srv/long', content: '1' }));
    assertAsked(await call(b, 2, { path: '/srv/short', content: '1' }));
    // B's short question did not cut short the life A's long one needs.
    const asked = (await redisCli(redis.port, 'KEYS', 'sluice:ask:*:asked')).map(String);
    assert.equal(asked.length, 1, asked.join(' '));
    const life = Number(await redisCli(redis.port, 'TTL', asked[0]));
    assert.ok(life >= 590, `the asked set lives as long as A's question (${life} s)`);
    assertRefused(await call(b, 3, { path: '/srv/next', content: '1' }), /max_open_confirmations/);
    await sleep(short * 1000 + 1500);
    // B's question expired: its place is free, at B as at A.
    assertAsked(await call(b, 4, { path: '/srv/next', content: '1' }));
    // A's question is still open: with B's new one the set is full again.
    assertRefused(await call(a, 5, { path: '/srv/last', content: '1' }), /max_open_confirmations/);
    assert.equal(await runs([a, b]), 0, 'nothing ran');
  });

  test('a same key that outlives its question hands out nothing: the call is asked anew, and shares the new one', async (t) => {
    // The asked set is trimmed only at its limit, so an expired question's nonce stays in it while
    // the set lives (a later question with a longer confirm_ttl keeps it); its same key lives
    // about as long as the question (Redis's clock, within a second). Both kept alive here
    // (PERSIST) past the question's expiry, the same key must not hand out the expired question.
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const short = Math.max(2, Math.round(scaled(2000) / 1000));
    const a = await replica(t, dir, 'a', redis.url, [], POLICY.replace('defaults:\n', `defaults:\n  confirm_ttl: ${short}\n`));
    const args = { path: '/srv/stale', content: '1' };
    const q = assertAsked(await call(a, 1, args));
    const same = (await redisCli(redis.port, 'KEYS', 'sluice:ask:*:same:*')).map(String);
    assert.equal(same.length, 1, same.join(' '));
    assert.equal(Number(await redisCli(redis.port, 'PERSIST', same[0])), 1);
    const set = same[0].replace(/:same:[0-9a-f]+$/, ':asked');
    assert.equal(Number(await redisCli(redis.port, 'PERSIST', set)), 1);
    await sleep(short * 1000 + 1500);
    const again = assertAsked(await call(a, 2, args));
    assert.notEqual(again.state, q.state, 'an expired question is not handed out again');
    // The new question took the same key's place: the next identical call shares it.
    const third = assertAsked(await call(a, 3, args));
    assert.equal(third.state, again.state, 'the identical call gets the open question');
    assert.equal(await runs([a]), 0, 'nothing ran');
  });

  test('new questions per minute are counted across A and B, answered or not', async (t) => {
    const { a, b } = await pair(t);
    const at = [a, b, a];
    for (let i = 0; i < 3; i++) {
      const args = { path: `/srv/p${i}`, content: '1' };
      const q = assertAsked(await call(at[i], `q${i}`, args));
      // declined at the other replica, so max_open never binds
      assertRefused(await answer(at[i] === a ? b : a, `d${i}`, args, q.state, { action: 'decline' }), /declined/);
    }
    assertRefused(await call(b, 'q3', { path: '/srv/p3', content: '1' }), /max_questions_per_minute/);
    assertRefused(await call(a, 'q4', { path: '/srv/p4', content: '1' }), /max_questions_per_minute/);
    assert.equal(await runs([a, b]), 0, 'nothing ran');
  });

  test('a held call cancelled at A no longer blocks the same call at B', async (t) => {
    const { a, b } = await pair(t);
    const args = { path: '/srv/held', content: '1' };
    const la = new LegacyHttpSession(a.target);
    await la.initialize();
    const held = await la.post(legacyToolCall('c1', 'write_file', args));
    await held.nextEvent((m) => m && m.method === 'elicitation/create');
    const lb = new LegacyHttpSession(b.target);
    await lb.initialize();
    const same = asResponse(await lb.rpc(legacyToolCall('c2', 'write_file', args)));
    assertRefused(same, /already waiting/);
    const n = await la.notify('notifications/cancelled', { requestId: 'c1', reason: 'test' });
    assert.equal(n.status, 202, n.text);
    // The withdrawal is fire and forget: it reaches Redis shortly after the notification.
    const deadline = Date.now() + scaled(5000);
    let asked = false;
    for (let i = 0; !asked && Date.now() < deadline; i++) {
      const r = await lb.post(legacyToolCall(`c3-${i}`, 'write_file', args));
      const m = await firstMessage(r, (x) => x && (x.method === 'elicitation/create' || x.id === `c3-${i}`));
      asked = m.method === 'elicitation/create';
      if (!asked) await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(asked, 'B asks once A withdrew the question');
    // A's withdrawn question holds no place either: B has one open, so a second one is asked.
    const other = await lb.post(legacyToolCall('c4', 'write_file', { path: '/srv/other', content: '1' }));
    const m = await firstMessage(other, (x) => x && (x.method === 'elicitation/create' || x.id === 'c4'));
    assert.equal(m.method, 'elicitation/create', `asked, not refused: ${JSON.stringify(m)}`);
    assert.equal(await runs([a, b]), 0);
  });
});

describe('Redis: approval fatigue when the store is gone', redisSuiteOptions(suiteOptions()), () => {
  test('Redis killed: a new question is refused, not asked without its limits', async (t) => {
    const redis = await startRedis(t);
    const a = await replica(t, tmpDir(t), 'a', redis.url, ['--store-timeout', '500']);
    assertAsked(await call(a, 1, { path: '/srv/before', content: '1' }));
    await redis.kill();
    const r = await call(a, 2, { path: '/srv/during', content: '1' });
    assertRefused(r, /cannot reach its store; the call was not run/);
    assert.equal(await runs([a]), 0);
  });
});

describe('Redis: a question whose reply was lost', redisSuiteOptions(suiteOptions()), () => {
  test('recorded though refused: closed when sluice is back, holding no place under max_open', async (t) => {
    // (Without the close, new1 and the lost one fill max_open 2, and new2 is refused.)
    const redis = await startRedis(t);
    const relay = await slowRelay(t, redis.port);
    const a = await replica(t, tmpDir(t), 'a', `redis://127.0.0.1:${relay.port}`, ['--store-timeout', '400']);
    const openCount = async () => {
      const keys = (await redisCli(redis.port, 'KEYS', 'sluice:ask:*:asked')).map(String);
      let n = 0; // open questions score under zero (store_redis.c)
      for (const k of keys) n += Number(await redisCli(redis.port, 'ZCOUNT', k, '-inf', '(0'));
      return n;
    };
    // A question whose reply comes after --store-timeout: refused, but its script ran, so
    // Redis has it open (one of the two places max_open gives).
    relay.setDelay(1000);
    assertRefused(await call(a, 'lost', { path: '/srv/lost', content: '1' }), /cannot reach its store; the call was not run/);
    relay.setDelay(0);
    // Connected again: it is closed, and two new questions are asked.
    const deadline = Date.now() + scaled(10000);
    let open = await openCount();
    while (open !== 0 && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 100));
      open = await openCount();
    }
    assert.equal(open, 0, 'the question nobody was asked is closed in Redis');
    assertAsked(await call(a, 'new1', { path: '/srv/new1', content: '1' }));
    assertAsked(await call(a, 'new2', { path: '/srv/new2', content: '1' }));
    assert.equal(await runs([a]), 0);
  });

  test('an accept whose spend reply was lost: not run, and its retry is refused at once, not held', async (t) => {
    const redis = await startRedis(t);
    const relay = await slowRelay(t, redis.port);
    const a = await replica(t, tmpDir(t), 'a', `redis://127.0.0.1:${relay.port}`, ['--store-timeout', '400', '--upstream-timeout', '20']);
    const args = { path: '/srv/spent', content: '1' };
    const q = assertAsked(await call(a, 'q', args));
    relay.setDelay(1000);
    assertRefused(await answer(a, 'lost', args, q.state, ACCEPT), /cannot reach its store; the call was not run/);
    relay.setDelay(0);
    // The retry, once sluice is connected again (a refusal for the store itself meanwhile):
    // without the release it would wait the whole --upstream-timeout for a run that never began.
    let retry;
    let took = 0;
    const deadline = Date.now() + scaled(10000);
    for (let i = 0; Date.now() < deadline; i++) {
      const t0 = Date.now();
      retry = await modernCall(a.target, confirmRetry(`again-${i}`, 'write_file', args, q.state, ACCEPT));
      took = Date.now() - t0;
      if (!(retry.result && /cannot reach its store/.test(resultText(retry)))) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assertInvalidState(retry);
    assert.ok(took < 5000, `the retry was answered at once, not after --upstream-timeout (${took} ms)`);
    assert.equal(await runs([a]), 0, 'never ran');
  });
});

describe('Redis: the keys of approval fatigue', redisSuiteOptions(suiteOptions()), () => {
  test('keys are per principal hash, under the prefix, and expire', async (t) => {
    const { redis, a } = await pair(t);
    assertAsked(await call(a, 1, { path: '/srv/k', content: '1' }));
    const keys = (await redisCli(redis.port, 'KEYS', 'sluice:ask:*')).map(String).sort();
    assert.equal(keys.length, 2, keys.join(' '));
    for (const k of keys) {
      assert.match(k, /^sluice:ask:\{[0-9a-f]{32}\}:(asked|same:[0-9a-f]{32})$/);
      const ttl = Number(await redisCli(redis.port, 'TTL', k));
      assert.ok(ttl > 0, `${k} has a TTL (${ttl})`);
    }
  });
});
