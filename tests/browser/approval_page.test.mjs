// approval_page.test.mjs: sluice's own approval page in a real browser (issue 22). Debian's
// chromium, driven by playwright-core through executablePath (nothing downloads a browser), plays
// the approver: sluice --listen gates delete_file with `approvers:`, a client (header:alice,
// through --principal header:X-User) starts the call and gets the page's URL, which also reaches a
// loopback webhook through --notify-url. The approver (header:oncall-bob, sent by chromium as an
// extra header, as an authenticating proxy in front would) opens the page, reads every argument
// exactly as it will be forwarded (a long value, unicode, a newline, HTML-looking text), and
// clicks Approve; the client's retry then runs the call, once, at the fake upstream. A second test
// declines in the page: nothing runs.
//
// When a test fails, screenshots of its steps are kept and their folder is printed:
// $BROWSER_ARTIFACTS (meson sets it to meson-logs/browser in the build dir), else a temporary
// folder. APPROVAL_PAGE_SHOT=FILE saves the declined call's page (a realistic example) as a PNG:
// that is how deploy/approval-page.png is made.
//
// Chromium: $CHROMIUM, else /usr/bin/chromium. Missing chromium, playwright-core or sluice: the
// test skips, except under CI=true where it fails (install.sh installs chromium there).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SLUICE_BIN, confirmRetry, sleep, tmpDir, toolCall, withDeadline, writePolicy } from '../e2e/lib.mjs';
import { assertForwardedOnceHttp, assertNotForwardedHttp, modernCall, startHttpSluice } from '../e2e/http_lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

const STEP_MS = 15000;        // one page step: a load or a click and what it brings
const START_MS = 20000;       // chromium starts
const TEST_MS = 120000;       // one whole run

function skipReason() {
  const need = [CHROMIUM, SLUICE_BIN, path.join(MODULES, 'playwright-core', 'package.json')];
  const missing = need.filter((p) => !fs.existsSync(p));
  if (missing.length === 0) return false;
  if (process.env.CI === 'true') return false; // fail below, loudly
  return `needs ${missing.join(', ')} (apt-get install chromium; bash tests/browser/install.sh; build sluice)`;
}

const POLICY = `version: 1
defaults:
  action: allow
  confirm_ttl: 300
tools:
  echo:
    action: allow
  delete_file:
    action: confirm
    irreversible: true
    message: "Delete {path}"
    approvers: ["header:oncall-*"]
    args:
      path: {}
`;

const ALICE = { 'X-User': 'alice' };
const BOB = { 'X-User': 'oncall-bob' };
const URL_CAPS = { elicitation: { url: {} } };

/** Screenshots of every step, kept when the test fails. */
function shotKeeper(label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sluice-browser-${label}-`));
  let n = 0;
  return {
    dir,
    async shot(page, step) {
      const file = path.join(dir, `${String(++n).padStart(2, '0')}-${step}.png`);
      await page.screenshot({ path: file, fullPage: true, timeout: STEP_MS }).catch(() => {});
      return file;
    },
    keep(to) {
      fs.mkdirSync(to, { recursive: true });
      for (const f of fs.readdirSync(dir)) fs.copyFileSync(path.join(dir, f), path.join(to, `${label}-${f}`));
      return to;
    },
  };
}

/** Runs body(page, shots) in a fresh chromium whose every request carries headers (the
 * approver's identity, as a proxy in front would add it); on failure keeps the screenshots. */
async function withBrowser(t, label, headers, body) {
  const { chromium } = await import(path.join(MODULES, 'playwright-core', 'index.mjs'));
  const shots = shotKeeper(label);
  const browser = await withDeadline(chromium.launch({ executablePath: CHROMIUM, headless: true, timeout: START_MS }),
    START_MS + 1000, 'chromium to start');
  t.after(() => withDeadline(browser.close(), 10000, 'chromium to close').catch(() => {}));
  const context = await browser.newContext({ viewport: { width: 900, height: 480 }, extraHTTPHeaders: headers });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  let keepTemp = false;
  try {
    await body(page, shots);
  } catch (e) {
    await shots.shot(page, 'failure');
    keepTemp = !process.env.BROWSER_ARTIFACTS;
    const to = keepTemp ? shots.dir : shots.keep(process.env.BROWSER_ARTIFACTS);
    e.message += `\n(screenshots of every step: ${to})`;
    console.error(`approval_page: screenshots kept in ${to}`);
    throw e;
  } finally {
    if (!keepTemp) fs.rmSync(shots.dir, { recursive: true, force: true });
  }
}

/** A loopback webhook that records the events sluice posts. */
async function startWebhook(t) {
  const hook = { events: [] };
  const srv = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      hook.events.push(JSON.parse(body));
      res.end('ok');
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  hook.url = `http://127.0.0.1:${srv.address().port}/hook`;
  t.after(() => new Promise((resolve) => { srv.closeAllConnections(); srv.close(resolve); }));
  return hook;
}

async function setup(t) {
  assert.ok(fs.existsSync(CHROMIUM), `chromium not found at ${CHROMIUM}`);
  const dir = tmpDir(t, 'sluice-browser-');
  const hook = await startWebhook(t);
  const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY),
    args: ['--principal', 'header:X-User', '--notify-url', hook.url] });
  s.syncHeaders = ALICE;
  return { s, hook };
}

/** Round one as alice: the page's URL (from the URL-mode elicitation) and the state. */
async function ask(s, id, args) {
  const r = await modernCall(s.target, toolCall(id, 'delete_file', args, { caps: URL_CAPS }), { headers: ALICE, status: 200 });
  assert.equal(r.result && r.result.resultType, 'input_required', r.raw);
  const q = r.result.inputRequests['sluice.confirm'];
  assert.equal(q.params.mode, 'url', r.raw);
  return { url: q.params.url, state: r.result.requestState };
}

async function retry(s, id, args, state) {
  return modernCall(s.target, confirmRetry(id, 'delete_file', args, state, { action: 'accept' }, { caps: URL_CAPS }),
    { headers: ALICE, status: 200 });
}

/** The webhook's event for url (bounded wait). */
async function eventFor(hook, url) {
  const end = Date.now() + 10000;
  while (Date.now() < end) {
    const ev = hook.events.find((e) => e.url === url);
    if (ev) return ev;
    await sleep(25);
  }
  throw new Error(`no approval-pending event for ${url}; got ${JSON.stringify(hook.events)}`);
}

/** The page's table as {Server, Tool, Asked by, ...}. */
async function facts(page) {
  const out = {};
  for (const row of await page.locator('table tr').all())
    out[(await row.locator('th').innerText()).trim()] = (await row.locator('td').innerText()).trim();
  return out;
}

const skip = skipReason();

// Values that are easy to show wrongly: a long one (shown whole below confirm.h's 1024-byte
// cap), one with a newline, a tab, quotes and HTML-looking text, and non-ASCII (an accent, CJK,
// an emoji outside the BMP).
const LONG = `/srv/archive/${'2026-q3/'.repeat(70)}ledger.csv`;
const TRICKY = 'line one\nline two\t"quoted" <b>bold</b> & </pre>';
const UNICODE = 'Überweisung-日本語-🚀.pdf';

test('approval page in chromium: the approver reads every argument exactly, approves, and the call runs once', { timeout: TEST_MS, skip }, async (t) => {
  const { s, hook } = await setup(t);
  const args = { path: LONG, reason: TRICKY, name: UNICODE };
  const one = await ask(s, 1, args);
  const ev = await eventFor(hook, one.url);
  assert.equal(ev.caller, 'header:alice');
  await withBrowser(t, 'approve', BOB, async (page, shots) => {
    const resp = await page.goto(one.url, { timeout: STEP_MS });
    assert.equal(resp.status(), 200, await resp.text());
    await shots.shot(page, 'page');
    const f = await facts(page);
    assert.equal(f.Tool, 'delete_file');
    assert.equal(f['Asked by'], 'header:alice');
    assert.match(f.Irreversible, /^yes/);
    const shown = await page.locator('pre').innerText();
    // Each argument on its own bulleted line, its value as the JSON forwarded (a newline in a
    // value is the two characters \n, so it cannot start a line of its own).
    const lines = shown.split('\n');
    for (const [k, v] of Object.entries(args)) {
      const want = `\u2022 ${k}${k === 'path' ? '' : ' (not declared in the policy)'}: ${JSON.stringify(v)}`;
      assert.ok(lines.includes(want), `the page does not show ${k} exactly; want line\n${want}\nin\n${shown}`);
    }
    assert.ok(shown.startsWith(`Delete ${JSON.stringify(LONG)}`), `the policy's message first:\n${shown}`);
    assert.equal(await page.locator('b').count(), 0, 'argument text became markup');
    await assertNotForwardedHttp(s, 'delete_file');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText(/approved/i).first().waitFor();
    await shots.shot(page, 'approved');
  });
  const r = await retry(s, 2, args, one.state);
  assert.notEqual(r.result.isError, true, r.raw);
  await assertForwardedOnceHttp(s, 'delete_file', args, one.state);
});

test('approval page in chromium: Decline refuses the call, nothing runs', { timeout: TEST_MS, skip }, async (t) => {
  const { s, hook } = await setup(t);
  const args = { path: '/srv/projects/q3-report/final.pdf' };
  const one = await ask(s, 1, args);
  await eventFor(hook, one.url);
  await withBrowser(t, 'decline', BOB, async (page, shots) => {
    await page.goto(one.url, { timeout: STEP_MS });
    await page.getByRole('button', { name: 'Decline', exact: true }).waitFor();
    if (process.env.APPROVAL_PAGE_SHOT)
      await page.screenshot({ path: process.env.APPROVAL_PAGE_SHOT, fullPage: true, timeout: STEP_MS });
    await page.getByRole('button', { name: 'Decline', exact: true }).click();
    await page.getByText(/declined/i).first().waitFor();
    await shots.shot(page, 'declined');
  });
  const r = await retry(s, 2, args, one.state);
  assert.equal(r.result.isError, true, r.raw);
  await assertNotForwardedHttp(s, 'delete_file');
});
