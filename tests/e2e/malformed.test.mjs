// malformed.test.mjs: bad input from the client gets a JSON-RPC error, is never forwarded, and the
// next valid request on the same connection is still served.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import path from 'node:path';
import { ACCEPT, assertAsked, confirmRetry, policyPath, readJsonLines, scaled, startSluice, suiteOptions, tmpDir, toolCall, writePolicy } from './lib.mjs';

const GATE = policyPath('gate.yaml');
const META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}';
const call = (id, body) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{${body},${META}}}`;
const PARSE = [-32700];
const INVALID = [-32600];
const EITHER = [-32700, -32600];

/** An echo call whose argument string holds the given raw bytes. */
function withBytes(id, bytes) {
  const [head, tail] = call(id, '"name":"echo","arguments":{"s":"@@"}').split('@@');
  return Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]);
}

function deep(n) {
  return '['.repeat(n) + ']'.repeat(n);
}

// [label, line (string or Buffer, without the newline), allowed codes, allowed ids]
const CASES = [
  ['not JSON', 'this is not json', PARSE, [null]],
  ['truncated JSON', '{"jsonrpc":"2.0","id":1,"method":"tools/call"', PARSE, [null]],
  ['invalid UTF-8 bytes in a string', withBytes(5, [0xff, 0xfe]), PARSE, [null, 5]],
  ['overlong UTF-8 encoding', withBytes(6, [0xc0, 0xaf]), PARSE, [null, 6]],
  ['UTF-8-encoded surrogate', withBytes(7, [0xed, 0xa0, 0x80]), PARSE, [null, 7]],
  ['truncated UTF-8 sequence', withBytes(26, [0xe2, 0x82]), PARSE, [null, 26]],
  ['invalid UTF-8 in the tool name', Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"drop_table'), Buffer.from([0xff]), Buffer.from(`","arguments":{},${META}}}`)]), PARSE, [null, 8]],
  ['duplicate params.name', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}', PARSE, [null, 1]],
  ['duplicate name hiding a denied tool', call(2, '"name":"drop_table","arguments":{"table":"t"},"name":"echo"'), PARSE, [null, 2]],
  ['duplicate name hiding a confirm tool', call(3, '"name":"echo","arguments":{"path":"p","content":"c"},"name":"write_file"'), PARSE, [null, 3]],
  ['duplicate top-level id', '{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}', PARSE, [null, 1, 2]],
  ['duplicate method', `{"jsonrpc":"2.0","id":4,"method":"tools/list","method":"tools/call","params":{"name":"drop_table",${META}}}`, PARSE, [null, 4]],
  ['duplicate key inside arguments', call(9, '"name":"write_file","arguments":{"path":"safe","path":"/etc/passwd","content":"x"}'), PARSE, [null, 9]],
  ['duplicate key inside _meta', '{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientCapabilities":{}}}}', PARSE, [null, 10]],
  ['arrays nested 1000 deep', call(11, `"name":"echo","arguments":{"a":${deep(1000)}}`), EITHER, [null, 11]],
  ['objects nested 1000 deep', call(12, `"name":"echo","arguments":${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}`), EITHER, [null, 12]],
  ['a 17 MiB line (over the 16 MiB message limit)', call(13, `"name":"echo","arguments":{"s":"${'x'.repeat(17 * 1024 * 1024)}"}`), EITHER, [null, 13]],
  ['a batch array', '[{"jsonrpc":"2.0","id":14,"method":"tools/list"}]', INVALID, [null]],
  ['an empty array', '[]', INVALID, [null]],
  ['a bare number', '42', INVALID, [null]],
  ['a bare string', '"tools/list"', INVALID, [null]],
  ['null', 'null', INVALID, [null]],
  ['no method', '{"jsonrpc":"2.0","id":15}', INVALID, [15]],
  ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":16,"method":"tools/list"}', INVALID, [16]],
  ['no jsonrpc member', '{"id":17,"method":"tools/list"}', INVALID, [17]],
  ['object id', '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', INVALID, [null]],
  ['null id', '{"jsonrpc":"2.0","id":null,"method":"tools/list"}', INVALID, [null]],
  ['numeric method', '{"jsonrpc":"2.0","id":18,"method":5}', INVALID, [18]],
  ['trailing garbage after the object', '{"jsonrpc":"2.0","id":19,"method":"tools/list"} xyz', PARSE, [null, 19]],
  ['two objects on one line', '{"jsonrpc":"2.0","id":20,"method":"tools/list"}{"jsonrpc":"2.0","id":21,"method":"tools/list"}', PARSE, [null, 20, 21]],
  ['a comment', '{"jsonrpc":"2.0",/* c */"id":22,"method":"tools/list"}', PARSE, [null, 22]],
  ['NaN', call(23, '"name":"echo","arguments":{"n":NaN}'), PARSE, [null, 23]],
  ['single quotes', "{'jsonrpc':'2.0','id':24,'method':'tools/list'}", PARSE, [null]],
  ['a raw control character in a string', call(25, '"name":"echo","arguments":{"s":"a\u0001b"}'), PARSE, [null, 25]],
];

async function expectError(s, label, line, codes, ids) {
  s.sendRaw(Buffer.concat([Buffer.isBuffer(line) ? line : Buffer.from(line), Buffer.from('\n')]));
  const l = await s.next((m) => m && !('method' in m), 10000, `the error for ${label}`);
  const r = l.msg;
  assert.ok(r.error, `${label}: expected an error, got ${l.raw.slice(0, 500)}`);
  assert.ok(codes.includes(r.error.code), `${label}: code ${r.error.code}, expected one of ${codes}: ${l.raw.slice(0, 500)}`);
  assert.equal(typeof r.error.message, 'string');
  assert.equal(r.jsonrpc, '2.0');
  assert.ok('id' in r, `${label}: an error response carries id (null when unreadable): ${l.raw.slice(0, 500)}`);
  assert.ok(ids.some((id) => JSON.stringify(id) === JSON.stringify(r.id)), `${label}: id ${JSON.stringify(r.id)}, expected one of ${JSON.stringify(ids)}`);
}

async function expectServed(s, label) {
  const r = await s.request(toolCall(`ok-after-${label}`, 'echo', { fine: true }), 10000);
  assert.ok(r.result, `after ${label} the next request must be served: ${r.raw}`);
  assert.deepEqual(r.result.structuredContent, { echoed: { fine: true } });
}

function assertOnlyEchoForwarded(s, label) {
  const bad = s.upstreamMessages().filter((m) => m.method === 'tools/call' && !(m.params && m.params.name === 'echo' && m.params.arguments && (m.params.arguments.fine === true || '__sync' in m.params.arguments)));
  assert.deepEqual(bad.map((m) => m.raw.slice(0, 300)), [], `${label}: nothing of the bad line may reach the upstream`);
  assert.ok(!s.upstreamMessages().some((m) => m.parse_error), `${label}: sluice sent the upstream a non-JSON line`);
}

describe('malformed client lines', suiteOptions(), () => {
  for (const [label, line, codes, ids] of CASES) {
    test(label, async (t) => {
      const s = startSluice(t, { policy: GATE });
      await expectError(s, label, line, codes, ids);
      await expectServed(s, label);
      assertOnlyEchoForwarded(s, label);
    });
  }

  test('all of them on one connection, in one write, then a valid request', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const parts = CASES.filter(([label]) => !label.startsWith('a 17 MiB line')).map(([, line]) => Buffer.concat([Buffer.isBuffer(line) ? line : Buffer.from(line), Buffer.from('\n')]));
    s.sendRaw(Buffer.concat(parts));
    for (let i = 0; i < parts.length; i++) {
      const l = await s.next((m) => m && !('method' in m) && !String(m.id).startsWith('ok-after'), 10000, `error ${i + 1} of ${parts.length}`);
      assert.ok(l.msg.error, l.raw.slice(0, 300));
    }
    await expectServed(s, 'everything');
    assertOnlyEchoForwarded(s, 'everything');
  });

  test('a 5 MB request is served (under the 16 MiB limit; the SDKs read lines up to 10 MiB)', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const big = 'y'.repeat(5 * 1024 * 1024);
    const r = await s.request(toolCall('five', 'echo', { s: big }), 15000);
    assert.ok(r.result, r.raw.slice(0, 300));
    assert.equal(r.result.structuredContent.echoed.s.length, big.length);
    await expectServed(s, '5 MB');
  });

  test('a CRLF-terminated request is served (\\r is JSON whitespace)', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.sendRaw(JSON.stringify(toolCall('crlf', 'echo', { a: 1 })) + '\r\n');
    const r = await s.responseTo('crlf');
    assert.ok(r.result, r.raw);
  });

  test('a JSON-RPC response from the client is not forwarded and does not break the connection', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.sendRaw('{"jsonrpc":"2.0","id":77,"result":{}}\n{"jsonrpc":"2.0","id":78,"error":{"code":1,"message":"x"}}\n');
    await expectServed(s, 'client responses');
    assert.ok(!s.upstreamMessages().some((m) => m.id === 77 || m.id === 78), 'client responses must not reach the upstream');
  });
});

describe('a reply the upstream garbles', suiteOptions(), () => {
  // A child's reply that is not UTF-8 is dropped whole, its id with it: the call would wait
  // for ever. --upstream-timeout bounds the child's silence since the call went out.
  test('a stdio child\'s reply with invalid UTF-8: the call fails after --upstream-timeout, and the next one works', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\n');
    const s = startSluice(t, { policy, dir, args: ['--upstream-timeout', '2'] });
    const t0 = Date.now();
    const r = await s.request(toolCall('g1', 'garble', {}), scaled(15000));
    assert.ok(r.error, r.raw);
    assert.match(r.error.message, /said nothing for 2 s \(--upstream-timeout\)/, r.raw);
    assert.ok(Date.now() - t0 >= 1900, `failed after ${Date.now() - t0} ms, before the timeout`);
    assert.match(s.stderr, /upstream sent an invalid message/, 'the dropped reply is logged');
    // The client was told the call failed: the server is told to stop it, not left to run it.
    await s.sync();
    const call = s.upstreamCalls('garble')[0];
    const cancels = s.upstreamMessages().filter((m) => m.method === 'notifications/cancelled');
    assert.deepEqual(cancels.map((m) => m.params.requestId), [call.id], JSON.stringify(cancels));
    const ok = await s.request(toolCall('e1', 'echo', { after: 'garble' }));
    assert.ok(ok.result && !ok.result.isError, ok.raw);
  });
});

describe('a stdio child\'s reply over the 16 MiB message limit', suiteOptions(), () => {
  // Over HTTP such a reply fails its call at once (up_http.c). A child's line is dropped whole as
  // it comes in (chan.c); its first and last bytes tell whose reply it was when the id is a
  // member at the start (Python's SDK) or the last member (the TypeScript SDK): that call fails
  // at once, and the other calls' replies still come. Before, it waited for --upstream-timeout.
  const HUGE = 17 * 1024 * 1024;
  for (const order of ['id-first', 'id-last']) {
    test(`${order}: the call fails at once with a JSON-RPC error, journaled; another call's reply still comes`, async (t) => {
      const dir = tmpDir(t);
      const policy = writePolicy(dir, 'version: 1\n');
      const audit = path.join(dir, 'audit.jsonl');
      const s = startSluice(t, { policy, dir, audit, args: ['--upstream-timeout', '60'] });
      const t0 = Date.now();
      const big = s.request(toolCall('h1', 'huge', { bytes: HUGE, order }), scaled(50000));
      const small = s.request(toolCall('e1', 'sleep', { ms: 300 }), scaled(50000));
      const r = await big;
      assert.ok(r.error, r.raw.slice(0, 300));
      assert.equal(r.error.code, -32603, r.raw);
      assert.match(r.error.message, /the upstream server's reply is too large/, r.raw);
      assert.ok(Date.now() - t0 < scaled(30000), `failed after ${Date.now() - t0} ms: at once, not at --upstream-timeout`);
      assert.match(s.stderr, /upstream sent a reply over \d+ bytes to request \d+; dropped, and the call fails/);
      const ok = await small;
      assert.ok(ok.result && !ok.result.isError, ok.raw);
      const after = await s.request(toolCall('e2', 'echo', { after: order }));
      assert.ok(after.result && !after.result.isError, after.raw);
      await s.sync();
      const rec = readJsonLines(audit).filter((l) => !l.event && l.tool === 'huge');
      assert.equal(rec.length, 1, JSON.stringify(rec));
      assert.equal(rec[0].upstream, 'error', JSON.stringify(rec[0]));
    });
  }

  // Whose reply it is cannot be known without reading it whole: nothing fails on a guess. The
  // call's real answer, sent after it, is taken; without one it would fail at --upstream-timeout.
  for (const order of ['id-middle']) {
    test(`${order}: dropped, no call failed for it; the call's next reply is taken`, async (t) => {
      const dir = tmpDir(t);
      const policy = writePolicy(dir, 'version: 1\n');
      const s = startSluice(t, { policy, dir, args: ['--upstream-timeout', '60'] });
      const r = await s.request(toolCall('h1', 'huge', { bytes: HUGE, order, then: 'the real one' }), scaled(50000));
      assert.ok(r.result && !r.result.isError, r.raw.slice(0, 300));
      assert.equal(r.result.content[0].text, 'the real one');
      assert.match(s.stderr, /upstream sent a message over \d+ bytes; dropped \(not known as a reply/);
    });
  }

  // The server's own request (a sampling request with a large context) reaches no client, so
  // nobody would answer it: the server is answered at once with the error a client's message
  // too large gets, under the request's id, instead of waiting for ever. No call fails for it.
  for (const order of ['request', 'request-id-last']) {
    test(`${order}: the server is answered with a JSON-RPC error under its id; the call's next reply is taken`, async (t) => {
      const dir = tmpDir(t);
      const policy = writePolicy(dir, 'version: 1\n');
      const s = startSluice(t, { policy, dir, args: ['--upstream-timeout', '60'] });
      const r = await s.request(toolCall('h1', 'huge', { bytes: HUGE, order, then: 'the real one' }), scaled(50000));
      assert.ok(r.result && !r.result.isError, r.raw.slice(0, 300));
      assert.equal(r.result.content[0].text, 'the real one');
      assert.match(s.stderr, /upstream sent a request over \d+ bytes \(id \d+\); dropped, and the server is answered/);
      await s.sync();
      const call = s.upstreamCalls('huge')[0];
      const answer = s.upstreamMessages().filter((m) => m.method === undefined && m.id === call.id);
      assert.equal(answer.length, 1, JSON.stringify(answer));
      assert.equal(answer[0].error.code, -32700, answer[0].raw);
      assert.match(answer[0].error.message, /message too large/, answer[0].raw);
    });
  }
});

describe('bad tools/call params', suiteOptions(), () => {
  const BAD = [
    ['params is an array', `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`],
    ['no name', call(2, '"arguments":{}')],
    ['numeric name', call(3, '"name":5,"arguments":{}')],
    ['null name', call(4, '"name":null,"arguments":{}')],
  ];
  for (const [label, line] of BAD) {
    test(`${label}: an error, nothing forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(line + '\n');
      const l = await s.next((m) => m && !('method' in m), 5000, label);
      assert.ok(l.msg.error, l.raw);
      assert.ok([-32602, -32600].includes(l.msg.error.code), l.raw);
      await expectServed(s, label);
      assertOnlyEchoForwarded(s, label);
    });
  }

  for (const [label, args] of [['arguments is an array', '[1,2]'], ['arguments is a string', '"rm -rf /"'], ['arguments is null', 'null']]) {
    test(`confirm tool, ${label}: never forwarded unasked`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      s.sendRaw(call(1, `"name":"write_file","arguments":${args}`) + '\n');
      const l = await s.next((m) => m && !('method' in m), 5000, label);
      const m = l.msg;
      assert.ok(m.error || (m.result && (m.result.isError === true || m.result.resultType === 'input_required')), l.raw);
      await expectServed(s, label);
      assert.equal(s.upstreamCalls('write_file').length, 0);
    });
  }

  test('a NUL inside a denied tool name does not reach the upstream as that tool', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.sendRaw(call(1, '"name":"drop_table\\u0000x","arguments":{"table":"t"}') + '\n');
    await s.next((m) => m && !('method' in m), 5000, 'the answer to the NUL name');
    s.sendRaw(call(2, '"name":"drop_table\\u0000","arguments":{"table":"t"}') + '\n');
    await s.next((m) => m && !('method' in m), 5000, 'the answer to the trailing NUL name');
    await expectServed(s, 'NUL names');
    assert.equal(s.upstreamCalls('drop_table').length, 0, 'drop_table must never run');
  });

  test('a lone surrogate in a confirm tool\'s arguments is refused, never forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.sendRaw(call(1, '"name":"write_file","arguments":{"path":"a\\ud800","content":"c"}') + '\n');
    const l = await s.next((m) => m && !('method' in m), 5000, 'the answer');
    const m = l.msg;
    if (m.result && m.result.resultType === 'input_required') {
      // If it was asked at all, accepting must still not run a value the person could not see.
      const q = assertAsked({ ...m, raw: l.raw });
      s.sendRaw(JSON.stringify(confirmRetry(2, 'write_file', { path: 'a\ud800', content: 'c' }, q.state, ACCEPT)) + '\n');
      await s.next((x) => x && !('method' in x), 5000, 'round two');
    } else {
      assert.ok(m.error || (m.result && m.result.isError === true), l.raw);
    }
    await expectServed(s, 'lone surrogate');
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('a number that is not a finite double in a confirm tool\'s arguments is never forwarded unasked', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.sendRaw(call(1, '"name":"write_file","arguments":{"path":"a","content":"c","n":1e400}') + '\n');
    const l = await s.next((m) => m && !('method' in m), 5000, 'the answer');
    const m = l.msg;
    assert.ok(m.error || (m.result && (m.result.isError === true || m.result.resultType === 'input_required')), l.raw);
    await expectServed(s, '1e400');
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('an integer beyond 2^53 in a confirm tool: refused, or forwarded with exactly the approved digits', async (t) => {
    const s = startSluice(t, { policy: GATE });
    s.sendRaw(call(1, '"name":"write_file","arguments":{"path":"a","content":"c","n":9007199254740993}') + '\n');
    const l = await s.next((m) => m && !('method' in m), 5000, 'round one');
    if (l.msg.result && l.msg.result.resultType === 'input_required') {
      const q = assertAsked({ ...l.msg, raw: l.raw });
      assert.ok(q.message.includes('9007199254740993'), `the person must see the real digits: ${q.message}`);
      // A retry with the neighbouring value that rounds to the same double must not pass as the same call.
      s.sendRaw(call(2, `"name":"write_file","arguments":{"path":"a","content":"c","n":9007199254740992},"inputResponses":{"sluice.confirm":{"action":"accept","content":{"approve":true}}},"requestState":${JSON.stringify(q.state)}`) + '\n');
      const r2 = await s.next((m) => m && !('method' in m), 5000, 'round two');
      await s.sync();
      const calls = s.upstreamCalls('write_file');
      for (const c of calls) {
        assert.ok(c.raw.includes('9007199254740993') && !c.raw.includes('9007199254740992'), `forwarded digits differ from the approved ones: ${c.raw}; client got ${r2.raw}`);
      }
    } else {
      assert.ok(l.msg.error || (l.msg.result && l.msg.result.isError === true), l.raw);
      await s.sync();
      assert.equal(s.upstreamCalls('write_file').length, 0);
    }
  });
});
