// lifecycle.test.mjs: start-up, shutdown and child-process hygiene. No upstream may outlive sluice.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { waitLog } from './http_lib.mjs';
import {
  legacyCall, legacyHandshake, modernRequest, nextElicitation, pidAlive, policyPath, readJsonLines,
  runSluice, scaled, sleep, startSluice, suiteOptions, tmpDir, toolCall, waitPidGone, writePolicy,
} from './lib.mjs';

const GATE = policyPath('gate.yaml');

describe('shutdown', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`client EOF: sluice exits 0 promptly and the upstream is gone (${era})`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const r = await s.request(toolCall(1, 'echo', {}));
      assert.ok(r.result, r.raw);
      const child = await s.upstreamPid();
      assert.ok(pidAlive(child));
      const { code, signal } = await s.closeStdin(5000);
      assert.equal(signal, null, `sluice died of ${signal}; stderr:\n${s.stderr}`);
      assert.equal(code, 0, `exit code on client EOF; stderr:\n${s.stderr}`);
      assert.ok(await waitPidGone(child, 3000), `upstream pid ${child} survived sluice`);
    });
  }

  test('client EOF before the upstream ever answered: exit 0, upstream gone', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const child = await s.upstreamPid();
    const { code } = await s.closeStdin(5000);
    assert.equal(code, 0, s.stderr);
    assert.ok(await waitPidGone(child, 3000));
  });

  test('client EOF in the middle of a line: exit 0', async (t) => {
    const s = startSluice(t, { policy: GATE });
    await s.request(toolCall(1, 'echo', {}));
    s.sendRaw('{"jsonrpc":"2.0","id":2,"method":"tools/ca');
    const { code } = await s.closeStdin(5000);
    assert.equal(code, 0, s.stderr);
  });

  test('client EOF with an upstream that ignores EOF: sluice still exits 0 and the upstream is gone', async (t) => {
    const s = startSluice(t, { policy: GATE, fake: { FAKE_IGNORE_EOF: '1' } });
    await s.request(toolCall(1, 'echo', {}));
    const child = await s.upstreamPid();
    const { code } = await s.closeStdin(15000);
    assert.equal(code, 0, s.stderr);
    assert.ok(await waitPidGone(child, 3000), `upstream pid ${child} survived`);
  });

  // A child being stopped can close its stdin while sluice still writes to it (it had stopped
  // reading, and sluice's output waits): that write error must not put off the SIGTERM due 1 s
  // after client EOF, nor the SIGKILL due 1 s after that, as it would by the 2 s of grace a
  // child found deaf while it serves is given.
  for (const [sig, due] of [['SIGUSR1', 1000], ['SIGTERM', 2000]]) {
    test(`client EOF, then the child closes its stdin on ${sig}: its stop is not put off`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.send(toolCall('stall', 'stall', { deafOn: sig }));
      await waitLog(s, /stall: reading no more/, 5000);
      // Nothing in flight (client EOF then stops the child at once), and more than its stdin
      // pipe holds queued in sluice: the write side stays open after client EOF.
      s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'stall' } });
      const pad = 'x'.repeat(256 * 1024);
      for (let i = 0; i < 4; i++) s.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: { pad } });
      const child = await s.upstreamPid();
      await sleep(500);
      const t0 = Date.now();
      const exited = s.closeStdin(15000);
      if (sig === 'SIGUSR1') { // well before the SIGTERM due, which SIGUSR1 leaves fatal
        await sleep(300);
        try { process.kill(child, sig); } catch { /* already gone */ }
      }
      const { code } = await exited;
      const took = Date.now() - t0;
      assert.equal(code, 0, s.stderr);
      assert.ok(await waitPidGone(child, 3000), `upstream pid ${child} survived`);
      await waitLog(s, new RegExp(`stall: stdin closed on ${sig}`), 1000);
      assert.ok(took < due + scaled(700), `the child's stop was put off: sluice exited ${took} ms after client EOF`);
    });
  }

  test('SIGTERM: exits promptly, upstream gone', async (t) => {
    const s = startSluice(t, { policy: GATE });
    await s.request(toolCall(1, 'echo', {}));
    const child = await s.upstreamPid();
    s.proc.kill('SIGTERM');
    const { code, signal } = await s.waitExit(5000);
    assert.ok(signal === null || signal === 'SIGTERM', `sluice died of ${signal}`);
    assert.ok(code === null || code === 0 || code === 143, `exit code ${code} on SIGTERM`);
    assert.ok(await waitPidGone(child, 3000), `upstream pid ${child} survived SIGTERM of sluice`);
  });

  test('SIGTERM while a call is in flight: exits promptly, upstream gone', async (t) => {
    const s = startSluice(t, { policy: GATE, fake: { FAKE_IGNORE_EOF: '1' } });
    s.send(toolCall(1, 'sleep', { ms: 30000 }));
    const child = await s.upstreamPid();
    await sleep(200);
    s.proc.kill('SIGTERM');
    await s.waitExit(8000);
    assert.ok(await waitPidGone(child, 3000), `upstream pid ${child} survived`);
  });

  test('kill -9 of sluice still takes the upstream down within 2 s (PR_SET_PDEATHSIG)', async (t) => {
    const s = startSluice(t, { policy: GATE, fake: { FAKE_IGNORE_EOF: '1' } });
    await s.request(toolCall(1, 'echo', {}));
    const child = await s.upstreamPid();
    s.proc.kill('SIGKILL');
    await s.waitExit(3000);
    assert.ok(await waitPidGone(child, 2500), `upstream pid ${child} survived kill -9 of sluice`);
  });
});

describe('upstream failures', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`upstream dies with a request pending: the client gets an error, sluice exits non-zero (${era})`, async (t) => {
      const s = startSluice(t, { policy: GATE, era, fake: { FAKE_EXIT_AFTER: '1' } });
      const r = await s.request(toolCall('pending', 'echo', { x: 1 }), 8000);
      assert.ok(r.error, `expected a JSON-RPC error for the lost request: ${r.raw}`);
      assert.equal(typeof r.error.code, 'number');
      const { code, signal } = await s.waitExit(8000);
      assert.equal(signal, null, `sluice died of ${signal}`);
      assert.notEqual(code, 0, 'sluice must exit non-zero when its upstream dies');
    });
  }

  // sluice's write to a child that closed its stdin fails; what the child writes meanwhile is
  // the answer of a call that ran. It must reach the client, not become "the upstream exited".
  test('a child that stops reading its stdin: its answers written after are still delivered', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.send(toolCall('deaf', 'deaf', { afterMs: 1000, bytes: 200000 }));
    await waitLog(s, /deaf: stdin closed/, 5000);
    s.send(toolCall('next', 'echo', { x: 1 })); // its write fails: the child reads no more
    const r = await s.responseTo('deaf', 8000);
    assert.ok(r.result, `the answer the child wrote: ${r.raw.slice(0, 300)}`);
    assert.equal(r.result.content[0].text.length, 200000);
    const next = await s.responseTo('next', 8000);
    assert.ok(next.error, `the call the child never read fails: ${next.raw}`);
    assert.match(s.stderr, /stopped reading its stdin/);
  });

  // Once that write failed, the child reads nothing more: a request sent after would wait in the
  // pipe until the child is gone (seconds later) and fail unrun. It is refused at once, as when
  // the upstream is gone; the call the child read still gets its answer.
  test('a child that stops reading its stdin: a request sent after is refused at once', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.send(toolCall('deaf', 'deaf', { afterMs: 1000, bytes: 1000 }));
    await waitLog(s, /deaf: stdin closed/, 5000);
    s.send(toolCall('next', 'echo', { x: 1 })); // its write fails: the child reads no more
    await waitLog(s, /stopped reading its stdin/, 5000);
    const later = await s.request(toolCall('later', 'echo', { x: 2 }), 8000);
    assert.ok(later.error, `a request to a child that cannot hear it: ${later.raw}`);
    assert.match(later.error.message, /not running/, later.raw);
    const r = await s.responseTo('deaf', 8000);
    assert.ok(r.result, `the answer the child wrote: ${r.raw.slice(0, 300)}`);
    assert.equal(r.result.content[0].text.length, 1000);
  });

  // A call the person accepted while the child reads nothing is not sent, and the journal says
  // so: no `forwarding` line, and its outcome `unavailable`, not an upstream `error`.
  test('a call accepted while the child reads nothing is journaled as never sent', async (t) => {
    const audit = path.join(tmpDir(t), 'audit.jsonl');
    const s = startSluice(t, { policy: GATE, audit });
    await legacyHandshake(s);
    s.send(legacyCall('held', 'write_file', { path: '/x', content: 'y' }));
    const q = await nextElicitation(s);
    s.send(legacyCall('deaf', 'deaf', { afterMs: 8000, bytes: 10 }));
    await waitLog(s, /deaf: stdin closed/, 5000);
    s.send(legacyCall('next', 'echo', { x: 1 })); // its write fails: the child reads no more
    await waitLog(s, /stopped reading its stdin/, 5000);
    s.send({ jsonrpc: '2.0', id: q.id, result: { action: 'accept', content: { approve: true } } });
    const r = await s.responseTo('held', 5000);
    assert.ok(r.error, `the accepted call is refused: ${r.raw}`);
    assert.match(r.error.message, /not running/, r.raw);
    await s.waitExit(8000);
    const recs = readJsonLines(audit).filter((l) => l.id === 'held');
    assert.deepEqual(recs.map((l) => [l.decision, l.upstream]),
      [['asked', 'not-forwarded'], ['client-accepted', 'unavailable']], JSON.stringify(recs));
    const v = runSluice(['audit', 'verify', audit]);
    assert.equal(v.status, 0, `audit verify: ${v.stdout}${v.stderr}`);
  });

  test('several pending requests all get errors when the upstream dies', async (t) => {
    const s = startSluice(t, { policy: GATE, fake: { FAKE_EXIT_AFTER: '3' } });
    s.send(toolCall('a', 'sleep', { ms: 5000 }));
    s.send(toolCall('b', 'sleep', { ms: 5000 }));
    s.send(toolCall('c', 'echo', {}));
    for (const id of ['a', 'b', 'c']) {
      const r = await s.responseTo(id, 8000);
      assert.ok(r.error, r.raw);
    }
    const { code } = await s.waitExit(8000);
    assert.notEqual(code, 0);
  });

  test('an upstream that exits at once: sluice exits non-zero', async (t) => {
    const s = startSluice(t, { policy: GATE, upstream: [process.execPath, '-e', 'process.exit(3)'] });
    const { code, signal } = await s.waitExit(8000);
    assert.equal(signal, null, `sluice died of ${signal}`);
    assert.notEqual(code, 0);
  });

  test('an upstream command that does not exist: sluice exits non-zero and says so', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: GATE, dir, upstream: [path.join(dir, 'no-such-command')] });
    const { code, signal } = await s.waitExit(8000);
    assert.equal(signal, null, `sluice died of ${signal}`);
    assert.notEqual(code, 0);
    assert.ok(s.stderr.length > 0, 'an explanation on stderr');
  });

  test("the upstream's stderr passes through to sluice's stderr", async (t) => {
    const s = startSluice(t, { policy: GATE });
    await s.request(toolCall(1, 'echo', {}));
    const child = await s.upstreamPid();
    await s.closeStdin(5000);
    assert.ok(s.stderr.includes(`fake-upstream: started pid=${child}`), `stderr was:\n${s.stderr}`);
  });

  test('exactly one upstream process is started', async (t) => {
    const s = startSluice(t, { policy: GATE });
    await s.request(modernRequest(1, 'tools/list'));
    await s.request(toolCall(2, 'echo', {}));
    assert.equal(s.upstreamPids().length, 1, `upstream pids: ${s.upstreamPids()}`);
  });
});

describe('start-up errors', suiteOptions(), () => {
  test('a policy that fails validation: exit non-zero, file:line:col on stderr, no upstream started', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  echo:\n    action: sometimes\n');
    const s = startSluice(t, { policy, dir });
    const { code } = await s.waitExit(5000);
    assert.notEqual(code, 0);
    assert.ok(s.stderr.includes(`${policy}:4:13:`), `stderr: ${s.stderr}`);
    await sleep(300);
    assert.equal(s.upstreamPids().length, 0, 'no upstream for a bad policy');
  });

  test('a missing policy file: exit non-zero', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: path.join(dir, 'nope.yaml'), dir });
    const { code } = await s.waitExit(5000);
    assert.notEqual(code, 0);
  });

  test('no upstream command: exit non-zero', async (t) => {
    const s = startSluice(t, { policy: GATE, upstream: [] });
    const { code } = await s.waitExit(5000);
    assert.notEqual(code, 0);
  });
});
