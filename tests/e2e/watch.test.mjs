// watch.test.mjs: --watch-policy (issue 21). sluice looks at the policy file every second and
// reloads it when it changes, with SIGHUP's validation and logging: a new policy applies to the
// next call, a broken one is refused and the old one stays, and a Kubernetes ConfigMap update
// (the ..data symlink swapped to a new directory) is seen; a file written in place in pieces is
// reloaded once it has stopped changing, never halfway. Decisions are checked on what the
// upstream executed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  legacyCall, legacyHandshake, resultText, runSluice, sleep, startSluice, suiteOptions, tmpDir,
  writePolicy, scaled,
} from './lib.mjs';

const ALLOW_ECHO = 'version: 1\ndefaults:\n  action: allow\ntools:\n  drop_table:\n    action: deny\n';
const DENY_ECHO = 'version: 1\ndefaults:\n  action: allow\ntools:\n  echo:\n    action: deny\n';

/** Waits until stderr has matched re count times (the log is the only sign of a reload). */
async function waitLog(s, re, count = 1, ms = scaled(10000)) {
  const end = Date.now() + ms;
  const g = new RegExp(re.source, 'g');
  while (Date.now() < end) {
    if ((s.stderr.match(g) || []).length >= count) return;
    await sleep(50);
  }
  assert.fail(`no ${count}x ${re} in the log within ${ms} ms:\n${s.stderr.slice(-3000)}`);
}

/** Calls echo; returns true when it ran upstream. */
async function echoRuns(s, id) {
  const before = s.upstreamCalls('echo').length;
  const r = await s.request(legacyCall(id, 'echo', { text: `call-${id}` }));
  const ran = s.upstreamCalls('echo').length > before;
  if (ran) assert.match(resultText(r), new RegExp(`call-${id}`));
  else assert.ok(r.error || r.result?.isError, JSON.stringify(r));
  return ran;
}

/** Replaces the file the way an editor that writes a new file and renames it over does. */
function replaceFile(file, text) {
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}

describe('--watch-policy', suiteOptions(), () => {
  test('a changed file applies; a broken one is refused and the old one stays', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, ALLOW_ECHO);
    const s = startSluice(t, { dir, policy, args: ['--watch-policy'] });
    await legacyHandshake(s);
    assert.equal(await echoRuns(s, 1), true);
    await waitLog(s, /watching .* for changes/);

    fs.writeFileSync(policy, DENY_ECHO); // in place
    await waitLog(s, /policy file changed: policy reloaded from .* \(1 tool named\)/);
    assert.equal(await echoRuns(s, 2), false, 'the new policy denies echo');

    replaceFile(policy, 'version: 1\ntools:\n  echo:\n    acton: allow\n');
    // Its own error, not a refusal of the in-place write above read halfway (an empty file).
    await waitLog(s, /:4:5: unknown key "acton"/);
    await waitLog(s, /policy file changed: the policy in .* is refused \(see above\); the previous one stays/);
    assert.equal(await echoRuns(s, 3), false, 'the old (deny) policy stays');

    replaceFile(policy, ALLOW_ECHO);
    await waitLog(s, /policy file changed: policy reloaded/, 2);
    assert.equal(await echoRuns(s, 4), true);
    // One reload per change: no reload without a change.
    await sleep(scaled(1500));
    assert.equal((s.stderr.match(/policy file changed: policy reloaded/g) || []).length, 2, s.stderr);
    await s.closeStdin();
  });

  test('a file written in place in pieces is not read halfway', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, DENY_ECHO);
    const s = startSluice(t, { dir, policy, args: ['--watch-policy'] });
    await legacyHandshake(s);
    await waitLog(s, /watching .* for changes/);
    // Its first piece alone is a valid policy that allows echo, looser than the old and the new.
    // Each piece follows the last within 250 ms, so every look (once a second) sees it changed.
    const pieces = ['version: 1\ndefaults:\n  action: allow\n'];
    for (let i = 0; i < 12; i++) pieces.push(`# piece ${i}\n`);
    pieces.push('tools:\n  echo:\n    action: deny\n');
    const fd = fs.openSync(policy, 'w');
    const writing = (async () => {
      for (const piece of pieces) {
        fs.writeSync(fd, piece);
        await sleep(250);
      }
    })();
    await sleep(2000); // the writer goes on meanwhile, however long the call takes
    assert.equal(await echoRuns(s, 1), false, 'the half-written file applied');
    await writing;
    fs.closeSync(fd);
    await waitLog(s, /policy file changed: policy reloaded from .* \(1 tool named\)/);
    assert.equal(await echoRuns(s, 2), false);
    assert.equal((s.stderr.match(/policy file changed/g) || []).length, 1, s.stderr);
    await s.closeStdin();
  });

  test('a ConfigMap-style ..data symlink swap is seen', async (t) => {
    const dir = tmpDir(t);
    const cm = path.join(dir, 'cm');
    fs.mkdirSync(path.join(cm, '..2026_01'), { recursive: true });
    fs.writeFileSync(path.join(cm, '..2026_01', 'policy.yaml'), ALLOW_ECHO);
    fs.symlinkSync('..2026_01', path.join(cm, '..data'));
    fs.symlinkSync('..data/policy.yaml', path.join(cm, 'policy.yaml'));
    const policy = path.join(cm, 'policy.yaml');
    const s = startSluice(t, { dir, policy, args: ['--watch-policy'] });
    await legacyHandshake(s);
    assert.equal(await echoRuns(s, 1), true);
    await waitLog(s, /watching .* for changes/);
    // What the kubelet does: a new timestamped directory, a new symlink, renamed over ..data.
    fs.mkdirSync(path.join(cm, '..2026_02'));
    fs.writeFileSync(path.join(cm, '..2026_02', 'policy.yaml'), DENY_ECHO);
    fs.symlinkSync('..2026_02', path.join(cm, '..data_tmp'));
    fs.renameSync(path.join(cm, '..data_tmp'), path.join(cm, '..data'));
    fs.rmSync(path.join(cm, '..2026_01'), { recursive: true });
    await waitLog(s, /policy file changed: policy reloaded from .*cm\/policy\.yaml/);
    assert.equal(await echoRuns(s, 2), false);
    await s.closeStdin();
  });

  test('--watch-policy needs --policy', () => {
    const r = runSluice(['--watch-policy']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^sluice: --watch-policy needs --policy FILE; see sluice --help\n$/);
  });
});
