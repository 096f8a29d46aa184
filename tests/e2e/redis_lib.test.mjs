// redis_lib.test.mjs: the Redis harness itself (redis_lib.mjs), so a store test that fails points
// at sluice and not at its helpers. A real redis-server: started, written to and read over the
// RESP client, flushed, restarted empty and with a snapshot, killed; and a stall relay that
// forwards until stalled, then holds bytes both ways (Redis executes nothing sent meanwhile) and
// delivers them on resume; a hold relay that holds one chosen command until released and tells
// when another was answered. Skipped when redis-server is not installed, unless CI=true.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { scaled, sleep, withDeadline } from './lib.mjs';
import {
  RedisError, redisCli, redisCommands, redisServerPath, redisSuiteOptions, respDecode, respEncode,
  holdRelay, slowRelay, startRedis, stallRelay,
} from './redis_lib.mjs';

/** A raw connection that collects every byte it receives. */
async function rawConn(t, port) {
  const sock = net.connect({ host: '127.0.0.1', port });
  await new Promise((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  const c = { sock, buf: Buffer.alloc(0) };
  sock.on('data', (d) => { c.buf = Buffer.concat([c.buf, d]); });
  sock.on('error', () => {});
  t.after(() => sock.destroy());
  return c;
}

async function waitBytes(c, want, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end && !c.buf.toString('latin1').includes(want)) await sleep(10);
  return c.buf.toString('latin1').includes(want);
}

describe('redis_lib', redisSuiteOptions({ timeout: scaled(60000) }), () => {
  test('redis-server is installed when CI=true', () => {
    // Under CI the suite is not skipped: a missing server must fail here, not pass quietly.
    assert.ok(redisServerPath(), 'redis-server is not installed (.ci/deps --test installs it)');
  });

  test('RESP encoding and decoding', () => {
    assert.equal(respEncode(['SET', 'k', Buffer.from([0, 13, 10])]).toString('latin1'),
      '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n\x00\r\n\r\n');
    const wire = Buffer.from('*4\r\n+OK\r\n:-7\r\n$-1\r\n*2\r\n$4\r\na\r\nb\r\n-ERR no\r\n');
    const r = respDecode(wire);
    assert.equal(r.next, wire.length);
    assert.deepEqual(r.value.slice(0, 3), ['OK', -7, null]);
    assert.equal(r.value[3][0], 'a\r\nb');
    assert.ok(r.value[3][1] instanceof RedisError && r.value[3][1].message === 'ERR no');
    for (let cut = 0; cut < wire.length; cut++) assert.equal(respDecode(wire.subarray(0, cut)), null, `cut at ${cut}`);
  });

  test('startRedis, redisCli: PING, SET/GET, binary values, errors, FLUSHALL', async (t) => {
    const redis = await startRedis(t);
    assert.match(redis.url, /^redis:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await redisCli(redis.port, 'PING'), 'PONG');
    assert.equal(await redisCli(redis.port, 'SET', 'k', 'v'), 'OK');
    assert.equal(await redisCli(redis.port, 'GET', 'k'), 'v');
    assert.equal(await redisCli(redis.port, 'GET', 'nope'), null);
    const bin = Buffer.from([0, 1, 13, 10, 36, 255]);
    await redisCli(redis.port, 'SET', 'b', bin);
    assert.deepEqual(await redisCli(redis.port, 'GET', 'b', { buffers: true }), bin);
    await assert.rejects(redisCli(redis.port, 'INCR', 'k'), RedisError);
    assert.deepEqual(await redisCommands(redis.port, [['INCR', 'n'], ['INCR', 'n'], ['KEYS', '*']]).then((r) => r.slice(0, 2)), [1, 2]);
    // persistence is off, as the store tests need: a restart is a wiped store
    assert.deepEqual(await redisCli(redis.port, 'CONFIG', 'GET', 'save'), ['save', '']);
    assert.deepEqual(await redisCli(redis.port, 'CONFIG', 'GET', 'appendonly'), ['appendonly', 'no']);
    assert.deepEqual(await redisCli(redis.port, 'CONFIG', 'GET', 'bind'), ['bind', '127.0.0.1']);
    assert.equal(await redisCli(redis.port, 'DBSIZE'), 3);
    assert.equal(await redisCli(redis.port, 'FLUSHALL'), 'OK');
    assert.equal(await redisCli(redis.port, 'DBSIZE'), 0);
  });

  test('restart empty, restart with a snapshot, kill', async (t) => {
    const redis = await startRedis(t);
    const pid1 = redis.pid;
    await redisCli(redis.port, 'SET', 'k', 'v');
    await redis.restart({ empty: false });
    assert.notEqual(redis.pid, pid1);
    assert.equal(await redisCli(redis.port, 'GET', 'k'), 'v');
    await redis.restart({ empty: true });
    assert.equal(await redisCli(redis.port, 'GET', 'k'), null);
    await redis.kill();
    await assert.rejects(redisCli(redis.port, 'PING', { timeoutMs: 1000 }), /ECONNREFUSED/);
    await redis.restart();
    assert.equal(await redisCli(redis.port, 'PING'), 'PONG');
    await redis.stop();
    await assert.rejects(redisCli(redis.port, 'PING', { timeoutMs: 1000 }), /ECONNREFUSED/);
  });

  test('a password: opts.auth', async (t) => {
    const redis = await startRedis(t, { args: ['--requirepass', 'p w'], auth: 'p w' });
    await assert.rejects(redisCli(redis.port, 'GET', 'k'), /NOAUTH/);
    assert.equal(await redisCli(redis.port, 'SET', 'k', 'v', { auth: 'p w' }), 'OK');
    await assert.rejects(redisCli(redis.port, 'PING', { auth: 'wrong' }), /WRONGPASS/);
    await redis.restart({ empty: false });
    assert.equal(await redisCli(redis.port, 'GET', 'k', { auth: 'p w' }), 'v');
  });

  test('slowRelay runs commands at once and delivers their replies late', async (t) => {
    const redis = await startRedis(t);
    const relay = await slowRelay(t, redis.port);
    assert.equal(await redisCli(relay.port, 'PING'), 'PONG');
    relay.setDelay(600);
    await assert.rejects(redisCli(relay.port, 'INCR', 'late', { timeoutMs: 300 }), /no reply within 300 ms/);
    assert.equal(await redisCli(redis.port, 'GET', 'late'), '1', 'the command ran before its reply came');
    const t0 = Date.now();
    assert.equal(await redisCli(relay.port, 'PING', { timeoutMs: 3000 }), 'PONG');
    assert.ok(Date.now() - t0 >= 550, 'the reply came late');
    relay.setDelay(0);
    assert.equal(await redisCli(relay.port, 'PING', { timeoutMs: 300 }), 'PONG');
  });

  test('holdRelay holds the chosen command and what follows it, and tells a reply', async (t) => {
    const redis = await startRedis(t);
    const relay = await holdRelay(t, redis.port);
    const c = await rawConn(t, relay.port);
    relay.hold(/\$4\r\nINCR\r\n/);
    c.sock.write(respEncode(['PING']));
    assert.ok(await waitBytes(c, '+PONG', scaled(2000)), 'a command before the hold passes');
    c.sock.write(respEncode(['INCR', 'held']));
    await withDeadline(relay.held(), scaled(2000), 'the hold');
    c.sock.write(respEncode(['SET', 'after', '1']));
    const other = await rawConn(t, relay.port);
    const answered = relay.replied(/\$3\r\nGET\r\n/);
    other.sock.write(respEncode(['GET', 'held']));
    assert.equal(await withDeadline(answered, scaled(2000), 'the reply'), '$-1\r\n');
    assert.equal(await redisCli(redis.port, 'GET', 'after'), null, 'what follows the held command waits too');
    relay.release();
    assert.ok(await waitBytes(c, ':1\r\n+OK', scaled(2000)), 'released, in order');
    assert.equal(await redisCli(redis.port, 'GET', 'held'), '1');
  });

  test('stallRelay forwards, then stops both ways, then delivers on resume', async (t) => {
    const redis = await startRedis(t);
    const relay = await stallRelay(t, redis.port);
    assert.equal(await redisCli(relay.port, 'PING'), 'PONG');
    assert.equal(relay.accepted(), 1);

    const c = await rawConn(t, relay.port);
    c.sock.write(respEncode(['PING']));
    assert.ok(await waitBytes(c, '+PONG', scaled(2000)), 'a reply through the relay');

    relay.stall();
    c.sock.write(respEncode(['INCR', 'stalled']));
    await sleep(300);
    assert.equal(c.buf.toString('latin1'), '+PONG\r\n', 'no reply while stalled');
    assert.equal(await redisCli(redis.port, 'GET', 'stalled'), null, 'Redis got nothing while stalled');
    // a new connection while stalled: accepted, never answered
    await assert.rejects(redisCli(relay.port, 'PING', { timeoutMs: 300 }), /no reply within 300 ms/);
    // a reply already on its way back is held too
    relay.resume();
    assert.ok(await waitBytes(c, ':1', scaled(2000)), 'the held command ran on resume');
    relay.stall();
    await redisCli(redis.port, 'SET', 'x', 'y');
    c.sock.write(respEncode(['GET', 'x']));
    await sleep(300);
    assert.equal(await redisCli(redis.port, 'GET', 'x'), 'y');
    assert.ok(!c.buf.toString('latin1').includes('$1\r\ny'), 'the reply is held');
    relay.resume();
    assert.ok(await waitBytes(c, '$1\r\ny', scaled(2000)), 'the held reply is delivered');
    assert.equal(await redisCli(relay.port, 'PING'), 'PONG');

    // the target killed while stalled: the relay keeps the client's connection open
    relay.stall();
    await redis.kill();
    await sleep(200);
    assert.ok(!c.sock.destroyed && c.sock.readyState === 'open');
    relay.resume();
    const closed = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), scaled(2000));
      c.sock.once('close', () => { clearTimeout(timer); resolve(true); });
      if (c.sock.destroyed) { clearTimeout(timer); resolve(true); }
    });
    assert.ok(closed, 'the close is passed on at resume');
    await relay.close();
    assert.equal(relay.open(), 0);
  });
});
