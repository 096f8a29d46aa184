// gate.test.mjs: the confirmation gate, end to end. Every test asserts on what the fake upstream
// actually received (its log), not only on what the client was told.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, assertInvalidState, assertReplayed, assertRefusal, confirmRetry, legacyCall,
  legacyHandshake, legacySync, modernRequest, nextElicitation, policyPath, reloadPolicy, resultText, readJsonLines, scaled, sleep,
  startSluice, suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';

const GATE = policyPath('gate.yaml');
const ERAS = ['legacy', 'modern'];

async function askRound(s, id, name, args, opts) {
  const r = await s.request(toolCall(id, name, args, opts));
  return assertAsked(r);
}

/** Asserts the upstream received no tools/call for name (after a sync barrier). */
async function assertNotForwarded(s, name) {
  await s.sync();
  const calls = s.upstreamCalls(name);
  assert.equal(calls.length, 0, `upstream must not have received ${name}; got ${JSON.stringify(calls)}`);
}

/** Asserts the upstream received exactly one call of name, with exactly args and no sluice fields. */
async function assertForwardedOnce(s, name, args, state) {
  await s.sync();
  const calls = s.upstreamCalls(name);
  assert.equal(calls.length, 1, `upstream must have received ${name} exactly once; got ${JSON.stringify(calls)}`);
  const p = calls[0].params;
  assert.equal(p.name, name);
  assert.deepEqual(p.arguments, args, 'the upstream must receive exactly the approved arguments');
  assert.ok(!('inputResponses' in p), `inputResponses leaked upstream: ${calls[0].raw}`);
  assert.ok(!('requestState' in p), `requestState leaked upstream: ${calls[0].raw}`);
  assert.ok(!calls[0].raw.includes('sluice.confirm'), `sluice.confirm leaked upstream: ${calls[0].raw}`);
  if (state) assert.ok(!calls[0].raw.includes(state), `the sealed state leaked upstream: ${calls[0].raw}`);
  return calls[0];
}

describe('allow and deny', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`allow: forwarded untouched, result relayed under the client's id (${era} upstream)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const args = { text: 'héllo\u2028wörld 😀', n: 1.5, list: [1, { a: null, b: false }], nested: { z: 'last', a: 'first' } };
      const r = await s.request(toolCall('call-1', 'echo', args));
      assert.equal(r.id, 'call-1');
      assert.ok(r.result, r.raw);
      assert.equal(r.result.resultType, 'complete', `resultType must be added for a modern client: ${r.raw}`);
      assert.deepEqual(r.result.structuredContent, { echoed: args }, r.raw);
      const calls = s.upstreamCalls('echo');
      assert.equal(calls.length, 1);
      assert.deepEqual(calls[0].params.arguments, args);
    });
  }

  test('allow: integer, zero, string and large ids are echoed exactly', async (t) => {
    const s = startSluice(t, { policy: GATE });
    for (const id of [0, 7, '7', -3, 'a"b\\c', 'ünï']) {
      const r = await s.request(toolCall(id, 'echo', { id: String(id) }));
      assert.deepEqual(r.id, id, r.raw);
      assert.ok(r.result, r.raw);
    }
    // An id beyond 2^53 must come back with the same digits (PROTOCOL §7.1: keep the raw token).
    s.sendRaw('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}\n');
    const l = await s.next((m) => m && !('method' in m), undefined, 'the response to the big id');
    assert.match(l.raw, /"id":9007199254740993[,}]/, `big id not echoed exactly: ${l.raw}`);
  });

  test('deny: isError naming the rule, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const r = await s.request(toolCall(1, 'drop_table', { table: 'users' }));
    assertRefusal(r, /tools\.drop_table/);
    await assertNotForwarded(s, 'drop_table');
  });

  test('deny also holds for a client without any capabilities', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const r = await s.request(toolCall(1, 'drop_table', { table: 'users' }, { caps: {} }));
    assertRefusal(r, /tools\.drop_table/);
    await assertNotForwarded(s, 'drop_table');
  });

  test('defaults.action deny refuses a tool the policy does not name', async (t) => {
    const s = startSluice(t, { policy: policyPath('default_deny.yaml') });
    const r = await s.request(toolCall(1, 'delete_file', { path: '/x' }));
    assertRefusal(r, /defaults\.action/);
    await assertNotForwarded(s, 'delete_file');
  });

  test('defaults.action confirm asks for a tool the policy does not name', async (t) => {
    const s = startSluice(t, { policy: policyPath('default_confirm.yaml') });
    await askRound(s, 1, 'sleep', { ms: 1 });
    await assertNotForwarded(s, 'sleep');
    const r2 = await s.request(toolCall(2, 'drop_table', { table: 't' }));
    assertRefusal(r2, /tools\.drop_table/);
  });
});

describe('tool names that read as a policy tool\'s', suiteOptions(), () => {
  // A server that matches names loosely (case-insensitively, or without invisible characters)
  // would run delete_file for these; the policy does not name them, so they would otherwise go
  // on under defaults.action: allow.
  const VARIANTS = [
    ['Delete_File', 'delete_file'], ['delete\u200b_file', 'delete_file'], ['\u00adWRITE_file', 'write_file'],
    ['drop_table\ufe0f', 'drop_table'], ['drop\u{e0041}_TABLE', 'drop_table'], ['delete_file ', 'delete_file'], ['delete\u2060_FILE\u00a0', 'delete_file'],
  ];
  for (const era of ERAS) {
    test(`a name that differs from a policy tool's only by case or invisible characters is refused as a JSON-RPC error, journaled, not forwarded (${era} upstream)`, async (t) => {
      const dir = tmpDir(t);
      const audit = path.join(dir, 'audit.jsonl');
      const s = startSluice(t, { policy: GATE, era, dir, audit, fake: { FAKE_LAX_NAMES: '1' } });
      let id = 0;
      for (const [name, real] of VARIANTS) {
        const r = await s.request(toolCall(++id, name, { path: '/x', table: 't' }));
        assert.ok(r.error, `${JSON.stringify(name)} must be refused: ${r.raw}`);
        assert.equal(r.error.code, -32602, r.raw);
        assert.match(r.error.message, /only by letter case, width, accents, separators or invisible characters/, r.raw);
        assert.deepEqual(r.error.data, { reason: 'tool-name-variant' }, r.raw);
        const line = readJsonLines(audit).filter((l) => !l.event && l.tool === name).at(-1);
        assert.ok(line, `the refusal of ${JSON.stringify(name)} must be journaled`);
        assert.equal(line.decision, 'refused', JSON.stringify(line));
        assert.equal(line.reason, `tool-name-variant:tools.${real}`, JSON.stringify(line));
      }
      await s.sync();
      const sent = s.upstreamCalls().map((c) => c.params.name);
      assert.deepEqual(sent.filter((n) => VARIANTS.some(([v]) => v === n)), [], 'no variant may reach the upstream');
      // The names themselves, and names that merely resemble them, are decided as before.
      assert.ok((await s.request(toolCall(++id, 'echo', { a: 1 }))).result);
      const other = await s.request(toolCall(++id, 'delete_files', { a: 1 }));
      assert.notDeepEqual(other.error && other.error.data, { reason: 'tool-name-variant' }, other.raw);
      await s.sync();
      assert.equal(s.upstreamCalls('delete_files').length, 1, 'another name is not a variant: forwarded');
    });
  }

  test('fullwidth, ligature, accent and separator variants are refused too, and hide_denied hides a listed one', async (t) => {
    // A server that normalizes names (NFKC, marks and separators dropped) runs delete_file for
    // each of these; the policy does not name them.
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: GATE, dir, fake: { FAKE_LAX_NAMES: '2' } });
    const names = ['\uff44\uff45\uff4c\uff45\uff54\uff45_\uff46\uff49\uff4c\uff45', 'delete-file', 'Delete.File',
      'delete file', 'delete_\ufb01le', 'd\u00e9lete_file', 'DROP-TABLE'];
    let id = 0;
    for (const name of names) {
      const r = await s.request(toolCall(++id, name, { path: '/x', table: 't' }));
      assert.equal(r.error && r.error.code, -32602, `${JSON.stringify(name)} must be refused: ${r.raw}`);
      assert.deepEqual(r.error.data, { reason: 'tool-name-variant' }, r.raw);
    }
    await s.sync();
    assert.deepEqual(s.upstreamCalls().map((c) => c.params.name).filter((n) => names.includes(n)), [], 'no variant may reach the upstream');
    // Listed as the server lists it without hide_denied; left out with it.
    const listed = (await s.request(modernRequest(++id, 'tools/list'))).result.tools.map((x) => x.name);
    assert.ok(listed.includes('Delete-File') && listed.includes('delete_file'), `${listed}`);
    const policy = writePolicy(dir, 'version: 1\ndefaults: { action: allow, hide_denied: true }\ntools:\n  delete_file: { action: confirm }\n  echo: { action: allow }\n');
    const h = startSluice(t, { policy, dir, fake: { FAKE_LAX_NAMES: '2' } });
    const hidden = (await h.request(modernRequest(1, 'tools/list'))).result.tools.map((x) => x.name);
    assert.ok(!hidden.includes('Delete-File'), `a variant listed with hide_denied: ${hidden}`);
    assert.ok(hidden.includes('delete_file') && hidden.includes('echo'), `${hidden}`);
  });

  test('a variant the policy names itself is that tool of its own', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ndefaults: { action: allow }\ntools:\n  delete_file: { action: deny }\n  Delete_File: { action: allow }\n');
    const s = startSluice(t, { policy, dir, fake: { FAKE_LAX_NAMES: '1' } });
    const r = await s.request(toolCall(1, 'Delete_File', { path: '/x' }));
    assert.ok(r.result && !r.result.isError, r.raw);
    assertRefusal(await s.request(toolCall(2, 'delete_file', { path: '/x' })), /tools\.delete_file/);
    const v = await s.request(toolCall(3, 'DELETE_FILE', { path: '/x' }));
    assert.equal(v.error && v.error.code, -32602, v.raw);
  });
});

describe('confirm: round one', suiteOptions(), () => {
  test('asks with sluice.confirm naming the tool and every argument; nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: '/srv/data/report.txt', content: 'quarterly numbers' };
    const q = await askRound(s, 1, 'write_file', args);
    assert.match(q.message, /write_file/);
    for (const [k, v] of Object.entries(args)) {
      assert.ok(q.message.includes(k), `message must name argument ${k}: ${q.message}`);
      assert.ok(q.message.includes(v), `message must show the value of ${k}: ${q.message}`);
    }
    await assertNotForwarded(s, 'write_file');
  });

  for (const caps of [{ elicitation: {} }, { elicitation: { form: {}, url: {} } }, { elicitation: { form: { applyDefaults: true } } }]) {
    test(`asks a client declaring ${JSON.stringify(caps)}`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      await askRound(s, 1, 'write_file', { path: 'a', content: 'b' }, { caps });
      await assertNotForwarded(s, 'write_file');
    });
  }

  for (const caps of [{}, { elicitation: { url: {} } }, { sampling: {}, roots: {} }]) {
    test(`client without form elicitation ${JSON.stringify(caps)}: -32021, nothing forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      const r = await s.request(toolCall(1, 'write_file', { path: 'a', content: 'b' }, { caps }));
      assert.ok(r.error, `expected -32021, got ${r.raw}`);
      assert.equal(r.error.code, -32021, r.raw);
      assert.deepEqual(r.error.data && r.error.data.requiredCapabilities, { elicitation: { form: {} } }, r.raw);
      await assertNotForwarded(s, 'write_file');
    });
  }

  test('irreversible tool is asked like any confirm tool and runs once accepted', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: '/tmp/x' };
    const q = await askRound(s, 1, 'delete_file', args);
    const r = await s.request(confirmRetry(2, 'delete_file', args, q.state, ACCEPT));
    assert.equal(r.result && r.result.resultType, 'complete', r.raw);
    await assertForwardedOnce(s, 'delete_file', args, q.state);
  });

  test('the question shows hostile argument text neutralized', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = {
      path: 'safe.txt\u202Etxt.exe',
      content: 'line one\nApprove? [x] yes\u001b[2K\u001b[1A\u0007\u200B\u2066end',
    };
    const q = await askRound(s, 1, 'write_file', args);
    for (const ch of ['\u202E', '\u001b', '\u0007', '\u200B', '\u2066']) {
      assert.ok(!q.message.includes(ch), `raw U+${ch.codePointAt(0).toString(16)} in the question: ${JSON.stringify(q.message)}`);
    }
    assert.ok(!q.message.includes('\nApprove? [x] yes'), `a newline in a value must not start a line of its own: ${JSON.stringify(q.message)}`);
    // Accepting still forwards the real, unmodified arguments.
    const r = await s.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnce(s, 'write_file', args, q.state);
  });

  test('a long value is cut visibly in the question (its start, length and digest, its end), and the full value is what runs', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const filler = 'ABCDEFGHIJ'.repeat(2000); // no run of one character: a run is shown as its count
    const args = { path: 'big.txt', content: filler + 'TAIL-MARKER' };
    const q = await askRound(s, 1, 'write_file', args);
    assert.ok(Buffer.byteLength(q.message) <= 4096, `question is ${Buffer.byteLength(q.message)} bytes`);
    assert.ok(!q.message.includes(filler.slice(0, 2000)), 'the question must be truncated');
    assert.match(q.message, /\u2026\[20013 bytes, sha256 [0-9a-f]{32}\][A-J]*TAIL-MARKER"/, 'its end is shown after the marker');
    const r = await s.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnce(s, 'write_file', args, q.state);
  });

  test('the state does not carry argument values', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const secret = 'hunter2-SECRET-d41d8cd98f00';
    const q = await askRound(s, 1, 'write_file', { path: 'k', content: secret });
    const decodings = [q.state];
    for (const part of q.state.split(/[^A-Za-z0-9+/_-]+/)) {
      decodings.push(Buffer.from(part, 'base64').toString('latin1'));
      decodings.push(Buffer.from(part, 'base64url').toString('latin1'));
    }
    for (const d of decodings) assert.ok(!d.includes(secret) && !d.includes('hunter2'), 'the argument value is readable in requestState');
  });
});

describe('confirm: round two', suiteOptions(), () => {
  for (const era of ERAS) {
    test(`accept + approve true forwards exactly once, stripped, result under the retry id (${era})`, async (t) => {
      const s = startSluice(t, { policy: GATE, era });
      const args = { path: '/srv/a.txt', content: 'hello' };
      const q = await askRound(s, 'r1', 'write_file', args);
      await assertNotForwarded(s, 'write_file');
      const r = await s.request(confirmRetry('r2', 'write_file', args, q.state, ACCEPT));
      assert.equal(r.id, 'r2');
      assert.ok(r.result, r.raw);
      assert.equal(r.result.resultType, 'complete', r.raw);
      assert.notEqual(r.result.isError, true, r.raw);
      assert.equal(resultText(r), 'wrote "/srv/a.txt"');
      await assertForwardedOnce(s, 'write_file', args, q.state);
    });
  }

  test('keys reordered on round two are still the same call', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const q = await askRound(s, 1, 'write_file', { path: 'p', content: 'c', meta: { b: 1, a: [1, 2] } });
    const r = await s.request(confirmRetry(2, 'write_file', { meta: { a: [1, 2], b: 1 }, content: 'c', path: 'p' }, q.state, ACCEPT));
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnce(s, 'write_file', { path: 'p', content: 'c', meta: { a: [1, 2], b: 1 } }, q.state);
  });

  test('a different spelling of the same JSON values is the same call (RFC 8785)', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}';
    s.sendRaw(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"caf\\u00e9","content":"x","n":1.0,"m":10E-1},${meta}}}\n`);
    const q = assertAsked(await s.responseTo(1));
    s.sendRaw(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{ "m" : 1, "n":1, "content":"x", "path":"café" },"inputResponses":{"sluice.confirm":{"action":"accept","content":{"approve":true}}},"requestState":${JSON.stringify(q.state)},${meta}}}\n`);
    const r = await s.responseTo(2);
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnce(s, 'write_file', { path: 'café', content: 'x', n: 1, m: 1 }, q.state);
  });

  const NOT_YES = [
    ['approve false', { action: 'accept', content: { approve: false } }],
    ['approve "yes"', { action: 'accept', content: { approve: 'yes' } }],
    ['approve "true"', { action: 'accept', content: { approve: 'true' } }],
    ['approve 1', { action: 'accept', content: { approve: 1 } }],
    ['approve null', { action: 'accept', content: { approve: null } }],
    ['approve [true]', { action: 'accept', content: { approve: [true] } }],
    ['approve {}', { action: 'accept', content: { approve: {} } }],
    ['content without approve', { action: 'accept', content: {} }],
    ['missing content', { action: 'accept' }],
    ['content null', { action: 'accept', content: null }],
    ['decline', { action: 'decline' }],
    ['cancel', { action: 'cancel' }],
  ];
  for (const [label, answer] of NOT_YES) {
    test(`${label}: isError, nothing forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      const args = { path: 'f', content: 'c' };
      const q = await askRound(s, 1, 'write_file', args);
      const r = await s.request(confirmRetry(2, 'write_file', args, q.state, answer));
      assertRefusal(r);
      await assertNotForwarded(s, 'write_file');
    });
  }

  const ODD = [
    ['decline carrying approve true', { action: 'decline', content: { approve: true } }],
    ['cancel carrying approve true', { action: 'cancel', content: { approve: true } }],
    ['action "ACCEPT"', { action: 'ACCEPT', content: { approve: true } }],
    ['action "accept " with a space', { action: 'accept ', content: { approve: true } }],
    ['no action', { content: { approve: true } }],
    ['action true', { action: true, content: { approve: true } }],
    ['content as an array', { action: 'accept', content: [true] }],
    ['approve as key "Approve"', { action: 'accept', content: { Approve: true } }],
    ['answer wrapped as {method,result}', { method: 'elicitation/create', result: { action: 'accept', content: { approve: true } } }],
    ['answer is a string', 'accept'],
    ['answer is null', null],
  ];
  for (const [label, answer] of ODD) {
    test(`${label}: never forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      const args = { path: 'f', content: 'c' };
      const q = await askRound(s, 1, 'write_file', args);
      const r = await s.request(confirmRetry(2, 'write_file', args, q.state, answer));
      const ok = r.error || (r.result && (r.result.isError === true || r.result.resultType === 'input_required'));
      assert.ok(ok, `expected a refusal, an error or a new question, got ${r.raw}`);
      await assertNotForwarded(s, 'write_file');
    });
  }

  const CHANGED = [
    ['value changed', { path: 'f', content: 'EVIL' }],
    ['key added', { path: 'f', content: 'c', mode: '0777' }],
    ['key removed', { path: 'f' }],
    ['arguments replaced by {}', {}],
    ['arguments omitted', undefined],
    ['number type changed', { path: 'f', content: 'c', n: '1' }],
  ];
  for (const [label, changed] of CHANGED) {
    test(`arguments changed on round two (${label}): isError, nothing forwarded`, async (t) => {
      const s = startSluice(t, { policy: GATE });
      const base = label === 'number type changed' ? { path: 'f', content: 'c', n: 1 } : { path: 'f', content: 'c' };
      const q = await askRound(s, 1, 'write_file', base);
      const r = await s.request(confirmRetry(2, 'write_file', changed, q.state, ACCEPT));
      const text = assertRefusal(r);
      assert.match(text, /argument/i, r.raw);
      assert.match(text, /chang/i, r.raw);
      await assertNotForwarded(s, 'write_file');
    });
  }

  test('state with no inputResponses asks again, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const r = await s.request(confirmRetry(2, 'write_file', args, q.state, undefined));
    assertAsked(r);
    await assertNotForwarded(s, 'write_file');
  });

  test('inputResponses without a sluice.confirm key asks again, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const r = await s.request(toolCall(2, 'write_file', args, { params: { inputResponses: { 'other.key': ACCEPT }, requestState: q.state } }));
    assertAsked(r);
    await assertNotForwarded(s, 'write_file');
  });

  test('an accept without any requestState is a fresh call: asked, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const r = await s.request(confirmRetry(1, 'write_file', args, undefined, ACCEPT));
    assertAsked(r);
    await assertNotForwarded(s, 'write_file');
  });
});

describe('confirm: a reload that allows the tool while it is asked about', suiteOptions(), () => {
  // The person's answer decides a call sluice asked about, whatever a reload says since: the
  // decline must not run it; an accept runs it once, stripped as ever. Called again, it is allowed.
  const ASKED = 'version: 1\ndefaults:\n  action: allow\ntools:\n  write_file:\n    action: confirm\n';
  const ALLOWED = 'version: 1\ndefaults:\n  action: allow\ntools:\n  write_file:\n    action: allow\n';

  for (const era of ERAS) {
    test(`2026-07-28 round two declined after the reload: refused, nothing forwarded (${era} upstream)`, async (t) => {
      const dir = tmpDir(t);
      const s = startSluice(t, { policy: writePolicy(dir, ASKED), dir, era });
      const args = { path: '/srv/declined', content: 'x' };
      const q = await askRound(s, 1, 'write_file', args);
      writePolicy(dir, ALLOWED);
      await reloadPolicy(s);
      assertRefusal(await s.request(confirmRetry(2, 'write_file', args, q.state, { action: 'decline' })));
      await assertNotForwarded(s, 'write_file');
      // The declined state is spent: an accept sent with it afterwards runs nothing either.
      const late = await s.request(confirmRetry(3, 'write_file', args, q.state, ACCEPT));
      assert.ok(late.error || late.result?.isError, late.raw);
      await assertNotForwarded(s, 'write_file');
      const again = await s.request(toolCall(4, 'write_file', args));
      assert.ok(again.result && again.result.resultType !== 'input_required' && !again.result.isError, again.raw);
      await assertForwardedOnce(s, 'write_file', args);
    });

    test(`2026-07-28 round two accepted after the reload: runs once, stripped (${era} upstream)`, async (t) => {
      const dir = tmpDir(t);
      const s = startSluice(t, { policy: writePolicy(dir, ASKED), dir, era });
      const args = { path: '/srv/accepted', content: 'x' };
      const q = await askRound(s, 1, 'write_file', args);
      writePolicy(dir, ALLOWED);
      await reloadPolicy(s);
      const r = await s.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
      assert.ok(r.result && !r.result.isError, r.raw);
      await assertForwardedOnce(s, 'write_file', args, q.state);
      assertReplayed(await s.request(confirmRetry(3, 'write_file', args, q.state, ACCEPT)));
      await assertForwardedOnce(s, 'write_file', args, q.state);
    });
  }

  for (const [label, answer, runs] of [['declined', { action: 'decline' }, 0], ['cancelled', { action: 'cancel' }, 0], ['accepted', { action: 'accept', content: { approve: true } }, 1]]) {
    test(`2025-11-25 held call ${label} after the reload: ${runs ? 'runs once' : 'refused, nothing forwarded'}`, async (t) => {
      const dir = tmpDir(t);
      const s = startSluice(t, { policy: writePolicy(dir, ASKED), dir });
      await legacyHandshake(s);
      const args = { path: `/srv/held-${label}`, content: 'x' };
      s.send(legacyCall('h', 'write_file', args));
      const e = await nextElicitation(s);
      writePolicy(dir, ALLOWED);
      await reloadPolicy(s);
      s.send({ jsonrpc: '2.0', id: e.id, result: answer });
      const r = await s.responseTo('h');
      if (runs) {
        assert.ok(r.result && !r.result.isError, r.raw);
        await assertForwardedOnce(s, 'write_file', args);
      } else {
        assert.equal(r.result?.isError, true, r.raw);
        await assertNotForwarded(s, 'write_file');
      }
    });
  }
});

describe('confirm: the sealed state', suiteOptions(), () => {
  function mutations(state) {
    const mid = Math.floor(state.length / 2);
    const flip = (i) => state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1);
    return [
      ['one character flipped in the middle', flip(mid)],
      ['first character flipped', flip(0)],
      ['last character flipped', flip(state.length - 1)],
      ['truncated by one', state.slice(0, -1)],
      ['one character appended', state + 'A'],
      ['garbage', 'not-a-state'],
      ['empty string', ''],
      ['reversed', [...state].reverse().join('')],
    ];
  }

  test('tampered or garbage states: -32602 invalid_request_state, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    let id = 100;
    for (const [label, bad] of mutations(q.state)) {
      const r = await s.request(confirmRetry(++id, 'write_file', args, bad, ACCEPT));
      try {
        assertInvalidState(r);
      } catch (e) {
        e.message = `${label}: ${e.message}`;
        throw e;
      }
    }
    for (const bad of [5, { v: 1 }, ['x'], true]) {
      const r = await s.request(confirmRetry(++id, 'write_file', args, bad, ACCEPT));
      assertInvalidState(r);
    }
    await assertNotForwarded(s, 'write_file');
    // The untouched state still works afterwards (a failed check does not burn it).
    const ok = await s.request(confirmRetry(++id, 'write_file', args, q.state, ACCEPT));
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    await assertForwardedOnce(s, 'write_file', args, q.state);
  });

  test('a state for another tool: -32602, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const r = await s.request(confirmRetry(2, 'delete_file', args, q.state, ACCEPT));
    assertInvalidState(r, /^This requestState was altered, or was made for another tool, principal or server$/);
    await assertNotForwarded(s, 'delete_file');
    const r2 = await s.request(confirmRetry(3, 'drop_table', args, q.state, ACCEPT));
    assert.ok(r2.error || (r2.result && r2.result.isError === true), r2.raw);
    await assertNotForwarded(s, 'drop_table');
    await assertNotForwarded(s, 'write_file');
  });

  test('an expired state (confirm_ttl 1, waited 2.2 s): -32602, nothing forwarded', async (t) => {
    const s = startSluice(t, { policy: policyPath('ttl1.yaml') });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    await sleep(2200);
    const r = await s.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    assertInvalidState(r, /^This confirmation expired before it came back/);
    await assertNotForwarded(s, 'write_file');
  });

  test('replay: the second use of an accepted state gets the first run\'s result, marked replayed; forwarded exactly once', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const r1 = await s.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    assert.ok(r1.result && !r1.result.isError, r1.raw);
    const r2 = await s.request(confirmRetry(3, 'write_file', args, q.state, ACCEPT));
    assertReplayed(r2, r1);
    const r3 = await s.request(confirmRetry(4, 'write_file', { content: 'c', path: 'f' }, q.state, ACCEPT));
    assertReplayed(r3, r1);
    // A decline on the spent state takes nothing back and gets nothing: a replay.
    assertInvalidState(await s.request(confirmRetry(5, 'write_file', args, q.state, { action: 'decline' })), /^This confirmation was already used; a requestState runs once/);
    await assertForwardedOnce(s, 'write_file', args, q.state);
  });

  test('replay race: two retries with one state in one write forward exactly once; the second waits for the result', async (t) => {
    const s = startSluice(t, { policy: GATE, fake: { FAKE_SLOW_MS: 200 } });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const a = confirmRetry('a', 'write_file', args, q.state, ACCEPT);
    const b = confirmRetry('b', 'write_file', args, q.state, ACCEPT);
    s.sendRaw(JSON.stringify(a) + '\n' + JSON.stringify(b) + '\n');
    const [ra, rb] = await Promise.all([s.responseTo('a'), s.responseTo('b')]);
    const replayed = [ra, rb].filter((r) => r.result && r.result._meta && r.result._meta['dev.sluice/replayed']);
    assert.equal(replayed.length, 1, `one runs, the other gets its result: ${ra.raw} / ${rb.raw}`);
    const first = replayed[0] === ra ? rb : ra;
    assert.ok(first.result && !first.result.isError, first.raw);
    assertReplayed(replayed[0], first);
    await assertForwardedOnce(s, 'write_file', args, q.state);
  });

  test('an accept cancelled in the write that carries it does not run; a retry of it is refused at once', async (t) => {
    // The memory store spends the state at once and delivers its answer from the event loop:
    // the cancel, read first, finds the accept waiting for it. The state is spent and nothing
    // ran, so a retry is a replay now, not left polling for an outcome until --upstream-timeout.
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'user', _meta: meta } };
    s.sendRaw(`${JSON.stringify(confirmRetry(2, 'write_file', args, q.state, ACCEPT))}\n${JSON.stringify(cancel)}\n`);
    await s.noResponseTo(2, 300);
    assertInvalidState(await s.request(confirmRetry(3, 'write_file', args, q.state, ACCEPT), scaled(5000)), /already used/);
    await assertNotForwarded(s, 'write_file');
  });

  test('an approved call the client cancels while it runs: a retry of its state is told at once that its outcome is unknown; nothing runs again', async (t) => {
    // Before, the cancel dropped what the store waited for, and the retry polled it until
    // --upstream-timeout (30 s here) before saying the same.
    const s = startSluice(t, { policy: GATE, fake: { FAKE_SLOW_MS: scaled(1500) }, args: ['--upstream-timeout', '30'] });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    s.send(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    const end = Date.now() + scaled(5000);
    while (s.upstreamCalls('write_file').length === 0 && Date.now() < end) await sleep(20);
    assert.equal(s.upstreamCalls('write_file').length, 1, 'the accepted call did not reach the upstream');
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'user', _meta: meta } });
    const t0 = Date.now();
    const r = await s.request(confirmRetry(3, 'write_file', args, q.state, ACCEPT), scaled(5000));
    assert.ok(Date.now() - t0 < scaled(5000), r.raw);
    assertReplayed(r);
    assert.equal(r.result.isError, true, r.raw);
    assert.equal(r.result.resultType, 'complete', r.raw);
    assert.match(resultText(r), /ended before its result came \(the client cancelled it\)\. Whether it ran is unknown/, r.raw);
    await s.noResponseTo(2, 2000); // the cancelled request gets nothing, even when the server answers
    await assertForwardedOnce(s, 'write_file', args, q.state);
  });

  test('a request reusing the id of a running approved call is refused; the kept outcome is still the call\'s reply', async (t) => {
    // Answered under the same id 7, the ping's {} was once kept as the call's outcome, and the
    // retry got it, empty. The id is in flight: the ping is refused (-32600) and settles nothing.
    const s = startSluice(t, { policy: GATE, fake: { FAKE_SLOW_MS: 400 } });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(s, 1, 'write_file', args);
    // One write: sluice reads the ping while the accepted call runs (400 ms).
    s.sendRaw(`${JSON.stringify(confirmRetry(7, 'write_file', args, q.state, ACCEPT))}\n${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' })}\n`);
    const answers = [await s.responseTo(7), await s.responseTo(7)];
    assert.equal(answers[0].error && answers[0].error.code, -32600, `the ping first, refused: ${answers[0].raw}`);
    assert.match(answers[0].error.message, /still in flight/, answers[0].raw);
    const ran = answers[1];
    assert.ok(ran.result && Array.isArray(ran.result.content) && !ran.result.isError, `the call's own reply under id 7: ${ran.raw}`);
    assertReplayed(await s.request(confirmRetry(8, 'write_file', args, q.state, ACCEPT)), ran);
    await assertForwardedOnce(s, 'write_file', args, q.state);
  });

  test('a request reusing the id of an allowed call still running upstream is refused; the call answers its id', async (t) => {
    const s = startSluice(t, { policy: GATE, fake: { FAKE_SLOW_MS: 400 } });
    s.sendRaw(`${JSON.stringify(toolCall('e', 'echo', { text: 'first' }))}\n${JSON.stringify({ jsonrpc: '2.0', id: 'e', method: 'ping' })}\n`);
    const ping = await s.responseTo('e');
    assert.equal(ping.error && ping.error.code, -32600, `the ping first, refused: ${ping.raw}`);
    const r = await s.responseTo('e');
    assert.deepEqual(r.result && r.result.structuredContent, { echoed: { text: 'first' } }, r.raw);
  });

  test('a call reusing the id of a call held for its person is refused and journaled; the held call goes on', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy: GATE, dir, audit });
    await legacyHandshake(s);
    const args = { path: 'held', content: 'c' };
    s.send(legacyCall('h', 'write_file', args));
    const e = await nextElicitation(s);
    // The same id again: another tool, and the held tool itself with other arguments.
    const other = await s.request(legacyCall('h', 'echo', { text: 'x' }));
    assert.equal(other.error && other.error.code, -32600, other.raw);
    const swap = await s.request(legacyCall('h', 'write_file', { path: 'other', content: 'c' }));
    assert.equal(swap.error && swap.error.code, -32600, swap.raw);
    s.send({ jsonrpc: '2.0', id: e.id, result: ACCEPT });
    const r = await s.responseTo('h');
    assert.ok(r.result && !r.result.isError, r.raw);
    await legacySync(s);
    const writes = s.upstreamCalls('write_file');
    assert.deepEqual(writes.map((m) => m.params.arguments), [args], 'the held call ran once, as asked');
    assert.equal(s.upstreamCalls('echo').length, 0, 'the refused call never reached the server');
    const refused = readJsonLines(audit).filter((l) => l.reason === 'id-in-use');
    assert.deepEqual(refused.map((l) => [l.tool, l.decision, l.upstream, l.id]),
      [['echo', 'refused', 'not-forwarded', 'h'], ['write_file', 'refused', 'not-forwarded', 'h']], JSON.stringify(refused));
    // Answered, the id is free again for this check (2025-11-25 forbids reuse; sluice only
    // refuses what would be confused with a request in flight).
    const after = await s.request(legacyCall('h', 'echo', { text: 'y' }));
    assert.ok(after.result && !after.result.isError, after.raw);
  });

  test('the same call asked again while its question is open shares it: one state, one run', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q1 = await askRound(s, 1, 'write_file', args);
    const q2 = await askRound(s, 2, 'write_file', args);
    assert.equal(q1.state, q2.state, 'approval fatigue: an identical open question is not asked twice');
    const r1 = await s.request(confirmRetry(3, 'write_file', args, q1.state, ACCEPT));
    assert.ok(r1.result && !r1.result.isError, r1.raw);
    const r2 = await s.request(confirmRetry(4, 'write_file', args, q2.state, ACCEPT));
    assertReplayed(r2, r1);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 1, 'one question, one run');
  });

  test('once answered, the same call is asked again with a new state, good for one more run', async (t) => {
    const s = startSluice(t, { policy: GATE });
    const args = { path: 'f', content: 'c' };
    const q1 = await askRound(s, 1, 'write_file', args);
    const r1 = await s.request(confirmRetry(2, 'write_file', args, q1.state, ACCEPT));
    assert.ok(r1.result && !r1.result.isError, r1.raw);
    const q2 = await askRound(s, 3, 'write_file', args);
    assert.notEqual(q1.state, q2.state);
    const r2 = await s.request(confirmRetry(4, 'write_file', args, q2.state, ACCEPT));
    assert.ok(r2.result && !r2.result.isError, r2.raw);
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 2, 'two approvals, two runs');
  });

  test('a state minted by another sluice with another key: -32602', async (t) => {
    const dir = tmpDir(t);
    const a = startSluice(t, { policy: GATE, dir });
    const b = startSluice(t, { policy: GATE, dir });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(a, 1, 'write_file', args);
    const r = await b.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    assertInvalidState(r);
    await assertNotForwarded(b, 'write_file');
  });

  // Without a shared replay store each process knows only the nonces it spent, so a state opens
  // only where it was minted, even under the same key: else one approval could run once in each.
  test('SLUICE_STATE_KEY shared by two processes: only the minting one accepts, once; a third key refuses', async (t) => {
    const dir = tmpDir(t);
    const key = 'a1'.repeat(32);
    const other = 'b2'.repeat(32);
    // Same upstream command line for all three: states are bound to the upstream they front.
    const a = startSluice(t, { policy: GATE, dir, tag: 'shared', env: { SLUICE_STATE_KEY: key } });
    const b = startSluice(t, { policy: GATE, dir, tag: 'shared', env: { SLUICE_STATE_KEY: key } });
    const c = startSluice(t, { policy: GATE, dir, tag: 'shared', env: { SLUICE_STATE_KEY: other } });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(a, 1, 'write_file', args);
    const rc = await c.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT));
    assertInvalidState(rc);
    await assertNotForwarded(c, 'write_file');
    assertInvalidState(await b.request(confirmRetry(3, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwarded(b, 'write_file');
    const ra = await a.request(confirmRetry(4, 'write_file', args, q.state, ACCEPT));
    assert.ok(ra.result && !ra.result.isError, ra.raw);
    await assertForwardedOnce(a, 'write_file', args, q.state);
    assertInvalidState(await b.request(confirmRetry(5, 'write_file', args, q.state, ACCEPT)));
    await assertForwardedOnce(a, 'write_file', args, q.state); // a and b share the upstream's log
  });

  test('same key, another upstream command line: -32602 (states are bound to the upstream)', async (t) => {
    const dir = tmpDir(t);
    const key = 'c3'.repeat(32);
    const a = startSluice(t, { policy: GATE, dir, tag: 'one', env: { SLUICE_STATE_KEY: key } });
    const b = startSluice(t, { policy: GATE, dir, tag: 'two', env: { SLUICE_STATE_KEY: key } });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(a, 1, 'write_file', args);
    assertInvalidState(await b.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwarded(b, 'write_file');
  });

  test('--state-key-file: a restarted process with the same key refuses the states of its previous run', async (t) => {
    const dir = tmpDir(t);
    const keyFile = path.join(dir, 'state.key');
    fs.writeFileSync(keyFile, Buffer.alloc(32, 7), { mode: 0o600 });
    fs.chmodSync(keyFile, 0o600);
    const a = startSluice(t, { policy: GATE, dir, tag: 'shared', args: ['--state-key-file', keyFile] });
    const args = { path: 'f', content: 'c' };
    const q = await askRound(a, 1, 'write_file', args);
    await a.kill(); // within the same second, as a crash loop restarts
    const b = startSluice(t, { policy: GATE, dir, tag: 'shared', args: ['--state-key-file', keyFile] });
    assertInvalidState(await b.request(confirmRetry(2, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwarded(b, 'write_file');
  });

  for (const [label, setup] of [
    ['a 16-byte key file', (f) => fs.writeFileSync(f, Buffer.alloc(16, 1), { mode: 0o600 })],
    ['a key file others can read', (f) => { fs.writeFileSync(f, Buffer.alloc(32, 1)); fs.chmodSync(f, 0o644); }],
    ['a missing key file', () => {}],
  ]) {
    test(`refuses to start with ${label}`, async (t) => {
      const dir = tmpDir(t);
      const keyFile = path.join(dir, 'k');
      setup(keyFile);
      const s = startSluice(t, { policy: GATE, dir, args: ['--state-key-file', keyFile] });
      const { code } = await s.waitExit(5000);
      assert.notEqual(code, 0, `sluice must refuse ${label}; stderr: ${s.stderr}`);
    });
  }

  for (const [label, value] of [['32 hex digits', 'ab'.repeat(16)], ['non-hex', 'zz'.repeat(32)]]) {
    test(`refuses to start with SLUICE_STATE_KEY of ${label}`, async (t) => {
      const s = startSluice(t, { policy: GATE, env: { SLUICE_STATE_KEY: value } });
      const { code } = await s.waitExit(5000);
      assert.notEqual(code, 0, `sluice must refuse a weak SLUICE_STATE_KEY; stderr: ${s.stderr}`);
    });
  }
});

describe('confirm: a gated tool whose modern upstream also asks (PROTOCOL §2.8)', suiteOptions(), () => {
  test('the upstream question reaches the client; answering it runs the tool once and never skips the gate', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  ask:\n    action: confirm\n  echo:\n    action: allow\n');
    const s = startSluice(t, { policy, era: 'modern', dir });
    const args = { topic: 'budget' };
    const q = await askRound(s, 1, 'ask', args);
    await assertNotForwarded(s, 'ask');
    const r2 = await s.request(confirmRetry(2, 'ask', args, q.state, ACCEPT));
    assert.ok(r2.result, r2.raw);
    assert.equal(r2.result.resultType, 'input_required', `the upstream's own question must reach the client: ${r2.raw}`);
    const upQ = Object.values(r2.result.inputRequests || {}).find((x) => x.params && x.params.message === 'What is your answer?');
    assert.ok(upQ, `the upstream's elicitation must be passed on: ${r2.raw}`);
    const key = Object.keys(r2.result.inputRequests).find((k) => r2.result.inputRequests[k] === upQ);
    const r3 = await s.request(toolCall(3, 'ask', args, { params: { inputResponses: { [key]: { action: 'accept', content: { answer: '42' } } }, requestState: r2.result.requestState } }));
    assert.ok(r3.result && r3.result.resultType === 'complete', r3.raw);
    assert.match(resultText(r3), /^answered: 42 \(state fake-upstream-state-/);
    await s.sync();
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2, `upstream: first call, then the retry with its own state: ${JSON.stringify(calls)}`);
    assert.ok(!('requestState' in calls[0].params) && !('inputResponses' in calls[0].params), calls[0].raw);
    assert.match(calls[1].params.requestState, /^fake-upstream-state-/, 'the upstream must get its own state back byte-exact');
    assert.deepEqual(calls[1].params.inputResponses, { 'upstream.q': { action: 'accept', content: { answer: '42' } } });
    assert.ok(!calls[1].raw.includes('sluice.confirm'), calls[1].raw);
  });

  // The client's answer under sluice.confirm on the next round is taken as an answer to sluice
  // and dropped before the upstream would see it: such a question is never shown, the call fails.
  test('an upstream question under sluice\'s own key "sluice.confirm": the call fails, the question never reaches the client, journaled', async (t) => {
    const dir = tmpDir(t);
    const audit = path.join(dir, 'audit.jsonl');
    const policy = writePolicy(dir, 'version: 1\ntools:\n  ask:\n    action: confirm\n  echo:\n    action: allow\n');
    const s = startSluice(t, { policy, era: 'modern', dir, audit });
    const args = { topic: 'budget', askKey: 'sluice.confirm' };
    const q = await askRound(s, 1, 'ask', args);
    const r2 = await s.request(confirmRetry(2, 'ask', args, q.state, ACCEPT));
    assert.ok(r2.error, `the call must fail: ${r2.raw}`);
    assert.match(r2.error.message, /under sluice's own key "sluice\.confirm"/, r2.raw);
    assert.ok(!r2.raw.includes('What is your answer?'), `the upstream's question must not be shown: ${r2.raw}`);
    await s.sync();
    assert.equal(s.upstreamCalls('ask').length, 1, 'the upstream ran its first round only');
    const lines = readJsonLines(audit).filter((l) => !l.event && l.tool === 'ask' && l.decision !== 'asked' && l.decision !== 'forwarding');
    assert.deepEqual(lines.map((l) => [l.decision, l.reason, l.upstream]), [['refused', 'upstream-reserved-key', 'input-required']], JSON.stringify(lines));
  });
});
