// http_replicas.test.mjs: two sluice processes behind one address (replicas). With the same
// --state-key-file (32 random bytes, mode 0600) around the same upstream command, round one on A
// and round two on B runs the call on B's upstream; with different keys B refuses.
//
// Both replicas run byte-identical upstream command lines (states are bound to that line), so the
// fake upstream's log and pid files are given through the environment, one pair per replica.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, FAKE_UPSTREAM, assertAsked, assertInvalidState, confirmRetry, policyPath, suiteOptions, tmpDir,
  toolCall,
} from './lib.mjs';
import {
  assertForwardedOnceHttp, assertNotForwardedHttp, modernCall, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

function keyFile(dir, name) {
  const f = path.join(dir, name);
  fs.writeFileSync(f, crypto.randomBytes(32), { mode: 0o600 });
  fs.chmodSync(f, 0o600);
  return f;
}

async function replica(t, dir, tag, key, era = 'legacy') {
  return startHttpSluice(t, {
    policy: GATE,
    dir,
    tag,
    era,
    // Same argv for every replica; FAKE_UPSTREAM_LOG / FAKE_PID_FILE come from the environment.
    upstream: [process.execPath, FAKE_UPSTREAM, `FAKE_ERA=${era}`],
    args: ['--state-key-file', key],
  });
}

describe('HTTP: replicas sharing a state key', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`round one on A, round two on B: forwarded once, on B's upstream (${era} upstream)`, async (t) => {
      const dir = tmpDir(t);
      const key = keyFile(dir, 'state.key');
      const [a, b] = await Promise.all([replica(t, dir, 'a', key, era), replica(t, dir, 'b', key, era)]);
      assert.notEqual(a.port, b.port);
      assert.notEqual(a.upstreamLog, b.upstreamLog);
      const args = { path: '/srv/replicated', content: 'from A to B' };
      const q = assertAsked(await modernCall(a.target, toolCall(1, 'write_file', args), { status: 200 }));
      await assertNotForwardedHttp(a, 'write_file');
      const r = await modernCall(b.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
      assert.ok(r.result && r.result.resultType === 'complete' && !r.result.isError, r.raw);
      await assertForwardedOnceHttp(b, 'write_file', args, q.state);
      await assertNotForwardedHttp(a, 'write_file');
      // B spent the nonce: a replay on B is refused.
      assertInvalidState(await modernCall(b.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT)));
      await assertForwardedOnceHttp(b, 'write_file', args, q.state);
    });
  }

  test('different keys: B refuses A\'s state (-32602) and nothing is forwarded anywhere', async (t) => {
    const dir = tmpDir(t);
    const [a, b] = await Promise.all([
      replica(t, dir, 'a', keyFile(dir, 'a.key')),
      replica(t, dir, 'b', keyFile(dir, 'b.key')),
    ]);
    const args = { path: '/srv/other-key', content: 'x' };
    const q = assertAsked(await modernCall(a.target, toolCall(1, 'write_file', args), { status: 200 }));
    assertInvalidState(await modernCall(b.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwardedHttp(b, 'write_file');
    await assertNotForwardedHttp(a, 'write_file');
    // A still honours its own state.
    const r = await modernCall(a.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(a, 'write_file', args, q.state);
  });

  test('same key, another upstream command line: B refuses (states are bound to the upstream)', async (t) => {
    const dir = tmpDir(t);
    const key = keyFile(dir, 'state.key');
    const a = await replica(t, dir, 'a', key);
    const b = await startHttpSluice(t, { policy: GATE, dir, tag: 'b', args: ['--state-key-file', key] });
    const args = { path: '/srv/other-upstream', content: 'x' };
    const q = assertAsked(await modernCall(a.target, toolCall(1, 'write_file', args), { status: 200 }));
    assertInvalidState(await modernCall(b.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwardedHttp(b, 'write_file');
  });

  test('a key file others can read is refused at start', async (t) => {
    const dir = tmpDir(t);
    const f = path.join(dir, 'loose.key');
    fs.writeFileSync(f, crypto.randomBytes(32));
    fs.chmodSync(f, 0o644);
    await assert.rejects(startHttpSluice(t, { policy: GATE, dir, args: ['--state-key-file', f] }), /exited|listening/);
  });
});
