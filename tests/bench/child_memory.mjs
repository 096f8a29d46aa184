// child_memory.mjs: memory per session child with --child-per-session. Starts sluice (argv[2])
// over HTTP with server-filesystem (the interop install) as the child, opens N legacy sessions
// (argv[3], default 5) and prints the growth of the children's VmRSS per session, and sluice's own.
//   node tests/bench/child_memory.mjs build/proxy/sluice 5
import { spawn, execSync } from 'node:child_process';
import fs from 'node:fs';
const bin = process.argv[2];
const root = fs.mkdtempSync('/tmp/memc-');
const fsServer = new URL('../interop/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url).pathname;
const p = spawn(bin, ['--listen', '127.0.0.1:0', '--child-per-session', '--', 'node', fsServer, root], { stdio: ['ignore', 'ignore', 'pipe'] });
let err = '';
p.stderr.on('data', (d) => { err += d; });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let port;
for (let i = 0; i < 100 && !port; i++) { await sleep(100); const m = /port (\d+)/.exec(err); if (m) port = Number(m[1]); }
for (let i = 0; i < 100; i++) { await sleep(100); try { const r = await fetch(`http://127.0.0.1:${port}/readyz`); if (r.status === 200) break; } catch {} }
const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const kids = () => execSync(`pgrep -P ${p.pid} || true`).toString().split('\n').filter(Boolean).map(Number);
const sum = () => kids().reduce((a, k) => a + rss(k), 0);
const before = sum(), sBefore = rss(p.pid);
const N = Number(process.argv[3] || 5);
for (let i = 0; i < N; i++) {
  const r = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'm' + i, version: '1' } } }) });
  await r.text();
}
await sleep(1500);
console.log(`children ${kids().length}; child RSS before ${before} kB, after ${sum()} kB: ${((sum() - before) / N).toFixed(0)} kB per session child; sluice RSS ${sBefore} -> ${rss(p.pid)} kB`);
p.kill('SIGTERM');
await sleep(1500);
