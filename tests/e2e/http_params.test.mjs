// http_params.test.mjs: the 2026-07-28 Mcp-Param-* headers on sluice's HTTP front (PROTOCOL.md
// §5.2 "Custom headers from tool arguments", §7.9). sluice learns the x-mcp-header marks from the
// upstream's tools/list (here the stdio fake upstream with FAKE_PARAM_TOOLS=1), and a 2026-07-28
// tools/call of a marked tool must carry one Mcp-Param-<Name> header per marked argument present in
// the body, agreeing with it after sentinel decoding (integers by value); anything else is HTTP 400
// with JSON-RPC -32020, and nothing reaches the upstream. Every case checks the upstream's log after
// an HTTP sync barrier.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, confirmRetry, deadline, modernRequest, policyPath, resultText, sleep, suiteOptions, toolCall,
} from './lib.mjs';
import {
  LegacyHttpSession, asResponse, assertForwardedOnceHttp, assertNotForwardedHttp, assertRpcError, httpSync,
  mcpHeadersFor, rawConnect, rawRequest, rpc, startHttpSluice, waitLog, waitReady,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');
const PARAM_FAKE = { FAKE_PARAM_TOOLS: '1' };

const b64 = (v) => `=?base64?${Buffer.from(v, 'utf8').toString('base64')}?=`;

/** A number written exactly as given in the JSON body (42.0, 4.2e1, ...). */
class RawNum {
  constructor(text) {
    this.text = text;
  }
}

/** JSON.stringify, with every RawNum written as its text. */
function rawJson(obj) {
  const raws = [];
  const text = JSON.stringify(obj, (k, v) => (v instanceof RawNum ? `\u0000raw${raws.push(v.text) - 1}\u0000` : v));
  return text.replace(/"\\u0000raw(\d+)\\u0000"/g, (m, i) => raws[Number(i)]);
}

/**
 * Starts sluice --listen around the fake upstream with the param tools, and waits until the marks
 * are known without any client listing: sluice's own start-up tools/list has reached the fake, and
 * a sync call sent after it has been answered (the fake answers in order, so the listing's answer
 * came first).
 */
async function startParams(t, opts = {}) {
  const s = await startHttpSluice(t, { policy: GATE, ...opts, fake: { ...PARAM_FAKE, ...(opts.fake ?? {}) } });
  await httpSync(s); // a legacy fake is initialized once a client is there
  const end = Date.now() + deadline(5000);
  while (!s.upstreamMessages().some((m) => m.method === 'tools/list')) {
    assert.ok(Date.now() < end, `sluice sent the upstream no tools/list of its own; upstream log: ${JSON.stringify(s.upstreamMessages().map((m) => m.method))}`);
    await sleep(20);
  }
  await httpSync(s);
  return s;
}

/** POSTs a modern tools/call with the mirrored headers plus headers (null removes one). */
function callWith(s, id, name, args, headers = {}) {
  const msg = toolCall(id, name, args);
  return rpc(s.target, msg, { headers, rawBody: rawJson(msg) });
}

/** The upstream's tools/call of name tagged with arguments.note === note. */
function forwardedTagged(s, name, note) {
  return s.upstreamCalls(name).filter((c) => c.params.arguments && c.params.arguments.note === note);
}

const GOOD_ARGS = { region: 'us-west1', count: 42, flag: true, target: { inner: { zone: 'z-9' } } };
const GOOD_HEADERS = { 'Mcp-Param-Region': 'us-west1', 'Mcp-Param-Count': '42', 'Mcp-Param-Flag': 'true', 'Mcp-Param-Zone': 'z-9' };

/** args with over applied (a key set to undefined is removed). */
function withArgs(over) {
  const a = { ...GOOD_ARGS, ...over };
  for (const k of Object.keys(a)) if (a[k] === undefined) delete a[k];
  return a;
}

// [label, argument changes, header changes]: each must be refused with 400 / -32020.
const MISMATCHES = [
  ['a marked argument without its header', {}, { 'Mcp-Param-Region': null }],
  ['the nested argument without its header', {}, { 'Mcp-Param-Zone': null }],
  ['the boolean false without its header', { flag: false }, { 'Mcp-Param-Flag': null }],
  ['a header without its argument', { region: undefined }, {}],
  ['a header whose argument is null', { region: null }, {}],
  ['a header for a nested argument whose chain is absent', { target: undefined }, {}],
  ['a header for a nested argument under null', { target: { inner: null } }, {}],
  ['a header without its argument for a tool called without arguments', null, {}],
  ['a repeated header with the same value', {}, { 'Mcp-Param-Region': ['us-west1', 'us-west1'] }],
  ['a repeated header with two values', {}, { 'Mcp-Param-Count': ['42', '43'] }],
  ['a string that differs', {}, { 'Mcp-Param-Region': 'us-west2' }],
  ['a string that differs in case only', {}, { 'Mcp-Param-Region': 'US-WEST1' }],
  ['a nested string that differs', {}, { 'Mcp-Param-Zone': 'z-8' }],
  ['an integer that differs', {}, { 'Mcp-Param-Count': '43' }],
  ['an integer header that is not a number', {}, { 'Mcp-Param-Count': 'forty-two' }],
  ['an integer header with trailing junk', {}, { 'Mcp-Param-Count': '42abc' }],
  ['a fraction for the integer', {}, { 'Mcp-Param-Count': '42.5' }],
  ['an empty integer header', {}, { 'Mcp-Param-Count': '' }],
  ['a boolean in another case', {}, { 'Mcp-Param-Flag': 'True' }],
  ['a boolean as 1', {}, { 'Mcp-Param-Flag': '1' }],
  ['a boolean that differs', {}, { 'Mcp-Param-Flag': 'false' }],
  ['the sentinel of another value', {}, { 'Mcp-Param-Region': b64('us-east1') }],
  ['a sentinel without its padding', {}, { 'Mcp-Param-Region': '=?base64?dXMtd2VzdDE?=' }],
  ['a sentinel with a character outside base64', {}, { 'Mcp-Param-Region': '=?base64?dXMtd2Vz*DE=?=' }],
  ['a sentinel with upper-case markers (taken literally)', {}, { 'Mcp-Param-Region': '=?BASE64?dXMtd2VzdDE=?=' }],
  ['a sentinel of bytes that are not UTF-8', { region: 'ÿ' }, { 'Mcp-Param-Region': '=?base64?/w==?=' }],
  ['a leading space sent plain (OWS is trimmed away)', { region: ' lead' }, { 'Mcp-Param-Region': ' lead' }],
  ['a string argument is compared as text, not as a number', { region: '42' }, { 'Mcp-Param-Region': '42.0' }],
  ['a boolean header for a string argument "true" that differs', { region: 'TRUE' }, { 'Mcp-Param-Region': 'true' }],
];

describe('HTTP 2026-07-28: Mcp-Param-* headers against the body', suiteOptions(), () => {
  test('the upstream\'s marks reach the client unchanged in tools/list (sluice does not strip x-mcp-header)', async (t) => {
    const s = await startParams(t);
    const r = asResponse(await rpc(s.target, modernRequest('l1', 'tools/list', {})));
    const route = r.result.tools.find((x) => x.name === 'param_route');
    assert.ok(route, r.raw);
    assert.equal(route.inputSchema.properties.region['x-mcp-header'], 'Region', r.raw);
    assert.equal(route.inputSchema.properties.target.properties.inner.properties.zone['x-mcp-header'], 'Zone', r.raw);
    const wf = r.result.tools.find((x) => x.name === 'write_file');
    assert.equal(wf.inputSchema.properties.path['x-mcp-header'], 'Path', r.raw);
  });

  for (const era of ['legacy', 'modern']) {
    test(`matching headers are served and the call is forwarded as sent: exact, any name case, sentinels, integers by value, null and absent (${era} upstream)`, async (t) => {
      const s = await startParams(t, { era });
      const MATCHES = [
        ['exact', GOOD_ARGS, GOOD_HEADERS],
        ['header names in any case', GOOD_ARGS, { 'Mcp-Param-Region': null, 'Mcp-Param-Count': null, 'Mcp-Param-Flag': null, 'Mcp-Param-Zone': null, 'mcp-param-region': 'us-west1', 'MCP-PARAM-COUNT': '42', 'mCp-PaRaM-fLaG': 'true', 'MCP-param-ZONE': 'z-9' }],
        ['every value in the sentinel, plain ones too', GOOD_ARGS, { 'Mcp-Param-Region': b64('us-west1'), 'Mcp-Param-Count': b64('42'), 'Mcp-Param-Flag': b64('true'), 'Mcp-Param-Zone': b64('z-9') }],
        ['non-ASCII, leading and trailing space, CJK, a sentinel look-alike: sentinels', withArgs({ region: 'Zürich', city: ' padded', target: { inner: { zone: '日本 ' } } }),
          { 'Mcp-Param-Region': b64('Zürich'), 'Mcp-Param-City': b64(' padded'), 'Mcp-Param-Zone': b64('日本 ') }],
        ['a string that looks like the sentinel, encoded', withArgs({ city: '=?base64?eA==?=' }), { 'Mcp-Param-City': b64('=?base64?eA==?=') }],
        ['an empty string in the sentinel', withArgs({ city: '' }), { 'Mcp-Param-City': '=?base64??=' }],
        ['a tab inside a value, sent plain', withArgs({ city: 'a\tb' }), { 'Mcp-Param-City': 'a\tb' }],
        ['a comma inside a value (one header, not a list)', withArgs({ city: 'a, b' }), { 'Mcp-Param-City': 'a, b' }],
        ['OWS around a plain value is trimmed', GOOD_ARGS, { 'Mcp-Param-Region': '  us-west1\t' }],
        ['integer 42 with header 42.0', GOOD_ARGS, { 'Mcp-Param-Count': '42.0' }],
        ['integer 42 with header 4.2e1', GOOD_ARGS, { 'Mcp-Param-Count': '4.2e1' }],
        ['body 42.0 with header 42', withArgs({ count: new RawNum('42.0') }), {}],
        ['body -7 with header -7.0', withArgs({ count: -7 }), { 'Mcp-Param-Count': '-7.0' }],
        ['2^53-1', withArgs({ count: 9007199254740991 }), { 'Mcp-Param-Count': '9007199254740991' }],
        ['false', withArgs({ flag: false }), { 'Mcp-Param-Flag': 'false' }],
        ['null and absent arguments, no headers for them', { flag: false, region: null, target: { inner: { zone: null } } }, { 'Mcp-Param-Region': null, 'Mcp-Param-Count': null, 'Mcp-Param-Zone': null, 'Mcp-Param-Flag': 'false' }],
        ['a nested chain absent, no header for it', withArgs({ target: undefined }), { 'Mcp-Param-Zone': null }],
        ['an Mcp-Param header no mark names is not checked', GOOD_ARGS, { 'Mcp-Param-Unmarked': 'anything', 'Mcp-Param-Note': 'x' }],
      ];
      let n = 0;
      for (const [label, args, headers] of MATCHES) {
        const id = `ok-${++n}`;
        const r = await callWith(s, id, 'param_route', { ...args, note: label }, { ...GOOD_HEADERS, ...headers });
        assert.equal(r.status, 200, `${label}: ${r.raw}`);
        const m = asResponse(r);
        assert.equal(m.id, id);
        assert.ok(m.result && !m.result.isError, `${label}: ${m.raw}`);
        assert.deepEqual(JSON.parse(resultText(m)), JSON.parse(rawJson({ ...args, note: label })), `${label}: the upstream's echo`);
      }
      // Called without arguments, without headers.
      const bare = await callWith(s, 'bare', 'param_route', undefined, { 'Mcp-Param-Region': null, 'Mcp-Param-Count': null, 'Mcp-Param-Flag': null, 'Mcp-Param-Zone': null });
      assert.equal(bare.status, 200, bare.raw);
      assert.ok(bare.msg && bare.msg.result && !bare.msg.result.isError, bare.raw);
      await httpSync(s);
      for (const [label] of MATCHES) assert.equal(forwardedTagged(s, 'param_route', label).length, 1, `${label}: forwarded once`);
      assert.equal(s.upstreamCalls('param_route').length, MATCHES.length + 1);
    });
  }

  for (const era of ['legacy', 'modern']) {
    test(`each mismatch: HTTP 400 with -32020 under the request id, nothing forwarded (${era} upstream)`, async (t) => {
      const s = await startParams(t, { era });
      let n = 0;
      const problems = [];
      for (const [label, over, headers] of MISMATCHES) {
        const id = `mm-${++n}`;
        const args = over === null ? undefined : { ...withArgs(over), note: label };
        const r = await callWith(s, id, 'param_route', args, { ...GOOD_HEADERS, ...headers });
        try {
          assertRpcError(r, 400, -32020);
          assert.equal(r.msg.id, id, 'the error carries the request id');
        } catch (e) {
          problems.push(`${label}: ${e.message.split('\n')[0]}`);
        }
      }
      await httpSync(s);
      assert.deepEqual(problems, [], 'every mismatch is refused with 400 / -32020');
      const leaked = s.upstreamCalls('param_route');
      assert.deepEqual(leaked.map((c) => c.raw), [], 'no mismatched call may reach the upstream');
    });
  }

  test('long values match: 4000 ASCII characters plain or in the sentinel, 1200 and 3000 bytes of non-ASCII text in the sentinel', async (t) => {
    // The front takes heads up to 16 KiB; the writer toward an HTTP upstream has no limit of its
    // own, so a value that sluice itself would send must pass sluice's check.
    const s = await startParams(t);
    const CASES = [
      ['4000 ASCII, plain', 'a'.repeat(4000), (v) => v],
      ['4000 ASCII, in the sentinel', 'b'.repeat(4000), b64],
      ['1200 bytes of non-ASCII, in the sentinel', 'ü'.repeat(600), b64],
      ['3000 bytes of non-ASCII, in the sentinel', 'ü'.repeat(1500), b64],
      ['1100 bytes with a leading space, in the sentinel', ` ${'c'.repeat(1099)}`, b64],
    ];
    const problems = [];
    let n = 0;
    for (const [label, value, enc] of CASES) {
      const r = await callWith(s, `long-${++n}`, 'param_route', withArgs({ city: value, note: label }), { ...GOOD_HEADERS, 'Mcp-Param-City': enc(value) });
      if (r.status !== 200 || !(r.msg && r.msg.result && !r.msg.result.isError)) problems.push(`${label}: HTTP ${r.status} ${r.raw.slice(0, 200)}`);
    }
    assert.deepEqual(problems, [], 'a long value whose header matches is served');
    await httpSync(s);
    for (const [label] of CASES) assert.equal(forwardedTagged(s, 'param_route', label).length, 1, `${label}: forwarded once`);
  });

  test('after the upstream is started again the marks are still checked (no client lists tools meanwhile)', async (t) => {
    const s = await startParams(t);
    const before = await callWith(s, 'rs-1', 'param_route', { ...GOOD_ARGS, note: 'before restart' }, { ...GOOD_HEADERS, 'Mcp-Param-Region': 'elsewhere' });
    assertRpcError(before, 400, -32020);
    const lists = s.upstreamMessages().filter((m) => m.method === 'tools/list').length;
    const pid = await s.upstreamPid();
    process.kill(pid, 'SIGKILL');
    await waitLog(s, /starting it again/, 5000);
    await waitReady(s.target, 15000, s);
    await httpSync(s);
    // Give sluice the chance to list the new upstream's tools itself (or to have kept the marks).
    const end = Date.now() + deadline(2000);
    while (Date.now() < end && s.upstreamMessages().filter((m) => m.method === 'tools/list').length <= lists) await sleep(50);
    await httpSync(s);
    const after = await callWith(s, 'rs-2', 'param_route', { ...GOOD_ARGS, note: 'after restart' }, { ...GOOD_HEADERS, 'Mcp-Param-Region': 'elsewhere' });
    assert.equal(after.status, 400, `after the restart a mismatched Mcp-Param header must still be refused; got HTTP ${after.status} ${after.raw.slice(0, 300)}; tools/list sent to the upstream: ${s.upstreamMessages().filter((m) => m.method === 'tools/list').length - lists} since the restart`);
    assertRpcError(after, 400, -32020);
    await httpSync(s);
    assert.equal(forwardedTagged(s, 'param_route', 'after restart').length, 0, 'the mismatched call was forwarded');
  });

  test('one header repeated with names in different case (two lines): 400 / -32020, nothing forwarded', async (t) => {
    const s = await startParams(t);
    const msg = toolCall('dup-case', 'param_route', { ...GOOD_ARGS, note: 'dup-case' });
    const headers = { ...mcpHeadersFor(msg), ...GOOD_HEADERS, 'mcp-param-region': 'us-west1' }; // and Mcp-Param-Region
    const c = await rawConnect(s.target, t);
    await c.write(rawRequest('POST', '/mcp', { ...headers, Connection: 'close' }, JSON.stringify(msg)));
    const r = await c.response();
    assert.equal(r.status, 400, r.head);
    const body = JSON.parse(r.body);
    assert.equal(body.error && body.error.code, -32020, r.body);
    assert.equal(body.id, 'dup-case', r.body);
    await assertNotForwardedHttp(s, 'param_route');
  });

  test('a tool without marks ignores stray Mcp-Param headers, repeated ones too', async (t) => {
    const s = await startParams(t);
    const r = await callWith(s, 's1', 'echo', { region: 'us-west1', note: 'stray' }, {
      'Mcp-Param-Region': 'somewhere-else', 'Mcp-Param-Count': ['1', '2'], 'Mcp-Param-Bad': '=?base64?***?=',
    });
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result && !r.msg.result.isError, r.raw);
    await httpSync(s);
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments.note === 'stray').length, 1);
  });

  test('a tool whose marks are invalid (names equal ignoring case, a number-typed mark) asks for no header', async (t) => {
    const s = await startParams(t);
    for (const [name, args] of [['param_dup', { a: 'x', b: 'y' }], ['param_number', { a: 1.5, b: 'y' }]]) {
      const r = await callWith(s, `inv-${name}`, name, { ...args, note: name });
      assert.equal(r.status, 200, `${name}: ${r.raw}`);
      assert.ok(r.msg && r.msg.result && !r.msg.result.isError, `${name}: ${r.raw}`);
    }
    await httpSync(s);
    assert.equal(forwardedTagged(s, 'param_dup', 'param_dup').length, 1);
    assert.equal(forwardedTagged(s, 'param_number', 'param_number').length, 1);
  });

  test('a tool with a mark off the properties chain (under items) is invalid and asks for no header', async (t) => {
    // PROTOCOL.md §5.2: the path may use only properties chains, clients MUST drop a tool with an
    // invalid mark (so they send it no Mcp-Param header); params.h: such a tool gets no headers.
    const s = await startParams(t);
    const r = await callWith(s, 'offchain', 'param_offchain', { list: ['x'], b: 'y', note: 'offchain' });
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result && !r.msg.result.isError, r.raw);
    await httpSync(s);
    assert.equal(forwardedTagged(s, 'param_offchain', 'offchain').length, 1);
  });

  test('a gated tool: both rounds need matching headers; a refused round two leaves the state usable', async (t) => {
    const s = await startParams(t);
    const args = { path: '/srv/p.txt', content: 'c' };
    const path = { 'Mcp-Param-Path': '/srv/p.txt' };
    // Round one without its header: refused before the gate (no question).
    assertRpcError(await callWith(s, 'g0', 'write_file', args), 400, -32020);
    // Round one with it: the question.
    const q = assertAsked(asResponse(await callWith(s, 'g1', 'write_file', args, path)));
    await assertNotForwardedHttp(s, 'write_file');
    // Round two whose header disagrees, or lacks it: 400, nothing forwarded.
    assertRpcError(await rpc(s.target, confirmRetry('g2', 'write_file', args, q.state, ACCEPT), { headers: { 'Mcp-Param-Path': '/srv/other.txt' } }), 400, -32020);
    assertRpcError(await rpc(s.target, confirmRetry('g3', 'write_file', args, q.state, ACCEPT)), 400, -32020);
    await assertNotForwardedHttp(s, 'write_file');
    // Round two with the right header: forwarded once.
    const ok = asResponse(await rpc(s.target, confirmRetry('g4', 'write_file', args, q.state, ACCEPT), { headers: { 'mcp-param-path': b64('/srv/p.txt') } }));
    assert.ok(ok.result && ok.result.resultType === 'complete' && !ok.result.isError, ok.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('a legacy (2025-11-25) HTTP client is not asked for Mcp-Param headers', async (t) => {
    const s = await startParams(t);
    const sess = new LegacyHttpSession(s.target);
    await sess.initialize();
    const r = await sess.rpc({ jsonrpc: '2.0', id: 'l1', method: 'tools/call', params: { name: 'param_route', arguments: { ...GOOD_ARGS, note: 'legacy-client' } } });
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.msg && r.msg.result && !r.msg.result.isError, r.raw);
    await httpSync(s);
    assert.equal(forwardedTagged(s, 'param_route', 'legacy-client').length, 1);
  });
});
