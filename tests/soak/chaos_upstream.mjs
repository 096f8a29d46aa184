#!/usr/bin/env node
// chaos_upstream.mjs: an MCP server over stdio (newline-delimited JSON-RPC) for sluice's soak test.
// Node built-ins only. It serves two tools, `echo` (passthrough) and `delete_file` (gated by
// tests/soak/policy.yaml), and injects faults into its own replies:
//
//   slow          with probability CHAOS_SLOW_P a reply waits a random 0..CHAOS_SLOW_MAX_MS ms
//   out-of-order  with probability CHAOS_REORDER_P a reply opens a group: it and the next
//                 CHAOS_REORDER_N - 1 replies that are ready are held, then written in reverse
//                 order (a group also closes after CHAOS_REORDER_WAIT_MS, so nothing waits forever)
//   crash         on receiving its CHAOS_CRASH_AFTER-th tools/call (a random count in
//                 [CHAOS_CRASH_AFTER_MIN, CHAOS_CRASH_AFTER_MAX] per process, 0 = never), or with
//                 probability CHAOS_CRASH_P per tools/call, it dies at once with its other calls
//                 still unanswered: half of the time by process.exit(3), half by SIGKILL
//
// Era: CHAOS_ERA=legacy (2025-11-25: server/discover is unknown, initialize is the handshake),
// modern (2026-07-28: server/discover, the _meta envelope on every request, resultType on every
// result) or alternate (each incarnation, counted by the lines already in CHAOS_PID_FILE, takes
// the other era: a server upgraded or downgraded across a restart).
//
// CHAOS_LOG (JSONL): one line per message received, written synchronously before the message is
// acted on ({"t","pid","dir":"in","method","id","params"}), and one line per injected fault
// ({"t","pid","fault":"slow"|"reorder"|"crash",...}) and per start ({"event":"start","era"}). The
// driver reads it to see exactly which tools/call reached a server, with which arguments.
// CHAOS_PID_FILE: the pid is appended at start, so the driver can find and kill every incarnation.
// Every CHAOS_*=VALUE may also be given as a command-line argument (it wins over the environment).
import fs from 'node:fs';
import process from 'node:process';

const cfg = { ...process.env };
for (const a of process.argv.slice(2)) {
  const m = /^(CHAOS_[A-Z_]+)=(.*)$/s.exec(a);
  if (m) cfg[m[1]] = m[2];
}
const num = (k, d) => (cfg[k] === undefined || cfg[k] === '' ? d : Number(cfg[k]));
const LOG = cfg.CHAOS_LOG || '';
const PID_FILE = cfg.CHAOS_PID_FILE || '';
const SLOW_P = num('CHAOS_SLOW_P', 0);
const SLOW_MAX_MS = num('CHAOS_SLOW_MAX_MS', 200);
const REORDER_P = num('CHAOS_REORDER_P', 0);
const REORDER_N = Math.max(2, num('CHAOS_REORDER_N', 4));
const REORDER_WAIT_MS = num('CHAOS_REORDER_WAIT_MS', 40);
const CRASH_P = num('CHAOS_CRASH_P', 0);
const CRASH_MIN = num('CHAOS_CRASH_AFTER_MIN', num('CHAOS_CRASH_AFTER', 0));
const CRASH_MAX = Math.max(CRASH_MIN, num('CHAOS_CRASH_AFTER_MAX', CRASH_MIN));
const CRASH_AFTER = CRASH_MIN > 0 ? CRASH_MIN + Math.floor(Math.random() * (CRASH_MAX - CRASH_MIN + 1)) : 0;
const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const SERVER_INFO = { name: 'chaos-upstream', version: '1.0.0' };

let incarnation = 0;
if (PID_FILE) {
  try {
    incarnation = fs.readFileSync(PID_FILE, 'utf8').split('\n').filter(Boolean).length;
  } catch { /* first one */ }
  fs.appendFileSync(PID_FILE, `${process.pid}\n`);
}
let ERA = cfg.CHAOS_ERA === 'modern' ? 'modern' : 'legacy';
if (cfg.CHAOS_ERA === 'alternate') ERA = incarnation % 2 === 0 ? 'legacy' : 'modern';

function log(entry) {
  if (LOG) fs.appendFileSync(LOG, `${JSON.stringify({ t: Date.now(), pid: process.pid, ...entry })}\n`);
}
log({ event: 'start', era: ERA, incarnation, crashAfter: CRASH_AFTER });
process.stderr.write(`chaos-upstream: started pid=${process.pid} era=${ERA} crashAfter=${CRASH_AFTER}\n`);

function write(msg) {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

function fail(id, code, message, data) {
  const error = { code, message };
  if (data !== undefined) error.data = data;
  write({ jsonrpc: '2.0', id, error });
}

function result(id, res) {
  const r = ERA === 'modern' && !('resultType' in res) ? { resultType: 'complete', ...res } : res;
  write({ jsonrpc: '2.0', id, result: r });
}

const TOOLS = [
  {
    name: 'echo',
    description: 'Returns its arguments',
    inputSchema: { type: 'object', properties: { marker: { type: 'string' } }, additionalProperties: true },
    annotations: { title: 'echo', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  {
    name: 'delete_file',
    description: 'Deletes a file (pretend)',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, marker: { type: 'string' } }, required: ['path'] },
    annotations: { title: 'delete_file', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  },
];

// ===== fault injection on the way out =====

const cancelled = new Set(); // JSON ids the client cancelled
let group = null; // { items: [{id, send}], timer }

function flushGroup() {
  if (!group) return;
  const g = group;
  group = null;
  clearTimeout(g.timer);
  const live = g.items.filter((it) => !cancelled.has(JSON.stringify(it.id)));
  if (live.length >= 2) log({ fault: 'reorder', n: live.length, ids: live.map((it) => it.id) });
  for (const it of live.reverse()) it.send();
}

function emit(id, send) {
  if (group) {
    group.items.push({ id, send });
    if (group.items.length >= REORDER_N) flushGroup();
    return;
  }
  if (REORDER_P > 0 && Math.random() < REORDER_P) {
    group = { items: [{ id, send }], timer: setTimeout(flushGroup, REORDER_WAIT_MS) };
    return;
  }
  send();
}

function schedule(id, send) {
  if (SLOW_P > 0 && Math.random() < SLOW_P) {
    const ms = Math.floor(Math.random() * (SLOW_MAX_MS + 1));
    log({ fault: 'slow', ms, id });
    setTimeout(() => {
      if (!cancelled.has(JSON.stringify(id))) emit(id, send);
    }, ms);
    return;
  }
  emit(id, send);
}

// ===== requests =====

let calls = 0;
let initialized = false;

function crash(why) {
  const how = Math.random() < 0.5 ? 'exit' : 'SIGKILL';
  log({ fault: 'crash', why, how, calls });
  if (how === 'exit') process.exit(3);
  process.kill(process.pid, 'SIGKILL');
}

function toolCall(msg) {
  const { id } = msg;
  const p = msg.params ?? {};
  const args = p.arguments ?? {};
  calls += 1;
  if ((CRASH_AFTER > 0 && calls >= CRASH_AFTER) || (CRASH_P > 0 && Math.random() < CRASH_P)) {
    crash(CRASH_AFTER > 0 && calls >= CRASH_AFTER ? `call ${calls} of ${CRASH_AFTER}` : 'probability');
    return;
  }
  switch (p.name) {
    case 'echo':
      return schedule(id, () => result(id, {
        content: [{ type: 'text', text: JSON.stringify(args) }],
        structuredContent: { echoed: args, pid: process.pid },
      }));
    case 'delete_file':
      return schedule(id, () => result(id, {
        content: [{ type: 'text', text: `deleted ${JSON.stringify(args.path)}` }],
        structuredContent: { deleted: args.path, marker: args.marker, pid: process.pid },
      }));
    default:
      return fail(id, -32602, `Unknown tool: ${p.name}`);
  }
}

function envelopeOk(params) {
  const meta = params && params._meta;
  return !!(meta && meta['io.modelcontextprotocol/protocolVersion'] === MODERN
    && meta['io.modelcontextprotocol/clientCapabilities'] && typeof meta['io.modelcontextprotocol/clientCapabilities'] === 'object');
}

function request(msg) {
  const { id, method, params } = msg;
  if (ERA === 'modern') {
    if (method === 'initialize') return fail(id, -32022, 'Unsupported protocol version', { supported: [MODERN] });
    if (!envelopeOk(params)) return fail(id, -32602, 'Invalid _meta envelope');
    if (method === 'server/discover') {
      return result(id, {
        resultType: 'complete',
        supportedVersions: [MODERN],
        capabilities: { tools: {} },
        ttlMs: 0,
        cacheScope: 'private',
        _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
      });
    }
  } else {
    if (method === 'server/discover') return fail(id, -32601, 'Method not found: server/discover');
    if (method === 'initialize') {
      initialized = true;
      return result(id, { protocolVersion: LEGACY, capabilities: { tools: {} }, serverInfo: SERVER_INFO });
    }
    if (method === 'ping') return result(id, {});
    if (!initialized) return fail(id, -32600, 'Server not initialized');
  }
  switch (method) {
    case 'tools/list':
      return result(id, ERA === 'modern' ? { tools: TOOLS, ttlMs: 0, cacheScope: 'private' } : { tools: TOOLS });
    case 'tools/call':
      return toolCall(msg);
    default:
      return fail(id, -32601, `Method not found: ${method}`);
  }
}

function onLine(raw) {
  if (raw.length === 0) return;
  let msg;
  try {
    msg = JSON.parse(raw);
  } catch {
    log({ dir: 'in', parse_error: raw });
    return;
  }
  log({ dir: 'in', method: msg.method, id: msg.id, params: msg.params, hasResult: 'result' in msg, hasError: 'error' in msg });
  if (typeof msg.method === 'string' && 'id' in msg) {
    request(msg);
  } else if (msg.method === 'notifications/cancelled') {
    cancelled.add(JSON.stringify(msg.params && msg.params.requestId));
  }
}

let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }
});
process.stdin.on('end', () => {
  flushGroup();
  log({ event: 'eof' });
  setTimeout(() => process.exit(0), 0);
});
process.stdout.on('error', () => process.exit(0));
