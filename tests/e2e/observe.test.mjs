// observe.test.mjs: approving what will really happen. Argument rules (deny, escalate), message
// templates followed by the full argument listing, and observe: before asking, sluice reads the
// target with an allowed read tool, shows a summary, seals its digest; after the accept it reads
// again and refuses when the target changed. Run for both client eras (a modern client with
// the MRTR round, a legacy client asked by sluice's own elicitation/create) and both
// upstream eras. The fake upstream's in-memory file store (read_file, stat, set_file,
// store_control, write_file) is the target; the "other writer" is the test itself, calling the
// allowed set_file through sluice between the question and the answer.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, assertRefusal, assertReplayed, confirmRetry, jcs, legacyCall, legacyHandshake, legacySync,
  nextElicitation, readJsonLines, reloadPolicy, resultText, runSluice, scaled, sha256hex, sleep, startSluice, suiteOptions, tmpDir, toolCall,
  unfence, writePolicy,
} from './lib.mjs';
import { redisSuiteOptions, slowRelay, startRedis } from './redis_lib.mjs';

const POLICY = `version: 1
defaults:
  action: allow
tools:
  write_file:
    action: confirm
    message: "Write {path}"
    args:
      path:
        deny_glob: ["/etc/**", "**/.ssh/**"]
    observe:
      tool: read_file
      args: { path: path }
  delete_file:
    action: confirm
    irreversible: true
    message: "Delete {path} for good"
    args:
      path:
        deny_glob: ["/etc/**"]
    observe: { tool: stat, args: { path: path } }
  set_file:
    action: allow
    args:
      path:
        confirm_glob: ["/outside/**"]
        deny_glob: ["/locked/**"]
      content: { max_length: 64 }
  sleep:
    action: allow
    args:
      ms: { min: 0, max: 100 }
  drop_table:
    action: deny
  read_file:
    action: allow
  stat:
    action: allow
  store_control:
    action: allow
`;

const SEED = { '/data/a.txt': 'one\ntwo\nthree\n', '/data/b.txt': 'keep me\n' };
const CLIENTS = ['modern', 'legacy'];   // the client's era
const UPSTREAMS = ['legacy', 'modern']; // the fake server's era

/** A sluice around the fake upstream with the file store seeded, and a client of the given era. */
async function start(t, { client = 'modern', upstream = 'legacy', files = SEED, fake = {} } = {}) {
  const dir = tmpDir(t);
  const policy = writePolicy(dir, POLICY);
  const audit = path.join(dir, 'audit.jsonl');
  const s = startSluice(t, { policy, era: upstream, dir, audit, fake: { FAKE_FILES: JSON.stringify(files), ...fake } });
  if (client === 'legacy') await legacyHandshake(s);
  return { s, audit, client, n: 0 };
}

/** A call the test expects to be answered at once (allowed, denied or refused). */
async function call(c, name, args, opts = {}) {
  const id = `${name}-${++c.n}`;
  if (c.client === 'legacy') return c.s.request(legacyCall(id, name, args));
  return c.s.request(toolCall(id, name, args, opts));
}

/**
 * Starts a gated call and waits for the question. Returns { message, id, answer(ans) }: answer
 * sends the person's answer (the retry for a modern client, the response to sluice's
 * elicitation/create for a legacy client) and resolves to the final response to the call.
 */
async function ask(c, name, args) {
  const id = `${name}-${++c.n}`;
  const { s } = c;
  if (c.client === 'legacy') {
    s.send(legacyCall(id, name, args));
    const e = await nextElicitation(s);
    return {
      id,
      message: unfence(e.params.message),
      answer: async (ans) => {
        s.send({ jsonrpc: '2.0', id: e.id, result: ans });
        return s.responseTo(id);
      },
    };
  }
  const q = assertAsked(await s.request(toolCall(id, name, args)));
  return {
    id,
    message: q.message,
    state: q.state,
    answer: (ans) => s.request(confirmRetry(`${id}-retry`, name, args, q.state, ans)),
  };
}

/** A refusal as either era sees it: an isError result (resultType complete for a modern client). */
function refusal(c, r, re) {
  if (c.client === 'modern') return assertRefusal(r, re);
  assert.ok(r.result, `expected an isError result, got ${r.raw}`);
  assert.equal(r.result.isError, true, r.raw);
  const text = r.result.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
  if (re) assert.match(text, re, r.raw);
  return text;
}

function ok(r) {
  assert.ok(r.result, `expected a result, got ${r.raw}`);
  assert.notEqual(r.result.isError, true, r.raw);
  assert.notEqual(r.result.resultType, 'input_required', `expected no question, got ${r.raw}`);
  return r.result.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

async function barrier(c) {
  if (c.client === 'legacy') await legacySync(c.s);
  else await c.s.sync();
}

/** The upstream's tools/call log for name (after a barrier). */
async function upstreamCalls(c, name) {
  await barrier(c);
  return c.s.upstreamCalls(name);
}

/** What the fake's store holds now, read through sluice (read_file is allowed). */
async function readBack(c, p) {
  return ok(await call(c, 'read_file', { path: p }));
}

function auditLines(c) {
  return readJsonLines(c.audit).filter((l) => !l.event); // decisions, not the chain's own lines
}

/** No elicitation/create and no input_required reached the client so far. */
function assertNeverAsked(c) {
  const asked = c.s.lines.filter((l) => l.msg.method === 'elicitation/create'
    || (l.msg.result && l.msg.result.resultType === 'input_required'));
  assert.deepEqual(asked.map((l) => l.raw), [], 'the person must not have been asked');
}

const A = '/data/a.txt';
const WRITE = { path: A, content: 'one\nTWO\nthree\n' };

describe('observe: drift between the question and the accept', suiteOptions(), () => {
  for (const client of CLIENTS) {
    for (const upstream of UPSTREAMS) {
      test(`another writer changes the target after the question: refused, the other writer's content stays (${client} client, ${upstream} upstream)`, async (t) => {
        const c = await start(t, { client, upstream });
        const q = await ask(c, 'write_file', WRITE);
        assert.match(q.message, /\n\nRead from the server just now \(the server's text, not arguments of this call\):\n {2}\| What read_file shows now: The file now has 3 lines; this call removes 1 and adds 1, from line 2:\n {2}\| - two\n {2}\| \+ TWO$/, q.message);
        assert.equal((await upstreamCalls(c, 'write_file')).length, 0, 'nothing written before the answer');

        // The other writer, unasked (set_file is an allow tool), between question and answer.
        assert.match(ok(await call(c, 'set_file', { path: A, content: 'someone else\n' })), /set/);
        const r = await q.answer(ACCEPT);
        refusal(c, r, /changed since you approved/);

        const writes = await upstreamCalls(c, 'write_file');
        assert.equal(writes.length, 0, `the write must not reach the server: ${JSON.stringify(writes)}`);
        assert.equal(await readBack(c, A), 'someone else\n', 'the other writer\'s content stays');
        // Two observe reads (before the question, after the accept) plus the test's own read-back.
        const all = c.s.upstreamCalls('read_file');
        assert.equal(all.length, 3, `read_file calls: ${JSON.stringify(all.map((m) => m.raw))}`);
        for (const m of all) assert.deepEqual(m.params.arguments, { path: A }, m.raw);

        // Calling again asks about the current content.
        const q2 = await ask(c, 'write_file', WRITE);
        assert.match(q2.message, /The file now has 1 line; this call removes 1 and adds 3, from line 1:\n {2}\| - someone else\n {2}\| \+ one\n {2}\| \+ TWO\n {2}\| \+ three/, q2.message);
        refusal(c, await q2.answer({ action: 'decline' }), /declined/);
        assert.equal((await upstreamCalls(c, 'write_file')).length, 0);

        const log = auditLines(c);
        const refused = log.filter((l) => l.tool === 'write_file' && l.decision === 'refused');
        assert.equal(refused.length, 1, JSON.stringify(log));
        assert.equal(refused[0].reason, 'changed-since-approved', JSON.stringify(refused[0]));
        assert.equal(refused[0].upstream, 'not-forwarded', JSON.stringify(refused[0]));
        assert.equal(refused[0].args_sha256, sha256hex(jcs(WRITE)), 'the refusal carries the call\'s digest');
        assert.ok(!log.some((l) => l.tool === 'write_file' && l.decision === 'client-accepted' && l.upstream === 'ok'), JSON.stringify(log));
      });
    }
  }

  test('a refused state cannot be replayed once the target is back as it was (modern client)', async (t) => {
    const c = await start(t);
    const q = await ask(c, 'write_file', WRITE);
    ok(await call(c, 'set_file', { path: A, content: 'someone else\n' }));
    refusal(c, await q.answer(ACCEPT), /changed since you approved/);
    ok(await call(c, 'set_file', { path: A, content: SEED[A] }));
    const r = await q.answer(ACCEPT);
    assert.ok(r.error, `the spent state must be refused, got ${r.raw}`);
    assert.equal(r.error.code, -32602, r.raw);
    assert.equal((await upstreamCalls(c, 'write_file')).length, 0);
    assert.equal(await readBack(c, A), SEED[A]);
  });

  for (const client of CLIENTS) {
    test(`delete_file observes stat: the question shows it, a change in between refuses the delete (${client} client)`, async (t) => {
      const c = await start(t, { client });
      const q = await ask(c, 'delete_file', { path: A });
      assert.ok(q.message.includes(`  | What stat shows now:\n  |   path ${A}: 14 bytes, version 1`), q.message);
      ok(await call(c, 'set_file', { path: A, content: 'one\ntwo\nthree\n' })); // same bytes, new version
      refusal(c, await q.answer(ACCEPT), /changed since you approved/);
      assert.equal((await upstreamCalls(c, 'delete_file')).length, 0);
      const stats = c.s.upstreamCalls('stat');
      assert.equal(stats.length, 2, JSON.stringify(stats.map((m) => m.raw)));
      for (const m of stats) assert.deepEqual(m.params.arguments, { path: A }, m.raw);
    });
  }
});

describe('observe: an unchanged target is written', suiteOptions(), () => {
  for (const client of CLIENTS) {
    for (const upstream of UPSTREAMS) {
      test(`accept with nothing changed forwards exactly the call once (${client} client, ${upstream} upstream)`, async (t) => {
        const c = await start(t, { client, upstream });
        const q = await ask(c, 'write_file', WRITE);
        const r = await q.answer(ACCEPT);
        assert.equal(ok(r), `wrote ${JSON.stringify(A)}`);
        const writes = await upstreamCalls(c, 'write_file');
        assert.equal(writes.length, 1, JSON.stringify(writes));
        assert.deepEqual(writes[0].params.arguments, WRITE);
        assert.ok(!('inputResponses' in writes[0].params) && !('requestState' in writes[0].params), writes[0].raw);
        // Both observe reads went out; the fake's read_file puts a different _meta on every
        // answer, which must not count as a change.
        const reads = c.s.upstreamCalls('read_file');
        assert.equal(reads.length, 2, JSON.stringify(reads.map((m) => m.raw)));
        if (upstream === 'modern') {
          for (const m of reads) {
            assert.equal(m.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28', `observe calls to a modern upstream carry the envelope: ${m.raw}`);
          }
        }
        // The observe reads come before the write.
        const seqs = c.s.upstreamMessages().filter((m) => m.method === 'tools/call' && ['read_file', 'write_file'].includes(m.params.name)).map((m) => m.params.name);
        assert.deepEqual(seqs, ['read_file', 'read_file', 'write_file']);
        assert.equal(await readBack(c, A), WRITE.content);

        const log = auditLines(c);
        const observe = log.filter((l) => l.decision === 'observe');
        assert.equal(observe.length, 2, JSON.stringify(log));
        for (const l of observe) {
          assert.equal(l.tool, 'read_file', JSON.stringify(l));
          assert.equal(l.upstream, 'ok', JSON.stringify(l));
          assert.equal(l.principal, log[0].principal);
          assert.ok(!JSON.stringify(l).includes('TWO'), `no argument values in the journal: ${JSON.stringify(l)}`);
        }
        assert.deepEqual(observe.map((l) => l.reason), ['before-question', 'after-accept']);
        const accepted = log.filter((l) => l.tool === 'write_file' && l.decision === 'client-accepted');
        assert.equal(accepted.length, 1, JSON.stringify(log));
        assert.equal(accepted[0].upstream, 'ok', JSON.stringify(accepted[0]));
        assert.equal(accepted[0].args_sha256, sha256hex(jcs(WRITE)));
        // In journal order: observe, asked, observe, client-accepted.
        const order = log.filter((l) => ['read_file', 'write_file'].includes(l.tool) && l.decision !== 'allow').map((l) => l.decision);
        assert.deepEqual(order, ['observe', 'asked', 'observe', 'forwarding', 'client-accepted'], JSON.stringify(log));
      });
    }
  }
});

describe('observe: a request reusing the id of an accept whose re-check read runs', suiteOptions(), () => {
  test('a request reusing the id of a call whose first read runs (before its question) is refused', async (t) => {
    const c = await start(t, { fake: { FAKE_SLOW_MS: '300' } });
    const call = toolCall('w', 'write_file', WRITE);
    c.s.sendRaw(`${JSON.stringify(call)}\n${JSON.stringify({ jsonrpc: '2.0', id: 'w', method: 'ping' })}\n`);
    const ping = await c.s.responseTo('w');
    assert.equal(ping.error && ping.error.code, -32600, `refused while the read runs: ${ping.raw}`);
    assertAsked(await c.s.responseTo('w'));
  });

  for (const upstream of UPSTREAMS) {
    test(`the request is refused; a retry of the accept gets the write's own result (${upstream} upstream)`, async (t) => {
      // Between the accept and the write, the accept's re-check read runs: the id is in flight
      // although nothing is forwarded under it yet. A reply under that id must not be taken for
      // the accept's (its kept outcome, its HTTP stream).
      const c = await start(t, { upstream, fake: { FAKE_SLOW_MS: '300' } });
      const q = await ask(c, 'write_file', WRITE);
      const accept = confirmRetry('acc', 'write_file', WRITE, q.state, ACCEPT);
      // One write: sluice reads the ping while the accept's re-check read runs (300 ms).
      c.s.sendRaw(`${JSON.stringify(accept)}\n${JSON.stringify({ jsonrpc: '2.0', id: 'acc', method: 'ping' })}\n`);
      const ping = await c.s.responseTo('acc');
      const r = await c.s.responseTo('acc');
      assert.equal(ok(r), `wrote ${JSON.stringify(A)}`);
      const again = await c.s.request(confirmRetry('acc-2', 'write_file', WRITE, q.state, ACCEPT));
      assertReplayed(again, r);
      assert.equal(ping.error && ping.error.code, -32600, `the ping is refused: ${ping.raw}`);
      assert.equal((await upstreamCalls(c, 'write_file')).length, 1, 'written once');
    });
  }
});

describe('observe: "no such file" is an observation; another tool error or a failed observe call refuses', suiteOptions(), () => {
  for (const client of CLIENTS) {
    test(`a write that creates a file: the question says "new file" and the lines written; accepted unchanged, it is written (${client} client)`, async (t) => {
      const c = await start(t, { client });
      const p = '/data/new.txt';
      const args = { path: p, content: 'first\nsecond\n' };
      const q = await ask(c, 'write_file', args);
      assert.ok(q.message.includes('  | What read_file shows now: no such file (new file).\n  | This call writes 2 lines.'), q.message);
      assert.ok(!q.message.includes('no such file: '), `the server's raw error is not shown: ${q.message}`);
      assert.equal(ok(await q.answer(ACCEPT)), `wrote ${JSON.stringify(p)}`);
      const writes = await upstreamCalls(c, 'write_file');
      assert.equal(writes.length, 1);
      assert.deepEqual(writes[0].params.arguments, args);
      assert.equal(await readBack(c, p), args.content);
      const log = auditLines(c);
      const observe = log.filter((l) => l.decision === 'observe');
      // The journal's word for a tool result with isError is "tool-error", as for allowed calls.
      assert.deepEqual(observe.map((l) => [l.reason, l.upstream]), [['before-question', 'tool-error'], ['after-accept', 'tool-error']], JSON.stringify(log));
    });

    test(`a write that creates a file: another writer creates it first, between question and accept: refused (${client} client)`, async (t) => {
      const c = await start(t, { client });
      const p = '/data/new.txt';
      const q = await ask(c, 'write_file', { path: p, content: 'mine\n' });
      ok(await call(c, 'set_file', { path: p, content: 'theirs\n' }));
      refusal(c, await q.answer(ACCEPT), /changed since you approved/);
      assert.equal((await upstreamCalls(c, 'write_file')).length, 0);
      assert.equal(await readBack(c, p), 'theirs\n');
    });

    // An error other than "no such file" says nothing about the target, and it can repeat word
    // for word while another writer changes the target: two equal errors must not pass the
    // recheck. So it is no reading at all, before the question as after the accept.
    test(`the observe tool answers isError before asking: refused as observe-failed, nobody asked, nothing written (${client} client)`, async (t) => {
      const c = await start(t, { client });
      ok(await call(c, 'store_control', { reads: 'iserror' }));
      const r = await call(c, 'write_file', { path: A, content: 'x' });
      refusal(c, r, /answered with an error\), so it cannot show or check the target/);
      // the other writer of the attack: the target changes while every read fails alike
      ok(await call(c, 'set_file', { path: A, content: 'changed\n' }));
      await barrier(c);
      assertNeverAsked(c);
      assert.equal(c.s.upstreamCalls('write_file').length, 0);
      const log = auditLines(c);
      const observe = log.filter((l) => l.decision === 'observe');
      assert.deepEqual(observe.map((l) => [l.reason, l.upstream]), [['before-question', 'tool-error']], JSON.stringify(log));
      const refused = log.filter((l) => l.tool === 'write_file' && l.decision === 'refused');
      assert.deepEqual(refused.map((l) => [l.reason, l.upstream]), [['observe-failed', 'not-forwarded']], JSON.stringify(log));
    });

    test(`a new file, then the recheck answers another error: refused as observe-failed (${client} client)`, async (t) => {
      const c = await start(t, { client });
      const q = await ask(c, 'write_file', { path: '/data/new.txt', content: 'mine\n' });
      assert.ok(q.message.includes('no such file (new file)'), q.message);
      ok(await call(c, 'store_control', { reads: 'iserror' }));
      refusal(c, await q.answer(ACCEPT), /answered with an error\), so it cannot show or check the target/);
      assert.equal((await upstreamCalls(c, 'write_file')).length, 0);
      const refused = auditLines(c).filter((l) => l.tool === 'write_file' && l.decision === 'refused');
      assert.deepEqual(refused.map((l) => l.reason), ['observe-failed']);
    });

    test(`before asking: the upstream answers the observe call with a JSON-RPC error: refused, nobody asked (${client} client)`, async (t) => {
      const c = await start(t, { client });
      ok(await call(c, 'store_control', { reads: 'rpc_error' }));
      const r = await call(c, 'write_file', { path: A, content: 'x' });
      refusal(c, r, /observe/);
      await barrier(c);
      assertNeverAsked(c);
      assert.equal(c.s.upstreamCalls('write_file').length, 0);
      assert.equal(c.s.upstreamCalls('read_file').length, 1, 'one observe attempt');
      const log = auditLines(c);
      const observe = log.filter((l) => l.decision === 'observe');
      assert.equal(observe.length, 1, JSON.stringify(log));
      assert.equal(observe[0].tool, 'read_file');
      assert.equal(observe[0].reason, 'before-question');
      assert.equal(observe[0].upstream, 'error', JSON.stringify(observe[0]));
      assert.ok(!log.some((l) => l.decision === 'asked'), JSON.stringify(log));
      const refused = log.filter((l) => l.tool === 'write_file' && l.decision === 'refused');
      assert.equal(refused.length, 1, JSON.stringify(log));
      assert.equal(refused[0].reason, 'observe-failed');
      assert.equal(refused[0].upstream, 'not-forwarded');
    });

    for (const [mode, reason, re] of [['iserror', 'observe-failed', /answered with an error/], ['rpc_error', 'observe-failed', /observe/]]) {
      test(`after the accept: the second observe answers ${mode}: refused as ${reason} (${client} client)`, async (t) => {
        const c = await start(t, { client });
        const q = await ask(c, 'write_file', WRITE);
        ok(await call(c, 'store_control', { reads: mode }));
        refusal(c, await q.answer(ACCEPT), re);
        assert.equal((await upstreamCalls(c, 'write_file')).length, 0);
        ok(await call(c, 'store_control', { reads: 'ok' }));
        assert.equal(await readBack(c, A), SEED[A]);
        const log = auditLines(c);
        const observe = log.filter((l) => l.decision === 'observe');
        assert.deepEqual(observe.map((l) => [l.reason, l.upstream]), [['before-question', 'ok'], ['after-accept', mode === 'iserror' ? 'tool-error' : 'error']], JSON.stringify(log));
        const refused = log.filter((l) => l.tool === 'write_file' && l.decision === 'refused');
        assert.equal(refused.length, 1, JSON.stringify(log));
        assert.equal(refused[0].reason, reason);
      });
    }

    test(`the call lacks the argument the observe tool needs: refused, nothing observed (${client} client)`, async (t) => {
      const c = await start(t, { client });
      refusal(c, await call(c, 'write_file', { content: 'no path' }), /observe/);
      await barrier(c);
      assertNeverAsked(c);
      assert.equal(c.s.upstreamCalls('read_file').length, 0);
      assert.equal(c.s.upstreamCalls('write_file').length, 0);
    });
  }

  for (const client of CLIENTS) {
    for (const when of ['before-question', 'after-accept']) {
      test(`an observe call that never returns holds the call until the client cancels it; nothing runs (${when}, ${client} client)`, async (t) => {
        const c = await start(t, { client });
        const id = `write-${when}`;
        let q;
        if (when === 'before-question') {
          ok(await call(c, 'store_control', { reads: 'silent' }));
          c.s.send(client === 'legacy' ? legacyCall(id, 'write_file', WRITE) : toolCall(id, 'write_file', WRITE));
        } else {
          q = await ask(c, 'write_file', WRITE);
          ok(await call(c, 'store_control', { reads: 'silent' }));
          q.answer(ACCEPT).catch(() => {});
          c.id = q.id;
        }
        const target = when === 'before-question' ? id : c.id;
        await c.s.noResponseTo(target, 300);
        await barrier(c);
        const silentReads = c.s.upstreamCalls('read_file').length;
        assert.equal(silentReads, when === 'before-question' ? 1 : 2, 'the observe call went out');
        const params = { requestId: client === 'legacy' || when === 'before-question' ? target : `${target}-retry`, reason: 'user' };
        if (client === 'modern') params._meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
        c.s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params });
        ok(await call(c, 'store_control', { reads: 'ok' }));
        await c.s.noResponseTo(params.requestId, 300);
        assert.equal((await upstreamCalls(c, 'write_file')).length, 0);
        assert.equal(await readBack(c, A), SEED[A]);
        const log = auditLines(c);
        const cancelled = log.filter((l) => l.tool === 'write_file' && l.decision === 'cancelled');
        assert.equal(cancelled.length, 1, JSON.stringify(log));
        assert.equal(cancelled[0].upstream, 'not-forwarded');
        // The silent observe call itself is cancelled upstream.
        const silent = c.s.upstreamCalls('read_file')[silentReads - 1];
        const up = c.s.upstreamMessages().filter((m) => m.method === 'notifications/cancelled');
        assert.ok(up.some((m) => JSON.stringify(m.params.requestId) === JSON.stringify(silent.id)), `the observe call ${silent.raw} must be cancelled upstream: ${JSON.stringify(up.map((m) => m.raw))}`);
        if (client === 'modern' && when === 'after-accept') {
          // The state was spent by the accept and nothing ran: a retry of it is refused as a
          // replay at once, not left to wait for an outcome until --upstream-timeout.
          const again = await c.s.request(confirmRetry('again', 'write_file', WRITE, q.state, ACCEPT), scaled(5000));
          assert.equal(again.error && again.error.code, -32602, `a replay: ${again.raw}`);
          assert.equal((await upstreamCalls(c, 'write_file')).length, 0);
        }
      });
    }
  }

  test('the upstream dies during the observe call: the client gets an answer and nothing is written', async (t) => {
    const c = await start(t, { fake: { FAKE_EXIT_AFTER: '1' } });
    const r = await call(c, 'write_file', WRITE);
    assert.ok(r.error || (r.result && r.result.isError === true), `expected a refusal or an error, got ${r.raw}`);
    assert.notEqual(r.result && r.result.resultType, 'input_required', r.raw);
    assert.equal(c.s.upstreamCalls('write_file').length, 0);
  });
});

describe('message templates', suiteOptions(), () => {
  for (const client of CLIENTS) {
    test(`the sentence comes first, then the full argument listing, then what the observe tool shows (${client} client)`, async (t) => {
      const c = await start(t, { client });
      const args = { path: A, content: 'one\nTWO\nthree\n', mode: 'overwrite', extra: 42 };
      const q = await ask(c, 'write_file', args);
      const m = q.message;
      const [sentence] = m.split('\n\n');
      assert.match(sentence, /^Write "?\/data\/a\.txt"?$/, `the template sentence comes first: ${JSON.stringify(m)}`);
      const listing = m.indexOf('Allow tool "write_file"');
      const summary = m.indexOf('\n\nRead from the server just now');
      assert.ok(listing > sentence.length, `the listing follows the sentence: ${JSON.stringify(m)}`);
      assert.ok(summary > listing, `the observe summary follows the listing: ${JSON.stringify(m)}`);
      const list = m.slice(listing, summary);
      // path is declared (args:), the others are listed too, each marked as not declared
      assert.ok(list.includes('\n\u2022 path: '), JSON.stringify(m));
      for (const k of ['content', 'extra', 'mode']) assert.ok(list.includes(`\n\u2022 ${k} (not declared in the policy): `), `the listing shows argument ${k} even though the template does not name it: ${JSON.stringify(m)}`);
      assert.ok(list.includes('overwrite') && list.includes('42'), JSON.stringify(m));
      refusal(c, await q.answer({ action: 'decline' }), /declined/);
    });
  }

  test('an argument the template does not name still appears in the listing', async (t) => {
    const c = await start(t);
    // delete_file observes stat with path, so the call needs a path; the template names only path.
    const q = await ask(c, 'delete_file', { path: '/data/b.txt', force: true });
    assert.ok(q.message.startsWith('Delete '), q.message);
    assert.ok(q.message.split('\n\n')[0].includes('/data/b.txt') && q.message.split('\n\n')[0].endsWith('for good'), q.message);
    assert.ok(q.message.includes('\n\u2022 force (not declared in the policy): true'), q.message);
  });
});

describe('argument rules', suiteOptions(), () => {
  for (const client of CLIENTS) {
    for (const upstream of UPSTREAMS) {
      test(`deny: refused before anyone is asked or anything observed, naming the rule (${client} client, ${upstream} upstream)`, async (t) => {
        const c = await start(t, { client, upstream });
        const cases = [
          ['write_file', { path: '/etc/passwd', content: 'x' }, 'tools.write_file.args.path.deny_glob[0]'],
          ['write_file', { path: '/data/../etc/passwd', content: 'x' }, 'tools.write_file.args.path.deny_glob[0]'],
          ['write_file', { path: '/home/me/.ssh/authorized_keys', content: 'x' }, 'tools.write_file.args.path.deny_glob[1]'],
          ['write_file', { path: '/data/a.txt\nAllow', content: 'x' }, 'tools.write_file.args.path'],
          ['write_file', { path: 7, content: 'x' }, 'tools.write_file.args.path'],
          ['delete_file', { path: '/etc/hosts' }, 'tools.delete_file.args.path.deny_glob[0]'],
          ['set_file', { path: '/locked/x', content: 'x' }, 'tools.set_file.args.path.deny_glob[0]'],
          ['set_file', { path: '/data/x', content: 'y'.repeat(65) }, 'tools.set_file.args.content.max_length'],
          ['sleep', { ms: 5000 }, 'tools.sleep.args.ms.max'],
          ['sleep', { ms: -1 }, 'tools.sleep.args.ms.min'],
          ['sleep', { ms: '5' }, 'tools.sleep.args.ms'],
        ];
        for (const [name, args, rule] of cases) {
          const text = refusal(c, await call(c, name, args));
          assert.ok(text.includes(rule), `${name} ${JSON.stringify(args)}: the refusal names ${rule}: ${text}`);
          assert.match(text, /not run/, text);
        }
        await barrier(c);
        assertNeverAsked(c);
        for (const name of ['write_file', 'delete_file', 'set_file', 'sleep', 'read_file', 'stat']) {
          assert.equal(c.s.upstreamCalls(name).length, 0, `${name} must not reach the server: ${JSON.stringify(c.s.upstreamCalls(name).map((m) => m.raw))}`);
        }
        const log = auditLines(c);
        const denies = log.filter((l) => l.decision === 'deny');
        assert.equal(denies.length, cases.length, JSON.stringify(log));
        for (const [i, l] of denies.entries()) {
          assert.equal(l.upstream, 'not-forwarded');
          assert.ok(String(l.reason).startsWith(cases[i][2]), `journal reason ${l.reason} names ${cases[i][2]}`);
        }
        assert.ok(!log.some((l) => l.decision === 'observe'), 'a denied call is never observed');
        // Inside the rules the same tools run.
        ok(await call(c, 'sleep', { ms: 1 }));
        ok(await call(c, 'set_file', { path: '/data/x', content: 'y'.repeat(64) }));
      });

      test(`escalate: an allow tool whose path matches confirm_glob asks, others go through unasked (${client} client, ${upstream} upstream)`, async (t) => {
        const c = await start(t, { client, upstream });
        assert.match(ok(await call(c, 'set_file', { path: '/data/inside.txt', content: 'in' })), /set/);
        await barrier(c);
        assertNeverAsked(c);
        assert.equal(c.s.upstreamCalls('set_file').length, 1);

        for (const p of ['/outside/x.txt', '/data/../outside/y.txt', '/outside//./z.txt']) {
          const q = await ask(c, 'set_file', { path: p, content: 'out' });
          assert.match(q.message, /set_file/, q.message);
          assert.ok(q.message.includes(p), q.message);
          assert.ok(!q.message.includes('shows now'), `an escalated tool has no observe: ${q.message}`);
          assert.equal((await upstreamCalls(c, 'set_file')).filter((m) => m.params.arguments.path === p).length, 0, 'nothing before the answer');
          if (p === '/outside/x.txt') {
            assert.equal(ok(await q.answer(ACCEPT)), `set ${JSON.stringify(p)}`);
            assert.equal((await upstreamCalls(c, 'set_file')).filter((m) => m.params.arguments.path === p).length, 1);
          } else {
            refusal(c, await q.answer({ action: 'decline' }), /declined/);
            assert.equal((await upstreamCalls(c, 'set_file')).filter((m) => m.params.arguments.path === p).length, 0);
          }
        }
        const log = auditLines(c);
        const asked = log.filter((l) => l.tool === 'set_file' && l.decision === 'asked');
        assert.equal(asked.length, 3, JSON.stringify(log));
        assert.ok(!log.some((l) => l.decision === 'observe'), JSON.stringify(log));
      });
    }
  }

  test('escalate: a modern client that cannot ask is refused with -32021, and nothing runs', async (t) => {
    const c = await start(t);
    const r = await c.s.request(toolCall('no-form', 'set_file', { path: '/outside/x', content: 'x' }, { caps: {} }));
    assert.ok(r.error, r.raw);
    assert.equal(r.error.code, -32021, r.raw);
    const inside = await c.s.request(toolCall('no-form-2', 'set_file', { path: '/data/x', content: 'x' }, { caps: {} }));
    ok(inside);
    await c.s.sync();
    assert.deepEqual(c.s.upstreamCalls('set_file').map((m) => m.params.arguments.path), ['/data/x']);
  });

  test('escalate: a legacy client without elicitation is refused, and nothing runs', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    await legacyHandshake(s, { capabilities: {} });
    const r = await s.request(legacyCall('x', 'set_file', { path: '/outside/x', content: 'x' }));
    assert.equal(r.result && r.result.isError, true, r.raw);
    await legacySync(s);
    assert.equal(s.upstreamCalls('set_file').length, 0);
  });
});

describe('sluice check: observe', suiteOptions(), () => {
  test('the test policy passes; an observe tool that is not allowed is refused with its position', (t) => {
    const dir = tmpDir(t);
    const good = runSluice(['check', '--policy', writePolicy(dir, POLICY)]);
    assert.equal(good.status, 0, good.stdout + good.stderr);
    const bad = writePolicy(dir, POLICY.replace('  read_file:\n    action: allow\n', '  read_file:\n    action: confirm\n'), 'bad.yaml');
    const r = runSluice(['check', '--policy', bad]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /bad\.yaml:12:13: tools\.write_file\.observe\.tool "read_file" must be an allow tool/);
  });
});

// Found in the second review: the observe call obeys the read tool's own rules, and a round that
// continues after the upstream's own question reads the target again.
describe('observe: review findings', suiteOptions(), () => {
  const REVIEW = `version: 1
tools:
  read_file:
    action: allow
    args:
      path:
        deny_glob: ["/secret/**"]
  set_file:
    action: allow
  delete_file:
    action: confirm
    args:
      path: {}
    observe: { tool: read_file, args: { path: path } }
  ask:
    action: confirm
    args:
      path: {}
    observe: { tool: read_file, args: { path: path } }
`;
  const FILES = { '/secret/key': 'AWS_SECRET=hunter2\n', '/data/a.txt': 'one\n' };

  test('an observe call the read tool\'s rules deny refuses the call, and nothing read is shown', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, REVIEW), dir, fake: { FAKE_FILES: JSON.stringify(FILES) } });
    const r = await s.request(toolCall(1, 'delete_file', { path: '/secret/key' }));
    assert.ok(r.result && r.result.isError, r.raw);
    assert.doesNotMatch(r.raw, /hunter2/);
    await s.sync();
    assert.equal(s.upstreamCalls('read_file').length, 0, 'the secret is never read');
    assert.equal(s.upstreamCalls('delete_file').length, 0);
  });

  test('a continuation round after the upstream\'s own question reads the target again', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, REVIEW), dir, era: 'modern', fake: { FAKE_FILES: JSON.stringify(FILES) } });
    const args = { topic: 'x', path: '/data/a.txt' };
    const q = await s.request(toolCall(1, 'ask', args));
    assertAsked(q);
    const r2 = await s.request(confirmRetry(2, 'ask', args, q.result.requestState, ACCEPT));
    assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
    const w = await s.request(toolCall(3, 'set_file', { path: '/data/a.txt', content: 'changed\n' }));
    assert.ok(w.result && !w.result.isError, w.raw);
    const key = Object.keys(r2.result.inputRequests)[0];
    const r4 = await s.request(toolCall(4, 'ask', args, { params: { inputResponses: { [key]: { action: 'accept', content: { answer: 'go' } } }, requestState: r2.result.requestState } }));
    assert.ok(r4.result && r4.result.isError, r4.raw);
    assert.match(JSON.stringify(r4.result), /changed since you approved/);
    await s.sync();
    assert.equal(s.upstreamCalls('ask').length, 1, 'the continuation never reached the upstream');
  });

  // The state of a round after the upstream's question carries the observation before the
  // upstream's own state; how to read it must not depend on the policy when it comes back.
  test('a reload that drops observe between the upstream\'s rounds: the upstream gets its own state back, byte for byte', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, REVIEW);
    const s = startSluice(t, { policy, dir, era: 'modern', fake: { FAKE_FILES: JSON.stringify(FILES) } });
    const args = { topic: 'x', path: '/data/a.txt' };
    const q = assertAsked(await s.request(toolCall(1, 'ask', args)));
    const r2 = await s.request(confirmRetry(2, 'ask', args, q.state, ACCEPT));
    assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
    writePolicy(dir, REVIEW.replace(/    observe: .*\n$/, ''));
    await reloadPolicy(s);
    const key = Object.keys(r2.result.inputRequests)[0];
    const r4 = await s.request(toolCall(4, 'ask', args, { params: { inputResponses: { [key]: { action: 'accept', content: { answer: 'go' } } }, requestState: r2.result.requestState } }));
    assert.ok(r4.result && !r4.result.isError, r4.raw);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2, r4.raw);
    assert.match(calls[1].params.requestState, /^fake-upstream-state-\d+-\d+$/, 'the observation reached the upstream in its state');
    assert.match(resultText(r4), /^answered: go \(state fake-upstream-state-/, r4.raw);
  });
});

describe('observe: a reload while the accept waits for the store', redisSuiteOptions(suiteOptions()), () => {
  // The accepted call's verdict names the observe rule, which lives in the policy: a reload
  // while the spend's reply was on its way freed it, and the re-check read freed memory.
  test('the re-check still reads the target by the rule the call was approved under', async (t) => {
    const redis = await startRedis(t);
    const relay = await slowRelay(t, redis.port);
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY);
    const s = startSluice(t, { policy, era: 'legacy', dir, fake: { FAKE_FILES: JSON.stringify(SEED) },
      args: ['--store', `redis://127.0.0.1:${relay.port}`, '--store-timeout', '60000'] }); // the delay below stays under it
    const end = Date.now() + scaled(10000);
    while (!/store: connected/.test(s.stderr)) {
      assert.ok(Date.now() < end, `no store connection: ${s.stderr}`);
      await sleep(20);
    }
    const args = { path: '/data/a.txt', content: 'new' };
    const q = assertAsked(await s.request(toolCall('w-1', 'write_file', args)));
    relay.setDelay(scaled(1000));
    s.send(confirmRetry('w-2', 'write_file', args, q.state, ACCEPT));
    await sleep(scaled(200));
    writePolicy(dir, `${POLICY}  other_tool:\n    action: deny\n`);
    await reloadPolicy(s);
    relay.setDelay(0);
    const r = await s.responseTo('w-2', scaled(10000));
    assert.ok(r.result && !r.result.isError, r.raw);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 1);
    assert.equal(s.upstreamCalls('read_file').length, 2, 'read before the question and again after the accept');
  });
});
