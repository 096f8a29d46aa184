#!/usr/bin/env node
// Reproduction (found by the soak's store scenario): with --store redis://..., a client sends an
// accepted round two and drops its connection while sluice waits for Redis to record the nonce
// (SET NX). sluice frees the waiting call with the connection (session_free -> spend_free_all ->
// store_cancel), but Redis has recorded the nonce as RUNNING: the approved call never runs, no
// outcome is ever put, and every retry of the same round polls for one until --upstream-timeout
// (300 s by default) and then gets "This call was approved and is running (or its outcome was
// lost); sluice did not run it again. Its outcome is unknown." The person's approval is lost and
// the journal has no decision for that round two. In the soak this shows right after a Redis
// restart, when the first operations on the new connection are slower than a client's drop.
// Here a TCP relay in front of Redis holds the SET NX until the client has gone.
//
//   node tests/soak/repro/store_spend_abandoned_at_drop.mjs   (SLUICE_BIN to pick the binary)
// Needs redis-server. Exit 1 and a "BUG" line while the bug is there, 0 once it is fixed (the
// retry gets the call's result, run once).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis, stallRelay } from '../../e2e/redis_lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../..');
const BIN = path.resolve(ROOT, process.env.SLUICE_BIN || 'build/proxy/sluice');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hooks = [];
const t = { after: (fn) => hooks.push(fn) };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-repro-'));
let p = null;
const cleanup = async () => {
  if (p) try { p.kill('SIGKILL'); } catch { /* gone */ }
  for (const fn of hooks.reverse()) await fn();
  hooks.length = 0;
  fs.rmSync(dir, { recursive: true, force: true });
};
const watchdog = setTimeout(async () => { await cleanup(); process.exit(2); }, 30000);

const redis = await startRedis(t);
const relay = await stallRelay(t, redis.port);
const key = path.join(dir, 'key');
fs.writeFileSync(key, crypto.randomBytes(32), { mode: 0o600 });
const upLog = path.join(dir, 'upstream.jsonl');
function upEnv() {
  const e = { ...process.env, CHAOS_LOG: upLog };
  delete e.SLUICE_STATE_KEY; // the key file above
  return e;
}
p = spawn(BIN, ['--listen', '127.0.0.1:0', '--policy', path.join(HERE, '..', 'policy.yaml'), '--state-key-file', key,
  '--store', `redis://127.0.0.1:${relay.port}`, '--store-timeout', '3000', '--upstream-timeout', '3', '--drain-grace', '1',
  '--', process.execPath, path.join(HERE, '..', 'chaos_upstream.mjs'), 'CHAOS_ERA=modern'],
{ stdio: ['ignore', 'ignore', 'pipe'], env: upEnv() });
process.on('exit', () => { try { p.kill('SIGKILL'); } catch { /* gone */ } }); // no sluice outlives this script
let stderr = '';
p.stderr.on('data', (d) => { stderr += d; });
let port = null;
for (let i = 0; i < 200 && !(port && /store: connected to redis/.test(stderr)); i++) {
  const m = /\(port (\d+)\)/.exec(stderr);
  if (m) port = Number(m[1]);
  await sleep(50);
}
if (!port) {
  console.log(`sluice did not start: ${stderr}`);
  await cleanup();
  process.exit(2);
}

const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'repro', version: '1' } };
const args = { path: '/repro/abandoned', marker: 'repro-1' };
const call = (id, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'delete_file', arguments: args, ...extra, _meta: meta } });
/** POSTs msg: {req, sent, reply}; reply resolves with the response (null if none came). */
function post(msg) {
  const body = JSON.stringify(msg);
  let sentResolve;
  const sent = new Promise((r) => { sentResolve = r; });
  const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, headers: {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Content-Length': Buffer.byteLength(body),
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'delete_file' } });
  const reply = new Promise((resolve) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        const line = text.split('\n').find((l) => l.startsWith('data:'));
        try { resolve(JSON.parse(line ? line.slice(5) : text)); } catch { resolve(null); }
      });
      res.on('error', () => resolve(null));
    });
    req.on('error', () => resolve(null));
  });
  req.end(body, sentResolve);
  return { req, sent, reply };
}
const runs = () => {
  try {
    return fs.readFileSync(upLog, 'utf8').split('\n').filter((l) => l.includes('"tools/call"') && l.includes('"dir":"in"')).length;
  } catch {
    return 0;
  }
};
const text = (m) => JSON.stringify(m && (m.result || m.error));

for (let i = 0; i < 100; i++) { // until /readyz says the upstream is up
  const ok = await new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => { res.resume(); resolve(res.statusCode === 200); })
      .on('error', () => resolve(false));
  });
  if (ok) break;
  await sleep(100);
}
const r1 = await post(call(1)).reply;
const state = r1 && r1.result && r1.result.requestState;
console.log(`round one: ${state ? 'asked' : text(r1)}`);
const accept = { inputResponses: { 'sluice.confirm': { action: 'accept', content: { approve: true } } }, requestState: state };
relay.stall(); // Redis answers nothing for a moment: the spend's SET NX waits in the relay
const x = post(call(2, accept));
await x.sent;
await sleep(300);
x.req.destroy(); // the client goes away while its spend waits
await sleep(300);
relay.resume(); // now Redis records the nonce as running; nobody will run the call
await sleep(500);
console.log(`accepted round two sent, connection dropped while the store was slow; runs so far: ${runs()}`);
const t0 = Date.now();
const r3 = await post(call(3, accept)).reply;
const took = ((Date.now() - t0) / 1000).toFixed(1);
const n = runs();
console.log(`the retry, after ${took} s: ${text(r3).slice(0, 300)}; runs: ${n}`);
clearTimeout(watchdog);
await cleanup();
if (n === 0 && /outcome is unknown/.test(text(r3))) {
  console.log('BUG: the approved call never ran, and its retry waited --upstream-timeout to be told its outcome is unknown');
  process.exit(1);
}
process.exit(n === 1 && r3 && r3.result && !r3.result.isError ? 0 : 3);
