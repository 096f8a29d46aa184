// http_upstream.test.mjs: sluice's own HTTP/1.1 client to a Streamable HTTP upstream
// (--upstream URL), against a scripted server (raw_http_upstream.mjs) that writes every byte of its
// responses itself: framing by Content-Length, chunked (awkward chunk sizes, extensions, trailers)
// and connection close; JSON and event-stream replies split across many TCP writes; keep-alive
// reuse and its limits; concurrent calls answered out of order; every kind of failure (each must
// give the client exactly one JSON-RPC error for its id, and the POST is never retried); the 2025
// session (Mcp-Session-Id, MCP-Protocol-Version, 404 -> initialize again); the 2026-07-28 mirrored
// headers, Mcp-Param-* from the tools' x-mcp-header marks included; Authorization (the client's never passes, SLUICE_UPSTREAM_AUTHORIZATION does); https
// with --upstream-ca; and the gate in front of the transport.
//
// sluice is driven over stdio (--upstream URL with the stdio front) unless the test needs the
// HTTP front (--listen). Every wait has a deadline; every server and process is closed in an
// after hook.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as lib from './lib.mjs';
import {
  RawUpstream, chunkedBytes, headBytes, mcpParamHeaders, sleep, splitAt, splitBytes, sseBytes,
} from './raw_http_upstream.mjs';

const { SluiceProc, SLUICE_BIN, cleanups, suiteOptions, toolCall, confirmRetry, assertAsked, resultText } = lib;
const scaled = (ms) => (typeof lib.scaled === 'function' ? lib.scaled(ms) : ms);
const LINE_MS = lib.LINE_DEADLINE_MS ?? 5000;
const MODERN = '2026-07-28';
const SL_MAX_MESSAGE = 16 * 1024 * 1024; // proxy/base.h
const ERAS = ['modern', 'legacy'];

const POLICY_TEXT = `version: 1
defaults:
  action: allow
  confirm_ttl: 120
tools:
  write_file:
    action: confirm
  drop_table:
    action: deny
`;

let workDir;
let policyFile;

before(() => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-e2e-httpup-'));
  policyFile = path.join(workDir, 'policy.yaml');
  fs.writeFileSync(policyFile, POLICY_TEXT);
});
after(() => {
  if (workDir && !process.env.E2E_KEEP_TMP) fs.rmSync(workDir, { recursive: true, force: true });
});

// ===== harness =====

async function startUpstream(t, defer, opts = {}) {
  const up = new RawUpstream(opts);
  await up.listen(opts.port ?? 0);
  defer(() => up.close());
  return up;
}

/**
 * Spawns sluice with --upstream url. opts.listen: use the HTTP front on 127.0.0.1:0 (the port is
 * read from the log). opts.env, opts.args. Returns lib's SluiceProc (stdio lines, stderr, kill()
 * with the sanitizer check).
 */
async function startSluice(t, defer, url, opts = {}) {
  assert.ok(fs.existsSync(SLUICE_BIN), `sluice binary not found at ${SLUICE_BIN}`);
  const args = ['--policy', policyFile, '--upstream', url, ...(opts.args ?? [])];
  if (opts.listen) args.push('--listen', '127.0.0.1:0', '--drain-grace', '1');
  const env = { ...process.env, ...(opts.env ?? {}) };
  delete env.SLUICE_STATE_KEY;
  if (!(opts.env && 'SLUICE_UPSTREAM_AUTHORIZATION' in opts.env)) delete env.SLUICE_UPSTREAM_AUTHORIZATION;
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const cmd = typeof lib.sluiceCommand === 'function' ? lib.sluiceCommand(args) : { file: SLUICE_BIN, args, memcheck: null };
  const proc = spawn(cmd.file, cmd.args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const s = new SluiceProc(proc, { args, memcheck: cmd.memcheck });
  defer(() => s.kill());
  if (opts.listen) {
    const m = await waitLog(s, /listening on http:\/\/\S+ \(port (\d+)\)/, 10000);
    s.port = Number(m[1]);
  }
  return s;
}

async function waitLog(s, re, ms = LINE_MS, from = 0) {
  const end = Date.now() + scaled(ms);
  while (Date.now() < end) {
    const m = re.exec(s.stderr.slice(from));
    if (m) return m;
    if (s.exited) break;
    await sleep(20);
  }
  throw new Error(`sluice's stderr did not match ${re} within ${ms} ms (exited: ${s.exited}); stderr:\n${s.stderr.slice(-4000)}`);
}

let idSeq = 0;
function nid(tag) {
  idSeq += 1;
  return `${tag}-${idSeq}`;
}

/** A tools/call over stdio; resolves with the response (result or error). */
function call(s, name, args = {}, opts = {}) {
  const id = opts.id ?? nid(name);
  return s.request(toolCall(id, name, args, opts), opts.ms).then((r) => ({ ...r, sentId: id }));
}

function okText(r) {
  assert.ok(r.result, `expected a result, got ${r.raw}`);
  assert.notEqual(r.result.isError, true, r.raw);
  return resultText(r);
}

/** The response must be a JSON-RPC error (not a result) for the id. */
function assertError(r, re) {
  assert.ok(r.error && !('result' in r), `expected a JSON-RPC error, got ${r.raw}`);
  assert.equal(typeof r.error.code, 'number', r.raw);
  assert.equal(typeof r.error.message, 'string', r.raw);
  if (re) assert.match(r.error.message, re, r.raw);
}

/** Nothing else came for these ids (a second answer would be a duplicate or a retry's). */
function assertNoMoreFor(s, ids) {
  const extra = s.lines.filter((l) => l.msg && !('method' in l.msg) && ids.includes(l.msg.id));
  assert.deepEqual(extra.map((l) => l.raw), [], 'more than one answer for an id');
}

/** A modern tools/call with the envelope, and its upstream id's JSON-RPC answer text. */
function echoText(args) {
  return JSON.stringify(args);
}

/** The POSTs of the given tool, after a barrier call made everything before it visible. */
async function postsAfterSync(s, up, name) {
  const r = await call(s, 'echo', { barrier: name });
  okText(r);
  return up.calls(name);
}

// ===== framing =====

describe('replies framed every way HTTP/1.1 allows', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`Content-Length, chunked and close-delimited JSON replies, split at awkward places (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era });
      const text = 'héllo ✓ 𝄞 — "quoted" \\ back\nnewline';
      // Content-Length, head split inside the status line and a header name, body split inside
      // multi-byte UTF-8 sequences, one byte per write.
      up.tool('cl_split', async (req, res, msg) => {
        const body = Buffer.from(JSON.stringify(up.textResult(msg, text)), 'utf8');
        const head = headBytes(200, [['content-TYPE', 'application/json; charset=utf-8'], ['X-Padding', 'a'.repeat(300)], ['CONTENT-length', String(body.length)]]);
        const all = Buffer.concat([head, body]);
        await res.write([...splitAt(all, [3, 9, 14, 15, 40, head.length - 1, head.length + 1]).slice(0, 7), ...splitBytes(all.subarray(head.length + 1), [1])], 0);
      });
      // A bare-LF head, a status line without a reason phrase, OWS around a value.
      up.tool('cl_lf', async (req, res, msg) => {
        const body = Buffer.from(JSON.stringify(up.textResult(msg, 'lf head')));
        await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', ` ${body.length}\t`]], { lf: true, reason: null }), body]);
      });
      // Chunked: sizes 1, 2, 3, 5, 8, 13, extensions, capital hex with leading zeros, trailers,
      // and the bytes written 3 at a time (splits inside size lines, between CR and LF, and
      // inside the last-chunk and the final CRLF).
      up.tool('chunked', async (req, res, msg) => {
        const body = JSON.stringify(up.textResult(msg, text));
        const bytes = Buffer.concat([
          headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]),
          chunkedBytes(body, [1, 2, 3, 5, 8, 13], { ext: ';foo=bar;name="x y"', upper: true, zeros: 2, trailers: [['X-Checksum', 'abc'], ['X-Other', 'def']] }),
        ]);
        await res.write(splitBytes(bytes, [3]), 0);
      });
      // Chunked in two big writes with a delay, the split inside "\r\n" after a chunk's data.
      up.tool('chunked_slow', async (req, res, msg) => {
        const body = JSON.stringify(up.textResult(msg, 'slow chunks'));
        const bytes = Buffer.concat([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]), chunkedBytes(body, [7])]);
        const cut = bytes.indexOf('\r\n', bytes.indexOf('\r\n\r\n') + 4 + 3 + 7) + 1;
        await res.write(splitAt(bytes, [cut, bytes.length - 3, bytes.length - 1]), 40);
      });
      // No length: the body ends when the server closes (Connection: close, and HTTP/1.0).
      up.tool('close_delim', async (req, res, msg) => {
        const body = Buffer.from(JSON.stringify(up.textResult(msg, text)));
        await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Connection', 'close']]), ...splitBytes(body, [10])], 2);
        await res.end();
      });
      up.tool('close_http10', async (req, res, msg) => {
        const body = Buffer.from(JSON.stringify(up.textResult(msg, 'http/1.0')));
        await res.write([headBytes(200, [['Content-Type', 'application/json']], { version: 'HTTP/1.0' }), body.subarray(0, 5), body.subarray(5)], 20);
        await res.end();
      });
      const s = await startSluice(t, defer, up.url());
      assert.equal(okText(await call(s, 'cl_split', {})), text);
      assert.equal(okText(await call(s, 'cl_lf', {})), 'lf head');
      assert.equal(okText(await call(s, 'chunked', {})), text);
      assert.equal(okText(await call(s, 'chunked_slow', {})), 'slow chunks');
      assert.equal(okText(await call(s, 'close_delim', {})), text);
      assert.equal(okText(await call(s, 'close_http10', {})), 'http/1.0');
      // Calls after close-delimited replies still work (on new connections).
      assert.equal(okText(await call(s, 'echo', { after: 'close' })), echoText({ after: 'close' }));
      for (const name of ['cl_split', 'cl_lf', 'chunked', 'chunked_slow', 'close_delim', 'close_http10']) {
        assert.equal(up.calls(name).length, 1, `${name}: exactly one POST`);
      }
    });

    test(`event-stream replies: progress before the result, comments, CRLF, bare CR, multi-line data, many delayed writes (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era });
      const answer = { big: 'x'.repeat(200), nested: { a: [1, 2, 3], s: 'ünï' } };
      const stream = (msg, eol) => {
        const token = msg.params && msg.params._meta && msg.params._meta.progressToken;
        const progress = (n) => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: n, total: 2, message: `step ${n}` } });
        const result = JSON.stringify(up.textResult(msg, JSON.stringify(answer)), null, 2); // several lines
        return sseBytes([
          { comment: ' stream opened' },
          { data: '', id: 'prime' },
          progress(1),
          { comment: 'keep-alive' },
          { data: JSON.stringify(progress(2)), event: 'message', id: 'ev-2', retry: 1000 },
          { data: result, event: 'message', id: 'ev-3' },
        ], { eol });
      };
      // Chunked, CRLF event stream, 5 bytes per TCP write.
      up.tool('sse_chunked', async (req, res, msg) => {
        const bytes = Buffer.concat([headBytes(200, [['Content-Type', 'text/event-stream; charset=utf-8'], ['Cache-Control', 'no-cache'], ['Transfer-Encoding', 'chunked']]), chunkedBytes(stream(msg, '\r\n'), [9, 4, 31])]);
        await res.write(splitBytes(bytes, [5, 3, 11]), 1);
      });
      // Close-delimited, LF event stream.
      up.tool('sse_close', async (req, res, msg) => {
        await res.write([headBytes(200, [['Content-Type', 'text/event-stream']]), ...splitBytes(stream(msg, '\n'), [64])], 5);
        await res.end();
      });
      // Content-Length framed event stream.
      up.tool('sse_length', async (req, res, msg) => {
        const body = stream(msg, '\r\n');
        await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Content-Length', String(body.length)]]), ...splitBytes(body, [100])], 3);
      });
      // Lines ended by a lone CR, as the event-stream rules allow.
      up.tool('sse_cr', async (req, res, msg) => {
        await res.write([headBytes(200, [['Content-Type', 'text/event-stream']]), ...splitBytes(stream(msg, '\r'), [7, 2, 40])], 2);
        await res.end();
      });
      // CRLF with every write ending between its CR and its LF: one line end, not an empty line.
      up.tool('sse_crlf_cut', async (req, res, msg) => {
        const body = stream(msg, '\r\n');
        const cuts = [];
        for (let i = body.indexOf('\r\n'); i >= 0; i = body.indexOf('\r\n', i + 2)) cuts.push(i + 1);
        await res.write([headBytes(200, [['Content-Type', 'text/event-stream']]), ...splitAt(body, cuts)], 2);
        await res.end();
      });
      const s = await startSluice(t, defer, up.url());
      for (const name of ['sse_chunked', 'sse_close', 'sse_length', 'sse_cr', 'sse_crlf_cut']) {
        const token = `tok-${name}`;
        const id = nid(name);
        s.send(toolCall(id, name, {}, { meta: { progressToken: token } }));
        const isProgress = (m) => m.method === 'notifications/progress';
        const isAnswer = (m) => !('method' in m) && m.id === id;
        const first = await s.next((m) => isProgress(m) || isAnswer(m), undefined, `progress or the answer for ${name}`);
        assert.ok(isProgress(first.msg), `${name}: the progress notification must come before the result, got ${first.raw}`);
        assert.equal(first.msg.params.progressToken, token, `${name}: the client's own token: ${first.raw}`);
        assert.equal(first.msg.params.progress, 1, first.raw);
        const second = await s.next((m) => isProgress(m) || isAnswer(m), undefined, `progress 2 for ${name}`);
        assert.ok(isProgress(second.msg), `${name}: second progress before the result: ${second.raw}`);
        assert.equal(second.msg.params.progress, 2, second.raw);
        assert.equal(second.msg.params.progressToken, token, second.raw);
        const r = await s.responseTo(id);
        assert.deepEqual(JSON.parse(okText(r)), answer, `${name}: the multi-line data arrives as one message`);
        assert.equal(up.calls(name).length, 1);
      }
      await call(s, 'echo', { barrier: 1 });
      assert.deepEqual(s.lines.filter((l) => l.msg.method === 'notifications/progress').map((l) => l.raw), [], 'no stray progress');
    });
  }

  for (const era of ERAS) {
    test(`an event stream that stays open after the answer: the answer is passed on at once; a ping inside it is answered by POST (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era });
      const sseHead = headBytes(200, [['Content-Type', 'text/event-stream'], ['Transfer-Encoding', 'chunked']]);
      up.tool('linger', async (req, res, msg) => {
        await res.write([sseHead, chunkedBytes(sseBytes([up.textResult(msg, 'early')])).subarray(0, -5)]); // no last-chunk yet
        await sleep(scaled(1500));
        await res.write([chunkedBytes(sseBytes([{ comment: 'bye' }])).subarray(0, -5), '0\r\n\r\n']);
      });
      up.tool('pinged', async (req, res, msg) => {
        const pingId = `srv-ping-${msg.id}`;
        await res.write([sseHead, chunkedBytes(sseBytes([{ jsonrpc: '2.0', id: pingId, method: 'ping' }])).subarray(0, -5)]);
        const pong = await up.waitFor(() => up.requests.find((q) => q.json && q.json.id === pingId && !('method' in q.json)), scaled(LINE_MS), 'the answer to the server\'s ping').catch(() => null);
        await res.write([chunkedBytes(sseBytes([up.textResult(msg, pong ? `pong ${JSON.stringify(pong.json.result)}` : 'no pong')]))]);
      });
      const s = await startSluice(t, defer, up.url());
      okText(await call(s, 'echo', { warm: 1 }));
      const t0 = Date.now();
      assert.equal(okText(await call(s, 'linger')), 'early');
      assert.ok(Date.now() - t0 < scaled(1200), `the answer waited for the end of the stream (${Date.now() - t0} ms)`);
      assert.equal(okText(await call(s, 'pinged')), 'pong {}');
      const pongs = up.requests.filter((q) => q.json && typeof q.json.id === 'string' && q.json.id.startsWith('srv-ping-'));
      assert.equal(pongs.length, 1, 'the ping is answered exactly once');
      if (era === 'legacy') assert.ok(pongs[0].headers['mcp-session-id'], `the answer goes in the session: ${pongs[0].headText}`);
      okText(await call(s, 'echo', { after: 'linger' }));
    });
  }

  test('interim 100 Continue and 103 Early Hints before the real response are skipped', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.tool('interim', async (req, res, msg) => {
      const body = Buffer.from(JSON.stringify(up.textResult(msg, 'after interim')));
      await res.write(headBytes(100, []));
      await sleep(30);
      await res.write([headBytes(103, [['Link', '</style.css>; rel=preload']]), headBytes(102, [], { reason: 'Processing' })]);
      await sleep(30);
      await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]), body]);
    });
    // All in one write.
    up.tool('interim_one', async (req, res, msg) => {
      const body = Buffer.from(JSON.stringify(up.textResult(msg, 'one write')));
      await res.write(Buffer.concat([headBytes(100, []), headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]), body]));
    });
    const s = await startSluice(t, defer, up.url());
    assert.equal(okText(await call(s, 'interim')), 'after interim');
    assert.equal(okText(await call(s, 'interim_one')), 'one write');
    assert.equal(up.calls('interim').length, 1);
  });

  test('a 2 MiB reply in 64 KiB chunks arrives byte for byte', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const big = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(Math.ceil((2 << 20) / 36)).slice(0, 2 << 20);
    up.tool('big', async (req, res, msg) => {
      const body = JSON.stringify(up.textResult(msg, big));
      await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]), ...splitBytes(chunkedBytes(body, [65536, 1000, 3]), [100000])]);
    });
    const s = await startSluice(t, defer, up.url());
    const r = await call(s, 'big', {}, { ms: scaled(15000) });
    assert.equal(okText(r).length, big.length);
    assert.equal(resultText(r), big);
  });
});

// ===== keep-alive =====

describe('keep-alive connections', suiteOptions(), () => {
  test('sequential calls reuse one TCP connection (JSON and chunked event-stream replies)', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.tool('sse', async (req, res, msg) => {
      await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Transfer-Encoding', 'chunked']]), chunkedBytes(sseBytes([{ comment: 'x' }, up.textResult(msg, 'sse ok')]), [10])]);
    });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { warm: 1 }));
    await startupListDone(up); // the start-up tools/list may have had its own connection
    const conns = up.tcpConnections;
    const ids = [];
    for (let i = 0; i < 6; i++) {
      const name = i % 2 ? 'sse' : 'echo';
      const r = await call(s, name, { i });
      assert.equal(okText(r), name === 'sse' ? 'sse ok' : echoText({ i }));
      const posts = up.calls(name);
      ids.push(posts[posts.length - 1].connId);
    }
    assert.equal(new Set(ids).size, 1, `all on one connection: ${JSON.stringify(ids)}`);
    assert.equal(up.tcpConnections, conns, 'no new TCP connection for sequential calls');
    assert.ok(!up.requests.some((r) => r.pipelined), 'never two requests in flight on one connection');
  });

  test('Connection: close, HTTP/1.0 and bytes after the body: the connection is not used again', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const jsonReply = (msg, text, headers, opts = {}) => {
      const body = Buffer.from(JSON.stringify(up.textResult(msg, text)));
      return Buffer.concat([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ...headers], opts), body]);
    };
    // Connection: close, but the server leaves the socket open: sluice must not send on it.
    up.tool('conn_close', async (req, res, msg) => {
      await res.write(jsonReply(msg, 'closing', [['Connection', 'close']]));
    });
    up.tool('conn_close_list', async (req, res, msg) => {
      await res.write(jsonReply(msg, 'closing too', [['Connection', 'x-foo, Close']]));
    });
    // HTTP/1.0 with a length and no keep-alive: not persistent either.
    up.tool('http10', async (req, res, msg) => {
      await res.write(jsonReply(msg, 'one-oh', [], { version: 'HTTP/1.0' }));
    });
    // A bogus second response right behind the body: framing disagreement, never reused.
    up.tool('trailing_junk', async (req, res, msg) => {
      const bogus = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: Number(msg.id) + 1, result: { resultType: 'complete', content: [{ type: 'text', text: 'SMUGGLED' }] } }));
      await res.write(Buffer.concat([jsonReply(msg, 'junk follows', []), headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(bogus.length)]]), bogus]));
    });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { warm: 1 }));
    for (const [name, text] of [['conn_close', 'closing'], ['conn_close_list', 'closing too'], ['http10', 'one-oh'], ['trailing_junk', 'junk follows']]) {
      const r = await call(s, name);
      assert.equal(okText(r), text, name);
      const used = up.calls(name)[0].connId;
      const next = await call(s, 'echo', { after: name });
      assert.equal(okText(next), echoText({ after: name }), `the call after ${name} gets its own answer, not a leftover`);
      const later = up.requests.filter((q) => q.connId === used && q.seq > up.calls(name)[0].seq);
      assert.deepEqual(later.map((q) => q.text), [], `nothing more was sent on the connection that ${name} ended`);
    }
    const all = await postsAfterSync(s, up, 'echo');
    assert.ok(all.length >= 5);
  });

  test('an idle pooled connection closed by the server is not used for the next call', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { n: 1 }));
    await startupListDone(up);
    // The server closes every idle keep-alive connection (FIN), as servers do on their idle timeout.
    const idle = up.conns.filter((c) => !c.closed);
    assert.ok(idle.length >= 1);
    for (const c of idle) c.sock.end();
    await up.waitFor(() => idle.every((c) => c.closed), scaled(3000), 'the idle connections to close');
    await sleep(150);
    for (let i = 2; i <= 3; i++) {
      const r = await call(s, 'echo', { n: i });
      assert.equal(okText(r), echoText({ n: i }), `call ${i} after the server closed its idle connections`);
    }
    assert.equal(up.calls('echo').filter((q) => q.json.params.arguments.n === 2).length, 1, 'one POST, not retried');
    // Also a reset (RST) instead of a FIN.
    for (const c of up.conns.filter((x) => !x.closed)) c.sock.resetAndDestroy();
    await sleep(150);
    assert.equal(okText(await call(s, 'echo', { n: 4 })), echoText({ n: 4 }));
  });
});

// ===== concurrency =====

describe('concurrent calls', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`8 calls in flight at once, answered out of order on separate connections, each get their own answer (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era });
      const N = 8;
      const held = [];
      let release;
      const allIn = new Promise((resolve) => { release = resolve; });
      up.tool('ooo', async (req, res, msg) => {
        held.push({ req, res, msg });
        if (held.length === N) release();
        await allIn;
        const i = msg.params.arguments.i;
        await sleep((N - i) * 15); // the last one sent is answered first
        if (i % 2) {
          await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Transfer-Encoding', 'chunked']]), ...splitBytes(chunkedBytes(sseBytes([{ comment: `c${i}` }, up.textResult(msg, `answer ${i}`)]), [13]), [20])], 2);
        } else {
          await res.json(200, up.textResult(msg, `answer ${i}`), [], { split: [17], delayMs: 2 });
        }
      });
      const s = await startSluice(t, defer, up.url());
      okText(await call(s, 'echo', { warm: 1 }));
      const ids = [];
      for (let i = 0; i < N; i++) {
        const id = nid(`ooo${i}`);
        ids.push(id);
        s.send(toolCall(id, 'ooo', { i }));
      }
      await withDeadline(allIn, scaled(LINE_MS), 'all 8 calls to reach the upstream at once');
      const rs = await Promise.all(ids.map((id) => s.responseTo(id)));
      rs.forEach((r, i) => assert.equal(okText(r), `answer ${i}`, `call ${i} got ${r.raw}`));
      const conns = new Set(held.map((h) => h.req.connId));
      assert.equal(conns.size, N, 'each call in flight had its own connection');
      assert.equal(up.calls('ooo').length, N, 'one POST per call');
      await call(s, 'echo', { barrier: 1 });
      assertNoMoreFor(s, ids);
    });
  }
});

function withDeadline(p, ms, what) {
  let timer;
  return Promise.race([p, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); })]).finally(() => clearTimeout(timer));
}

// ===== failures =====

/** Every hostile or broken reply: each must end as exactly one JSON-RPC error, the POST once. */
const BROKEN = {
  // The head, then part of the body, then the connection closes.
  mid_body_close: async (up, req, res, msg) => {
    const body = Buffer.from(JSON.stringify(up.textResult(msg, 'never whole')));
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]), body.subarray(0, 10)]);
    await sleep(20);
    await res.end();
  },
  mid_chunk_close: async (up, req, res, msg) => {
    const bytes = chunkedBytes(JSON.stringify(up.textResult(msg, 'never whole')), [8]);
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]), bytes.subarray(0, bytes.length - 5)]);
    await res.end();
  },
  head_only_close: async (up, req, res) => {
    await res.write(headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', '50']]));
    res.destroy();
  },
  half_head_close: async (up, req, res) => {
    await res.write('HTTP/1.1 200 OK\r\nContent-Type: appl');
    await res.end();
  },
  garbage: async (up, req, res) => {
    await res.write('SSH-2.0-OpenSSH_9.6\r\n\r\nthis is not http\r\n\r\n');
  },
  garbage_close: async (up, req, res) => {
    await res.write('\x00\x01\x02 no status line at all');
    await res.end();
  },
  bad_status: async (up, req, res) => {
    await res.write('HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}');
  },
  http2_preface: async (up, req, res) => {
    await res.write('HTTP/2 200\r\ncontent-length: 2\r\n\r\n{}');
  },
  obs_fold: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'folded'));
    await res.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Folded: a\r\n b\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  },
  sse_no_answer: async (up, req, res) => {
    await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Transfer-Encoding', 'chunked']]),
      chunkedBytes(sseBytes([{ comment: 'hi' }, { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }]), [20])]);
  },
  sse_close_no_answer: async (up, req, res) => {
    await res.write([headBytes(200, [['Content-Type', 'text/event-stream']]), sseBytes([{ comment: 'hi' }]), 'data: {"jsonrpc":"2.0","method":"notifications/mess']);
    await sleep(20);
    await res.end();
  },
  // An answer in an event never finished (no blank line after it), then the end of the stream:
  // discarded, as the SSE rules say; a cut connection cannot be told from a clean end.
  sse_unfinished_close: async (up, req, res, msg) => {
    await res.write([headBytes(200, [['Content-Type', 'text/event-stream']]), `data: ${JSON.stringify(up.textResult(msg, 'unfinished'))}\n`]);
    await res.end();
  },
  sse_unfinished_length: async (up, req, res, msg) => {
    const body = `data: ${JSON.stringify(up.textResult(msg, 'unfinished'))}\r\n`;
    await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Content-Length', String(Buffer.byteLength(body))]]), body]);
  },
  sse_unfinished_chunked: async (up, req, res, msg) => {
    await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Transfer-Encoding', 'chunked']]),
      chunkedBytes(`: hi\n\ndata: ${JSON.stringify(up.textResult(msg, 'unfinished'))}`, [9])]);
  },
  empty_200: async (up, req, res) => {
    await res.write(headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', '0']]));
  },
  accepted_202: async (up, req, res) => {
    await res.write(headBytes(202, [['Content-Length', '0']]));
  },
  no_content_204: async (up, req, res) => {
    await res.write(headBytes(204, []));
  },
  status_500_empty: async (up, req, res) => {
    await res.write(headBytes(500, [['Content-Length', '0']]));
  },
  status_500_text: async (up, req, res) => {
    await res.write(Buffer.concat([headBytes(500, [['Content-Type', 'text/plain'], ['Content-Length', '5']]), Buffer.from('oops!')]));
  },
  status_503_close: async (up, req, res) => {
    await res.write([headBytes(503, [['Content-Type', 'text/html'], ['Connection', 'close']]), '<html>down</html>']);
    await res.end();
  },
  malformed_chunk_size: async (up, req, res) => {
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]), 'zz\r\n{}\r\n0\r\n\r\n']);
  },
  overflowing_chunk_size: async (up, req, res) => {
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]), '1ffffffffffffffff\r\n{}\r\n0\r\n\r\n']);
  },
  chunk_no_crlf: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'x'));
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]), `${(body.length - 2).toString(16)}\r\n${body}\r\n0\r\n\r\n`]);
  },
  length_and_chunked: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'ambiguous'));
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ['Transfer-Encoding', 'chunked']]), chunkedBytes(body, [16])]);
  },
  chunked_and_length: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'ambiguous'));
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked'], ['Content-Length', '5']]), chunkedBytes(body, [16])]);
  },
  te_gzip_chunked: async (up, req, res, msg) => {
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'gzip, chunked']]), chunkedBytes(JSON.stringify(up.textResult(msg, 'gz')), [16])]);
  },
  two_lengths: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'two lengths'));
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ['Content-Length', String(body.length + 5)]]), body, '12345']);
  },
  bad_length: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'bad length'));
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', `+${body.length}`]]), body]);
  },
  huge_head: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'huge head'));
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ['X-Big', 'b'.repeat(20000)], ['Content-Length', String(body.length)]]), body]);
  },
  too_many_headers: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'many headers'));
    const hs = Array.from({ length: 70 }, (_, i) => [`X-H${i}`, String(i)]);
    await res.write([headBytes(200, [['Content-Type', 'application/json'], ...hs, ['Content-Length', String(body.length)]]), body]);
  },
  bare_cr_in_head: async (up, req, res, msg) => {
    const body = JSON.stringify(up.textResult(msg, 'bare cr'));
    await res.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\rX-Injected: 1\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  },
};

/**
 * An upstream of era whose tool slow_a answers only when released, and whose tool other answers
 * with handler(req, res, a) (a: slow_a's recorded request); a sluice in front of it, with slow_a
 * in flight. Returns {s, up, idA, release}.
 */
async function withSlowA(t, era, other, handler) {
  const defer = cleanups(t);
  const up = await startUpstream(t, defer, { era });
  let release;
  const slowGate = new Promise((resolve) => { release = resolve; });
  up.tool('slow_a', async (req, res, msg) => {
    await slowGate;
    await res.json(200, up.textResult(msg, 'a finished'));
  });
  up.tool(other, async (req, res) => handler(req, res, up.calls('slow_a')[0]));
  const s = await startSluice(t, defer, up.url());
  okText(await call(s, 'echo', { warm: 1 }));
  const idA = nid('slow_a');
  s.send(toolCall(idA, 'slow_a', {}));
  const end = Date.now() + scaled(LINE_MS);
  while (up.calls('slow_a').length === 0 && Date.now() < end) await sleep(10);
  assert.equal(up.calls('slow_a').length, 1, up.describe());
  return { s, up, idA, release };
}

describe('failures: one JSON-RPC error for the id, and the POST is never retried', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`broken and hostile replies (${era})`, { timeout: scaled(180000) }, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era });
      for (const [name, fn] of Object.entries(BROKEN)) up.tool(name, (req, res, msg) => fn(up, req, res, msg));
      const s = await startSluice(t, defer, up.url());
      okText(await call(s, 'echo', { warm: 1 }));
      const sent = [];
      for (const name of Object.keys(BROKEN)) {
        const r = await call(s, name);
        sent.push(r.sentId);
        assertError(r);
        assert.doesNotMatch(JSON.stringify(r.error), /never whole|ambiguous|folded|SMUGGLED|unfinished/, `${name}: no part of a broken reply passes`);
        // The next call gets its own answer: nothing of the broken reply is left over.
        const after = await call(s, 'echo', { after: name });
        assert.equal(okText(after), echoText({ after: name }), `the call after ${name}`);
      }
      await sleep(300);
      await call(s, 'echo', { barrier: 1 });
      for (const name of Object.keys(BROKEN)) assert.equal(up.calls(name).length, 1, `${name}: POSTed exactly once`);
      assertNoMoreFor(s, sent);
      assert.doesNotMatch(s.stderr, /AddressSanitizer|runtime error/);
    });
  }

  test('HTTP 500 with a JSON-RPC error for our id: that error reaches the client', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.tool('err500', async (req, res, msg) => {
      await res.json(500, { jsonrpc: '2.0', id: msg.id, error: { code: -32099, message: 'the database is on fire', data: { retryable: false } } });
    });
    up.tool('err400', async (req, res, msg) => {
      await res.json(400, { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'bad arguments: x' } });
    });
    const s = await startSluice(t, defer, up.url());
    const r = await call(s, 'err500');
    assertError(r);
    assert.equal(r.error.code, -32099, r.raw);
    assert.equal(r.error.message, 'the database is on fire', r.raw);
    assert.deepEqual(r.error.data, { retryable: false }, r.raw);
    const r2 = await call(s, 'err400');
    assertError(r2);
    assert.equal(r2.error.code, -32602, r2.raw);
    assert.equal(r2.error.message, 'bad arguments: x', r2.raw);
    await call(s, 'echo', { barrier: 1 });
    assertNoMoreFor(s, [r.sentId, r2.sentId]);
    assert.equal(up.calls('err500').length, 1);
  });

  test('HTTP 500 whose JSON-RPC error is not for our id (id null) still answers our call with one error', async (t) => {
    // A server that cannot parse or route a request answers with id null (JSON-RPC 2.0 §5), as
    // the 2025 TypeScript SDK does for its 4xx/5xx. The body happens to contain our id's digits.
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.tool('err500_null', async (req, res, msg) => {
      await res.json(500, { jsonrpc: '2.0', error: { code: -32603, message: `Internal error while handling request ${msg.id}` }, id: null });
    });
    const s = await startSluice(t, defer, up.url());
    const r = await call(s, 'err500_null');
    assertError(r);
    await call(s, 'echo', { barrier: 1 });
    assertNoMoreFor(s, [r.sentId]);
    assert.equal(up.calls('err500_null').length, 1);
  });

  test('HTTP 500 carrying an error for another call in flight: that call is not failed by it, and ours gets one error', async (t) => {
    // Only an error for exactly our id may pass as the answer; one naming another pending
    // call's id must not end that call (it is still running upstream and answers later).
    const { s, up, idA, release } = await withSlowA(t, 'modern', 'err500_other', async (req, res, a) => {
      await res.json(500, { jsonrpc: '2.0', id: a.json.id, error: { code: -32099, message: 'forged failure of the other call' } });
    });
    const b = await call(s, 'err500_other');
    assertError(b);
    assert.notEqual(b.error.code, -32099, `the other call's error answered ours: ${b.raw}`);
    await sleep(100);
    assertNoMoreFor(s, [idA]);
    release();
    const a = await s.responseTo(idA);
    assert.equal(okText(a), 'a finished', a.raw);
    await call(s, 'echo', { barrier: 1 });
    assertNoMoreFor(s, [idA, b.sentId]);
    assert.equal(up.calls('slow_a').length, 1);
  });

  for (const era of ERAS) {
    for (const framing of ['json', 'sse']) {
      test(`HTTP 200 carrying another call's result (${framing}): it answers neither call; each gets its own (${era})`, async (t) => {
        // A POST's reply answers that POST's request only: a result there for another call in
        // flight (a server's mix-up; with the shared session, another client's call) must not
        // reach that call, nor its client.
        const { s, up, idA, release } = await withSlowA(t, era, 'answer_other', async (req, res, a) => {
          const forged = up.textResult(a.json, 'FORGED for a');
          if (framing === 'json') {
            await res.json(200, forged);
          } else {
            await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]), sseBytes([forged])]);
            await res.end();
          }
        });
        const b = await call(s, 'answer_other');
        assertError(b);
        await sleep(100);
        assertNoMoreFor(s, [idA]);
        release();
        const a = await s.responseTo(idA);
        assert.equal(okText(a), 'a finished', a.raw);
        assert.ok(!s.lines.some((l) => l.raw.includes('FORGED')), 'the other call\'s result reached no client');
        assert.match(s.stderr, /a response for id \d+ in the reply to \d+; dropped/, 'the mix-up is logged');
      });
    }
  }

  test('HTTP 200 whose body is not an answer to our call (HTML; another id) answers our call with one error', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.tool('html_200', async (req, res) => {
      const body = '<html><body>Welcome to nginx!</body></html>';
      await res.write([headBytes(200, [['Content-Type', 'text/html'], ['Content-Length', String(body.length)]]), body]);
    });
    up.tool('other_id_200', async (req, res, msg) => {
      await res.json(200, { jsonrpc: '2.0', id: Number(msg.id) + 100000, result: { resultType: 'complete', content: [{ type: 'text', text: 'not yours' }] } });
    });
    const s = await startSluice(t, defer, up.url());
    const [r1, r2] = await Promise.allSettled([call(s, 'html_200'), call(s, 'other_id_200')]);
    assert.equal(r1.status, 'fulfilled', `a 200 text/html reply to a POST must answer the call: ${r1.reason}`);
    assertError(r1.value);
    assert.equal(r2.status, 'fulfilled', `a 200 reply for another id must not leave the call unanswered: ${r2.reason}`);
    assertError(r2.value);
    assert.equal(up.calls('html_200').length, 1);
    assert.equal(up.calls('other_id_200').length, 1);
  });

  test('a reply over the size limit is refused (Content-Length, chunked, a length claimed); the next call works', { timeout: scaled(60000) }, async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const huge = (msg) => Buffer.from(JSON.stringify(up.textResult(msg, 'y'.repeat(SL_MAX_MESSAGE + 1000))));
    up.tool('huge_length', async (req, res, msg) => {
      const body = huge(msg);
      await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]), body]);
    });
    up.tool('huge_chunked', async (req, res, msg) => {
      await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']]), chunkedBytes(huge(msg), [1 << 20])]);
    });
    up.tool('huge_claim', async (req, res) => {
      await res.write(headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(64 * 1024 * 1024 * 1024)]]));
      await sleep(200);
      res.destroy();
    });
    const s = await startSluice(t, defer, up.url());
    for (const name of ['huge_length', 'huge_chunked', 'huge_claim']) {
      const r = await call(s, name, {}, { ms: scaled(20000) });
      assertError(r);
      assert.equal(okText(await call(s, 'echo', { after: name })), echoText({ after: name }));
      assert.equal(up.calls(name).length, 1, `${name}: once`);
    }
  });

  test('one large event in a stream: 8 MiB (under the limit) passes in about the time of a JSON reply; over the limit is refused', { timeout: scaled(60000) }, async (t) => {
    // The event stream is split into events as bytes arrive. Rescanning everything buffered on
    // every read is quadratic: an 8 MiB event would hold sluice's event loop for seconds.
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const text = (n) => 'z'.repeat(n);
    up.tool('big_json', async (req, res, msg) => {
      await res.json(200, up.textResult(msg, text(msg.params.arguments.n)));
    });
    up.tool('big_event', async (req, res, msg) => {
      const body = Buffer.from(JSON.stringify(up.textResult(msg, text(msg.params.arguments.n))));
      await res.write([headBytes(200, [['Content-Type', 'text/event-stream']]), Buffer.from(': big\n\ndata: '), body, Buffer.from('\n\n')]);
      await res.end();
    });
    const s = await startSluice(t, defer, up.url());
    const n = 8 << 20;
    let t0 = Date.now();
    assert.equal(okText(await call(s, 'big_json', { n }, { ms: scaled(10000) })).length, n);
    const jsonMs = Date.now() - t0;
    t0 = Date.now();
    const limit = Math.max(scaled(4000), 6 * jsonMs);
    const r = await call(s, 'big_event', { n }, { ms: limit }).catch((e) => assert.fail(`an 8 MiB event took over ${limit} ms (the same reply as JSON: ${jsonMs} ms): ${e.message.slice(0, 200)}`));
    assert.equal(okText(r).length, n);
    const sseMs = Date.now() - t0;
    assert.ok(sseMs < limit, `8 MiB event: ${sseMs} ms, as JSON: ${jsonMs} ms`);
    // Over the limit, in one event: refused, and the next call works.
    const over = await call(s, 'big_event', { n: SL_MAX_MESSAGE + 10 }, { ms: Math.max(scaled(10000), 20 * jsonMs) });
    assertError(over);
    assert.equal(okText(await call(s, 'echo', { after: 'big' })), echoText({ after: 'big' }));
  });

  test('the upstream stops listening after it was ready: one error, nothing retried; it comes back: calls work', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern', port: await lib.stablePort() });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { n: 1 }));
    const port = up.port;
    await up.close();
    const r = await call(s, 'echo', { n: 'down' });
    assertError(r, /cannot reach|upstream/i);
    const r2 = await call(s, 'write_file_free', { n: 'down2' });
    assertError(r2);
    const up2 = new RawUpstream({ era: 'modern' });
    await up2.listen(port);
    defer(() => up2.close());
    assert.equal(okText(await call(s, 'echo', { n: 2 })), echoText({ n: 2 }));
    await sleep(200);
    assert.deepEqual(up2.calls('echo').map((q) => q.json.params.arguments), [{ n: 2 }], 'the failed calls were not sent again to the new server');
    assert.equal(up2.calls('write_file_free').length, 0);
    assertNoMoreFor(s, [r.sentId, r2.sentId]);
  });

  test('the upstream is not listening at start: the call waits, then goes out exactly once when it comes up', async (t) => {
    const defer = cleanups(t);
    const port = await lib.stablePort();
    const s = await startSluice(t, defer, `http://127.0.0.1:${port}/mcp`);
    const id = nid('early');
    s.send(toolCall(id, 'echo', { early: true }));
    await waitLog(s, /not reachable yet/, 5000);
    await sleep(300);
    const up = new RawUpstream({ era: 'modern' });
    await up.listen(port);
    defer(() => up.close());
    const r = await s.responseTo(id, scaled(8000));
    assert.equal(okText(r), echoText({ early: true }));
    assert.equal(up.calls('echo').length, 1);
  });
});

describe('--upstream-timeout: the server\'s silence in a reply is bounded, not its total time', suiteOptions(), () => {
  test('--upstream-timeout 1: no answer, or a reply that stops halfway, fails the call in ~1 s; a reply whose bytes keep coming is taken however long it takes', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.tool('mute', async () => { await sleep(scaled(6000)); });
    up.tool('half', async (req, res, msg) => {
      const body = Buffer.from(JSON.stringify(up.textResult(msg, 'never whole')));
      await res.write([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]), body.subarray(0, 10)]);
      await sleep(scaled(6000));
    });
    up.tool('trickle', async (req, res, msg) => {
      // 2.4 s in all, never more than 0.4 s without a byte
      const body = Buffer.from(JSON.stringify(up.textResult(msg, 'slow but steady')));
      const head = headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]);
      await res.write([head, ...splitBytes(body, [Math.ceil(body.length / 6)])], 400);
    });
    const s = await startSluice(t, defer, up.url(), { args: ['--upstream-timeout', '1'] });
    okText(await call(s, 'echo', { warm: 1 }));
    for (const [tool, why] of [['mute', /did not answer in time/], ['half', /stopped in mid-reply/]]) {
      const t0 = Date.now();
      const r = await call(s, tool, {}, { ms: scaled(5000) });
      const took = Date.now() - t0;
      assertError(r, why);
      assert.ok(took >= 900 && took < scaled(3500), `${tool}: failed after ${took} ms (timeout 1 s)`);
    }
    const t0 = Date.now();
    assert.equal(okText(await call(s, 'trickle', {}, { ms: scaled(8000) })), 'slow but steady');
    assert.ok(Date.now() - t0 >= 1900, `the trickle took ${Date.now() - t0} ms: longer than the timeout, and taken`);
    assert.equal(okText(await call(s, 'echo', { after: 1 })), echoText({ after: 1 }));
    assert.equal(up.calls('mute').length, 1, 'a call that may have run is not sent again');
    assert.equal(up.calls('half').length, 1);
  });
});

/** Waits until the tools/list sluice sends once ready (its policy check) has been answered. */
async function startupListDone(up) {
  const q = await up.waitFor(() => up.posts('tools/list')[0], scaled(LINE_MS), 'the start-up tools/list');
  await up.waitFor(() => q.answered, scaled(LINE_MS), 'the answer to the start-up tools/list');
  await sleep(50);
}

/** A promise p that waits until release() is called. */
function gate() {
  let release;
  const p = new Promise((resolve) => { release = resolve; });
  return { p, release };
}

/** Calls A (hold_a) and B (hold_b) in flight under the upstream's first session (sess-gen1),
 * held until their gates gA and gB are released: then A is answered 404 (its session is gone)
 * and B by answerB(req, res, msg). The upstream has already forgotten its sessions (restarted).
 * Returns sluice s, the gates and the two calls' ids. */
async function twoHeldCalls(t, defer, up, answerB) {
  const gA = gate();
  const gB = gate();
  up.tool('hold_a', async (req, res, msg) => { await gA.p; await res.json(404, up.error(msg, -32001, 'Session not found')); });
  up.tool('hold_b', async (req, res, msg) => { await gB.p; await answerB(req, res, msg); });
  const s = await startSluice(t, defer, up.url());
  okText(await call(s, 'echo', { n: 1 }));
  await startupListDone(up);
  const idA = nid('hold_a');
  const idB = nid('hold_b');
  s.send(toolCall(idA, 'hold_a', {}));
  s.send(toolCall(idB, 'hold_b', {}));
  await up.waitCall('hold_a', scaled(LINE_MS));
  await up.waitCall('hold_b', scaled(LINE_MS));
  assert.equal(up.calls('hold_b')[0].headers['mcp-session-id'], 'sess-gen1');
  up.forgetSessions();
  return { s, gA, gB, idA, idB };
}

// ===== cancellation =====

describe('cancellation of a forwarded call', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`the client cancels a call in flight: ${era === 'modern' ? 'its request stream is closed, no notifications/cancelled is POSTed' : 'notifications/cancelled with our id goes in the session, the connection is left alone'}; no answer follows (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era });
      let release;
      const late = new Promise((resolve) => { release = resolve; });
      up.tool('hang', async (req, res, msg) => {
        await late;
        await res.json(200, up.textResult(msg, 'late answer'));
      });
      const s = await startSluice(t, defer, up.url());
      okText(await call(s, 'echo', { warm: 1 }));
      const id = nid('hang');
      s.send(toolCall(id, 'hang', {}));
      const q = await up.waitCall('hang', scaled(LINE_MS));
      s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'user', _meta: lib.envelope() } });
      if (era === 'modern') {
        await up.waitFor(() => q.conn.closed, scaled(LINE_MS), 'sluice to close the cancelled request\'s connection');
        okText(await call(s, 'echo', { barrier: 1 }));
        assert.equal(up.posts('notifications/cancelled').length, 0, 'a modern server gets no notifications/cancelled');
      } else {
        const c = await up.waitFor(() => up.posts('notifications/cancelled')[0], scaled(LINE_MS), 'notifications/cancelled');
        assert.equal(c.json.params.requestId, q.json.id, `requestId is the id sluice gave the call: ${c.text}`);
        assert.equal(c.headers['mcp-session-id'], q.headers['mcp-session-id'], c.headText);
        assert.equal(q.conn.closed, false, 'a 2025 server must not see the cancellation as a disconnect');
        release();
        await up.waitFor(() => q.answered, scaled(LINE_MS), 'the late answer to be written');
      }
      release();
      await s.noResponseTo(id, 300);
      assert.equal(okText(await call(s, 'echo', { after: 'cancel' })), echoText({ after: 'cancel' }));
      assert.equal(up.calls('hang').length, 1);
    });
  }
});

// ===== the 2025 session =====

describe('the legacy era over HTTP (2025-11-25 sessions)', suiteOptions(), () => {
  test('Mcp-Session-Id and the negotiated MCP-Protocol-Version go on every POST after initialize', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'legacy', version: '2025-06-18', sessionId: () => 'Sess_0123-abc.XYZ~!' });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { a: 1 }));
    okText(await call(s, 'echo', { a: 2 }));
    await waitLog(s, /legacy \(2025-11-25 and earlier\) era/, 2000);
    const init = up.posts('initialize');
    assert.equal(init.length, 1, up.describe());
    assert.equal(init[0].headers['mcp-session-id'], undefined, 'initialize carries no session id');
    const after = up.requests.filter((r) => r.seq > init[0].seq);
    assert.ok(after.length >= 4, up.describe());
    for (const r of after) {
      assert.equal(r.headers['mcp-session-id'], 'Sess_0123-abc.XYZ~!', `${r.json && r.json.method}: ${r.headText}`);
      assert.equal(r.headers['mcp-protocol-version'], '2025-06-18', `${r.json && r.json.method}: ${r.headText}`);
      assert.equal(r.headers['mcp-method'], undefined, `no modern headers on a 2025 session: ${r.headText}`);
    }
    const notif = up.posts('notifications/initialized');
    assert.equal(notif.length, 1);
    assert.ok(notif[0].seq > init[0].seq);
    assert.ok(after.some((r) => r.json && r.json.method === 'tools/call'));
    // The POST shape; the one GET is the session's stream (http_upstream_streams.test.mjs).
    const gets = up.requests.filter((r) => r.method === 'GET');
    assert.ok(gets.length <= 1 && gets.every((r) => r.headers.accept === 'text/event-stream'), up.describe());
    for (const r of up.requests.filter((q) => q.method !== 'GET')) {
      assert.equal(r.method, 'POST');
      assert.equal(r.target, '/mcp');
      assert.equal(r.headers.host, `127.0.0.1:${up.port}`);
      assert.match(r.headers['content-type'], /^application\/json/);
      assert.match(r.headers.accept, /application\/json/);
      assert.match(r.headers.accept, /text\/event-stream/);
    }
  });

  for (const [what, sid] of [['a tab', 'bad\tsession'], ['a space', 'bad session'], ['a non-ASCII byte', 'bad\xe9session'], ['DEL', 'bad\x7fsession']]) {
    test(`a session id with ${what} is not echoed back`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'legacy', sessionId: () => sid });
      up.requireSession = false; // it takes any request after initialize, with or without a session
      const audit = path.join(workDir, `badsid-${idSeq}.jsonl`);
      const s = await startSluice(t, defer, up.url(), { args: ['--audit', audit] });
      const id = nid('badsid');
      s.send(toolCall(id, 'echo', { x: 1 }));
      // sluice may go on without a session, or refuse the whole reply (a control byte makes the
      // head malformed) and stop: either way the value is never sent back, and the call, which
      // waited for that handshake, gets a response: the result, or a refusal that is journaled.
      const r = await s.responseTo(id);
      if (r.result && !r.result.isError) {
        assert.equal(okText(r), echoText({ x: 1 }));
        await call(s, 'echo', { x: 2 }).catch(() => null);
      } else {
        assert.match(JSON.stringify(r.result), /stopped before the call could be sent/, r.raw);
        await s.exitPromise;
        const recs = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((x) => !x.event);
        assert.deepEqual(recs.map((x) => [x.tool, x.decision, x.reason, x.upstream, x.id]),
          [['echo', 'refused', 'upstream-gone', 'not-forwarded', id]]);
        assert.match(recs[0].args_sha256, /^[0-9a-f]{64}$/);
      }
      for (const q of up.requests) {
        assert.ok(!q.headText.includes(sid), `the bad session id was echoed: ${JSON.stringify(q.headText)}`);
        assert.ok(!/[\t\x7f\x80-\xff]/.test(q.headText.split('\r\n').slice(1).join('')), `a control or non-ASCII byte in a request head: ${JSON.stringify(q.headText)}`);
      }
    });
  }

  for (const [what, version] of [['a line break and a header', '1\r\nX-Evil: 1'], ['a space', '2025 06 18'], ['a control byte', '2025\x01x']]) {
    test(`a protocol version with ${what} from the upstream is not written into a request head`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'legacy', version });
      const s = await startSluice(t, defer, up.url());
      const id = nid('badver');
      s.send(toolCall(id, 'echo', { v: 1 }));
      // sluice may go on without the header or refuse the version: the value must never be sent.
      await Promise.race([s.responseTo(id).catch(() => null), s.exitPromise.then(() => null)]);
      await call(s, 'echo', { v: 2 }).catch(() => null);
      const after = up.requests.filter((q) => !(q.json && q.json.method === 'initialize'));
      assert.ok(after.length >= 1, up.describe());
      for (const q of after) {
        assert.ok(!/x-evil/i.test(q.headText), `the version's header was injected: ${JSON.stringify(q.headText)}`);
        assert.equal(q.headers['x-evil'], undefined);
        assert.notEqual(q.headers['mcp-protocol-version'], version, JSON.stringify(q.headText));
        assert.ok(!/[\x00-\x08\x0a-\x1f\x7f]/.test(q.headText.split('\r\n').join('')), `a control byte in a request head: ${JSON.stringify(q.headText)}`);
      }
    });
  }

  test('a 404 for a sessioned POST: one error for that call, never resent; sluice initializes again and the next call carries the new session', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'legacy' });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { n: 1 }));
    await startupListDone(up);
    const first = up.posts('initialize').length;
    assert.equal(first, 1);
    const oldSid = up.calls('echo')[0].headers['mcp-session-id'];
    assert.ok(oldSid);
    up.forgetSessions(); // the server restarted
    const lost = await call(s, 'write_once', { n: 'lost' });
    assertError(lost);
    await up.waitFor(() => up.posts('initialize').length >= 2, scaled(5000), 'a second initialize');
    const init2 = up.posts('initialize')[1];
    assert.equal(init2.headers['mcp-session-id'], undefined, 'the new initialize carries no (old) session id');
    let r;
    for (let i = 0; i < 3; i++) { // the first call may race the handshake; none may be lost
      r = await call(s, 'echo', { n: 2 });
      if (r.result) break;
    }
    assert.equal(okText(r), echoText({ n: 2 }));
    const last = up.calls('echo').at(-1);
    assert.ok(last.headers['mcp-session-id'] && last.headers['mcp-session-id'] !== oldSid, `the new session: ${last.headText}`);
    assert.ok(up.sessions.has(last.headers['mcp-session-id']));
    assert.equal(up.calls('write_once').length, 1, 'the call that met the 404 was not resent');
    assert.ok(up.posts('notifications/initialized').length >= 2);
    assertNoMoreFor(s, [lost.sentId]);
  });

  test('two sessioned calls in flight meet the restart: the second 404, arriving during the new initialize, does not wipe the new session', async (t) => {
    // The server restarts with calls A and B in flight. A's 404 makes sluice initialize again;
    // the new initialize's head (with the new Mcp-Session-Id) is in when B's 404 arrives, and its
    // body comes after. B's 404 was for the OLD session: the new one must survive it, or every
    // later POST goes without a session and nothing can work again.
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'legacy', sessionId: (n) => `sess-gen${n}` });
    const headSent = gate();
    const bodyGate = gate();
    const { s, gA, gB, idA, idB } = await twoHeldCalls(t, defer, up, (req, res, msg) => res.json(404, up.error(msg, -32001, 'Session not found')));
    up.hook = async (req, res) => {
      const m = req.json;
      if (!m || m.method !== 'initialize') return false;
      const sid = `sess-gen${++up.sessionCount}`;
      up.sessions.add(sid);
      await res.write(headBytes(200, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked'], ['Mcp-Session-Id', sid]]));
      headSent.release();
      await bodyGate.p;
      await res.write(chunkedBytes(JSON.stringify(up.result(m, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'restarted', version: '2' } })), [40]));
      return true;
    };
    gA.release();
    assertError(await s.responseTo(idA));
    await withDeadline(headSent.p, scaled(LINE_MS), 'the second initialize');
    await sleep(100);
    gB.release();
    assertError(await s.responseTo(idB));
    await sleep(100);
    bodyGate.release();
    up.hook = null;
    let r;
    for (let i = 0; i < 3; i++) {
      r = await call(s, 'echo', { n: 2, try: i });
      if (r.result) break;
      await sleep(200);
    }
    const after = up.requests.filter((q) => q.seq > up.posts('initialize')[1].seq);
    assert.ok(r.result, `no call works after the restart: ${r.raw}; POSTs after the new initialize: ${JSON.stringify(after.map((q) => `${q.json && q.json.method} session=${q.headers['mcp-session-id']}`))}`);
    assert.equal(up.calls('hold_a').length, 1);
    assert.equal(up.calls('hold_b').length, 1);
  });

  test('a late reply from before a session loss carrying the old Mcp-Session-Id does not replace the new session', async (t) => {
    // Calls A and B run under session 1. The server restarts: A's 404 makes sluice initialize
    // session 2. B's reply, late, still names session 1 in its Mcp-Session-Id: only the reply
    // to the current initialize names the session, so later POSTs keep session 2.
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'legacy', sessionId: (n) => `sess-gen${n}` });
    const { s, gA, gB, idA, idB } = await twoHeldCalls(t, defer, up, (req, res, msg) => res.json(200, up.textResult(msg, 'b done'), [['Mcp-Session-Id', req.headers['mcp-session-id']]]));
    gA.release();
    assertError(await s.responseTo(idA));
    await up.waitFor(() => up.posts('notifications/initialized').some((r) => r.headers['mcp-session-id'] === 'sess-gen2'), scaled(LINE_MS), 'the new session\'s notifications/initialized');
    gB.release();
    assert.equal(okText(await s.responseTo(idB)), 'b done');
    const r = await call(s, 'echo', { n: 2 });
    assert.equal(okText(r), echoText({ n: 2 }), 'the first call after the late reply works');
    assert.equal(up.calls('echo').at(-1).headers['mcp-session-id'], 'sess-gen2');
    assert.equal(up.posts('initialize').length, 2, `no third handshake: ${up.describe()}`);
    await waitLog(s, /Mcp-Session-Id .*not the reply to the current initialize; ignored/, LINE_MS);
  });

  test('two calls in flight, the server asks on one call\'s event stream: that call gets the question as its round, the other runs on', async (t) => {
    // A 2025-11-25 server's request on a POST's event stream is about that POST's request
    // (PROTOCOL.md §7.3): the stream names the call, however many are in flight. The question
    // is that call's round (input_required), its answer goes back under the server's id, and the
    // call in flight beside it is untouched.
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'legacy' });
    let releaseSlow;
    const slowGate = new Promise((resolve) => { releaseSlow = resolve; });
    up.tool('slow', async (req, res, msg) => { await slowGate; await res.json(200, up.textResult(msg, 'slow done')); });
    up.tool('ask', async (req, res, msg) => {
      const rid = `q-${msg.id}`;
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(sseBytes([{ jsonrpc: '2.0', id: rid, method: 'elicitation/create', params: { mode: 'form', message: `asks ${JSON.stringify(msg.params.arguments)}`, requestedSchema: { type: 'object', properties: {} } } }]));
      const answer = await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === rid && !('method' in r.json)), scaled(10000), 'the answer');
      await res.write(sseBytes([up.textResult(msg, JSON.stringify({ requestId: rid, answer: answer.json }))]));
      await res.end();
    });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { n: 1 }));
    await startupListDone(up);
    const slowId = nid('slow');
    s.send(toolCall(slowId, 'slow', {}));
    await up.waitCall('slow', scaled(LINE_MS));
    const r1 = await call(s, 'ask', { topic: 'colour' });
    assert.ok(r1.result && r1.result.resultType === 'input_required', `the question is the call's round, not refused: ${r1.raw}`);
    const keys = Object.keys(r1.result.inputRequests);
    assert.equal(keys.length, 1, r1.raw);
    assert.equal(r1.result.inputRequests[keys[0]].method, 'elicitation/create', r1.raw);
    assert.match(r1.result.inputRequests[keys[0]].params.message, /"topic":"colour"/, r1.raw);
    const answer = { action: 'accept', content: { colour: 'blue' } };
    const r2 = await call(s, 'ask', { topic: 'colour' }, { params: { inputResponses: { [keys[0]]: answer }, requestState: r1.result.requestState } });
    const got = JSON.parse(okText(r2));
    assert.equal(got.answer.id, got.requestId, 'the answer goes back under the server\'s id');
    assert.deepEqual(got.answer.result, answer, r2.raw);
    assert.doesNotMatch(s.stderr, /cannot be told which one/);
    releaseSlow();
    assert.equal(okText(await s.responseTo(slowId)), 'slow done');
    assert.equal(up.calls('ask').length, 1, 'the call ran once');
  });

  test('a question on the stream of a call already answered is about no call: refused, never handed to the call in flight', async (t) => {
    // The stream names its request; once that request is answered nobody waits for the
    // question, and the other call in flight is not what it is about.
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'legacy' });
    let releaseSlow;
    const slowGate = new Promise((resolve) => { releaseSlow = resolve; });
    up.tool('slow', async (req, res, msg) => { await slowGate; await res.json(200, up.textResult(msg, 'slow done')); });
    up.tool('late', async (req, res, msg) => {
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(sseBytes([up.textResult(msg, 'late done'), { jsonrpc: '2.0', id: 'q-late', method: 'elicitation/create', params: { mode: 'form', message: 'too late', requestedSchema: { type: 'object', properties: {} } } }]));
      await res.end();
    });
    const s = await startSluice(t, defer, up.url());
    okText(await call(s, 'echo', { n: 1 }));
    await startupListDone(up);
    const slowId = nid('slow');
    s.send(toolCall(slowId, 'slow', {}));
    await up.waitCall('slow', scaled(LINE_MS));
    assert.equal(okText(await call(s, 'late', {})), 'late done');
    const refusal = await up.waitFor(() => up.requests.find((r) => r.json && r.json.id === 'q-late' && !('method' in r.json)), scaled(LINE_MS), 'the answer to the late question');
    assert.ok(refusal.json.error, JSON.stringify(refusal.json));
    releaseSlow();
    const r = await s.responseTo(slowId);
    assert.equal(okText(r), 'slow done', `the call in flight did not get the late question: ${r.raw}`);
  });

  test('questions over the size limit on a call\'s event stream: the server gets a parse error under each id, and the call\'s answer after them still comes', { timeout: scaled(30000) }, async (t) => {
    // Such an event is never kept whole: its data's ends show a request and its id (last, as
    // the TypeScript SDK writes it, or first). Nobody else could answer it, so sluice does, and
    // the stream reads on past it rather than ending as too large. One question is read in
    // pieces as it comes (1 MiB over), one is one byte over, whole in sluice's last read of it.
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'legacy' });
    const params = (n) => `{"messages":[{"role":"user","content":{"type":"text","text":"${'s'.repeat(n)}"}}],"maxTokens":1}`;
    const just = (n) => `{"jsonrpc":"2.0","id":"q-just","method":"elicitation/create","params":${params(n)}}`;
    const answerTo = (id) => up.waitFor(() => up.requests.find((r) => r.json && r.json.id === id && !('method' in r.json)), scaled(LINE_MS), `the answer to ${id}`).then((r) => r.json, () => null);
    up.tool('ask_big', async (req, res, msg) => {
      await res.write(headBytes(200, [['Content-Type', 'text/event-stream'], ['Connection', 'close']]));
      await res.write(Buffer.from(`data: {"method":"sampling/createMessage","params":${params(SL_MAX_MESSAGE + (1 << 20))},"jsonrpc":"2.0","id":770077}\n\n`));
      const a1 = await answerTo(770077);
      await res.write(Buffer.from(`data: ${just(SL_MAX_MESSAGE + 1 - just(0).length)}\n\n`));
      const a2 = await answerTo('q-just');
      await res.write(sseBytes([up.textResult(msg, JSON.stringify([a1, a2]))]));
      await res.end();
    });
    const s = await startSluice(t, defer, up.url());
    const r = await call(s, 'ask_big', {}, { ms: scaled(15000) });
    const [a1, a2] = JSON.parse(okText(r));
    const error = { code: -32700, message: 'Parse error: message too large' };
    assert.deepEqual(a1, { jsonrpc: '2.0', id: 770077, error }, `the question read in pieces: ${s.stderr.slice(-600)}`);
    assert.deepEqual(a2, { jsonrpc: '2.0', id: 'q-just', error }, `the question just over: ${s.stderr.slice(-600)}`);
    await waitLog(s, /a request over \d+ bytes \(id 770077\) on an event stream; dropped, and the server is answered with an error/, LINE_MS);
  });

  test('an upstream that cannot be reached is logged once, and its end with the count of failed requests', { timeout: scaled(30000) }, async (t) => {
    const defer = cleanups(t);
    const port = await lib.stablePort();
    const s = await startSluice(t, defer, `http://127.0.0.1:${port}/mcp`);
    await waitLog(s, /further failures are counted until the server answers again/, 5000);
    await sleep(scaled(2500)); // sluice probes again every second meanwhile
    const failures = s.stderr.split('\n').filter((l) => /cannot reach the upstream server/.test(l));
    assert.equal(failures.length, 1, `one line for the outage, not one per attempt:\n${s.stderr}`);
    const up = new RawUpstream({ era: 'legacy' });
    await up.listen(port);
    defer(() => up.close());
    const m = await waitLog(s, /the upstream server answers again, after (\d+) failed requests? over \d+ s/, 5000);
    assert.ok(Number(m[1]) >= 2, `counted ${m[1]} failed requests over about 3 s: ${s.stderr}`);
    const r = await call(s, 'echo', { back: 1 });
    assert.equal(okText(r), echoText({ back: 1 }));
  });

  for (const discover of ['rpc-error', 'sdk-400']) {
    test(`a 2025 server refusing server/discover (${discover}) is no upstream error in /metrics; a failing call is`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'legacy', discover });
      const s = await startSluice(t, defer, up.url(), { listen: true });
      await waitFrontReady(s, up);
      assert.ok(up.posts('server/discover').length >= 1, 'the era probe was sent');
      const scrape = () => new Promise((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: s.port, path: '/metrics', agent: false }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => { text += d; });
          res.on('end', () => resolve(text));
        });
        req.on('error', reject);
        req.setTimeout(scaled(LINE_MS), () => req.destroy(new Error('no /metrics answer in time')));
      });
      const idle = await scrape();
      assert.doesNotMatch(idle, /^sluice_upstream_errors_total\{/m, `errors counted at start:\n${idle}`);
      // The count itself works: a request the server refuses counts once, under its kind.
      up.tool('empty500', async (req, res) => {
        await res.empty(500);
      });
      const r = await frontPost(s.port, toolCall(1, 'empty500', {}));
      assert.ok(r.msg && r.msg.error, r.text);
      const after = await scrape();
      assert.match(after, /^sluice_upstream_errors_total\{kind="http-status"\} 1$/m, after);
    });
  }

  test('a 2025 server that refuses server/discover with HTTP 400 and an id-null error (the SDK\'s answer) is found at once, also after a retry', { timeout: scaled(30000) }, async (t) => {
    // sluice starts before its server (a sidecar): the first server/discover cannot connect, the
    // second gets the SDK's 400 {"error":{"code":-32000,...},"id":null}.
    const defer = cleanups(t);
    const port = await lib.stablePort();
    const s = await startSluice(t, defer, `http://127.0.0.1:${port}/mcp`);
    await waitLog(s, /not reachable yet/, 5000);
    const id = nid('sdk400');
    s.send(toolCall(id, 'echo', { sdk: 400 }));
    const up = new RawUpstream({ era: 'legacy', discover: 'sdk-400' });
    await up.listen(port);
    defer(() => up.close());
    const upAt = Date.now();
    await up.waitFor(() => up.posts('server/discover').length >= 1, scaled(3000), 'server/discover');
    // The retry comes within about a second; the answer then decides the era at once.
    await up.waitFor(() => up.posts('initialize').length >= 1, scaled(4000), 'initialize soon after the 400 to server/discover');
    const r = await s.responseTo(id, scaled(3000));
    assert.equal(okText(r), echoText({ sdk: 400 }));
    assert.ok(Date.now() - upAt < scaled(5000));
  });
});

// ===== modern headers =====

describe('modern requests carry the mirrored headers', suiteOptions(), () => {
  test('MCP-Protocol-Version, Mcp-Method and Mcp-Name match the body; a name that is not plain ASCII goes in the base64 sentinel', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const s = await startSluice(t, defer, up.url());
    const names = ['echo', 'wëird✓tool', ' lead', 'trail ', '=?base64?ZWNobw==?=', 'a:b/c.d_e-f', 'tab\tname', '日本'];
    for (const name of names) {
      const r = await call(s, name, { name });
      assert.equal(okText(r), echoText({ name }), `${JSON.stringify(name)}: ${r.raw}`);
    }
    for (const q of up.requests) {
      const m = q.json;
      assert.ok(m, q.text);
      const isRequest = 'id' in m;
      assert.equal(q.headers['mcp-protocol-version'], MODERN, q.headText);
      if (m.method) assert.equal(q.headers['mcp-method'], m.method, q.headText);
      assert.equal(q.headers['mcp-session-id'], undefined, q.headText);
      if (isRequest && m.params && m.params._meta) assert.equal(m.params._meta['io.modelcontextprotocol/protocolVersion'], MODERN);
      if (m.method === 'tools/call') {
        const name = m.params.name;
        const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(name) && !name.startsWith('=?base64?');
        const want = plain ? name : `=?base64?${Buffer.from(name, 'utf8').toString('base64')}?=`;
        assert.equal(q.headers['mcp-name'], want, `Mcp-Name for ${JSON.stringify(name)}: ${q.headText}`);
      } else {
        assert.equal(q.headers['mcp-name'], undefined, `no Mcp-Name on ${m.method}: ${q.headText}`);
      }
    }
    assert.deepEqual(names.map((n) => up.calls(n).length), names.map(() => 1));
    assert.ok(up.posts('server/discover').length === 1 && up.posts('tools/list').length >= 1);
  });
});

// ===== Authorization (HTTP front) =====

/** POSTs a modern request to sluice's HTTP front; resolves {status, headers, text, msg}. */
function frontPost(port, msg, extraHeaders = {}) {
  const body = JSON.stringify(msg);
  const headers = {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Content-Length': Buffer.byteLength(body),
    'MCP-Protocol-Version': MODERN, 'Mcp-Method': msg.method, ...extraHeaders,
  };
  if (msg.method === 'tools/call') headers['Mcp-Name'] = msg.params.name;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let out;
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          const datas = text.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter(Boolean);
          out = datas.map((d) => JSON.parse(d)).find((m) => m.id === msg.id);
        } else if (text) {
          try { out = JSON.parse(text); } catch { out = undefined; }
        }
        resolve({ status: res.statusCode, headers: res.headers, text, msg: out });
      });
      res.on('error', reject);
    });
    const timer = setTimeout(() => req.destroy(new Error('no answer from the HTTP front in time')), scaled(LINE_MS));
    req.on('error', (e) => { clearTimeout(timer); reject(e); });
    req.end(body);
  });
}

async function waitFrontReady(s, up, ms = 10000) {
  const end = Date.now() + scaled(ms);
  while (Date.now() < end) {
    const ok = await new Promise((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: s.port, path: '/readyz', agent: false }, (res) => { res.resume(); resolve(res.statusCode === 200); });
      req.on('error', () => resolve(false));
      req.setTimeout(1000, () => req.destroy());
    });
    if (ok) return;
    await sleep(30);
  }
  throw new Error(`sluice's /readyz not 200 in ${ms} ms; upstream: ${up ? up.describe() : ''}; stderr:\n${s.stderr}`);
}

describe('Authorization', suiteOptions(), () => {
  test('the client\'s Authorization never reaches the upstream; SLUICE_UPSTREAM_AUTHORIZATION does, on every POST', async (t) => {
    const defer = cleanups(t);
    for (const era of ERAS) {
      const up = await startUpstream(t, defer, { era });
      const s = await startSluice(t, defer, up.url(), { listen: true, env: { SLUICE_UPSTREAM_AUTHORIZATION: 'Bearer sluice-own-upstream-token' } });
      await waitFrontReady(s, up);
      const r = await frontPost(s.port, toolCall(1, 'echo', { era }), { Authorization: 'Bearer client-secret-4711' });
      assert.equal(r.status, 200, r.text);
      assert.ok(r.msg && r.msg.result, r.text);
      assert.equal(resultText({ ...r.msg, raw: r.text }), echoText({ era }));
      assert.ok(up.requests.length >= 3, up.describe());
      for (const q of up.requests) {
        assert.equal(q.headers.authorization, 'Bearer sluice-own-upstream-token', `${era}: ${q.headText}`);
        assert.ok(!q.headText.includes('client-secret-4711') && !q.text.includes('client-secret-4711'), `${era}: the client's token leaked: ${q.headText}\n${q.text}`);
      }
    }
  });

  test('without SLUICE_UPSTREAM_AUTHORIZATION no Authorization goes upstream; one with a line break is not used', async (t) => {
    const defer = cleanups(t);
    for (const env of [{}, { SLUICE_UPSTREAM_AUTHORIZATION: 'Bearer x\r\nX-Injected: yes' }, { SLUICE_UPSTREAM_AUTHORIZATION: '' }]) {
      const up = await startUpstream(t, defer, { era: 'modern' });
      const s = await startSluice(t, defer, up.url(), { listen: true, env });
      await waitFrontReady(s, up);
      const r = await frontPost(s.port, toolCall(2, 'echo', { e: 1 }), { Authorization: 'Bearer client-secret-0815' });
      assert.equal(r.status, 200, r.text);
      for (const q of up.requests) {
        assert.equal(q.headers.authorization, undefined, `${JSON.stringify(env)}: ${q.headText}`);
        assert.equal(q.headers['x-injected'], undefined, q.headText);
        assert.ok(!q.headText.includes('client-secret-0815'), q.headText);
      }
    }
  });
});

// ===== https =====

function opensslAvailable() {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

function makeCerts(dir) {
  const f = (n) => path.join(dir, n);
  const ossl = (args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 20000 });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ossl(['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=sluice upstream e2e CA']);
  const leaf = (name, cn, san) => {
    ossl(['req', ...ec, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${cn}`]);
    fs.writeFileSync(f(`${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`);
    ossl(['x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f(`${name}.pem`), '-days', '2', '-extfile', f(`${name}.ext`)]);
  };
  leaf('good', '127.0.0.1', 'IP:127.0.0.1');
  leaf('othername', 'upstream.example', 'DNS:upstream.example,IP:127.0.0.2');
  leaf('cnonly', '127.0.0.1', 'DNS:not-this-host.example');
  const read = (n) => fs.readFileSync(f(n));
  return {
    caFile: f('ca.pem'),
    good: { key: read('good.key'), cert: read('good.pem') },
    othername: { key: read('othername.key'), cert: read('othername.pem') },
    cnonly: { key: read('cnonly.key'), cert: read('cnonly.pem') },
  };
}

describe('https upstream', suiteOptions(opensslAvailable() || process.env.CI === 'true' ? {} : { skip: 'openssl not found' }), () => {
  let certs;
  let certDir;
  before(() => {
    certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-e2e-upca-'));
    certs = makeCerts(certDir);
  });
  after(() => {
    if (certDir && !process.env.E2E_KEEP_TMP) fs.rmSync(certDir, { recursive: true, force: true });
  });

  for (const era of ERAS) {
    test(`trusted through --upstream-ca: calls work, keep-alive, chunked and event-stream replies (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era, tls: certs.good });
      up.tool('sse', async (req, res, msg) => {
        await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Transfer-Encoding', 'chunked']]), ...splitBytes(chunkedBytes(sseBytes([{ comment: 'tls' }, up.textResult(msg, 'over tls')], { crlf: true }), [7]), [9])], 1);
      });
      const s = await startSluice(t, defer, up.url(), { args: ['--upstream-ca', certs.caFile] });
      assert.equal(okText(await call(s, 'echo', { tls: 1 })), echoText({ tls: 1 }));
      assert.equal(okText(await call(s, 'sse')), 'over tls');
      await startupListDone(up);
      const conns = up.tcpConnections;
      for (let i = 0; i < 3; i++) assert.equal(okText(await call(s, 'echo', { i })), echoText({ i }));
      assert.equal(up.tcpConnections, conns, 'TLS connections are kept alive and reused');
      assert.equal(up.requests[0].headers.host, `127.0.0.1:${up.port}`);
    });
  }

  for (const [what, key, useCa] of [
    ['the system CAs only (no --upstream-ca)', 'good', false],
    ['a certificate for another name and IP', 'othername', true],
    ['a certificate whose CN (not its subjectAltName) names the IP', 'cnonly', true],
  ]) {
    test(`refused with ${what}: the client gets an error, nothing reaches the server`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'modern', tls: certs[key] });
      // --upstream-wait 1: the request waits a second for an upstream that never gets ready.
      const args = [...(useCa ? ['--upstream-ca', certs.caFile] : []), '--upstream-wait', '1'];
      const s = await startSluice(t, defer, up.url(), { listen: true, args });
      await up.waitFor(() => up.tcpConnections >= 1, scaled(5000), 'a TCP connection from sluice');
      await waitLog(s, /not reachable yet/, 5000);
      const r = await frontPost(s.port, toolCall(3, 'echo', { tls: 'refused' }));
      assert.ok(r.status >= 400, `expected an HTTP error, got ${r.status} ${r.text}`);
      assert.ok(r.msg && r.msg.error, `a JSON-RPC error body: ${r.text}`);
      await sleep(1200); // one more probe round
      assert.deepEqual(up.requests.map((q) => q.headText), [], 'no request may reach a server sluice does not trust');
      assert.match(s.stderr, /TLS|certificate|verify/i, 'sluice says why');
    });
  }

  test('stdio front, no --upstream-ca: the held call is never sent to the untrusted server', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern', tls: certs.good });
    const s = await startSluice(t, defer, up.url());
    const id = nid('untrusted');
    s.send(toolCall(id, 'echo', { tls: 'stdio' }));
    await waitLog(s, /not reachable yet/, 5000);
    await sleep(1200);
    assert.deepEqual(up.requests.map((q) => q.headText), []);
    const answered = s.lines.find((l) => l.msg.id === id);
    if (answered) assertError({ ...answered.msg, raw: answered.raw });
  });
});

// ===== the gate in front of the transport =====

describe('a gated tool through an HTTP upstream', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`nothing reaches the upstream before the accept; after it, exactly one POST with the approved arguments (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era });
      up.tool('write_file', async (req, res, msg) => {
        await res.write([headBytes(200, [['Content-Type', 'text/event-stream'], ['Transfer-Encoding', 'chunked']]), chunkedBytes(sseBytes([up.textResult(msg, `wrote ${msg.params.arguments.path}`)]), [11])]);
      });
      const s = await startSluice(t, defer, up.url());
      const args = { path: '/etc/thing', content: 'data' };
      const q = assertAsked(await s.request(toolCall(nid('ask'), 'write_file', args)));
      okText(await call(s, 'echo', { barrier: 1 }));
      assert.equal(up.calls('write_file').length, 0, 'nothing reaches the upstream before the accept');
      // Denied by policy: never.
      const den = await call(s, 'drop_table', { table: 't' });
      assert.ok(den.result && den.result.isError, den.raw);
      const ok = await s.request(confirmRetry(nid('accept'), 'write_file', args, q.state, lib.ACCEPT));
      assert.equal(okText(ok), 'wrote /etc/thing');
      okText(await call(s, 'echo', { barrier: 2 }));
      const posts = up.calls('write_file');
      assert.equal(posts.length, 1, 'exactly one POST after the accept');
      assert.deepEqual(posts[0].json.params.arguments, args);
      assert.ok(!('inputResponses' in posts[0].json.params) && !('requestState' in posts[0].json.params), posts[0].text);
      assert.ok(!posts[0].text.includes('sluice.confirm') && !posts[0].text.includes(q.state), posts[0].text);
      // Another call with other arguments, declined: nothing more goes out.
      const args2 = { path: '/etc/other', content: 'no' };
      const q2 = assertAsked(await s.request(toolCall(nid('ask'), 'write_file', args2)));
      const d = await s.request(confirmRetry(nid('decline'), 'write_file', args2, q2.state, { action: 'decline' }));
      assert.ok(d.result && d.result.isError, d.raw);
      okText(await call(s, 'echo', { barrier: 3 }));
      assert.equal(up.calls('write_file').length, 1, 'a declined call reaches nothing');
      assert.equal(up.calls('drop_table').length, 0);
    });
  }
});

// ===== Mcp-Param-* headers from x-mcp-header marks (2026-07-28 §5.2) =====

/** A number written exactly as given in the JSON text sent to sluice (42.0, 4.2e1, ...). */
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

const b64 = (v) => `=?base64?${Buffer.from(v, 'utf8').toString('base64')}?=`;

/** Sends a tools/call as a modern (2026-07-28) or a legacy (2025) stdio client would. */
function paramCall(s, clientEra, name, args) {
  const id = nid(`p-${name}`);
  const msg = clientEra === 'modern' ? toolCall(id, name, args) : lib.legacyCall(id, name, args);
  s.sendRaw(`${rawJson(msg)}\n`);
  return s.responseTo(id);
}

function paramList(s, clientEra) {
  const id = nid('list');
  return s.request(clientEra === 'modern' ? lib.modernRequest(id, 'tools/list', {}) : lib.legacyRequest(id, 'tools/list', {}));
}

/** A client of that era: the 2025 one first runs the handshake with sluice. */
async function paramClient(s, clientEra) {
  if (clientEra === 'legacy') await lib.legacyHandshake(s);
}

/** The Mcp-Param-* headers of q must be exactly want ({Name: value}; names ignoring case), each once. */
function assertParams(q, want, what) {
  const got = mcpParamHeaders(q);
  const names = got.map(([k]) => k.toLowerCase());
  assert.equal(new Set(names).size, names.length, `${what}: an Mcp-Param header is repeated:\n${q.headText}`);
  const norm = (entries) => Object.fromEntries(entries.map(([k, v]) => [k.toLowerCase(), v]));
  assert.deepEqual(norm(got.map(([k, v]) => [k.slice('mcp-param-'.length), v])), norm(Object.entries(want)),
    `${what}: the Mcp-Param-* headers sent with\n${q.text}\n${q.headText}`);
}

/** The POST of tool name whose arguments.note is note (each test case tags its call). */
function postTagged(up, name, note) {
  const qs = up.calls(name).filter((q) => q.json.params.arguments && q.json.params.arguments.note === note);
  assert.equal(qs.length, 1, `exactly one POST of ${name} tagged ${note}: ${up.describe()}`);
  return qs[0];
}

const PARAM_SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    city: { type: 'string', 'x-mcp-header': 'City' },
    lead: { type: 'string', 'x-mcp-header': 'Lead' },
    count: { type: 'integer', 'x-mcp-header': 'Count' },
    flag: { type: 'boolean', 'x-mcp-header': 'Flag' },
    opt: { type: 'string', 'x-mcp-header': 'Opt' },
    target: {
      type: 'object',
      properties: { inner: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } } },
    },
    note: { type: 'string' },
  },
};

// [label, arguments, the headers they must give]
const PARAM_CASES = [
  ['every kind', { region: 'us-west1', city: 'Zürich', lead: ' padded', count: new RawNum('42.0'), flag: true, opt: null, target: { inner: { zone: 'z-9' } } },
    { Region: 'us-west1', City: b64('Zürich'), Lead: b64(' padded'), Count: '42', Flag: 'true', Zone: 'z-9' }],
  ['false, a negative integer, the rest absent', { region: 'eu', count: -7, flag: false },
    { Region: 'eu', Count: '-7', Flag: 'false' }],
  ['an exponent, trailing space, CJK, a value that looks like the sentinel', { count: new RawNum('4.2e1'), region: 'tail ', city: '日本', lead: '=?base64?eA==?=' },
    { Count: '42', Region: b64('tail '), City: b64('日本'), Lead: b64('=?base64?eA==?=') }],
  ['an empty string', { region: '' }, { Region: '=?base64??=' }],
  ['long values: 3000 ASCII characters plain, 1500 non-ASCII ones in the sentinel', { region: 'r'.repeat(3000), city: 'ü'.repeat(1500) },
    { Region: 'r'.repeat(3000), City: b64('ü'.repeat(1500)) }],
  ['the largest safe integers', { count: 9007199254740991, target: { inner: { zone: null } } }, { Count: '9007199254740991' }],
  ['-(2^53-1)', { count: -9007199254740991 }, { Count: '-9007199254740991' }],
  ['values no header can carry: a fraction, an object, a chain broken by a non-object', { count: 4.5, region: { not: 'a string' }, target: { inner: 'flat' } }, {}],
  ['integers beyond 2^53-1', { count: new RawNum('9007199254740992') }, {}],
  ['1e21', { count: new RawNum('1e21') }, {}],
  ['nulls everywhere', { region: null, city: null, count: null, flag: null, target: null }, {}],
];

describe('Mcp-Param-* headers toward a 2026-07-28 HTTP upstream', suiteOptions(), () => {
  for (const clientEra of ['modern', 'legacy']) {
    test(`computed from the body sent, from the marks of sluice's own start-up listing: strings, the sentinel, integers, booleans, null/absent, nested (${clientEra} client)`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'modern' });
      up.schema('params_tool', PARAM_SCHEMA);
      const s = await startSluice(t, defer, up.url());
      await paramClient(s, clientEra);
      await startupListDone(up); // the client itself lists nothing
      for (const [label, args, want] of PARAM_CASES) {
        okText(await paramCall(s, clientEra, 'params_tool', { ...args, note: label }));
        assertParams(postTagged(up, 'params_tool', label), want, label);
      }
      // No arguments at all: no header.
      okText(await paramCall(s, clientEra, 'params_tool', undefined));
      const bare = up.calls('params_tool').filter((q) => !q.json.params.arguments);
      assert.equal(bare.length, 1, up.describe());
      assertParams(bare[0], {}, 'no arguments');
      // An unmarked tool with the same argument names: none either; nor on any other request.
      okText(await paramCall(s, clientEra, 'echo', { region: 'us-west1', count: 42, flag: true }));
      for (const q of up.requests) {
        if (q.json && q.json.method === 'tools/call' && q.json.params.name === 'params_tool') continue;
        assert.deepEqual(mcpParamHeaders(q), [], `no Mcp-Param header on ${q.json && q.json.method}: ${q.headText}`);
      }
    });
  }

  for (const clientEra of ['modern', 'legacy']) {
    test(`the client's tools/list teaches the marks anew: a renamed mark, then none (${clientEra} client)`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'modern' });
      const marked = (name) => ({ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': name }, note: { type: 'string' } } });
      up.schema('relist', marked('Old'));
      const s = await startSluice(t, defer, up.url());
      await paramClient(s, clientEra);
      await startupListDone(up);
      okText(await paramCall(s, clientEra, 'relist', { a: 'one', note: 'first' }));
      assertParams(postTagged(up, 'relist', 'first'), { Old: 'one' }, 'from the start-up listing');
      up.schema('relist', marked('New'));
      const lists = up.posts('tools/list').length;
      const l1 = await paramList(s, clientEra);
      assert.ok(l1.result && l1.result.tools.some((x) => x.name === 'relist'), l1.raw);
      assert.equal(up.posts('tools/list').length, lists + 1, 'the client\'s tools/list reached the upstream');
      okText(await paramCall(s, clientEra, 'relist', { a: 'two', note: 'second' }));
      assertParams(postTagged(up, 'relist', 'second'), { New: 'two' }, 'after the client listed the renamed mark');
      up.schema('relist', { type: 'object', properties: { a: { type: 'string' }, note: { type: 'string' } } });
      const l2 = await paramList(s, clientEra);
      assert.ok(l2.result && l2.result.tools.some((x) => x.name === 'relist'), l2.raw);
      okText(await paramCall(s, clientEra, 'relist', { a: 'three', note: 'third' }));
      assertParams(postTagged(up, 'relist', 'third'), {}, 'after the client listed the tool without marks');
    });
  }

  test('marks learned from every page of the start-up listing (nextCursor)', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern', pageSize: 2 });
    for (const n of [1, 2, 3, 4]) up.schema(`paged_${n}`, { type: 'object', properties: { v: { type: 'string', 'x-mcp-header': `Page${n}` } } });
    const s = await startSluice(t, defer, up.url());
    // echo + 4 tools in pages of 2: three tools/list requests, all answered.
    await up.waitFor(() => up.posts('tools/list').filter((q) => q.answered).length >= 3, scaled(LINE_MS), 'three pages of tools/list');
    assert.deepEqual(up.posts('tools/list').map((q) => q.json.params.cursor), [undefined, 'page-2', 'page-4']);
    await sleep(50);
    for (const n of [1, 2, 3, 4]) {
      okText(await call(s, `paged_${n}`, { v: `value ${n}` }));
      assertParams(up.calls(`paged_${n}`)[0], { [`Page${n}`]: `value ${n}` }, `paged_${n}`);
    }
  });

  for (const clientEra of ['modern', 'legacy']) {
    test(`a call sent at once, before the start-up listing is answered, waits for it and carries its Mcp-Param headers (${clientEra} client)`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'modern' });
      up.schema('params_tool', PARAM_SCHEMA);
      let listed = false;
      up.hook = async (req) => {
        if (req.json && req.json.method === 'tools/list' && !listed) {
          listed = true;
          await sleep(300); // the listing is slow; the client's call is already waiting
        }
        return false;
      };
      const s = await startSluice(t, defer, up.url());
      const pending = (async () => {
        await paramClient(s, clientEra);
        return paramCall(s, clientEra, 'params_tool', { region: 'eu-early', note: 'early' });
      })();
      okText(await pending);
      const q = postTagged(up, 'params_tool', 'early');
      const list = up.posts('tools/list')[0];
      assert.ok(list && list.seq < q.seq, up.describe());
      assertParams(q, { Region: 'eu-early' }, 'the first call after start');
    });
  }

  test('a server that never answers tools/list: sluice serves after 10 s, says so, and the calls go out (without marks)', { timeout: scaled(60000) }, async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.schema('params_tool', PARAM_SCHEMA);
    up.hook = async (req) => req.json && req.json.method === 'tools/list' && !req.json.params.cursor; // never answered
    const s = await startSluice(t, defer, up.url(), { listen: true });
    const t0 = Date.now();
    await up.waitFor(() => up.posts('tools/list')[0], scaled(LINE_MS), 'the start-up tools/list');
    const status = await new Promise((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: s.port, path: '/readyz', agent: false }, (res) => { res.resume(); resolve(res.statusCode); });
      req.on('error', () => resolve(0));
    });
    assert.equal(status, 503, 'not ready while the listing is out');
    await waitLog(s, /has not listed its tools after 10 s/, 20000);
    assert.ok(Date.now() - t0 >= 8000, 'sluice waited for the listing');
    await waitFrontReady(s, up, 5000);
    const r = await frontPost(s.port, toolCall(nid('late'), 'echo', { late: 1 }));
    assert.equal(r.status, 200, r.text);
    assert.equal(okText(r.msg), echoText({ late: 1 }), r.text);
  });

  test('a tool with an invalid mark gets no Mcp-Param header at all: names equal ignoring case, not a token, type number, no type, an object, an empty or non-string mark', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const fine = { type: 'string', 'x-mcp-header': 'Fine' };
    const INVALID = {
      inv_dup: { a: { type: 'string', 'x-mcp-header': 'Dup' }, b: { type: 'string', 'x-mcp-header': 'dUP' } },
      inv_space: { a: { type: 'string', 'x-mcp-header': 'Bad Name' }, b: fine },
      inv_colon: { a: { type: 'string', 'x-mcp-header': 'Bad:Name' }, b: fine },
      inv_nonascii: { a: { type: 'string', 'x-mcp-header': 'Régión' }, b: fine },
      inv_number: { a: { type: 'number', 'x-mcp-header': 'Num' }, b: fine },
      inv_notype: { a: { 'x-mcp-header': 'NoType' }, b: fine },
      inv_object: { a: { type: 'object', 'x-mcp-header': 'Obj' }, b: fine },
      inv_empty: { a: { type: 'string', 'x-mcp-header': '' }, b: fine },
      inv_nonstring: { a: { type: 'string', 'x-mcp-header': 7 }, b: fine },
    };
    for (const [name, properties] of Object.entries(INVALID)) up.schema(name, { type: 'object', properties });
    up.schema('valid_ref', { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Dup' }, b: fine } });
    const s = await startSluice(t, defer, up.url());
    await startupListDone(up);
    for (const name of Object.keys(INVALID)) {
      const args = { a: name === 'inv_number' ? 5 : (name === 'inv_object' ? { x: 1 } : 'av'), b: 'bv' };
      okText(await call(s, name, args));
      assert.equal(up.calls(name).length, 1, up.describe());
      assertParams(up.calls(name)[0], {}, name);
    }
    // The same marks, valid: the headers are there (the cases above are not vacuous).
    okText(await call(s, 'valid_ref', { a: 'av', b: 'bv' }));
    assertParams(up.calls('valid_ref')[0], { Dup: 'av', Fine: 'bv' }, 'valid_ref');
  });

  test('a mark off the properties chain (under items, anyOf, additionalProperties, or on the schema itself) makes the tool invalid: no Mcp-Param header at all', async (t) => {
    // PROTOCOL.md §5.2: "The property path may use only properties chains" and clients MUST drop
    // tools with invalid annotations; params.h: such a tool "gets no headers".
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    const fine = { type: 'string', 'x-mcp-header': 'Fine' };
    const OFF = {
      off_items: { type: 'object', properties: { list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Item' } }, b: fine } },
      off_anyof: { type: 'object', properties: { u: { anyOf: [{ type: 'string', 'x-mcp-header': 'Any' }] }, b: fine } },
      off_additional: { type: 'object', additionalProperties: { type: 'string', 'x-mcp-header': 'Extra' }, properties: { b: fine } },
      off_root: { type: 'object', 'x-mcp-header': 'Root', properties: { b: fine } },
    };
    for (const [name, schema] of Object.entries(OFF)) up.schema(name, schema);
    const s = await startSluice(t, defer, up.url());
    await startupListDone(up);
    const problems = [];
    for (const name of Object.keys(OFF)) {
      okText(await call(s, name, { list: ['x'], u: 'y', b: 'bv' }));
      const got = mcpParamHeaders(up.calls(name)[0]);
      if (got.length) problems.push(`${name}: sent ${JSON.stringify(got)}`);
    }
    assert.deepEqual(problems, [], 'a tool with a mark off the properties chain is invalid and gets no Mcp-Param headers');
  });

  for (const clientEra of ['modern', 'legacy']) {
    test(`a 2025-11-25 HTTP upstream gets no Mcp-Param header (${clientEra} client)`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'legacy' });
      up.schema('params_tool', PARAM_SCHEMA);
      const s = await startSluice(t, defer, up.url());
      await paramClient(s, clientEra);
      // sluice initializes a 2025 server once a client is there: the client's listing comes first.
      const l = await paramList(s, clientEra);
      assert.ok(l.result && l.result.tools.some((x) => x.name === 'params_tool'), l.raw);
      await startupListDone(up);
      for (const [label, args] of PARAM_CASES.slice(0, 3)) {
        okText(await paramCall(s, clientEra, 'params_tool', { ...args, note: label }));
        postTagged(up, 'params_tool', label);
      }
      for (const q of up.requests) assert.deepEqual(mcpParamHeaders(q), [], `a 2025 server gets no Mcp-Param header: ${q.headText}`);
    });
  }

  for (const clientEra of ['modern', 'legacy']) {
    test(`a gated tool's Mcp-Param headers go only with the approved call, never before the accept (${clientEra} client)`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(t, defer, { era: 'modern' });
      up.schema('write_file', { type: 'object', properties: { path: { type: 'string', 'x-mcp-header': 'Path' }, content: { type: 'string' } } });
      const s = await startSluice(t, defer, up.url());
      await paramClient(s, clientEra);
      await startupListDone(up);
      const withPath = () => up.requests.filter((q) => mcpParamHeaders(q).length > 0);
      const args = { path: '/etc/thing', content: 'data' };
      let answer;
      if (clientEra === 'modern') {
        const q = assertAsked(await s.request(toolCall(nid('ask'), 'write_file', args)));
        okText(await call(s, 'echo', { barrier: 1 }));
        assert.equal(up.calls('write_file').length, 0, 'nothing reaches the upstream before the accept');
        assert.deepEqual(withPath().map((r) => r.headText), [], 'no Mcp-Param header before the accept');
        // Declined: nothing.
        const args2 = { path: '/etc/other', content: 'no' };
        const q2 = assertAsked(await s.request(toolCall(nid('ask'), 'write_file', args2)));
        const d = await s.request(confirmRetry(nid('decline'), 'write_file', args2, q2.state, { action: 'decline' }));
        assert.ok(d.result && d.result.isError, d.raw);
        answer = await s.request(confirmRetry(nid('accept'), 'write_file', args, q.state, lib.ACCEPT));
      } else {
        const id = nid('held');
        s.send(lib.legacyCall(id, 'write_file', args));
        const e = await lib.nextElicitation(s);
        okText(await s.request(lib.legacyCall(nid('barrier'), 'echo', { barrier: 1 })));
        assert.equal(up.calls('write_file').length, 0, 'nothing reaches the upstream while the call is held');
        assert.deepEqual(withPath().map((r) => r.headText), [], 'no Mcp-Param header before the accept');
        s.send({ jsonrpc: '2.0', id: e.id, result: lib.ACCEPT });
        answer = await s.responseTo(id);
      }
      okText(answer);
      okText(await call(s, 'echo', { barrier: 2 }));
      const posts = up.calls('write_file');
      assert.equal(posts.length, 1, 'exactly one POST, the approved one');
      assert.deepEqual(posts[0].json.params.arguments, args);
      assertParams(posts[0], { Path: '/etc/thing' }, 'the approved call');
      assert.deepEqual(withPath(), [posts[0]], 'the approved call is the only request with an Mcp-Param header');
    });
  }

  test('through the HTTP front: the client\'s Mcp-Param headers are checked against the body, and the upstream gets sluice\'s own, made from the body', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(t, defer, { era: 'modern' });
    up.schema('params_tool', PARAM_SCHEMA);
    const s = await startSluice(t, defer, up.url(), { listen: true });
    await waitFrontReady(s, up);
    await startupListDone(up);
    const args = { region: 'us-west1', city: 'Zürich', count: 42, flag: true, note: 'front-ok' };
    // The client's spellings: 42.0 for 42, a sentinel for a plain value, lower-case names.
    const ok = await frontPost(s.port, toolCall('f1', 'params_tool', args), {
      'mcp-param-region': b64('us-west1'), 'Mcp-Param-City': b64('Zürich'), 'MCP-PARAM-COUNT': '42.0', 'Mcp-Param-Flag': 'true',
    });
    assert.equal(ok.status, 200, ok.text);
    assert.ok(ok.msg && ok.msg.result && !ok.msg.result.isError, ok.text);
    assertParams(postTagged(up, 'params_tool', 'front-ok'), { Region: 'us-west1', City: b64('Zürich'), Count: '42', Flag: 'true' }, 'regenerated from the body');
    // A missing header: 400 / -32020, nothing reaches the upstream.
    const bad = await frontPost(s.port, toolCall('f2', 'params_tool', { ...args, note: 'front-bad' }), {
      'Mcp-Param-Region': 'us-west1', 'Mcp-Param-City': b64('Zürich'), 'Mcp-Param-Count': '42',
    });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.msg && bad.msg.error && bad.msg.error.code, -32020, bad.text);
    const e = await frontPost(s.port, toolCall('f3', 'echo', { barrier: 1 }));
    assert.equal(e.status, 200, e.text);
    assert.equal(up.calls('params_tool').filter((q) => q.json.params.arguments.note === 'front-bad').length, 0, up.describe());
  });
});
