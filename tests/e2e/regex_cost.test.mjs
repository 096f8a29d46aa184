// regex_cost.test.mjs: a regex rule costs sluice time linear in the value, and a bounded amount
// of it per call (invariant 9: no input costs more than linear time and memory in its size).
//
// Before policy/ere.c, rules.c asked glibc's re_match, which builds a DFA state for almost every
// byte on some regexes an operator may well write: "[a-z0-9_-]+-[a-z0-9_-]{20}" against a
// 100,000-byte value of random 'a' and '-' kept the event loop for 11.7 s (time quadratic in
// the value, memory growing with it). Now a 1 MiB value against that regex is a tenth of a second,
// and a regex that needs hundreds of steps per byte stops at RULES_REGEX_STEPS and refuses the
// call, naming the rule. Each step is bounded in sluice's user CPU time (/proc/PID/stat) and
// peak RSS, and the next call is answered.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import {
  SLUICE_BIN, VALGRIND, assertRefusal, startSluice, suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';

const POLICY = `version: 1
defaults:
  action: deny
tools:
  echo:
    action: allow
    args:
      name: {regex: "[a-z0-9_-]+-[a-z0-9_-]{20}"}
      heavy: {regex: "(a|-)*a(a|-){160}"}
      loops: {regex: "((a*)*|(a|a)*)*(-|-)*"}
`;

const SANITIZED = fs.readFileSync(SLUICE_BIN).includes('__asan_init');
// Natively the 1 MiB match is about 0.1 s of CPU and the budget's refusal about 0.2 s; glibc
// took 11.7 s for a tenth of the bytes. ASan (unoptimized) is several times slower, memcheck
// about 60x: there the bounds only have to hold.
const SLOW = VALGRIND ? 60 : SANITIZED ? 6 : 1;
const CPU_S = 1.0 * SLOW;
const HWM_MB = VALGRIND ? 1024 : SANITIZED ? 256 : 96;
const CLK_TCK = 100;
const MIB = 1 << 20;

function usage(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  return { cpu: Number(f[11]) / CLK_TCK, hwm };
}

/** n bytes of 'a' and '-' from a fixed seed (the shape that made glibc's DFA grow per byte). */
function aDash(n, seed = 7) {
  let x = seed;
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = (x >>> 16) & 1 ? 0x61 : 0x2d;
  }
  return b.toString('latin1');
}

async function bounded(s, what, fn) {
  const u0 = usage(s.pid);
  const r = await fn();
  const u1 = usage(s.pid);
  const cpu = u1.cpu - u0.cpu;
  const line = `${what}: sluice user CPU ${cpu.toFixed(2)} s, peak RSS ${u1.hwm.toFixed(1)} MB`;
  if (process.env.E2E_COST_LOG) fs.appendFileSync(process.env.E2E_COST_LOG, `${line}\n`);
  assert.ok(cpu <= CPU_S, `${line}: over ${CPU_S} s of CPU`);
  assert.ok(u1.hwm <= HWM_MB, `${line}: over ${HWM_MB} MB`);
  return r;
}

function start(t) {
  const dir = tmpDir(t);
  return startSluice(t, { policy: writePolicy(dir, POLICY), dir, era: 'modern' });
}

const DEADLINE_MS = VALGRIND ? 120000 : 20000;

describe('a regex rule against a value an agent chose', suiteOptions(), () => {
  test('1 MiB is matched in linear time: a match is forwarded, a miss refused', async (t) => {
    const s = start(t);
    await s.sync();
    // a match needs the '-' 21 bytes from the end; a miss has none there
    const base = aDash(MIB);
    const hit = `${base.slice(0, MIB - 21)}-${'a'.repeat(20)}`;
    const miss = `${base.slice(0, MIB - 21)}a${'a'.repeat(20)}`;
    const r1 = await bounded(s, '1 MiB match', () => s.request(toolCall('m1', 'echo', { name: hit }), DEADLINE_MS));
    assert.ok(r1.result && !r1.result.isError, JSON.stringify(r1).slice(0, 300));
    const r2 = await bounded(s, '1 MiB miss', () => s.request(toolCall('m2', 'echo', { name: miss }), DEADLINE_MS));
    assertRefusal(r2, /tools\.echo\.args\.name\.regex/);
    await s.sync();
    const calls = s.upstreamCalls('echo');
    assert.equal(calls.length, 1, 'only the matching call reached the upstream');
    assert.equal(calls[0].params.arguments.name.length, MIB);
    const r3 = await s.request(toolCall('m3', 'echo', { name: `ab-${'c'.repeat(20)}` }), DEADLINE_MS);
    assert.ok(r3.result && !r3.result.isError, 'the next call is answered');
  });

  test('loops inside loops and twin alternatives cost each instruction once per byte', async (t) => {
    const s = start(t);
    await s.sync();
    // every byte reaches each instruction by several paths (and "(a*)*" by a loop of no bytes);
    // a thread that reaches an instruction twice in one step is dropped, so this is ~20 steps
    // per byte, where keeping both would double the threads per byte or never end
    const loops = `${'a'.repeat(MIB / 2)}${'-'.repeat(MIB / 2)}`;
    const r = await bounded(s, '1 MiB of nested loops', () => s.request(toolCall('l1', 'echo', { loops }), DEADLINE_MS));
    assert.ok(r.result && !r.result.isError, JSON.stringify(r).slice(0, 300));
    await s.sync();
    assert.equal(s.upstreamCalls('echo').length, 1);
  });

  test('a regex that needs more steps than a call may take refuses the call, in bounded time', async (t) => {
    const s = start(t);
    await s.sync();
    // about 300 steps per byte: 1 MiB would be 300 M steps, the budget stops it near 33 M
    const r = await bounded(s, '1 MiB over the step budget', () => s.request(toolCall('h1', 'echo', { heavy: aDash(MIB) }), DEADLINE_MS));
    assertRefusal(r, /tools\.echo\.args\.heavy\.regex/);
    assert.match(JSON.stringify(r), /takes more than the 33554432 steps a call's regex checks may take/);
    // a short value against the same regex is checked, not refused for cost
    const ok = `${'a'.repeat(40)}a${'-'.repeat(160)}`;
    const r2 = await s.request(toolCall('h2', 'echo', { heavy: ok }), DEADLINE_MS);
    assert.ok(r2.result && !r2.result.isError, JSON.stringify(r2).slice(0, 300));
    await s.sync();
    assert.equal(s.upstreamCalls('echo').length, 1, 'the refused call never reached the upstream');
  });

  test('the budget is per call: many values of one call share it', async (t) => {
    const s = start(t);
    await s.sync();
    // 64 values of 32 KiB: each alone is within the budget (about 10 M steps), together not
    const heavy = Array.from({ length: 64 }, (_, i) => aDash(32 * 1024, i + 1));
    const r = await bounded(s, '64 x 32 KiB', () => s.request(toolCall('p1', 'echo', { heavy }), DEADLINE_MS));
    assertRefusal(r, /tools\.echo\.args\.heavy\.regex/);
    assert.match(JSON.stringify(r), /heavy\[\d+\] \(32768 bytes\) takes more than/);
    await s.sync();
    assert.equal(s.upstreamCalls('echo').length, 0);
  });
});
