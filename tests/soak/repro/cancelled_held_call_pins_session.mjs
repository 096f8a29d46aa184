#!/usr/bin/env node
// Reproduction (found by the soak test): over HTTP, a legacy held call that the client
// cancels with notifications/cancelled (PROTOCOL.md §7.5: no response is sent, correctly)
//   1. keeps its POST event stream open: sluice never ends it (no final response, no end of the
//      chunked body), so the connection stays until the client hangs up;
//   2. leaves its exchange on the session for good, even after the client closes that stream:
//      on_sweep (proxy/http_sessions.c) only forgets a session whose xchgs list is empty, so the
//      session is never expired by --session-idle and its memory (about 0.9 KiB per cancelled call,
//      measured) stays until an explicit DELETE. A client that cancels once and then goes away
//      without DELETE leaks its session for the life of the process.
// A control session whose held call is declined instead is forgotten as it should be.
//
//   node tests/soak/repro/cancelled_held_call_pins_session.mjs   (about 35 s; SLUICE_BIN to pick)
// Exit 1 and "BUG" lines while the bug is there, 0 once it is fixed.
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../..');
const BIN = path.resolve(ROOT, process.env.SLUICE_BIN || 'build/proxy/sluice');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const p = spawn(BIN, ['--listen', '127.0.0.1:0', '--session-idle', '1', '--policy', path.join(HERE, '..', 'policy.yaml'), '--',
  process.execPath, path.join(HERE, '..', 'chaos_upstream.mjs')], { stdio: ['ignore', 'ignore', 'pipe'] });
process.on('exit', () => { try { p.kill('SIGKILL'); } catch { /* gone */ } }); // no sluice outlives this script
let err = '';
p.stderr.on('data', (d) => { err += d; });
const watchdog = setTimeout(() => { p.kill('SIGKILL'); process.exit(2); }, 90000);
let port;
for (let i = 0; i < 200 && !(port = /\(port (\d+)\)/.exec(err)?.[1]); i++) await sleep(25);
for (let i = 0; i < 200 && !/serving clients/.test(err); i++) await sleep(25);

function post(body, headers = {}, streaming = false) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', agent: false,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      const o = { status: res.statusCode, headers: res.headers, text: '', req, res, ended: false };
      res.setEncoding('utf8');
      res.on('data', (d) => { o.text += d; });
      o.done = new Promise((r) => res.on('end', () => { o.ended = true; r(); }));
      if (streaming) resolve(o);
      else o.done.then(() => resolve(o));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
async function metric(name) {
  const t = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let s = '';
      res.on('data', (d) => { s += d; });
      res.on('end', () => resolve(s));
    }).on('error', reject);
  });
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(t)[1]);
}
async function session() {
  const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'repro', version: '1' } } });
  const h = { 'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-11-25' };
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  return h;
}
async function heldCall(h, answer) {
  const held = await post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'delete_file', arguments: { path: `/${answer}` } } }, h, true);
  for (let i = 0; i < 200 && !held.text.includes('elicitation/create'); i++) await sleep(10);
  const q = /"id":"(sluice-e-\d+)"/.exec(held.text)[1];
  if (answer === 'cancel') {
    const c = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user' } }, h);
    console.log(`cancel: HTTP ${c.status}`);
  } else {
    await post({ jsonrpc: '2.0', id: q, result: { action: 'decline' } }, h);
  }
  await Promise.race([held.done, sleep(3000)]);
  return held;
}

let bug = false;
const a = await session();
const held = await heldCall(a, 'cancel');
console.log(`the cancelled held call's stream ended within 3 s: ${held.ended}`);
if (!held.ended) {
  console.log('BUG: sluice never ends the POST stream of a cancelled held call');
  bug = true;
}
held.req.destroy(); // the client closes it itself, as the SDKs do
const b = await session();
const control = await heldCall(b, 'decline');
console.log(`the declined held call's stream ended: ${control.ended}`);
console.log(`sessions now: ${await metric('sluice_sessions')}; waiting 33 s (--session-idle 1 and the 30 s sweep)`);
await sleep(33000);
const left = await metric('sluice_sessions');
console.log(`sessions after the sweep: ${left} (expected 0: both are idle, nothing is in flight)`);
if (left !== 0) {
  console.log('BUG: the session with the cancelled held call is never forgotten (its exchange stays in hs->xchgs, which on_sweep requires empty)');
  bug = true;
}
clearTimeout(watchdog);
p.kill('SIGTERM');
process.exit(bug ? 1 : 0);
