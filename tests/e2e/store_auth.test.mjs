// store_auth.test.mjs: the Redis store's password comes from SLUICE_STORE_PASSWORD, never the
// command line, and never reaches the upstream child. A Redis that requires a password serves
// sluice when the password is right; with a wrong one sluice says why in its log and refuses
// gated calls (nothing runs), while allowed calls pass.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ACCEPT, assertAsked, confirmRetry, policyPath, resultText, suiteOptions, tmpDir, toolCall } from './lib.mjs';
import { httpSync, modernCall, startHttpSluice, waitLog } from './http_lib.mjs';
import { redisSuiteOptions, startRedis } from './redis_lib.mjs';

const GATE = policyPath('gate.yaml');
const PASSWORD = 'store secret 5e1d';

async function start(t, redis, password) {
  const dir = tmpDir(t);
  const envFile = path.join(dir, 'child-env.json');
  const s = await startHttpSluice(t, {
    policy: GATE, dir, era: 'modern', fake: { FAKE_ENV_FILE: envFile },
    args: ['--store', redis.url],
    env: { SLUICE_STORE_PASSWORD: password },
  });
  return { s, envFile };
}

describe('Redis with a password', redisSuiteOptions(suiteOptions()), () => {
  test('the right password: gated calls work; the password is in no argv and not in the child\'s environment', async (t) => {
    const redis = await startRedis(t, { args: ['--requirepass', PASSWORD], auth: PASSWORD });
    const { s, envFile } = await start(t, redis, PASSWORD);
    await waitLog(s, /store: connected to redis/, 10000);
    const args = { path: '/srv/auth', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(1, 'write_file', args), { status: 200 }));
    const r = await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    await httpSync(s);
    assert.equal(s.upstreamCalls('write_file').length, 1);
    const cmdline = fs.readFileSync(`/proc/${s.proc.pid}/cmdline`, 'utf8');
    assert.ok(!cmdline.includes(PASSWORD), 'the password is on sluice\'s command line');
    const env = JSON.parse(fs.readFileSync(envFile, 'utf8'));
    assert.ok(!JSON.stringify(env).includes(PASSWORD), 'the password reached the upstream');
  });

  test('a wrong password: the log says why, gated calls are refused, allowed calls pass', async (t) => {
    const redis = await startRedis(t, { args: ['--requirepass', PASSWORD], auth: PASSWORD });
    const { s } = await start(t, redis, 'not the password');
    await waitLog(s, /store unreachable .*(WRONGPASS|invalid|password)/i, 10000);
    const args = { path: '/srv/auth', content: 'x' };
    const r = await modernCall(s.target, toolCall(1, 'write_file', args), { status: 200 });
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /cannot reach its store/);
    const allowed = await modernCall(s.target, toolCall(2, 'read_file', { path: '/srv/auth' }), { status: 200 });
    assert.doesNotMatch(allowed.raw, /store/);
    await httpSync(s);
    assert.equal(s.upstreamCalls('write_file').length, 0);
    assert.equal(s.upstreamCalls('read_file').length, 1);
  });
});
