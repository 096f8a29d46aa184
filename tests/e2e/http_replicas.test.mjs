// http_replicas.test.mjs: two sluice processes behind one address (replicas). They share a
// --state-key-file (32 random bytes, mode 0600) around the same upstream command, but without a
// shared replay store each remembers only the nonces it spent itself, so a state opens only in
// the process that minted it: round one on A and round two on B is refused at B and runs
// nowhere (else one approval could run once on each replica), and a restarted process refuses
// the states of its previous life the same way. With different keys B refuses too.
//
// Both replicas run byte-identical upstream command lines (states are bound to that line), so the
// fake upstream's log and pid files are given through the environment, one pair per replica.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, FAKE_UPSTREAM, assertAsked, assertInvalidState, assertReplayed, confirmRetry, policyPath, suiteOptions, tmpDir,
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

async function replica(t, dir, tag, key, era = 'legacy', extra = []) {
  return startHttpSluice(t, {
    policy: GATE,
    dir,
    tag,
    era,
    // Same argv for every replica; FAKE_UPSTREAM_LOG / FAKE_PID_FILE come from the environment.
    upstream: [process.execPath, FAKE_UPSTREAM, `FAKE_ERA=${era}`],
    args: ['--state-key-file', key, ...extra],
  });
}

function auditLines(file) {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}

describe('HTTP: replicas sharing a state key', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`round one on A, round two on B: refused at B, run nowhere; A still runs it once (${era} upstream)`, async (t) => {
      const dir = tmpDir(t);
      const key = keyFile(dir, 'state.key');
      const auditB = path.join(dir, 'b.audit.jsonl');
      const [a, b] = await Promise.all([
        replica(t, dir, 'a', key, era),
        replica(t, dir, 'b', key, era, ['--audit', auditB]),
      ]);
      assert.notEqual(a.port, b.port);
      assert.notEqual(a.upstreamLog, b.upstreamLog);
      const args = { path: '/srv/replicated', content: 'from A to B' };
      const q = assertAsked(await modernCall(a.target, toolCall(1, 'write_file', args), { status: 200 }));
      assertInvalidState(await modernCall(b.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT)));
      await assertNotForwardedHttp(b, 'write_file');
      await assertNotForwardedHttp(a, 'write_file');
      const why = auditLines(auditB).filter((r) => r.tool === 'write_file').map((r) => r.reason);
      assert.ok(why.includes('minted-by-another-process'), `B's journal should say why: ${JSON.stringify(why)}`);
      // The process that minted it honours it, once.
      const r = await modernCall(a.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { status: 200 });
      assert.ok(r.result && r.result.resultType === 'complete' && !r.result.isError, r.raw);
      await assertForwardedOnceHttp(a, 'write_file', args, q.state);
      // Again at A: the kept result; at B (a store of its own): still refused.
      assertReplayed(await modernCall(a.target, confirmRetry(4, 'write_file', args, q.state, ACCEPT)), r);
      assertInvalidState(await modernCall(b.target, confirmRetry(5, 'write_file', args, q.state, ACCEPT)));
      await assertForwardedOnceHttp(a, 'write_file', args, q.state);
      await assertNotForwardedHttp(b, 'write_file');
    });
  }

  test('a restarted process refuses the states it minted before, even within the same second', async (t) => {
    const dir = tmpDir(t);
    const key = keyFile(dir, 'state.key');
    const first = await replica(t, dir, 'first', key);
    const args = { path: '/srv/restarted', content: 'x' };
    const q = assertAsked(await modernCall(first.target, toolCall(1, 'write_file', args), { status: 200 }));
    await first.kill();
    const second = await replica(t, dir, 'second', key);
    assertInvalidState(await modernCall(second.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwardedHttp(second, 'write_file');
  });

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
