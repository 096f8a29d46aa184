// deb_round.mjs: one confirmation round through an installed sluice binary, or through a
// running sluice's HTTP front (the container image's test).
//
//     node tests/deploy/deb_round.mjs SLUICE POLICY      # stdio: starts SLUICE --policy POLICY
//     node tests/deploy/deb_round.mjs --url http://127.0.0.1:PORT/mcp
//
// Either way sluice fronts its built-in demo server (no upstream command) with the example
// policy, and the client speaks the modern protocol: a write_file call (gated by the example
// policy) must come back input_required; the same call with an accepted answer must run; and a
// read of the file afterwards must show the content, so the demo server really executed the
// write. Prints one line per step; exits 0 when all pass, 1 otherwise. Every wait is bounded,
// and a started child is killed on the way out.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { ACCEPT, assertAsked, confirmRetry, resultText, toolCall } from '../e2e/lib.mjs';
import { modernCall } from '../e2e/http_lib.mjs';

const argv = process.argv.slice(2);
const url = argv[0] === '--url' ? new URL(argv[1]) : null;
if (url ? argv.length !== 2 || url.protocol !== 'http:' : argv.length !== 2) {
  console.error('usage: node deb_round.mjs SLUICE POLICY | --url http://HOST:PORT/mcp');
  process.exit(2);
}

let request, finish;
if (url) {
  const target = { host: url.hostname, port: Number(url.port || 80) };
  request = (msg, ms = 10000) => modernCall(target, msg, { path: url.pathname, timeoutMs: ms, status: 200 });
  finish = async () => {};
} else {
  const child = spawn(argv[0], ['--policy', argv[1]], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const pending = new Map();
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line);
    const waiter = pending.get(msg.id);
    if (waiter) { pending.delete(msg.id); waiter({ ...msg, raw: line }); }
  });
  request = (msg, ms = 10000) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to ${msg.id} in ${ms} ms; stderr: ${stderr}`)), ms);
    pending.set(msg.id, (r) => { clearTimeout(timer); resolve(r); });
    child.stdin.write(JSON.stringify(msg) + '\n');
  });
  finish = async () => {
    child.stdin.end();
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
}

const args = { path: '/from-the-deb.txt', content: 'written through the installed binary\n' };
let failed = false;
try {
  const asked = assertAsked(await request(toolCall(1, 'write_file', args)));
  assert.match(asked.message, /from-the-deb\.txt/);
  console.log('ok: write_file was held with input_required');

  const done = await request(confirmRetry(2, 'write_file', args, asked.state, ACCEPT));
  assert.equal(done.result?.resultType, 'complete', done.raw);
  assert.notEqual(done.result.isError, true, done.raw);
  console.log('ok: the accepted call ran');

  const read = await request(toolCall(3, 'read_text_file', { path: args.path }));
  assert.match(resultText(read), /written through the installed binary/, read.raw);
  console.log('ok: the demo server holds what the approved call wrote');
} catch (e) {
  failed = true;
  console.log(`not ok: ${e.message}`);
} finally {
  await finish();
}
process.exit(failed ? 1 : 0);
