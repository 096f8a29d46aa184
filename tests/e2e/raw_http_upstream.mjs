// raw_http_upstream.mjs: a scripted Streamable HTTP MCP server for http_upstream.test.mjs, written
// at the byte level on node:net (or node:tls), so that a test decides every byte of a response:
// its framing (Content-Length, chunked with any chunk sizes, extensions and trailers, or the end of
// the connection), interim 1xx responses, malformed heads, where the bytes are split into TCP
// writes and how long it waits between them, and when a connection is closed.
//
// It records every TCP connection and every request (head, headers, body, parsed JSON, and the
// connection it came on), so a test can count POSTs and connections.
//
// Era: 'modern' (2026-07-28: answers server/discover, refuses initialize) or 'legacy' (2025-11-25:
// refuses server/discover, initialize mints an Mcp-Session-Id that later requests must carry).
// Tools: the default answers a tools/call with a text that is JSON.stringify(arguments) in a
// Content-Length framed application/json reply; up.tool(name, handler) scripts any other reply.
// up.schema(name, inputSchema) lists a tool with that inputSchema (e.g. one carrying x-mcp-header
// marks; the tool is then callable like echo unless up.tool scripts it); up.pageSize (opts.pageSize)
// > 0 makes tools/list answer in pages of that many tools, linked by nextCursor.
// mcpParamHeaders(req) gives the Mcp-Param-* header lines of a recorded request as sent (OWS trimmed).
// up.hook (when set) sees every request first and returns true when it answered it itself.
import net from 'node:net';
import tls from 'node:tls';

export const MODERN = '2026-07-28';
export const LEGACY = '2025-11-25';
const SERVER_INFO = { name: 'raw-http-upstream', version: '1.0.0' };

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ===== building raw bytes =====

/** A response head. headers: [[name, value], ...] or {name: value}. opts.lf: bare LF line ends. */
export function headBytes(status, headers = [], opts = {}) {
  const eol = opts.lf ? '\n' : '\r\n';
  const reason = opts.reason ?? ({ 100: 'Continue', 200: 'OK', 202: 'Accepted', 204: 'No Content', 400: 'Bad Request', 404: 'Not Found', 500: 'Internal Server Error' }[status] ?? 'Whatever');
  const list = Array.isArray(headers) ? headers : Object.entries(headers);
  let s = `${opts.version ?? 'HTTP/1.1'} ${status}${reason === null ? '' : ` ${reason}`}${eol}`;
  for (const [k, v] of list) s += `${k}: ${v}${eol}`;
  return Buffer.from(s + eol, 'latin1');
}

/**
 * The chunked transfer coding of body, in chunks of the given sizes (cycled). opts.ext: a chunk
 * extension put on every size line; opts.upper: hex in capitals; opts.zeros: leading zeros on the
 * size; opts.trailers: [[name, value]] after the last chunk.
 */
export function chunkedBytes(body, sizes = [16], opts = {}) {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const parts = [];
  let off = 0;
  let i = 0;
  while (off < b.length) {
    const n = Math.min(sizes[i % sizes.length], b.length - off);
    i += 1;
    let hex = n.toString(16);
    if (opts.upper) hex = hex.toUpperCase();
    if (opts.zeros) hex = '0'.repeat(opts.zeros) + hex;
    parts.push(Buffer.from(`${hex}${opts.ext ?? ''}\r\n`, 'latin1'), b.subarray(off, off + n), Buffer.from('\r\n'));
    off += n;
  }
  let end = `0${opts.ext ?? ''}\r\n`;
  for (const [k, v] of opts.trailers ?? []) end += `${k}: ${v}\r\n`;
  parts.push(Buffer.from(`${end}\r\n`, 'latin1'));
  return Buffer.concat(parts);
}

/**
 * An event stream. Each item: a JSON-RPC message (object), or {comment}, or {data: string,
 * event, id, retry, multiline: true (one data: line per JSON line)}. opts.crlf: CRLF line ends;
 * opts.eol: any line end ('\r', as the event-stream rules allow too).
 */
export function sseBytes(items, opts = {}) {
  const eol = opts.eol || (opts.crlf ? '\r\n' : '\n');
  let s = '';
  for (const it of items) {
    if (it && typeof it === 'object' && 'comment' in it) {
      s += `:${it.comment}${eol}${eol}`;
      continue;
    }
    const ev = it && typeof it === 'object' && 'data' in it ? it : { data: JSON.stringify(it) };
    if (ev.event) s += `event: ${ev.event}${eol}`;
    if (ev.id !== undefined) s += `id: ${ev.id}${eol}`;
    if (ev.retry !== undefined) s += `retry: ${ev.retry}${eol}`;
    for (const line of ev.data.split('\n')) s += `data: ${line}${eol}`;
    s += eol;
  }
  return Buffer.from(s, 'utf8');
}

/** Splits buf into pieces of the given sizes (cycled), or at the given offsets (opts.at). */
export function splitBytes(buf, sizes) {
  const out = [];
  let off = 0;
  let i = 0;
  while (off < buf.length) {
    const n = Math.max(1, sizes[i % sizes.length]);
    i += 1;
    out.push(buf.subarray(off, off + n));
    off += n;
  }
  return out;
}

export function splitAt(buf, offsets) {
  const out = [];
  let prev = 0;
  for (const o of [...offsets].sort((a, b) => a - b)) {
    if (o > prev && o < buf.length) {
      out.push(buf.subarray(prev, o));
      prev = o;
    }
  }
  out.push(buf.subarray(prev));
  return out;
}

// ===== the server =====

/** What a handler writes with. Writes are in order; write() with an array writes piece by piece. */
export class Res {
  constructor(conn) {
    this.conn = conn;
    this.sock = conn.sock;
  }

  /** Writes data (Buffer | string | array of them), waiting delayMs between pieces. */
  async write(data, delayMs = 0) {
    const pieces = Array.isArray(data) ? data : [data];
    for (let i = 0; i < pieces.length; i++) {
      if (this.sock.destroyed) return;
      const p = pieces[i];
      await new Promise((resolve) => this.sock.write(typeof p === 'string' ? Buffer.from(p, 'latin1') : p, () => resolve()));
      if (delayMs > 0 && i + 1 < pieces.length) await sleep(delayMs);
    }
  }

  /** Half-closes (FIN) after what was written. */
  end() {
    return new Promise((resolve) => {
      if (this.sock.destroyed) return resolve();
      this.sock.end(() => resolve());
    });
  }

  /** Closes the connection at once. */
  destroy() {
    this.sock.destroy();
  }

  /** A whole response with a Content-Length body (headers added to Content-Type/Length). */
  async json(status, body, headers = [], opts = {}) {
    const b = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
    const h = [['Content-Type', 'application/json'], ...headers, ['Content-Length', String(b.length)]];
    const bytes = Buffer.concat([headBytes(status, h, opts), b]);
    await this.write(opts.split ? splitBytes(bytes, opts.split) : bytes, opts.delayMs ?? 0);
  }

  async empty(status, headers = []) {
    await this.write(headBytes(status, [...headers, ['Content-Length', '0']]));
  }
}

let connSeq = 0;

export class RawUpstream {
  /** opts: era ('modern' | 'legacy'), tls ({key, cert}), sessionId (fn(n) -> the n-th session id),
   *  version (what a legacy initialize answers), discover ('rpc-error' (default: 200 with
   *  -32601 for our id) | 'sdk-400' (HTTP 400, error with id null, as the 2025 TypeScript SDK)). */
  constructor(opts = {}) {
    this.era = opts.era ?? 'modern';
    this.tlsOpts = opts.tls;
    this.sessionIdFor = opts.sessionId ?? ((n) => `sess-${n}-${process.pid}`);
    this.version = opts.version ?? LEGACY;
    this.discover = opts.discover ?? 'rpc-error';
    this.requests = [];
    this.conns = [];
    this.tools = new Map();
    this.schemas = new Map(); // tool name -> the inputSchema tools/list gives it
    this.pageSize = opts.pageSize ?? 0;
    this.sessions = new Set();
    this.sessionCount = 0;
    this.waiters = [];
    this.hook = null;
    this.tlsErrors = [];
    this.tcpConnections = 0;
    this.requireSession = true; // legacy: requests after initialize need a known Mcp-Session-Id
  }

  listen(port = 0) {
    return new Promise((resolve, reject) => {
      const onConn = (sock) => this.#accept(sock);
      if (this.tlsOpts) {
        this.server = tls.createServer({ ...this.tlsOpts }, onConn);
        this.server.on('tlsClientError', (e) => this.tlsErrors.push(e));
        this.server.on('connection', () => { this.tcpConnections += 1; this.#wake(); });
      } else {
        this.server = net.createServer(onConn);
        this.server.on('connection', () => { this.tcpConnections += 1; this.#wake(); });
      }
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.port = this.server.address().port;
        resolve(this.port);
      });
    });
  }

  url(p = '/mcp') {
    return `${this.tlsOpts ? 'https' : 'http'}://127.0.0.1:${this.port}${p}`;
  }

  /** Stops listening and closes every connection. */
  async close() {
    if (!this.server) return;
    const server = this.server;
    this.server = null;
    for (const c of this.conns) c.sock.destroy();
    await new Promise((resolve) => server.close(() => resolve()));
  }

  tool(name, handler) {
    this.tools.set(name, handler);
  }

  /** Lists tool name with this inputSchema (null: back to the default {type: 'object'}). */
  schema(name, inputSchema) {
    if (inputSchema === null) this.schemas.delete(name);
    else this.schemas.set(name, inputSchema);
  }

  #accept(sock) {
    sock.setNoDelay(true);
    const conn = { id: ++connSeq, sock, buf: Buffer.alloc(0), closed: false, requests: [], chain: Promise.resolve(), busy: false };
    this.conns.push(conn);
    sock.on('data', (d) => {
      conn.buf = Buffer.concat([conn.buf, d]);
      this.#parse(conn);
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      conn.closed = true;
      this.#wake();
    });
    this.#wake();
  }

  #parse(conn) {
    for (;;) {
      const end = conn.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const headText = conn.buf.subarray(0, end).toString('latin1');
      const lines = headText.split('\r\n');
      const [method, target, version] = lines[0].split(' ');
      const headerList = lines.slice(1).map((l) => {
        const i = l.indexOf(':');
        return [l.slice(0, i), l.slice(i + 1).trim()];
      });
      const headers = {};
      for (const [k, v] of headerList) {
        const key = k.toLowerCase();
        headers[key] = key in headers ? `${headers[key]}, ${v}` : v;
      }
      const len = Number(headers['content-length'] || 0);
      if (conn.buf.length < end + 4 + len) return;
      const body = conn.buf.subarray(end + 4, end + 4 + len);
      conn.buf = conn.buf.subarray(end + 4 + len);
      let json;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        json = undefined;
      }
      const req = {
        seq: this.requests.length + 1, connId: conn.id, conn, method, target, version, headText,
        headerList, headers, body, text: body.toString('utf8'), json, pipelined: conn.busy, at: Date.now(),
      };
      this.requests.push(req);
      conn.requests.push(req);
      conn.busy = true;
      conn.chain = conn.chain.then(() => this.#handle(req)).catch(() => {}).finally(() => {
        if (conn.requests[conn.requests.length - 1] === req) conn.busy = false;
        req.answered = true;
        this.#wake();
      });
      this.#wake();
    }
  }

  #wake() {
    for (const w of this.waiters.slice()) w();
  }

  /** Waits until pred() holds (checked on every request and connection event). */
  waitFor(pred, ms, what = 'a request') {
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        let v;
        try {
          v = pred();
        } catch (e) {
          done();
          reject(e);
          return;
        }
        if (v) {
          done();
          resolve(v);
        }
      };
      const done = () => {
        clearTimeout(timer);
        const i = this.waiters.indexOf(check);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`the upstream saw no ${what} within ${ms} ms; requests: ${this.describe()}`));
      }, ms);
      this.waiters.push(check);
      check();
    });
  }

  /** The requests that were POSTs of a JSON-RPC message with this method (and tool name). */
  posts(method, name) {
    return this.requests.filter((r) => r.method === 'POST' && r.json && r.json.method === method
      && (name === undefined || (r.json.params && r.json.params.name === name)));
  }

  calls(name) {
    return this.posts('tools/call', name);
  }

  waitCall(name, ms, n = 1) {
    return this.waitFor(() => (this.calls(name).length >= n ? this.calls(name)[n - 1] : null), ms, `${n} tools/call ${name}`);
  }

  describe() {
    return JSON.stringify(this.requests.map((r) => `#${r.connId} ${r.method} ${r.json ? `${r.json.method ?? 'response'}${r.json.params && r.json.params.name ? `(${r.json.params.name})` : ''}` : r.text.slice(0, 60)}`));
  }

  // ===== the default MCP server =====

  result(msg, res) {
    const result = this.era === 'modern' ? { resultType: 'complete', ...res } : res;
    return { jsonrpc: '2.0', id: msg.id, result };
  }

  textResult(msg, text) {
    return this.result(msg, { content: [{ type: 'text', text }] });
  }

  error(msg, code, message) {
    return { jsonrpc: '2.0', id: msg.id, error: { code, message } };
  }

  async #handle(req) {
    const res = new Res(req.conn);
    if (this.hook && (await this.hook(req, res))) return;
    const msg = req.json;
    if (req.method !== 'POST' || !msg || typeof msg !== 'object') {
      await res.json(405, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'POST JSON only' } });
      return;
    }
    if (!('id' in msg) || !('method' in msg)) { // a notification or a response
      if (this.era === 'legacy' && msg.method !== undefined && !this.#sessionOk(req)) {
        await res.empty(400);
        return;
      }
      await res.empty(202);
      return;
    }
    if (this.era === 'modern') {
      if (msg.method === 'server/discover') {
        await res.json(200, this.result(msg, {
          supportedVersions: [MODERN], capabilities: { tools: { listChanged: false } }, ttlMs: 0, cacheScope: 'private',
          _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
        }));
        return;
      }
      if (msg.method === 'initialize') {
        await res.json(200, { jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: [MODERN] } } });
        return;
      }
    } else {
      if (msg.method === 'server/discover') {
        if (this.discover === 'sdk-400') {
          await res.json(400, { jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: Server not initialized' }, id: null });
        } else {
          await res.json(200, this.error(msg, -32601, 'Method not found'));
        }
        return;
      }
      if (msg.method === 'initialize') {
        const sid = this.sessionIdFor(++this.sessionCount);
        this.sessions.add(sid);
        await res.json(200, this.result(msg, {
          protocolVersion: this.version, capabilities: { tools: { listChanged: false } }, serverInfo: SERVER_INFO,
        }), [['Mcp-Session-Id', sid]]);
        return;
      }
      if (!this.#sessionOk(req)) {
        if (req.headers['mcp-session-id'] === undefined) await res.json(400, this.error(msg, -32600, 'Mcp-Session-Id required'));
        else await res.json(404, this.error(msg, -32001, 'Session not found'));
        return;
      }
    }
    if (msg.method === 'tools/list') {
      const names = [...new Set(['echo', ...this.tools.keys(), ...this.schemas.keys()])];
      let tools = names.map((name) => ({ name, description: `tool ${name}`, inputSchema: this.schemas.get(name) ?? { type: 'object' } }));
      const page = {};
      if (this.pageSize > 0) {
        const cursor = msg.params && msg.params.cursor;
        const start = typeof cursor === 'string' && /^page-\d+$/.test(cursor) ? Number(cursor.slice(5)) : 0;
        if (start + this.pageSize < tools.length) page.nextCursor = `page-${start + this.pageSize}`;
        tools = tools.slice(start, start + this.pageSize);
      }
      await res.json(200, this.result(msg, this.era === 'modern' ? { tools, ...page, ttlMs: 0, cacheScope: 'private' } : { tools, ...page }));
      return;
    }
    if (msg.method === 'ping') {
      await res.json(200, this.result(msg, {}));
      return;
    }
    if (msg.method === 'tools/call') {
      const name = msg.params && msg.params.name;
      const h = this.tools.get(name);
      if (h) {
        await h(req, res, msg);
        return;
      }
      await res.json(200, this.textResult(msg, JSON.stringify((msg.params && msg.params.arguments) ?? {})));
      return;
    }
    await res.json(200, this.error(msg, -32601, `Method not found: ${msg.method}`));
  }

  #sessionOk(req) {
    if (this.era !== 'legacy' || !this.requireSession) return true;
    const sid = req.headers['mcp-session-id'];
    return sid !== undefined && this.sessions.has(sid);
  }

  /** Forgets every session (a restarted server): sessioned requests then get 404. */
  forgetSessions() {
    this.sessions.clear();
  }
}

/**
 * The Mcp-Param-* header lines of a recorded request, in order, as sent: [[name, value]]
 * (the name as written, the value without the OWS around it; a repeated header appears twice).
 */
export function mcpParamHeaders(req) {
  return req.headText.split('\r\n').slice(1)
    .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).replace(/^[ \t]+|[ \t]+$/g, '')])
    .filter(([k]) => k.toLowerCase().startsWith('mcp-param-'));
}
