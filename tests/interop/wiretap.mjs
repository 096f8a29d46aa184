#!/usr/bin/env node
// wiretap.mjs: sits between a stdio MCP client and a stdio server and records every line.
//   node wiretap.mjs LOGFILE -- CMD [ARG...]
// Each line that passes is appended to LOGFILE as {"dir":"c2s"|"s2c","line":<text>}. The bytes are
// relayed unchanged; stderr is inherited. Exits with the child's status; on stdin EOF it closes the
// child's stdin, and on SIGTERM it forwards SIGTERM.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import process from 'node:process';

const sep = process.argv.indexOf('--');
const logFile = process.argv[2];
if (!logFile || sep < 0 || sep + 1 >= process.argv.length) {
  process.stderr.write('usage: wiretap.mjs LOGFILE -- CMD [ARG...]\n');
  process.exit(2);
}
const [cmd, ...args] = process.argv.slice(sep + 1);
const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });

function tap(dir) {
  let buf = '';
  return (chunk) => {
    buf += chunk.toString('utf8');
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      fs.appendFileSync(logFile, JSON.stringify({ dir, line: buf.slice(0, nl) }) + '\n');
      buf = buf.slice(nl + 1);
    }
  };
}

const c2s = tap('c2s');
const s2c = tap('s2c');
process.stdin.on('data', (chunk) => {
  c2s(chunk);
  child.stdin.write(chunk);
});
process.stdin.on('end', () => child.stdin.end());
child.stdin.on('error', () => {});
child.stdout.on('data', (chunk) => {
  s2c(chunk);
  process.stdout.write(chunk);
});
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
