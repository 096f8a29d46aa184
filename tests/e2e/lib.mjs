// lib.mjs: shared harness for sluice's end-to-end tests.
//
// startSluice() spawns the real binary around tests/e2e/fake_upstream.mjs and gives the test a
// line-oriented JSON-RPC client on sluice's stdin/stdout. Every wait is bounded; every process is
// killed (SIGTERM, then SIGKILL) by stop(), which tests register with t.after(); and stop() fails
// the test if sluice's stderr carries sanitizer reports or stdout carried anything that is not a
// JSON message.
//
// With E2E_VALGRIND=1 every sluice (startSluice and runSluice) runs under valgrind's memcheck, not
// following its children (the upstreams are not sluice's code), and stop() also fails the test when
// memcheck reported any error or any definite leak for that process. Every deadline is then scaled
// by E2E_TIME_SCALE (default 4 under valgrind, 1 otherwise): see scaled().
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const FAKE_UPSTREAM = path.join(HERE, 'fake_upstream.mjs');
export const POLICIES = path.join(HERE, 'policies');
export const SLUICE_BIN = path.resolve(process.env.SLUICE_BIN || path.join(HERE, '../../build/proxy/sluice'));
export const MODERN = '2026-07-28';
/** Whether sluice runs under valgrind's memcheck (E2E_VALGRIND=1; tests/meson.build's `valgrind` setup). */
export const VALGRIND = !!process.env.E2E_VALGRIND && process.env.E2E_VALGRIND !== '0';
/** How much slower than native the binary under test is: every deadline is multiplied by it. */
export const TIME_SCALE = Number(process.env.E2E_TIME_SCALE || (VALGRIND ? 4 : 1));
/** ms, scaled for a slow binary (valgrind). For deadlines ("at most"), never for "at least" waits. */
export function scaled(ms) {
  return Math.round(ms * TIME_SCALE);
}
/**
 * A loopback port free a moment ago, below the kernel's ephemeral range: for a server that goes
 * away and must come back on the same port (an upstream, Redis). A port from listen(0) is in
 * that range, and while nothing listens there the kernel may give it to any outgoing connection
 * (sluice's own reconnects included, which then connect to themselves), and the server cannot
 * bind it again. Below the range only another test's random pick can take it.
 */
export async function stablePort() {
  let low = 32768;
  try {
    low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch { /* not Linux: the usual start of the range */ }
  const top = Math.max(low, 2048);
  const bottom = Math.max(1024, top - 16384);
  for (let i = 0; i < 100; i++) {
    const port = bottom + crypto.randomInt(top - bottom);
    const free = await new Promise((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free loopback port below the ephemeral range in 100 tries');
}
export const LINE_DEADLINE_MS = Number(process.env.E2E_LINE_DEADLINE_MS || scaled(5000));
/* node:test runs a describe block (or a test with subtests) against one timer for all of its
 * tests together, not one per test: upstream_wait's block alone takes 40 s on a loaded 2-core
 * machine. So this bounds a whole file's suite, well under meson's 600 s per file. */
export const TEST_TIMEOUT_MS = scaled(300000);
/**
 * The deadline a harness wait uses for the ms a test gave it: LINE_DEADLINE_MS when none, the
 * value itself when it is LINE_DEADLINE_MS (already scaled), else scaled(ms). Every ms that a
 * harness wait takes is an upper bound ("within"), so a slower binary may use more of it.
 */
export function deadline(ms) {
  if (ms === undefined) return LINE_DEADLINE_MS;
  return ms === LINE_DEADLINE_MS ? ms : scaled(ms);
}
export const FORM_CAPS = { elicitation: { form: {} } };
export const SANITIZER_RE = /ERROR: AddressSanitizer|runtime error:|LeakSanitizer|ERROR: ThreadSanitizer|ERROR: MemorySanitizer/;

/** Options for node:test: skip (locally) or fail (CI=true) when the binary is missing. */
export function suiteOptions(extra = {}) {
  const opts = { timeout: TEST_TIMEOUT_MS, ...extra };
  if (!fs.existsSync(SLUICE_BIN) && process.env.CI !== 'true') {
    opts.skip = `sluice binary not found at ${SLUICE_BIN} (build it, or set SLUICE_BIN)`;
  }
  return opts;
}

/** Throws a clear error under CI when the binary is missing (suiteOptions skips otherwise). */
export function requireBinary() {
  assert.ok(fs.existsSync(SLUICE_BIN), `sluice binary not found at ${SLUICE_BIN}; set SLUICE_BIN or build it`);
}

const procsInDir = new Map(); // dir -> SluiceProc[] started with it

export function tmpDir(t, prefix = 'sluice-e2e-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  procsInDir.set(dir, []);
  if (t && typeof t.after === 'function') {
    t.after(async () => {
      // Hooks run in the order they were added, and this one may come first: stop everything that
      // writes into dir before removing it.
      for (const p of procsInDir.get(dir) ?? []) await p.kill();
      procsInDir.delete(dir);
      if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    });
  }
  return dir;
}

export function policyPath(name) {
  return path.join(POLICIES, name);
}

/** Writes a policy file into dir and returns its path. */
export function writePolicy(dir, text, name = 'policy.yaml') {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

/** Runs the test's cleanups last-in first-out (sluice is stopped before its upstream). */
export function cleanups(t) {
  const stack = [];
  t.after(async () => {
    const errors = [];
    for (const f of stack.reverse()) {
      try {
        await f();
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length) throw errors[0];
  });
  return (f) => stack.push(f);
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function withDeadline(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return e.code === 'EPERM';
  }
  // A zombie still answers kill(0); treat it as gone (it has exited, its parent has not reaped it).
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
  } catch {
    return false;
  }
  return true;
}

export async function waitPidGone(pid, ms) {
  const end = Date.now() + deadline(ms);
  while (Date.now() < end) {
    if (!pidAlive(pid)) return true;
    await sleep(25);
  }
  return !pidAlive(pid);
}

export function readJsonLines(file) {
  if (!fs.existsSync(file)) return [];
  // Only whole lines: a writer (the fake upstream's log) may be halfway through the last one.
  const text = fs.readFileSync(file, 'utf8');
  return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

/** The modern per-request envelope. */
export function envelope(caps = FORM_CAPS, extra = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': caps,
    'io.modelcontextprotocol/clientInfo': { name: 'sluice-e2e', version: '1.0.0' },
    ...extra,
  };
}

/** A modern request. opts.caps sets clientCapabilities, opts.meta adds _meta keys. */
export function modernRequest(id, method, params = {}, opts = {}) {
  return {
    jsonrpc: '2.0',
    id,
    method,
    params: { ...params, _meta: envelope(opts.caps ?? FORM_CAPS, opts.meta ?? {}) },
  };
}

export function toolCall(id, name, args, opts = {}) {
  const params = { name };
  if (args !== undefined) params.arguments = args;
  Object.assign(params, opts.params ?? {});
  return modernRequest(id, 'tools/call', params, opts);
}

/** Round two of a confirmation: same call plus inputResponses and requestState. */
export function confirmRetry(id, name, args, requestState, answer, opts = {}) {
  const params = {};
  if (answer !== undefined) params.inputResponses = { 'sluice.confirm': answer };
  if (requestState !== undefined) params.requestState = requestState;
  return toolCall(id, name, args, { ...opts, params: { ...params, ...(opts.params ?? {}) } });
}

export const ACCEPT = { action: 'accept', content: { approve: true } };

export function sha256hex(s) {
  return crypto.createHash('sha256').update(s).digest('hex');
}

/** RFC 8785 canonical form, for the values these tests use (strings, safe numbers, arrays,
 * objects). Keys sort by UTF-16 code units, which is what JS string comparison does. */
export function jcs(v) {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`;
}

let tagCounter = 0;

/**
 * Spawns sluice. opts:
 *   policy      path of the policy file (required)
 *   era         'legacy' | 'modern' (the fake upstream's era)
 *   fake        extra FAKE_*=value settings for the fake upstream (object)
 *   audit       path for --audit
 *   args        extra sluice arguments before '--'
 *   env         extra environment for sluice
 *   upstream    replaces the upstream command (array) entirely
 *   dir         temp dir (made if absent)
 *   tag         names the upstream's log and pid files; two processes given the same dir and tag
 *               run byte-identical upstream command lines (sluice binds states to that line)
 *   wrap        a command (array) that execs its arguments, run around sluice (same pid), e.g.
 *               ['sh', '-c', 'ulimit -f 8 && exec "$0" "$@"'] for a file size limit
 */
export function startSluice(t, opts) {
  requireBinary();
  const dir = opts.dir ?? tmpDir(t);
  const tag = opts.tag ?? `${process.pid}-${++tagCounter}`;
  const upstreamLog = path.join(dir, `upstream-${tag}.jsonl`);
  const pidFile = path.join(dir, `upstream-${tag}.pid`);
  const fake = { FAKE_ERA: opts.era ?? 'legacy', FAKE_UPSTREAM_LOG: upstreamLog, FAKE_PID_FILE: pidFile, ...(opts.fake ?? {}) };
  const upstream = opts.upstream ?? [process.execPath, FAKE_UPSTREAM, ...Object.entries(fake).map(([k, v]) => `${k}=${v}`)];
  const args = ['--policy', opts.policy];
  if (opts.audit) args.push('--audit', opts.audit);
  args.push(...(opts.args ?? []), '--', ...upstream);
  const env = { ...process.env, ...fake };
  delete env.SLUICE_STATE_KEY; // each test chooses its key; an inherited one would join processes
  Object.assign(env, opts.env ?? {});
  const cmd = sluiceCommand(args);
  const wrap = opts.wrap ?? [];
  const file = wrap.length ? wrap[0] : cmd.file;
  const argv = wrap.length ? [...wrap.slice(1), cmd.file, ...cmd.args] : cmd.args;
  const proc = spawn(file, argv, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const s = new SluiceProc(proc, { dir, upstreamLog, pidFile, args, memcheck: cmd.memcheck });
  if (procsInDir.has(dir)) procsInDir.get(dir).push(s);
  if (t && typeof t.after === 'function') t.after(() => s.kill());
  return s;
}

export class SluiceProc {
  constructor(proc, info) {
    Object.assign(this, info);
    this.proc = proc;
    this.pid = proc.pid;
    this.stderr = '';
    this.badStdout = [];
    this.lines = []; // unconsumed parsed messages {raw, msg}
    this.waiters = [];
    this.exited = false;
    this.exitCode = null;
    this.exitSignal = null;
    this.exitPromise = new Promise((resolve) => {
      proc.on('exit', (code, signal) => {
        this.exited = true;
        this.exitCode = code;
        this.exitSignal = signal;
        resolve({ code, signal });
      });
    });
    this.closedPromise = new Promise((resolve) => proc.on('close', resolve));
    proc.stdin.on('error', () => {});
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (d) => {
      this.stderr += d;
    });
    let buf = Buffer.alloc(0);
    proc.stdout.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let nl;
      while ((nl = buf.indexOf(0x0a)) >= 0) {
        const raw = buf.subarray(0, nl).toString('utf8');
        buf = buf.subarray(nl + 1);
        this.#push(raw);
      }
    });
    proc.stdout.on('end', () => {
      this.stdoutEnded = true;
      for (const w of this.waiters.splice(0)) w.check();
    });
    this.nextId = 1000;
    this.syncCounter = 0;
  }

  #push(raw) {
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      this.badStdout.push(raw);
      return;
    }
    this.lines.push({ raw, msg });
    for (const w of this.waiters.slice()) w.check();
  }

  send(obj) {
    this.proc.stdin.write(JSON.stringify(obj) + '\n');
  }

  sendRaw(data) {
    this.proc.stdin.write(data);
  }

  /** Next message matching pred (default: any), removed from the queue. */
  next(pred = () => true, ms = undefined, what = 'a message from sluice') {
    ms = deadline(ms);
    return new Promise((resolve, reject) => {
      const w = {
        check: () => {
          const i = this.lines.findIndex((l) => pred(l.msg, l.raw));
          if (i >= 0) {
            const [l] = this.lines.splice(i, 1);
            done();
            resolve(l);
          } else if (this.stdoutEnded) {
            done();
            reject(new Error(`sluice closed stdout while waiting for ${what}; stderr:\n${this.stderr.slice(-4000)}`));
          }
        },
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${ms} ms; unconsumed: ${JSON.stringify(this.lines.map((l) => l.raw)).slice(0, 2000)}; stderr:\n${this.stderr.slice(-3000)}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      this.waiters.push(w);
      w.check();
    });
  }

  /** The response (result or error) whose id equals id (deep), with its raw line. */
  async responseTo(id, ms = undefined) {
    const l = await this.next((m) => m && typeof m === 'object' && !('method' in m) && ('result' in m || 'error' in m) && JSON.stringify(m.id) === JSON.stringify(id), ms, `the response to id ${JSON.stringify(id)}`);
    return { ...l.msg, raw: l.raw };
  }

  /** Sends a request object and waits for its response. */
  async request(obj, ms = undefined) {
    this.send(obj);
    return this.responseTo(obj.id, ms);
  }

  /** Asserts that no response to id arrives within ms. */
  async noResponseTo(id, ms) {
    await sleep(ms);
    const hit = this.lines.find((l) => JSON.stringify(l.msg && l.msg.id) === JSON.stringify(id) && !('method' in l.msg));
    assert.equal(hit, undefined, `expected no response to id ${JSON.stringify(id)}, got ${hit && hit.raw}`);
  }

  /**
   * Makes everything sluice forwarded before now visible in the upstream log: sends an allowed
   * echo call (policies used with sync() must allow `echo`) and waits for its answer. The fake
   * upstream logs synchronously on receipt, so once the answer is back, every message sluice wrote
   * to the upstream before the echo is in the log.
   */
  async sync() {
    const n = ++this.syncCounter;
    const id = `sync-${n}`;
    const r = await this.request(toolCall(id, 'echo', { __sync: n }, { caps: {} }));
    assert.ok(r.result, `sync echo failed: ${r.raw}`);
  }

  upstreamMessages() {
    return readJsonLines(this.upstreamLog);
  }

  /** tools/call requests the upstream received, minus sync() probes. */
  upstreamCalls(name) {
    return this.upstreamMessages().filter((m) => m.method === 'tools/call'
      && !(m.params && m.params.name === 'echo' && m.params.arguments && '__sync' in m.params.arguments)
      && (name === undefined || (m.params && m.params.name === name)));
  }

  upstreamPids() {
    if (!fs.existsSync(this.pidFile)) return [];
    return fs.readFileSync(this.pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
  }

  async upstreamPid(ms = undefined) {
    ms = deadline(ms);
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const p = this.upstreamPids();
      if (p.length) return p[0];
      await sleep(20);
    }
    throw new Error(`fake upstream wrote no pid file within ${ms} ms; sluice stderr:\n${this.stderr}`);
  }

  /** Waits for sluice to exit (under memcheck the exit includes its leak check). */
  async waitExit(ms = undefined) {
    return withDeadline(this.exitPromise, deadline(ms), `sluice (pid ${this.pid}) to exit`);
  }

  /** Closes stdin (client EOF) and waits for the exit. */
  async closeStdin(ms = undefined) {
    this.proc.stdin.end();
    return this.waitExit(ms);
  }

  /** Kills sluice and every upstream it started; checks stderr for sanitizer reports. */
  async kill() {
    if (!this.killing) this.killing = this.#kill();
    return this.killing;
  }

  async #kill() {
    if (!this.exited) {
      try { this.proc.stdin.end(); } catch { /* ignore */ }
      try { this.proc.kill('SIGTERM'); } catch { /* ignore */ }
      try {
        await withDeadline(this.exitPromise, scaled(3000), 'sluice to exit on SIGTERM');
      } catch {
        this.cleanupSigkill = true; // memcheck's leak check cannot run: checkMemcheck() says so
        try { this.proc.kill('SIGKILL'); } catch { /* ignore */ }
        await withDeadline(this.exitPromise, scaled(3000), 'sluice to exit on SIGKILL').catch(() => {});
      }
    }
    for (const pid of this.upstreamPids()) {
      if (pidAlive(pid)) {
        try { process.kill(pid, 'SIGKILL'); } catch { /* ignore */ }
      }
    }
    await withDeadline(this.closedPromise, scaled(2000), 'sluice pipes to close').catch(() => {});
    this.assertClean();
  }

  assertClean() {
    assert.doesNotMatch(this.stderr, SANITIZER_RE, `sanitizer report in sluice stderr:\n${this.stderr}`);
    assert.deepEqual(this.badStdout, [], 'sluice wrote non-JSON lines to stdout');
    // memcheck's report is complete once the process has exited; it is read once (then removed).
    if (this.memcheck && this.exited && !this.memcheckChecked) {
      this.memcheckChecked = true;
      checkMemcheck(this.memcheck, {
        killed: this.exitSignal === 'SIGKILL' && !this.cleanupSigkill,
        hung: this.cleanupSigkill ? `sluice (pid ${this.pid}) did not exit within ${scaled(3000)} ms of SIGTERM at cleanup and was killed` : null,
        what: `sluice ${this.args.join(' ')}`,
      });
    }
  }
}

/** Sends sluice SIGHUP and waits (up to ms, scaled) until it logs that the policy reloaded. */
export async function reloadPolicy(s, ms = 5000) {
  const mark = s.stderr.length;
  s.proc.kill('SIGHUP');
  const end = Date.now() + scaled(ms);
  while (!/reloaded/.test(s.stderr.slice(mark))) {
    assert.ok(Date.now() < end, `no reload logged within ${ms} ms: ${s.stderr.slice(mark)}`);
    await sleep(20);
  }
}

/** Runs `sluice ARGS` to completion (for `sluice check`). */
export function runSluice(args, opts = {}) {
  requireBinary();
  const cmd = sluiceCommand(args);
  const r = spawnSync(cmd.file, cmd.args, { encoding: 'utf8', timeout: scaled(opts.timeout ?? 10000), cwd: opts.cwd, env: { ...process.env, ...(opts.env ?? {}) } });
  assert.doesNotMatch(`${r.stderr}`, SANITIZER_RE, `sanitizer report:\n${r.stderr}`);
  // spawnSync's timeout sends SIGTERM, after which memcheck still writes its report.
  if (cmd.memcheck) checkMemcheck(cmd.memcheck, { killed: r.signal === 'SIGKILL', what: `sluice ${args.join(' ')}` });
  return r;
}

/**
 * Runs `sluice ARGS` to completion without blocking this process (for a server the test itself
 * serves), killed after ms: {status, signal, stdout, stderr}. Checked as runSluice's run is.
 */
export function runSluiceAsync(args, ms = 30000) {
  requireBinary();
  const cmd = sluiceCommand(args);
  return new Promise((resolve) => {
    const p = spawn(cmd.file, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), scaled(ms));
    p.on('close', (status, signal) => {
      clearTimeout(timer);
      assert.doesNotMatch(stderr, SANITIZER_RE, `sanitizer report:\n${stderr}`);
      if (cmd.memcheck) checkMemcheck(cmd.memcheck, { killed: signal === 'SIGKILL', what: `sluice ${args.join(' ')}` });
      resolve({ status, signal, stdout, stderr });
    });
  });
}

// ===== valgrind (memcheck) =====

let memcheckDir = null;
let memcheckCounter = 0;

/**
 * The command that runs sluice with args: the binary itself, or, with E2E_VALGRIND=1, valgrind's
 * memcheck around it. memcheck writes its findings as XML (each <error> as it is found, so the
 * ones found before a SIGKILL are there too) and its commentary to a text log; both files are per
 * process, under E2E_VALGRIND_DIR (default: a new directory in the temp dir), and removed when
 * clean unless E2E_KEEP_TMP is set. It does not follow sluice's children (the upstreams are not
 * our code) nor report on a forked child before its exec. Leaks: only definite ones are reported,
 * and they count as errors. E2E_VALGRIND_ARGS adds options (space-separated, e.g.
 * `--track-origins=yes` or `--suppressions=FILE`); E2E_VALGRIND_BIN names another valgrind.
 */
export function sluiceCommand(args) {
  if (!VALGRIND) return { file: SLUICE_BIN, args, memcheck: null };
  if (!memcheckDir) {
    if (process.env.E2E_VALGRIND_DIR) {
      memcheckDir = path.resolve(process.env.E2E_VALGRIND_DIR);
      fs.mkdirSync(memcheckDir, { recursive: true });
    } else {
      memcheckDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-memcheck-'));
      process.on('exit', () => {
        try { fs.rmdirSync(memcheckDir); } catch { /* it keeps a failing report */ }
      });
    }
  }
  const base = path.join(memcheckDir, `sluice-${process.pid}-${++memcheckCounter}`);
  const memcheck = { xml: `${base}.xml`, log: `${base}.log` };
  const extra = (process.env.E2E_VALGRIND_ARGS || '').split(/\s+/).filter(Boolean);
  return {
    file: process.env.E2E_VALGRIND_BIN || 'valgrind',
    args: ['--tool=memcheck', '--leak-check=full', '--show-leak-kinds=definite', '--errors-for-leak-kinds=definite',
      '--child-silent-after-fork=yes', '--trace-children=no', '--num-callers=30', '--error-limit=no',
      '--xml=yes', `--xml-file=${memcheck.xml}`, `--log-file=${memcheck.log}`, ...extra, SLUICE_BIN, ...args],
    memcheck,
  };
}

function xmlText(s) {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}

function xmlField(body, name) {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(body);
  return m ? xmlText(m[1].trim()) : undefined;
}

/** One memcheck <error> element as valgrind's text output would show it. */
function renderMemcheckError(body) {
  const out = [`[${xmlField(body, 'kind')}]`];
  const re = /<(what|auxwhat)>([\s\S]*?)<\/\1>|<(xwhat|xauxwhat)>[\s\S]*?<text>([\s\S]*?)<\/text>[\s\S]*?<\/\3>|<stack>([\s\S]*?)<\/stack>/g;
  let m;
  while ((m = re.exec(body)) !== null) {
    if (m[2] !== undefined || m[4] !== undefined) {
      out.push(xmlText((m[2] ?? m[4]).trim()));
      continue;
    }
    let first = true;
    for (const f of m[5].matchAll(/<frame>([\s\S]*?)<\/frame>/g)) {
      const fn = xmlField(f[1], 'fn') ?? xmlField(f[1], 'ip');
      const file = xmlField(f[1], 'file');
      const where = file ? `${file}:${xmlField(f[1], 'line')}` : `in ${xmlField(f[1], 'obj') ?? '?'}`;
      out.push(`   ${first ? 'at' : 'by'} ${fn} (${where})`);
      first = false;
    }
  }
  return out.join('\n');
}

/**
 * Reads memcheck's report for one process and fails (assert) on any error or definite leak. A
 * process that exited (by itself or by a signal other than SIGKILL) must have a complete report:
 * valgrind runs its leak check at exit. killed: the test SIGKILLed it on purpose, so there is no
 * leak check, but errors found before the kill still count. hung: why the cleanup had to SIGKILL
 * it (a failure: its leaks went unchecked). The files are removed when clean, kept otherwise.
 */
export function checkMemcheck(mc, { killed = false, hung = null, what = 'sluice' } = {}) {
  let xml = null;
  try {
    xml = fs.readFileSync(mc.xml, 'utf8');
  } catch { /* reported below */ }
  if (xml === null) {
    assert.fail(`memcheck: ${what}\nvalgrind wrote no report at ${mc.xml}: did it start? (E2E_VALGRIND_BIN, or the binary)`);
  }
  const errors = [...xml.matchAll(/<error>([\s\S]*?)<\/error>/g)].map((m) => renderMemcheckError(m[1]));
  const finished = /<status>\s*<state>FINISHED<\/state>/.test(xml);
  const problems = [];
  if (errors.length > 0) problems.push(`memcheck reported ${errors.length} error(s) (definite leaks included):\n\n${errors.join('\n\n')}`);
  if (hung) problems.push(`${hung}, so memcheck never ran its leak check`);
  else if (!finished && !killed) problems.push('memcheck wrote no complete report (no <state>FINISHED</state>): valgrind did not get to run its leak check');
  if (problems.length === 0) {
    if (!process.env.E2E_KEEP_TMP) for (const f of [mc.xml, mc.log]) fs.rmSync(f, { force: true });
    return;
  }
  let log = '';
  try {
    log = fs.readFileSync(mc.log, 'utf8');
  } catch { /* none */ }
  assert.fail(`memcheck: ${what}\n${problems.join('\n')}\n(report: ${mc.xml}; valgrind log: ${mc.log})${log ? `\nvalgrind log tail:\n${log.slice(-3000)}` : ''}`);
}

/** Extracts the one text of a CallToolResult. */
export function resultText(r) {
  assert.ok(r.result, `expected a result, got ${r.raw}`);
  const c = r.result.content;
  assert.ok(Array.isArray(c) && c.length >= 1, `expected content, got ${r.raw}`);
  return c.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

/** Asserts r is sluice's refusal: a complete isError tool result. */
export function assertRefusal(r, re) {
  assert.ok(r.result, `expected an isError result, got ${r.raw}`);
  assert.equal(r.result.resultType, 'complete', r.raw);
  assert.equal(r.result.isError, true, r.raw);
  const text = resultText(r);
  if (re) assert.match(text, re, r.raw);
  return text;
}

/**
 * Asserts r is a retry answered from the store: the first run's result again, marked
 * _meta["dev.sluice/replayed"] (the upstream was not called; the caller checks its count).
 * first, when given, is the first run's response: the content must be the same.
 */
export function assertReplayed(r, first) {
  assert.ok(r.result, `expected the kept result, got ${r.raw}`);
  assert.equal(r.result._meta && r.result._meta['dev.sluice/replayed'], true, `expected _meta["dev.sluice/replayed"]: true: ${r.raw}`);
  if (first) assert.deepEqual(r.result.content, first.result.content, r.raw);
  return r;
}

export function assertInvalidState(r, said) {
  assert.ok(r.error, `expected a JSON-RPC error, got ${r.raw}`);
  assert.equal(r.error.code, -32602, r.raw);
  assert.ok(r.error.data && r.error.data.reason === 'invalid_request_state', `expected data.reason invalid_request_state: ${r.raw}`);
  // The message says what happened (used, expired, altered, token or state), never the old
  // catch-all "Invalid or expired requestState".
  assert.doesNotMatch(r.error.message, /Invalid or expired/, r.raw);
  if (said) assert.match(r.error.message, said, r.raw);
}

/** Asserts r is sluice's confirmation question and returns {state, message, params}. */
/** sluice's question is a Markdown fenced code block, so a client that renders Markdown shows it
 * as written: asserts that (the fence longer than any run of backticks inside), and returns the
 * text inside the fence. */
export function unfence(message) {
  assert.equal(typeof message, 'string');
  const m = /^(`{3,})\n([^]*)\n(`+)$/.exec(message);
  assert.ok(m && m[1] === m[3], `the question is not fenced: ${JSON.stringify(message)}`);
  const inner = m[2];
  const longest = Math.max(0, ...(inner.match(/`+/g) ?? []).map((r) => r.length));
  assert.ok(m[1].length === Math.max(3, longest + 1), `the fence is not longer than every run of backticks inside: ${JSON.stringify(message)}`);
  return inner;
}

export function assertAsked(r) {
  assert.ok(r.result, `expected an input_required result, got ${r.raw}`);
  assert.equal(r.result.resultType, 'input_required', r.raw);
  const ir = r.result.inputRequests;
  assert.ok(ir && typeof ir === 'object', r.raw);
  const q = ir['sluice.confirm'];
  assert.ok(q, `no inputRequests["sluice.confirm"]: ${r.raw}`);
  assert.equal(q.method, 'elicitation/create', r.raw);
  assert.equal(q.params.mode, 'form', r.raw);
  assert.equal(typeof q.params.message, 'string', r.raw);
  const schema = q.params.requestedSchema;
  assert.equal(schema.type, 'object', r.raw);
  assert.equal(schema.properties.approve.type, 'boolean', r.raw);
  assert.deepEqual(schema.required, ['approve'], r.raw);
  assert.equal(typeof r.result.requestState, 'string', r.raw);
  assert.ok(r.result.requestState.length > 0, r.raw);
  return { state: r.result.requestState, message: unfence(q.params.message), params: q.params };
}

// ===== legacy (2025) clients =====

export const LEGACY = '2025-11-25';

/** A request without the modern envelope (params left out when undefined). */
export function legacyRequest(id, method, params) {
  const m = { jsonrpc: '2.0', id, method };
  if (params !== undefined) m.params = params;
  return m;
}

/** A legacy tools/call; extra adds params members (e.g. _meta, task). */
export function legacyCall(id, name, args, extra = {}) {
  const params = { name };
  if (args !== undefined) params.arguments = args;
  return legacyRequest(id, 'tools/call', { ...params, ...extra });
}

/** Runs the 2025 handshake on s; returns the initialize result. */
export async function legacyHandshake(s, { version = LEGACY, capabilities = FORM_CAPS, id = 'init' } = {}) {
  const r = await s.request(legacyRequest(id, 'initialize', { protocolVersion: version, capabilities, clientInfo: { name: 'sluice-e2e-legacy', version: '1.0.0' } }));
  assert.ok(r.result, `initialize failed: ${r.raw}`);
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return r.result;
}

/** sync() for a legacy session: the barrier echo goes without the modern envelope. */
export async function legacySync(s) {
  const n = ++s.syncCounter;
  const r = await s.request(legacyCall(`sync-${n}`, 'echo', { __sync: n }));
  assert.ok(r.result, `sync echo failed: ${r.raw}`);
}

/** The next elicitation/create request sluice (or a relayed upstream) sends the client. */
export async function nextElicitation(s, ms = undefined) {
  const l = await s.next((m) => m.method === 'elicitation/create' && 'id' in m, ms, 'an elicitation/create request');
  return { ...l.msg, raw: l.raw };
}
