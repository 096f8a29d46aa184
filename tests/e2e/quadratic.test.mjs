// quadratic.test.mjs: no work sluice does may be quadratic in the size of a message (issue 17).
// Every place that rewrites a message gets an object or array of about 10,000 members (the
// reader's limit is SL_MAX_MEMBERS = 10,000; the envelope takes three of _meta's): the
// modern envelope stripped for a legacy upstream and added for a modern one,
// tools/call params with that many keys in _meta and in arguments (allowed and gated tools),
// results with that many members through the era conversion both ways, and a tools/list of that
// many tools through the filter (hide_denied). Each step is bounded in wall time, in sluice's
// CPU time (/proc/PID/stat) and in its peak RSS (/proc/PID/status VmHWM): before the fix a
// 10,000-key _meta cost 3 s of CPU and 1.2 GB, and a 10,000-tool listing 440 MB; now each is a
// few ms and a few MB, and the bounds sit about ten times above that. Over stdio and over HTTP,
// where /healthz must answer promptly while a large request is processed.
//
// The CPU bound is user time only: what a quadratic algorithm burns. System time here is mostly
// the page faults of a first large message (about 9,500 for the 6 MB _meta, on one VM 0.11 s
// of system time against 0.09 s of user time); memory has its own bound, the peak RSS.
//
// The keys are long and alike up to their last bytes, so that a search among them per member
// (a quadratic rebuild that no longer copies) still costs whole CPU tenths of a second.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import {
  LINE_DEADLINE_MS, MODERN, SLUICE_BIN, VALGRIND, legacyCall, legacyHandshake, legacyRequest,
  legacySync, modernRequest, policyPath, scaled, startSluice, suiteOptions, toolCall,
} from './lib.mjs';
import { LegacyHttpSession, get, rpc, startHttpSluice } from './http_lib.mjs';

const GATE = policyPath('gate.yaml');
const HIDE = policyPath('hide_denied.yaml');
const N = 9990; // members of one built object: _meta also carries the three envelope keys
const TOOLS = 9980; // listed tools besides the fake upstream's own (sluice accepts 10,000)

// An ASan build's allocator keeps freed memory in a quarantine (up to 256 MB), so its peak grows
// with any allocation churn: natively the whole process peaks near 20 MB, under ASan near 100 MB.
const SANITIZED = fs.readFileSync(SLUICE_BIN).includes('__asan_init');
/** Bounds per step. Natively a step costs ~10 ms of CPU and a few MB; under valgrind's memcheck
 * sluice is far slower and larger, and under ASan+UBSan (an unoptimized build) about 2.5x slower
 * (the 6 MB strip: 0.10 s of user time natively, 0.24 s under ASan, on one VM), so there its
 * bounds only have to hold, not to catch a regression (the mutation check runs the native
 * build). */
const SLOW = VALGRIND ? 60 : SANITIZED ? 3 : 1;
const CPU_S = 0.1 * SLOW; // the strip of a 10,000-key _meta: 0.01 s; quadratic: 0.2 to 3 s
const CPU_WIDE_S = 0.3 * SLOW; // steps with twice the bytes or a gate decision
const CPU_STRIP_S = 0.2 * SLOW; // the strip of a 6 MB _meta: 0.03 to 0.10 s; a search per key: 0.5 s
const HWM_MB = VALGRIND ? 1024 : SANITIZED ? 192 : 96; // quadratic: 440 MB to 1.2 GB
// /healthz while a large message is processed waits for at most one slice of the loop (a parse,
// a filter); natively 500 ms is ten times that. Under memcheck one such slice took 2.2 to 3.3 s
// on a loaded 2-core machine: the same 60x as the CPU bounds, so it holds, not measures.
const HEALTHZ_MS = VALGRIND ? 500 * 60 : SANITIZED ? 500 * 2 : 500;
// Per request, client side and the fake upstream's log included (scaled). Most of it is node's
// own work on the 10,000-member objects, not sluice's (which the CPU bound measures): beside
// another e2e file on two cores (the mutation run's baseline) a step took over 1,500 ms (1,829
// in one CI run) with sluice's CPU at 0.06 s. This bound only catches a stall.
const WALL_MS = 4000;
const WALL_X = SANITIZED ? 2 : 1; // ASan: sluice's share of a step's time about 2.5x (see above)
const CLK_TCK = 100;

/** n members whose keys are alike up to their last bytes. _meta's keys are long (2.3 MB in all,
 * 8 MB where only the strip is measured); arguments' are shorter, so that the gate's 1 MiB bound on arguments and the HTTP front's 4 MiB
 * body limit still let the call through to where it is rewritten. */
function wideObject(tag, n = N, padLen = tag === 'meta' ? 200 : 50) {
  const pad = 'p'.repeat(padLen);
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`sluice.test/${tag}-${pad}-${String(i).padStart(5, '0')}`, i]));
}

/** A gated call's first answer: the question, or a refusal (a result or an error), never a run. */
function assertNotRun(r) {
  const raw = (r.raw || JSON.stringify(r)).slice(0, 500);
  assert.ok(r.error || (r.result && (r.result.resultType === 'input_required' || r.result.isError === true)), raw);
}

function usage(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpu = Number(f[11]) / CLK_TCK; // utime (see the top)
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  return { cpu, hwm };
}

/** Runs fn (one request and its answer) and asserts sluice's time, CPU and memory stayed bounded. */
async function bounded(s, what, fn, cpuS = CPU_S, wallMs = WALL_MS) {
  const u0 = usage(s.pid);
  const t0 = performance.now();
  const r = await fn();
  const ms = performance.now() - t0;
  const u1 = usage(s.pid);
  const cpu = u1.cpu - u0.cpu;
  const line = `${what}: ${ms.toFixed(0)} ms, sluice user CPU ${cpu.toFixed(2)} s, peak RSS ${u1.hwm.toFixed(1)} MB`;
  if (process.env.E2E_COST_LOG) fs.appendFileSync(process.env.E2E_COST_LOG, `${line}\n`);
  assert.ok(ms <= scaled(wallMs) * WALL_X, `${line}: over ${scaled(wallMs) * WALL_X} ms`);
  assert.ok(cpu <= cpuS, `${line}: over ${cpuS} s of CPU`);
  assert.ok(u1.hwm <= HWM_MB, `${line}: over ${HWM_MB} MB`);
  return r;
}

const BIG_MS = Math.max(LINE_DEADLINE_MS, scaled(20000)); // harness deadline; the bound is above

function metaKeys(params) {
  return Object.keys((params && params._meta) || {});
}

function envelopeKeys(keys) {
  return keys.filter((k) => k.startsWith('io.modelcontextprotocol/'));
}

describe('a modern client in front of a legacy upstream (stdio)', suiteOptions(), () => {
  test('a 10,000-key _meta is stripped of the envelope in linear time, allowed call', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy' });
    await s.sync();
    // 6 MB (stdio takes 16 MiB): 0.03 s of CPU; a search per key before appending it, 0.5 s.
    const meta = wideObject('meta', N, 600);
    const args = { a: 1 };
    const r = await bounded(s, 'echo, _meta 9,990 keys of 640 bytes', () => s.request(toolCall('m1', 'echo', args, { meta }), BIG_MS), CPU_STRIP_S, 3000);
    assert.ok(r.result && !r.result.isError, r.raw.slice(0, 500));
    const calls = s.upstreamCalls('echo');
    assert.equal(calls.length, 1);
    const keys = metaKeys(calls[0].params);
    assert.deepEqual(envelopeKeys(keys), [], 'a legacy upstream gets no envelope');
    assert.deepEqual(keys.filter((k) => k.startsWith('sluice.test/')), Object.keys(meta), 'every other _meta key, in order');
    assert.deepEqual(calls[0].params.arguments, args);
  });

  test('10,000 keys in _meta and in arguments, allowed call', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy' });
    await s.sync();
    const args = wideObject('arg');
    const r = await bounded(s, 'echo, _meta and arguments 9,990 keys', () => s.request(toolCall('m2', 'echo', args, { meta: wideObject('meta') }), BIG_MS), CPU_WIDE_S);
    assert.ok(r.result && !r.result.isError, r.raw.slice(0, 500));
    const calls = s.upstreamCalls('echo');
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].params.arguments, args);
    assert.deepEqual(envelopeKeys(metaKeys(calls[0].params)), []);
  });

  test('10,000 keys in _meta and in arguments, gated call: asked or refused, nothing runs', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy' });
    await s.sync();
    const r = await bounded(s, 'write_file (confirm), _meta and arguments 9,990 keys', () => s.request(toolCall('m3', 'write_file', wideObject('arg'), { meta: wideObject('meta') }), BIG_MS), CPU_WIDE_S);
    assertNotRun(r);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 0, 'nothing runs before an answer');
  });

  test('a result with 10,000 members gains resultType in linear time', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy' });
    await s.sync();
    const r = await bounded(s, 'wide result 9,990 members, to 2026-07-28', () => s.request(toolCall('m4', 'wide', { keys: N }), BIG_MS));
    assert.ok(r.result, r.raw.slice(0, 500));
    assert.equal(r.result.resultType, 'complete');
    assert.equal(Object.keys(r.result).filter((k) => /^w\d+$/.test(k)).length, N);
  });

  test('a tools/list of 10,000 tools through hide_denied in linear time', async (t) => {
    const s = startSluice(t, { policy: HIDE, era: 'legacy', fake: { FAKE_MANY_TOOLS: String(TOOLS) } });
    await s.sync();
    const r = await bounded(s, 'tools/list 9,991 tools, hide_denied', () => s.request(modernRequest('m5', 'tools/list'), BIG_MS), CPU_WIDE_S);
    const names = r.result.tools.map((x) => x.name);
    assert.equal(names.filter((n) => n.startsWith('many_')).length, TOOLS);
    assert.ok(names.includes('echo') && !names.includes('delete_file') && !names.includes('drop_table'), 'denied tools hidden');
    assert.ok(r.result.tools.every((x) => !('execution' in x)), 'no task support field');
  });
});

describe('a legacy client in front of a modern upstream (stdio)', suiteOptions(), () => {
  test('a 10,000-key _meta gains the envelope in linear time, allowed call', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'modern' });
    await legacyHandshake(s);
    await legacySync(s);
    const meta = wideObject('meta');
    const r = await bounded(s, 'echo, handshake client, _meta 9,990 keys', () => s.request(legacyCall('l1', 'echo', wideObject('arg'), { _meta: meta }), BIG_MS), CPU_WIDE_S);
    assert.ok(r.result && !r.result.isError, r.raw.slice(0, 500));
    const calls = s.upstreamCalls('echo');
    assert.equal(calls.length, 1);
    const keys = metaKeys(calls[0].params);
    assert.equal(calls[0].params._meta['io.modelcontextprotocol/protocolVersion'], MODERN);
    assert.deepEqual(keys.filter((k) => k.startsWith('sluice.test/')), Object.keys(meta));
  });

  test('a gated call with 10,000 arguments is asked or refused in linear time, nothing runs', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'modern' });
    await legacyHandshake(s);
    await legacySync(s);
    const first = await bounded(s, 'write_file (confirm), handshake client, 9,990 arguments', async () => {
      s.send(legacyCall('l2', 'write_file', wideObject('arg'), { _meta: wideObject('meta') }));
      return s.next((m) => m.method === 'elicitation/create' || (m.id === 'l2' && !('method' in m)), BIG_MS, 'the question or the answer');
    }, CPU_WIDE_S);
    if (first.msg.method === 'elicitation/create') {
      s.send({ jsonrpc: '2.0', id: first.msg.id, result: { action: 'decline' } });
      await s.responseTo('l2');
    }
    await legacySync(s);
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('a result with 10,000 members loses resultType in linear time', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'modern' });
    await legacyHandshake(s);
    const r = await bounded(s, 'wide result 9,990 members, to the legacy era', () => s.request(legacyCall('l3', 'wide', { keys: N }), BIG_MS));
    assert.ok(r.result, r.raw.slice(0, 500));
    assert.ok(!('resultType' in r.result), 'a legacy client gets no resultType');
    assert.equal(Object.keys(r.result).filter((k) => /^w\d+$/.test(k)).length, N);
  });

  test('a tools/list of 10,000 tools through hide_denied in linear time', async (t) => {
    const s = startSluice(t, { policy: HIDE, era: 'modern', fake: { FAKE_MANY_TOOLS: String(TOOLS) } });
    await legacyHandshake(s);
    const r = await bounded(s, 'tools/list 9,991 tools, handshake client', () => s.request(legacyRequest('l4', 'tools/list', {}), BIG_MS), CPU_WIDE_S);
    const names = r.result.tools.map((x) => x.name);
    assert.equal(names.filter((n) => n.startsWith('many_')).length, TOOLS);
    assert.ok(!names.includes('delete_file') && !names.includes('drop_table'));
  });
});

/** Polls /healthz while p is pending; returns the slowest answer in ms. */
async function healthzWhile(target, p) {
  let done = false;
  const waited = p.finally(() => {
    done = true;
  });
  let worst = 0;
  let n = 0;
  while (!done || n < 3) {
    const t0 = performance.now();
    const h = await get(target, '/healthz', { timeoutMs: HEALTHZ_MS + scaled(5000) });
    worst = Math.max(worst, performance.now() - t0);
    assert.equal(h.status, 200);
    n++;
  }
  await waited;
  return worst;
}

describe('over HTTP', suiteOptions(), () => {
  test('modern client, legacy upstream: a 10,000-key _meta, and /healthz answers meanwhile', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, era: 'legacy' });
    const meta = wideObject('meta');
    let r;
    const worst = await healthzWhile(s.target, bounded(s, 'HTTP echo, _meta 9,990 keys', async () => {
      r = await rpc(s.target, toolCall('h1', 'echo', wideObject('arg'), { meta }), { timeoutMs: BIG_MS });
    }, CPU_WIDE_S));
    assert.equal(r.status, 200, r.raw.slice(0, 500));
    assert.ok(r.msg.result && !r.msg.result.isError, r.raw.slice(0, 500));
    assert.ok(worst <= HEALTHZ_MS, `/healthz took ${worst.toFixed(0)} ms while a large request was processed`);
    const calls = s.upstreamCalls('echo');
    assert.equal(calls.length, 1);
    assert.deepEqual(envelopeKeys(metaKeys(calls[0].params)), []);
    assert.deepEqual(metaKeys(calls[0].params).filter((k) => k.startsWith('sluice.test/')), Object.keys(meta));
  });

  test('modern client: a gated call with 10,000 arguments, a wide result, a 10,000-tool list', async (t) => {
    const s = await startHttpSluice(t, { policy: HIDE, era: 'legacy', fake: { FAKE_MANY_TOOLS: String(TOOLS) } });
    const q = await bounded(s, 'HTTP write_file (confirm), 9,990 arguments', () => rpc(s.target, toolCall('h2', 'write_file', wideObject('arg'), { meta: wideObject('meta') }), { timeoutMs: BIG_MS }), CPU_WIDE_S);
    assert.ok(q.msg, q.raw.slice(0, 500));
    assertNotRun(q.msg);
    const w = await bounded(s, 'HTTP wide result', () => rpc(s.target, toolCall('h3', 'wide', { keys: N }), { timeoutMs: BIG_MS }));
    assert.equal(w.msg.result.resultType, 'complete');
    assert.equal(Object.keys(w.msg.result).filter((k) => /^w\d+$/.test(k)).length, N);
    let l;
    const worst = await healthzWhile(s.target, bounded(s, 'HTTP tools/list 9,991 tools', async () => {
      l = await rpc(s.target, modernRequest('h4', 'tools/list'), { timeoutMs: BIG_MS });
    }, CPU_WIDE_S));
    assert.ok(worst <= HEALTHZ_MS, `/healthz took ${worst.toFixed(0)} ms during a large tools/list`);
    const names = l.msg.result.tools.map((x) => x.name);
    assert.equal(names.filter((n) => n.startsWith('many_')).length, TOOLS);
    assert.ok(!names.includes('delete_file'));
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('legacy client, modern upstream: a 10,000-key _meta and a wide result', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, era: 'modern' });
    const c = new LegacyHttpSession(s.target);
    await c.initialize();
    const meta = wideObject('meta');
    const r = await bounded(s, 'HTTP handshake echo, _meta 9,990 keys', () => c.rpc(legacyCall('h5', 'echo', { a: 1 }, { _meta: meta }), { timeoutMs: BIG_MS }));
    assert.ok(r.msg && r.msg.result && !r.msg.result.isError, r.raw.slice(0, 500));
    const calls = s.upstreamCalls('echo');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].params._meta['io.modelcontextprotocol/protocolVersion'], MODERN);
    assert.deepEqual(metaKeys(calls[0].params).filter((k) => k.startsWith('sluice.test/')), Object.keys(meta));
    const w = await bounded(s, 'HTTP handshake wide result', () => c.rpc(legacyCall('h6', 'wide', { keys: N }), { timeoutMs: BIG_MS }));
    assert.ok(!('resultType' in w.msg.result));
    assert.equal(Object.keys(w.msg.result).filter((k) => /^w\d+$/.test(k)).length, N);
  });
});
