// fatigue.test.mjs: approval fatigue. An identical call while its question is open gets the same
// question (one state, so it can run once); a principal has a bounded number of open questions
// and of new questions per minute; beyond them calls are refused with a clear message.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACCEPT, assertAsked, confirmRetry, legacyCall, legacyHandshake, nextElicitation, reloadPolicy, resultText, startSluice, suiteOptions, tmpDir, toolCall, writePolicy, assertReplayed } from './lib.mjs';

const POLICY = 'version: 1\ndefaults:\n  max_open_confirmations: 2\n  max_questions_per_minute: 3\ntools:\n  write_file:\n    action: confirm\n  echo:\n    action: allow\n';

describe('approval fatigue', suiteOptions(), () => {
  test('an identical call shares the open question; it runs once', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    const args = { path: 'a', content: '1' };
    const q1 = await s.request(toolCall(1, 'write_file', args));
    assertAsked(q1);
    const q2 = await s.request(toolCall(2, 'write_file', { content: '1', path: 'a' }));
    assertAsked(q2);
    assert.equal(q2.result.requestState, q1.result.requestState, 'the same question, not a second one');
    const r1 = await s.request(confirmRetry(3, 'write_file', args, q1.result.requestState, ACCEPT));
    assert.ok(r1.result && !r1.result.isError, r1.raw);
    // The same question answered twice: the second accept gets the first run's result (one
    // approval, one run), marked as replayed.
    const r2 = await s.request(confirmRetry(4, 'write_file', args, q2.result.requestState, ACCEPT));
    assertReplayed(r2, r1);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 1);
  });

  test('open questions are bounded per principal', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    assertAsked(await s.request(toolCall(1, 'write_file', { path: 'a', content: '1' })));
    assertAsked(await s.request(toolCall(2, 'write_file', { path: 'b', content: '1' })));
    const r = await s.request(toolCall(3, 'write_file', { path: 'c', content: '1' }));
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /max_open_confirmations/);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('new questions per minute are bounded, answered or not', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    for (let i = 0; i < 3; i++) {
      const args = { path: `p${i}`, content: '1' };
      const q = await s.request(toolCall(`q${i}`, 'write_file', args));
      assertAsked(q);
      const d = await s.request(confirmRetry(`d${i}`, 'write_file', args, q.result.requestState, { action: 'decline' }));
      assert.ok(d.result && d.result.isError, d.raw);
    }
    const r = await s.request(toolCall('q3', 'write_file', { path: 'p3', content: '1' }));
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(resultText(r), /max_questions_per_minute/);
  });

  test('a legacy client: an identical call while one is held is refused, not asked twice', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    await legacyHandshake(s);
    const args = { path: 'a', content: '1' };
    s.send(legacyCall('c1', 'write_file', args));
    const e = await nextElicitation(s);
    s.send(legacyCall('c2', 'write_file', args));
    const r2 = await s.responseTo('c2');
    assert.ok(r2.result && r2.result.isError, r2.raw);
    assert.match(resultText(r2), /already waiting/);
    s.send({ jsonrpc: "2.0", id: e.id, result: ACCEPT });
    const r1 = await s.responseTo('c1');
    assert.ok(r1.result && !r1.result.isError, r1.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1);
  });

  test('a legacy client with 32 calls held: each further call is refused as too many held, and holds no open question', async (t) => {
    const dir = tmpDir(t);
    const policy = 'version: 1\ndefaults:\n  max_open_confirmations: 34\n  max_questions_per_minute: 100\ntools:\n  write_file:\n    action: confirm\n';
    const s = startSluice(t, { policy: writePolicy(dir, policy), dir });
    await legacyHandshake(s);
    for (let i = 0; i < 32; i++) {
      s.send(legacyCall(`h${i}`, 'write_file', { path: `h${i}`, content: '1' }));
      await nextElicitation(s);
    }
    // Each refusal's question was recorded by the store, then closed: the third is refused for
    // the same reason, not because the two before it left 34 questions open.
    for (let i = 0; i < 3; i++) {
      const r = await s.request(legacyCall(`x${i}`, 'write_file', { path: `x${i}`, content: '1' }));
      assert.ok(r.result && r.result.isError, r.raw);
      assert.match(resultText(r), /Too many calls are waiting for confirmation on this connection/, r.raw);
    }
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('a legacy client\'s held call refused after a reload (the tool now denied): its question is closed', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY);
    const s = startSluice(t, { policy, dir });
    await legacyHandshake(s);
    const reload = (text) => {
      writePolicy(dir, text);
      return reloadPolicy(s);
    };
    const args = { path: 'r', content: '1' };
    s.send(legacyCall('r1', 'write_file', args));
    const e = await nextElicitation(s);
    await reload(POLICY.replace('write_file:\n    action: confirm', 'write_file:\n    action: deny'));
    s.send({ jsonrpc: '2.0', id: e.id, result: ACCEPT });
    const r1 = await s.responseTo('r1');
    assert.ok(r1.result && r1.result.isError, r1.raw);
    await reload(POLICY);
    s.send(legacyCall('r2', 'write_file', args));
    const again = await nextElicitation(s); // asked anew, not "already waiting"
    s.send({ jsonrpc: '2.0', id: again.id, result: ACCEPT });
    const r2 = await s.responseTo('r2');
    assert.ok(r2.result && !r2.result.isError, r2.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1);
  });

  test('a legacy client that answers the question with an error: the same call is asked anew, not refused as waiting', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    await legacyHandshake(s);
    const args = { path: 'e', content: '1' };
    s.send(legacyCall('e1', 'write_file', args));
    const e = await nextElicitation(s);
    s.send({ jsonrpc: '2.0', id: e.id, error: { code: -32603, message: 'cannot show a form now' } });
    const r1 = await s.responseTo('e1');
    assert.ok(r1.result && r1.result.isError, r1.raw);
    assert.match(resultText(r1), /answered with an error/);
    // Its question was withdrawn: it neither blocks the same call nor holds a place.
    s.send(legacyCall('e2', 'write_file', args));
    const again = await nextElicitation(s);
    assert.notEqual(again.id, e.id);
    s.send({ jsonrpc: '2.0', id: again.id, result: ACCEPT });
    const r2 = await s.responseTo('e2');
    assert.ok(r2.result && !r2.result.isError, r2.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1);
  });
});
