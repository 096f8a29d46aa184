// filesystem.test.mjs: a real modern client (@modelcontextprotocol/client, SDK2) with an
// elicitation handler talks over stdio to sluice, which guards a real legacy server
// (@modelcontextprotocol/server-filesystem, built on SDK1). The assertions are on the file system.
//
// Setup: (cd tests/interop && npm install --no-package-lock). Without node_modules the test is
// skipped, except under CI=true, where it fails.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules');
const FS_SERVER = path.join(MODULES, '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const CLIENT_PKG = path.join(MODULES, '@modelcontextprotocol', 'client', 'package.json');
const WIRETAP = path.join(HERE, 'wiretap.mjs');
const SLUICE_BIN = path.resolve(process.env.SLUICE_BIN || path.join(HERE, '../../build/proxy/sluice'));
const SANITIZER_RE = /ERROR: AddressSanitizer|runtime error:|LeakSanitizer/;
const MODERN = '2026-07-28';

function skipReason() {
  const ci = process.env.CI === 'true';
  if (!fs.existsSync(CLIENT_PKG) || !fs.existsSync(FS_SERVER)) {
    if (ci) return null; // fail below, loudly
    return `interop node_modules missing: run (cd ${HERE} && npm install --no-package-lock)`;
  }
  if (!fs.existsSync(SLUICE_BIN) && !ci) return `sluice binary not found at ${SLUICE_BIN} (build it, or set SLUICE_BIN)`;
  return null;
}

async function loadSdk() {
  assert.ok(fs.existsSync(CLIENT_PKG), `@modelcontextprotocol/client is not installed under ${MODULES}; run npm install --no-package-lock there`);
  assert.ok(fs.existsSync(FS_SERVER), `@modelcontextprotocol/server-filesystem is not installed under ${MODULES}`);
  assert.ok(fs.existsSync(SLUICE_BIN), `sluice binary not found at ${SLUICE_BIN}`);
  const pin = JSON.parse(fs.readFileSync(CLIENT_PKG, 'utf8')).version;
  assert.equal(pin, '2.4.0', 'the pinned @modelcontextprotocol/client version');
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  return { Client, StdioClientTransport };
}

function setup(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-interop-')));
  if (process.env.E2E_KEEP_TMP) t.diagnostic(`kept ${dir}`);
  else t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const policy = path.join(dir, 'policy.yaml');
  fs.writeFileSync(policy, 'version: 1\ndefaults:\n  action: allow\ntools:\n  write_file:\n    action: confirm\n  move_file:\n    action: confirm\n');
  return { dir, root, policy, tap: path.join(dir, 'wire.jsonl'), audit: path.join(dir, 'audit.jsonl') };
}

/** A connected SDK2 client. capabilities decides whether it can be asked; answer() is the person. */
async function connect(t, sdk, env, { capabilities, answer }) {
  const asked = [];
  const client = new sdk.Client({ name: 'sluice-interop', version: '1.0.0' }, {
    capabilities,
    versionNegotiation: { mode: { pin: MODERN } },
  });
  if (capabilities.elicitation) {
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      return answer(request.params);
    });
  }
  const transport = new sdk.StdioClientTransport({
    command: process.execPath,
    args: [WIRETAP, env.tap, '--', SLUICE_BIN, '--policy', env.policy, '--audit', env.audit, '--', process.execPath, FS_SERVER, env.root],
    env: { ...process.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d.toString(); });
  t.after(async () => {
    await client.close().catch(() => {});
    assert.doesNotMatch(stderr, SANITIZER_RE, `sanitizer report in sluice stderr:\n${stderr}`);
  });
  await client.connect(transport, { timeout: 20000 });
  return { client, asked, stderr: () => stderr };
}

function wire(tap) {
  if (!fs.existsSync(tap)) return [];
  return fs.readFileSync(tap, 'utf8').split('\n').filter(Boolean).map((l) => {
    const { dir, line } = JSON.parse(l);
    return { dir, line, msg: JSON.parse(line) };
  });
}

const reason = skipReason();

test('SDK2 client, 2026-07-28, through sluice to server-filesystem: accept writes, decline does not', { timeout: 120000, skip: reason ?? false }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  let next = 'accept';
  const { client, asked } = await connect(t, sdk, env, {
    capabilities: { elicitation: { form: {} } },
    answer: () => (next === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' }),
  });
  assert.equal(client.getProtocolEra(), 'modern');
  assert.equal(client.getNegotiatedProtocolVersion(), MODERN);

  const { tools } = await client.listTools();
  assert.ok(tools.some((x) => x.name === 'write_file'), `tools: ${tools.map((x) => x.name)}`);

  // 1. The person accepts: the file is written with exactly the content that was shown.
  const target = path.join(env.root, 'note.txt');
  const r1 = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'hello from sluice interop' } });
  assert.notEqual(r1.isError, true, JSON.stringify(r1));
  assert.equal(asked.length, 1, 'the elicitation handler was asked once');
  assert.equal(asked[0].mode ?? 'form', 'form');
  assert.match(asked[0].message, /write_file/);
  assert.ok(asked[0].message.includes(target), `the question shows the path: ${asked[0].message}`);
  assert.equal(asked[0].requestedSchema.properties.approve.type, 'boolean');
  assert.equal(fs.readFileSync(target, 'utf8'), 'hello from sluice interop');

  // 2. The person declines: the file is untouched, and a new file is not created.
  next = 'decline';
  const r2 = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'OVERWRITTEN' } });
  assert.equal(r2.isError, true, JSON.stringify(r2));
  assert.equal(asked.length, 2);
  assert.equal(fs.readFileSync(target, 'utf8'), 'hello from sluice interop');
  const other = path.join(env.root, 'other.txt');
  const r3 = await client.callTool({ name: 'write_file', arguments: { path: other, content: 'nope' } });
  assert.equal(r3.isError, true, JSON.stringify(r3));
  assert.ok(!fs.existsSync(other), 'a declined write must not create the file');
  assert.equal(asked.length, 3);

  // 3. An allowed tool passes straight through (legacy upstream, modern client).
  const r4 = await client.callTool({ name: 'read_text_file', arguments: { path: target } });
  assert.notEqual(r4.isError, true, JSON.stringify(r4));
  assert.match(r4.content[0].text, /hello from sluice interop/);
  assert.equal(asked.length, 3, 'no question for an allowed tool');

  // What went over the wire between the SDK client and sluice (session process; the SDK's
  // disposable discover probe ran on a sibling process through the same tap).
  const w = wire(env.tap);
  const c2s = w.filter((x) => x.dir === 'c2s').map((x) => x.msg);
  const s2c = w.filter((x) => x.dir === 's2c').map((x) => x.msg);
  for (const m of c2s.filter((x) => x.method)) {
    assert.equal(m.params._meta['io.modelcontextprotocol/protocolVersion'], MODERN, JSON.stringify(m));
    assert.deepEqual(m.params._meta['io.modelcontextprotocol/clientCapabilities'], { elicitation: { form: {} } });
  }
  for (const m of s2c.filter((x) => 'result' in x)) {
    assert.ok(['complete', 'input_required'].includes(m.result.resultType), `every result carries resultType: ${JSON.stringify(m).slice(0, 300)}`);
  }
  const retries = c2s.filter((m) => m.method === 'tools/call' && m.params.inputResponses);
  assert.equal(retries.length, 3, 'three answered questions, three retries');
  assert.deepEqual(retries[0].params.inputResponses, { 'sluice.confirm': { action: 'accept', content: { approve: true } } });
  assert.equal(typeof retries[0].params.requestState, 'string');
  assert.ok(!c2s.some((m) => m.method === 'initialize'), 'a modern client never initializes');
});

test('SDK2 client without elicitation: write_file is refused with -32021 and nothing is written', { timeout: 120000, skip: reason ?? false }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  const { client } = await connect(t, sdk, env, { capabilities: {}, answer: () => ({ action: 'decline' }) });
  const target = path.join(env.root, 'never.txt');
  await assert.rejects(
    client.callTool({ name: 'write_file', arguments: { path: target, content: 'x' } }),
    (e) => e.code === -32021 || /-32021|capabilit/i.test(String(e.message)),
  );
  assert.ok(!fs.existsSync(target));
});

test('SDK1 client (2025-11-25 handshake) with an elicitation handler: accept writes, decline does not', { timeout: 120000, skip: reason ?? false }, async (t) => {
  await loadSdk();
  const sdkPkg = JSON.parse(fs.readFileSync(path.join(MODULES, '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8'));
  assert.equal(sdkPkg.version, '1.32.2', 'the pinned @modelcontextprotocol/sdk version');
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const env = setup(t);
  const asked = [];
  let next = 'accept';
  const client = new Client({ name: 'sluice-interop-sdk1', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return next === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
  });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [WIRETAP, env.tap, '--', SLUICE_BIN, '--policy', env.policy, '--audit', env.audit, '--', process.execPath, FS_SERVER, env.root],
    env: { ...process.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d.toString(); });
  t.after(async () => {
    await client.close().catch(() => {});
    assert.doesNotMatch(stderr, SANITIZER_RE, `sanitizer report in sluice stderr:\n${stderr}`);
  });
  await client.connect(transport, { timeout: 20000 });
  assert.equal(client.getServerVersion().name, 'secure-filesystem-server');

  const target = path.join(env.root, 'legacy.txt');
  const r1 = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'written by an SDK1 client' } });
  assert.notEqual(r1.isError, true, JSON.stringify(r1));
  assert.equal(asked.length, 1);
  assert.match(asked[0].message, /write_file/);
  assert.equal(fs.readFileSync(target, 'utf8'), 'written by an SDK1 client');

  next = 'decline';
  const r2 = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'OVERWRITTEN' } });
  assert.equal(r2.isError, true, JSON.stringify(r2));
  assert.equal(asked.length, 2);
  assert.equal(fs.readFileSync(target, 'utf8'), 'written by an SDK1 client');

  const c2s = wire(env.tap).filter((x) => x.dir === 'c2s').map((x) => x.msg);
  assert.equal(c2s[0].method, 'initialize', 'an SDK1 client opens with initialize');
});

// The server looks up a path component that does not exist as spelt by its Unicode composed form
// (resolveUnicodeEquivalentPath): "Vertra\u0308ge" reaches the directory "Vertr\u00e4ge". A
// deny_glob that names the directory must refuse that spelling too, or an allowed read tool hands
// out what the policy denies, with nobody asked.
test('deny_glob on an allowed read tool refuses the decomposed spelling the server would resolve', { timeout: 120000, skip: reason ?? false }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  fs.writeFileSync(env.policy, 'version: 1\ndefaults:\n  action: allow\ntools:\n  read_text_file:\n'
    + '    action: allow\n    args:\n      path:\n        deny_glob: ["**/Vertr\u00e4ge/**"]\n');
  fs.mkdirSync(path.join(env.root, 'Vertr\u00e4ge'));
  fs.writeFileSync(path.join(env.root, 'Vertr\u00e4ge', 'geheim.txt'), 'SECRET-CONTRACT');
  const { client, asked } = await connect(t, sdk, env, { capabilities: {}, answer: () => ({ action: 'decline' }) });
  for (const dir of ['Vertr\u00e4ge', 'Vertra\u0308ge']) {
    const r = await client.callTool({ name: 'read_text_file', arguments: { path: path.join(env.root, dir, 'geheim.txt') } });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(r.content[0].text, /deny_glob/, JSON.stringify(r));
    assert.doesNotMatch(JSON.stringify(r), /SECRET-CONTRACT/);
  }
  assert.equal(asked.length, 0);
  const c2s = wire(env.tap).filter((x) => x.dir === 'c2s' && x.msg.method === 'tools/call');
  assert.equal(c2s.length, 2, 'both reads went to sluice');
});
