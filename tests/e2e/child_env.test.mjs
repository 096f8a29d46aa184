// child_env.test.mjs: the upstream child does not inherit sluice's SLUICE_* variables (the state
// key mints approvals; the upstream's Authorization is a credential): a tool that prints its
// environment (server-everything's get-env) must not hand them to the model. The rest of the
// environment still reaches it. Nor does it inherit any descriptor of sluice's but its stdin,
// stdout and stderr: the store's connection (past AUTH), a client's socket.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, test } from 'node:test';
import { SLUICE_BIN, VALGRIND, policyPath, sleep, suiteOptions, startSluice, tmpDir } from './lib.mjs';
import { LegacyHttpSession, httpSync, startHttpSluice, waitLog } from './http_lib.mjs';
import { redisSuiteOptions, startRedis } from './redis_lib.mjs';

const GATE = policyPath('gate.yaml');
const SECRETS = {
  SLUICE_STATE_KEY: 'c3'.repeat(32),
  SLUICE_UPSTREAM_AUTHORIZATION: 'Bearer upstream-secret-7f3a',
  SLUICE_SOMETHING_ELSE: 'other-secret-91c2',
};
const HARMLESS = { E2E_CHILD_ENV_MARKER: 'harmless-42' };

function checkEnv(file) {
  const env = JSON.parse(fs.readFileSync(file, 'utf8'));
  const leaked = Object.keys(env).filter((k) => k.startsWith('SLUICE_'));
  assert.deepEqual(leaked, [], `SLUICE_* variables reached the upstream: ${leaked.join(', ')}`);
  const text = JSON.stringify(env);
  for (const v of Object.values(SECRETS)) assert.ok(!text.includes(v), `a secret's value reached the upstream`);
  assert.equal(env.E2E_CHILD_ENV_MARKER, 'harmless-42', 'the rest of the environment reaches the upstream');
}

describe('the upstream child\'s environment', suiteOptions(), () => {
  test('stdio: no SLUICE_* variable reaches the child; a harmless one does', async (t) => {
    const dir = tmpDir(t);
    const envFile = path.join(dir, 'child-env.json');
    const s = startSluice(t, { policy: GATE, dir, fake: { FAKE_ENV_FILE: envFile }, env: { ...SECRETS, ...HARMLESS } });
    await s.sync();
    checkEnv(envFile);
  });

  test('HTTP: the same', async (t) => {
    const dir = tmpDir(t);
    const envFile = path.join(dir, 'child-env.json');
    const s = await startHttpSluice(t, { policy: GATE, dir, fake: { FAKE_ENV_FILE: envFile }, env: { ...SECRETS, ...HARMLESS } });
    await httpSync(s);
    checkEnv(envFile);
  });
});

/** How to run sluice as a user that is not root (root reads any process's memory whatever the
 * process says), the same user its child then runs as: the wrapper, a directory that user can
 * write, and a copy of the binary there (the tree may sit where it cannot look). { reason } when
 * the test cannot. */
function unprivileged(t) {
  if (process.getuid() !== 0) return { dir: tmpDir(t), wrap: [], binary: SLUICE_BIN };
  // The memcheck reports go to a directory of root's; the check is one system call anyway.
  if (VALGRIND) return { reason: 'under valgrind as root (its report directory is root\'s)' };
  // In /tmp itself: TMPDIR may be a directory of root's (the mutation runs put it in theirs).
  const dir = fs.mkdtempSync('/tmp/sluice-e2e-nobody-');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const binary = path.join(dir, 'sluice');
  fs.copyFileSync(SLUICE_BIN, binary);
  fs.chmodSync(binary, 0o755);
  // And the libraries of its own tree it links (a mutation run's build links libsluice.so).
  const tree = path.dirname(path.dirname(SLUICE_BIN));
  const ldd = spawnSync('ldd', [SLUICE_BIN], { encoding: 'utf8' }).stdout ?? '';
  for (const m of ldd.matchAll(/=> (\S+) \(/g)) {
    if (m[1].startsWith(`${tree}/`)) fs.copyFileSync(m[1], path.join(dir, path.basename(m[1])));
  }
  fs.chmodSync(dir, 0o777);
  const wrap = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'];
  const probe = spawnSync(wrap[0], [...wrap.slice(1), 'env', `LD_LIBRARY_PATH=${dir}`, binary, '--version']);
  if (probe.status !== 0) return { reason: `setpriv to uid 65534 cannot run ${binary} (${probe.stderr})` };
  return { dir, wrap: [...wrap.slice(0, -1), 'env', `LD_LIBRARY_PATH=${dir}`], binary };
}

describe('sluice\'s own memory', suiteOptions(), () => {
  // A stdio upstream (and whatever its tools run) is sluice's user: a tool that reads files must
  // not read sluice's environment (the state key) or memory through /proc.
  test('stdio: the child cannot read /proc/PPID/environ or open sluice\'s memory', async (t) => {
    const as = unprivileged(t);
    const dir = as.dir;
    if (!as.wrap) {
      // CI runs as root: there a skip would hide the check.
      assert.ok(process.env.CI !== 'true' || VALGRIND, `cannot run the check: ${as.reason}`);
      return t.skip(as.reason);
    }
    const policy = path.join(dir, 'gate.yaml');
    fs.copyFileSync(GATE, policy);
    fs.chmodSync(policy, 0o644);
    const file = path.join(dir, 'parent-env');
    // The upstream is a shell (the tree's files may be out of the user's reach): it reports
    // what it could read of its parent's environment, then waits for its stdin to end.
    const script = 'if cat /proc/$PPID/environ > "$1.tmp" 2>/dev/null; then :; else echo DENIED > "$1.tmp"; fi; mv "$1.tmp" "$1"; exec cat > /dev/null';
    const proc = spawn(as.wrap[0] ?? as.binary, [...as.wrap.slice(1), ...(as.wrap.length ? [as.binary] : []),
      '--policy', policy, '--', 'sh', '-c', script, 'sh', file], { stdio: ['pipe', 'ignore', 'pipe'], env: { ...process.env, ...SECRETS } });
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr += d; });
    t.after(() => { proc.stdin.end(); proc.kill('SIGKILL'); });
    const end = Date.now() + 10000;
    while (!fs.existsSync(file) && Date.now() < end) await sleep(20);
    assert.ok(fs.existsSync(file), `the upstream never reported; sluice said: ${stderr}`);
    const got = fs.readFileSync(file, 'latin1');
    assert.ok(!got.includes(SECRETS.SLUICE_STATE_KEY), 'the child read the state key from sluice\'s environment');
    assert.equal(got, 'DENIED\n', 'the child could open sluice\'s environment');
    // Opening is the check (reading address 0 fails anyway): /proc/PID/mem asks for ptrace access.
    const open = ['sh', '-c', ': < "$1"', 'sh', `/proc/${proc.pid}/mem`];
    const mem = as.wrap.length ? spawnSync(as.wrap[0], [...as.wrap.slice(1), ...open]) : spawnSync(open[0], open.slice(1));
    assert.notEqual(mem.status, 0, 'another process of sluice\'s user opened its memory');
  });
});

/** What sluice holds open, as /proc names it (sockets, pipes, files). */
function heldBy(pid) {
  const held = new Set();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      held.add(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch { /* closed meanwhile */ }
  }
  return held;
}

/** The descriptors above 2 each child reported (FAKE_FD_FILE) that it shares with sluice, or
 * that are sockets (a node process opens none of its own at start). */
function inherited(base, sluicePid) {
  const dir = path.dirname(base);
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(`${path.basename(base)}.`));
  const held = heldBy(sluicePid);
  const bad = [];
  for (const f of files) {
    const fds = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    for (const [fd, what] of Object.entries(fds)) {
      if (what.startsWith('socket:') || (held.has(what) && !what.startsWith('anon_inode:') && what !== '/dev/null')) bad.push(`${f} fd ${fd}: ${what}`);
    }
  }
  return { files: files.length, bad };
}

describe('the upstream child\'s descriptors', redisSuiteOptions(suiteOptions()), () => {
  test('HTTP --child-per-session with a Redis store: a child holds none of sluice\'s (the store\'s connection, a client\'s socket)', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const key = path.join(dir, 'state.key');
    fs.writeFileSync(key, crypto.randomBytes(32), { mode: 0o600 });
    const base = path.join(dir, 'fds');
    const s = await startHttpSluice(t, {
      policy: GATE, dir, fake: { FAKE_FD_FILE: base },
      args: ['--child-per-session', '--state-key-file', key, '--store', redis.url],
    });
    await waitLog(s, /store: connected to redis/, 10000);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 }); // its socket stays open
    t.after(() => agent.destroy());
    const session = new LegacyHttpSession(s.target, { agent });
    await session.initialize();
    const end = Date.now() + 10000;
    let got = inherited(base, s.proc.pid);
    while (got.files < 2 && Date.now() < end) {
      await sleep(50);
      got = inherited(base, s.proc.pid);
    }
    assert.ok(got.files >= 2, `the shared child and the session's both reported (${got.files})`);
    assert.deepEqual(got.bad, [], 'descriptors of sluice\'s reached a child');
  });
});
