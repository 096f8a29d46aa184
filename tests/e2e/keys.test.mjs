// keys.test.mjs: what a gated call's input is compared as, and what of it reaches the upstream,
// over stdio and over the HTTP front. Each case asserts on what the fake upstream received:
// nothing for a refusal, exactly the shown arguments for an accepted call.
//
// - keys that one object holds twice under Unicode simple case folding (Go's encoding/json reads
//   "size" and "\u017fize" as one key and keeps the last) or canonical equivalence ("caf\u00e9"
//   and "cafe\u0301" look alike, and are one key to Swift): refused with -32602, never asked;
// - a NUL in any string of the arguments (a C upstream reads it cut short): refused;
// - integers of 17 and more digits (beyond 2^53): refused;
// - a method that is not "tools/call" but spells it ("tools/call/", "Tools/call", "tools.call",
//   "tools//call"...): -32601, never forwarded;
// - params._meta of a gated call: only progressToken and the io.modelcontextprotocol/ envelope
//   keys the protocol defines reach the upstream; ungated calls keep their _meta;
// - params.task of a gated call: only its ttl reaches the upstream, and a malformed task is
//   refused with -32602 before anyone is asked; ungated calls keep their task.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, confirmRetry, modernRequest, policyPath, startSluice, suiteOptions, toolCall,
} from './lib.mjs';
import {
  LegacyHttpSession, asResponse, assertForwardedOnceHttp, assertNotForwardedHttp, httpSync,
  modernHeaders, rpc, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

// ===== the cases, shared by both transports =====

// Arguments of write_file (gated) that must be refused with -32602, as raw JSON text so that
// integers keep their digits.
const REFUSED_ARGS = [
  ['"size" and "\\u017fize" (long s)', '{"path":"/tmp/k","content":"c","size":1,"\\u017fize":1000000}', /case|fold/i],
  ['"size" and "\u017fize" sent as UTF-8', '{"path":"/tmp/k","content":"c","size":1,"\u017fize":1000000}', /case|fold/i],
  ['"key" and "\\u212aey" (Kelvin sign), nested', '{"path":"/tmp/k","content":"c","opts":{"key":"a","\\u212aey":"b"}}', /case|fold/i],
  ['small and final sigma in an array element', '{"path":"/tmp/k","content":"c","list":[{"\\u03c3":1,"\\u03c2":2}]}', /case|fold/i],
  ['sharp s, small and capital', '{"path":"/tmp/k","content":"c","\\u00df":1,"\\u1e9e":2}', /case|fold/i],
  ['"PATH" next to "path"', '{"path":"/tmp/k","PATH":"/etc/passwd","content":"c"}', /case|fold/i],
  // canonical equivalence: one key to Swift's String, alike to the person
  ['"caf\\u00e9" and "cafe\\u0301" (NFC and NFD)', '{"path":"/tmp/k","content":"c","caf\\u00e9":"safe","cafe\\u0301":"evil"}', /normaliz/i],
  ['the same, sent as UTF-8, nested', '{"path":"/tmp/k","content":"c","o":{"caf\u00e9":"safe","cafe\u0301":"evil"}}', /normaliz/i],
  ['"\\u212b" (angstrom sign) and "\\u00c5"', '{"path":"/tmp/k","content":"c","\\u212b":1,"\\u00c5":2}', /normaliz/i],
  ['"\\u1e69" and "s\\u0307\\u0323" (marks in another order)', '{"path":"/tmp/k","content":"c","\\u1e69":1,"s\\u0307\\u0323":2}', /normaliz/i],
  ['"\\u00c9" and "e\\u0301" (case and decomposition at once)', '{"path":"/tmp/k","content":"c","\\u00c9":1,"e\\u0301":2}', /normaliz/i],
  ['a NUL in a value', '{"path":"/tmp/ok\\u0000/../../etc/passwd","content":"c"}', /NUL/],
  ['a NUL deep in an array', '{"path":"/tmp/k","content":"c","x":[1,{"y":["ok","a\\u0000b"]}]}', /NUL/],
  ['a 17-digit integer', '{"path":"/tmp/k","content":"c","n":10000000000000000}', /2\^53/],
  ['a negative 17-digit integer', '{"path":"/tmp/k","content":"c","n":-12345678901234567}', /2\^53/],
  ['a 16-digit integer one past 2^53', '{"path":"/tmp/k","content":"c","n":9007199254740993}', /2\^53/],
];

// Arguments that differ from each other only in what Go does not fold: asked as usual.
const ASKED_ARGS = [
  ['"\\u00df" and "ss" (full folding is not Go\'s)', '{"path":"/tmp/k","content":"c","\\u00df":1,"ss":2}'],
  ['"i" and dotless "\\u0131"', '{"path":"/tmp/k","content":"c","i":1,"\\u0131":2}'],
  ['"e" and "\\u00e9" (an accent is another letter)', '{"path":"/tmp/k","content":"c","e":1,"\\u00e9":2}'],
  ['"\\ufb01" (fi ligature) and "fi" (compatibility, not canonical)', '{"path":"/tmp/k","content":"c","\\ufb01":1,"fi":2}'],
  ['2^53 exactly, both signs', '{"path":"/tmp/k","content":"c","n":9007199254740992,"m":-9007199254740992}'],
];

const NEAR_MISSES = ['tools/call/', 'tools/call.', 'Tools/call', 'tools/Call', 'TOOLS/CALL', 'tools.call', 'tools_call',
  'tools-call', 'tools//call', '/tools/call', 'tools/call ', ' tools/call', 'toolscall', 'tools/ca/ll'];

// _meta of a gated call: smuggled members next to the protocol's own.
const SMUGGLED = { 'com.example/overwrite': true, 'dev.sluice/token': 'not-a-token', progressToken: 'p-1' };

const rawCall = (id, method, argsText) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":${JSON.stringify(method)},"params":{"name":"write_file","arguments":${argsText},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`;

function assertNearMissNeverForwarded(s, method) {
  const seen = s.upstreamMessages().filter((m) => typeof m.method === 'string' && m.method !== 'tools/call' && m.method.toLowerCase().replace(/[^a-z0-9]/g, '') === 'toolscall');
  assert.deepEqual(seen.map((m) => m.raw), [], `${JSON.stringify(method)} reached the upstream`);
  assert.deepEqual(s.upstreamCalls('write_file'), [], 'nothing may run');
}

// The envelope keys a request's _meta may carry (PROTOCOL.md §1.3).
const ENVELOPE = ['protocolVersion', 'clientCapabilities', 'clientInfo', 'logLevel'].map((k) => `io.modelcontextprotocol/${k}`);
// Members under the reserved prefix that the protocol does not define, and a task with more than
// its ttl: none of it is shown to the person.
const RESERVED_SMUGGLED = { progressToken: 'p-2', 'io.modelcontextprotocol/x': { overwrite: 'yes-overwrite' }, 'io.modelcontextprotocol/logLevel': { evil: 1 }, 'com.x/y': 1 };
const TASK_SMUGGLED = { ttl: 1000, evil: 'yes-evil' };
const MALFORMED_TASKS = [['a string', 'soon'], ['an array', [1000]], ['null', null], ['a negative ttl', { ttl: -1 }],
  ['a fractional ttl', { ttl: 1.5 }], ['a string ttl', { ttl: '1000' }], ['a ttl past 2^53', { ttl: 2 ** 53 }]];

// Only the protocol's own _meta members reach the upstream with a gated call.
function assertMetaFiltered(call, era) {
  const meta = call.params._meta ?? {};
  const keys = Object.keys(meta);
  assert.deepEqual(keys.filter((k) => k !== 'progressToken' && !ENVELOPE.includes(k)), [], call.raw);
  assert.ok(!call.raw.includes('com.example'), `a smuggled _meta member reached the upstream: ${call.raw}`);
  assert.ok(!call.raw.includes('not-a-token'), call.raw);
  assert.ok('progressToken' in meta, `the progress token must reach the upstream: ${call.raw}`);
  if (era === 'modern') assert.equal(meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28', call.raw);
}

// ===== stdio =====

describe('keys, NUL, integers, methods and _meta over stdio', suiteOptions(), () => {
  for (const [label, args, re] of REFUSED_ARGS) {
    test(`gated arguments with ${label}: -32602, never asked, nothing runs`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(rawCall(1, 'tools/call', args) + '\n');
      const r = await s.responseTo(1);
      assert.equal(r.error && r.error.code, -32602, r.raw);
      assert.match(r.error.message, re, r.raw);
      await s.sync();
      assert.deepEqual(s.upstreamCalls(), []);
    });
  }

  test('a NUL in an argument key: refused by the reader, nothing runs', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.sendRaw(rawCall(1, 'tools/call', '{"path":"/tmp/k","content":"c","o":{"mode\\u0000x":1}}') + '\n');
    const r = await s.next((m) => m && m.error && (m.id === 1 || m.id === null), undefined, 'the refusal');
    assert.ok([-32700, -32600, -32602].includes(r.msg.error.code), r.raw);
    await s.sync();
    assert.deepEqual(s.upstreamCalls(), []);
  });

  for (const [label, args] of ASKED_ARGS) {
    test(`gated arguments with ${label}: asked, and the accept runs them as shown`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(rawCall(1, 'tools/call', args) + '\n');
      const q = assertAsked(await s.responseTo(1));
      const parsed = JSON.parse(args);
      const r = await s.request(confirmRetry(2, 'write_file', parsed, q.state, ACCEPT));
      assert.ok(r.result && !r.result.isError, r.raw);
      await s.sync();
      const calls = s.upstreamCalls('write_file');
      assert.equal(calls.length, 1);
      assert.deepEqual(calls[0].params.arguments, parsed);
    });
  }

  for (const method of NEAR_MISSES) {
    test(`method ${JSON.stringify(method)}: -32601, never forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(rawCall(1, method, '{"path":"/etc/x","content":"c"}') + '\n');
      const r = await s.responseTo(1);
      assert.equal(r.error && r.error.code, -32601, r.raw);
      await s.sync();
      assertNearMissNeverForwarded(s, method);
    });
  }

  for (const era of ['legacy', 'modern']) {
    test(`a gated call's task and reserved _meta keys: only ttl and the envelope reach the upstream (${era} upstream)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era, args: ['--log-level', 'debug'] });
      const args = { path: '/tmp/task', content: 'c' };
      const opts = { meta: RESERVED_SMUGGLED, params: { task: TASK_SMUGGLED } };
      const q = assertAsked(await s.request(toolCall(1, 'write_file', args, opts)));
      const r = await s.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT, opts));
      assert.ok(r.result, r.raw);
      await s.sync();
      const calls = s.upstreamCalls('write_file');
      assert.equal(calls.length, 1);
      assert.deepEqual(calls[0].params.task, { ttl: 1000 }, calls[0].raw);
      assertMetaFiltered(calls[0], era);
      assert.ok(!calls[0].raw.includes('overwrite') && !calls[0].raw.includes('evil') && !calls[0].raw.includes('com.x'), calls[0].raw);
      // the dropped members are named in the log, their values never
      assert.match(s.stderr, /not forwarded.*_meta\.io\.modelcontextprotocol\/x.*_meta\.io\.modelcontextprotocol\/logLevel.*_meta\.com\.x\/y.*task\.evil/, s.stderr);
      assert.ok(!s.stderr.includes('yes-overwrite') && !s.stderr.includes('yes-evil'), s.stderr);
      // an ungated call keeps its task and _meta as sent
      const e = await s.request(toolCall(3, 'echo', { x: 1 }, opts));
      assert.ok(e.result, e.raw);
      await s.sync();
      const [echo] = s.upstreamCalls('echo');
      assert.deepEqual(echo.params.task, TASK_SMUGGLED, echo.raw);
      assert.equal(echo.params._meta['com.x/y'], 1, echo.raw);
    });

    test(`a gated call with a malformed task: -32602, never asked, nothing runs; ungated: as sent (${era} upstream)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      let id = 0;
      for (const [label, task] of MALFORMED_TASKS) {
        const r = await s.request(toolCall(++id, 'write_file', { path: '/tmp/task', content: 'c' }, { params: { task } }));
        assert.equal(r.error && r.error.code, -32602, `${label}: ${r.raw}`);
        assert.match(r.error.message, /task/, `${label}: ${r.raw}`);
        const e = await s.request(toolCall(++id, 'echo', { x: id }, { params: { task } }));
        assert.ok(e.result, `${label}: ${e.raw}`);
      }
      await s.sync();
      assert.deepEqual(s.upstreamCalls('write_file'), []);
      assert.deepEqual(s.upstreamCalls('echo').map((c) => c.params.task), MALFORMED_TASKS.map(([, task]) => task));
    });

    test(`a gated call's _meta: only progressToken and io.modelcontextprotocol/ reach the upstream (${era} upstream)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const args = { path: '/tmp/meta', content: 'c' };
      const q = assertAsked(await s.request(toolCall(1, 'write_file', args, { meta: SMUGGLED })));
      // round two brings a member round one did not have: it does not reach the upstream either
      const r = await s.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT, { meta: { ...SMUGGLED, 'com.example/round-two': 1 } }));
      assert.ok(r.result && !r.result.isError, r.raw);
      await s.sync();
      const calls = s.upstreamCalls('write_file');
      assert.equal(calls.length, 1);
      assert.deepEqual(calls[0].params.arguments, args);
      assertMetaFiltered(calls[0], era);
      assert.ok(!calls[0].raw.includes('round-two'), calls[0].raw);
      // an ungated call keeps its _meta as sent
      const e = await s.request(toolCall(3, 'echo', { x: 1 }, { meta: { 'com.example/keep': 7 } }));
      assert.ok(e.result, e.raw);
      await s.sync();
      const [echo] = s.upstreamCalls('echo');
      assert.equal(echo.params._meta['com.example/keep'], 7, echo.raw);
    });
  }
});

// ===== HTTP =====

describe('keys, NUL, integers, methods and _meta over HTTP', suiteOptions(), () => {
  test('refused arguments (folded keys, NUL, big integers): -32602, never asked, nothing runs', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    let id = 0;
    for (const [label, args, re] of REFUSED_ARGS) {
      const body = rawCall(++id, 'tools/call', args);
      const msg = JSON.parse(body);
      const r = await rpc(s.target, msg, { rawBody: body });
      assert.equal(r.status, 200, `${label}: ${r.raw}`);
      const m = asResponse(r);
      assert.equal(m.error && m.error.code, -32602, `${label}: ${m.raw}`);
      assert.match(m.error.message, re, `${label}: ${m.raw}`);
    }
    await assertNotForwardedHttp(s, 'write_file');
  });

  test('arguments Go keeps apart: asked, and the accept runs them as shown', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    let id = 0;
    for (const [label, args] of ASKED_ARGS) {
      const body = rawCall(`a${++id}`, 'tools/call', args);
      const q = assertAsked(asResponse(await rpc(s.target, JSON.parse(body), { rawBody: body })));
      const parsed = JSON.parse(args);
      const r = asResponse(await rpc(s.target, confirmRetry(`b${id}`, 'write_file', parsed, q.state, ACCEPT)));
      assert.ok(r.result && !r.result.isError, `${label}: ${r.raw}`);
      await httpSync(s);
      const calls = s.upstreamCalls('write_file');
      assert.equal(calls.length, id, label);
      assert.deepEqual(calls[id - 1].params.arguments, parsed, label);
    }
  });

  test('near-miss methods, 2026-07-28 (Mcp-Method equal to the body): 404 -32601, never forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    let id = 0;
    for (const method of NEAR_MISSES) {
      const msg = modernRequest(++id, method, { name: 'write_file', arguments: { path: '/etc/x', content: 'c' } });
      const r = await rpc(s.target, msg);
      if (method.trim() !== method) {
        // an HTTP header value loses its outer spaces, so the header no longer mirrors the body
        assert.ok(r.status === 400 || r.status === 404, `${JSON.stringify(method)}: HTTP ${r.status} ${r.raw}`);
      } else {
        assert.equal(r.status, 404, `${JSON.stringify(method)}: HTTP ${r.status} ${r.raw}`);
        assert.equal(r.msg && r.msg.error && r.msg.error.code, -32601, r.raw);
      }
    }
    await httpSync(s);
    assertNearMissNeverForwarded(s, 'near misses');
  });

  test('a near-miss body method under an exact Mcp-Method header: 400, never forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const msg = modernRequest(1, 'tools/call/', { name: 'write_file', arguments: { path: '/etc/x', content: 'c' } });
    const headers = { ...modernHeaders(msg), 'Mcp-Method': 'tools/call', 'Mcp-Name': 'write_file' };
    const r = await rpc(s.target, msg, { headers });
    assert.equal(r.status, 400, r.raw);
    await httpSync(s);
    assertNearMissNeverForwarded(s, 'tools/call/');
  });

  test('near-miss methods in a legacy session: -32601, never forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    let id = 0;
    for (const method of NEAR_MISSES) {
      const r = await sess.rpc({ jsonrpc: '2.0', id: ++id, method, params: { name: 'write_file', arguments: { path: '/etc/x', content: 'c' } } });
      assert.equal(r.msg && r.msg.error && r.msg.error.code, -32601, `${JSON.stringify(method)}: HTTP ${r.status} ${r.raw}`);
    }
    await httpSync(s);
    assertNearMissNeverForwarded(s, 'near misses');
  });

  for (const era of ['legacy', 'modern']) {
    test(`a gated call's task and reserved _meta keys: only ttl and the envelope reach the upstream (${era} upstream)`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE, era, args: ['--log-level', 'debug'] });
      const args = { path: '/tmp/task', content: 'c' };
      const opts = { meta: RESERVED_SMUGGLED, params: { task: TASK_SMUGGLED } };
      const q = assertAsked(asResponse(await rpc(s.target, toolCall('t1', 'write_file', args, opts))));
      const r = asResponse(await rpc(s.target, confirmRetry('t2', 'write_file', args, q.state, ACCEPT, opts)));
      assert.ok(r.result && !r.result.isError, r.raw);
      const call = await assertForwardedOnceHttp(s, 'write_file', args, q.state);
      assert.deepEqual(call.params.task, { ttl: 1000 }, call.raw);
      assertMetaFiltered(call, era);
      assert.ok(!call.raw.includes('overwrite') && !call.raw.includes('evil') && !call.raw.includes('com.x'), call.raw);
      assert.match(s.stderr, /not forwarded.*_meta\.io\.modelcontextprotocol\/x.*_meta\.io\.modelcontextprotocol\/logLevel.*_meta\.com\.x\/y.*task\.evil/, s.stderr);
      assert.ok(!s.stderr.includes('yes-overwrite') && !s.stderr.includes('yes-evil'), s.stderr);
      const e = asResponse(await rpc(s.target, toolCall('e1', 'echo', { x: 1 }, opts)));
      assert.ok(e.result, e.raw);
      await httpSync(s);
      const [echo] = s.upstreamCalls('echo');
      assert.deepEqual(echo.params.task, TASK_SMUGGLED, echo.raw);
      assert.equal(echo.params._meta['com.x/y'], 1, echo.raw);
    });

    test(`a gated call with a malformed task: -32602, never asked, nothing runs; ungated: as sent (${era} upstream)`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE, era });
      let id = 0;
      for (const [label, task] of MALFORMED_TASKS) {
        const r = asResponse(await rpc(s.target, toolCall(`m${++id}`, 'write_file', { path: '/tmp/task', content: 'c' }, { params: { task } })));
        assert.equal(r.error && r.error.code, -32602, `${label}: ${r.raw}`);
        assert.match(r.error.message, /task/, `${label}: ${r.raw}`);
        const e = asResponse(await rpc(s.target, toolCall(`e${id}`, 'echo', { x: id }, { params: { task } })));
        assert.ok(e.result, `${label}: ${e.raw}`);
      }
      await assertNotForwardedHttp(s, 'write_file');
      assert.deepEqual(s.upstreamCalls('echo').map((c) => c.params.task), MALFORMED_TASKS.map(([, task]) => task));
    });

    test(`a gated call's _meta: only progressToken and io.modelcontextprotocol/ reach the upstream (${era} upstream)`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE, era });
      const args = { path: '/tmp/meta', content: 'c' };
      const q = assertAsked(asResponse(await rpc(s.target, toolCall('r1', 'write_file', args, { meta: SMUGGLED }))));
      const r = asResponse(await rpc(s.target, confirmRetry('r2', 'write_file', args, q.state, ACCEPT, { meta: { ...SMUGGLED, 'com.example/round-two': 1 } })));
      assert.ok(r.result && !r.result.isError, r.raw);
      const call = await assertForwardedOnceHttp(s, 'write_file', args, q.state);
      assertMetaFiltered(call, era);
      assert.ok(!call.raw.includes('round-two'), call.raw);
      const e = asResponse(await rpc(s.target, toolCall('e1', 'echo', { x: 1 }, { meta: { 'com.example/keep': 7 } })));
      assert.ok(e.result, e.raw);
      await httpSync(s);
      const [echo] = s.upstreamCalls('echo');
      assert.equal(echo.params._meta['com.example/keep'], 7, echo.raw);
    });
  }
});
