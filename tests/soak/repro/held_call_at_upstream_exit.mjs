#!/usr/bin/env node
// Reproduction (found by the soak test): over stdio, a legacy client's held call (sluice has
// sent its elicitation/create and waits for the answer) gets NO response when the upstream server
// exits on its own, although sluice answers the calls it had forwarded with -32603 and the README
// promises "pending requests get a JSON-RPC error first". The audit journal records the held call
// as decision "cancelled", reason "client-gone", while the client never went away.
//
//   node tests/soak/repro/held_call_at_upstream_exit.mjs      (SLUICE_BIN to pick the binary)
// Exit 1 and "BUG" lines while the bug is there, 0 once it is fixed.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../..');
const BIN = path.resolve(ROOT, process.env.SLUICE_BIN || 'build/proxy/sluice');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-repro-'));
const audit = path.join(dir, 'audit.jsonl');
// The upstream exits (status 3) on receiving its first tools/call.
const p = spawn(BIN, ['--policy', path.join(HERE, '..', 'policy.yaml'), '--audit', audit, '--',
  process.execPath, path.join(HERE, '..', 'chaos_upstream.mjs'), 'CHAOS_CRASH_AFTER=1'], { stdio: ['pipe', 'pipe', 'pipe'] });
process.on('exit', () => { try { p.kill('SIGKILL'); } catch { /* gone */ } }); // no sluice outlives this script
p.stderr.resume();
const got = [];
let buf = '';
p.stdout.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    got.push(JSON.parse(buf.slice(0, i)));
    buf = buf.slice(i + 1);
  }
});
const send = (m) => p.stdin.write(`${JSON.stringify(m)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const exited = new Promise((r) => p.on('exit', (code, signal) => r({ code, signal })));
const timer = setTimeout(() => p.kill('SIGKILL'), 10000);

send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'repro', version: '1' } } });
send({ jsonrpc: '2.0', method: 'notifications/initialized' });
send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_file', arguments: { path: '/held' } } });
for (let i = 0; i < 100 && !got.some((m) => m.method === 'elicitation/create'); i++) await sleep(50);
console.log('sluice asked:', got.some((m) => m.method === 'elicitation/create'));
send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } }); // kills the upstream
const ex = await exited;
clearTimeout(timer);
await sleep(100);
console.log(`sluice exited: code ${ex.code} signal ${ex.signal}`);
const r1 = got.filter((m) => m.id === 1 && !('method' in m));
const r2 = got.filter((m) => m.id === 2 && !('method' in m));
console.log('response to the forwarded call 2:', JSON.stringify(r2));
console.log('response to the held call 1:', JSON.stringify(r1));
const journal = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.id === 1);
console.log('journal for call 1:', journal.map((l) => `${l.decision}/${l.reason}`).join(', '));
let bug = false;
if (r1.length !== 1) {
  console.log('BUG: the held call got no response (the client is still connected; expected an error or an isError refusal)');
  bug = true;
}
if (journal.some((l) => l.reason === 'client-gone')) {
  console.log('BUG: the journal says client-gone, but it was the upstream that went away');
  bug = true;
}
fs.rmSync(dir, { recursive: true, force: true });
process.exit(bug ? 1 : 0);
