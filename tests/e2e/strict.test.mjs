// strict.test.mjs: --strict and defaults.strict (issue 21). A policy that names a tool the server
// does not list, or lets a tool the server does not annotate readOnlyHint: true fall to allow by
// default, makes sluice refuse to serve: after the server's first tools/list the waiting client
// gets a JSON-RPC error naming the failure, then sluice exits 1, saying which in its log, at
// FILE:LINE:COL, with "did you mean". Strict is checked again on every reload (a failing policy
// is refused, the one in force stays) and on every restart of an HTTP front's child (a failing
// server is not served: /readyz 503, every request answered with the refusal, until a restart
// or a reload passes). Without strict the same findings are logged at start and told once to
// each client as a warning log notification, where the client accepts one.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  legacyCall, legacyHandshake, legacyRequest, modernRequest, resultText, runSluice, FAKE_UPSTREAM,
  scaled, sleep, startSluice, suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';
import {
  assertRpcError, get, LegacyHttpSession, legacyToolCall, rpc, startHttpSluice, waitLog, waitReady,
} from './http_lib.mjs';

const MISSPELT = 'version: 1\ndefaults:\n  action: confirm\ntools:\n  echo:\n    action: allow\n  wirte_file:\n    action: confirm\n';
const LOOSE = 'version: 1\ndefaults:\n  action: allow\n  strict: true\ntools:\n  echo:\n    action: allow\n';
const GOOD = 'version: 1\ndefaults:\n  action: confirm\ntools:\n  echo:\n    action: allow\n  write_file:\n    action: confirm\n';
const WIRTE_AT_7_3 = 'policy.yaml:7:3: the policy names tool "wirte_file", which the server does not list; did you mean "write_file"?';
const REFUSAL_RE = /^sluice refuses to serve: strict: 1 tool named but not listed, 0 not read-only allowed by default; policy\.yaml:7:3: the policy names tool "wirte_file"/;
const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

/** Sends initialize without waiting: a refusing sluice answers it with the refusal. */
function startHandshake(s) {
  s.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'strict-test', version: '1' } } });
}

const isNotice = (m) => m && m.method === 'notifications/message';

/** Asserts m is sluice's warning about the misspelt policy, with no directory in its places. */
function assertNotice(m, dir) {
  assert.equal(m.params.level, 'warning', JSON.stringify(m));
  assert.equal(m.params.logger, 'sluice', JSON.stringify(m));
  assert.equal(typeof m.params.data, 'string', JSON.stringify(m));
  assert.ok(m.params.data.includes(WIRTE_AT_7_3), m.params.data);
  assert.match(m.params.data, /^sluice: the policy does not match the server's tools \(1 finding; --strict would refuse to serve\):/);
  assert.ok(!m.params.data.includes(dir), `the client is not told where the policy lives: ${m.params.data}`);
}

/** Sends request req and returns the messages up to its response: [the notice?, the response]. */
async function firstOf(s, req) {
  s.send(req);
  const want = JSON.stringify(req.id);
  const l = await s.next((m) => isNotice(m) || (!('method' in m) && JSON.stringify(m.id) === want), undefined, `the notice or the response to ${want}`);
  if (!isNotice(l.msg)) return [l.msg];
  return [l.msg, (await s.responseTo(req.id))];
}

/** No notice among the messages sluice sent and the test did not take. */
function assertNoNotice(s) {
  const n = s.lines.filter((l) => isNotice(l.msg));
  assert.deepEqual(n.map((l) => l.raw), [], 'the notice is told once');
}

describe('strict', suiteOptions(), () => {
  test('--strict: a policy tool the server lacks stops sluice, with its place and a near name', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const s = startSluice(t, { dir, policy, args: ['--strict'] });
    startHandshake(s); // a legacy upstream is initialized with the client's capabilities
    const r = await s.responseTo('init');
    assert.equal(r.error?.code, -32000, r.raw);
    assert.match(r.error.message, REFUSAL_RE);
    assert.ok(!r.error.message.includes(dir), r.error.message);
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
    const r = await s.responseTo('init');
    assert.equal(r.error?.code, -32000, r.raw);
    assert.match(r.error.message, /^sluice refuses to serve: strict: 0 tools named but not listed, \d+ not read-only allowed by default; policy\.yaml:3:11: server tool "\w+" is not annotated readOnlyHint: true/);
    const { code } = await s.waitExit();
    assert.equal(code, 1, s.stderr);
    assert.ok(s.stderr.includes(`${policy}:3:11: server tool "write_file" is not annotated readOnlyHint: true and the policy allows it by default`), s.stderr);
    assert.match(s.stderr, /sluice does not serve/);
  });

  test('--strict, modern client: its first request, a call, gets the refusal and nothing runs', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { dir, policy, era: 'modern', audit, args: ['--strict'] });
    s.send(toolCall(1, 'echo', { text: 'never' }));
    s.send(modernRequest(2, 'tools/list')); // read after the refusal: refused the same way
    const r1 = await s.responseTo(1);
    assert.equal(r1.error?.code, -32000, r1.raw);
    assert.match(r1.error.message, REFUSAL_RE);
    const r2 = await s.responseTo(2);
    assert.equal(r2.error?.code, -32000, r2.raw);
    const { code } = await s.waitExit();
    assert.equal(code, 1, s.stderr);
    assert.equal(s.upstreamCalls().length, 0, 'nothing ran');
    const records = fs.readFileSync(audit, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.ok(records.some((x) => x.tool === 'echo' && x.decision === 'refused' && x.reason === 'strict'), JSON.stringify(records));
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

describe('without strict: the findings told once to the client', suiteOptions(), () => {
  test('legacy stdio: after notifications/initialized, before the next response, once', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const s = startSluice(t, { dir, policy, fake: { FAKE_LOGGING: '1' } });
    await legacyHandshake(s);
    const [notice, list] = await firstOf(s, legacyRequest(1, 'tools/list', {}));
    assert.ok(isNotice(notice), `the notice comes before the response: ${JSON.stringify(notice)}`);
    assertNotice(notice, dir);
    assert.ok(Array.isArray(list.result?.tools), list.raw);
    const again = await s.request(legacyRequest(2, 'tools/list', {}));
    assert.ok(again.result, again.raw);
    const r = await s.request(legacyCall(3, 'echo', { text: 'served' }));
    assert.match(resultText(r), /served/);
    assertNoNotice(s);
    const lists = s.upstreamMessages().filter((m) => m.method === 'tools/list');
    assert.equal(lists.length, 3, 'sluice listed once for its check, the client twice');
    assert.equal(s.upstreamCalls('echo').length, 1);
    await s.closeStdin();
  });

  test('legacy stdio: a logging/setLevel above warning, or a server without logging: not told', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const quiet = startSluice(t, { dir, policy, fake: { FAKE_LOGGING: '1' } });
    await legacyHandshake(quiet);
    const set = await quiet.request(legacyRequest(1, 'logging/setLevel', { level: 'error' }));
    assert.deepEqual(set.result, {}, set.raw);
    assert.ok((await quiet.request(legacyRequest(2, 'tools/list', {}))).result);
    assertNoNotice(quiet);
    assert.equal(quiet.upstreamMessages().filter((m) => m.method === 'logging/setLevel').length, 1, 'setLevel reached the server');
    await quiet.closeStdin();

    const plain = startSluice(t, { dir, policy }); // the server declares no logging capability
    await legacyHandshake(plain);
    assert.ok((await plain.request(legacyRequest(1, 'tools/list', {}))).result);
    assertNoNotice(plain);
    assert.ok(plain.stderr.includes('the policy names tool "wirte_file"'), 'the log still has it');
    await plain.closeStdin();
  });

  test('modern stdio: only on a request naming a log level at warning or below, once', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const s = startSluice(t, { dir, policy, era: 'modern', fake: { FAKE_LOGGING: '1' } });
    let got = await firstOf(s, modernRequest(1, 'tools/list'));
    assert.equal(got.length, 1, 'no logLevel: no notice');
    got = await firstOf(s, modernRequest(2, 'tools/list', {}, { meta: { [LOG_LEVEL]: 'error' } }));
    assert.equal(got.length, 1, 'logLevel error: no warning');
    got = await firstOf(s, modernRequest(3, 'tools/list', {}, { meta: { [LOG_LEVEL]: 'info' } }));
    assert.equal(got.length, 2, 'logLevel info: the notice first');
    assertNotice(got[0], dir);
    assert.ok(got[1].result, JSON.stringify(got[1]));
    got = await firstOf(s, modernRequest(4, 'tools/list', {}, { meta: { [LOG_LEVEL]: 'debug' } }));
    assert.equal(got.length, 1, 'once');
    await s.closeStdin();

    // The first request waits for the server's listing, and hears the findings of that listing.
    const first = startSluice(t, { dir, policy, era: 'modern', fake: { FAKE_LOGGING: '1' } });
    got = await firstOf(first, toolCall(1, 'echo', { text: 'first' }, { meta: { [LOG_LEVEL]: 'warning' } }));
    assert.equal(got.length, 2, 'the waiting request: the notice first');
    assertNotice(got[0], dir);
    assert.match(resultText(got[1]), /first/);
    assert.equal(first.upstreamCalls('echo').length, 1);
    await first.closeStdin();
  });

  test('HTTP: on the first request\'s event stream, once per legacy session and per modern principal', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const s = await startHttpSluice(t, { dir, policy, fake: { FAKE_LOGGING: '1' } });
    for (const n of [1, 2]) { // two sessions, each told once
      const sess = new LegacyHttpSession(s.target);
      await sess.initialize();
      const r = await sess.rpc(legacyRequest(`list-${n}`, 'tools/list', {}));
      assert.equal(r.status, 200, r.raw);
      assert.ok(r.sse, 'the notice makes the answer an event stream');
      assert.ok(isNotice(r.events[0]), JSON.stringify(r.events));
      assertNotice(r.events[0], dir);
      assert.ok(r.msg?.result?.tools, r.raw);
      const again = await sess.rpc(legacyToolCall(`echo-${n}`, 'echo', { text: `s${n}` }));
      assert.match(resultText(again.msg), new RegExp(`s${n}`));
      assert.ok(!again.events.some(isNotice), JSON.stringify(again.events));
    }
    const plain = await rpc(s.target, modernRequest('m1', 'tools/list'));
    assert.ok(!plain.events.some(isNotice), 'no logLevel, no notice');
    const told = await rpc(s.target, modernRequest('m2', 'tools/list', {}, { meta: { [LOG_LEVEL]: 'warning' } }));
    assert.ok(told.sse && isNotice(told.events[0]), JSON.stringify(told.events));
    assertNotice(told.events[0], dir);
    assert.ok(told.msg?.result?.tools, told.raw);
    const once = await rpc(s.target, modernRequest('m3', 'tools/list', {}, { meta: { [LOG_LEVEL]: 'warning' } }));
    assert.ok(!once.events.some(isNotice), 'once per principal');
    assert.equal(s.upstreamCalls('echo').length, 2);
  });
});

describe('strict on reload', suiteOptions(), () => {
  const DENY_ECHO_MISSPELT = 'version: 1\ndefaults:\n  action: confirm\ntools:\n  echo:\n    action: deny\n  wirte_file:\n    action: confirm\n';
  const DENY_ECHO = 'version: 1\ndefaults:\n  action: confirm\ntools:\n  echo:\n    action: deny\n  write_file:\n    action: confirm\n';

  async function echoRuns(s, id) {
    const before = s.upstreamCalls('echo').length;
    const r = await s.request(legacyCall(id, 'echo', { text: `call-${id}` }));
    return s.upstreamCalls('echo').length > before && /call-/.test(resultText(r));
  }

  test('SIGHUP: a policy failing strict against the server\'s tools is refused; the old one stays', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, GOOD);
    const s = startSluice(t, { dir, policy, args: ['--strict'] });
    await legacyHandshake(s);
    assert.equal(await echoRuns(s, 1), true);

    writePolicy(dir, DENY_ECHO_MISSPELT);
    s.proc.kill('SIGHUP');
    await waitLog(s, /SIGHUP: the policy in .* is refused: strict: 1 tool named but not listed, 0 not read-only allowed by default against the server's tools \(see above\); the previous one stays/);
    assert.ok(s.stderr.includes(`${policy}:7:3: the policy names tool "wirte_file", which the server does not list; did you mean "write_file"?`), s.stderr);
    assert.equal(await echoRuns(s, 2), true, 'the policy in force (echo allowed) stays');

    writePolicy(dir, DENY_ECHO);
    s.proc.kill('SIGHUP');
    await waitLog(s, /SIGHUP: policy reloaded from/);
    assert.equal(await echoRuns(s, 3), false, 'a policy that passes applies');
    await s.closeStdin();
  });

  test('--watch-policy: a reloaded policy that turns on defaults.strict and fails it is refused', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, GOOD);
    const s = startSluice(t, { dir, policy, args: ['--watch-policy'] });
    await legacyHandshake(s);
    await waitLog(s, /watching .* for changes/);
    assert.equal(await echoRuns(s, 1), true);
    writePolicy(dir, LOOSE.replace('echo:\n    action: allow', 'echo:\n    action: deny'));
    await waitLog(s, /policy file changed: the policy in .* is refused: strict: 0 tools named but not listed, \d+ not read-only allowed by default/, scaled(10000));
    assert.match(s.stderr, /policy\.yaml:3:11: server tool "write_file" is not annotated readOnlyHint: true/);
    assert.equal(await echoRuns(s, 2), true, 'the old policy stays');
    await s.closeStdin();
  });
});

/**
 * An HTTP sluice whose child reads its FAKE_* arguments from a file at each start, so a test
 * can change the tools the next child lists, and kill() the running child to have it restarted.
 */
async function restartableSluice(t, dir, policyText, firstArgs) {
  const policy = writePolicy(dir, policyText);
  const argsFile = path.join(dir, 'fake-args');
  fs.writeFileSync(argsFile, firstArgs);
  const upstream = ['/bin/sh', '-c', `exec "${process.execPath}" "${FAKE_UPSTREAM}" $(cat "${argsFile}")`];
  const s = await startHttpSluice(t, { dir, policy, upstream });
  return {
    s,
    policy,
    async restartWith(args) {
      fs.writeFileSync(argsFile, args);
      const pids = s.upstreamPids();
      const from = s.stderr.length;
      process.kill(pids[pids.length - 1], 'SIGKILL');
      await waitLog(s, /starting it again in \d+ s/, undefined, from);
      return from;
    },
  };
}

const NAMES_READ_FILE = 'version: 1\ndefaults:\n  action: confirm\n  strict: true\ntools:\n  echo:\n    action: allow\n  read_file:\n    action: confirm\n';
const STRICT_OFF_READ_FILE_RE = /^sluice refuses to serve: strict: 1 tool named but not listed, 0 not read-only allowed by default; policy\.yaml:8:3: the policy names tool "read_file", which the server does not list/;

async function echoOverHttp(s, id) {
  return rpc(s.target, toolCall(id, 'echo', { text: `http-${id}` }, { caps: {} }));
}

async function assertRefusing(s, sess, id) {
  const ready = await get(s.target, '/readyz');
  assert.equal(ready.status, 503, ready.text);
  const before = s.upstreamCalls('echo').length;
  const r = await echoOverHttp(s, id);
  assertRpcError(r, 503, -32000, STRICT_OFF_READ_FILE_RE);
  const legacy = await sess.rpc(legacyToolCall(`${id}-legacy`, 'echo', { text: 'no' }));
  assertRpcError(legacy, 503, -32000, STRICT_OFF_READ_FILE_RE);
  assert.equal(s.upstreamCalls('echo').length, before, 'nothing was forwarded');
}

describe('strict on a restart of the child (HTTP)', suiteOptions(), () => {
  test('a restarted server failing strict is not served; a later restart that passes is', async (t) => {
    const dir = tmpDir(t);
    const { s, restartWith } = await restartableSluice(t, dir, NAMES_READ_FILE, 'FAKE_EXTRA_TOOLS=1');
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    assert.match(resultText((await echoOverHttp(s, 'e1')).msg), /http-e1/);

    let from = await restartWith(''); // the next child does not list read_file
    await waitLog(s, /strict: 1 tool named but not listed, 0 not read-only allowed by default; sluice stops serving clients until a restarted server or a reloaded policy passes the check/, undefined, from);
    assert.match(s.stderr.slice(from), /policy\.yaml:8:3: the policy names tool "read_file", which the server does not list/);
    await assertRefusing(s, sess, 'e2');

    from = await restartWith('FAKE_EXTRA_TOOLS=1');
    await waitReady(s.target, scaled(15000), s);
    assert.match(s.stderr.slice(from), /serving clients/);
    assert.match(resultText((await echoOverHttp(s, 'e3')).msg), /http-e3/);
    assert.equal(s.upstreamCalls('echo').length, 2);
  });

  test('a reloaded policy that passes against the restarted server serves it again', async (t) => {
    const dir = tmpDir(t);
    const { s, policy, restartWith } = await restartableSluice(t, dir, NAMES_READ_FILE, 'FAKE_EXTRA_TOOLS=1');
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const from = await restartWith('');
    await waitLog(s, /sluice stops serving clients/, undefined, from);
    await assertRefusing(s, sess, 'e1');

    fs.writeFileSync(policy, NAMES_READ_FILE.replace('read_file', 'wirte_file'));
    s.proc.kill('SIGHUP');
    await waitLog(s, /SIGHUP: the policy in .* is refused: strict: 1 tool named/, undefined, from);
    await assertRefusing(s, sess, 'e2');

    fs.writeFileSync(policy, NAMES_READ_FILE.replace('  read_file:\n    action: confirm\n', ''));
    s.proc.kill('SIGHUP');
    await waitReady(s.target, scaled(15000), s);
    assert.match(resultText((await echoOverHttp(s, 'e3')).msg), /http-e3/);
    const r = await sess.rpc(legacyToolCall('e4', 'echo', { text: 'legacy-again' }));
    assert.match(resultText(r.msg), /legacy-again/);
    assert.equal(s.upstreamCalls('echo').length, 2);
  });

  test('at start over HTTP: every request is answered with a JSON-RPC error, then exit 1', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, MISSPELT);
    const s = await startHttpSluice(t, { dir, policy, args: ['--strict'], waitReady: false });
    const answers = [];
    const end = Date.now() + scaled(15000);
    while (!s.exited && Date.now() < end) {
      try {
        answers.push(await rpc(s.target, modernRequest(`p${answers.length}`, 'tools/list'), { timeoutMs: 2000 }));
      } catch { /* the listener is gone: sluice is exiting */ }
      await sleep(20);
    }
    const { code } = await s.waitExit();
    assert.equal(code, 1, s.stderr);
    assert.ok(answers.length > 0, 'some request was answered');
    for (const r of answers) {
      const e = assertRpcError(r, 503, -32000);
      assert.ok(/upstream not ready/.test(e.message) || REFUSAL_RE.test(e.message), e.message);
    }
    assert.equal(s.upstreamCalls().length, 0);
  });
});
