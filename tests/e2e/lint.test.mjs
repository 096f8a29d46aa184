// lint.test.mjs: the policy against the live server. `sluice check --against` lists the server's
// tools and fails on a policy tool the server lacks; at start sluice logs the same findings as
// warnings, and never lets annotations relax a rule.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FAKE_UPSTREAM, runSluice, sleep, startSluice, suiteOptions, tmpDir, toolCall, writePolicy } from './lib.mjs';

const fake = (era) => [process.execPath, FAKE_UPSTREAM, `FAKE_ERA=${era}`];

describe('policy against the live server', suiteOptions(), () => {
  for (const era of ['legacy', 'modern']) {
    test(`check --against: a policy tool the ${era} server lacks is an error (exit 1)`, (t) => {
      const dir = tmpDir(t);
      const policy = writePolicy(dir, 'version: 1\ntools:\n  write_file:\n    action: confirm\n  no_such_tool:\n    action: confirm\n');
      const r = runSluice(['check', '--policy', policy, '--against', '--', ...fake(era)], { timeout: 20000 });
      assert.equal(r.status, 1, r.stdout + r.stderr);
      assert.match(r.stdout, /the server lists \d+ tools/);
      assert.match(r.stdout, /error: the policy names tool "no_such_tool", which the server does not list/);
      assert.doesNotMatch(r.stdout, /"write_file", which the server does not list/);
    });

    test(`check --against: every policy tool exists on the ${era} server (exit 0), risky defaults warned`, (t) => {
      const dir = tmpDir(t);
      const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  write_file:\n    action: confirm\n');
      const r = runSluice(['check', '--policy', policy, '--against', '--', ...fake(era)], { timeout: 20000 });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /warning: server tool "delete_file" may change or destroy data/);
      assert.doesNotMatch(r.stdout, /server tool "write_file"/, 'a tool the policy names is not a risky default');
      assert.match(r.stdout, /0 errors/);
    });
  }

  test('check --against: an argument rule on a name the tool\'s schema does not list is an error, with the near name', (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: confirm\ntools:\n  write_file:\n    action: allow\n    args:\n      filepath: {deny_glob: ["/etc/**"]}\n');
    const r = runSluice(['check', '--policy', policy, '--against', '--', ...fake('modern'), 'FAKE_PARAM_TOOLS=1'], { timeout: 20000 });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /error: the rule tools\.write_file\.args\.filepath names an argument the server's input schema for "write_file" does not list, so it checks nothing .*; did you mean "path"\?/);
    assert.match(r.stdout, /1 error/);
    const fixed = writePolicy(dir, 'version: 1\ndefaults:\n  action: confirm\ntools:\n  write_file:\n    action: allow\n    args:\n      path: {deny_glob: ["/etc/**"]}\n');
    const ok = runSluice(['check', '--policy', fixed, '--against', '--', ...fake('modern'), 'FAKE_PARAM_TOOLS=1'], { timeout: 20000 });
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  });

  test('check --against with a default of confirm: no risky-default warnings', (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: confirm\n');
    const r = runSluice(['check', '--policy', policy, '--against', '--', ...fake('legacy')], { timeout: 20000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.doesNotMatch(r.stdout, /warning:/);
  });

  test('check --against a command that does not exist: exit 1', (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\n');
    const r = runSluice(['check', '--policy', policy, '--against', '--', '/nonexistent/server'], { timeout: 20000 });
    assert.equal(r.status, 1, r.stdout + r.stderr);
  });

  test('--against needs an upstream command, and an upstream command needs --against', (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\n');
    assert.notEqual(runSluice(['check', '--policy', policy, '--against']).status, 0);
    assert.notEqual(runSluice(['check', '--policy', policy, '--', 'true']).status, 0);
  });

  test('a client tools/list logs a destructive-looking default once, and relays the list whole', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  write_file:\n    action: confirm\n');
    const s = startSluice(t, { policy, dir });
    for (const id of [1, 2]) {
      const r = await s.request({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
      assert.ok(r.result.tools.some((x) => x.name === 'delete_file'), r.raw);
    }
    const count = () => s.stderr.split('\n').filter((l) => /server tool "delete_file" may change or destroy data/.test(l)).length;
    for (let i = 0; i < 60 && count() === 0; i++) await sleep(50);
    await s.sync();
    await sleep(200);
    assert.equal(count(), 1, s.stderr);
  });

  test('at start, a policy tool the server lacks is logged as a warning; serving goes on', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  wirte_file:\n    action: confirm\n');
    const s = startSluice(t, { policy, dir });
    const r = await s.request(toolCall(1, 'echo', { x: 1 }));
    assert.ok(r.result, r.raw);
    for (let i = 0; i < 50 && !/wirte_file/.test(s.stderr); i++) await sleep(50);
    assert.match(s.stderr, /warning: policy check: the policy names tool "wirte_file", which the server does not list/);
  });
});
