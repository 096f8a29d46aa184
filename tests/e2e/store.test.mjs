// store.test.mjs: the store of spent nonces and kept outcomes (--store). One approval runs at
// most once, and a client that lost the reply and retries the same accepted round gets the first
// run's result (marked _meta["dev.sluice/replayed"]) instead of a second run:
//   - the memory store, in one process: a client that drops its connection after sending the
//     accepted round two; the call still runs once, and the retry gets its result;
//   - Redis shared by two replicas: round one at A, round two at B runs once; the same round two
//     again at A and at B gets the kept result; the same round two sent to both at once runs once;
//     a drop at one replica and the retry at the other; Redis killed (gated calls refused, allowed
//     calls pass) and back; Redis restarted empty, or flushed while connected (states minted
//     before are refused); its scripts flushed (a spend needs none; the question that meets
//     NOSCRIPT is refused, the next connection loads them); Redis that stalls (refused within
//     --store-timeout).
// Every assertion on "runs once" counts what the upstreams executed (each replica has its own).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, FAKE_UPSTREAM, assertAsked, assertInvalidState, assertReplayed, confirmRetry, deadline, policyPath,
  resultText, runSluice, scaled, sleep, suiteOptions, tmpDir, toolCall,
} from './lib.mjs';
import { httpSync, modernCall, modernHeaders, startHttpSluice, waitLog } from './http_lib.mjs';
import { redisCli, redisSuiteOptions, respDecode, slowRelay, startRedis, stallRelay } from './redis_lib.mjs';

const GATE = policyPath('gate.yaml');
const SLOW_MS = 600; // the fake upstream's delay for every call: long enough to drop or race

function keyFile(dir) {
  const f = path.join(dir, 'state.key');
  if (!fs.existsSync(f)) fs.writeFileSync(f, crypto.randomBytes(32), { mode: 0o600 });
  return f;
}

/** A replica: same key, same upstream command line, its own fake upstream (log via env). */
async function replica(t, dir, tag, store, extra = []) {
  const s = await startHttpSluice(t, {
    policy: GATE,
    dir,
    tag,
    era: 'modern',
    fake: { FAKE_SLOW_MS: String(SLOW_MS) },
    upstream: [process.execPath, FAKE_UPSTREAM, 'FAKE_ERA=modern'],
    args: ['--state-key-file', keyFile(dir), ...(store ? ['--store', store] : []), ...extra],
  });
  if (store && store.startsWith('redis:')) await waitLog(s, /store: connected to redis/, 10000);
  return s;
}

async function runs(replicas, name) {
  let n = 0;
  for (const s of replicas) {
    await httpSync(s);
    n += s.upstreamCalls(name).length;
  }
  return n;
}

/** POSTs msg and closes the connection after the body is sent, before any reply. */
function postAndDrop(target, msg, afterMs = 100) {
  const body = JSON.stringify(msg);
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1', port: target.port, path: '/mcp', method: 'POST', agent: false,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
                 'Content-Length': Buffer.byteLength(body), ...modernHeaders(msg) },
    });
    req.on('error', () => resolve());
    req.on('response', (res) => { res.resume(); resolve(); });
    req.end(body, () => setTimeout(() => { req.destroy(); resolve(); }, afterMs));
  });
}

async function ask(s, id, args) {
  return assertAsked(await modernCall(s.target, toolCall(id, 'write_file', args), { status: 200 }));
}

describe('the memory store: retries in one process', suiteOptions(), () => {
  test('the client drops the connection after an accepted round two: the call runs once, and the retry gets its result', async (t) => {
    const dir = tmpDir(t);
    const s = await replica(t, dir, 'm', null);
    const args = { path: '/srv/dropped', content: 'once' };
    const q = await ask(s, 1, args);
    await postAndDrop(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    // The retry arrives while the first run is still going: it waits for its outcome.
    const r = await modernCall(s.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assertReplayed(r);
    assert.match(resultText(r), /wrote/);
    assert.equal(await runs([s], 'write_file'), 1, 'the approved call ran once');
    // And again, after it finished.
    assertReplayed(await modernCall(s.target, confirmRetry(4, 'write_file', args, q.state, ACCEPT)), r);
    assert.equal(await runs([s], 'write_file'), 1);
  });
});

describe('the memory store: outcomes too large to keep', suiteOptions(), () => {
  test('a result over --max-stored-result: the retry is told the call ran and its result was not kept; no second run', async (t) => {
    const dir = tmpDir(t);
    const s = await replica(t, dir, 'm', null, ['--max-stored-result', '16']);
    const args = { path: '/srv/big', content: 'a result longer than sixteen bytes' };
    const q = await ask(s, 1, args);
    const r = await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    const again = await modernCall(s.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(again.result && again.result.isError, again.raw);
    assert.match(resultText(again), /ran once already; its result was too large/);
    assert.equal(await runs([s], 'write_file'), 1);
  });
});

describe('Redis: replicas that share the store', redisSuiteOptions(suiteOptions()), () => {
  test('round one at A, round two at B runs once; again at A and at B gets the kept result', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const [a, b] = await Promise.all([replica(t, dir, 'a', redis.url), replica(t, dir, 'b', redis.url)]);
    const args = { path: '/srv/shared', content: 'A to B' };
    const q = await ask(a, 1, args);
    const r = await modernCall(b.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError && !(r.result._meta && r.result._meta['dev.sluice/replayed']), r.raw);
    assert.equal(await runs([a, b], 'write_file'), 1);
    assert.equal(b.upstreamCalls('write_file').length, 1, 'B ran it');
    assertReplayed(await modernCall(a.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT)), r);
    assertReplayed(await modernCall(b.target, confirmRetry(4, 'write_file', args, q.state, ACCEPT)), r);
    // A decline or other arguments on the spent state: refused, as a replay.
    assertInvalidState(await modernCall(a.target, confirmRetry(5, 'write_file', args, q.state, { action: 'decline' })));
    const other = await modernCall(a.target, confirmRetry(6, 'write_file', { ...args, content: 'other' }, q.state, ACCEPT));
    assert.ok(other.error || (other.result && other.result.isError), other.raw);
    assert.equal(await runs([a, b], 'write_file'), 1, 'still one run');
  });

  // A replica whose clock is s seconds behind the spender's takes the state until its expiry
  // plus s, by the spender's clock: the spent nonce must be kept at least that long, or the same
  // accept runs again there. sluice assumes replicas agree within 300 s (SEAL_CLOCK_SKEW), so a
  // shared store keeps it 300 s past the expiry whatever --result-retention says (here 0).
  test('--result-retention 0: the spent nonce and its outcome still outlive the state by the 300 s clocks may differ', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const a = await replica(t, dir, 'a', redis.url, ['--result-retention', '0']);
    const args = { path: '/srv/skew', content: 'once' };
    const q = await ask(a, 1, args);
    const r = await modernCall(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    const keys = (await redisCli(redis.port, 'KEYS', 'sluice:nonce:*')).map(String);
    assert.equal(keys.length, 1, keys.join(' '));
    // The reply reaches the client while the outcome's SET may still be on its way to Redis.
    const end = Date.now() + deadline(5000);
    let rec = String(await redisCli(redis.port, 'GET', keys[0]));
    while (!rec.startsWith('D') && Date.now() < end) {
      await new Promise((res) => setTimeout(res, 20));
      rec = String(await redisCli(redis.port, 'GET', keys[0]));
    }
    assert.match(rec, /^D/, 'the outcome is kept');
    const ttl = Number(await redisCli(redis.port, 'TTL', keys[0]));
    // confirm_ttl is 120 (gate.yaml): 120 + 300 less the seconds this test took so far.
    assert.ok(ttl > 400 && ttl <= 420, `the record lives ${ttl} s`);
  });

  test('the same round two sent to both replicas at once runs once, and both get the result', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const [a, b] = await Promise.all([replica(t, dir, 'a', redis.url), replica(t, dir, 'b', redis.url)]);
    const args = { path: '/srv/race', content: 'both' };
    const q = await ask(a, 1, args);
    const [ra, rb] = await Promise.all([
      modernCall(a.target, confirmRetry('a', 'write_file', args, q.state, ACCEPT), { status: 200 }),
      modernCall(b.target, confirmRetry('b', 'write_file', args, q.state, ACCEPT), { status: 200 }),
    ]);
    const replayed = [ra, rb].filter((r) => r.result && r.result._meta && r.result._meta['dev.sluice/replayed']);
    assert.equal(replayed.length, 1, `one runs, the other waits for its result: ${ra.raw} / ${rb.raw}`);
    assertReplayed(replayed[0], replayed[0] === ra ? rb : ra);
    assert.equal(await runs([a, b], 'write_file'), 1);
  });

  test('the client drops after an accepted round two at A; the retry at B gets the result', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const [a, b] = await Promise.all([replica(t, dir, 'a', redis.url), replica(t, dir, 'b', redis.url)]);
    const args = { path: '/srv/drop', content: 'x' };
    const q = await ask(a, 1, args);
    await postAndDrop(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    // A spent the state and runs the call before B is asked: a fixed head start alone can lose
    // the race to B on a loaded machine, and then B runs it.
    const until = Date.now() + deadline(5000);
    while (a.upstreamCalls('write_file').length === 0 && Date.now() < until) await sleep(20);
    const r = await modernCall(b.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assertReplayed(r);
    assert.equal(await runs([a, b], 'write_file'), 1);
    assert.equal(a.upstreamCalls('write_file').length, 1, 'A ran it although its client left');
  });

  test('Redis killed: gated calls are refused, allowed calls pass; Redis back: gated calls work', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const a = await replica(t, dir, 'a', redis.url, ['--store-timeout', '500']);
    const args = { path: '/srv/outage', content: 'x' };
    const q = await ask(a, 1, args);
    await redis.kill();
    const r = await modernCall(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /cannot reach its store; the call was not run/);
    const allowed = await modernCall(a.target, toolCall(3, 'read_file', { path: '/srv/outage' }), { status: 200 });
    assert.doesNotMatch(allowed.raw, /store/, 'an allowed call does not need the store');
    await httpSync(a);
    assert.equal(a.upstreamCalls('read_file').length, 1, 'the allowed call reached the upstream');
    assert.equal(await runs([a], 'write_file'), 0);
    await waitLog(a, /store unreachable/, 5000);
    const metrics = await (await fetch(`http://127.0.0.1:${a.port}/metrics`)).text();
    assert.match(metrics, /^sluice_store_up 0$/m, metrics);
    assert.match(metrics, /^sluice_store_errors_total [1-9]/m, metrics);
    const mark = a.stderr.length;
    await redis.restart({ empty: true });
    await waitLog(a, /store: connected to redis/, 10000, mark);
    const q2 = await ask(a, 4, args);
    const ok = await modernCall(a.target, confirmRetry(5, 'write_file', args, q2.state, ACCEPT), { status: 200 });
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    assert.equal(await runs([a], 'write_file'), 1);
  });

  // sluice sends its scripts by hash (EVALSHA), loaded by each connection's setup. A SCRIPT
  // FLUSH makes Redis answer NOSCRIPT. A spend is plain commands (store_redis.c), so an accepted
  // round two still runs, once; the question that meets NOSCRIPT is refused, never asked
  // without its limits; the connection is made again, which loads the scripts, and the next
  // rounds work.
  test('SCRIPT FLUSH: a spend needs no script; the question that meets NOSCRIPT is refused; after the reconnect rounds work', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const a = await replica(t, dir, 'a', redis.url);
    const args = { path: '/srv/flush', content: 'x' };
    const q = await ask(a, 1, args);
    await redisCli(redis.port, 'SCRIPT', 'FLUSH');
    const mark = a.stderr.length;
    const ran = await modernCall(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(ran.result && !ran.result.isError, ran.raw);
    assert.equal(await runs([a], 'write_file'), 1);
    const r = await modernCall(a.target, toolCall(3, 'write_file', args), { status: 200 });
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /cannot reach its store; the call was not run/);
    await waitLog(a, /NOSCRIPT/, 5000, mark);
    await waitLog(a, /store: connected to redis/, 10000, mark);
    const q2 = await ask(a, 4, args);
    const ok = await modernCall(a.target, confirmRetry(5, 'write_file', args, q2.state, ACCEPT), { status: 200 });
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    assert.equal(await runs([a], 'write_file'), 2);
  });

  // FLUSHALL while connected: the connection stays, and the first spend after it finds no
  // epoch key. It is refused (store-reset) and begins a new epoch, as a setup would; states
  // minted before stay refused, new rounds work.
  test('FLUSHALL: the next spend is refused (store-reset) and begins a new epoch; new rounds work', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const a = await replica(t, dir, 'a', redis.url);
    const args = { path: '/srv/flushall', content: 'x' };
    const q = await ask(a, 1, args);
    await redisCli(redis.port, 'FLUSHALL');
    const r = await modernCall(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /lost its records/);
    assert.equal(await runs([a], 'write_file'), 0);
    const epoch = async () => String(await redisCli(redis.port, 'GET', 'sluice:epoch'));
    const until = Date.now() + scaled(5000);
    while (!/^[0-9a-f]{32}$/.test(await epoch()) && Date.now() < until) await sleep(50);
    assert.match(await epoch(), /^[0-9a-f]{32}$/);
    const again = await modernCall(a.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.match(resultText(again), /lost its records/);
    const q2 = await ask(a, 4, args);
    const ok = await modernCall(a.target, confirmRetry(5, 'write_file', args, q2.state, ACCEPT), { status: 200 });
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    assert.equal(await runs([a], 'write_file'), 1);
  });

  test('Redis restarted empty: states minted before are refused (store-reset); new rounds work', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const a = await replica(t, dir, 'a', redis.url);
    const args = { path: '/srv/reset', content: 'x' };
    const q = await ask(a, 1, args);
    await redis.restart({ empty: true });
    const deadline = Date.now() + scaled(10000);
    let r;
    for (;;) { // until sluice has reconnected: before that the refusal is "cannot reach"
      r = await modernCall(a.target, confirmRetry(`r${Date.now()}`, 'write_file', args, q.state, ACCEPT), { status: 200 });
      if (!/cannot reach its store/.test(resultText(r)) || Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /lost its records/);
    assert.equal(await runs([a], 'write_file'), 0);
    const q2 = await ask(a, 2, args);
    const ok = await modernCall(a.target, confirmRetry(3, 'write_file', args, q2.state, ACCEPT), { status: 200 });
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    assert.equal(await runs([a], 'write_file'), 1);
  });

  test('the client leaves while its accepted round two waits for the store: the call still runs once and the retry gets it', async (t) => {
    const redis = await startRedis(t);
    const relay = await stallRelay(t, redis.port);
    const dir = tmpDir(t);
    const a = await replica(t, dir, 'a', `redis://127.0.0.1:${relay.port}`, ['--store-timeout', '5000']);
    const args = { path: '/srv/left-early', content: 'x' };
    const q = await ask(a, 1, args);
    relay.stall(); // the spend is sent and its answer held
    await postAndDrop(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), 200);
    relay.resume();
    const r = await modernCall(a.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assertReplayed(r);
    assert.equal(await runs([a], 'write_file'), 1);
  });

  test('Redis that stalls: the gated call is refused within --store-timeout', async (t) => {
    const redis = await startRedis(t);
    const relay = await stallRelay(t, redis.port);
    const dir = tmpDir(t);
    const a = await replica(t, dir, 'a', `redis://127.0.0.1:${relay.port}`, ['--store-timeout', '400']);
    const args = { path: '/srv/stall', content: 'x' };
    const q = await ask(a, 1, args);
    relay.stall();
    const t0 = Date.now();
    const r = await modernCall(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    const took = Date.now() - t0;
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /cannot reach its store/);
    assert.ok(took < 400 + scaled(2600), `refused after ${took} ms`);
    assert.equal(await runs([a], 'write_file'), 0);
  });
});

describe('Redis: --store-replicas', redisSuiteOptions(suiteOptions()), () => {
  test('a spend counts once a replica has it; with none in sync the accept is refused, not run', async (t) => {
    const primary = await startRedis(t);
    const copy = await startRedis(t, { args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    // replicas in sync (state=online: a full sync under way does not acknowledge writes)
    const slaves = async () => (String(await redisCli(primary.port, 'INFO', 'replication')).match(/state=online/g) ?? []).length;
    const waitSlaves = async (n) => {
      const end = Date.now() + 10000;
      while ((await slaves()) !== n && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
      assert.equal(await slaves(), n, `the primary has ${n} replica(s)`);
    };
    await waitSlaves(1);
    // WAIT gets half the store's bound: 2 s, not 0.5 s, so that a replica slow to acknowledge
    // on a loaded 2-core CI machine is not taken for none (the accept was once refused so).
    const a = await replica(t, tmpDir(t), 'a', primary.url, ['--store-replicas', '1', '--store-timeout', '4000']);
    const args = { path: '/srv/replicated', content: '1' };
    const q = await ask(a, 1, args);
    const r = await modernCall(a.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    assert.equal(await runs([a], 'write_file'), 1, 'ran once the replica had the spend');

    // The replica leaves: a spend now reaches none, and the accept is refused unrun.
    await redisCli(copy.port, 'REPLICAOF', 'NO', 'ONE');
    await waitSlaves(0);
    const args2 = { path: '/srv/unreplicated', content: '1' };
    const q2 = await ask(a, 3, args2);
    const r2 = await modernCall(a.target, confirmRetry(4, 'write_file', args2, q2.state, ACCEPT), { status: 200 });
    assert.ok(r2.result && r2.result.isError, r2.raw);
    assert.match(resultText(r2), /cannot reach its store; the call was not run/);
    await waitLog(a, /a spend reached 0 of the 1 replicas --store-replicas asks for/, 5000);
    assert.equal(await runs([a], 'write_file'), 1, 'the second accept did not run');
  });

  test('--store-replicas needs a Redis store', () => {
    const r = runSluice(['--store-replicas', '1', '--', process.execPath, FAKE_UPSTREAM]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--store-replicas needs --store redis:\/\//);
  });
});

describe('Redis: a spend whose reply was lost, beside one that runs', redisSuiteOptions(suiteOptions()), () => {
  test('the lost one is released without touching the running one: a retry gets its result, once', async (t) => {
    const redis = await startRedis(t);
    const relay = await slowRelay(t, redis.port);
    const dir = tmpDir(t);
    // B runs the call slowly; A reaches Redis through the relay.
    const b = await startHttpSluice(t, {
      policy: GATE, dir, tag: 'b', era: 'modern', fake: { FAKE_SLOW_MS: String(scaled(4000)) }, // still running after A's round below
      upstream: [process.execPath, FAKE_UPSTREAM, 'FAKE_ERA=modern'],
      args: ['--state-key-file', keyFile(dir), '--store', redis.url],
    });
    await waitLog(b, /store: connected to redis/, 10000);
    const a = await replica(t, dir, 'a', `redis://127.0.0.1:${relay.port}`, ['--store-timeout', '400']);
    const args = { path: '/srv/both', content: 'once' };
    const q = await ask(a, 1, args);
    const atB = modernCall(b.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200, timeoutMs: scaled(12000) });
    const end = Date.now() + deadline(5000);
    while (b.upstreamCalls('write_file').length === 0 && Date.now() < end) await new Promise((res) => setTimeout(res, 20));
    assert.equal(b.upstreamCalls('write_file').length, 1, 'B is running it');
    // The same round two at A, whose spend reply comes too late: refused there.
    relay.setDelay(1000);
    const atA = await modernCall(a.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.match(resultText(atA), /cannot reach its store; the call was not run/);
    relay.setDelay(0);
    await waitLog(a, /store: connected to redis[^]*store: connected to redis/, 5000);
    await new Promise((res) => setTimeout(res, 300)); // A's deferred writes go out on connecting
    const keys = (await redisCli(redis.port, 'KEYS', 'sluice:nonce:*')).map(String);
    assert.equal(keys.length, 1, keys.join(' '));
    const rec = String(await redisCli(redis.port, 'GET', keys[0]));
    assert.match(rec, /^R/, `B's call is still marked running, not released by A: ${rec}`);
    const r = await atB;
    assert.ok(r.result && !r.result.isError, r.raw);
    assertReplayed(await modernCall(a.target, confirmRetry(4, 'write_file', args, q.state, ACCEPT)), r);
    assert.equal(await runs([a, b], 'write_file'), 1, 'one run');
  });
});

// A server that speaks RESP as Redis before 7.0 does: SET with both NX and GET is a syntax error
// there, and a spend is `SET ... NX GET` (store_redis.c). sluice finds out at its setup, says in
// the log that it needs Redis 7.0, stays unready and refuses gated calls; it never reaches READY
// against such a server, so no accept meets the error.
describe('Redis: a server older than 7.0', suiteOptions(), () => {
  test('refused when sluice connects, with a log line that says why; gated calls refused', async (t) => {
    const seen = [];
    const server = net.createServer((sock) => {
      let buf = Buffer.alloc(0);
      sock.on('error', () => {});
      sock.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        for (let r = respDecode(buf); r !== null; r = respDecode(buf)) {
          buf = buf.subarray(r.next);
          const [cmd, ...args] = r.value.map(String);
          seen.push(cmd.toUpperCase());
          if (/^script$/i.test(cmd)) {
            const sha = crypto.createHash('sha1').update(args[1]).digest('hex');
            sock.write(`$40\r\n${sha}\r\n`);
          } else if (/^set$/i.test(cmd) && args.some((a) => /^get$/i.test(a))) {
            sock.write('-ERR syntax error\r\n');
          } else {
            sock.write('+OK\r\n');
          }
        }
      });
    });
    await new Promise((res) => server.listen(0, '127.0.0.1', res));
    t.after(() => server.close());
    const dir = tmpDir(t);
    const a = await startHttpSluice(t, {
      policy: GATE, dir, tag: 'a', era: 'modern',
      upstream: [process.execPath, FAKE_UPSTREAM, 'FAKE_ERA=modern'],
      args: ['--state-key-file', keyFile(dir), '--store', `redis://127.0.0.1:${server.address().port}`],
    });
    await waitLog(a, /refused SET NX GET \(sluice needs Redis 7\.0 or later\): ERR syntax error/, 10000);
    assert.ok(seen.includes('SET'), seen.join(' '));
    const r = await modernCall(a.target, toolCall(1, 'write_file', { path: '/srv/old', content: 'x' }), { status: 200 });
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /cannot reach its store; the call was not run/);
    assert.doesNotMatch(a.stderr, /store: connected to redis/);
    assert.equal(await runs([a], 'write_file'), 0);
  });
});
