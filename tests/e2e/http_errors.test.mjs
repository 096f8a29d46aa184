// http_errors.test.mjs: every HTTP error status the front answers on /mcp carries a JSON-RPC
// error body (application/json, id null unless the request's id is known), because the MCP SDKs
// parse an error response's body as JSON-RPC. Each status is provoked the way a client would
// meet it; raw TCP where Node's client would not send the bytes.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { deadline, policyPath, suiteOptions, toolCall } from './lib.mjs';
import {
  get, httpSync, mcpHeadersFor, rawConnect, rawRequest, rpc, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

/** Asserts that a raw or parsed reply is status with a JSON-RPC error body; returns the error. */
function assertJsonError(status, headers, body, want, what, code = undefined) {
  assert.equal(status, want, `${what}: status ${status}: ${body}`);
  assert.match(String(headers['content-type']), /^application\/json/, `${what}: Content-Type ${headers['content-type']}`);
  let msg;
  assert.doesNotThrow(() => { msg = JSON.parse(body); }, `${what}: body is not JSON: ${JSON.stringify(body)}`);
  assert.equal(msg.jsonrpc, '2.0', `${what}: ${body}`);
  assert.ok('id' in msg, `${what}: no id: ${body}`);
  assert.ok(msg.error && Number.isInteger(msg.error.code) && typeof msg.error.message === 'string' && msg.error.message.length > 0, `${what}: not a JSON-RPC error: ${body}`);
  assert.ok(!('result' in msg), `${what}: ${body}`);
  if (code !== undefined) assert.equal(msg.error.code, code, `${what}: ${body}`);
  return msg;
}

async function rawJsonError(s, t, bytes, want, what, code) {
  const c = await rawConnect(s.target, t);
  await c.write(bytes);
  const r = await c.response();
  return assertJsonError(r.status, r.headers, r.body, want, what, code);
}

describe('HTTP: error statuses carry JSON-RPC error bodies', suiteOptions(), () => {
  test('400 (head and body), 403, 404 (path, session), 405, 406, 413, 415, 431, 501, 505', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--max-body', '4096'] });
    const call = toolCall(7, 'echo', { marker: 'errors' });

    // 400: an unparseable body keeps -32700; a request with a known id but an invalid envelope names it.
    const parse = await rpc(s.target, call, { rawBody: '{"jsonrpc":"2.0",', modern: false });
    assertJsonError(parse.status, parse.headers, parse.raw, 400, 'unparseable body', -32700);
    const bad = await rpc(s.target, { jsonrpc: '2.0', id: 41, method: 'tools/list', params: {} }, { modern: false, headers: { 'MCP-Protocol-Version': '2026-07-28' } });
    const badMsg = assertJsonError(bad.status, bad.headers, bad.raw, 400, 'modern header, legacy body');
    assert.equal(badMsg.id, 41, 'the id is named when it is known');
    await rawJsonError(s, t, 'GARBAGE\r\n\r\n', 400, 'a malformed head', -32600);

    // 403: a foreign Origin.
    const origin = await rpc(s.target, call, { headers: { Origin: 'http://evil.example' } });
    assertJsonError(origin.status, origin.headers, origin.raw, 403, 'foreign Origin');

    // 404: an unknown session (-32001), and a path that is not /mcp.
    const sess = await rpc(s.target, { jsonrpc: '2.0', id: 'q', method: 'tools/list' }, { modern: false, headers: { 'Mcp-Session-Id': 'f'.repeat(32), 'MCP-Protocol-Version': '2025-11-25' } });
    assertJsonError(sess.status, sess.headers, sess.raw, 404, 'unknown session', -32001);
    const path = await get(s.target, '/nope');
    assertJsonError(path.status, path.headers, path.text, 404, 'unknown path');

    // 405: PUT, and GET or DELETE without a session.
    const put = await rawJsonError(s, t, rawRequest('PUT', '/mcp', { 'Content-Type': 'application/json' }, '{}'), 405, 'PUT /mcp', -32600);
    assert.equal(put.id, null);
    await rawJsonError(s, t, rawRequest('GET', '/mcp', { Accept: 'text/event-stream' }), 405, 'GET /mcp without a session');
    await rawJsonError(s, t, rawRequest('DELETE', '/mcp'), 405, 'DELETE /mcp without a session');

    // 406 and 415: media types.
    const na = await rpc(s.target, call, { headers: { Accept: 'application/json' } });
    assertJsonError(na.status, na.headers, na.raw, 406, 'Accept json only', -32600);
    const um = await rpc(s.target, call, { headers: { 'Content-Type': 'text/plain' } });
    assertJsonError(um.status, um.headers, um.raw, 415, 'text/plain body', -32600);

    // 413 (the head alone is enough), 431, 501, 505.
    await rawJsonError(s, t, rawRequest('POST', '/mcp', { ...mcpHeadersFor(call), 'Content-Length': 5000 }), 413, 'over --max-body', -32600);
    await rawJsonError(s, t, rawRequest('POST', '/mcp', { ...mcpHeadersFor(call), 'X-Pad': 'a'.repeat(17 * 1024) }), 431, 'a 17 KiB head', -32600);
    const body = JSON.stringify(call);
    await rawJsonError(s, t, rawRequest('POST', '/mcp', { ...mcpHeadersFor(call), 'Transfer-Encoding': 'chunked' }, `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`), 501, 'chunked', -32600);
    await rawJsonError(s, t, 'POST /mcp HTTP/2.0\r\n\r\n', 505, 'HTTP/2.0', -32600);

    await httpSync(s);
    assert.equal(s.upstreamCalls('echo').length, 0, 'none of the refused calls reached the upstream');
  });

  test('401 without a bearer token', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer'] });
    const r = await rpc(s.target, toolCall(1, 'echo', { marker: 'x' }));
    assertJsonError(r.status, r.headers, r.raw, 401, 'no Authorization');
  });

  test('408 for a stalled request', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--request-timeout', '1'] });
    const c = await rawConnect(s.target, t);
    await c.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl');
    assert.ok(await c.waitClosed(5000), 'the stalled request is cut off');
    const r = await c.response(100);
    assertJsonError(r.status, r.headers, r.body, 408, 'stalled head', -32000);
  });

  test('503 at --max-connections (the 503 of a drain: http_ops)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--max-connections', '1'] });
    const first = await rawConnect(s.target, t);
    await first.write(rawRequest('GET', '/healthz'));
    assert.equal((await first.response()).status, 200);
    const second = await rawConnect(s.target, t);
    const r = await second.response();
    assertJsonError(r.status, r.headers, r.body, 503, 'over --max-connections', -32000);
  });

  test('a 64 MiB body gets 413 with a JSON-RPC body, without sluice reading it all', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const call = toolCall(1, 'echo', { marker: 'huge' });
    const size = 64 * 1024 * 1024;
    const sock = net.connect({ host: '127.0.0.1', port: s.port });
    t.after(() => sock.destroy());
    let text = '';
    let written = 0;
    sock.on('data', (d) => { text += d.toString('latin1'); });
    sock.on('error', () => {});
    await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
    sock.write(rawRequest('POST', '/mcp', { ...mcpHeadersFor(call), 'Content-Length': size }));
    // Keep sending until sluice closes or refuses; the reply must arrive meanwhile.
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const end = Date.now() + deadline(15000);
    while (written < size && !sock.destroyed && Date.now() < end && !/\r\n\r\n\{.*\}\}/s.test(text)) {
      const ok = sock.write(chunk);
      written += chunk.length;
      if (!ok) await new Promise((resolve) => { const tm = setTimeout(resolve, 200); sock.once('drain', () => { clearTimeout(tm); resolve(); }); });
    }
    const until = Date.now() + deadline(5000);
    while (!/\r\n\r\n\{.*\}\}/s.test(text) && Date.now() < until && !sock.destroyed) await new Promise((res) => setTimeout(res, 20));
    const head = text.slice(0, text.indexOf('\r\n\r\n'));
    const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
    assert.ok(m, `no response; got ${JSON.stringify(text.slice(0, 300))} after writing ${written} bytes`);
    const headers = Object.fromEntries(head.split('\r\n').slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    assertJsonError(Number(m[1]), headers, text.slice(head.length + 4, head.length + 4 + Number(headers['content-length'])), 413, '64 MiB body', -32600);
    assert.ok(written < size, `the reply came only after all ${written} bytes were sent`);
    assert.equal((await get(s.target, '/healthz')).status, 200, 'sluice serves on');
    await httpSync(s);
    assert.equal(s.upstreamCalls('echo').length, 0);
  });
});
