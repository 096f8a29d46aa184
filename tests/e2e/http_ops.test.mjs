// http_ops.test.mjs: operating the HTTP front: SIGHUP policy reload (a broken file is refused and
// the old policy stays), SIGTERM drain (no new connections, held calls may finish, then exit 0
// with the upstream gone; --drain-grace bounds it), /metrics (Prometheus text), /healthz,
// /readyz, and --log-format json.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fs from 'node:fs';
import {
  ACCEPT, assertAsked, assertRefusal, confirmRetry, deadline, policyPath, scaled, sleep, startSluice, suiteOptions,
  tmpDir, toolCall, waitPidGone, writePolicy,
} from './lib.mjs';
import {
  LegacyHttpSession, get, httpRequest, httpSync, keepAliveAgent, legacyToolCall,
  mcpHeadersFor, metricValue, metrics, modernCall, parseMetrics, rawConnect, rawRequest, rpc,
  startHttpSluice, waitLog,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');
const ACCEPT_ANSWER = { action: 'accept', content: { approve: true } };

const POLICY_V1 = `version: 1
defaults:
  action: allow
tools:
  echo:
    action: allow
  write_file:
    action: confirm
  delete_file:
    action: allow
`;
const POLICY_V2 = `version: 1
defaults:
  action: allow
tools:
  echo:
    action: allow
  write_file:
    action: deny
  delete_file:
    action: deny
`;
// Line 10, column 13: an action that does not exist.
const POLICY_BROKEN = `version: 1
defaults:
  action: allow
tools:
  echo:
    action: allow
  write_file:
    action: allow
  delete_file:
    action: maybe
`;

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('HTTP: SIGHUP reloads the policy', suiteOptions(), () => {
  test('a new valid policy applies (allow -> deny) and counts as ok; a broken one is refused, named by file and line, and the previous one stays', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY_V1);
    const s = await startHttpSluice(t, { policy, dir });
    let m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'ok' }), 0);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'rejected' }), 0);

    const r1 = await modernCall(s.target, toolCall(1, 'delete_file', { path: '/a' }), { status: 200 });
    assert.ok(r1.result && !r1.result.isError, `allowed under v1: ${r1.raw}`);
    await httpSync(s);
    assert.equal(s.upstreamCalls('delete_file').length, 1);
    // A question asked under v1, to be answered after the reload.
    const args = { path: '/w', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(2, 'write_file', args), { status: 200 }));

    writePolicy(dir, POLICY_V2);
    const mark = s.stderr.length;
    s.proc.kill('SIGHUP');
    await waitLog(s, /reloaded/, 5000, mark);
    const r2 = await modernCall(s.target, toolCall(3, 'delete_file', { path: '/b' }), { status: 200 });
    assertRefusal(r2, /tools\.delete_file/);
    // The v1 question is no ticket around the new deny.
    const r3 = await modernCall(s.target, confirmRetry(4, 'write_file', args, q.state, ACCEPT));
    assert.ok(r3.error || (r3.result && r3.result.isError === true), `a tool now denied must not run on an old approval: ${r3.raw}`);
    await httpSync(s);
    assert.equal(s.upstreamCalls('delete_file').length, 1, 'delete_file is denied after the reload');
    assert.equal(s.upstreamCalls('write_file').length, 0, 'write_file is denied after the reload');
    m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'ok' }), 1);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'rejected' }), 0);

    writePolicy(dir, POLICY_BROKEN);
    const mark2 = s.stderr.length;
    s.proc.kill('SIGHUP');
    await waitLog(s, /refused|rejected/, 5000, mark2);
    await sleep(100);
    const log = s.stderr.slice(mark2);
    assert.match(log, new RegExp(`${escapeRe(policy)}:10:13`), `the log names the file and the line: ${log}`);
    const r4 = await modernCall(s.target, toolCall(5, 'delete_file', { path: '/c' }), { status: 200 });
    assertRefusal(r4, /tools\.delete_file/);
    const r5 = await modernCall(s.target, toolCall(6, 'write_file', { path: '/d', content: 'y' }), { status: 200 });
    assertRefusal(r5, /tools\.write_file/);
    await httpSync(s);
    assert.equal(s.upstreamCalls('delete_file').length, 1, 'v2 stays in force');
    assert.equal(s.upstreamCalls('write_file').length, 0, 'v2 stays in force (the broken file would allow it)');
    m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'ok' }), 1);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'rejected' }), 1);
    assert.equal((await get(s.target, '/readyz')).status, 200, 'still ready with the previous policy');

    // Fixing the file and reloading again works.
    writePolicy(dir, POLICY_V1);
    const mark3 = s.stderr.length;
    s.proc.kill('SIGHUP');
    await waitLog(s, /reloaded/, 5000, mark3);
    const r6 = await modernCall(s.target, toolCall(7, 'delete_file', { path: '/e' }), { status: 200 });
    assert.ok(r6.result && !r6.result.isError, r6.raw);
    m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'ok' }), 2);
    assert.equal(s.exited, false);
  });

  test('a policy file that disappeared: refused, the old policy stays', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY_V2);
    const s = await startHttpSluice(t, { policy, dir });
    fs.rmSync(policy);
    const mark = s.stderr.length;
    s.proc.kill('SIGHUP');
    await waitLog(s, /refused|rejected|cannot|No such file/i, 5000, mark);
    const r = await modernCall(s.target, toolCall(1, 'delete_file', { path: '/x' }), { status: 200 });
    assertRefusal(r, /tools\.delete_file/);
    const m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_policy_reloads_total', { result: 'rejected' }), 1);
  });
});

/** While draining, the listener stays open: /readyz on a new connection answers 503 (probes see a
 *  drain, not a refused connection), /healthz 200, and new /mcp work gets 503 with a JSON-RPC
 *  error. ms bounds how soon after the signal /readyz must turn. */
async function assertDrainingAnswers(s, ms = 2000) {
  const end = Date.now() + deadline(ms);
  let ready = await get(s.target, '/readyz', { agent: false });
  while (ready.status === 200 && Date.now() < end) {
    await sleep(20);
    ready = await get(s.target, '/readyz', { agent: false });
  }
  assert.equal(ready.status, 503, `/readyz while draining: ${ready.status} ${ready.text}`);
  assert.equal((await get(s.target, '/healthz', { agent: false })).status, 200, '/healthz while draining');
  const r = await rpc(s.target, toolCall('late', 'echo', { marker: 'after-sigterm' }), { agent: false });
  assert.equal(r.status, 503, `new work while draining: ${r.raw}`);
  assert.ok(r.msg && r.msg.error && r.msg.error.code === -32000, `a JSON-RPC error: ${r.raw}`);
  assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.marker === 'after-sigterm').length, 0);
}

describe('HTTP: SIGTERM drains', suiteOptions(), () => {
  test('a held legacy call can be answered after SIGTERM over the client\'s open keep-alive connection; new connections get 503; then exit 0, upstream gone', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--drain-grace', '10'] });
    const child = await s.upstreamPid();
    const pool = keepAliveAgent(t, s.target, { maxSockets: 1 });
    const sess = new LegacyHttpSession(s.target, { agent: pool });
    await sess.initialize(); // the pool now holds one idle keep-alive connection
    const reply = await sess.post(legacyToolCall(7, 'write_file', { path: '/drain', content: 'x' }), { agent: false });
    assert.ok(reply.sse, reply.contentType);
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');

    s.proc.kill('SIGTERM');
    await waitLog(s, /draining/, 3000);
    await assertDrainingAnswers(s);
    assert.equal(s.exited, false, 'sluice waits for the held call');

    let ans;
    try {
      ans = await sess.answer(ask.id, ACCEPT_ANSWER);
    } catch (e) {
      assert.fail(`the client could not deliver its answer after SIGTERM: its pooled keep-alive connection was closed and a new one is refused (${e.code || e.message}); sluice stderr:\n${s.stderr.slice(-1500)}`);
    }
    assert.equal(ans.status, 202, `the answer after SIGTERM: ${ans.status} ${ans.text}`);
    const fin = await reply.nextEvent((m) => m && m.id === 7, 5000, 'the held call\'s result');
    assert.ok(fin.result && !fin.result.isError, JSON.stringify(fin));
    const { code, signal } = await s.waitExit(5000);
    assert.equal(signal, null);
    assert.equal(code, 0, s.stderr);
    assert.ok(await waitPidGone(child, 3000), 'the upstream is gone');
    const calls = s.upstreamCalls('write_file');
    assert.equal(calls.length, 1, 'the answered call ran once before the exit');
  });

  test('a held call answered after SIGTERM on a connection whose request had begun before it completes; then exit 0, upstream gone', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--drain-grace', '10'] });
    const child = await s.upstreamPid();
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const reply = await sess.post(legacyToolCall(8, 'write_file', { path: '/drain2', content: 'x' }));
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');
    // The client starts its answer before the signal and finishes it after.
    const answer = JSON.stringify({ jsonrpc: '2.0', id: ask.id, result: ACCEPT_ANSWER });
    const bytes = rawRequest('POST', '/mcp', { ...mcpHeadersFor({}), 'Mcp-Session-Id': sess.sessionId, 'MCP-Protocol-Version': '2025-11-25' }, answer);
    const c = await rawConnect(s.target, t);
    await c.write(bytes.subarray(0, 40));
    await sleep(100);
    s.proc.kill('SIGTERM');
    await waitLog(s, /draining/, 3000);
    await assertDrainingAnswers(s);
    await c.write(bytes.subarray(40));
    const r = await c.response();
    assert.equal(r.status, 202, `the answer to a held call, sent on a connection open before SIGTERM: ${r.head}\n${r.body}`);
    const fin = await reply.nextEvent((m) => m && m.id === 8, 5000, 'the held call\'s result');
    assert.ok(fin.result && !fin.result.isError, JSON.stringify(fin));
    const { code } = await s.waitExit(5000);
    assert.equal(code, 0, s.stderr);
    assert.ok(await waitPidGone(child, 3000), 'the upstream is gone');
    assert.equal(s.upstreamCalls('write_file').length, 1);
  });

  test('a forwarded modern call in flight at SIGTERM still gets its result; then exit 0', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--drain-grace', '10'] });
    const child = await s.upstreamPid();
    const pending = rpc(s.target, toolCall('slow', 'sleep', { ms: 1000 }));
    const end = Date.now() + scaled(3000);
    while (s.upstreamCalls('sleep').length === 0 && Date.now() < end) await sleep(20);
    s.proc.kill('SIGTERM');
    const r = await pending;
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result && !r.msg.result.isError, r.raw);
    const { code } = await s.waitExit(5000);
    assert.equal(code, 0, s.stderr);
    assert.ok(await waitPidGone(child, 3000));
  });

  test('--drain-grace 1 with nobody answering: exit 0 about 1 s after SIGTERM, the call never runs, upstream gone', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--drain-grace', '1'] });
    const child = await s.upstreamPid();
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const reply = await sess.post(legacyToolCall(9, 'write_file', { path: '/never', content: 'x' }));
    await reply.nextEvent((m) => m && m.method === 'elicitation/create');
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    await assertDrainingAnswers(s, 500);
    const { code, signal } = await s.waitExit(6000);
    const took = Date.now() - t0;
    assert.equal(signal, null);
    assert.equal(code, 0, s.stderr);
    assert.ok(took >= 800 && took < 1000 + scaled(3000), `exited ${took} ms after SIGTERM with --drain-grace 1`);
    assert.ok(await waitPidGone(child, 3000), 'the upstream is gone');
    await reply.complete(3000).catch(() => {});
    assert.ok(reply.ended, 'the held stream ended');
    assert.equal(s.upstreamCalls('write_file').length, 0, 'an unanswered call never runs');
  });

  test('SIGTERM with nothing in flight: exits 0 at once, upstream gone', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--drain-grace', '10'] });
    const child = await s.upstreamPid();
    const agent = keepAliveAgent(t, s.target);
    const r = await rpc(s.target, toolCall(1, 'echo', {}), { agent }); // leaves an idle keep-alive connection
    assert.equal(r.status, 200);
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    const { code } = await s.waitExit(5000);
    assert.equal(code, 0, s.stderr);
    assert.ok(Date.now() - t0 < scaled(2500), `took ${Date.now() - t0} ms with nothing in flight`);
    assert.ok(await waitPidGone(child, 3000));
  });
});

describe('HTTP: /metrics, /healthz, /readyz', suiteOptions(), () => {
  test('/metrics is Prometheus text with the request, gate, held, latency and reload metrics', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const args = { path: '/m', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(1, 'write_file', args), { status: 200 }));
    const ok = await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    assertRefusal(await modernCall(s.target, toolCall(3, 'drop_table', { table: 't' })));
    await modernCall(s.target, toolCall(4, 'echo', {}), { status: 200 });
    await rpc(s.target, toolCall(5, 'echo', {}), { headers: { 'Mcp-Name': 'nope' } }); // a 400

    // A held legacy call shows in the gauge.
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const reply = await sess.post(legacyToolCall(6, 'write_file', { path: '/h', content: 'x' }));
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');

    const r = await get(s.target, '/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /^text\/plain; version=0\.0\.4/);
    const samples = parseMetrics(r.text); // throws on any line that is not the text format
    for (const name of ['sluice_requests_total', 'sluice_gate_decisions_total', 'sluice_held_confirmations', 'sluice_upstream_latency_seconds', 'sluice_policy_reloads_total']) {
      assert.match(r.text, new RegExp(`^# HELP ${name} `, 'm'), `HELP for ${name}`);
      assert.match(r.text, new RegExp(`^# TYPE ${name} (counter|gauge|histogram)$`, 'm'), `TYPE for ${name}`);
    }
    assert.ok(metricValue(samples, 'sluice_requests_total', { method: 'tools/call', status: '200' }) >= 4, r.text);
    assert.ok(metricValue(samples, 'sluice_requests_total', { method: 'tools/call', status: '400' }) >= 1, r.text);
    assert.ok(metricValue(samples, 'sluice_requests_total', { method: 'initialize', status: '200' }) >= 1, r.text);
    for (const d of ['asked', 'client-accepted', 'deny', 'allow']) {
      assert.ok(metricValue(samples, 'sluice_gate_decisions_total', { decision: d }) >= 1, `decision ${d}: ${r.text}`);
    }
    assert.equal(metricValue(samples, 'sluice_held_confirmations'), 1, 'one call held');
    const buckets = samples.filter((x) => x.name === 'sluice_upstream_latency_seconds_bucket');
    assert.ok(buckets.length >= 2, 'histogram buckets');
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value, 'cumulative buckets');
    assert.equal(buckets[buckets.length - 1].labels.le, '+Inf');
    const count = metricValue(samples, 'sluice_upstream_latency_seconds_count');
    assert.equal(buckets[buckets.length - 1].value, count, '+Inf equals _count');
    assert.ok(count >= 2, `upstream latency observed for the forwarded calls: ${count}`);
    assert.ok(metricValue(samples, 'sluice_upstream_latency_seconds_sum') >= 0);
    assert.equal(metricValue(samples, 'sluice_policy_reloads_total', { result: 'ok' }), 0);
    assert.equal(metricValue(samples, 'sluice_policy_reloads_total', { result: 'rejected' }), 0);
    assert.equal(metricValue(samples, 'sluice_sessions'), 1);

    await sess.answer(ask.id, { action: 'decline' });
    await reply.nextEvent((m) => m && m.id === 6);
    const after = await metrics(s.target);
    assert.equal(metricValue(after, 'sluice_held_confirmations'), 0, 'nothing held after the answer');
    assert.ok(metricValue(after, 'sluice_gate_decisions_total', { decision: 'declined' }) >= 1);
  });

  for (const era of ['legacy', 'modern']) {
    test(`a freshly started idle sluice counts no upstream error (its era probe is not one); a real one counts (${era} upstream)`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE, fake: { FAKE_ERA: era } });
      const kinds = ['gone', 'rpc-error', 'http-status', 'unreachable'];
      const idle = await metrics(s.target);
      for (const kind of kinds) assert.equal(metricValue(idle, 'sluice_upstream_errors_total', { kind }) ?? 0, 0, `${kind} at start`);
      // The probe did happen: the upstream got server/discover (a legacy one refused it).
      assert.ok(s.upstreamMessages().some((m) => m.method === 'server/discover'), 'no era probe reached the upstream');
      await rpc(s.target, toolCall(1, 'rpc_error', {}), { status: 200 });
      const after = await metrics(s.target);
      assert.equal(metricValue(after, 'sluice_upstream_errors_total', { kind: 'rpc-error' }), 1, 'a real JSON-RPC error counts once');
    });
  }

  test('/healthz 200; /readyz 200; the ops paths refuse POST with 405', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const h = await get(s.target, '/healthz');
    assert.equal(h.status, 200);
    assert.equal((await get(s.target, '/readyz')).status, 200);
    for (const p of ['/healthz', '/readyz', '/metrics']) {
      const r = await httpRequest(s.target, { method: 'POST', path: p, body: '{}', headers: { 'Content-Type': 'application/json' } });
      await r.complete();
      assert.equal(r.status, 405, `POST ${p}`);
    }
  });

  test('/readyz is 503 (and /mcp 503 with --upstream-wait 0) until the upstream is ready; /healthz is 200 throughout', async (t) => {
    // A silent upstream: sluice waits 10 s for server/discover before it falls back to initialize.
    // --upstream-wait 0: /mcp answers at once rather than waiting (upstream_wait.test.mjs).
    const s = await startHttpSluice(t, { policy: GATE, fake: { FAKE_SILENT_DISCOVER: '1' }, waitReady: false, args: ['--upstream-wait', '0'] });
    const t0 = Date.now();
    assert.equal((await get(s.target, '/readyz')).status, 503);
    assert.equal((await get(s.target, '/healthz')).status, 200);
    const r = await rpc(s.target, toolCall(1, 'echo', { marker: 'early' }));
    assert.equal(r.status, 503, r.raw);
    let ready = false;
    while (Date.now() - t0 < 20000) {
      if ((await get(s.target, '/readyz')).status === 200) {
        ready = true;
        break;
      }
      await sleep(200);
    }
    assert.ok(ready, `/readyz never became 200; stderr:\n${s.stderr}`);
    const m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_ready'), 1);
    const ok = await rpc(s.target, toolCall(2, 'echo', { marker: 'late' }));
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments.marker === 'early').length, 0);
  });
});

describe('HTTP: --log-format json', suiteOptions(), () => {
  function sluiceLines(stderr) {
    // The upstream child's stderr is in it too, wrapped as JSON ("source":"upstream").
    return stderr.split('\n').filter((l) => l.length > 0);
  }

  function assertJsonLines(stderr) {
    const out = [];
    for (const line of sluiceLines(stderr)) {
      let o;
      try {
        o = JSON.parse(line);
      } catch {
        assert.fail(`a stderr line from sluice is not JSON: ${JSON.stringify(line)}`);
      }
      assert.ok(o && typeof o === 'object' && !Array.isArray(o), line);
      assert.match(String(o.ts), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, `ts: ${line}`);
      assert.ok(['debug', 'info', 'warning', 'error'].includes(o.level), `level: ${line}`);
      assert.equal(typeof o.msg, 'string', `msg: ${line}`);
      out.push(o);
    }
    return out;
  }

  test('every stderr line from sluice is a JSON object with ts, level, msg, and request lines carry request_id', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--log-format', 'json', '--log-level', 'debug'] });
    const ok = await rpc(s.target, toolCall(1, 'echo', { x: 'quote " backslash \\ newline \n' }));
    assert.equal(ok.status, 200);
    const rid = ok.headers['x-request-id'];
    assert.ok(rid, 'X-Request-Id on the answer');
    const bad = await rpc(s.target, toolCall(2, 'echo', {}), { headers: { 'Mcp-Method': 'tools/list' } });
    assert.equal(bad.status, 400);
    const forbidden = await rpc(s.target, toolCall(3, 'echo', {}), { headers: { Origin: 'http://evil.example' } });
    assert.equal(forbidden.status, 403);
    const c = await rawConnect(s.target, t);
    await c.write('GARBAGE\r\n\r\n');
    await c.response();
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    s.proc.kill('SIGTERM');
    await s.waitExit(5000);
    const lines = assertJsonLines(s.stderr);
    assert.ok(lines.some((o) => /listening on/.test(o.msg)), 'the listening line is JSON too');
    const child = lines.filter((o) => o.source === 'upstream');
    assert.ok(child.some((o) => /^fake-upstream: started pid=\d+/.test(o.msg)), `the child's stderr line is a JSON line with source "upstream": ${s.stderr.slice(0, 2000)}`);
    assert.ok(lines.filter((o) => o.source !== 'upstream').every((o) => !/^fake-upstream:/.test(o.msg)), 'sluice does not claim the child\'s lines');
    const mine = lines.filter((o) => o.request_id === rid);
    assert.ok(mine.length >= 1, `a log line carries the request id ${rid} of the echo: ${s.stderr.slice(-3000)}`);
    const refused = lines.filter((o) => /Mcp-Method|mismatch/i.test(o.msg));
    assert.ok(refused.length >= 1, 'the header mismatch is logged');
    for (const o of refused) assert.equal(typeof o.request_id, 'string', `a refused request's line names its request id: ${JSON.stringify(o)}`);
    const origin = lines.filter((o) => /Origin/.test(o.msg));
    assert.ok(origin.length >= 1 && origin.every((o) => typeof o.request_id === 'string'), `the Origin refusal names its request id: ${JSON.stringify(origin)}`);
  });

  test('a policy refused on SIGHUP is logged as JSON too (file and line in msg)', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY_V1);
    const s = await startHttpSluice(t, { policy, dir, args: ['--log-format', 'json'] });
    writePolicy(dir, POLICY_BROKEN);
    const mark = s.stderr.length;
    s.proc.kill('SIGHUP');
    await waitLog(s, /refused|rejected/, 5000, mark);
    await sleep(100);
    const lines = assertJsonLines(s.stderr);
    assert.ok(lines.some((o) => o.msg.includes(`${policy}:10:13`)), `the refusal names ${policy}:10:13 in a JSON line: ${s.stderr.slice(mark)}`);
  });

  test('a policy refused at start is logged as JSON too', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY_BROKEN);
    const s = startSluice(t, { policy, dir, args: ['--listen', '127.0.0.1:0', '--log-format', 'json'] });
    const { code } = await s.waitExit(5000);
    assert.notEqual(code, 0);
    const lines = assertJsonLines(s.stderr);
    assert.ok(lines.some((o) => o.msg.includes(`${policy}:10:13`) && o.level === 'error'), `the error names ${policy}:10:13: ${s.stderr}`);
  });
});

describe('HTTP: a child that keeps crashing is restarted ever more slowly', suiteOptions(), () => {
  test('the restart delay doubles when each new child dies on its first call (1 s, 2 s, 4 s)', async (t) => {
    // Each child gets ready, then exits on its first tools/call: readiness alone must not
    // reset the delay, or a crash loop restarts it every second for ever.
    const s = await startHttpSluice(t, { policy: GATE, fake: { FAKE_EXIT_AFTER: '1' } });
    const delays = [];
    for (let i = 0; i < 3; i++) {
      const mark = s.stderr.length;
      const r = await modernCall(s.target, toolCall(100 + i, 'echo', { n: i }));
      assert.ok(r.error || (r.result && r.result.isError), `a call to a child that died gets an error: ${r.raw}`);
      const m = await waitLog(s, /starting it again in (\d+) s/, 5000, mark);
      delays.push(Number(m[1]));
      if (i < 2) await waitLog(s, /serving clients|is ready/, 15000, mark);
      await sleep(200);
    }
    assert.deepEqual(delays, [1, 2, 4], s.stderr.slice(-2000));
  });
});
