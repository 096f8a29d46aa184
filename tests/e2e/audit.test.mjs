// audit.test.mjs: the --audit journal. One JSON line per decision, no argument values, and the
// word for an accepted confirmation is "client-accepted", never "approved".
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, assertInvalidState, confirmRetry, jcs, policyPath, readJsonLines, reloadPolicy, runSluice,
  scaled, sha256hex, sleep, startSluice, suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';

const GATE = policyPath('gate.yaml');
const SECRET = 'PASSWORD-VALUE-7c9e6679f1a4';
const DECISIONS = new Set(['allow', 'deny', 'asked', 'client-accepted', 'declined', 'cancelled', 'refused', 'token-issued', 'token-redeemed', 'forwarding']);
// The brief's set plus the README's no-response and cancelled.
const UPSTREAM = new Set(['ok', 'tool-error', 'error', 'not-forwarded', 'no-response', 'cancelled']);

async function confirmWith(s, id, args, answer) {
  const q = assertAsked(await s.request(toolCall(`${id}-1`, 'write_file', args)));
  return { q, r: await s.request(confirmRetry(`${id}-2`, 'write_file', args, q.state, answer)) };
}

/** Runs a session that exercises every decision, then closes it and returns the audit lines. */
async function scenario(t, era) {
  const dir = tmpDir(t);
  const audit = path.join(dir, 'audit.jsonl');
  const s = startSluice(t, { policy: GATE, era, dir, audit });
  const a = {
    echo: { token: SECRET },
    fail: { token: SECRET },
    rpc: { token: SECRET },
    deny: { table: SECRET },
    accept: { path: '/a', content: SECRET },
    decline: { path: '/b', content: SECRET },
    cancel: { path: '/c', content: SECRET },
    approveFalse: { path: '/d', content: SECRET },
    changed: { path: '/e', content: SECRET },
    tampered: { path: '/f', content: SECRET },
  };
  assert.ok((await s.request(toolCall('echo', 'echo', a.echo))).result);
  assert.ok((await s.request(toolCall('fail', 'fail', a.fail))).result.isError);
  assert.ok((await s.request(toolCall('rpc', 'rpc_error', a.rpc))).error);
  assert.ok((await s.request(toolCall('deny', 'drop_table', a.deny))).result.isError);
  const acc = await confirmWith(s, 'accept', a.accept, ACCEPT);
  assert.ok(acc.r.result && !acc.r.result.isError, acc.r.raw);
  assert.ok((await confirmWith(s, 'decline', a.decline, { action: 'decline' })).r.result.isError);
  assert.ok((await confirmWith(s, 'cancel', a.cancel, { action: 'cancel' })).r.result.isError);
  assert.ok((await confirmWith(s, 'false', a.approveFalse, { action: 'accept', content: { approve: false } })).r.result.isError);
  const q = assertAsked(await s.request(toolCall('changed-1', 'write_file', a.changed)));
  assert.ok((await s.request(confirmRetry('changed-2', 'write_file', { ...a.changed, content: 'other' }, q.state, ACCEPT))).result.isError);
  const q2 = assertAsked(await s.request(toolCall('tampered-1', 'write_file', a.tampered)));
  assertInvalidState(await s.request(confirmRetry('tampered-2', 'write_file', a.tampered, `${q2.state}x`, ACCEPT)));
  const { code } = await s.closeStdin(5000);
  assert.equal(code, 0, s.stderr);
  const text = fs.readFileSync(audit, 'utf8');
  // Decisions only: the chain's own lines (event: new-chain, ...) are audit_chain.test.mjs's.
  return { text, lines: readJsonLines(audit).filter((l) => !l.event), args: a, audit, stderr: s.stderr };
}

function find(lines, pred, what) {
  const hit = lines.filter(pred);
  assert.ok(hit.length >= 1, `no audit line for ${what}; lines:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`);
  return hit;
}

describe('audit journal', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`one well-formed line per decision, with the right decision and upstream outcome (${era})`, async (t) => {
      const { text, lines } = await scenario(t, era);
      assert.ok(text.endsWith('\n'), 'each record ends with a newline');
      for (const l of lines) {
        assert.ok(l.time !== undefined && l.time !== null, `time missing: ${JSON.stringify(l)}`);
        assert.equal(l.principal, 'local', JSON.stringify(l));
        assert.equal(typeof l.tool, 'string', JSON.stringify(l));
        assert.ok(l.args_sha256 === null || /^[0-9a-f]{64}$/.test(l.args_sha256), `args_sha256: ${JSON.stringify(l)}`);
        assert.ok(DECISIONS.has(l.decision), `unknown decision: ${JSON.stringify(l)}`);
        assert.equal(typeof l.reason, 'string', JSON.stringify(l));
        // A forwarding line is written before the upstream is asked: it has no outcome yet.
        if (l.decision === 'forwarding') assert.equal(l.upstream, null, JSON.stringify(l));
        else assert.ok(UPSTREAM.has(l.upstream), `unknown upstream outcome: ${JSON.stringify(l)}`);
      }
      find(lines, (l) => l.tool === 'echo' && l.decision === 'allow' && l.upstream === 'ok', 'echo allowed, ok');
      find(lines, (l) => l.tool === 'fail' && l.decision === 'allow' && l.upstream === 'tool-error', 'fail allowed, tool-error');
      find(lines, (l) => l.tool === 'rpc_error' && l.decision === 'allow' && l.upstream === 'error', 'rpc_error allowed, error');
      const deny = find(lines, (l) => l.tool === 'drop_table' && l.decision === 'deny', 'drop_table denied');
      assert.equal(deny[0].upstream, 'not-forwarded');
      assert.match(deny[0].reason, /tools\.drop_table/);
      const w = lines.filter((l) => l.tool === 'write_file');
      assert.ok(w.filter((l) => l.decision === 'asked').length >= 6, `six questions were asked: ${JSON.stringify(w)}`);
      for (const l of w.filter((x) => x.decision === 'asked')) assert.equal(l.upstream, 'not-forwarded');
      const acc = find(w, (l) => l.decision === 'client-accepted', 'client-accepted');
      assert.equal(acc.length, 1, 'one accepted call');
      assert.equal(acc[0].upstream, 'ok');
      // The accepted call went on record before it went upstream, and only it did.
      const fwd = lines.filter((l) => l.decision === 'forwarding');
      assert.equal(fwd.length, 1, `one forwarding line: ${JSON.stringify(fwd)}`);
      assert.equal(fwd[0].reason, 'client-accepted');
      for (const k of ['tool', 'args_sha256', 'id']) assert.equal(fwd[0][k], acc[0][k], k);
      assert.ok(fwd[0].seq < acc[0].seq, 'forwarding comes before the outcome');
      find(w, (l) => l.decision === 'declined' && l.upstream === 'not-forwarded', 'declined');
      find(w, (l) => l.decision === 'cancelled' && l.upstream === 'not-forwarded', 'cancelled');
      // approve:false is a refusal of some kind; never forwarded.
      const notRun = w.filter((l) => !['asked', 'client-accepted', 'forwarding'].includes(l.decision));
      assert.ok(notRun.length >= 5, `decline, cancel, approve false, changed, tampered: ${JSON.stringify(notRun)}`);
      for (const l of notRun) assert.equal(l.upstream, 'not-forwarded', JSON.stringify(l));
    });
  }

  test('never an argument value, never the word "approved"', async (t) => {
    const { text } = await scenario(t, 'legacy');
    assert.ok(!text.includes(SECRET), 'an argument value is in the audit file');
    assert.ok(!text.includes('PASSWORD-VALUE'), 'part of an argument value is in the audit file');
    assert.doesNotMatch(text, /approved/i);
  });

  test('args_sha256 is the SHA-256 of the RFC 8785 form of the arguments', async (t) => {
    const { lines, args } = await scenario(t, 'legacy');
    const echo = lines.find((l) => l.tool === 'echo');
    assert.equal(echo.args_sha256, sha256hex(jcs(args.echo)), `echo: ${JSON.stringify(echo)}`);
    const asked = lines.filter((l) => l.tool === 'write_file' && l.decision === 'asked');
    const accepted = lines.find((l) => l.tool === 'write_file' && l.decision === 'client-accepted');
    assert.equal(accepted.args_sha256, sha256hex(jcs(args.accept)));
    assert.ok(asked.some((l) => l.args_sha256 === accepted.args_sha256), 'the question and its acceptance name the same digest');
  });

  test('the same arguments in another key order give the same digest', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy: GATE, dir, audit });
    await s.request(toolCall(1, 'echo', { a: 1, b: { c: 2, d: 3 } }));
    await s.request(toolCall(2, 'echo', { b: { d: 3, c: 2 }, a: 1 }));
    await s.request(toolCall(3, 'echo', { a: 2, b: { c: 2, d: 3 } }));
    await s.closeStdin(5000);
    const lines = readJsonLines(audit).filter((l) => l.tool === 'echo');
    assert.equal(lines.length, 3, JSON.stringify(lines));
    assert.equal(lines[0].args_sha256, lines[1].args_sha256);
    assert.notEqual(lines[0].args_sha256, lines[2].args_sha256);
  });

  test('the journal is appended to, not truncated, and others cannot read a new one', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const fresh = path.join(dir, 'fresh.jsonl');
    fs.writeFileSync(audit, '{"previous":"line"}\n', { mode: 0o600 });
    const s = startSluice(t, { policy: GATE, dir, audit });
    await s.request(toolCall(1, 'echo', {}));
    await s.closeStdin(5000);
    const text = fs.readFileSync(audit, 'utf8');
    assert.ok(text.startsWith('{"previous":"line"}\n'), 'existing records must survive');
    assert.ok(readJsonLines(audit).length >= 2);
    const s2 = startSluice(t, { policy: GATE, dir, audit: fresh });
    await s2.request(toolCall(1, 'echo', {}));
    await s2.closeStdin(5000);
    assert.equal(fs.statSync(fresh).mode & 0o077, 0, `mode ${(fs.statSync(fresh).mode & 0o777).toString(8)}`);
  });

  test('a record is on disk by the time the answer reaches the client', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy: GATE, dir, audit });
    await s.request(toolCall(1, 'drop_table', { table: 'x' }));
    const lines = readJsonLines(audit);
    assert.ok(lines.some((l) => l.tool === 'drop_table' && l.decision === 'deny'), `journal: ${JSON.stringify(lines)}`);
  });

  // The outcome record waits for the upstream's answer; a crash before it must still leave on
  // disk that an accepted call was sent. SIGKILL, with --audit-sync always, while it runs.
  for (const era of ['legacy', 'modern']) {
    test(`killed while an accepted call runs: the journal says it was forwarding (${era})`, async (t) => {
      const dir = tmpDir(t);
      const audit = path.join(dir, 'audit.jsonl');
      const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  sleep:\n    action: confirm\n');
      const s = startSluice(t, { policy, era, dir, audit, args: ['--audit-sync', 'always'] });
      const args = { ms: 60000 };
      const q = assertAsked(await s.request(toolCall('s-1', 'sleep', args)));
      s.send(confirmRetry('s-2', 'sleep', args, q.state, ACCEPT));
      const end = Date.now() + scaled(5000);
      while (!readJsonLines(s.upstreamLog).some((l) => l.method === 'tools/call' && l.params?.name === 'sleep')) {
        assert.ok(Date.now() < end, 'the accepted call never reached the upstream');
        await sleep(20);
      }
      s.proc.kill('SIGKILL');
      await s.waitExit(scaled(3000));
      const lines = readJsonLines(audit).filter((l) => !l.event && l.tool === 'sleep');
      assert.deepEqual(lines.map((l) => l.decision), ['asked', 'forwarding'], JSON.stringify(lines));
      assert.equal(lines[1].args_sha256, sha256hex(jcs(args)));
      assert.equal(lines[1].reason, 'client-accepted');
      assert.equal(lines[1].id, 's-2');
      const v = runSluice(['audit', 'verify', audit]);
      assert.equal(v.status, 0, v.stdout + v.stderr);
    });
  }

  // The journal names an allowed call by the policy's rule ("tools.sleep"), a string of the
  // policy: a reload while the call ran freed it, and the reply's record read freed memory.
  test('a reload while an allowed call runs: its record still names the rule it was allowed by', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const body = 'version: 1\ndefaults:\n  action: allow\ntools:\n  sleep:\n    action: allow\n';
    const policy = writePolicy(dir, body);
    const s = startSluice(t, { policy, dir, audit });
    await s.request(toolCall('warm', 'echo', { x: 1 }));
    s.send(toolCall('s-1', 'sleep', { ms: scaled(1500) }));
    const end = Date.now() + scaled(5000);
    while (!readJsonLines(s.upstreamLog).some((l) => l.method === 'tools/call' && l.params?.name === 'sleep')) {
      assert.ok(Date.now() < end, 'the call never reached the upstream');
      await sleep(20);
    }
    writePolicy(dir, `${body}  other_tool:\n    action: deny\n`);
    await reloadPolicy(s);
    const r = await s.responseTo('s-1', scaled(10000));
    assert.ok(r.result && !r.result.isError, r.raw);
    await s.request(toolCall('after', 'echo', { x: 2 })); // the record is written by now
    const line = readJsonLines(audit).find((l) => !l.event && l.id === 's-1');
    assert.ok(line, fs.readFileSync(audit, 'utf8'));
    assert.equal(line.reason, 'tools.sleep', JSON.stringify(line));
  });

  // The journal stops taking lines (a full disk; here the file size limit, RLIMIT_FSIZE, which
  // needs no mount and no root) partway through the forwarding record of an accepted call.
  test('a forwarding record the journal cannot take: the call is refused, not run, and no cut line stays', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const limit = 8 * 512; // POSIX sh counts ulimit -f in 512-byte blocks
    const wrap = ['sh', '-c', `ulimit -f ${limit / 512} && exec "$0" "$@"`];
    const s = startSluice(t, { policy: GATE, dir, audit, wrap, tag: 'full' });
    const size = () => fs.statSync(audit).size;
    assert.ok((await s.request(toolCall('o', 'echo', {}))).result); // the journal is open
    const before = size();
    assert.ok((await s.request(toolCall('p', 'echo', {}))).result);
    const probe = size() - before; // an echo record's length with a one-character id
    const args = { path: '/full', content: 'x' };
    const q = assertAsked(await s.request(toolCall('w-1', 'write_file', args)));
    // One more echo record, its id padded so that 100 bytes are left: the forwarding record
    // (about 250) goes out in part, then the write fails.
    const pad = limit - 100 - size() - probe;
    assert.ok(pad > 0, `room for the padding: ${pad}`);
    assert.ok((await s.request(toolCall(`p${'x'.repeat(pad)}`, 'echo', {}))).result);
    assert.equal(size(), limit - 100);
    const r = await s.request(confirmRetry('w-2', 'write_file', args, q.state, ACCEPT));
    assert.ok(r.error, `the accepted call must be refused: ${r.raw}`);
    assert.match(r.error.message, /audit journal.*not run/, r.raw);
    const end = Date.now() + scaled(5000);
    while (!/cannot write the audit journal/.test(s.stderr)) {
      assert.ok(Date.now() < end, `no error logged: ${s.stderr}`);
      await sleep(20);
    }
    // A retry of the same accept is not told it ran, and is not run either.
    const again = await s.request(confirmRetry('w-3', 'write_file', args, q.state, ACCEPT));
    assertInvalidState(again, /already used/);
    await s.sync();
    assert.deepEqual(s.upstreamCalls('write_file'), [], 'the upstream never got the call');
    assert.equal(size(), limit - 100, 'the cut line was taken back');
    assert.equal((await s.closeStdin(5000)).code, 0, s.stderr);

    // Room again: the chain goes on from the last whole line, and verifies.
    const s2 = startSluice(t, { policy: GATE, dir, audit, tag: 'room' });
    assert.ok((await s2.request(toolCall('after', 'echo', {}))).result);
    assert.equal((await s2.closeStdin(5000)).code, 0, s2.stderr);
    const lines = fs.readFileSync(audit, 'utf8').split('\n').filter(Boolean);
    for (const l of lines) assert.equal(l.split('{"seq":').length, 2, `a glued line: ${l}`);
    assert.match(lines.find((l) => l.includes('"event":"continued"')) ?? '', /"reason":"restart"/);
    const v = runSluice(['audit', 'verify', audit]);
    assert.equal(v.status, 0, v.stdout + v.stderr);
  });

  test('an audit path that cannot be opened: sluice refuses to start', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: GATE, dir, audit: path.join(dir, 'no', 'such', 'dir', 'a.jsonl') });
    const { code } = await s.waitExit(5000);
    assert.notEqual(code, 0, 'running without the journal that was asked for must not happen silently');
  });
});
