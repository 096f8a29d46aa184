// deb_round.mjs: one confirmation round through an installed sluice binary, or through a
// running sluice's HTTP front (the container image's test).
//
//     node tests/deploy/deb_round.mjs SLUICE POLICY      # stdio: starts SLUICE --policy POLICY
//     node tests/deploy/deb_round.mjs --url http://127.0.0.1:PORT/mcp
//     node tests/deploy/deb_round.mjs --url http://127.0.0.1:PORT/mcp --everything
//
// With --everything, sluice fronts server-everything with deploy/policy.everything.yaml: get-env
// must come back input_required, and once accepted it must return the server's environment (its
// PORT), which only the server itself can answer. Otherwise sluice fronts its built-in demo
// server (no upstream command) with the example policy, and the client speaks the modern protocol: a write_file call (gated by the example
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
const everything = url !== null && argv[2] === '--everything';
if (url ? argv.length !== (everything ? 3 : 2) || url.protocol !== 'http:' : argv.length !== 2) {
  console.error('usage: node deb_round.mjs SLUICE POLICY | --url http://HOST:PORT/mcp [--everything]');
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

// server-everything's get-env, gated by deploy/policy.everything.yaml.
async function everythingRound() {
  const asked = assertAsked(await request(toolCall(1, 'get-env', {})));
  assert.match(asked.message, /environment variables/);
  console.log('ok: get-env was held with input_required');
  const done = await request(confirmRetry(2, 'get-env', {}, asked.state, ACCEPT), 20000);
  assert.equal(done.result?.resultType, 'complete', done.raw);
  assert.notEqual(done.result.isError, true, done.raw);
  assert.match(resultText(done), new RegExp(`"PORT": "${process.env.EVERYTHING_PORT ?? '\\d+'}"`), done.raw);
  console.log('ok: the accepted get-env ran on the server and returned its environment');
}

// The built-in demo server's write_file, gated by the example policy.
async function demoRound() {
  const args = { path: '/from-the-deb.txt', content: 'written through the installed binary\n' };
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
}

let failed = false;
try {
  await (everything ? everythingRound() : demoRound());
} catch (e) {
  failed = true;
  console.log(`not ok: ${e.message}`);
} finally {
  await finish();
}
process.exit(failed ? 1 : 0);
