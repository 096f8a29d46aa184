// check_http.test.mjs: `sluice check --against --upstream URL` (issue 21): the policy against a
// Streamable HTTP server's tools/list, with findings at FILE:LINE:COL and "did you mean"; and an
// option that check does not use is an error, not silently ignored.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { RawUpstream } from './raw_http_upstream.mjs';
import { runSluice, runSluiceAsync as runAsync, suiteOptions, tmpDir, writePolicy } from './lib.mjs';

async function upstream(t, era) {
  const up = new RawUpstream({ era });
  up.tool('write_file', async (req, res, msg) => res.json(200, up.result(msg, { content: [] })));
  await up.listen(0);
  t.after(() => up.close());
  return up;
}

const listed = (up) => up.requests.filter((r) => r.json && r.json.method === 'tools/list').length;

describe('sluice check --against --upstream URL', suiteOptions(), () => {
  for (const era of ['modern', 'legacy']) {
    test(`${era}: a misspelt tool is an error at its line and column, with did-you-mean`, async (t) => {
      const up = await upstream(t, era);
      const dir = tmpDir(t);
      const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  echo:\n    action: allow\n  wirte_file:\n    action: confirm\n');
      const r = await runAsync(['check', '--policy', policy, '--against', '--upstream', up.url()]);
      assert.equal(r.status, 1, r.stdout + r.stderr);
      assert.ok(listed(up) >= 1, 'the server was asked for its tools');
      assert.match(r.stdout, /the server lists 2 tools/);
      const at = `${policy}:7:3: error: the policy names tool "wirte_file", which the server does not list; did you mean "write_file"?`;
      assert.ok(r.stdout.includes(at), `expected\n${at}\nin\n${r.stdout}`);
      // The real tool falls to allow by default: a warning at defaults.action, pointing back.
      assert.ok(r.stdout.includes(`${policy}:3:11: warning: server tool "write_file" may change or destroy data`), r.stdout);
      assert.match(r.stdout, /did you mean it by "wirte_file" at line 7\?\)/);
      assert.match(r.stdout, /1 error, 1 warning/);
    });
  }

  test('a name in another case is suggested; a far name is not', async (t) => {
    const up = await upstream(t, 'modern');
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: confirm\ntools:\n  Echo: {action: allow}\n  something_else: {action: deny}\n');
    const r = await runAsync(['check', '--policy', policy, '--against', '--upstream', up.url()]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.ok(r.stdout.includes(`${policy}:5:3: error: the policy names tool "Echo", which the server does not list; did you mean "echo"?`), r.stdout);
    assert.match(r.stdout, /"something_else", which the server does not list\n/);
  });

  test('every policy tool listed: exit 0', async (t) => {
    const up = await upstream(t, 'modern');
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: deny\ntools:\n  echo: {action: allow}\n  write_file: {action: confirm}\n');
    const r = await runAsync(['check', '--policy', policy, '--against', '--upstream', up.url()]);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /0 errors, 0 warnings/);
    assert.ok(listed(up) >= 1);
  });

  test('a server that is not there: exit 1, said', async (t) => {
    const srv = net.createServer();
    await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const port = srv.address().port;
    await new Promise((resolve) => srv.close(resolve));
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\n');
    const r = await runAsync(['check', '--policy', policy, '--against', '--upstream', `http://127.0.0.1:${port}/mcp`]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /error: the server did not list its tools within 10 s|error: cannot reach/);
  });

  const usage = [
    [['--upstream', 'http://127.0.0.1:1/mcp'], /check takes an upstream only with --against/],
    [['--against'], /check --against needs UPSTREAM_CMD or --upstream URL/],
    [['--listen', '127.0.0.1:0'], /check does not use --listen/],
    [['--audit', 'x.jsonl'], /check does not use --audit/],
    [['--against', '--upstream', 'http://127.0.0.1:1/mcp', 'node'], /exclude each other/],
  ];
  for (const [extra, re] of usage) {
    test(`usage error: check ${extra.join(' ')}`, (t) => {
      const dir = tmpDir(t);
      const policy = writePolicy(dir, 'version: 1\n');
      const r = runSluice(['check', '--policy', policy, ...extra]);
      assert.equal(r.status, 2, r.stdout + r.stderr);
      assert.match(r.stderr, re);
      assert.equal(r.stderr.split('\n').length, 2, r.stderr);
      assert.doesNotMatch(r.stdout, /ok/);
    });
  }
});
