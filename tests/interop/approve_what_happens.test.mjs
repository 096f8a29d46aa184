// approve_what_happens.test.mjs: "approve what will really happen", end to end with real parts.
// The official SDK2 client (@modelcontextprotocol/client, pinned to 2026-07-28) with an elicitation
// handler talks to sluice, which guards the real @modelcontextprotocol/server-filesystem on a
// temporary folder. The handler is the person: it records the question and may run code before it
// answers (another writer changing the target in between). Assertions are on the files.
//
// Covered: observe (write_file observes read_text_file: drift refused and the other writer's
// content kept, unchanged target written, the diff summary in the question; move_file observes
// get_file_info on its source), an escalation rule (an allowed write outside the project folder
// asks), a deny_glob refusal naming its rule, and a message template followed by the full
// argument listing.
//
// Setup: (cd tests/interop && npm install --no-package-lock). Without node_modules the tests are
// skipped, except under CI=true, where they fail.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { unfence } from '../e2e/lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules');
const FS_SERVER = path.join(MODULES, '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const CLIENT_PKG = path.join(MODULES, '@modelcontextprotocol', 'client', 'package.json');
const SLUICE_BIN = path.resolve(process.env.SLUICE_BIN || path.join(HERE, '../../build/proxy/sluice'));
const SANITIZER_RE = /ERROR: AddressSanitizer|runtime error:|LeakSanitizer/;
const MODERN = '2026-07-28';
const ACCEPT = { action: 'accept', content: { approve: true } };
const OPTS = { timeout: 120000 };

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

/** The policy of most tests: write_file and move_file observed, a deny rule, templates. */
function observePolicy(root) {
  return `version: 1
defaults:
  action: allow
tools:
  write_file:
    action: confirm
    message: "Write {path}"
    args:
      path:
        deny_glob: ["${root}/secret/**"]
    observe:
      tool: read_text_file
      args: { path: path }
  move_file:
    action: confirm
    message: "Move {source} to {destination}"
    args:
      source: {}
      destination: {}
    observe:
      tool: get_file_info
      args: { path: source }
  read_text_file:
    action: allow
  get_file_info:
    action: allow
`;
}

/** write_file is allowed, but a path outside the project folder needs a person. */
function escalatePolicy(outside) {
  return `version: 1
defaults:
  action: allow
tools:
  write_file:
    action: allow
    args:
      path:
        confirm_glob: ["${outside}/**"]
`;
}

/** A temp folder with root/ (the project folder) and outside/, both served by server-filesystem. */
function setup(t, policyFor = observePolicy) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-approve-')));
  if (process.env.E2E_KEEP_TMP) t.diagnostic(`kept ${dir}`);
  else t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'root');
  const outside = path.join(dir, 'outside');
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
  const policy = path.join(dir, 'policy.yaml');
  fs.writeFileSync(policy, policyFor === escalatePolicy ? escalatePolicy(outside) : policyFor(root));
  return { dir, root, outside, policy, audit: path.join(dir, 'audit.jsonl') };
}

/**
 * A connected SDK2 client pinned to 2026-07-28 whose elicitation handler is the person:
 * person(params) may run code (another writer) and returns the answer. Every question is kept.
 */
async function connect(t, sdk, env, person) {
  const asked = [];
  const client = new sdk.Client({ name: 'sluice-approve-interop', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: MODERN } },
  });
  client.setRequestHandler('elicitation/create', async (request) => {
    // sluice's question is a Markdown fenced code block; the checks read the text inside it.
    asked.push({ ...request.params, message: unfence(request.params.message) });
    return person(request.params);
  });
  const transport = new sdk.StdioClientTransport({
    command: SLUICE_BIN,
    args: ['--policy', env.policy, '--audit', env.audit, '--', process.execPath, FS_SERVER, env.root, env.outside],
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
  assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
  return { client, asked, stderr: () => stderr };
}

function textOf(r) {
  return (r.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

function journal(env) {
  if (!fs.existsSync(env.audit)) return [];
  return fs.readFileSync(env.audit, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

const reason = skipReason();
const skip = reason ?? false;

test('(a) another writer changes the file between the question and the accept: refused, the other writer\'s content stays', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  const target = path.join(env.root, 'notes.txt');
  fs.writeFileSync(target, 'alpha\nbeta\ngamma\n');
  const { client, asked } = await connect(t, sdk, env, () => {
    fs.writeFileSync(target, 'the other writer was here\n'); // after the question, before the answer
    return ACCEPT;
  });
  const r = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'alpha\nBETA\ngamma\n' } });
  assert.equal(asked.length, 1, 'the person was asked once');
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.match(textOf(r), /changed since you approved/, JSON.stringify(r));
  assert.equal(fs.readFileSync(target, 'utf8'), 'the other writer was here\n', 'the other writer\'s content stays');

  const log = journal(env);
  const observe = log.filter((l) => l.decision === 'observe');
  assert.deepEqual(observe.map((l) => [l.tool, l.reason, l.upstream]), [
    ['read_text_file', 'before-question', 'ok'],
    ['read_text_file', 'after-accept', 'ok'],
  ], JSON.stringify(log));
  const refused = log.filter((l) => l.tool === 'write_file' && l.decision === 'refused');
  assert.equal(refused.length, 1, JSON.stringify(log));
  assert.equal(refused[0].reason, 'changed-since-approved');
  assert.equal(refused[0].upstream, 'not-forwarded');
});

test('(b) an unchanged target is written with exactly the approved content', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  const target = path.join(env.root, 'notes.txt');
  fs.writeFileSync(target, 'alpha\nbeta\ngamma\n');
  const { client, asked } = await connect(t, sdk, env, () => ACCEPT);
  const r = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'alpha\nBETA\ngamma\n' } });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.equal(asked.length, 1);
  assert.equal(fs.readFileSync(target, 'utf8'), 'alpha\nBETA\ngamma\n');
  const log = journal(env);
  assert.deepEqual(log.filter((l) => l.decision === 'observe').map((l) => l.reason), ['before-question', 'after-accept'], JSON.stringify(log));
  const accepted = log.filter((l) => l.tool === 'write_file' && l.decision === 'client-accepted');
  assert.equal(accepted.length, 1, JSON.stringify(log));
  assert.equal(accepted[0].upstream, 'ok', JSON.stringify(accepted[0]));
});

test('(c) the question shows the lines removed and added and the -/+ lines', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  const target = path.join(env.root, 'list.txt');
  fs.writeFileSync(target, 'one\ntwo\nthree\nfour\n');
  const { client, asked } = await connect(t, sdk, env, () => ({ action: 'decline' }));
  const r = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'one\nTWO\n2b\nthree\nfour\n' } });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(asked.length, 1);
  const m = asked[0].message;
  assert.ok(m.includes('What read_text_file shows now: The file now has 4 lines; this call removes 1 and adds 2, from line 2:'), m);
  assert.ok(m.includes('\n  | - two\n  | + TWO\n  | + 2b'), m);
  assert.equal(fs.readFileSync(target, 'utf8'), 'one\ntwo\nthree\nfour\n', 'declined: untouched');
});

test('(d) move_file observes get_file_info on its source: the question shows the file info; a change in between refuses the move', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  const src = path.join(env.root, 'draft.txt');
  const dst = path.join(env.root, 'final.txt');
  fs.writeFileSync(src, '0123456789\n'); // 11 bytes
  let grow = null; // the file the other writer appends to while the person reads the question
  const { client, asked } = await connect(t, sdk, env, () => {
    if (grow) fs.appendFileSync(grow, 'more\n');
    return ACCEPT;
  });

  // 1. Unchanged source: the question shows the info, the move happens.
  const r1 = await client.callTool({ name: 'move_file', arguments: { source: src, destination: dst } });
  assert.equal(asked.length, 1);
  const m = asked[0].message;
  assert.match(m, /What get_file_info shows now:/, m);
  assert.match(m, /size: 11/, m);
  assert.match(m, /isFile: true/, m);
  assert.notEqual(r1.isError, true, `${JSON.stringify(r1)}\nquestion: ${m}`);
  assert.ok(!fs.existsSync(src) && fs.readFileSync(dst, 'utf8') === '0123456789\n', 'moved');

  // 2. The source grows between the question and the accept: refused, nothing moved.
  const src2 = path.join(env.root, 'draft2.txt');
  const dst2 = path.join(env.root, 'final2.txt');
  fs.writeFileSync(src2, 'abc\n');
  grow = src2;
  const r2 = await client.callTool({ name: 'move_file', arguments: { source: src2, destination: dst2 } });
  assert.equal(asked.length, 2);
  assert.equal(r2.isError, true, JSON.stringify(r2));
  assert.match(textOf(r2), /changed since you approved/);
  assert.ok(!fs.existsSync(dst2), 'not moved');
  assert.equal(fs.readFileSync(src2, 'utf8'), 'abc\nmore\n', 'the source keeps the other writer\'s content');
  const obs = journal(env).filter((l) => l.decision === 'observe');
  assert.ok(obs.length === 4 && obs.every((l) => l.tool === 'get_file_info' && l.upstream === 'ok'), JSON.stringify(obs));
});

test('(e) an escalation rule: an allowed write outside the project folder asks, inside goes through unasked', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t, escalatePolicy);
  let answer = ACCEPT;
  const { client, asked } = await connect(t, sdk, env, () => answer);

  const inside = path.join(env.root, 'inside.txt');
  const r1 = await client.callTool({ name: 'write_file', arguments: { path: inside, content: 'in' } });
  assert.notEqual(r1.isError, true, JSON.stringify(r1));
  assert.equal(asked.length, 0, 'a write inside the project folder is not asked');
  assert.equal(fs.readFileSync(inside, 'utf8'), 'in');

  const out = path.join(env.outside, 'out.txt');
  const r2 = await client.callTool({ name: 'write_file', arguments: { path: out, content: 'out' } });
  assert.notEqual(r2.isError, true, JSON.stringify(r2));
  assert.equal(asked.length, 1, 'a write outside asks');
  assert.ok(asked[0].message.includes(out), asked[0].message);
  assert.equal(fs.readFileSync(out, 'utf8'), 'out');

  // Through ".." from inside the project folder: still outside, still asked; declined, not written.
  answer = { action: 'decline' };
  const sneaky = `${env.root}/../outside/sneaky.txt`;
  const r3 = await client.callTool({ name: 'write_file', arguments: { path: sneaky, content: 'x' } });
  assert.equal(asked.length, 2, 'a ".." path that leaves the project folder asks');
  assert.equal(r3.isError, true, JSON.stringify(r3));
  assert.ok(!fs.existsSync(path.join(env.outside, 'sneaky.txt')), 'declined: not written');

  const log = journal(env);
  assert.equal(log.filter((l) => l.tool === 'write_file' && l.decision === 'allow').length, 1, JSON.stringify(log));
  assert.equal(log.filter((l) => l.tool === 'write_file' && l.decision === 'asked').length, 2, JSON.stringify(log));
});

test('(f) a deny_glob refusal names the rule, nobody is asked, and nothing is written', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  fs.mkdirSync(path.join(env.root, 'secret'));
  fs.mkdirSync(path.join(env.root, 'public'));
  const { client, asked } = await connect(t, sdk, env, () => ACCEPT);
  for (const p of [path.join(env.root, 'secret', 'key.txt'), `${env.root}/public/../secret/key2.txt`]) {
    const r = await client.callTool({ name: 'write_file', arguments: { path: p, content: 'leak' } });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.ok(textOf(r).includes('tools.write_file.args.path.deny_glob[0]'), `the refusal names the rule: ${textOf(r)}`);
  }
  assert.equal(asked.length, 0, 'a denied call is never asked');
  assert.deepEqual(fs.readdirSync(path.join(env.root, 'secret')), [], 'nothing written');
  assert.ok(!journal(env).some((l) => l.decision === 'observe'), 'a denied call is never observed');
});

test('(g) the template sentence comes first and the full argument listing follows', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  const target = path.join(env.root, 'plan.txt');
  fs.writeFileSync(target, 'old plan\n');
  const { client, asked } = await connect(t, sdk, env, () => ({ action: 'decline' }));
  await client.callTool({ name: 'write_file', arguments: { path: target, content: 'new plan\n' } });
  assert.equal(asked.length, 1);
  const m = asked[0].message;
  const first = m.split('\n\n')[0];
  assert.ok(first.startsWith('Write '), `the sentence comes first: ${JSON.stringify(m)}`);
  assert.ok(first.includes(target), `the sentence names the path: ${JSON.stringify(m)}`);
  const listing = m.indexOf('Allow tool "write_file"');
  assert.ok(listing > first.length, `the listing follows: ${JSON.stringify(m)}`);
  const rest = m.slice(listing);
  assert.ok(rest.includes('\n\u2022 content (not declared in the policy): ') && rest.includes('new plan'), `every argument is listed, content included: ${JSON.stringify(m)}`);
  assert.ok(rest.includes('path: ') && rest.includes(target), JSON.stringify(m));
  assert.ok(rest.indexOf('What read_text_file shows now:') > 0, JSON.stringify(m));
  assert.equal(fs.readFileSync(target, 'utf8'), 'old plan\n');
});

test('(h) a write that creates a file: the question shows the read error; accepted, the file is written; created by someone else first, refused', { ...OPTS, skip }, async (t) => {
  const sdk = await loadSdk();
  const env = setup(t);
  const target = path.join(env.root, 'brand-new.txt');
  let other = null; // set: the other writer creates the file while the person reads the question
  const { client, asked } = await connect(t, sdk, env, () => {
    if (other) fs.writeFileSync(other, 'created by the other writer\n');
    return ACCEPT;
  });
  const r = await client.callTool({ name: 'write_file', arguments: { path: target, content: 'one\ntwo\n' } });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.equal(asked.length, 1);
  // The server's ENOENT is said as what it means for a write: a new file.
  assert.match(asked[0].message, /What read_text_file shows now: no such file \(new file\)\.\n {2}\| This call writes 2 lines\./, asked[0].message);
  assert.doesNotMatch(asked[0].message, /ENOENT/, asked[0].message);
  assert.equal(fs.readFileSync(target, 'utf8'), 'one\ntwo\n');

  const target2 = path.join(env.root, 'contested.txt');
  other = target2;
  const r2 = await client.callTool({ name: 'write_file', arguments: { path: target2, content: 'mine\n' } });
  assert.equal(asked.length, 2);
  assert.equal(r2.isError, true, JSON.stringify(r2));
  assert.match(textOf(r2), /changed since you approved/);
  assert.equal(fs.readFileSync(target2, 'utf8'), 'created by the other writer\n');
});
