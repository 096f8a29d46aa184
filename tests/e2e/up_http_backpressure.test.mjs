// up_http_backpressure.test.mjs: a client on stdio that stops reading sluice's stdout, in front
// of a Streamable HTTP upstream (--upstream URL) whose event streams bring messages without end:
// the session's GET stream (2025-11-25) and a call's POST stream (2026-07-28, a gated call's).
// sluice stops reading those streams while the client's output is full, as it stops reading a
// stdio child, so the server's writes wait in TCP: sluice's memory stays bounded, and once the
// client reads again every message arrives, in order, none lost.
//
// The upstream is raw_http_upstream.mjs; it counts the events it managed to write, so the test
// sees the backpressure reach the server, and not only sluice's RSS (which says nothing under
// ASan or memcheck, where the RSS is the tool's).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import * as lib from './lib.mjs';
import { RawUpstream, headBytes, sseBytes } from './raw_http_upstream.mjs';

const { SluiceProc, cleanups, suiteOptions, toolCall, confirmRetry, assertAsked, resultText, scaled, sleep, tmpDir, writePolicy } = lib;

const POLICY = 'version: 1\ndefaults:\n  action: allow\ntools:\n  write_file:\n    action: confirm\n';
const N = 800; // events of about 64 KiB: 51 MiB, far more than sluice buffers for a client
const PAD = 'p'.repeat(64 * 1024);
const SSE_HEAD = [['Content-Type', 'text/event-stream'], ['Cache-Control', 'no-cache'], ['Connection', 'close']];
const BOUND = 24 * 1024 * 1024; // 8 MiB of client output before the pause, and then some
const TIMEOUT_S = Math.ceil(scaled(3000) / 1000);

function note(i) {
  return { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `${i} ${PAD}` } };
}

function startSluice(t, defer, url) {
  // A held stream is silent on purpose: --upstream-timeout, shorter than the hold, must not end it.
  const args = ['--policy', writePolicy(tmpDir(t), POLICY), '--upstream', url, '--upstream-timeout', String(TIMEOUT_S)];
  // MALLOC_PERTURB_ (which meson sets) makes the RSS count glibc's free lists: see relay.test.mjs.
  const env = { ...process.env, MALLOC_PERTURB_: '0' };
  delete env.SLUICE_STATE_KEY;
  delete env.SLUICE_UPSTREAM_AUTHORIZATION;
  const cmd = lib.sluiceCommand(args);
  const s = new SluiceProc(spawn(cmd.file, cmd.args, { stdio: ['pipe', 'pipe', 'pipe'], env }), { args, memcheck: cmd.memcheck });
  defer(() => s.kill());
  return s;
}

function rss(s) {
  return Number((/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${s.pid}/status`, 'utf8')) || [0, 0])[1]) * 1024;
}

function sanitized(s) {
  return /libasan|libubsan|vgpreload_memcheck/.test(fs.readFileSync(`/proc/${s.pid}/maps`, 'utf8'));
}

/** Writes the N events to res, one at a time (each once the socket took it), counting them in
 * state.written; then last (if any), and the end of the stream. */
async function flood(res, state, last) {
  for (let i = 1; i <= N; i++) {
    await res.write(sseBytes([note(i)]));
    state.written = i;
  }
  if (last) await res.write(sseBytes([last]));
  await res.end();
}

/** Waits until the server wrote all N events or wrote none for a second and a half. */
async function untilStalled(state) {
  const end = Date.now() + scaled(60000);
  let seen = -1;
  let since = Date.now();
  while (state.written < N && Date.now() < end) {
    if (state.written !== seen) {
      seen = state.written;
      since = Date.now();
    } else if (Date.now() - since > scaled(1500)) {
      return;
    }
    await sleep(50);
  }
}

/** The client reads again: every event arrives, numbered 1..N in order, once each. Returns the
 * index in s.lines after the last one. */
async function assertAllArrive(s) {
  const notes = () => s.lines.filter((l) => l.msg && l.msg.method === 'notifications/message');
  const end = Date.now() + scaled(60000);
  while (notes().length < N && Date.now() < end) await sleep(50);
  const got = notes().map((l) => Number(l.msg.params.data.split(' ')[0]));
  assert.equal(got.length, N, `the client got ${got.length} of the ${N} events; stderr:\n${s.stderr.slice(-2000)}`);
  assert.deepEqual(got, Array.from({ length: N }, (_, i) => i + 1), 'the events arrive in order, none lost or repeated');
  return s.lines.lastIndexOf(notes()[N - 1]) + 1;
}

function assertHeldBack(s, state, before, during, what) {
  assert.ok(state.written < N, `the server could write all ${N} events of ${what} while the client was not reading: sluice did not stop reading it`);
  if (!sanitized(s)) {
    assert.ok(during - before < BOUND, `sluice grew by ${((during - before) / 1048576).toFixed(1)} MiB while the client was not reading ${what}`);
  }
}

describe('a stdio client that stops reading, before an HTTP upstream\'s event streams', suiteOptions(), () => {
  test('the session\'s GET stream (2025-11-25) is not read meanwhile; then every event arrives in order', { timeout: scaled(180000) }, async (t) => {
    const defer = cleanups(t);
    const up = new RawUpstream({ era: 'legacy' });
    const state = { written: 0 };
    let release;
    const go = new Promise((resolve) => { release = resolve; });
    let gets = 0;
    up.hook = async (req, res) => {
      if (req.method !== 'GET') return false;
      gets += 1;
      if (gets > 1) { // the stream is reopened once it ends: nothing more to say
        await res.json(405, {});
        return true;
      }
      await res.write(headBytes(200, SSE_HEAD));
      await go;
      await flood(res, state, null);
      return true;
    };
    await up.listen(0);
    defer(() => up.close());
    const s = startSluice(t, defer, up.url());
    await lib.legacyHandshake(s);
    await up.waitFor(() => gets > 0, scaled(10000), 'the GET stream');
    const before = rss(s);
    s.proc.stdout.pause();
    release();
    await untilStalled(state);
    const during = rss(s);
    const stalled = state.written;
    await sleep(TIMEOUT_S * 1000 + 1000);
    s.proc.stdout.resume();
    await assertAllArrive(s);
    assertHeldBack(s, { written: stalled }, before, during, 'the GET stream');
    assert.doesNotMatch(s.stderr, /mid-reply|dropped|failed/, 'nothing failed or was dropped');
  });

  test('a gated call\'s POST stream (2026-07-28) is not read meanwhile; then its events and its answer arrive', { timeout: scaled(180000) }, async (t) => {
    const defer = cleanups(t);
    const up = new RawUpstream({ era: 'modern' });
    const state = { written: 0 };
    up.tool('write_file', async (req, res, msg) => {
      await res.write(headBytes(200, SSE_HEAD));
      await flood(res, state, up.textResult(msg, `wrote ${msg.params.arguments.path}`));
    });
    await up.listen(0);
    defer(() => up.close());
    const s = startSluice(t, defer, up.url());
    const args = { path: '/tmp/x', content: 'y' };
    const meta = { 'io.modelcontextprotocol/logLevel': 'debug' };
    const q = assertAsked(await s.request(toolCall('ask', 'write_file', args, { meta })));
    const before = rss(s);
    s.proc.stdout.pause();
    s.send(confirmRetry('ok', 'write_file', args, q.state, lib.ACCEPT, { meta }));
    await up.waitCall('write_file', scaled(10000));
    await untilStalled(state);
    const during = rss(s);
    const stalled = state.written;
    await sleep(TIMEOUT_S * 1000 + 1000);
    s.proc.stdout.resume();
    const after = await assertAllArrive(s);
    const end = Date.now() + scaled(20000);
    while (!s.lines.some((l) => l.msg && l.msg.id === 'ok') && Date.now() < end) await sleep(50);
    assert.ok(s.lines.findIndex((l) => l.msg && l.msg.id === 'ok') >= after, 'the answer comes after its events');
    const r = await s.responseTo('ok', scaled(1000));
    assert.equal(resultText(r), 'wrote /tmp/x', r.raw);
    assertHeldBack(s, { written: stalled }, before, during, 'the call\'s stream');
    assert.equal(up.calls('write_file').length, 1, 'POSTed once');
  });
});
