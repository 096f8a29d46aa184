// child_env.test.mjs: the upstream child does not inherit sluice's SLUICE_* variables (the state
// key mints approvals; the upstream's Authorization is a credential): a tool that prints its
// environment (server-everything's get-env) must not hand them to the model. The rest of the
// environment still reaches it. Nor does it inherit any descriptor of sluice's but its stdin,
// stdout and stderr: the store's connection (past AUTH), a client's socket.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, test } from 'node:test';
import { policyPath, sleep, suiteOptions, startSluice, tmpDir } from './lib.mjs';
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
