// redis_lib.mjs: Redis for the end-to-end tests of sluice's shared store (--store redis://...).
//
// startRedis() runs a redis-server of its own on a free loopback port, with persistence off and
// its files in a temporary directory, waits until it answers PING, and kills it when the test
// ends. redisCli() talks RESP over node:net (no redis-cli needed) so a test can look at keys,
// FLUSHALL, or set a password. stallRelay() is a loopback TCP relay in front of Redis that stops
// forwarding on stall() while keeping every connection open: a store that hangs rather than
// fails, which sluice must answer within --store-timeout. slowRelay() passes commands on at once
// and Redis's replies late: commands that run although their replies come too late for sluice.
// holdRelay() holds one chosen command (and what follows it on its connection) until released,
// and tells when Redis answered another: two replicas' commands put in a known order.
// Every wait is bounded; the self-test is redis_lib.test.mjs.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';
import { scaled, sleep, stablePort } from './lib.mjs';

/** The redis-server executable: $REDIS_SERVER when set (a path; the only one tried), else the
 *  first on PATH or in /usr/sbin, /usr/bin; null when there is none. */
export function redisServerPath() {
  if (process.env.REDIS_SERVER) {
    try {
      fs.accessSync(process.env.REDIS_SERVER, fs.constants.X_OK);
      return process.env.REDIS_SERVER;
    } catch {
      return null;
    }
  }
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/bin'];
  for (const d of dirs) {
    if (!d) continue;
    const p = path.join(d, 'redis-server');
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Options for node:test: skip locally when redis-server is missing, with a message that says so;
 * under CI=true nothing is skipped (startRedis then fails: CI installs it, .ci/deps --test).
 */
export function redisSuiteOptions(extra = {}) {
  const opts = { ...extra };
  if (redisServerPath() === null && process.env.CI !== 'true') {
    opts.skip = 'redis-server is not installed (apt-get install redis-server, or .ci/deps --test)';
  }
  return opts;
}

// ===== RESP =====

/** One RESP request: an array of bulk strings (Buffers are sent as they are). */
export function respEncode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** An error reply (RESP `-...`), as a value: redisCli rejects with it. */
export class RedisError extends Error {}

/**
 * Decodes one RESP2 value from buf at off: {value, next}, or null when buf holds only part of it.
 * Bulk strings are utf8 strings, or Buffers with buffers=true; a nil bulk or array is null; an
 * error is a RedisError value (not thrown).
 */
export function respDecode(buf, off = 0, buffers = false) {
  if (off >= buf.length) return null;
  const eol = buf.indexOf('\r\n', off);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[off]);
  const line = buf.toString('utf8', off + 1, eol);
  const after = eol + 2;
  switch (type) {
    case '+': return { value: line, next: after };
    case '-': return { value: new RedisError(line), next: after };
    case ':': return { value: Number(line), next: after };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, next: after };
      if (buf.length < after + n + 2) return null;
      const b = buf.subarray(after, after + n);
      return { value: buffers ? Buffer.from(b) : b.toString('utf8'), next: after + n + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, next: after };
      const out = [];
      let at = after;
      for (let i = 0; i < n; i++) {
        const r = respDecode(buf, at, buffers);
        if (r === null) return null;
        out.push(r.value);
        at = r.next;
      }
      return { value: out, next: at };
    }
    default:
      throw new Error(`not RESP: type byte 0x${buf[off].toString(16)} at offset ${off}`);
  }
}

/**
 * Sends commands (arrays of arguments) to Redis on 127.0.0.1:port over one new connection and
 * resolves with their replies in order (error replies as RedisError values). opts.auth sends AUTH
 * first (its reply is not returned); opts.buffers gives bulk strings as Buffers; opts.timeoutMs
 * (default scaled(5000)) bounds the whole exchange.
 */
export function redisCommands(port, commands, opts = {}) {
  const ms = opts.timeoutMs ?? scaled(5000);
  const all = opts.auth !== undefined ? [['AUTH', ...[].concat(opts.auth)], ...commands] : commands;
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    const replies = [];
    const done = (err, value) => {
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(
      () => done(new Error(`redis on port ${port}: no reply within ${ms} ms (${replies.length}/${all.length} replies)`)),
      ms);
    sock.on('error', (e) => done(e));
    sock.on('close', () => done(new Error(`redis on port ${port} closed the connection after ${replies.length}/${all.length} replies`)));
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        let r;
        try {
          r = respDecode(buf, 0, opts.buffers);
        } catch (e) {
          done(e);
          return;
        }
        if (r === null) break;
        replies.push(r.value);
        buf = buf.subarray(r.next);
      }
      if (replies.length >= all.length) {
        const mine = opts.auth !== undefined ? replies.slice(1) : replies;
        if (opts.auth !== undefined && replies[0] instanceof RedisError) done(replies[0]);
        else done(null, mine);
      }
    });
    sock.write(Buffer.concat(all.map(respEncode)));
  });
}

/**
 * One command: redisCli(port, 'SET', 'k', 'v'). Resolves with the reply, rejects with a
 * RedisError for an error reply. A last argument that is a plain object is opts (redisCommands).
 */
export async function redisCli(port, ...args) {
  const last = args[args.length - 1];
  const opts = last !== null && typeof last === 'object' && !Buffer.isBuffer(last) ? args.pop() : {};
  const [reply] = await redisCommands(port, [args], opts);
  if (reply instanceof RedisError) throw reply;
  return reply;
}

// ===== redis-server =====

/** A port that was free a moment ago on 127.0.0.1, below the ephemeral range: restart() brings
 * Redis back on it while sluice reconnects (startRedis retries if it is taken since). */
export function freePort() {
  return stablePort();
}

async function waitPing(port, child, ms, auth) {
  const end = Date.now() + ms;
  let last = null;
  while (Date.now() < end) {
    if (exited(child)) return false;
    try {
      if ((await redisCli(port, 'PING', { timeoutMs: 500, auth })) === 'PONG') return true;
    } catch (e) {
      last = e;
    }
    await sleep(25);
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${ms} ms (${last?.message})`);
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves true once child has been reaped, false after ms. Reaped, not a zombie: the leader of
 *  a threaded server turns zombie while its other threads still hold the listening socket. */
function waitExit(child, ms) {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(exited(child)), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function stopChild(child, signal, ms = scaled(5000)) {
  if (exited(child)) return;
  child.kill(signal);
  if (!(await waitExit(child, ms))) {
    child.kill('SIGKILL');
    await waitExit(child, ms);
  }
}

/**
 * Starts redis-server for test t: --port P --bind 127.0.0.1 --save '' --appendonly no, its
 * directory a temporary one, and kills it when t ends. opts.args adds arguments (e.g.
 * ['--requirepass', 'pw']; then give opts.auth too, which restart() needs). Returns {port, url, dir, pid, log(), stop(), kill(),
 * restart({empty})}: stop() is SIGTERM, kill() SIGKILL; restart({empty: true}) (the default)
 * kills it and starts a new one on the same port with nothing in it (a restart without
 * persistence); restart({empty: false}) saves a snapshot first (SHUTDOWN SAVE) and the new
 * server loads it (a restart with persistence).
 */
export async function startRedis(t, opts = {}) {
  const bin = redisServerPath();
  assert.ok(bin, 'redis-server is not installed (apt-get install redis-server, or .ci/deps --test)');
  // Its own directory, removed after the server is gone (lib.mjs's tmpDir removes its directory
  // in a hook that may run before this one's kill).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-redis-'));
  let port = opts.port ?? await freePort();
  let child = null;
  let log = '';
  t.after(async () => {
    if (child) await stopChild(child, 'SIGKILL');
    if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
  });

  const launch = async () => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--daemonize', 'no', '--dir', dir, '--dbfilename', 'dump.rdb', '--logfile', '', ...(opts.args ?? [])];
    const c = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    c.stdout.on('data', (d) => { log += d; });
    c.stderr.on('data', (d) => { log += d; });
    c.on('error', (e) => { log += `spawn error: ${e.message}\n`; });
    child = c;
    return waitPing(port, c, scaled(10000), opts.auth);
  };

  for (let attempt = 0; ; attempt++) {
    if (await launch()) break;
    // The port was taken between freePort() and the bind: another one (never when opts.port).
    if (opts.port !== undefined || attempt >= 4 || !/Address already in use/.test(log)) {
      throw new Error(`redis-server exited before answering PING on port ${port}:\n${log}`);
    }
    port = await freePort();
  }

  const r = {
    get port() { return port; },
    get url() { return `redis://127.0.0.1:${port}`; },
    get pid() { return child.pid; },
    dir,
    log: () => log,
    stop: () => stopChild(child, 'SIGTERM'),
    kill: () => stopChild(child, 'SIGKILL'),
    async restart({ empty = true } = {}) {
      if (empty) {
        await stopChild(child, 'SIGKILL');
        fs.rmSync(path.join(dir, 'dump.rdb'), { force: true });
      } else {
        // SHUTDOWN SAVE writes dump.rdb even with --save '', then exits; the connection closes.
        await redisCommands(port, [['SHUTDOWN', 'SAVE']], { auth: opts.auth }).catch(() => {});
        if (!(await waitExit(child, scaled(5000)))) await stopChild(child, 'SIGKILL');
      }
      if (!(await launch())) throw new Error(`redis-server did not come back on port ${port}:\n${log}`);
    },
  };
  return r;
}

// ===== a relay that can stall =====

/**
 * A loopback TCP relay in front of 127.0.0.1:targetPort, closed when t ends. It forwards both
 * ways until stall(); from then on it forwards nothing and keeps every connection open: bytes
 * are held (up to 16 MiB a direction; more are dropped), a connection accepted meanwhile is not
 * passed on, and a close from the target is not passed on either. resume() delivers what was
 * held and forwards again. Returns {port, stall(), resume(), close(), accepted(), open()}.
 */
export async function stallRelay(t, targetPort) {
  const HOLD_MAX = 16 << 20;
  let stalled = false;
  let accepted = 0;
  const pairs = new Set();

  const flush = (p) => {
    if (p.closed) return;
    if (p.up === null) connectUp(p);
    for (const b of p.toUp.splice(0)) p.up.write(b);
    for (const b of p.toDown.splice(0)) p.down.write(b);
    if (p.upEnded) p.down.end();
  };
  const closePair = (p) => {
    if (p.closed) return;
    p.closed = true;
    pairs.delete(p);
    p.down.destroy();
    if (p.up) p.up.destroy();
  };
  const held = (list) => list.reduce((n, b) => n + b.length, 0);
  const connectUp = (p) => {
    p.up = net.connect({ host: '127.0.0.1', port: targetPort });
    p.up.on('data', (d) => {
      if (!stalled) p.down.write(d);
      else if (held(p.toDown) + d.length <= HOLD_MAX) p.toDown.push(d);
    });
    p.up.on('end', () => {
      if (stalled) p.upEnded = true;
      else p.down.end();
    });
    p.up.on('error', () => { if (!stalled) closePair(p); });
    p.up.on('close', () => {
      if (stalled) p.upEnded = true;
      else closePair(p);
    });
  };

  const server = net.createServer((down) => {
    accepted++;
    const p = { down, up: null, toUp: [], toDown: [], upEnded: false, closed: false };
    pairs.add(p);
    down.on('data', (d) => {
      if (!stalled && p.up) p.up.write(d);
      else if (held(p.toUp) + d.length <= HOLD_MAX) p.toUp.push(d);
    });
    down.on('error', () => closePair(p));
    down.on('close', () => closePair(p));
    if (!stalled) connectUp(p);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const close = async () => {
    for (const p of [...pairs]) closePair(p);
    await new Promise((resolve) => server.close(() => resolve()));
  };
  t.after(close);
  return {
    port: server.address().port,
    stall() { stalled = true; },
    resume() {
      stalled = false;
      for (const p of [...pairs]) flush(p);
    },
    close,
    /** Connections accepted so far (a reconnecting client shows here). */
    accepted: () => accepted,
    /** Connections open now. */
    open: () => pairs.size,
  };
}

/**
 * A loopback TCP relay in front of 127.0.0.1:targetPort, closed when t ends: commands go to Redis
 * at once, and each chunk of Redis's replies reaches the client setDelay(ms) later (0 at first).
 * A reply late past the client's timeout is one whose command ran all the same. A close of either
 * side closes the pair. Returns {port, setDelay(ms), close()}.
 */
export async function slowRelay(t, targetPort) {
  let delayMs = 0;
  const socks = new Set();
  const server = net.createServer((down) => {
    const up = net.connect({ host: '127.0.0.1', port: targetPort });
    socks.add(down);
    socks.add(up);
    const end = () => { down.destroy(); up.destroy(); socks.delete(down); socks.delete(up); };
    down.on('data', (d) => up.write(d));
    up.on('data', (d) => {
      if (delayMs === 0) down.write(d);
      else setTimeout(() => { if (!down.destroyed) down.write(d); }, delayMs);
    });
    for (const s of [down, up]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const close = async () => {
    for (const s of [...socks]) s.destroy();
    await new Promise((resolve) => server.close(() => resolve()));
  };
  t.after(close);
  return { port: server.address().port, setDelay(ms) { delayMs = ms; }, close };
}

/**
 * A loopback TCP relay in front of 127.0.0.1:targetPort, closed when t ends, that passes bytes on
 * both ways except what it is told to hold. Commands are matched as the latin1 text of the chunk
 * a client wrote (a RESP command is one write of sluice's):
 *   hold(re)      the first chunk to match re from then on waits, with every chunk after it on
 *                 its connection, until release(); held() resolves once one waits
 *   replied(re)   resolves with the text of Redis's next chunk to the connection that sent a chunk
 *                 matching re (its reply, on an otherwise idle connection), once passed on
 * A close of either side closes the pair. Returns {port, hold, held, release, replied}.
 */
export async function holdRelay(t, targetPort) {
  let holdRe = null;
  let heldPair = null;
  let onHeld = null;
  const heldPromise = new Promise((resolve) => { onHeld = resolve; });
  const watches = [];
  const pairs = new Set();
  const server = net.createServer((down) => {
    const up = net.connect({ host: '127.0.0.1', port: targetPort });
    const p = { down, up, held: null, awaiting: [] };
    pairs.add(p);
    const end = () => { down.destroy(); up.destroy(); pairs.delete(p); };
    down.on('data', (d) => {
      const text = d.toString('latin1');
      if (p.held === null && holdRe !== null && holdRe.test(text)) {
        holdRe = null;
        p.held = [];
        heldPair = p;
        onHeld();
      }
      if (p.held !== null) {
        p.held.push(d);
        return;
      }
      for (let i = watches.length - 1; i >= 0; i--) {
        if (watches[i].re.test(text)) p.awaiting.push(...watches.splice(i, 1));
      }
      up.write(d);
    });
    up.on('data', (d) => {
      down.write(d);
      for (const w of p.awaiting.splice(0)) w.resolve(d.toString('latin1'));
    });
    for (const s of [down, up]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const close = async () => {
    for (const p of [...pairs]) { p.down.destroy(); p.up.destroy(); }
    await new Promise((resolve) => server.close(() => resolve()));
  };
  t.after(close);
  return {
    port: server.address().port,
    hold(re) { holdRe = re; },
    held: () => heldPromise,
    release() {
      const p = heldPair;
      if (p === null || p.held === null) return;
      for (const d of p.held) p.up.write(d);
      p.held = null;
    },
    replied(re) {
      return new Promise((resolve) => { watches.push({ re, resolve }); });
    },
    close,
  };
}
