// strict.test.mjs: --strict and defaults.strict (issue 21). A policy that names a tool the server
// does not list, or lets a tool the server does not annotate readOnlyHint: true fall to allow by
// default, makes sluice refuse to serve: exit 1 after the server's first tools/list, saying which,
// at FILE:LINE:COL, with "did you mean". Without strict the same findings are logged at start.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  legacyCall, legacyHandshake, resultText, runSluice, FAKE_UPSTREAM, startSluice, suiteOptions,
  tmpDir, writePolicy,
} from './lib.mjs';

const MISSPELT = 'version: 1\ndefaults:\n  action: confirm\ntools:\n  echo:\n    action: allow\n  wirte_file:\n    action: confirm\n';
const LOOSE = 'version: 1\ndefaults:\n  action: allow\n  strict: true\ntools:\n  echo:\n    action: allow\n';
const GOOD = 'version: 1\ndefaults:\n  action: confirm\ntools:\n  echo:\n    action: allow\n  write_file:\n    action: confirm\n';

/** Sends initialize without waiting: a refusing sluice never answers it. */
function startHandshake(s) {
  s.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'strict-test', version: '1' } } });
}

describe('strict', suiteOptions(), () => {
  test('--strict: a policy tool the server lacks stops sluice, with its place and a near name', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const s = startSluice(t, { dir, policy, args: ['--strict'] });
    startHandshake(s); // a legacy upstream is initialized with the client's capabilities
    const { code } = await s.waitExit();
    assert.equal(code, 1, s.stderr);
    assert.ok(s.stderr.includes(`${policy}:7:3: the policy names tool "wirte_file", which the server does not list; did you mean "write_file"?`), s.stderr);
    assert.match(s.stderr, /strict: 1 tool named but not listed, 0 not read-only allowed by default; sluice does not serve/);
    const methods = s.upstreamMessages().map((m) => m.method);
    assert.ok(methods.includes('tools/list'), 'it asked the server');
    assert.ok(!methods.includes('tools/call'), 'nothing ran');
  });

  test('defaults.strict: a tool not annotated read-only falling to allow stops sluice', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, LOOSE);
    const s = startSluice(t, { dir, policy });
    startHandshake(s);
    const { code } = await s.waitExit();
    assert.equal(code, 1, s.stderr);
    assert.ok(s.stderr.includes(`${policy}:3:11: server tool "write_file" is not annotated readOnlyHint: true and the policy allows it by default`), s.stderr);
    assert.match(s.stderr, /sluice does not serve/);
  });

  test('defaults.strict with every tool annotated read-only: sluice serves', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, LOOSE);
    const s = startSluice(t, { dir, policy, fake: { FAKE_ANNOTATIONS: '1' } });
    await legacyHandshake(s);
    const r = await s.request(legacyCall(1, 'echo', { text: 'strict-ok' }));
    assert.match(resultText(r), /strict-ok/);
    assert.equal(s.upstreamCalls('echo').length, 1);
    await s.closeStdin();
  });

  test('--strict with a policy that matches: sluice serves', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, GOOD);
    const s = startSluice(t, { dir, policy, args: ['--strict'] });
    await legacyHandshake(s);
    const r = await s.request(legacyCall(1, 'echo', { text: 'fine' }));
    assert.match(resultText(r), /fine/);
    assert.equal(s.upstreamCalls('echo').length, 1);
    await s.closeStdin();
  });

  test('without strict: the same findings are logged at start, with the place, and it serves', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const s = startSluice(t, { dir, policy });
    await legacyHandshake(s);
    const r = await s.request(legacyCall(1, 'echo', { text: 'served' }));
    assert.match(resultText(r), /served/);
    assert.ok(s.stderr.includes(`the policy names tool "wirte_file", which the server does not list; did you mean "write_file"? (at ${policy}:7:3)`), s.stderr);
    await s.closeStdin();
  });

  test('check --strict: loose defaults are errors', (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  echo:\n    action: allow\n');
    const plain = runSluice(['check', '--policy', policy, '--against', process.execPath, FAKE_UPSTREAM], { timeout: 20000 });
    assert.equal(plain.status, 0, plain.stdout + plain.stderr);
    const strict = runSluice(['check', '--strict', '--policy', policy, '--against', process.execPath, FAKE_UPSTREAM], { timeout: 20000 });
    assert.equal(strict.status, 1, strict.stdout + strict.stderr);
    assert.ok(strict.stdout.includes(`${policy}: error: server tool "write_file" is not annotated readOnlyHint: true`), strict.stdout);
    assert.match(strict.stdout, /\d+ errors, 0 warnings \(strict\)/);
  });
});
