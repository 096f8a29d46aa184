// inspector_ui.test.mjs: a real client in a real browser (issue 20). MCP Inspector's web UI
// (@modelcontextprotocol/inspector, pinned in package.json) runs in Debian's chromium, driven by
// playwright-core through executablePath (nothing downloads a browser). The Inspector's own proxy
// server connects over Streamable HTTP to sluice --listen, which runs
// @modelcontextprotocol/server-filesystem on a temporary folder as its child. The person's part
// is played through the UI: connect, list tools, fill write_file's form, run it; sluice's
// elicitation form appears with the arguments readable; approve and submit (the result shows and
// the file exists on disk) or decline (no file).
//
// Every step leaves a screenshot. When a test fails the screenshots are kept and their folder is
// printed: $BROWSER_ARTIFACTS (meson sets it to meson-logs/browser in the build dir), else a
// temporary folder. BROWSER_SHOTS=DIR keeps them whatever the outcome.
//
// Chromium: $CHROMIUM, else /usr/bin/chromium. Missing chromium, node_modules or sluice: the test
// skips, except under CI=true where it fails (install.sh installs chromium there).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SLUICE_BIN, sleep, tmpDir, withDeadline, writePolicy } from '../e2e/lib.mjs';
import { startHttpSluice } from '../e2e/http_lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules');
const MCP = path.join(MODULES, '@modelcontextprotocol');
const INSPECTOR_SERVER = path.join(MCP, 'inspector-server', 'build', 'index.js');
const INSPECTOR_CLIENT = path.join(MCP, 'inspector-client', 'bin', 'client.js');
const FS_SERVER = path.join(MCP, 'server-filesystem', 'dist', 'index.js');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const PINNED = JSON.parse(fs.readFileSync(path.join(HERE, 'package.json'), 'utf8')).dependencies;

const STEP_MS = 15000;        // one UI step: a click and what it brings
const START_MS = 20000;       // a process logs that it listens
const TEST_MS = 150000;       // one whole run

function skipReason() {
  const need = [CHROMIUM, INSPECTOR_SERVER, INSPECTOR_CLIENT, FS_SERVER, SLUICE_BIN,
    path.join(MODULES, 'playwright-core', 'package.json')];
  const missing = need.filter((p) => !fs.existsSync(p));
  if (missing.length === 0) return false;
  if (process.env.CI === 'true') return false; // fail below, loudly
  return `needs ${missing.join(', ')} (apt-get install chromium; bash tests/browser/install.sh; build sluice)`;
}

/** A loopback port nobody listens on now. The Inspector takes its ports from the environment and
 * logs nothing parseable for port 0, so the port is chosen here; a clash fails the start loudly. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** A child in its own process group, killed as a group (TERM, then KILL) when the test ends. */
function startGroup(t, name, args, env) {
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, detached: true,
    stdio: ['ignore', 'pipe', 'pipe'] });
  const p = { name, proc, out: '', exited: false };
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (d) => { p.out += d; });
  proc.stderr.on('data', (d) => { p.out += d; });
  const gone = new Promise((resolve) => proc.on('exit', () => { p.exited = true; resolve(); }));
  t.after(() => killGroup(proc.pid, gone));
  return p;
}

/** TERM to the process group, up to 3 s for the leader to exit, then KILL to whatever is left. */
async function killGroup(pid, gone) {
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    return; // the group is gone
  }
  await Promise.race([gone, sleep(3000)]);
  try {
    process.kill(-pid, 'SIGKILL');
  } catch { /* all gone */ }
}

async function waitOutput(p, re, ms = START_MS) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (re.test(p.out)) return;
    if (p.exited) break;
    await sleep(50);
  }
  throw new Error(`${p.name} did not log ${re} within ${ms} ms (exited: ${p.exited}); output:\n${p.out.slice(-3000)}`);
}

/** The Inspector's proxy server and its web client on free loopback ports, auth on. */
async function startInspector(t) {
  const serverPort = await freePort();
  const clientPort = await freePort();
  const token = crypto.randomBytes(16).toString('hex');
  const origin = `http://127.0.0.1:${clientPort}`;
  const common = { HOST: '127.0.0.1', CLIENT_PORT: String(clientPort), SERVER_PORT: String(serverPort),
    MCP_AUTO_OPEN_ENABLED: 'false' };
  const server = startGroup(t, 'inspector proxy', [INSPECTOR_SERVER],
    { ...common, MCP_PROXY_AUTH_TOKEN: token, ALLOWED_ORIGINS: origin });
  const client = startGroup(t, 'inspector client', [INSPECTOR_CLIENT], common);
  await waitOutput(server, /Proxy server listening on/);
  await waitOutput(client, /MCP Inspector is up and running/);
  return { serverPort, clientPort, token, origin, server, client };
}

/** Screenshots of every step, kept when the test fails (or always, with BROWSER_SHOTS). */
function shotKeeper(label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sluice-browser-${label}-`));
  let n = 0;
  const keeper = {
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
  return keeper;
}

/** Runs body(page, shots) with a fresh chromium; on failure keeps the screenshots and says where. */
async function withBrowser(t, label, body) {
  const { chromium } = await import(path.join(MODULES, 'playwright-core', 'index.mjs'));
  const shots = shotKeeper(label);
  const browser = await withDeadline(chromium.launch({ executablePath: CHROMIUM, headless: true, timeout: START_MS }),
    START_MS + 1000, 'chromium to start');
  // Playwright starts chromium as the leader of its own process group; should close() hang,
  // its exit handler kills that group when this test process ends.
  t.after(() => withDeadline(browser.close(), 10000, 'chromium to close').catch(() => {}));
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(STEP_MS);
  let keepTemp = false;
  try {
    await body(page, shots);
  } catch (e) {
    await shots.shot(page, 'failure');
    keepTemp = !process.env.BROWSER_ARTIFACTS;
    const to = keepTemp ? shots.dir : shots.keep(process.env.BROWSER_ARTIFACTS);
    e.message += `\n(screenshots of every step: ${to})`;
    throw e;
  } finally {
    if (process.env.BROWSER_SHOTS) shots.keep(process.env.BROWSER_SHOTS);
    if (!keepTemp) fs.rmSync(shots.dir, { recursive: true, force: true });
  }
}

const POLICY = `version: 1
defaults:
  action: deny
tools:
  list_allowed_directories:
    action: allow
  read_text_file:
    action: allow
  write_file:
    action: confirm
    irreversible: true
    message: "Write the file {path}"
    args:
      path: {}
      content: {}
    observe:
      tool: read_text_file
      args: { path: path }
`;

/** sluice --listen in front of server-filesystem on a fresh folder; the Inspector beside it. */
async function setup(t) {
  assert.ok(fs.existsSync(CHROMIUM), `chromium not found at ${CHROMIUM}`);
  for (const [name, version] of Object.entries(PINNED)) {
    const got = JSON.parse(fs.readFileSync(path.join(MODULES, name, 'package.json'), 'utf8')).version;
    assert.equal(got, version, `${name} is not the pinned version (bash tests/browser/install.sh)`);
  }
  const dir = tmpDir(t, 'sluice-browser-');
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const policy = writePolicy(dir, POLICY);
  const sluice = await startHttpSluice(t, { dir, policy, upstream: [process.execPath, FS_SERVER, root] });
  const inspector = await startInspector(t);
  return { dir, root, sluice, inspector };
}

function inspectorUrl(env) {
  const q = new URLSearchParams({
    MCP_PROXY_PORT: String(env.inspector.serverPort),
    MCP_PROXY_AUTH_TOKEN: env.inspector.token,
    transport: 'streamable-http',
    serverUrl: `http://127.0.0.1:${env.sluice.port}/mcp`,
  });
  return `${env.inspector.origin}/?${q}`;
}

/** Connect, list the tools, fill write_file's form and run it: up to the elicitation form. */
async function askWrite(page, shots, env, file, content) {
  await page.goto(inspectorUrl(env), { timeout: STEP_MS });
  await shots.shot(page, 'loaded');
  await page.getByRole('button', { name: 'Connect', exact: true }).click();
  await page.getByText('Connected', { exact: true }).first().waitFor();
  await shots.shot(page, 'connected');
  await page.getByRole('tab', { name: 'Tools' }).click();
  await page.getByRole('button', { name: 'List Tools' }).click();
  await page.getByText('Write File', { exact: true }).first().click();
  await shots.shot(page, 'tool-selected');
  await page.locator('#path').fill(file);
  await page.locator('#content').fill(content);
  await page.getByRole('button', { name: 'Run Tool' }).click();
  const form = page.getByTestId('elicitation-request');
  await form.waitFor();
  await shots.shot(page, 'elicitation');
  return form;
}

/** The question shows the tool and both arguments exactly (JSON-quoted, as sluice writes them),
 * each after sluice's bullet: the Inspector runs the lines together into one paragraph, and the
 * bullet is what still tells one argument from the next there. */
async function assertReadable(form, file, content) {
  const text = await form.innerText();
  assert.match(text, /Allow tool "write_file" on server "[^"]+" to run with these arguments\?/, text);
  assert.ok(text.includes(`\u2022 path: ${JSON.stringify(file)}`), `the path is not shown exactly:\n${text}`);
  assert.ok(text.includes(`\u2022 content: ${JSON.stringify(content)}`), `the content is not shown exactly:\n${text}`);
  assert.match(text, /This cannot be undone\./, text);
}

/** Waits for the tool result's heading, scrolls it into view, and returns the result panel's text. */
async function shownResult(page, shots, heading) {
  const head = page.getByText(heading, { exact: true });
  await head.waitFor();
  await head.scrollIntoViewIfNeeded();
  await shots.shot(page, 'result');
  return head.locator('xpath=..').innerText();
}

const skip = skipReason();

test('Inspector in chromium: approve through sluice\'s form, the file is written', { timeout: TEST_MS, skip }, async (t) => {
  const env = await setup(t);
  const file = path.join(env.root, 'approved.txt');
  const content = 'written from a browser';
  await withBrowser(t, 'approve', async (page, shots) => {
    const form = await askWrite(page, shots, env, file, content);
    await assertReadable(form, file, content);
    assert.equal(fs.existsSync(file), false, 'write_file ran before the person answered');
    await form.getByRole('checkbox').check();
    await shots.shot(page, 'approved-ticked');
    await form.getByRole('button', { name: 'Submit' }).click();
    const result = await shownResult(page, shots, 'Tool Result: Success');
    assert.ok(result.includes(`Successfully wrote to ${file}`), result);
  });
  assert.equal(fs.readFileSync(file, 'utf8'), content, 'server-filesystem wrote the file');
});

test('Inspector in chromium: declining sluice\'s form leaves no file', { timeout: TEST_MS, skip }, async (t) => {
  const env = await setup(t);
  const file = path.join(env.root, 'declined.txt');
  const content = 'must never be written';
  await withBrowser(t, 'decline', async (page, shots) => {
    const form = await askWrite(page, shots, env, file, content);
    await assertReadable(form, file, content);
    await form.getByRole('button', { name: 'Decline' }).click();
    const result = await shownResult(page, shots, 'Tool Result: Error');
    assert.match(result, /The person declined this call\. It was not run\./);
  });
  // The refusal has reached the browser; the upstream could only run it before that.
  assert.equal(fs.existsSync(file), false, 'write_file ran although the person declined');
  assert.deepEqual(fs.readdirSync(env.root), [], 'nothing was written in the folder');
});
