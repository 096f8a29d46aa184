// audit_chain.test.mjs: the journal as a hash chain, end to end. sluice writes it while serving
// calls, `sluice audit verify` checks it (and names the line a tamperer touched), the chain goes
// on across a restart and a rotation, and the heads anchored to the log or to Redis catch what
// the chain alone cannot: lines cut off the end.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, confirmRetry, deadline, policyPath, runSluice, sleep, startSluice,
  suiteOptions, tmpDir, toolCall,
} from './lib.mjs';
import { redisCli, redisSuiteOptions, startRedis } from './redis_lib.mjs';

const GATE = policyPath('gate.yaml');
const ZERO = '0'.repeat(64);

/** Calls that give allow, deny, asked and client-accepted records; checks what the upstream ran. */
async function someCalls(s, tag) {
  assert.ok((await s.request(toolCall(`${tag}-echo`, 'echo', { n: tag }))).result);
  assert.ok((await s.request(toolCall(`${tag}-deny`, 'drop_table', { table: 't' }))).result.isError);
  const args = { path: `/${tag}`, content: 'x' };
  const q = assertAsked(await s.request(toolCall(`${tag}-w1`, 'write_file', args)));
  const r = await s.request(confirmRetry(`${tag}-w2`, 'write_file', args, q.state, ACCEPT));
  assert.ok(r.result && !r.result.isError, r.raw);
  await s.sync();
  assert.ok(s.upstreamCalls('write_file').some((c) => c.params.arguments.path === `/${tag}`), 'the accepted call ran');
  assert.ok(!s.upstreamCalls('drop_table').length, 'the denied call did not run');
}

async function journal(t, dir, audit, args = [], tag = 'a') {
  const s = startSluice(t, { policy: GATE, dir, audit, args });
  await someCalls(s, tag);
  const { code } = await s.closeStdin(5000);
  assert.equal(code, 0, s.stderr);
  return s;
}

/** An independent check of the format: seq counts up, prev is the SHA-256 of the line before. */
function assertChained(text) {
  const lines = text.split('\n');
  assert.equal(lines.pop(), '', 'the file ends with a newline');
  let prev = null;
  for (const [i, line] of lines.entries()) {
    const m = /^\{"seq":(\d+),"prev":"([0-9a-f]{64})",/.exec(line);
    assert.ok(m, `line ${i + 1} does not start with seq and prev: ${line}`);
    if (prev === null) {
      assert.equal(m[2], ZERO, 'the first line opens the chain');
    } else {
      assert.equal(Number(m[1]), prev.seq + 1, `line ${i + 1}`);
      assert.equal(m[2], crypto.createHash('sha256').update(prev.line).digest('hex'), `line ${i + 1}`);
    }
    prev = { seq: Number(m[1]), line };
  }
  return lines;
}

function verify(args) {
  const r = runSluice(['audit', 'verify', ...args]);
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function rewriteLine(file, n, edit) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  lines[n - 1] = edit(lines[n - 1]);
  fs.writeFileSync(file, lines.join('\n'));
}

async function waitFor(pred, ms, what) {
  const end = Date.now() + deadline(ms);
  while (!pred()) {
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('audit journal: the hash chain', suiteOptions(), () => {
  test('sluice writes a chain that audit verify accepts, and names the line an edit touched', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    await journal(t, dir, audit);
    const lines = assertChained(fs.readFileSync(audit, 'utf8'));
    assert.match(lines[0], /"event":"new-chain","reason":"new-file","chain":"[0-9a-f]{32}"/);
    const ok = verify([audit]);
    assert.equal(ok.code, 0, ok.out + ok.err);
    assert.match(ok.out, new RegExp(`^ok: ${lines.length} records in 1 file, seq 1 to ${lines.length}, 1 chain`));
    const head = crypto.createHash('sha256').update(lines[lines.length - 1]).digest('hex');
    assert.match(ok.out, new RegExp(`head: seq ${lines.length} sha256 ${head}`));

    // A decision rewritten in the middle: found at that line.
    const k = lines.findIndex((l) => l.includes('"decision":"deny"')) + 1;
    assert.ok(k > 1 && k < lines.length);
    rewriteLine(audit, k, (l) => l.replace('"decision":"deny"', '"decision":"allow"'));
    const bad = verify([audit]);
    assert.equal(bad.code, 1, bad.out);
    assert.match(bad.out, new RegExp(`^${audit.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${k}: this line was changed after it was written`));
  });

  test('a line removed is found where it was', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    await journal(t, dir, audit);
    const lines = fs.readFileSync(audit, 'utf8').split('\n');
    lines.splice(2, 1);
    fs.writeFileSync(audit, lines.join('\n'));
    const r = verify([audit]);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /audit\.jsonl:3: seq jumps from 2 to 4/);
  });

  test('a restart continues the chain; --audit-sync always writes the same chain', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    await journal(t, dir, audit, [], 'a');
    const first = fs.readFileSync(audit, 'utf8').split('\n').length - 1;
    await journal(t, dir, audit, ['--audit-sync', 'always'], 'b');
    const lines = assertChained(fs.readFileSync(audit, 'utf8'));
    assert.match(lines[first], /"event":"continued","reason":"restart"/);
    const r = verify([audit]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /, 1 chain\n/);
  });

  test('rotation by rename: the new file starts with a line naming the old file\'s last hash', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const old = `${audit}.1`;
    const s = startSluice(t, { policy: GATE, dir, audit });
    await someCalls(s, 'a');
    fs.renameSync(audit, old); // what logrotate does (without copytruncate)
    await someCalls(s, 'b');
    assert.equal((await s.closeStdin(5000)).code, 0, s.stderr);
    const a = fs.readFileSync(old, 'utf8').split('\n').filter(Boolean);
    const b = fs.readFileSync(audit, 'utf8').split('\n').filter(Boolean);
    const lastHash = crypto.createHash('sha256').update(a[a.length - 1]).digest('hex');
    assert.ok(b[0].startsWith(`{"seq":${a.length + 1},"prev":"${lastHash}",`), b[0]);
    assert.match(b[0], /"event":"rotated","reason":"renamed"/);
    assertChained(`${a.join('\n')}\n${b.join('\n')}\n`);
    const r = verify([old, audit]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, new RegExp(`^ok: ${a.length + b.length} records in 2 files`));
  });

  test('anchors in the log: verify --anchors matches them, and catches lines cut off the end', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const s = await journal(t, dir, audit, ['--audit-anchor-every', '2', '--log-format', 'json']);
    const anchors = s.stderr.split('\n').filter((l) => l.includes('audit anchor: chain='));
    assert.ok(anchors.length >= 3, s.stderr);
    for (const l of anchors) assert.match(JSON.parse(l).msg, /^audit anchor: chain=[0-9a-f]{32} seq=\d+ sha256=[0-9a-f]{64}$/);
    const log = path.join(dir, 'sluice.log');
    fs.writeFileSync(log, s.stderr);
    const ok = verify(['--anchors', log, audit]);
    assert.equal(ok.code, 0, ok.out + ok.err);
    assert.match(ok.out, new RegExp(`anchors: ${anchors.length} matched`));

    // The last line removed: the chain alone still passes; the anchors do not.
    const lines = fs.readFileSync(audit, 'utf8').split('\n').filter(Boolean);
    fs.writeFileSync(audit, `${lines.slice(0, -1).join('\n')}\n`);
    assert.equal(verify([audit]).code, 0);
    const cut = verify(['--anchors', log, audit]);
    assert.equal(cut.code, 1, cut.out);
    assert.match(cut.out, new RegExp(`names seq ${lines.length} of chain [0-9a-f]{32}, past the last line \\(seq ${lines.length - 1}\\): records were removed from the end`));
  });

  // A server's own log goes into sluice's (as JSON lines with "source":"upstream", or as it is
  // with text logs): an anchor's text in it, here forged for this very chain, is not an anchor.
  for (const format of ['json', 'text']) {
    test(`an anchor in an upstream's stderr line is not taken for one (${format} logs)`, async (t) => {
      const dir = tmpDir(t);
      const audit = path.join(dir, 'audit.jsonl');
      const s = startSluice(t, { policy: GATE, dir, audit, args: ['--audit-anchor-every', '2', '--log-format', format] });
      await someCalls(s, 'a');
      const chain = /"chain":"([0-9a-f]{32})"/.exec(fs.readFileSync(audit, 'utf8'))[1];
      const forged = (seq) => `audit anchor: chain=${chain} seq=${seq} sha256=${'e'.repeat(64)}`;
      const plants = [`server log: ${forged(2)}`, `[x] sluice: info: ${forged(3)}`, `upstream ${forged(999)}`];
      // With JSON logs the line is marked as the upstream's, whatever it says; with text logs it
      // is passed through as it is, so only a line that starts as sluice's own could pass.
      if (format === 'json') plants.push(forged(4), `sluice: info: ${forged(5)}`, `x","msg":"${forged(6)}`);
      const r = await s.request(toolCall('say', 'say', { lines: plants }));
      assert.ok(r.result && !r.result.isError, r.raw);
      await waitFor(() => s.stderr.includes(`upstream ${forged(999)}`), 5000, 'the upstream\'s stderr');
      assert.equal((await s.closeStdin(5000)).code, 0, s.stderr);
      const own = s.stderr.split('\n').filter((l) => format === 'json'
        ? l.startsWith('{') && !JSON.parse(l).source && JSON.parse(l).msg.startsWith('audit anchor: chain=')
        : l.startsWith('sluice: info: audit anchor: chain='));
      assert.ok(own.length >= 3, s.stderr);
      const log = path.join(dir, 'sluice.log');
      fs.writeFileSync(log, s.stderr);
      const ok = verify(['--anchors', log, audit]);
      assert.equal(ok.code, 0, ok.out + ok.err);
      assert.match(ok.out, new RegExp(`anchors: ${own.length} matched, 0 before the first record, 0 of other journals`));
    });
  }

  test('anchors by time: a head older than --audit-anchor-seconds is logged', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy: GATE, dir, audit, args: ['--audit-anchor-seconds', '1'] });
    await someCalls(s, 'a');
    await waitFor(() => /audit anchor: chain=[0-9a-f]{32} seq=\d+ /.test(s.stderr), 5000, 'an anchor by time');
    assert.equal((await s.closeStdin(5000)).code, 0, s.stderr);
  });

  test('audit verify: usage errors and unreadable files', async (t) => {
    const dir = tmpDir(t);
    const none = verify([]);
    assert.equal(none.code, 2);
    assert.match(none.err, /audit verify needs the journal FILE/);
    const missing = verify([path.join(dir, 'nope.jsonl')]);
    assert.equal(missing.code, 2);
    assert.match(missing.out, /nope\.jsonl: cannot open/);
    const r = runSluice(['--audit-sync', 'sometimes', '--audit', path.join(dir, 'a.jsonl')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--audit-sync must be always or interval/);
  });
});

describe('audit journal: anchors in Redis', redisSuiteOptions(suiteOptions()), () => {
  test('each head goes to a capped list in Redis; verify --anchors redis:// checks against it', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy: GATE, dir, audit, args: ['--store', redis.url, '--audit-anchor-every', '1'] });
    await waitFor(() => /store: connected to redis/.test(s.stderr), 10000, 'the store');
    await someCalls(s, 'a');
    await s.sync();
    // The list is in Redis: pushed from the event loop, so wait for the last head to be there.
    const lines = () => fs.readFileSync(audit, 'utf8').split('\n').filter(Boolean);
    let list = [];
    const end = Date.now() + deadline(5000);
    for (;;) {
      list = await redisCli(redis.port, 'LRANGE', 'sluice:audit:anchors', '0', '-1');
      if (list.length && list[list.length - 1].toString().includes(`seq=${lines().length} `)) break;
      assert.ok(Date.now() < end, `anchors in redis: ${list}`);
      await sleep(50);
    }
    assert.equal((await s.closeStdin(5000)).code, 0, s.stderr);
    for (const e of list) assert.match(e.toString(), /^audit anchor: chain=[0-9a-f]{32} seq=\d+ sha256=[0-9a-f]{64}$/);
    const ok = verify(['--anchors', redis.url, audit]);
    assert.equal(ok.code, 0, ok.out + ok.err);
    assert.match(ok.out, /anchors: \d+ matched/);

    // The whole journal rewritten from line 3 on with a valid chain: the chain passes, Redis
    // does not.
    const all = lines();
    const forged = all.slice(0, 2);
    for (const l of all.slice(2)) {
      const prevHash = crypto.createHash('sha256').update(forged[forged.length - 1]).digest('hex');
      forged.push(l.replace(/"prev":"[0-9a-f]{64}"/, `"prev":"${prevHash}"`).replace('"decision":"deny"', '"decision":"allow"'));
    }
    fs.writeFileSync(audit, `${forged.join('\n')}\n`);
    assert.equal(verify([audit]).code, 0, 'a consistent rewrite passes the chain alone');
    const bad = verify(['--anchors', redis.url, audit]);
    assert.equal(bad.code, 1, bad.out);
    assert.match(bad.out, /the anchored SHA-256 of seq \d+ differs/);
  });

  test('the list lives under --store-prefix', async (t) => {
    const redis = await startRedis(t);
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy: GATE, dir, audit, args: ['--store', redis.url, '--store-prefix', 'x:', '--audit-anchor-every', '1'] });
    await waitFor(() => /store: connected to redis/.test(s.stderr), 10000, 'the store');
    await someCalls(s, 'a');
    assert.equal((await s.closeStdin(5000)).code, 0, s.stderr);
    const n = await redisCli(redis.port, 'LLEN', 'x:audit:anchors');
    assert.ok(n >= 4, `anchors under the prefix: ${n}`);
    assert.equal(await redisCli(redis.port, 'EXISTS', 'sluice:audit:anchors'), 0);
  });
});
