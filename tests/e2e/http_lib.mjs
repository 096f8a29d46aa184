// http_lib.mjs: harness for the end-to-end tests of sluice's HTTP front (--listen).
//
// startHttpSluice() runs the real binary with --listen 127.0.0.1:0 around fake_upstream.mjs (through
// lib.mjs's startSluice, so the same cleanup and sanitizer checks apply), reads the port from the
// "listening on ... (port N)" log line and waits for /readyz. The HTTP client is built on
// node:http / node:https, not fetch, so a test decides which connection a request goes on
// (a keep-alive agent, or agent: false for a fresh TCP connection), which headers are sent, and
// reads application/json and text/event-stream replies (chunked SSE, `event: message` + `data:`)
// as they arrive. RawConn (node:net / node:tls) writes arbitrary bytes for malformed and slow
// requests. Every wait has a deadline.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import {
  FORM_CAPS, LEGACY, LINE_DEADLINE_MS, MODERN, deadline, envelope, sleep, startSluice, toolCall, withDeadline, SluiceProc, sluiceCommand,
} from './lib.mjs';

// Every wait below takes its ms through lib.mjs's deadline(): scaled under valgrind (E2E_VALGRIND).
export const HTTP_DEADLINE_MS = LINE_DEADLINE_MS;
export const ACCEPT_BOTH = 'application/json, text/event-stream';

// ===== starting sluice =====

/**
 * startSluice() with --listen (opts.listen, default 127.0.0.1:0) and everything of lib.mjs's
 * options. opts.clientTls ({ca, cert, key}) is what the test's clients use to reach it;
 * opts.waitReady (default true) waits for /readyz 200. A --drain-grace of 1 s is added unless
 * the test sets one, so a test that ends with a held call does not wait 10 s for its cleanup.
 * Returns the SluiceProc with .port and .target ({port, tls}).
 */
export async function startHttpSluice(t, opts) {
  const extra = [...(opts.args ?? [])];
  if (!extra.includes('--drain-grace')) extra.push('--drain-grace', '1');
  const s = startSluice(t, { ...opts, args: ['--listen', opts.listen ?? '127.0.0.1:0', ...extra] });
  s.proc.on('error', (e) => {
    s.spawnError = e;
  });
  s.port = await waitForPort(s, opts.portDeadlineMs ?? 10000);
  s.target = { port: s.port, tls: opts.clientTls };
  if (opts.waitReady !== false) await waitReady(s.target, opts.readyDeadlineMs ?? 15000, s);
  return s;
}

/** sluice's HTTP front before the HTTP upstream at url (startHttpSluice always starts a child).
 * Returns the SluiceProc with .port and .target, once /readyz says 200. */
export async function startSluiceOverHttp(t, policy, url, extra = []) {
  const args = ['--policy', policy, '--upstream', url, '--listen', '127.0.0.1:0', '--drain-grace', '1', ...extra];
  const env = { ...process.env };
  delete env.SLUICE_STATE_KEY;
  const cmd = sluiceCommand(args);
  const s = new SluiceProc(spawn(cmd.file, cmd.args, { stdio: ['pipe', 'pipe', 'pipe'], env }), { args, memcheck: cmd.memcheck });
  t.after(() => s.kill());
  s.port = await waitForPort(s);
  s.target = { port: s.port };
  await waitReady(s.target, 15000, s);
  return s;
}

/** The port from sluice's "listening on http(s)://ADDR/mcp (port N)" line. */
export async function waitForPort(s, ms = 10000) {
  ms = deadline(ms);
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const m = /listening on https?:\/\/\S+ \(port (\d+)\)/.exec(s.stderr);
    if (m) return Number(m[1]);
    if (s.spawnError) throw new Error(`cannot run sluice: ${s.spawnError.message}`);
    if (s.exited) throw new Error(`sluice exited (code ${s.exitCode}, signal ${s.exitSignal}) before listening; stderr:\n${s.stderr}`);
    await sleep(20);
  }
  throw new Error(`sluice logged no listening port within ${ms} ms; stderr:\n${s.stderr}`);
}

/** Polls GET /readyz until 200. */
export async function waitReady(target, ms = 15000, s = undefined) {
  ms = deadline(ms);
  const end = Date.now() + ms;
  let last = 'no answer';
  while (Date.now() < end) {
    try {
      const r = await get(target, '/readyz', { timeoutMs: 1000 });
      if (r.status === 200) return;
      last = `${r.status} ${r.text}`;
    } catch (e) {
      last = String(e.message);
    }
    if (s && s.exited) break;
    await sleep(50);
  }
  throw new Error(`/readyz not 200 within ${ms} ms (last: ${last})${s ? `; stderr:\n${s.stderr}` : ''}`);
}

/** Waits until sluice's stderr matches re (after the first `from` characters). */
export async function waitLog(s, re, ms = HTTP_DEADLINE_MS, from = 0) {
  ms = deadline(ms);
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const m = re.exec(s.stderr.slice(from));
    if (m) return m;
    await sleep(20);
  }
  throw new Error(`sluice's stderr did not match ${re} within ${ms} ms; stderr:\n${s.stderr.slice(-4000)}`);
}

// ===== the HTTP client =====

/** A keep-alive agent for target; destroyed when the test ends. */
export function keepAliveAgent(t, target, extra = {}) {
  const o = { keepAlive: true, maxSockets: 16, ...tlsOptions(target), ...extra };
  const agent = target.tls ? new https.Agent(o) : new http.Agent(o);
  if (t && typeof t.after === 'function') t.after(() => agent.destroy());
  return agent;
}

function tlsOptions(target) {
  if (!target.tls) return {};
  const o = {};
  for (const k of ['ca', 'cert', 'key']) if (target.tls[k]) o[k] = target.tls[k];
  return o;
}

/** Parses a text/event-stream body incrementally: {event, data, id, json}. */
class SseParser {
  constructor(onEvent) {
    this.buf = '';
    this.onEvent = onEvent;
  }

  push(text) {
    this.buf += text;
    for (;;) {
      const m = /\r?\n\r?\n/.exec(this.buf);
      if (!m) return;
      const block = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const ev = { event: 'message', data: null, id: null };
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        let value = i < 0 ? '' : line.slice(i + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') ev.event = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id') ev.id = value;
      }
      if (data.length === 0) continue; // a comment, a priming or retry-only event
      ev.data = data.join('\n');
      try {
        ev.json = JSON.parse(ev.data);
      } catch {
        ev.json = undefined;
      }
      this.onEvent(ev);
    }
  }
}

/**
 * One HTTP exchange whose response head has arrived. The body keeps arriving: .complete(ms)
 * waits for its end, .nextEvent(pred, ms) takes SSE messages as they come.
 */
export class HttpReply {
  constructor(req, res) {
    this.req = req;
    this.res = res;
    this.status = res.statusCode;
    this.headers = res.headers;
    this.contentType = String(res.headers['content-type'] || '');
    this.sse = this.contentType.startsWith('text/event-stream');
    this.localPort = req.socket ? req.socket.localPort : undefined;
    this.chunks = [];
    this.events = []; // every SSE event received, in order
    this.unread = []; // SSE events not yet taken by nextEvent
    this.waiters = [];
    this.ended = false;
    this.error = null;
    const parser = new SseParser((ev) => {
      this.events.push(ev);
      this.unread.push(ev);
      this.#wake();
    });
    this.endPromise = new Promise((resolve) => {
      res.on('data', (c) => {
        this.chunks.push(c);
        if (this.sse) parser.push(c.toString('utf8'));
      });
      res.on('end', () => {
        this.ended = true;
        this.#wake();
        resolve();
      });
      res.on('error', (e) => {
        this.error = e;
        this.ended = true;
        this.#wake();
        resolve();
      });
      res.on('close', () => {
        if (!this.ended) {
          this.error = this.error || new Error('the connection closed before the response ended');
          this.ended = true;
          this.#wake();
        }
        resolve();
      });
    });
  }

  #wake() {
    for (const w of this.waiters.slice()) w();
  }

  get body() {
    return Buffer.concat(this.chunks);
  }

  get text() {
    return this.body.toString('utf8');
  }

  /** Waits for the end of the body (bounded). */
  async complete(ms = HTTP_DEADLINE_MS) {
    await withDeadline(this.endPromise, deadline(ms), `the end of the ${this.status} response`);
    return this;
  }

  /** The body as JSON (after complete()). */
  json() {
    try {
      return JSON.parse(this.text);
    } catch (e) {
      throw new Error(`response body is not JSON (${this.status} ${this.contentType}): ${this.text.slice(0, 500)}`);
    }
  }

  /** The next SSE message (parsed JSON) matching pred, removed from the unread queue. */
  nextEvent(pred = () => true, ms = HTTP_DEADLINE_MS, what = 'an SSE message') {
    ms = deadline(ms);
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        const i = this.unread.findIndex((ev) => pred(ev.json, ev));
        if (i >= 0) {
          const [ev] = this.unread.splice(i, 1);
          done();
          resolve(ev.json);
        } else if (this.ended) {
          done();
          reject(new Error(`the event stream ended (${this.error ? this.error.message : 'cleanly'}) while waiting for ${what}; events: ${JSON.stringify(this.events.map((e) => e.data)).slice(0, 2000)}`));
        }
      };
      const done = () => {
        clearTimeout(timer);
        const i = this.waiters.indexOf(check);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${ms} ms; events so far: ${JSON.stringify(this.events.map((e) => e.data)).slice(0, 2000)}`));
      }, ms);
      this.waiters.push(check);
      check();
    });
  }

  /** Closes the connection under this exchange (a client that goes away). */
  abort() {
    this.req.destroy();
    this.res.destroy();
  }
}

/**
 * Sends one request and resolves once the response head is in. opts: method, path, headers,
 * body (string | Buffer | object -> JSON), agent (an Agent, or false for a fresh connection;
 * default false), timeoutMs (for the head).
 */
export function httpRequest(target, opts = {}) {
  const mod = target.tls ? https : http;
  const headers = { ...(opts.headers ?? {}) };
  let body = opts.body;
  if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) body = JSON.stringify(body);
  if (body !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length')) {
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  for (const k of Object.keys(headers)) if (headers[k] === null || headers[k] === undefined) delete headers[k];
  const ms = deadline(opts.timeoutMs ?? HTTP_DEADLINE_MS);
  return new Promise((resolve, reject) => {
    const req = mod.request({
      host: target.host ?? '127.0.0.1',
      port: target.port,
      method: opts.method ?? 'GET',
      path: opts.path ?? '/mcp',
      headers,
      agent: opts.agent ?? false,
      ...(opts.agent ? {} : tlsOptions(target)),
    });
    const timer = setTimeout(() => {
      req.destroy(new Error(`no response head within ${ms} ms for ${opts.method ?? 'GET'} ${opts.path ?? '/mcp'}`));
    }, ms);
    req.on('socket', (sock) => {
      req.localPortSeen = sock.localPort;
      sock.on('connect', () => { req.localPortSeen = sock.localPort; });
    });
    req.on('response', (res) => {
      clearTimeout(timer);
      const r = new HttpReply(req, res);
      if (r.localPort === undefined) r.localPort = req.localPortSeen;
      resolve(r);
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** GET path; resolves with the completed reply. */
export async function get(target, p, opts = {}) {
  const r = await httpRequest(target, { ...opts, method: 'GET', path: p });
  return r.complete(opts.timeoutMs ?? HTTP_DEADLINE_MS);
}

// ===== MCP over HTTP =====

const HEADER_SAFE = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/;
const SENTINEL = /^=\?base64\?.*\?=$/;

/** An Mcp-Name / Mcp-Param value as the modern client sends it (§5.2: base64 sentinel). */
export function headerValue(v) {
  const s = String(v);
  if (HEADER_SAFE.test(s) && !SENTINEL.test(s)) return s;
  return `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

/** The 2026-07-28 mirrored headers for a request object. */
export function modernHeaders(msg) {
  const h = {};
  const meta = msg && msg.params && msg.params._meta;
  h['MCP-Protocol-Version'] = (meta && meta['io.modelcontextprotocol/protocolVersion']) || MODERN;
  if (msg && typeof msg.method === 'string') h['Mcp-Method'] = msg.method;
  const p = msg && msg.params;
  if (p && (msg.method === 'tools/call' || msg.method === 'prompts/get') && typeof p.name === 'string') h['Mcp-Name'] = headerValue(p.name);
  if (p && msg.method === 'resources/read' && typeof p.uri === 'string') h['Mcp-Name'] = headerValue(p.uri);
  return h;
}

/** Merges header overrides (case-insensitive; a null value removes the header). */
export function mergeHeaders(base, over = {}) {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    for (const old of Object.keys(out)) if (old.toLowerCase() === k.toLowerCase()) delete out[old];
    if (v !== null && v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * POSTs a JSON-RPC message to /mcp. opts: headers (overrides; null removes), modern (default:
 * whether msg carries the envelope) adds the mirrored headers, agent, rawBody (send these bytes
 * instead of JSON.stringify(msg)), timeoutMs. Resolves when the response head is in.
 */
export function postMcp(target, msg, opts = {}) {
  const claimed = !!(msg && msg.params && msg.params._meta && msg.params._meta['io.modelcontextprotocol/protocolVersion']);
  const modern = opts.modern ?? claimed;
  let headers = { 'Content-Type': 'application/json', Accept: ACCEPT_BOTH };
  if (modern) headers = { ...headers, ...modernHeaders(msg) };
  headers = mergeHeaders(headers, opts.headers);
  return httpRequest(target, {
    method: 'POST',
    path: opts.path ?? '/mcp',
    headers,
    body: opts.rawBody ?? JSON.stringify(msg),
    agent: opts.agent,
    timeoutMs: opts.timeoutMs,
  });
}

/**
 * POSTs msg and waits for the whole answer. Returns {status, headers, msg, raw, events, sse,
 * reply}: msg is the JSON body (application/json) or, for an event stream, the response whose id
 * equals the request's (events holds every message of the stream).
 */
export async function rpc(target, msg, opts = {}) {
  const reply = await postMcp(target, msg, opts);
  await reply.complete(opts.timeoutMs ?? HTTP_DEADLINE_MS);
  const out = { status: reply.status, headers: reply.headers, sse: reply.sse, reply, events: [], msg: undefined, raw: reply.text };
  if (reply.sse) {
    out.events = reply.events.map((e) => e.json);
    const want = JSON.stringify(msg.id);
    const fin = out.events.find((m) => m && !('method' in m) && ('result' in m || 'error' in m) && JSON.stringify(m.id) === want);
    out.msg = fin;
    out.raw = fin ? JSON.stringify(fin) : reply.text;
  } else if (reply.text.length > 0 && reply.contentType.startsWith('application/json')) {
    out.msg = reply.json();
  }
  return out;
}

/** What lib.mjs's assertions take: the message plus raw (for messages) and the HTTP status. */
export function asResponse(r) {
  assert.ok(r.msg, `expected a JSON-RPC response, got HTTP ${r.status} ${r.headers['content-type'] || ''}: ${r.reply.text.slice(0, 1000)}`);
  return { ...r.msg, raw: `HTTP ${r.status}: ${r.raw}` };
}

/** A modern tools/call through rpc(); returns asResponse() after checking the status. */
export async function modernCall(target, msg, opts = {}) {
  const r = await rpc(target, msg, opts);
  if (opts.status !== undefined) assert.equal(r.status, opts.status, `HTTP status for ${msg.method}: ${r.raw}`);
  return asResponse(r);
}

let syncCounter = 0;

/**
 * Makes everything sluice forwarded before now visible in the upstream log (as lib.mjs's sync()
 * does over stdio): an allowed echo call, tagged __sync so upstreamCalls() leaves it out.
 */
export async function httpSync(s, target = s.target) {
  const n = ++syncCounter;
  const r = await rpc(target, toolCall(`sync-${n}`, 'echo', { __sync: n }, { caps: {} }), { headers: s.syncHeaders });
  assert.equal(r.status, 200, `sync echo: HTTP ${r.status} ${r.raw}`);
  assert.ok(r.msg && r.msg.result, `sync echo failed: ${r.raw}`);
}

export async function assertNotForwardedHttp(s, name, target = s.target) {
  await httpSync(s, target);
  const calls = s.upstreamCalls(name);
  assert.equal(calls.length, 0, `the upstream must not have received ${name}; got ${JSON.stringify(calls.map((c) => c.raw))}`);
}

export async function assertForwardedOnceHttp(s, name, args, state, target = s.target) {
  await httpSync(s, target);
  const calls = s.upstreamCalls(name);
  assert.equal(calls.length, 1, `the upstream must have received ${name} exactly once; got ${JSON.stringify(calls.map((c) => c.raw))}`);
  const p = calls[0].params;
  assert.equal(p.name, name);
  if (args !== undefined) assert.deepEqual(p.arguments, args, 'the upstream must receive exactly the approved arguments');
  assert.ok(!('inputResponses' in p), `inputResponses leaked upstream: ${calls[0].raw}`);
  assert.ok(!('requestState' in p), `requestState leaked upstream: ${calls[0].raw}`);
  assert.ok(!calls[0].raw.includes('sluice.confirm'), `sluice.confirm leaked upstream: ${calls[0].raw}`);
  if (state) assert.ok(!calls[0].raw.includes(state), `the sealed state leaked upstream: ${calls[0].raw}`);
  return calls[0];
}

/** Asserts a JSON-RPC error with code (and the HTTP status). */
export function assertRpcError(r, status, code, re) {
  assert.equal(r.status, status, `HTTP status: expected ${status}, got ${r.status}: ${r.reply.text.slice(0, 500)}`);
  assert.ok(r.msg && r.msg.error, `expected a JSON-RPC error body, got: ${r.reply.text.slice(0, 500)}`);
  assert.equal(r.msg.error.code, code, r.reply.text);
  if (re) assert.match(r.msg.error.message, re, r.reply.text);
  return r.msg.error;
}

// ===== the legacy era (2025-11-25) over HTTP =====

/** One legacy MCP session over HTTP: initialize mints the Mcp-Session-Id. */
export class LegacyHttpSession {
  constructor(target, opts = {}) {
    this.target = target;
    this.agent = opts.agent; // undefined: a fresh connection per request
    this.extraHeaders = opts.headers ?? {};
    this.version = opts.version ?? LEGACY;
    this.sessionId = null;
  }

  headers(over = {}) {
    const h = { ...this.extraHeaders };
    if (this.sessionId) h['Mcp-Session-Id'] = this.sessionId;
    if (this.sessionId) h['MCP-Protocol-Version'] = this.version;
    return mergeHeaders(h, over);
  }

  /** initialize + notifications/initialized; returns the initialize reply (rpc()). */
  async initialize({ capabilities = FORM_CAPS, id = 'init', expectStatus = 200 } = {}) {
    const msg = { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: this.version, capabilities, clientInfo: { name: 'sluice-e2e-http-legacy', version: '1.0.0' } } };
    const r = await rpc(this.target, msg, { modern: false, headers: this.headers(), agent: this.agent });
    if (expectStatus === 200) {
      assert.equal(r.status, 200, `initialize: HTTP ${r.status} ${r.raw}`);
      assert.ok(r.msg && r.msg.result, `initialize failed: ${r.raw}`);
      const sid = r.headers['mcp-session-id'];
      assert.ok(typeof sid === 'string' && sid.length > 0, `initialize must mint an Mcp-Session-Id; headers: ${JSON.stringify(r.headers)}`);
      this.sessionId = sid;
      this.initResult = r.msg.result;
      const n = await this.notify('notifications/initialized');
      assert.equal(n.status, 202, `notifications/initialized: HTTP ${n.status} ${n.text}`);
    }
    return r;
  }

  /** POSTs a message with the session headers; resolves at the response head. */
  post(msg, opts = {}) {
    return postMcp(this.target, msg, { modern: false, agent: this.agent, ...opts, headers: this.headers(opts.headers) });
  }

  rpc(msg, opts = {}) {
    return rpc(this.target, msg, { modern: false, agent: this.agent, ...opts, headers: this.headers(opts.headers) });
  }

  async notify(method, params, opts = {}) {
    const m = { jsonrpc: '2.0', method };
    if (params !== undefined) m.params = params;
    const r = await this.post(m, opts);
    return r.complete();
  }

  /** POSTs a JSON-RPC response (to sluice's own request); resolves with the completed reply. */
  async answer(id, result, opts = {}) {
    const r = await this.post({ jsonrpc: '2.0', id, result }, opts);
    return r.complete();
  }

  async answerError(id, error, opts = {}) {
    const r = await this.post({ jsonrpc: '2.0', id, error }, opts);
    return r.complete();
  }

  async remove(opts = {}) {
    const r = await httpRequest(this.target, { method: 'DELETE', path: '/mcp', headers: this.headers(opts.headers), agent: opts.agent ?? this.agent });
    return r.complete();
  }

  /** GET: the standalone event stream. Resolves at the response head. */
  openStream(opts = {}) {
    return httpRequest(this.target, { method: 'GET', path: '/mcp', headers: this.headers({ Accept: 'text/event-stream', ...(opts.headers ?? {}) }), agent: opts.agent ?? false });
  }
}

/** A legacy tools/call (no envelope). */
export function legacyToolCall(id, name, args, extra = {}) {
  const params = { name };
  if (args !== undefined) params.arguments = args;
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { ...params, ...extra } };
}

// ===== raw TCP =====

/** A raw client connection (net or tls): write any bytes, read everything back. */
export class RawConn {
  constructor(sock) {
    this.sock = sock;
    this.chunks = [];
    this.waiters = [];
    this.closed = false;
    this.error = null;
    this.closedAt = null;
    this.closedPromise = new Promise((resolve) => {
      sock.on('data', (c) => {
        this.chunks.push(c);
        this.#wake();
      });
      sock.on('error', (e) => {
        this.error = e;
      });
      sock.on('close', () => {
        this.closed = true;
        this.closedAt = Date.now();
        this.#wake();
        resolve();
      });
    });
  }

  #wake() {
    for (const w of this.waiters.slice()) w();
  }

  get data() {
    return Buffer.concat(this.chunks);
  }

  get text() {
    return this.data.toString('latin1');
  }

  write(bytes) {
    return new Promise((resolve) => {
      if (this.closed || this.sock.destroyed) return resolve(false);
      this.sock.write(bytes, () => resolve(true));
    });
  }

  /** Waits until pred(text) holds or the connection closes; returns whether pred held. */
  waitFor(pred, ms = HTTP_DEADLINE_MS, what = 'data') {
    ms = deadline(ms);
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        if (pred(this.text)) {
          done();
          resolve(true);
        } else if (this.closed) {
          done();
          resolve(false);
        }
      };
      const done = () => {
        clearTimeout(timer);
        const i = this.waiters.indexOf(check);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${ms} ms on a raw connection; got ${JSON.stringify(this.text.slice(0, 500))}`));
      }, ms);
      this.waiters.push(check);
      check();
    });
  }

  /** Reads one response (head and, with a Content-Length, its body): {status, headers, body}. */
  async response(ms = HTTP_DEADLINE_MS) {
    const complete = (text) => {
      const r = parseRawResponse(text);
      return r !== null && r.complete;
    };
    await this.waitFor(complete, ms, 'an HTTP response');
    const r = parseRawResponse(this.text);
    if (r === null) throw new Error(`no HTTP response on the raw connection (closed: ${this.closed}, error: ${this.error && this.error.code}); got ${JSON.stringify(this.text.slice(0, 300))}`);
    return r;
  }

  /** Waits for the peer to close (bounded); resolves true if it did. */
  async waitClosed(ms = HTTP_DEADLINE_MS) {
    try {
      await withDeadline(this.closedPromise, deadline(ms), 'the connection to close');
      return true;
    } catch {
      return false;
    }
  }

  destroy() {
    this.sock.destroy();
  }
}

/** The bytes of one HTTP/1.1 request (Host and, with a body, Content-Length added unless given). */
export function rawRequest(method, p, headers = {}, body = '') {
  const h = { Host: '127.0.0.1', ...headers };
  const lower = Object.keys(h).map((k) => k.toLowerCase());
  if (body.length && !lower.includes('content-length') && !lower.includes('transfer-encoding')) h['Content-Length'] = Buffer.byteLength(body);
  let head = `${method} ${p} HTTP/1.1\r\n`;
  for (const [k, v] of Object.entries(h)) if (v !== null && v !== undefined) head += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), Buffer.from(body, 'utf8')]);
}

/** Content-Type, Accept and (for an enveloped message) the mirrored modern headers. */
export function mcpHeadersFor(msg) {
  const claimed = !!(msg && msg.params && msg.params._meta && msg.params._meta['io.modelcontextprotocol/protocolVersion']);
  return { 'Content-Type': 'application/json', Accept: ACCEPT_BOTH, ...(claimed ? modernHeaders(msg) : {}) };
}

/** Parses the first response in text: null without a complete head. */
export function parseRawResponse(text) {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
  if (!m) return { status: NaN, headers: {}, body: '', complete: true, head: text.slice(0, end) };
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const rest = text.slice(end + 4);
  const len = headers['content-length'] !== undefined ? Number(headers['content-length']) : null;
  const complete = len === null ? true : Buffer.byteLength(rest, 'latin1') >= len;
  return { status: Number(m[1]), headers, body: len === null ? rest : rest.slice(0, len), complete, head: text.slice(0, end) };
}

/** Opens a raw connection to target (TLS when target.tls). Rejects if the connect fails. */
export function rawConnect(target, t = undefined, ms = HTTP_DEADLINE_MS) {
  ms = deadline(ms);
  return new Promise((resolve, reject) => {
    const opts = { host: '127.0.0.1', port: target.port };
    const sock = target.tls ? tls.connect({ ...opts, ...tlsOptions(target) }) : net.connect(opts);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`connect to port ${target.port} did not complete within ${ms} ms`));
    }, ms);
    const ok = () => {
      clearTimeout(timer);
      sock.removeListener('error', bad);
      const c = new RawConn(sock);
      if (t && typeof t.after === 'function') t.after(() => c.destroy());
      resolve(c);
    };
    const bad = (e) => {
      clearTimeout(timer);
      reject(e);
    };
    sock.once(target.tls ? 'secureConnect' : 'connect', ok);
    sock.once('error', bad);
  });
}

/** Resolves true when a TCP connect to port is refused (the listener is closed). */
/** Whether new connections to port are refused within ms. A signal takes a moment to reach the
 *  event loop (longer under sanitizers), and the kernel completes connects into the backlog until
 *  the listener is closed, so this tries again every 50 ms until the deadline. */
export async function connectRefused(port, ms = 2000) {
  const end = Date.now() + deadline(ms);
  for (;;) {
    const refused = await new Promise((resolve) => {
      const sock = net.connect({ host: '127.0.0.1', port });
      const timer = setTimeout(() => { sock.destroy(); resolve(false); }, 500);
      sock.once('connect', () => { clearTimeout(timer); sock.destroy(); resolve(false); });
      sock.once('error', (e) => { clearTimeout(timer); resolve(e.code === 'ECONNREFUSED'); });
    });
    if (refused) return true;
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ===== metrics =====

/** Parses Prometheus text: [{name, labels, value}]; throws on a line that is not the format. */
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (-?[0-9.eE+-]+|\+Inf|-Inf|NaN)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus text line: ${JSON.stringify(line)}`);
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
      let lm;
      let pos = 0;
      while ((lm = re.exec(m[3])) !== null) {
        labels[lm[1]] = lm[2];
        pos = re.lastIndex;
      }
      if (pos !== m[3].length) throw new Error(`bad labels in ${JSON.stringify(line)}`);
    }
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

/** The value of one sample (labels must match exactly the given ones), or undefined. */
export function metricValue(samples, name, labels = {}) {
  const s = samples.find((x) => x.name === name && Object.keys(labels).every((k) => x.labels[k] === labels[k]) && Object.keys(x.labels).length === Object.keys(labels).length);
  return s ? s.value : undefined;
}

export async function metrics(target) {
  const r = await get(target, '/metrics');
  assert.equal(r.status, 200, `/metrics: ${r.status} ${r.text}`);
  return parseMetrics(r.text);
}

// ===== certificates =====

/**
 * A CA, a server certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1), client certificates
 * alice and bob signed by that CA, and mallory signed by another CA. EC P-256 keys (fast).
 */
export function makePki(dir) {
  const f = (n) => path.join(dir, n);
  const ossl = (args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 20000 });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ossl(['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=sluice e2e CA']);
  ossl(['req', '-x509', ...ec, '-keyout', f('ca2.key'), '-out', f('ca2.pem'), '-days', '2', '-subj', '/CN=another CA']);
  const leaf = (name, subj, ca, ext) => {
    ossl(['req', ...ec, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', subj]);
    fs.writeFileSync(f(`${name}.ext`), ext);
    ossl(['x509', '-req', '-in', f(`${name}.csr`), '-CA', f(`${ca}.pem`), '-CAkey', f(`${ca}.key`), '-CAcreateserial', '-out', f(`${name}.pem`), '-days', '2', '-extfile', f(`${name}.ext`)]);
  };
  leaf('server', '/CN=127.0.0.1', 'ca', 'subjectAltName=IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
  const client = 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n';
  leaf('alice', '/CN=alice/O=sluice-e2e', 'ca', client);
  leaf('bob', '/CN=bob/O=sluice-e2e', 'ca', client);
  leaf('mallory', '/CN=alice/O=sluice-e2e', 'ca2', client);
  for (const n of ['ca.key', 'ca2.key', 'server.key', 'alice.key', 'bob.key', 'mallory.key']) fs.chmodSync(f(n), 0o600);
  const read = (n) => fs.readFileSync(f(n));
  return {
    files: { ca: f('ca.pem'), serverCert: f('server.pem'), serverKey: f('server.key') },
    ca: read('ca.pem'),
    alice: { cert: read('alice.pem'), key: read('alice.key') },
    bob: { cert: read('bob.pem'), key: read('bob.key') },
    mallory: { cert: read('mallory.pem'), key: read('mallory.key') },
  };
}

// Re-exports the tests use alongside these helpers.
export { envelope, FORM_CAPS, LEGACY, MODERN };
