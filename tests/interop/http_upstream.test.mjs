// http_upstream.test.mjs: sluice as a sidecar, HTTP on both sides, with real SDK peers.
//
//   @modelcontextprotocol/client 2.4.0 (2026-07-28, elicitation handler)
//     --HTTP--> sluice --listen ... --upstream http://.../mcp
//     --HTTP--> @modelcontextprotocol/sdk 1.32.2 McpServer, stateful Streamable HTTP (2025-11-25)
//
// The server writes real files; the assertions are on the folder. Also: the upstream down gives
// the client a clear error and nothing is retried; a restarted upstream (its sessions lost) is
// initialized again.
//
// Setup: (cd tests/interop && npm install --no-package-lock). Without node_modules the test is
// skipped, except under CI=true, where it fails.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLIENT_PKG = path.join(HERE, 'node_modules', '@modelcontextprotocol', 'client', 'package.json');
const SDK1_PKG = path.join(HERE, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json');
const SERVER = path.join(HERE, 'http_server.mjs');
const SLUICE_BIN = path.resolve(process.env.SLUICE_BIN || path.join(HERE, '../../build/proxy/sluice'));
const SANITIZER_RE = /ERROR: AddressSanitizer|runtime error:|LeakSanitizer/;
const MODERN = '2026-07-28';
const DEADLINE_MS = 20000;

function skipReason() {
  if (fs.existsSync(CLIENT_PKG) && fs.existsSync(SDK1_PKG)) return null;
  if (process.env.CI === 'true') return null; // fail in the test, loudly
  return `interop node_modules missing: run (cd ${HERE} && npm install --no-package-lock)`;
}

/** Spawns cmd and resolves with the first stdout/stderr line matching re (or rejects). */
function spawnUntil(t, cmd, args, re, which) {
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { text: '', proc };
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd}: no match for ${re} within ${DEADLINE_MS} ms:\n${out.text}`)), DEADLINE_MS);
    const onData = (d) => {
      out.text += d.toString('utf8');
      const m = re.exec(out.text);
      if (m) {
        clearTimeout(timer);
        resolve({ ...out, match: m });
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${which} exited (${code}):\n${out.text}`)); });
  });
}

async function startServer(t, root) {
  const s = await spawnUntil(t, process.execPath, [SERVER, root], /listening (\d+)/, 'the SDK server');
  s.proc.removeAllListeners('exit');
  return { proc: s.proc, port: Number(s.match[1]) };
}

async function startSluice(t, dir, upstreamPort) {
  const policy = path.join(dir, 'policy.yaml');
  fs.writeFileSync(policy, 'version: 1\ndefaults:\n  action: allow\ntools:\n  write_file:\n    action: confirm\n');
  const s = await spawnUntil(t, SLUICE_BIN, ['--listen', '127.0.0.1:0', '--policy', policy,
    '--upstream', `http://127.0.0.1:${upstreamPort}/mcp`], /serving clients/, 'sluice');
  s.proc.removeAllListeners('exit');
  const port = Number(/port (\d+)/.exec(s.text)[1]);
  s.proc.stderr.on('data', (d) => { s.text += d.toString('utf8'); });
  t.after(() => assert.doesNotMatch(s.text, SANITIZER_RE, s.text));
  return { ...s, port, log: () => s.text };
}

async function connectClient(t, port, answer) {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const asked = [];
  const client = new Client({ name: 'sluice-interop-http', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: MODERN } },
  });
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params);
    return answer(request.params);
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)), { timeout: DEADLINE_MS });
  t.after(() => client.close().catch(() => {}));
  return { client, asked };
}

function tmp(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-interop-http-')));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'root'));
  return dir;
}

const reason = skipReason();

test('SDK2 client -> sluice (HTTP) -> SDK1 server (HTTP): the file is written only after an accept', { skip: reason ?? false, timeout: 120000 }, async (t) => {
  assert.ok(fs.existsSync(CLIENT_PKG) && fs.existsSync(SDK1_PKG), 'the interop packages are installed');
  const dir = tmp(t);
  const root = path.join(dir, 'root');
  const server = await startServer(t, root);
  const sluice = await startSluice(t, dir, server.port);
  assert.match(sluice.log(), /legacy \(2025-11-25 and earlier\) era/, 'sluice detected the SDK1 server as legacy');

  let next = 'decline';
  const { client, asked } = await connectClient(t, sluice.port, () =>
    next === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' });
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), ['read_text_file', 'write_file']);

  const r1 = await client.callTool({ name: 'write_file', arguments: { path: 'no.txt', content: 'declined' } });
  assert.equal(r1.isError, true, JSON.stringify(r1));
  assert.equal(fs.existsSync(path.join(root, 'no.txt')), false, 'a declined call wrote nothing');

  next = 'accept';
  const r2 = await client.callTool({ name: 'write_file', arguments: { path: 'yes.txt', content: 'approved' } });
  assert.notEqual(r2.isError, true, JSON.stringify(r2));
  assert.equal(fs.readFileSync(path.join(root, 'yes.txt'), 'utf8'), 'approved');
  assert.equal(asked.length, 2, 'the person was asked once per gated call');
  assert.match(asked[1].message, /yes\.txt/, 'the question shows the real arguments');

  const r3 = await client.callTool({ name: 'read_text_file', arguments: { path: 'yes.txt' } });
  assert.equal(r3.content[0].text, 'approved', 'an allowed call passes without a question');
  assert.equal(asked.length, 2);
});

test('the HTTP upstream goes down: a clear error, nothing retried; back up: its sessions are initialized again', { skip: reason ?? false, timeout: 120000 }, async (t) => {
  const dir = tmp(t);
  const root = path.join(dir, 'root');
  let server = await startServer(t, root);
  const port = server.port;
  const sluice = await startSluice(t, dir, port);
  const { client } = await connectClient(t, sluice.port, () => ({ action: 'accept', content: { approve: true } }));
  const ok = await client.callTool({ name: 'read_text_file', arguments: { path: 'x' } }).catch((e) => e);
  assert.ok(ok, 'a first call went through');

  server.proc.kill('SIGKILL');
  await new Promise((r) => server.proc.once('exit', r));
  const down = await client.callTool({ name: 'write_file', arguments: { path: 'down.txt', content: 'x' } }).then(
    (r) => ({ result: r }), (e) => ({ error: e }));
  const text = JSON.stringify(down.error ? String(down.error.message) : down.result);
  assert.match(text, /cannot reach the upstream server/, `the client is told the upstream is down: ${text}`);
  assert.equal(fs.existsSync(path.join(root, 'down.txt')), false);

  // The same port again, a fresh server: it knows none of sluice's sessions (404), so sluice
  // initializes again (or, for a call that gets an upstream session of its own because its
  // client can answer the server's questions, opens a new one). The call that met the 404 is
  // reported failed, never resent.
  const logBefore = sluice.log().length;
  const again = await spawnUntil(t, process.execPath, [SERVER, root, String(port)], /listening (\d+)/,
    'the restarted SDK server');
  server = { proc: again.proc };
  let after;
  for (let i = 0; i < 3; i++) {
    after = await client.callTool({ name: 'write_file', arguments: { path: 'after.txt', content: 'back' } }).catch((e) => ({ isError: true, content: [{ text: String(e.message) }] }));
    if (after.isError !== true) break;
  }
  assert.notEqual(after.isError, true, JSON.stringify(after));
  assert.equal(fs.readFileSync(path.join(root, 'after.txt'), 'utf8'), 'back');
  assert.match(sluice.log().slice(logBefore), /lost sluice's session; initializing again|upstream "sdk1-http-files" is ready/);
});
