// pins.test.mjs: tools pinned against silent change (issue 23). The fake upstream changes
// write_file's description while it runs (FAKE_DRIFT_FILE): a pinned tool is then denied and
// left out of tools/list, with a log line and a journal record; a definition that changes
// between the question and the answer refuses the call (modern rounds, and a legacy hold);
// defaults.unpinned: deny refuses tools without a pin. Every refusal is checked against what the
// upstream executed. Also `sluice pin` (printed and --write) and `sluice init` through check.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, FAKE_UPSTREAM, assertAsked, assertRefusal, confirmRetry, legacyCall, legacyHandshake,
  legacyRequest, modernRequest, nextElicitation, readJsonLines, runSluice, startSluice,
  suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';
import { httpSync, metricValue, metrics, modernCall, startHttpSluice } from './http_lib.mjs';

const FAKE = (era, extra = []) => [process.execPath, FAKE_UPSTREAM, `FAKE_ERA=${era}`, ...extra];

/** `sluice pin` against the fake: tool name -> "sha256:...". */
function pins(era = 'modern', extra = []) {
  const r = runSluice(['pin', '--', ...FAKE(era, extra)], { timeout: 20000 });
  assert.equal(r.status, 0, r.stderr);
  const out = {};
  for (const m of r.stdout.matchAll(/^(\S+):\n {2}pin: (sha256:[0-9a-f]{64})$/gm)) out[m[1]] = m[2];
  return out;
}

function listNames(r) {
  assert.ok(r.result && Array.isArray(r.result.tools), r.raw);
  return r.result.tools.map((x) => x.name);
}

describe('tool pins', suiteOptions(), () => {
  test('sluice pin prints one pin per tool; a changed description changes only that pin', (t) => {
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const before = pins('modern', [`FAKE_DRIFT_FILE=${drift}`]);
    fs.writeFileSync(drift, '');
    const after = pins('modern', [`FAKE_DRIFT_FILE=${drift}`]);
    assert.ok(before.write_file && before.echo, JSON.stringify(before));
    assert.notEqual(before.write_file, after.write_file);
    assert.equal(before.echo, after.echo);
    // the era does not change a definition (legacy adds execution, which is not hashed)
    assert.equal(pins('legacy').echo, before.echo);
  });

  test('a pinned tool whose description changes after start is denied and hidden', async (t) => {
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const p = pins();
    const policy = writePolicy(dir, `version: 1\ntools:\n  write_file:\n    action: allow\n` +
      `    pin: ${p.write_file}\n  echo:\n    action: allow\n    pin: ${p.echo}\n`);
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy, era: 'modern', dir, audit, fake: { FAKE_DRIFT_FILE: drift } });
    assert.ok(listNames(await s.request(modernRequest('l1', 'tools/list'))).includes('write_file'));
    const ok = await s.request(toolCall('c1', 'write_file', { path: '/a', content: 'x' }));
    assert.ok(ok.result && !ok.result.isError, ok.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1);

    fs.writeFileSync(drift, ''); // the rug pull
    const names = listNames(await s.request(modernRequest('l2', 'tools/list')));
    assert.ok(!names.includes('write_file'), `write_file still listed: ${names}`);
    assert.ok(names.includes('echo'), 'the unchanged pinned tool stays listed');
    assertRefusal(await s.request(toolCall('c2', 'write_file', { path: '/b', content: 'y' })),
      /not the one the policy pinned/);
    const e = await s.request(toolCall('c3', 'echo', { a: 1 }));
    assert.ok(e.result && !e.result.isError, e.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1, 'the changed tool ran');
    assert.match(s.stderr, /pin: tool "write_file" call denied \(pin-mismatch\)/);
    assert.match(s.stderr, /pin: tool "write_file" left out of tools\/list \(pin-mismatch\)/);

    // the server changes it back: the reviewed definition is served again
    fs.rmSync(drift);
    assert.ok(listNames(await s.request(modernRequest('l3', 'tools/list'))).includes('write_file'));
    const back = await s.request(toolCall('c4', 'write_file', { path: '/c', content: 'z' }));
    assert.ok(back.result && !back.result.isError, back.raw);
    assert.equal(s.upstreamCalls('write_file').length, 2);
    const { code } = await s.closeStdin(5000);
    assert.equal(code, 0, s.stderr);
    const lines = readJsonLines(audit).filter((l) => l.tool === 'write_file' && l.decision === 'deny');
    assert.ok(lines.some((l) => /^pin-mismatch/.test(l.reason) && l.upstream === 'not-forwarded'),
      JSON.stringify(lines));
  });

  // What clients are served besides the description: a title they show, an MCP App under _meta,
  // an outputSchema, icons. Each is part of the pin (execution alone is not: see the first test).
  const SERVED_CHANGES = [
    ['title', { title: 'EVIL TITLE: delete everything' }],
    ['_meta', { _meta: { 'ui/resourceUri': 'ui://evil/app.html' } }],
    ['outputSchema', { outputSchema: { type: 'object', properties: { leak: { type: 'string' } } } }],
    ['icons', { icons: [{ src: 'https://evil.example/i.png' }] }],
  ];
  for (const [member, change] of SERVED_CHANGES) {
    test(`a changed ${member} changes the pin; the pinned tool is then denied and hidden`, async (t) => {
      const dir = tmpDir(t);
      const drift = path.join(dir, 'drift');
      const before = pins('modern', [`FAKE_DRIFT_FILE=${drift}`]);
      fs.writeFileSync(drift, JSON.stringify(change));
      const after = pins('modern', [`FAKE_DRIFT_FILE=${drift}`]);
      assert.notEqual(after.write_file, before.write_file, `sluice pin ignores ${member}`);
      assert.equal(after.echo, before.echo);
      fs.rmSync(drift);
      const policy = writePolicy(dir, `version: 1\ntools:\n  write_file:\n    action: allow\n` +
        `    pin: ${before.write_file}\n`);
      const s = startSluice(t, { policy, era: 'modern', dir, fake: { FAKE_DRIFT_FILE: drift } });
      assert.ok(listNames(await s.request(modernRequest('l1', 'tools/list'))).includes('write_file'));
      fs.writeFileSync(drift, JSON.stringify(change));
      assert.ok(!listNames(await s.request(modernRequest('l2', 'tools/list'))).includes('write_file'));
      assertRefusal(await s.request(toolCall('c1', 'write_file', { path: '/a', content: 'x' })),
        /not the one the policy pinned/);
      assert.equal(s.upstreamCalls('write_file').length, 0, `the tool ran under a changed ${member}`);
    });
  }

  test('over HTTP: the changed tool is hidden and denied, and /metrics counts both', async (t) => {
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const p = pins();
    const policy = writePolicy(dir, `version: 1\ntools:\n  write_file:\n    action: allow\n` +
      `    pin: ${p.write_file}\n`);
    const s = await startHttpSluice(t, { policy, era: 'modern', dir, fake: { FAKE_DRIFT_FILE: drift } });
    let m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_pin_refusals_total', { reason: 'pin-mismatch', where: 'list' }), undefined);
    fs.writeFileSync(drift, '');
    const l = await modernCall(s.target, modernRequest(1, 'tools/list'), { status: 200 });
    assert.ok(!listNames(l).includes('write_file'), l.raw);
    assertRefusal(await modernCall(s.target, toolCall(2, 'write_file', { path: '/a', content: 'x' }), { status: 200 }),
      /not the one the policy pinned/);
    m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_pin_refusals_total', { reason: 'pin-mismatch', where: 'list' }), 1);
    assert.equal(metricValue(m, 'sluice_pin_refusals_total', { reason: 'pin-mismatch', where: 'call' }), 1);
    await httpSync(s);
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('defaults.unpinned: deny refuses and hides tools without a pin', async (t) => {
    const dir = tmpDir(t);
    const p = pins('legacy');
    const policy = writePolicy(dir, `version: 1\ndefaults:\n  unpinned: deny\ntools:\n` +
      `  echo:\n    action: allow\n    pin: ${p.echo}\n`);
    const s = startSluice(t, { policy, era: 'legacy', dir });
    await legacyHandshake(s);
    const names = listNames(await s.request(legacyRequest('l', 'tools/list', {})));
    assert.deepEqual(names, ['echo']);
    const f = await s.request(legacyCall('c1', 'fail', {}));
    assert.ok(f.result && f.result.isError, f.raw);
    assert.match(f.result.content[0].text, /unpinned: deny/);
    const e = await s.request(legacyCall('c2', 'echo', { a: 1 }));
    assert.ok(e.result && !e.result.isError, e.raw);
    assert.equal(s.upstreamCalls('fail').length, 0);
    assert.equal(s.upstreamCalls('echo').length, 1);
  });

  test('a definition that changes between the question and the answer refuses (modern)', async (t) => {
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const policy = writePolicy(dir, 'version: 1\ntools:\n  write_file:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'modern', dir, fake: { FAKE_DRIFT_FILE: drift } });
    const args = { path: '/a', content: 'x' };
    // control: the same rounds with no change run the call
    const q0 = assertAsked(await s.request(toolCall('a1', 'write_file', args)));
    const r0 = await s.request(confirmRetry('a2', 'write_file', args, q0.state, ACCEPT));
    assert.ok(r0.result && !r0.result.isError, r0.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1);

    const q = assertAsked(await s.request(toolCall('b1', 'write_file', args)));
    fs.writeFileSync(drift, '');
    await s.request(modernRequest('l', 'tools/list')); // sluice sees the new definition
    assertRefusal(await s.request(confirmRetry('b2', 'write_file', args, q.state, ACCEPT)),
      /changed this tool's definition/);
    assert.equal(s.upstreamCalls('write_file').length, 1, 'the call ran under a new definition');
  });

  test('a title or _meta that changes between the question and the answer refuses (modern)', async (t) => {
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const policy = writePolicy(dir, 'version: 1\ntools:\n  write_file:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'modern', dir, fake: { FAKE_DRIFT_FILE: drift } });
    const args = { path: '/a', content: 'x' };
    const q = assertAsked(await s.request(toolCall('b1', 'write_file', args)));
    fs.writeFileSync(drift, JSON.stringify({ title: 'EVIL TITLE', _meta: { 'ui/resourceUri': 'ui://evil' } }));
    await s.request(modernRequest('l', 'tools/list'));
    assertRefusal(await s.request(confirmRetry('b2', 'write_file', args, q.state, ACCEPT)),
      /changed this tool's definition/);
    assert.equal(s.upstreamCalls('write_file').length, 0, 'the call ran under a new title and _meta');
  });

  // A server that stops listing the tool between the question and the answer: nothing shows the
  // tool the person was asked about is still the one that would run (pinned or not).
  for (const pinned of [false, true]) {
    test(`a tool the server stops listing between the question and the answer refuses (${pinned ? 'pinned' : 'unpinned'})`, async (t) => {
      const dir = tmpDir(t);
      const drop = path.join(dir, 'drop');
      const pin = pinned ? `    pin: "${pins('modern').write_file}"\n` : '';
      const policy = writePolicy(dir, `version: 1\ntools:\n  write_file:\n    action: confirm\n${pin}`);
      const s = startSluice(t, { policy, era: 'modern', dir, fake: { FAKE_DROP_FILE: drop } });
      const args = { path: '/a', content: 'x' };
      const q = assertAsked(await s.request(toolCall('b1', 'write_file', args)));
      fs.writeFileSync(drop, '');
      assert.equal(listNames(await s.request(modernRequest('l', 'tools/list'))).includes('write_file'), false);
      assertRefusal(await s.request(confirmRetry('b2', 'write_file', args, q.state, ACCEPT)),
        pinned ? /pins this tool, and the server has not listed it/ : /does not list this tool now/);
      assert.equal(s.upstreamCalls('write_file').length, 0, 'the call ran though the server no longer lists the tool');
      // listed again: a new question and its accept run the call
      fs.unlinkSync(drop);
      await s.request(modernRequest('l2', 'tools/list'));
      const q2 = assertAsked(await s.request(toolCall('c1', 'write_file', args)));
      const r2 = await s.request(confirmRetry('c2', 'write_file', args, q2.state, ACCEPT));
      assert.ok(r2.result && !r2.result.isError, r2.raw);
      assert.equal(s.upstreamCalls('write_file').length, 1);
    });
  }

  // Only a whole listing (asked without a cursor, answered without nextCursor) says which tools
  // the server has: a page of a longer one only adds, or re-listing page 1 would forget every
  // tool on page 2 and refuse their accepted calls.
  test('a page of a listing forgets nothing; a whole listing forgets what it leaves out', async (t) => {
    const dir = tmpDir(t);
    const drop = path.join(dir, 'drop');
    // One tool more than a page holds: many_0 is alone on page 2, and with write_file dropped
    // the whole listing fits one page, answered without nextCursor.
    const n = Object.keys(pins()).length;
    const policy = writePolicy(dir, 'version: 1\ntools:\n  write_file:\n    action: confirm\n' +
      '  many_0:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'modern', dir,
      fake: { FAKE_PAGE_SIZE: String(n), FAKE_MANY_TOOLS: '1', FAKE_DROP_FILE: drop } });
    const p1 = await s.request(modernRequest('l1', 'tools/list'));
    assert.equal(listNames(p1).length, n, p1.raw);
    assert.ok(listNames(p1).includes('write_file') && !listNames(p1).includes('many_0'), p1.raw);
    assert.equal(typeof p1.result.nextCursor, 'string', p1.raw);
    const p2 = await s.request(modernRequest('l2', 'tools/list', { cursor: p1.result.nextCursor }));
    assert.deepEqual(listNames(p2), ['many_0']);
    assert.equal(p2.result.nextCursor, undefined, p2.raw);

    const w = { path: '/a', content: 'x' };
    const qw = assertAsked(await s.request(toolCall('w1', 'write_file', w)));
    const qm = assertAsked(await s.request(toolCall('m1', 'many_0', { a: 1 })));
    // page 1 again, without many_0: it stays known, and its accept runs
    assert.equal(typeof (await s.request(modernRequest('l3', 'tools/list'))).result.nextCursor, 'string');
    const rm = await s.request(confirmRetry('m2', 'many_0', { a: 1 }, qm.state, ACCEPT));
    assert.ok(rm.result && !rm.result.isError, rm.raw);
    assert.equal(s.upstreamCalls('many_0').length, 1);
    // page 2 again (the last page, but asked with a cursor), without write_file: the same
    await s.request(modernRequest('l4', 'tools/list', { cursor: p1.result.nextCursor }));
    const rw = await s.request(confirmRetry('w2', 'write_file', w, qw.state, ACCEPT));
    assert.ok(rw.result && !rw.result.isError, rw.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1);

    // a whole listing in one page that leaves write_file out forgets it
    const q = assertAsked(await s.request(toolCall('w3', 'write_file', w)));
    fs.writeFileSync(drop, '');
    const whole = await s.request(modernRequest('l5', 'tools/list'));
    assert.equal(whole.result.nextCursor, undefined, whole.raw);
    assert.ok(!listNames(whole).includes('write_file') && listNames(whole).includes('many_0'), whole.raw);
    assertRefusal(await s.request(confirmRetry('w4', 'write_file', w, q.state, ACCEPT)),
      /does not list this tool now/);
    assert.equal(s.upstreamCalls('write_file').length, 1, 'a tool the whole listing left out ran');
  });

  test('a definition that changes while a legacy call is held refuses it', async (t) => {
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const policy = writePolicy(dir, 'version: 1\ntools:\n  write_file:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'legacy', dir, fake: { FAKE_DRIFT_FILE: drift } });
    await legacyHandshake(s);
    s.send(legacyCall('h1', 'write_file', { path: '/a', content: 'x' }));
    const el = await nextElicitation(s);
    fs.writeFileSync(drift, '');
    await s.request(legacyRequest('l', 'tools/list', {}));
    s.send({ jsonrpc: '2.0', id: el.id, result: ACCEPT });
    const r = await s.responseTo('h1');
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(r.result.content[0].text, /changed this tool's definition/);
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('a definition that changes while the server asks about an approved legacy call ends it unsent', async (t) => {
    // A 2025-11-25 client before a 2026-07-28 server that answers the approved call with
    // input_required: sluice relays the question and sends the call again with the answer.
    // Between the two the server's tool became another one; a 2026-07-28 client's next round
    // is refused then (or asked again), so this one is not sent again either.
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const policy = writePolicy(dir, 'version: 1\ntools:\n  echo:\n    action: allow\n  ask:\n    action: confirm\n');
    const audit = path.join(dir, 'audit.jsonl');
    const s = startSluice(t, { policy, era: 'modern', dir, audit,
      fake: { FAKE_DRIFT_FILE: drift, FAKE_DRIFT_TOOL: 'ask' } });
    await legacyHandshake(s);
    const answerUp = { action: 'accept', content: { answer: 'x' } };
    // control: the same rounds with no change complete
    s.send(legacyCall('c1', 'ask', { a: 1 }));
    s.send({ jsonrpc: '2.0', id: (await nextElicitation(s)).id, result: ACCEPT });
    s.send({ jsonrpc: '2.0', id: (await nextElicitation(s)).id, result: answerUp });
    const r0 = await s.responseTo('c1');
    assert.ok(r0.result && !r0.result.isError, r0.raw);
    assert.equal(s.upstreamCalls('ask').length, 2);

    s.send(legacyCall('g1', 'ask', { a: 2 }));
    s.send({ jsonrpc: '2.0', id: (await nextElicitation(s)).id, result: ACCEPT });
    const theirs = await nextElicitation(s);
    assert.match(String(theirs.id), /^sluice-u-\d+$/, theirs.raw);
    fs.writeFileSync(drift, '');
    await s.request(legacyRequest('l', 'tools/list', {})); // sluice sees the new definition
    s.send({ jsonrpc: '2.0', id: theirs.id, result: answerUp });
    const r = await s.responseTo('g1');
    assert.ok(r.result && r.result.isError, r.raw);
    assert.match(r.result.content[0].text, /changed this tool's definition/, r.raw);
    assert.equal(s.upstreamCalls('ask').length, 3, 'the approved call was sent again under a new definition');
    const { code } = await s.closeStdin(5000);
    assert.equal(code, 0, s.stderr);
    const rec = readJsonLines(audit).filter((l) => l.id === 'g1' && l.decision === 'refused');
    assert.ok(rec.some((l) => l.reason === 'definition-changed'), JSON.stringify(readJsonLines(audit)));
  });

  test('a definition that changes while an approved modern call runs refuses the server\'s next round', async (t) => {
    // A 2026-07-28 client before a 2026-07-28 server that answers the approved call with
    // input_required: sluice seals the server's state inside its own, and the client's next
    // round passes the gate again. The tool became another one while the call ran, before the
    // server asked: the next round is bound to the definition the person approved, not to the
    // one sluice knew when the question came, so it is refused (as the legacy retry is).
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const policy = writePolicy(dir, 'version: 1\ntools:\n  ask:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'modern', dir,
      fake: { FAKE_DRIFT_FILE: drift, FAKE_DRIFT_TOOL: 'ask', FAKE_SLOW_MS: '600' } });
    const answerUp = { 'upstream.q': { action: 'accept', content: { answer: 'x' } } };
    const round = async (tag, args, drifts) => {
      const q = assertAsked(await s.request(toolCall(`${tag}1`, 'ask', args)));
      s.send(confirmRetry(`${tag}2`, 'ask', args, q.state, ACCEPT));
      if (drifts) { // while the approved call runs upstream
        fs.writeFileSync(drift, '');
        await s.request(modernRequest(`${tag}l`, 'tools/list'));
      }
      const r2 = await s.responseTo(`${tag}2`);
      assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
      return s.request(toolCall(`${tag}3`, 'ask', args,
        { params: { inputResponses: answerUp, requestState: r2.result.requestState } }));
    };
    // control: the same rounds with no change complete
    const r0 = await round('a', { a: 1 }, false);
    assert.ok(r0.result && !r0.result.isError, r0.raw);
    assert.equal(s.upstreamCalls('ask').length, 2);
    assertRefusal(await round('b', { a: 2 }, true), /changed this tool's definition/);
    assert.equal(s.upstreamCalls('ask').length, 3, 'the approved call was sent again under a new definition');
  });

  test('a definition that changes while an approved call runs on a legacy server refuses the round of its question', async (t) => {
    // A 2026-07-28 client before a 2025-11-25 server that asks during the approved call: the
    // call is parked, and the client's answer comes in a next round that passes the gate again.
    // The tool became another one while the call ran, before the server asked: that round is
    // bound to the definition the person approved, so it is refused and no answer is handed on.
    const dir = tmpDir(t);
    const drift = path.join(dir, 'drift');
    const policy = writePolicy(dir, 'version: 1\ntools:\n  legacy_ask:\n    action: confirm\n');
    const s = startSluice(t, { policy, era: 'legacy', dir,
      fake: { FAKE_DRIFT_FILE: drift, FAKE_DRIFT_TOOL: 'legacy_ask', FAKE_EXTRA_TOOLS: '1' } });
    await s.request(modernRequest('l0', 'tools/list')); // sluice knows the tool
    const round = async (tag, args, drifts) => {
      const q = assertAsked(await s.request(toolCall(`${tag}1`, 'legacy_ask', { ...args, askAfterMs: 600 })));
      s.send(confirmRetry(`${tag}2`, 'legacy_ask', { ...args, askAfterMs: 600 }, q.state, ACCEPT));
      if (drifts) { // while the approved call runs upstream, before it asks
        fs.writeFileSync(drift, '');
        await s.request(modernRequest(`${tag}l`, 'tools/list'));
      }
      const r2 = await s.responseTo(`${tag}2`);
      assert.equal(r2.result && r2.result.resultType, 'input_required', r2.raw);
      const [key] = Object.keys(r2.result.inputRequests);
      return s.request(toolCall(`${tag}3`, 'legacy_ask', { ...args, askAfterMs: 600 }, { params: {
        inputResponses: { [key]: { action: 'accept', content: { answer: 'x' } } },
        requestState: r2.result.requestState } }));
    };
    const answers = () => s.upstreamMessages().filter((m) => m.method === undefined && 'result' in m);
    // control: the same rounds with no change complete
    const r0 = await round('a', { a: 1 }, false);
    assert.ok(r0.result && !r0.result.isError, r0.raw);
    assert.equal(answers().length, 1);
    assertRefusal(await round('b', { a: 2 }, true), /changed this tool's definition/);
    assert.equal(answers().length, 1, 'the answer went to the server of a call whose tool changed');
  });

  // After the accept the observe tool reads the target again before the call goes: the tool's
  // definition may change meanwhile. The gate checked it when the answer came; the call is
  // forwarded only if it is still the one the person was asked about, and refused when the
  // server no longer lists the tool at all (a restart): sluice cannot tell it is the same one.
  const MOVES = {
    changed: { file: 'drift', text: /changed this tool's definition/ },
    unknown: { file: 'drop', text: /does not list this tool now/ },
  };
  for (const [client, move] of [['modern', 'changed'], ['legacy', 'changed'], ['modern', 'unknown'], ['legacy', 'unknown']]) {
    test(`a definition that ${move === 'changed' ? 'changes' : 'goes away'} while the target is read again after the accept refuses the call (${client} client)`, async (t) => {
      const dir = tmpDir(t);
      const drift = path.join(dir, 'drift');
      const drop = path.join(dir, 'drop');
      const policy = writePolicy(dir, 'version: 1\ndefaults:\n  action: allow\ntools:\n  write_file:\n' +
        '    action: confirm\n    observe:\n      tool: read_file\n      args: { path: path }\n');
      const audit = path.join(dir, 'audit.jsonl');
      const s = startSluice(t, { policy, era: 'modern', dir, audit,
        fake: { FAKE_DRIFT_FILE: drift, FAKE_DROP_FILE: drop, FAKE_SLOW_MS: '600', FAKE_FILES: JSON.stringify({ '/a': 'old' }) } });
      const list = (id) => s.request(client === 'modern' ? modernRequest(id, 'tools/list') : legacyRequest(id, 'tools/list', {}));
      if (client === 'legacy') await legacyHandshake(s);
      await list('l0');
      const run = async (tag, drifts) => {
        const args = { path: '/a', content: tag };
        if (client === 'modern') {
          const q = assertAsked(await s.request(toolCall(`${tag}1`, 'write_file', args)));
          s.send(confirmRetry(`${tag}2`, 'write_file', args, q.state, ACCEPT));
        } else {
          s.send(legacyCall(`${tag}2`, 'write_file', args));
          s.send({ jsonrpc: '2.0', id: (await nextElicitation(s)).id, result: ACCEPT });
        }
        if (drifts) { // the read after the accept is out (600 ms)
          await new Promise((r) => setTimeout(r, 200));
          fs.writeFileSync(path.join(dir, MOVES[move].file), '');
          await list(`${tag}l`);
        }
        return s.responseTo(`${tag}2`);
      };
      const r0 = await run('a', false); // control: no change, the call runs
      assert.ok(r0.result && !r0.result.isError, r0.raw);
      assert.equal(s.upstreamCalls('write_file').length, 1);
      const r = await run('b', true);
      assert.ok(r.result && r.result.isError, r.raw);
      assert.match(r.result.content[0].text, MOVES[move].text, r.raw);
      assert.equal(s.upstreamCalls('write_file').length, 1, 'the approved call ran under a new definition');
      const { code } = await s.closeStdin(5000);
      assert.equal(code, 0, s.stderr);
      const rec = readJsonLines(audit).filter((l) => l.id === 'b2' && l.decision === 'refused');
      assert.ok(rec.some((l) => l.reason === `definition-${move}`), JSON.stringify(readJsonLines(audit)));
    });
  }

  test('pin --write pins the policy in place; sluice then serves the tools', async (t) => {
    const dir = tmpDir(t);
    const text = '# my policy\nversion: 1\ntools:\n  # the one writer\n  write_file:   # keep\n' +
      '    action: allow\n  echo: {action: allow}\n';
    const policy = writePolicy(dir, text);
    const r = runSluice(['pin', '--policy', policy, '--write', '--', ...FAKE('modern')], { timeout: 20000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /2 pins written, 2 new or changed/);
    // pins of an earlier sluice (fewer members hashed) fail closed: the output says so
    assert.match(r.stdout, /pin made by an earlier sluice .* no longer matches/s);
    const p = pins();
    assert.equal(fs.readFileSync(policy, 'utf8'),
      '# my policy\nversion: 1\ntools:\n  # the one writer\n  write_file:   # keep\n' +
      `    action: allow\n    pin: ${p.write_file}\n  echo: {action: allow, pin: ${p.echo}}\n`);
    const again = runSluice(['pin', '--policy', policy, '--write', '--', ...FAKE('modern')], { timeout: 20000 });
    assert.match(again.stdout, /all current; not rewritten/);
    const c = runSluice(['check', '--policy', policy, '--against', '--', ...FAKE('modern')], { timeout: 20000 });
    assert.equal(c.status, 0, c.stdout + c.stderr);
    const s = startSluice(t, { policy, era: 'modern', dir });
    const w = await s.request(toolCall('w', 'write_file', { path: '/a', content: 'x' }));
    assert.ok(w.result && !w.result.isError, w.raw);
    assert.equal(s.upstreamCalls('write_file').length, 1);
    // check --against a server whose write_file changed: a finding at the tool's name
    const drift = path.join(dir, 'drift');
    fs.writeFileSync(drift, '');
    const changed = FAKE('modern', [`FAKE_DRIFT_FILE=${drift}`]);
    const w1 = runSluice(['check', '--policy', policy, '--against', '--', ...changed], { timeout: 20000 });
    assert.equal(w1.status, 0, w1.stdout + w1.stderr);
    assert.match(w1.stdout, new RegExp(`${policy}:5:3: warning: server tool "write_file" does not match its pin`));
    const e1 = runSluice(['check', '--policy', policy, '--strict', '--against', '--', ...changed], { timeout: 20000 });
    assert.equal(e1.status, 1, e1.stdout + e1.stderr);
    assert.match(e1.stdout, /error: server tool "write_file" does not match its pin/);
  });

  test('init prints a policy check accepts, with no findings against the same server', (t) => {
    const dir = tmpDir(t);
    const r = runSluice(['init', '--', ...FAKE('modern', ['FAKE_EXTRA_TOOLS=1'])], { timeout: 20000 });
    assert.equal(r.status, 0, r.stderr);
    const policy = writePolicy(dir, r.stdout, 'init.yaml');
    assert.match(r.stdout, /^ {2}# Writes a file \(pretend\)\n {2}write_file:\n {4}action: confirm\n {4}pin: sha256:/m);
    const c = runSluice(['check', '--policy', policy, '--against', '--strict', '--',
      ...FAKE('modern', ['FAKE_EXTRA_TOOLS=1'])], { timeout: 20000 });
    assert.equal(c.status, 0, c.stdout + c.stderr);
    assert.match(c.stdout, /0 errors, 0 warnings/);
    // annotations decide the actions
    const a = runSluice(['init', '--', ...FAKE('legacy', ['FAKE_ANNOTATIONS=1'])], { timeout: 20000 });
    assert.match(a.stdout, / {2}echo:\n {4}action: allow {12}# annotated readOnlyHint: true\n/);
  });
});
