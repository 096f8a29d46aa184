// wrap.test.mjs: sluice as a wrapper, the way launchers call it (issue 21). MCP Inspector and
// others drop the "--", so `sluice --policy p.yaml node srv.js` must run `node srv.js` as the
// upstream, as env(1) and timeout(1) would; a usage error is one line, not the whole help.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  FAKE_UPSTREAM, SluiceProc, legacyCall, legacyHandshake, resultText, runSluice, sluiceCommand,
  suiteOptions, tmpDir, writePolicy,
} from './lib.mjs';

const POLICY = 'version: 1\ndefaults:\n  action: allow\ntools:\n  drop_table:\n    action: deny\n';

/** sluice ARGS, spawned exactly as given (no "--" added), with a SluiceProc around it. */
function spawnRaw(t, dir, args) {
  const cmd = sluiceCommand(args);
  const env = { ...process.env };
  delete env.SLUICE_STATE_KEY;
  const proc = spawn(cmd.file, cmd.args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const s = new SluiceProc(proc, { dir, upstreamLog: path.join(dir, 'up.jsonl'), pidFile: path.join(dir, 'up.pid'), args, memcheck: cmd.memcheck });
  t.after(() => s.kill());
  return s;
}

describe('sluice as a wrapper', suiteOptions(), () => {
  for (const dashdash of [false, true]) {
    test(`the upstream command ${dashdash ? 'after --' : 'without --'} is run and gated`, async (t) => {
      const dir = tmpDir(t);
      const policy = writePolicy(dir, POLICY);
      const upstream = [process.execPath, FAKE_UPSTREAM, `FAKE_UPSTREAM_LOG=${path.join(dir, 'up.jsonl')}`,
        `FAKE_PID_FILE=${path.join(dir, 'up.pid')}`];
      const s = spawnRaw(t, dir, ['--policy', policy, '--log-level', 'debug', ...(dashdash ? ['--'] : []), ...upstream]);
      await legacyHandshake(s);
      const echo = await s.request(legacyCall(1, 'echo', { text: 'hi' }));
      assert.match(resultText(echo), /hi/, JSON.stringify(echo));
      const drop = await s.request(legacyCall(2, 'drop_table', { table: 't' }));
      assert.ok(drop.error || drop.result?.isError, `drop_table must be refused: ${JSON.stringify(drop)}`);
      // What ran upstream: the fake server (not the built-in demo), and only the allowed call.
      assert.deepEqual(s.upstreamCalls('echo').length, 1);
      assert.deepEqual(s.upstreamCalls('drop_table').length, 0);
      assert.equal(s.upstreamPids().length, 1);
      await s.closeStdin();
    });
  }

  test('check --against runs the command without --', (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  echo:\n    action: allow\n  no_such_tool:\n    action: deny\n');
    const r = runSluice(['check', '--policy', policy, '--against', process.execPath, FAKE_UPSTREAM]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /no_such_tool/);
    assert.match(r.stdout, /the server lists \d+ tools/);
  });

  const usage = [
    [['--foo'], /^sluice: unknown option "--foo"; see sluice --help\n$/],
    [['--policy'], /^sluice: option --policy needs a value; see sluice --help\n$/],
    [['--log-level', 'loud'], /^sluice: unknown log level "loud"; see sluice --help\n$/],
    [['check', '--policy', 'p.yaml', 'cat'], /^sluice: .*--against.*; see sluice --help\n$/],
  ];
  for (const [args, re] of usage) {
    test(`usage error in one line: sluice ${args.join(' ')}`, () => {
      const r = runSluice(args);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, re);
      assert.equal(r.stdout, '');
    });
  }

  test('--help still prints the help, with the wrapper convention', () => {
    const r = runSluice(['--help']);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /first argument\s+that is not an option starts UPSTREAM_CMD/);
  });
});
