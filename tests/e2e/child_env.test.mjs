// child_env.test.mjs: the upstream child does not inherit sluice's SLUICE_* variables (the state
// key mints approvals; the upstream's Authorization is a credential): a tool that prints its
// environment (server-everything's get-env) must not hand them to the model. The rest of the
// environment still reaches it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { policyPath, suiteOptions, startSluice, tmpDir } from './lib.mjs';
import { httpSync, startHttpSluice } from './http_lib.mjs';

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
