#!/usr/bin/env node
// Reproduction (found while building the soak test): a legacy held call that the client
// cancels (notifications/cancelled) stays "open" in the approval-fatigue table (proxy/asks.c): the
// same call made again afterwards is refused with "An identical call is already waiting for the
// person's answer. This one was not run." although nothing waits any more, until confirm_ttl runs
// out (120 s by default). It also keeps counting against max_open_confirmations. A declined call
// does not have the problem (the retry is asked again). Over HTTP the table is per principal, so
// a new session of the same user is refused as well.
//
//   node tests/soak/repro/cancelled_held_call_blocks_retry.mjs   (SLUICE_BIN to pick the binary)
// Exit 1 and a "BUG" line while the bug is there, 0 once it is fixed.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../..');
const BIN = path.resolve(ROOT, process.env.SLUICE_BIN || 'build/proxy/sluice');
const p = spawn(BIN, ['--policy', path.join(HERE, '..', 'policy.yaml'), '--', process.execPath, path.join(HERE, '..', 'chaos_upstream.mjs')], { stdio: ['pipe', 'pipe', 'ignore'] });
process.on('exit', () => { try { p.kill('SIGKILL'); } catch { /* gone */ } }); // no sluice outlives this script
const watchdog = setTimeout(() => { p.kill('SIGKILL'); process.exit(2); }, 15000);
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
async function until(pred) {
  for (let i = 0; i < 100; i++) {
    const m = got.find(pred);
    if (m) return m;
    await sleep(50);
  }
  return null;
}
send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'repro', version: '1' } } });
send({ jsonrpc: '2.0', method: 'notifications/initialized' });
const args = { path: '/same' };
send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_file', arguments: args } });
const q1 = await until((m) => m.method === 'elicitation/create');
console.log(`call 1: ${q1 ? 'asked' : 'not asked'}; the client cancels it`);
send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'user' } });
await sleep(300);
send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_file', arguments: args } });
const first = await until((m) => (m.method === 'elicitation/create' && m.id !== q1.id) || m.id === 2);
const asked = first && first.method === 'elicitation/create';
console.log(`call 2 (the same call, after the cancel): ${asked ? 'asked' : `refused: ${JSON.stringify(first && first.result)}`}`);
clearTimeout(watchdog);
p.kill('SIGTERM');
if (!asked) {
  console.log('BUG: a cancelled held call still counts as an open question; the identical retry is refused');
  process.exit(1);
}
process.exit(0);
