// approval_page.test.mjs: sluice's own approval page (approval: page, approvers, self_approve,
// fallback: page). A call whose question goes to the page is never forwarded until a person the
// policy allows approved it there, with the form's CSRF token, once; the page's decision lives
// in the store, so a replica sharing a Redis store sees it. Every test asserts on what the
// upstream executed, not only on sluice's reply.
//
// Principals come from --principal header:X-User (a trusted proxy in front): the caller is
// header:alice, the on-call approver header:oncall-bob, an outsider header:mallory.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import {
  FAKE_UPSTREAM, TIME_SCALE, confirmRetry, reloadPolicy, resultText, scaled, sleep, startSluice, suiteOptions,
  tmpDir, toolCall, withDeadline, writePolicy,
} from './lib.mjs';
import {
  LegacyHttpSession, assertForwardedOnceHttp, assertNotForwardedHttp, httpRequest, legacyToolCall, metricValue, metrics,
  modernCall, rpc, startHttpSluice, waitLog, waitReady,
} from './http_lib.mjs';
import { holdRelay, redisCli, redisSuiteOptions, startRedis } from './redis_lib.mjs';

const POLICY = `version: 1
defaults:
  action: allow
  confirm_ttl: 120
tools:
  echo:
    action: allow
  delete_file:
    action: confirm
    irreversible: true
    approvers: ["header:oncall-*"]
  write_file:
    action: confirm
    approval: page
    self_approve: true
  move_file:
    action: confirm
    irreversible: true
    fallback: page
    self_approve: true
`;

const URL_CAPS = { elicitation: { form: {}, url: {} } };
const NO_CAPS = {};
const ALICE = { 'X-User': 'alice' };
const BOB = { 'X-User': 'oncall-bob' };
const CAROL = { 'X-User': 'oncall-carol' };
const MALLORY = { 'X-User': 'mallory' };

async function start(t, extra = {}) {
  const dir = extra.dir ?? tmpDir(t);
  // Replicas start at once in one dir: each writes its own file, or one reads the other's truncation.
  const policy = writePolicy(dir, extra.policy ?? POLICY, `policy-${extra.tag ?? 'a'}.yaml`);
  const s = await startHttpSluice(t, {
    policy,
    dir,
    era: extra.era ?? 'legacy',
    audit: path.join(dir, `audit-${extra.tag ?? 'a'}.jsonl`),
    tag: extra.tag,
    upstream: extra.upstream,
    env: extra.env,
    args: ['--principal', 'header:X-User', ...(extra.args ?? [])],
  });
  s.syncHeaders = ALICE;
  s.auditFile = path.join(dir, `audit-${extra.tag ?? 'a'}.jsonl`);
  return s;
}

/** The page's path from a URL sluice handed out. */
function pagePath(url) {
  const u = new URL(url);
  assert.match(u.pathname, /^\/approve\/[0-9a-f]{32}$/, `page URL: ${url}`);
  return u.pathname;
}

async function getPage(s, p, headers) {
  const r = await httpRequest(s.target, { method: 'GET', path: p, headers });
  await r.complete();
  return r;
}

async function postForm(s, p, headers, fields) {
  const body = new URLSearchParams(fields).toString();
  const r = await httpRequest(s.target, {
    method: 'POST',
    path: p,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body,
  });
  await r.complete();
  return r;
}

function csrfOf(page) {
  const m = /name="csrf" value="([0-9a-f]{64})"/.exec(page.text);
  assert.ok(m, `no CSRF token on the page: ${page.text.slice(0, 2000)}`);
  return m[1];
}

function assertPageHeaders(r) {
  const csp = r.headers['content-security-policy'];
  assert.ok(csp, 'Content-Security-Policy');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /form-action 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal(r.headers['x-frame-options'], 'DENY');
  assert.equal(r.headers['cache-control'], 'no-store');
  assert.equal(r.headers['referrer-policy'], 'no-referrer');
}

/** Round one, modern, with URL elicitation: the page's URL and the state. */
async function roundOne(s, id, name, args, caps = URL_CAPS, headers = ALICE) {
  const r = await modernCall(s.target, toolCall(id, name, args, { caps }), { headers });
  assert.ok(r.result, JSON.stringify(r));
  assert.equal(r.result.resultType, 'input_required', JSON.stringify(r));
  const q = r.result.inputRequests['sluice.confirm'];
  assert.equal(q.method, 'elicitation/create');
  assert.equal(q.params.mode, 'url');
  // The issue asks for an elicitationId; 2026-07-28 correlates by requestState, so it is the
  // page's id, the last segment of the URL, and tells nothing the URL does not.
  assert.equal(q.params.elicitationId, q.params.url.split('/').pop(), 'elicitationId is the page id');
  assert.equal(typeof r.result.requestState, 'string');
  return { url: q.params.url, path: pagePath(q.params.url), state: r.result.requestState };
}

async function roundTwo(s, id, name, args, state, caps = URL_CAPS, headers = ALICE) {
  return modernCall(s.target, confirmRetry(id, name, args, state, { action: 'accept' }, { caps }), { headers });
}

async function approve(s, p, headers, decision = 'approve') {
  const page = await getPage(s, p, headers);
  assert.equal(page.status, 200, page.text);
  assertPageHeaders(page);
  return postForm(s, p, headers, { csrf: csrfOf(page), decision });
}

function auditDecisions(s) {
  if (!fs.existsSync(s.auditFile)) return [];
  return fs.readFileSync(s.auditFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

describe('approval page: 2026-07-28 rounds', suiteOptions(), () => {
  test('an allowed approver approves: round two forwards once, exactly the arguments shown', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/a <b> & "c"', recursive: true };
    const one = await roundOne(s, 1, 'delete_file', args);
    // Pending: round two is answered with the same page, and nothing runs.
    const pending = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(pending.result.resultType, 'input_required', JSON.stringify(pending));
    assert.equal(pagePath(pending.result.inputRequests['sluice.confirm'].params.url), one.path);
    await assertNotForwardedHttp(s, 'delete_file');
    const page = await getPage(s, one.path, BOB);
    assert.equal(page.status, 200, page.text);
    assertPageHeaders(page);
    assert.match(page.text, /delete_file/);
    assert.match(page.text, /header:alice/, 'the page names who asked');
    assert.match(page.text, /&lt;b&gt; &amp;/, 'argument values are shown, HTML-escaped');
    assert.match(page.text, /recursive/);
    assert.match(page.text, /Irreversible/);
    assert.doesNotMatch(page.text, /<script/i);
    const done = await postForm(s, one.path, BOB, { csrf: csrfOf(page), decision: 'approve' });
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /approved/i);
    const r = await roundTwo(s, 3, 'delete_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(s, 'delete_file', args, one.state);
    // Once: the same state again gets the kept outcome, never a second run.
    const again = await roundTwo(s, 4, 'delete_file', args, one.state);
    assert.ok(again.result, JSON.stringify(again));
    await assertForwardedOnceHttp(s, 'delete_file', args, one.state);
    const journal = auditDecisions(s);
    assert.ok(journal.some((e) => e.decision === 'page-approved' && e.principal === 'header:oncall-bob'),
      `journal: ${JSON.stringify(journal)}`);
  });

  test('the page shows every argument value whole: the tail of a long value is on it', async (t) => {
    const s = await start(t);
    // Longer than the client form shows of one value (1 KiB: its start, a length and digest
    // marker, its end). Two letters in turn: a run of one character is shown as its count.
    const long = `/srv/${'ab'.repeat(1500)}; rm -rf /home`;
    const args = { path: long, note: 'bc'.repeat(1000) + '<tail & end>' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const page = await getPage(s, one.path, BOB);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /every argument exactly as it will be forwarded/);
    assert.ok(page.text.includes(`&quot;${long}&quot;`), 'the whole value, its tail included, is on the page');
    assert.ok(page.text.includes(`&quot;${'bc'.repeat(1000)}&lt;tail &amp; end&gt;&quot;`), 'whole and HTML-escaped');
    assert.doesNotMatch(page.text, /sha256/, 'no value is abbreviated');
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('a value too long for the page is cut to its start, length and digest and its end, and the page says so', async (t) => {
    const s = await start(t);
    // 1 MiB of U+200B and U+200A in turn (a run of one would be shown as its count): 2 MiB
    // shown as escapes, 2.4 MB of record if it were kept whole.
    const args = { path: '/srv/zw.txt', content: '\u200b\u200a'.repeat(174500) };
    const canon = JSON.stringify(args.content); // RFC 8785 keeps U+200B as it is
    const hex = crypto.createHash('sha256').update(canon).digest('hex').slice(0, 32);
    const one = await roundOne(s, 1, 'write_file', args);
    const page = await getPage(s, one.path, ALICE);
    assert.equal(page.status, 200, page.text.slice(0, 2000));
    const marker = `\u2026[${Buffer.byteLength(canon)} bytes, sha256 ${hex}]`;
    assert.ok(page.text.includes(`\\u200b${marker}`) || page.text.includes(`\\u200a${marker}`),
      'the cut value\'s start, whole escapes, then the marker of its whole length and digest');
    assert.ok(/\u2026\[\d+ bytes, sha256 [0-9a-f]{32}\](\\u200[ab])+&quot;/.test(page.text),
      'then its end, whole escapes up to its closing quote');
    assert.match(page.text, /too long for this page: only its start and its end are shown/);
    assert.ok(page.text.includes('&quot;/srv/zw.txt&quot;'), 'the short value is whole');
    assert.ok(page.text.length < 200000, `the page is bounded: ${page.text.length} bytes`);
    // What runs is the call, not what the page could show of it.
    assert.equal((await postForm(s, one.path, ALICE, { csrf: csrfOf(page), decision: 'approve' })).status, 200);
    const r = await roundTwo(s, 2, 'write_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r).slice(0, 500));
    await assertForwardedOnceHttp(s, 'write_file', args, one.state);
  });

  test('a question the store has no room for is refused: no URL to a dead page, and the store is up', async (t) => {
    // 200,000 bytes for page questions, of which one principal may hold a sixteenth (12,500):
    // principals asking about 11 KB each fill it after seventeen or so.
    const s = await start(t, { env: { SLUICE_MEMORY_STORE_BYTES: '200000' } });
    const mid = (p) => ({ path: p, content: 'mn'.repeat(5500) }); // no run: it would be counted
    const who = (i) => ({ 'X-User': `asker-${i}` });
    let full = -1;
    for (let i = 0; i < 30 && full < 0; i++) {
      const r = await modernCall(s.target, toolCall(i + 1, 'write_file', mid(`/srv/${i}`), { caps: URL_CAPS }), { headers: who(i) });
      if (r.result?.isError) full = i;
      else assert.equal((await getPage(s, pagePath(r.result.inputRequests['sluice.confirm'].params.url), who(i))).status, 200);
    }
    assert.ok(full >= 16, `the budget took ${full} questions of 11 KB`);
    const refusedAs = async (id, args, headers) => {
      const r = await modernCall(s.target, toolCall(id, 'write_file', args, { caps: URL_CAPS }), { headers });
      assert.equal(r.result?.isError, true, JSON.stringify(r).slice(0, 500));
      const text = resultText(r);
      assert.match(text, /could not keep the question for the page/);
      assert.doesNotMatch(text, /\/approve\//, 'no page URL is handed out');
    };
    // A principal that holds nothing is refused as well: the budget is everyone's.
    await refusedAs(101, mid('/srv/two'), ALICE);
    // The same call again is not handed the refused question's page as an identical open one.
    await refusedAs(102, mid('/srv/two'), ALICE);
    await assertNotForwardedHttp(s, 'write_file');
    assert.match(s.stderr, /budget for approval page records is full/);
    assert.doesNotMatch(s.stderr, /store unreachable/);
    assert.equal(metricValue(await metrics(s.target), 'sluice_store_up'), 1);
    const refused = auditDecisions(s).filter((e) => e.reason === 'page-not-kept');
    assert.equal(refused.length, 3, JSON.stringify(auditDecisions(s)));
    // A question that fits still gets a page that reads.
    const small = await roundOne(s, 103, 'write_file', { path: '/srv/small' });
    assert.equal((await getPage(s, small.path, ALICE)).status, 200);
  });

  test('one principal\'s questions hold at most its share of the store: its next is refused, others\' are kept', async (t) => {
    // 1,600,000 bytes for page questions: one principal's share is 100,000, two 40 KB questions.
    const s = await start(t, { env: { SLUICE_MEMORY_STORE_BYTES: '1600000' } });
    const big = (p) => ({ path: p, content: 'bc'.repeat(20000) }); // no run: it would be counted
    for (const [id, p] of [[1, '/srv/a1'], [2, '/srv/a2']]) {
      const one = await roundOne(s, id, 'write_file', big(p));
      assert.equal((await getPage(s, one.path, ALICE)).status, 200);
    }
    // The same call twice: the refused question is closed, so the second is asked (and refused)
    // anew, not handed the first one's as an identical open question.
    for (const id of [3, 30]) {
      const r = await modernCall(s.target, toolCall(id, 'write_file', big('/srv/a3'), { caps: URL_CAPS }), { headers: ALICE });
      assert.equal(r.result?.isError, true, JSON.stringify(r).slice(0, 500));
      assert.match(resultText(r), /your questions for the page already take up your share/);
      assert.doesNotMatch(resultText(r), /\/approve\//, 'no page URL is handed out');
    }
    // Another principal's question of the same size is kept, and its page reads.
    const carol = { 'X-User': 'carol' };
    const other = await roundOne(s, 4, 'write_file', big('/srv/c1'), URL_CAPS, carol);
    assert.equal((await getPage(s, other.path, carol)).status, 200);
    // A smaller one of alice's still fits in what is left of her share.
    const small = await roundOne(s, 5, 'write_file', { path: '/srv/a-small' });
    assert.equal((await getPage(s, small.path, ALICE)).status, 200);
    await assertNotForwardedHttp(s, 'write_file');
    const journal = auditDecisions(s);
    const over = journal.filter((e) => e.reason === 'page-over-share');
    assert.equal(over.length, 2, JSON.stringify(journal));
    assert.equal(over[0].principal, 'header:alice');
    assert.equal(journal.filter((e) => e.reason === 'page-not-kept').length, 0);
    // Not the store's fault: it is up, and says nothing of a full budget.
    assert.doesNotMatch(s.stderr, /budget for approval page records is full|store unreachable/);
    assert.equal(metricValue(await metrics(s.target), 'sluice_store_up'), 1);
  });

  test('the approver\'s journal record names the arguments it decided (their digest)', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/digest' };
    const one = await roundOne(s, 1, 'delete_file', args);
    assert.equal((await approve(s, one.path, BOB)).status, 200);
    const other = await roundOne(s, 2, 'delete_file', { path: '/srv/digest-2' });
    assert.equal((await approve(s, other.path, CAROL, 'decline')).status, 200);
    const journal = auditDecisions(s);
    const asked = journal.filter((e) => e.decision === 'asked' && e.tool === 'delete_file');
    assert.equal(asked.length, 2, JSON.stringify(journal));
    assert.match(asked[0].args_sha256, /^[0-9a-f]{64}$/);
    assert.notEqual(asked[0].args_sha256, asked[1].args_sha256);
    const approved = journal.find((e) => e.decision === 'page-approved' && e.principal === 'header:oncall-bob');
    assert.ok(approved, JSON.stringify(journal));
    assert.equal(approved.args_sha256, asked[0].args_sha256, 'page-approved names the asked arguments');
    const declined = journal.find((e) => e.decision === 'page-declined' && e.principal === 'header:oncall-carol');
    assert.ok(declined, JSON.stringify(journal));
    assert.equal(declined.args_sha256, asked[1].args_sha256, 'page-declined names the asked arguments');
  });

  test('a Content-Type that only starts like the form\'s is refused (415), nothing decided', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/ctype' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const csrf = csrfOf(await getPage(s, one.path, BOB));
    const body = new URLSearchParams({ csrf, decision: 'approve' }).toString();
    for (const ctype of ['application/x-www-form-urlencodedXYZ', 'application/x-www-form-urlencoded, text/plain']) {
      const r = await httpRequest(s.target, {
        method: 'POST', path: one.path, headers: { ...BOB, 'Content-Type': ctype }, body,
      });
      await r.complete();
      assert.equal(r.status, 415, `${ctype}: ${r.text}`);
    }
    const pending = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(pending.result.resultType, 'input_required', JSON.stringify(pending));
    await assertNotForwardedHttp(s, 'delete_file');
    assert.ok(!auditDecisions(s).some((e) => String(e.decision).startsWith('page-')), 'nothing decided');
    // The same form with its parameters after the type is taken.
    const ok = await httpRequest(s.target, {
      method: 'POST', path: one.path,
      headers: { ...BOB, 'Content-Type': 'application/x-www-form-urlencoded ; charset=UTF-8' }, body,
    });
    await ok.complete();
    assert.equal(ok.status, 200, ok.text);
  });

  test('the caller cannot approve its own call without self_approve; an outsider cannot either', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/self' };
    const one = await roundOne(s, 1, 'delete_file', args);
    for (const who of [ALICE, MALLORY]) {
      const page = await getPage(s, one.path, who);
      assert.equal(page.status, 403, page.text);
      assert.doesNotMatch(page.text, /\/srv\/self/, 'arguments are shown only to approvers');
      // A token obtained for another principal is worth nothing to this one.
      const bobPage = await getPage(s, one.path, BOB);
      const r = await postForm(s, one.path, who, { csrf: csrfOf(bobPage), decision: 'approve' });
      assert.equal(r.status, 403, r.text);
    }
    const r = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(r.result.resultType, 'input_required');
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('self_approve: the caller approves its own call', async (t) => {
    const s = await start(t);
    const args = { path: '/tmp/mine', content: 'x' };
    const one = await roundOne(s, 1, 'write_file', args);
    const page = await getPage(s, one.path, MALLORY);
    assert.equal(page.status, 403, 'no approvers: nobody else may approve');
    const done = await approve(s, one.path, ALICE);
    assert.equal(done.status, 200, done.text);
    const r = await roundTwo(s, 2, 'write_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(s, 'write_file', args);
  });

  test('without or with a wrong CSRF token: refused, nothing recorded, nothing forwarded', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/csrf' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const none = await postForm(s, one.path, BOB, { decision: 'approve' });
    assert.ok(none.status >= 400, none.text);
    const wrong = await postForm(s, one.path, BOB, { csrf: '0'.repeat(64), decision: 'approve' });
    assert.equal(wrong.status, 403, wrong.text);
    const plain = await httpRequest(s.target, {
      method: 'POST', path: one.path, headers: { ...BOB, 'Content-Type': 'text/plain' }, body: 'decision=approve',
    });
    await plain.complete();
    assert.ok(plain.status >= 400, plain.text);
    const r = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(r.result.resultType, 'input_required', JSON.stringify(r));
    await assertNotForwardedHttp(s, 'delete_file');
    // The page still takes a proper decision afterwards: nothing was recorded.
    const page = await getPage(s, one.path, BOB);
    assert.match(page.text, /name="csrf"/);
  });

  // Defense in depth beside the token: a form the browser itself marks as sent from another
  // site (Sec-Fetch-Site, Origin) is refused before any token is read; without those headers
  // (curl, as every other test here) the token decides.
  test('a form the browser marks as from another site is refused before its token', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/cross' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const csrf = csrfOf(await getPage(s, one.path, BOB));
    const self = `http://127.0.0.1:${s.port}`;
    const cases = [
      [{ ...BOB, Origin: 'https://evil.example' }, /another origin/],
      [{ ...BOB, Origin: `http://127.0.0.1:${s.port + 1}` }, /another origin/],
      [{ ...BOB, Origin: 'null', 'Sec-Fetch-Site': 'cross-site' }, /another site/],
      [{ ...BOB, 'Sec-Fetch-Site': 'cross-site' }, /another site/],
      [{ ...BOB, 'Sec-Fetch-Site': 'same-site', Origin: self }, /another site/],
      [{ Origin: 'https://evil.example' }, /another origin/], // no principal: still 403, not 401
    ];
    for (const [headers, said] of cases) {
      const r = await postForm(s, one.path, headers, { csrf, decision: 'approve' });
      assert.equal(r.status, 403, `${JSON.stringify(headers)}: ${r.text}`);
      assert.match(r.text, said);
      assert.match(r.text, /nothing was recorded/);
      assertPageHeaders(r);
    }
    const until = Date.now() + 5000 * TIME_SCALE;
    while (!/approval page from another site \(Sec-Fetch-Site\)/.test(s.stderr) && Date.now() < until) await sleep(50);
    assert.match(s.stderr, /refused a POST to the approval page from another site \(Origin\)/);
    assert.match(s.stderr, /refused a POST to the approval page from another site \(Sec-Fetch-Site\)/);
    const pending = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(pending.result.resultType, 'input_required', JSON.stringify(pending));
    await assertNotForwardedHttp(s, 'delete_file');
    // the same form from the page's own origin decides; a browser withholds that origin as
    // "null" (the page's Referrer-Policy is no-referrer), which tells nothing either way
    const sameOrigin = await postForm(s, one.path, { ...BOB, Origin: self, 'Sec-Fetch-Site': 'same-origin' },
      { csrf: '0'.repeat(64), decision: 'approve' });
    assert.equal(sameOrigin.status, 403, sameOrigin.text);
    assert.match(sameOrigin.text, /token is missing or wrong/, 'same-origin still needs the token');
    const done = await postForm(s, one.path, { ...BOB, Origin: 'null', 'Sec-Fetch-Site': 'same-origin' },
      { csrf, decision: 'approve' });
    assert.equal(done.status, 200, done.text);
    const r = await roundTwo(s, 3, 'delete_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(s, 'delete_file', args, one.state);
  });

  // DNS rebinding: a foreign page whose host name came to resolve to 127.0.0.1 is same-origin
  // with what it fetches there (its Origin matches its Host): it could read the form's token
  // and post it back. On a loopback listener the page answers only under this machine's own
  // names or --approval-base-url's.
  test('on a loopback listener, a request naming another host is refused, GET and POST', async (t) => {
    const s = await start(t, { args: ['--approval-base-url', 'https://approve.example.com'] });
    const args = { path: '/srv/rebind' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const evil = `evil.example:${s.port}`;
    const get = await getPage(s, one.path, { ...BOB, Host: evil });
    assert.equal(get.status, 403, get.text);
    assert.doesNotMatch(get.text, /name="csrf"|\/srv\/rebind/, 'neither the token nor the call is shown');
    assert.match(get.text, /a DNS answer pointed here/);
    assertPageHeaders(get);
    const csrf = csrfOf(await getPage(s, one.path, BOB));
    const post = await postForm(s, one.path, { ...BOB, Host: evil, Origin: `http://${evil}`, 'Sec-Fetch-Site': 'same-origin' },
      { csrf, decision: 'approve' });
    assert.equal(post.status, 403, post.text);
    assert.match(post.text, /Nothing was shown or recorded/);
    assert.match(s.stderr, /refused a request to the approval page for another host name/);
    const pending = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(pending.result.resultType, 'input_required', JSON.stringify(pending));
    await assertNotForwardedHttp(s, 'delete_file');
    for (const host of [`localhost:${s.port}`, 'LOCALHOST', `[::1]:${s.port}`, 'approve.example.com', 'approve.example.com:443']) {
      const r = await getPage(s, one.path, { ...BOB, Host: host });
      assert.equal(r.status, 200, `Host ${host}: ${r.text.slice(0, 300)}`);
    }
    for (const host of ['approve.example.com:8443', 'localhost.evil.example', `127.0.0.1.evil.example:${s.port}`]) {
      const r = await getPage(s, one.path, { ...BOB, Host: host });
      assert.equal(r.status, 403, `Host ${host}: ${r.text.slice(0, 300)}`);
    }
  });

  // A principal is the client's own text: a bidi override in the approver's name must not turn
  // what the next person reads around ("declined by oncall-" then "eve" shown reversed).
  test('an approver\'s name with a bidi control is shown neutralized to the next person', async (t) => {
    const s = await start(t);
    const one = await roundOne(s, 1, 'delete_file', { path: '/srv/bidi' });
    const name = Buffer.from('oncall-\u202eeve', 'utf8').toString('latin1'); // raw UTF-8 bytes on the wire
    const page = await getPage(s, one.path, { 'X-User': name });
    assert.equal(page.status, 200, page.text);
    const r = await httpRequest(s.target, { method: 'POST', path: one.path, headers: { 'X-User': name, 'Content-Type': 'application/x-www-form-urlencoded' }, body: Buffer.from(`csrf=${csrfOf(page)}&decision=decline`) });
    await r.complete();
    assert.equal(r.status, 200, r.text);
    const seen = await getPage(s, one.path, BOB);
    const text = seen.text;
    assert.doesNotMatch(text, /\u202e/, 'the raw override reaches the page');
    assert.match(text, /already declined by header:oncall-\\u202eeve\./, 'shown as its escape');
    const other = await roundOne(s, 2, 'delete_file', { path: '/srv/bidi2' });
    const stranger = Buffer.from('x\u202eyz', 'utf8').toString('latin1');
    const refused = await getPage(s, other.path, { 'X-User': stranger });
    assert.equal(refused.status, 403, refused.text);
    assert.doesNotMatch(refused.text, /\u202e/);
    assert.match(refused.text, /You \(header:x\\u202eyz\)/);
  });

  test('decline refuses; a second decision is refused with a clear page', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/decline' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const carolCsrf = csrfOf(await getPage(s, one.path, CAROL)); // her form, loaded before
    const d = await approve(s, one.path, BOB, 'decline');
    assert.equal(d.status, 200, d.text);
    const page = await getPage(s, one.path, CAROL);
    assert.match(page.text, /already declined by header:oncall-bob/);
    const bobPage = await getPage(s, one.path, BOB);
    assert.doesNotMatch(bobPage.text, /name="csrf"/);
    // A second decision (with a valid token) is refused and changes nothing.
    const second = await postForm(s, one.path, CAROL, { csrf: carolCsrf, decision: 'approve' });
    assert.equal(second.status, 409, second.text);
    assert.match(second.text, /already declined/);
    const r = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(r.result.isError, true, JSON.stringify(r));
    assert.match(resultText(r), /declined/);
    await assertNotForwardedHttp(s, 'delete_file');
    assert.ok(auditDecisions(s).some((e) => e.decision === 'page-declined'));
  });

  test('a second approval is refused, and the call still runs once', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/twice' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const carolPage = await getPage(s, one.path, CAROL);
    const carolCsrf = csrfOf(carolPage);
    assert.equal((await approve(s, one.path, BOB)).status, 200);
    const second = await postForm(s, one.path, CAROL, { csrf: carolCsrf, decision: 'approve' });
    assert.equal(second.status, 409, second.text);
    assert.match(second.text, /already approved by header:oncall-bob/);
    const r = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(s, 'delete_file', args);
  });

  test('after expiry the page refuses and round two is refused', async (t) => {
    // Long enough to read the page first even under valgrind (round one and the GET took over 1 s
    // there on a loaded CI machine), then wait it out.
    const ttl = 2 * TIME_SCALE;
    const policy = POLICY.replace('confirm_ttl: 120', `confirm_ttl: ${ttl}`);
    const s = await start(t, { policy });
    const args = { path: '/srv/late' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const page = await getPage(s, one.path, BOB);
    const csrf = csrfOf(page);
    await sleep(ttl * 1000 + 1200);
    const late = await postForm(s, one.path, BOB, { csrf, decision: 'approve' });
    assert.ok(late.status === 410 || late.status === 404, late.text);
    const r = await rpc(s.target, confirmRetry(2, 'delete_file', args, one.state, { action: 'accept' }, { caps: URL_CAPS }), { headers: ALICE });
    assert.ok(r.msg.error || (r.msg.result && r.msg.result.isError), r.raw);
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('a state for another principal is refused; arguments changed after the page: refused', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/bound' };
    const one = await roundOne(s, 1, 'delete_file', args);
    assert.equal((await approve(s, one.path, BOB)).status, 200);
    const other = await rpc(s.target, confirmRetry(2, 'delete_file', args, one.state, { action: 'accept' }, { caps: URL_CAPS }), { headers: MALLORY });
    assert.ok(other.msg.error, other.raw);
    const changed = await roundTwo(s, 3, 'delete_file', { path: '/srv/other' }, one.state);
    assert.equal(changed.result.isError, true, JSON.stringify(changed));
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('no URL elicitation: an isError result says where to approve; the retry carries the state in _meta', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/nourl' };
    const r = await modernCall(s.target, toolCall(1, 'delete_file', args, { caps: { elicitation: { form: {} } } }), { headers: ALICE });
    assert.equal(r.result.isError, true, JSON.stringify(r));
    const text = resultText(r);
    const m = /(https?:\/\/\S+\/approve\/[0-9a-f]{32})/.exec(text);
    assert.ok(m, text);
    const state = r.result._meta['dev.sluice/token'];
    assert.equal(typeof state, 'string');
    const retry = (id) => modernCall(s.target, toolCall(id, 'delete_file', args, {
      caps: NO_CAPS, meta: { 'dev.sluice/token': state },
    }), { headers: ALICE });
    const pending = await retry(2);
    assert.equal(pending.result.isError, true);
    await assertNotForwardedHttp(s, 'delete_file');
    assert.equal((await approve(s, pagePath(m[1]), BOB)).status, 200);
    const ok = await retry(3);
    assert.ok(ok.result && !ok.result.isError, JSON.stringify(ok));
    await assertForwardedOnceHttp(s, 'delete_file', args, state); // the state stays out of it
  });

  test('fallback: page serves an irreversible tool to a client without elicitation; form clients are asked as before', async (t) => {
    const s = await start(t);
    const args = { from: '/a', to: '/b' };
    const form = await modernCall(s.target, toolCall(1, 'move_file', args, { caps: { elicitation: { form: {} } } }), { headers: ALICE });
    assert.equal(form.result.resultType, 'input_required');
    assert.equal(form.result.inputRequests['sluice.confirm'].params.mode, 'form');
    // The same call again without elicitation finds the form question open: it cannot answer
    // that, so it is refused; another call goes to the page.
    const same = await modernCall(s.target, toolCall(2, 'move_file', args, { caps: NO_CAPS }), { headers: ALICE });
    assert.equal(same.result.isError, true, JSON.stringify(same));
    assert.match(resultText(same), /already waiting/);
    const none = await modernCall(s.target, toolCall(3, 'move_file', { from: '/c', to: '/d' }, { caps: NO_CAPS }), { headers: ALICE });
    assert.equal(none.result.isError, true, JSON.stringify(none));
    assert.match(resultText(none), /\/approve\/[0-9a-f]{32}/);
    await assertNotForwardedHttp(s, 'move_file');
  });
});

describe('approval page: observe', suiteOptions(), () => {
  const OBSERVE = `version: 1
defaults:
  action: allow
tools:
  write_file:
    action: confirm
    approvers: ["header:oncall-*"]
    args:
      path: {}
      content: {}
    observe:
      tool: read_file
      args: { path: path }
  set_file:
    action: allow
  read_file:
    action: allow
`;

  test('the page shows what observe read; a change after the approval refuses the call', async (t) => {
    const s = await start(t, { policy: OBSERVE });
    const set = (id, content) => modernCall(s.target, toolCall(id, 'set_file', { path: '/obs.txt', content }, { caps: NO_CAPS }), { headers: ALICE });
    await set('s1', 'before-the-question');
    const args = { path: '/obs.txt', content: 'new text' };
    const one = await roundOne(s, 1, 'write_file', args);
    const page = await getPage(s, one.path, BOB);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /before-the-question/, 'the page shows what observe read');
    assert.equal((await postForm(s, one.path, BOB, { csrf: csrfOf(page), decision: 'approve' })).status, 200);
    await set('s2', 'changed-meanwhile');
    const r = await roundTwo(s, 2, 'write_file', args, one.state);
    assert.equal(r.result.isError, true, JSON.stringify(r));
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('unchanged after the approval: the call runs once', async (t) => {
    const s = await start(t, { policy: OBSERVE });
    await modernCall(s.target, toolCall('s1', 'set_file', { path: '/obs2.txt', content: 'steady' }, { caps: NO_CAPS }), { headers: ALICE });
    const args = { path: '/obs2.txt', content: 'next' };
    const one = await roundOne(s, 1, 'write_file', args);
    assert.equal((await approve(s, one.path, BOB)).status, 200);
    const r = await roundTwo(s, 2, 'write_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(s, 'write_file', args);
  });
});

/** Two replicas on one Redis and one state key, both connected to it (A and B). */
async function twoReplicas(t) {
  const redis = await startRedis(t);
  const dir = tmpDir(t);
  const key = path.join(dir, 'state.key');
  fs.writeFileSync(key, crypto.randomBytes(32), { mode: 0o600 });
  fs.chmodSync(key, 0o600);
  const common = ['--state-key-file', key, '--store', `redis://127.0.0.1:${redis.port}`];
  const upstream = [process.execPath, FAKE_UPSTREAM, 'FAKE_ERA=legacy'];
  const [a, b] = await Promise.all([
    start(t, { dir, tag: 'a', upstream, args: common }),
    start(t, { dir, tag: 'b', upstream, args: common }),
  ]);
  // /readyz does not wait for the store: a page written before A is connected waits in A.
  await Promise.all([a, b].map((x) => waitLog(x, /store: connected to redis/, 10000)));
  return { a, b, dir };
}

describe('approval page: two replicas sharing Redis', redisSuiteOptions(), () => {
  // The question's record is written before its URL goes out, and the URL waits for Redis to
  // say it took it: a write Redis refuses after it was sent (here its ACL lets sluice read page
  // records but write none; a full Redis with noeviction answers OOM alike) refuses the call.
  test('a page record Redis refuses after it was sent: the call is refused, no URL to a dead page', async (t) => {
    const redis = await startRedis(t);
    const s = await start(t, { args: ['--store', redis.url] });
    await waitLog(s, /store: connected to redis/, 10000);
    await redisCli(redis.port, 'ACL', 'SETUSER', 'default', 'resetkeys', '%R~sluice:p*', '~sluice:[^p]*');
    const args = { path: '/srv/redis-refused' };
    const r = await modernCall(s.target, toolCall(1, 'delete_file', args, { caps: URL_CAPS }), { headers: ALICE });
    assert.equal(r.result?.isError, true, JSON.stringify(r));
    assert.match(resultText(r), /could not keep the question for the page/);
    assert.doesNotMatch(JSON.stringify(r), /\/approve\//, 'no page URL is handed out');
    assert.deepEqual(await redisCli(redis.port, 'KEYS', 'sluice:page:*'), []);
    await waitLog(s, /redis answered an approval record with: NOPERM/, 10000);
    assert.equal(auditDecisions(s).filter((e) => e.reason === 'page-not-kept').length, 1, JSON.stringify(auditDecisions(s)));
    // The refused question was closed: once Redis takes records again, the same call gets a
    // page of its own that reads, not the refused one's.
    await redisCli(redis.port, 'ACL', 'SETUSER', 'default', 'allkeys');
    const one = await roundOne(s, 2, 'delete_file', args);
    assert.equal((await getPage(s, one.path, BOB)).status, 200);
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('the page decided at replica A; round two at replica B runs the call once', async (t) => {
    const { a, b } = await twoReplicas(t);
    const args = { path: '/srv/replicated' };
    const one = await roundOne(a, 1, 'delete_file', args);
    const carolAtB = csrfOf(await getPage(b, one.path, CAROL)); // B serves A's page
    assert.equal((await approve(a, one.path, BOB)).status, 200);
    // Decided once, in the store: a second decision at B is refused.
    const second = await postForm(b, one.path, CAROL, { csrf: carolAtB, decision: 'decline' });
    assert.equal(second.status, 409, second.text);
    // B serves the same page (same key, same store) and knows it is decided.
    const atB = await getPage(b, one.path, CAROL);
    assert.match(atB.text, /already approved/);
    const r = await roundTwo(b, 2, 'delete_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(b, 'delete_file', args);
    await assertNotForwardedHttp(a, 'delete_file');
    // And A, given the same state, does not run it again.
    await roundTwo(a, 3, 'delete_file', args, one.state);
    await assertNotForwardedHttp(a, 'delete_file');
  });
});

describe('approval page: a held call decided at another replica after a reload', redisSuiteOptions(), () => {
  // The held call's replica reloads a policy that allows the tool, then the page (at a replica
  // that still gates it) declines: the decline decides the call, not the new policy.
  // (An approval is refused too: A checks the approver against its policy, which names none now.
  // The call, called again, is allowed.)
  test('declined at B after A allowed the tool: refused, nothing runs', async (t) => {
    const { a, b, dir } = await twoReplicas(t);
    const sess = new LegacyHttpSession(a.target, { headers: ALICE });
    await sess.initialize({ capabilities: URL_CAPS });
    const args = { path: '/srv/reloaded-decline' };
    const reply = await sess.post(legacyToolCall(11, 'delete_file', args));
    assert.equal(reply.status, 200, reply.text);
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');
    const allowed = POLICY.replace(/  delete_file:\n    action: confirm\n    irreversible: true\n    approvers: .*\n/, '  delete_file:\n    action: allow\n');
    assert.notEqual(allowed, POLICY);
    writePolicy(dir, allowed, 'policy-a.yaml');
    await reloadPolicy(a);
    assert.equal((await approve(b, pagePath(ask.params.url), BOB, 'decline')).status, 200);
    const fin = await reply.nextEvent((m) => m && m.id === 11);
    assert.equal(fin.result.isError, true, JSON.stringify(fin));
    await assertNotForwardedHttp(a, 'delete_file');
    await assertNotForwardedHttp(b, 'delete_file');
  });
});

describe('approval page: an identical call at another replica, before the asker\'s record landed', redisSuiteOptions(), () => {
  // Replica A asks; its page record's SET is held on its way to Redis. An identical call at
  // replica B is handed A's open question and reads its record: not there yet. Only once Redis
  // answered that read (nil) does A's SET go on. B looks again a moment later and gets A's page,
  // not a spurious page-not-kept.
  test('it looks again and gets the same page, once the record lands', async (t) => {
    const redis = await startRedis(t);
    const [toA, toB] = [await holdRelay(t, redis.port), await holdRelay(t, redis.port)];
    const dir = tmpDir(t);
    const key = path.join(dir, 'state.key');
    fs.writeFileSync(key, crypto.randomBytes(32), { mode: 0o600 });
    fs.chmodSync(key, 0o600);
    const common = ['--state-key-file', key, '--store-timeout', '10000'];
    const upstream = [process.execPath, FAKE_UPSTREAM, 'FAKE_ERA=legacy'];
    const [a, b] = await Promise.all([
      start(t, { dir, tag: 'a', upstream, args: [...common, '--store', `redis://127.0.0.1:${toA.port}`] }),
      start(t, { dir, tag: 'b', upstream, args: [...common, '--store', `redis://127.0.0.1:${toB.port}`] }),
    ]);
    await Promise.all([a, b].map((x) => waitLog(x, /store: connected to redis/, 10000)));
    const args = { path: '/srv/two-replicas-at-once' };
    toA.hold(/\$3\r\nSET\r\n\$\d+\r\nsluice:page:/);
    const atA = roundOne(a, 1, 'delete_file', args);
    await withDeadline(toA.held(), scaled(10000), "A's page record on its way to Redis");
    const bLooked = toB.replied(/\$3\r\nGET\r\n\$\d+\r\nsluice:page:/);
    const atB = modernCall(b.target, toolCall(2, 'delete_file', args, { caps: URL_CAPS }), { headers: ALICE });
    assert.match(await withDeadline(bLooked, scaled(10000), "B's read of the page record"), /^\$-1\r\n/,
      'B read before the record was there');
    toA.release();
    const one = await atA;
    const two = await atB;
    const urlAtB = two.result?.inputRequests?.['sluice.confirm']?.params?.url;
    assert.ok(urlAtB, JSON.stringify(two));
    assert.equal(pagePath(urlAtB), one.path, 'the same page (each replica names its own host)');
    assert.equal(two.result.requestState, one.state);
    assert.equal((await getPage(b, one.path, BOB)).status, 200);
    assert.equal(auditDecisions(b).filter((e) => e.reason === 'page-not-kept').length, 0, JSON.stringify(auditDecisions(b)));
    await assertNotForwardedHttp(a, 'delete_file');
    await assertNotForwardedHttp(b, 'delete_file');
  });
});

describe('approval page: a state key rotated while the question is pending', redisSuiteOptions(), () => {
  test('asked under the old key, polled and decided where the new one seals: same page, the call runs once', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const oldKey = path.join(dir, 'old.key');
    const newKey = path.join(dir, 'new.key');
    for (const k of [oldKey, newKey]) {
      fs.writeFileSync(k, crypto.randomBytes(32), { mode: 0o600 });
      fs.chmodSync(k, 0o600);
    }
    const store = ['--store', `redis://127.0.0.1:${redis.port}`];
    const upstream = [process.execPath, FAKE_UPSTREAM, 'FAKE_ERA=legacy'];
    // A rolling rotation: A still runs on the old key, B restarted with the new one sealing and
    // the old one opening (README "Keys").
    const [a, b] = await Promise.all([
      start(t, { dir, tag: 'a', upstream, args: ['--state-key-file', oldKey, ...store] }),
      start(t, {
        dir, tag: 'b', upstream, args: ['--state-key-file', newKey, '--previous-state-key-file', oldKey, ...store],
      }),
    ]);
    await Promise.all([a, b].map((x) => waitLog(x, /store: connected to redis/, 10000)));
    const args = { path: '/srv/rotated' };
    const one = await roundOne(a, 1, 'delete_file', args);
    // Polled where the new key seals before anyone decided: the same page, not a new id that 404s.
    const pending = await roundTwo(b, 2, 'delete_file', args, one.state);
    assert.equal(pending.result?.resultType, 'input_required', JSON.stringify(pending));
    assert.equal(pagePath(pending.result.inputRequests['sluice.confirm'].params.url), one.path);
    await assertNotForwardedHttp(b, 'delete_file');
    // The page as A (the old key) showed it, approved at B: its token still posts.
    const atA = await getPage(a, one.path, BOB);
    assert.equal(atA.status, 200, atA.text);
    const posted = await postForm(b, one.path, BOB, { csrf: csrfOf(atA), decision: 'approve' });
    assert.equal(posted.status, 200, posted.text);
    const r = await roundTwo(b, 3, 'delete_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(b, 'delete_file', args);
    await assertNotForwardedHttp(a, 'delete_file');
  });
});

describe('approval page: handshake era (2025-11-25) held calls', suiteOptions(), () => {
  async function legacyAsk(s, caps, id, name, args) {
    const sess = new LegacyHttpSession(s.target, { headers: ALICE });
    await sess.initialize({ capabilities: caps });
    const reply = await sess.post(legacyToolCall(id, name, args));
    assert.equal(reply.status, 200, reply.text);
    return { sess, reply };
  }

  test('URL elicitation: approved on the page, elicitation/complete, then the call runs once', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/held' };
    const { sess, reply } = await legacyAsk(s, URL_CAPS, 7, 'delete_file', args);
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');
    assert.equal(ask.params.mode, 'url');
    assert.equal(ask.params.elicitationId, ask.id, 'the elicitationId is ours');
    const p = pagePath(ask.params.url);
    const consent = await sess.answer(ask.id, { action: 'accept' });
    assert.equal(consent.status, 202);
    await sleep(400);
    await assertNotForwardedHttp(s, 'delete_file');
    assert.equal((await approve(s, p, BOB)).status, 200);
    const done = await reply.nextEvent((m) => m && m.method === 'notifications/elicitation/complete');
    assert.equal(done.params.elicitationId, ask.params.elicitationId);
    const fin = await reply.nextEvent((m) => m && m.id === 7);
    assert.ok(fin.result && !fin.result.isError, JSON.stringify(fin));
    await assertForwardedOnceHttp(s, 'delete_file', args);
  });

  test('declined on the page: the held call is refused, nothing runs', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/held-no' };
    const { reply } = await legacyAsk(s, URL_CAPS, 8, 'delete_file', args);
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');
    assert.equal((await approve(s, pagePath(ask.params.url), BOB, 'decline')).status, 200);
    await reply.nextEvent((m) => m && m.method === 'notifications/elicitation/complete');
    const fin = await reply.nextEvent((m) => m && m.id === 8);
    assert.equal(fin.result.isError, true, JSON.stringify(fin));
    assert.match(fin.result.content[0].text, /declined/);
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('an outsider cannot approve a held call; it stays held', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/held-out' };
    const { reply } = await legacyAsk(s, URL_CAPS, 9, 'delete_file', args);
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');
    const p = pagePath(ask.params.url);
    assert.equal((await getPage(s, p, MALLORY)).status, 403);
    assert.equal((await getPage(s, p, ALICE)).status, 403);
    await sleep(400);
    assert.equal(reply.events.filter((e) => e.json && e.json.id === 9).length, 0, 'still held');
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('no elicitation at all: an isError result with the page and the retry in _meta', async (t) => {
    const s = await start(t);
    const args = { path: '/srv/legacy-none' };
    const sess = new LegacyHttpSession(s.target, { headers: ALICE });
    await sess.initialize({ capabilities: {} });
    const r = await sess.rpc(legacyToolCall(1, 'delete_file', args));
    assert.equal(r.msg.result.isError, true, r.raw);
    const url = /(https?:\/\/\S+\/approve\/[0-9a-f]{32})/.exec(r.msg.result.content[0].text);
    assert.ok(url, r.raw);
    const state = r.msg.result._meta['dev.sluice/token'];
    assert.equal((await approve(s, pagePath(url[1]), BOB)).status, 200);
    const ok = await sess.rpc(legacyToolCall(2, 'delete_file', args, { _meta: { 'dev.sluice/token': state } }));
    assert.ok(ok.msg.result && !ok.msg.result.isError, ok.raw);
    await assertForwardedOnceHttp(s, 'delete_file', args, state);
    const again = await sess.rpc(legacyToolCall(3, 'delete_file', args, { _meta: { 'dev.sluice/token': state } }));
    assert.ok(again.msg, again.raw);
    await assertForwardedOnceHttp(s, 'delete_file', args);
  });
});

/** This machine's first IPv4 address that is not loopback, or null: the page reached the way a
 * browser elsewhere on the network reaches it. */
function lanAddress() {
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return null;
}
/** Without one, as root (CI): an address of the documentation range on lo for this file's run.
 * Not 127/8, so sluice takes connections to it for connections from elsewhere, as from a LAN;
 * without it the rebinding cases would be skipped and the mutant of their check survive. */
function borrowedLanAddress() {
  const addr = '198.51.100.77';
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const add = spawnSync('ip', ['addr', 'add', `${addr}/32`, 'dev', 'lo'], { stdio: 'ignore', timeout: 5000 });
  if (add.status !== 0) return null;
  process.on('exit', () => spawnSync('ip', ['addr', 'del', `${addr}/32`, 'dev', 'lo'], { stdio: 'ignore', timeout: 5000 }));
  return addr;
}
const LAN = process.env.E2E_NO_LAN ? borrowedLanAddress() : lanAddress() ?? borrowedLanAddress();
const NEEDS_LAN = LAN ? {} : { skip: 'no IPv4 address other than loopback here, and none could be added to lo' };

/** An IPv6 address of this machine's other than loopback and link-local (a URL cannot carry a
 * zone), or null. */
function lanAddress6() {
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv6' && !a.internal && !/^fe80:/i.test(a.address)) return a.address;
  return null;
}
const LAN6 = lanAddress6();
const LOOPBACK6 = Object.values(os.networkInterfaces()).flat().some((a) => a && a.family === 'IPv6' && a.address === '::1');

/** IPv6 address addr with its eight groups written out, four upper-case digits each: how no
 * browser writes it. */
function expanded6(addr) {
  const [head, tail] = addr.includes('::') ? addr.split('::') : [addr, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => g.padStart(4, '0').toUpperCase()).join(':');
}

/** The --approval-listen listener's port, from its "listening on" line. */
function approvalPort(s) {
  const m = /listening on http:\/\/\S+\/approve\/ \(port (\d+)\)/.exec(s.stderr);
  assert.ok(m, s.stderr);
  return Number(m[1]);
}

describe('approval page: --approval-listen', suiteOptions(), () => {
  test('stdio without a page: warned at start, and a call that needs the page is refused', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    s.send(toolCall(1, 'delete_file', { path: '/srv/stdio' }, { caps: URL_CAPS }));
    const r = await s.next((m) => m.id === 1);
    assert.equal(r.msg.result.isError, true, r.raw);
    assert.match(r.msg.result.content[0].text, /serves no approval page/);
    assert.match(s.stderr, /ask on the approval page, and sluice serves none/);
    s.send(toolCall(2, 'echo', { after: 1 }, { caps: NO_CAPS }));
    await s.next((m) => m.id === 2);
    assert.equal(s.upstreamCalls('delete_file').length, 0);
  });


  // Two identical calls in one read: the second asks while the first's question is open, and is
  // handed that question (its state and page) before the first's record is written. It gets
  // what the first got: the same page when its record was kept, a refusal when it was not, never
  // a URL to a page that was never written.
  async function twoAtOnce(t, env) {
    const dir = tmpDir(t);
    const s = startSluice(t, {
      policy: writePolicy(dir, POLICY), dir, env, audit: path.join(dir, 'audit.jsonl'),
      args: ['--approval-listen', '127.0.0.1:0', '--approval-principal', 'header:X-Approver'],
    });
    await waitLog(s, /listening on http:\/\/\S+\/approve\/ \(port \d+\)/, 10000);
    // Once the upstream is ready: before, the first line waits for it and the second for the
    // first, in another turn of the loop.
    s.send(toolCall(0, 'echo', { warm: 1 }, { caps: NO_CAPS }));
    await s.next((m) => m.id === 0);
    const args = { path: '/srv/twice-at-once' };
    s.sendRaw([1, 2].map((id) => JSON.stringify(toolCall(id, 'delete_file', args, { caps: URL_CAPS })) + '\n').join(''));
    const [one, two] = [await s.next((m) => m.id === 1), await s.next((m) => m.id === 2)];
    const journal = () => fs.readFileSync(path.join(dir, 'audit.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    return { s, page: { target: { port: approvalPort(s) } }, one: one.msg, two: two.msg, journal };
  }

  test('two identical calls at once: the second is handed the first\'s page, which reads', async (t) => {
    const { s, page, one, two } = await twoAtOnce(t, {});
    const url = (r) => r.result?.inputRequests?.['sluice.confirm']?.params?.url;
    assert.ok(url(one), JSON.stringify(one));
    assert.equal(url(two), url(one), JSON.stringify(two));
    assert.equal(two.result.requestState, one.result.requestState);
    const got = await getPage(page, pagePath(url(two)), { 'X-Approver': 'oncall-dave' });
    assert.equal(got.status, 200, got.text);
    assert.equal(s.upstreamCalls('delete_file').length, 0);
  });

  test('two identical calls at once, the first\'s record not kept: both are refused, no URL to a dead page', async (t) => {
    // Room for no question at all.
    const { s, one, two, journal } = await twoAtOnce(t, { SLUICE_MEMORY_STORE_BYTES: '100' });
    for (const r of [one, two]) {
      assert.equal(r.result?.isError, true, JSON.stringify(r));
      assert.doesNotMatch(JSON.stringify(r), /\/approve\//, 'no page URL is handed out');
    }
    assert.match(two.result.content[0].text, /could not keep the question for the page/);
    const refused = journal().filter((e) => e.tool === 'delete_file').map((e) => e.reason);
    assert.deepEqual(refused.sort(), ['page-not-kept', 'page-over-share'], JSON.stringify(journal()));
    assert.equal(s.upstreamCalls('delete_file').length, 0);
  });

  test('the page on its own listener and principal source; /mcp is not served there', async (t) => {
    const s = await start(t, { args: ['--approval-listen', '127.0.0.1:0', '--approval-principal', 'header:X-Approver'] });
    const m = /listening on http:\/\/127\.0\.0\.1:0\/approve\/ \(port (\d+)\)/.exec(s.stderr);
    assert.ok(m, s.stderr);
    const page = { target: { port: Number(m[1]) } };
    const args = { path: '/srv/own-listener' };
    const one = await roundOne(s, 1, 'delete_file', args);
    assert.equal(new URL(one.url).port, m[1], one.url);
    // Nor is the page served on the agent's listener, under that listener's principal source.
    for (const method of ['GET', 'POST']) {
      const onMain = await httpRequest(s.target, { method, path: one.path, headers: { 'X-User': 'oncall-dave', 'X-Approver': 'oncall-dave', 'Content-Type': 'application/x-www-form-urlencoded' }, body: method === 'POST' ? 'decision=approve' : undefined });
      await onMain.complete();
      assert.equal(onMain.status, 404, `${method} ${one.path} on --listen: ${onMain.text}`);
    }
    const mcp = await httpRequest(page.target, { method: 'POST', path: '/mcp', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    await mcp.complete();
    assert.equal(mcp.status, 404);
    // The approver's principal comes from this listener's source.
    const got = await getPage(page, one.path, { 'X-Approver': 'oncall-dave' });
    assert.equal(got.status, 200, got.text);
    const done = await postForm(page, one.path, { 'X-Approver': 'oncall-dave' }, { csrf: csrfOf(got), decision: 'approve' });
    assert.equal(done.status, 200, done.text);
    const r = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(s, 'delete_file', args);
  });

  // DNS rebinding off loopback: a foreign site whose name a DNS answer points at sluice's LAN
  // address is same-origin with what it fetches there, Origin and Host both its own. The page
  // answers there only under --approval-base-url's authority; an anonymous page listener, whose
  // every visitor may approve, is the case it matters most for.
  test('on a LAN address the page answers only under its base URL: a rebinding site is refused', NEEDS_LAN, async (t) => {
    const policy = POLICY.replace('approvers: ["header:oncall-*"]', 'approvers: ["anonymous"]');
    const s = await start(t, { policy, args: ['--approval-listen', `${LAN}:0`, '--approval-base-url', 'http://approve.example.com'] });
    const port = approvalPort(s);
    const page = { target: { host: LAN, port } };
    const args = { path: '/srv/rebind-lan' };
    const one = await roundOne(s, 1, 'delete_file', args);
    const evil = `evil.example:${port}`;
    for (const host of [evil, `localhost:${port}`, `127.0.0.1:${port}`, `${LAN}:${port}`, 'approve.example.com:8080']) {
      const get = await getPage(page, one.path, { Host: host });
      assert.equal(get.status, 403, `Host ${host}: ${get.text}`);
      assert.doesNotMatch(get.text, /name="csrf"|rebind-lan/, 'neither the token nor the call is shown');
      assert.match(get.text, /a DNS answer pointed here/);
      assertPageHeaders(get);
    }
    await waitLog(s, /refused a request to the approval page for another host name: Host is not the authority of http:\/\/approve\.example\.com \(/);
    const got = await getPage(page, one.path, { Host: 'approve.example.com' });
    assert.equal(got.status, 200, got.text);
    const csrf = csrfOf(got);
    // The rebinding site's own form: its Host, its Origin, same-origin as far as the browser knows.
    const post = await postForm(page, one.path, { Host: evil, Origin: `http://${evil}`, 'Sec-Fetch-Site': 'same-origin' },
      { csrf, decision: 'approve' });
    assert.equal(post.status, 403, post.text);
    assert.match(post.text, /Nothing was shown or recorded/);
    // The page's own Host with another site's Origin: refused as from another origin.
    const foreign = await postForm(page, one.path, { Host: 'approve.example.com', Origin: `http://${evil}` },
      { csrf, decision: 'approve' });
    assert.equal(foreign.status, 403, foreign.text);
    assert.match(foreign.text, /another origin/);
    const pending = await roundTwo(s, 2, 'delete_file', args, one.state);
    assert.equal(pending.result.resultType, 'input_required', JSON.stringify(pending));
    await assertNotForwardedHttp(s, 'delete_file');
    const done = await postForm(page, one.path,
      { Host: 'approve.example.com:80', Origin: 'http://approve.example.com', 'Sec-Fetch-Site': 'same-origin' },
      { csrf, decision: 'approve' });
    assert.equal(done.status, 200, done.text);
    const r = await roundTwo(s, 3, 'delete_file', args, one.state);
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    await assertForwardedOnceHttp(s, 'delete_file', args);
  });

  // A wildcard listener serves loopback and the network at once: this machine's names only
  // count on a connection that came in on loopback, whatever the listener's address.
  test('on a wildcard listener, localhost counts over loopback only; the LAN needs the base URL', NEEDS_LAN, async (t) => {
    const s = await start(t, { args: ['--approval-listen', '0.0.0.0:0', '--approval-base-url', 'http://approve.example.com',
      '--approval-principal', 'header:X-User'] });
    const port = approvalPort(s);
    const one = await roundOne(s, 1, 'delete_file', { path: '/srv/rebind-wildcard' });
    const lan = { target: { host: LAN, port } };
    for (const host of [`localhost:${port}`, `evil.example:${port}`, `${LAN}:${port}`]) {
      const r = await getPage(lan, one.path, { ...BOB, Host: host });
      assert.equal(r.status, 403, `Host ${host} through ${LAN}: ${r.text}`);
      assert.doesNotMatch(r.text, /name="csrf"|rebind-wildcard/);
    }
    await waitLog(s, /Host is not the authority of http:\/\/approve\.example\.com \(DNS rebinding\? or a proxy/);
    const loopback = { target: { port } };
    const overLoopback = await getPage(loopback, one.path, { ...BOB, Host: `localhost:${port}` });
    assert.equal(overLoopback.status, 200, overLoopback.text);
    const evilOverLoopback = await getPage(loopback, one.path, { ...BOB, Host: `evil.example:${port}` });
    assert.equal(evilOverLoopback.status, 403, evilOverLoopback.text);
    await waitLog(s, /Host is not the authority of http:\/\/approve\.example\.com nor localhost \(/);
    const viaBase = await getPage(lan, one.path, { ...BOB, Host: 'approve.example.com' });
    assert.equal(viaBase.status, 200, viaBase.text);
    await assertNotForwardedHttp(s, 'delete_file');
  });

  // --listen with an IPv6 literal and no --approval-base-url: the page's address is the literal
  // as written, and a client names it in its own form (a browser compressed and in lower case),
  // in Host and in Origin. The same address and port are the page's; another port or host is not.
  const v6Cases = [
    ['on a LAN address written out in full, a browser\'s compressed form', LAN6 && expanded6(LAN6), LAN6, LAN6,
      LAN6 ? {} : { skip: 'no IPv6 address here other than loopback and link-local' }],
    ['on loopback, a client\'s form written out in full', '::1', '0:0:0:0:0:0:0:1', '::1',
      LOOPBACK6 ? {} : { skip: 'no IPv6 loopback here' }],
  ];
  for (const [label, written, named, addr, opts] of v6Cases) {
    test(`--listen [IPv6] without --approval-base-url ${label}: the same address is the page's`, opts, async (t) => {
      const dir = tmpDir(t);
      const s = await startHttpSluice(t, {
        policy: writePolicy(dir, POLICY), dir, listen: `[${written}]:0`, waitReady: false,
        args: ['--principal', 'header:X-User'],
      });
      s.target = { host: addr, port: s.port };
      s.syncHeaders = ALICE;
      await waitReady(s.target, 15000, s);
      const args = { path: '/srv/v6' };
      const one = await roundOne(s, 1, 'delete_file', args);
      assert.equal(new URL(one.url).host, new URL(`http://[${written}]:${s.port}`).host, 'the URL handed out is at the listener\'s address');
      const host = `[${named}]:${s.port}`;
      for (const other of [`[${named}]:${s.port + 1}`, `evil.example:${s.port}`, named]) {
        const r = await getPage(s, one.path, { ...BOB, Host: other });
        assert.equal(r.status, 403, `Host ${other}: ${r.text.slice(0, 300)}`);
        assert.doesNotMatch(r.text, /name="csrf"|\/srv\/v6/);
      }
      const page = await getPage(s, one.path, { ...BOB, Host: host });
      assert.equal(page.status, 200, `Host ${host}: ${page.text.slice(0, 300)}`);
      const foreign = await postForm(s, one.path, { ...BOB, Host: host, Origin: `http://[${named}]:${s.port + 1}` },
        { csrf: csrfOf(page), decision: 'approve' });
      assert.equal(foreign.status, 403, foreign.text);
      await assertNotForwardedHttp(s, 'delete_file');
      const done = await postForm(s, one.path, { ...BOB, Host: host, Origin: `http://${host}`, 'Sec-Fetch-Site': 'same-origin' },
        { csrf: csrfOf(page), decision: 'approve' });
      assert.equal(done.status, 200, done.text);
      const r = await roundTwo(s, 2, 'delete_file', args, one.state);
      assert.ok(r.result && !r.result.isError, JSON.stringify(r));
      await assertForwardedOnceHttp(s, 'delete_file', args);
    });
  }
});
