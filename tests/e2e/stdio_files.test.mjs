// stdio_files.test.mjs: `sluice < requests.jsonl > out.jsonl`. epoll refuses regular files and
// /dev/null, so a front that only polls hangs on such a stdin and never writes such a stdout.
// Each case runs sluice with a file (or /dev/null) as stdin and/or stdout, waits for it to exit
// at the end of its input (it answers what it read first), and checks every response and what
// the upstream executed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  FAKE_UPSTREAM, LEGACY, SANITIZER_RE, checkMemcheck, deadline, policyPath, readJsonLines, sluiceCommand,
  suiteOptions, tmpDir,
} from './lib.mjs';

const GATE = policyPath('gate.yaml');
const CALLS = 300; // several read chunks of the file, and more replies than one write

function requests() {
  const lines = [
    { jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'stdio-files', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 'list', method: 'tools/list' },
  ];
  for (let i = 0; i < CALLS; i++) lines.push({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { marker: `m${i}`, pad: 'p'.repeat(200) } } });
  lines.push({ jsonrpc: '2.0', id: 'denied', method: 'tools/call', params: { name: 'drop_table', arguments: { table: 't' } } });
  return lines;
}

/**
 * Runs sluice with stdin and stdout as given: 'file' (a file in dir), 'null' (/dev/null) or
 * 'pipe'. Returns {code, signal, stderr, out (lines), upstream (messages)} once it exited.
 */
async function runWith(t, stdin, stdout, fakeEnv = {}) {
  const dir = tmpDir(t);
  const reqFile = path.join(dir, 'requests.jsonl');
  const outFile = path.join(dir, 'out.jsonl');
  const upLog = path.join(dir, 'upstream.jsonl');
  const text = `${requests().map((m) => JSON.stringify(m)).join('\n')}\n`;
  fs.writeFileSync(reqFile, text);
  const fds = [];
  const open = (p, flags) => { const fd = fs.openSync(p, flags); fds.push(fd); return fd; };
  const inFd = stdin === 'file' ? open(reqFile, 'r') : stdin === 'null' ? open('/dev/null', 'r') : 'pipe';
  const outFd = stdout === 'file' ? open(outFile, 'w') : stdout === 'null' ? open('/dev/null', 'w') : 'pipe';
  const cmd = sluiceCommand(['--policy', GATE, '--', process.execPath, FAKE_UPSTREAM, `FAKE_UPSTREAM_LOG=${upLog}`]);
  const env = { ...process.env, FAKE_ERA: 'legacy', FAKE_UPSTREAM_LOG: upLog, ...fakeEnv };
  delete env.SLUICE_STATE_KEY;
  const proc = spawn(cmd.file, cmd.args, { stdio: [inFd, outFd, 'pipe'], env });
  for (const fd of fds) fs.closeSync(fd);
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  let stderr = '';
  let piped = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  if (proc.stdout) proc.stdout.on('data', (d) => { piped += d; });
  if (proc.stdin) proc.stdin.end(text);
  const ms = deadline(20000);
  const { code, signal } = await new Promise((resolve) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); resolve({ code: null, signal: 'timeout' }); }, ms);
    proc.on('close', (c, s) => { clearTimeout(timer); resolve({ code: c, signal: s }); });
  });
  assert.doesNotMatch(stderr, SANITIZER_RE, stderr);
  if (cmd.memcheck) checkMemcheck(cmd.memcheck, { killed: signal === 'SIGKILL' || signal === 'timeout' });
  assert.notEqual(signal, 'timeout', `sluice did not exit within ${ms} ms at the end of its input (stdin ${stdin}, stdout ${stdout}); stderr:\n${stderr.slice(-2000)}`);
  const outText = stdout === 'file' ? fs.readFileSync(outFile, 'utf8') : piped;
  const out = outText.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  return { code, signal, stderr, out, upstream: readJsonLines(upLog) };
}

function assertAllAnswered(r, what) {
  assert.equal(r.code, 0, `${what}: exit ${r.code} ${r.signal}; stderr:\n${r.stderr.slice(-2000)}`);
  const byId = new Map(r.out.filter((m) => 'id' in m && !('method' in m)).map((m) => [m.id, m]));
  assert.ok(byId.get('init') && byId.get('init').result, `${what}: initialize answered`);
  assert.ok(byId.get('list') && byId.get('list').result.tools.some((x) => x.name === 'echo'), `${what}: tools/list answered`);
  for (let i = 0; i < CALLS; i++) {
    const m = byId.get(i);
    assert.ok(m && m.result && !m.result.isError, `${what}: call ${i} answered: ${JSON.stringify(m)}`);
    assert.match(JSON.stringify(m.result), new RegExp(`"m${i}"`), `${what}: call ${i}'s own result`);
  }
  const denied = byId.get('denied');
  assert.ok(denied && (denied.error || (denied.result && denied.result.isError)), `${what}: the denied call is refused: ${JSON.stringify(denied)}`);
  assert.equal(byId.size, CALLS + 3, `${what}: exactly one response per request`);
}

function assertExecuted(r, what) {
  const calls = r.upstream.filter((m) => m.method === 'tools/call');
  assert.equal(calls.filter((m) => m.params.name === 'echo').length, CALLS, `${what}: every echo call ran once`);
  assert.equal(calls.filter((m) => m.params.name === 'drop_table').length, 0, `${what}: the denied call never ran`);
}

describe('stdio with files', suiteOptions(), () => {
  test('stdin a file, stdout a file: every request answered in the output file, then exit 0', async (t) => {
    const r = await runWith(t, 'file', 'file');
    assertAllAnswered(r, 'file to file');
    assertExecuted(r, 'file to file');
  });

  test('stdin a file, stdout a pipe', async (t) => {
    const r = await runWith(t, 'file', 'pipe');
    assertAllAnswered(r, 'file to pipe');
    assertExecuted(r, 'file to pipe');
  });

  test('stdin a pipe, stdout a file', async (t) => {
    const r = await runWith(t, 'pipe', 'file');
    assertAllAnswered(r, 'pipe to file');
    assertExecuted(r, 'pipe to file');
  });

  test('stdin a file, stdout /dev/null: the calls run and sluice exits 0', async (t) => {
    const r = await runWith(t, 'file', 'null');
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assertExecuted(r, 'file to /dev/null');
  });

  test('a slow server: the end of the input waits for every answer (longer than the 1 s an ended client gets)', async (t) => {
    const r = await runWith(t, 'file', 'file', { FAKE_SLOW_MS: '1500' });
    assertAllAnswered(r, 'slow server');
    assertExecuted(r, 'slow server');
    assert.match(r.stderr, /end of input: answering the \d+ calls? still in flight first/, r.stderr.slice(-2000));
  });

  test('stdin /dev/null: sluice exits 0 at once, nothing runs', async (t) => {
    const r = await runWith(t, 'null', 'file');
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.deepEqual(r.out, []);
    assert.equal(r.upstream.filter((m) => m.method === 'tools/call').length, 0);
  });
});
