// eras.test.mjs: every client era against every upstream era (issue 3). A modern client is
// asked with an MRTR round (PROTOCOL §2.8); a 2025 handshake client is asked with sluice's own
// elicitation/create while sluice holds the call (§4.2). Also: clients that cannot ask, the
// relay of progress, cancellation and an upstream's own requests, tools/list with hide_denied,
// annotations that must not relax the gate, and batches. Every refusal is checked against the fake
// upstream's log of what it received.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  LINE_DEADLINE_MS, MODERN, assertAsked, assertRefusal, confirmRetry, jcs, legacyCall,
  legacyHandshake, legacyRequest, legacySync, modernRequest, nextElicitation, policyPath,
  readJsonLines, resultText, scaled, sleep, startSluice, suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';

const GATE = policyPath('gate.yaml');
const TTL1 = policyPath('ttl1.yaml');
const HIDE = policyPath('hide_denied.yaml');
const UPSTREAMS = ['legacy', 'modern'];
const ACCEPT = { action: 'accept', content: { approve: true } };

function hasEnvelope(params) {
  const m = params && params._meta;
  return !!m && m['io.modelcontextprotocol/protocolVersion'] === MODERN
    && typeof m['io.modelcontextprotocol/clientCapabilities'] === 'object';
}

/** The two kinds of client, behind one interface. */
const CLIENTS = {
  modern: {
    async start(t, opts) {
      return startSluice(t, opts);
    },
    sync: (s) => s.sync(),
    list: (s, id) => s.request(modernRequest(id, 'tools/list')),
    call: (s, id, name, args, opts = {}) => s.request(toolCall(id, name, args, opts)),
    /** One full confirmation: the question, then the answer; returns the final response. */
    async confirm(s, id, name, args, answer) {
      const q = assertAsked(await s.request(toolCall(`${id}-q`, name, args)));
      const r = await s.request(confirmRetry(id, name, args, q.state, answer));
      return { r, state: q.state };
    },
    assertRefused(r, re) {
      return assertRefusal(r, re);
    },
    assertForwardedResult(r, text) {
      assert.ok(r.result, r.raw);
      assert.equal(r.result.resultType, 'complete', r.raw);
      assert.ok(!r.result.isError, r.raw);
      assert.equal(resultText(r), text, r.raw);
    },
  },
  handshake: {
    async start(t, opts, hs = {}) {
      const s = startSluice(t, opts);
      s.init = await legacyHandshake(s, hs);
      return s;
    },
    sync: (s) => legacySync(s),
    list: (s, id) => s.request(legacyRequest(id, 'tools/list', {})),
    call: (s, id, name, args) => s.request(legacyCall(id, name, args)),
    async confirm(s, id, name, args, answer) {
      s.send(legacyCall(id, name, args));
      const e = await nextElicitation(s);
      assert.match(String(e.id), /^sluice-e-\d+$/, `sluice's own question needs its own id space: ${e.raw}`);
      assert.match(e.params.message, new RegExp(name), e.raw);
      assert.equal(e.params.requestedSchema.properties.approve.type, 'boolean', e.raw);
      // Nothing runs while the person is being asked.
      await legacySync(s);
      assert.equal(s.upstreamCalls(name).length, 0, 'forwarded before the answer');
      s.send({ jsonrpc: '2.0', id: e.id, ...(answer.error ? { error: answer.error } : { result: answer }) });
      return { r: await s.responseTo(id), elicitation: e };
    },
    assertRefused(r, re) {
      assert.ok(r.result, `expected an isError result, got ${r.raw}`);
      assert.equal(r.result.isError, true, r.raw);
      const text = resultText(r);
      if (re) assert.match(text, re, r.raw);
      return text;
    },
    assertForwardedResult(r, text) {
      assert.ok(r.result, r.raw);
      assert.ok(!r.result.isError, r.raw);
      assert.ok(!('resultType' in r.result), `a 2025 client gets no resultType: ${r.raw}`);
      assert.equal(resultText(r), text, r.raw);
    },
  },
};

async function assertNotForwarded(s, client, name) {
  await CLIENTS[client].sync(s);
  const calls = s.upstreamCalls(name);
  assert.equal(calls.length, 0, `the upstream must not have received ${name}; got ${JSON.stringify(calls.map((c) => c.raw))}`);
}

/** Exactly one call of name, with exactly the approved arguments (canonical bytes), no sluice
 * fields, and the upstream era's own framing. */
async function assertForwardedOnce(s, client, upstream, name, args) {
  await CLIENTS[client].sync(s);
  const calls = s.upstreamCalls(name);
  assert.equal(calls.length, 1, `the upstream must have received ${name} exactly once; got ${JSON.stringify(calls.map((c) => c.raw))}`);
  const c = calls[0];
  assert.deepEqual(c.params.arguments, args, c.raw);
  assert.ok(c.raw.includes(`"arguments":${jcs(args)}`), `arguments not forwarded in canonical form: ${c.raw}`);
  for (const k of ['inputResponses', 'requestState']) assert.ok(!(k in c.params), `${k} leaked upstream: ${c.raw}`);
  for (const k of ['sluice.confirm', 'dev.sluice/', 'sluice-e-']) assert.ok(!c.raw.includes(k), `${k} leaked upstream: ${c.raw}`);
  if (upstream === 'modern') assert.ok(hasEnvelope(c.params), `a modern upstream needs the envelope: ${c.raw}`);
  else assert.ok(!c.raw.includes('io.modelcontextprotocol/'), `a 2025 upstream gets no envelope: ${c.raw}`);
  return c;
}

async function waitUpstream(s, pred, what, ms = LINE_DEADLINE_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const hit = s.upstreamMessages().find(pred);
    if (hit) return hit;
    if (Date.now() > end) throw new Error(`the upstream never received ${what}; log: ${JSON.stringify(s.upstreamMessages().map((m) => m.raw)).slice(0, 3000)}`);
    await sleep(20);
  }
}

describe('client era × upstream era: a gated call', suiteOptions(), () => {
  for (const client of Object.keys(CLIENTS)) {
    for (const upstream of UPSTREAMS) {
      const C = CLIENTS[client];
      const label = `${client} client, ${upstream} upstream`;

      test(`approved: forwarded exactly once with the approved arguments, answered under the call's id (${label})`, async (t) => {
        const s = await C.start(t, { policy: GATE, era: upstream });
        const args = { path: '/srv/x', content: 'hello', opts: { z: 1, a: [true, null] } };
        const { r } = await C.confirm(s, 'w1', 'write_file', args, ACCEPT);
        assert.equal(r.id, 'w1', r.raw);
        C.assertForwardedResult(r, 'wrote "/srv/x"');
        await assertForwardedOnce(s, client, upstream, 'write_file', args);
      });

      for (const [what, answer, re] of [
        ['declined', { action: 'decline' }, /declined/],
        ['cancelled', { action: 'cancel' }, /not run/],
        ['approve false', { action: 'accept', content: { approve: false } }, /not run/],
      ]) {
        test(`${what}: isError, nothing forwarded (${label})`, async (t) => {
          const s = await C.start(t, { policy: GATE, era: upstream });
          const { r } = await C.confirm(s, 'w1', 'write_file', { path: 'a', content: 'b' }, answer);
          C.assertRefused(r, re);
          await assertNotForwarded(s, client, 'write_file');
        });
      }
    }
  }
});

describe('legacy client: the held call ends without an approval', suiteOptions(), () => {
  for (const upstream of UPSTREAMS) {
    const C = CLIENTS.handshake;

    test(`timed out (confirm_ttl 1): isError after ~1 s, sluice cancels its question, nothing forwarded (${upstream} upstream)`, async (t) => {
      const s = await C.start(t, { policy: TTL1, era: upstream });
      const t0 = Date.now();
      s.send(legacyCall(9, 'write_file', { path: 'a', content: 'b' }));
      const e = await nextElicitation(s);
      const r = await s.responseTo(9, Math.max(4000, LINE_DEADLINE_MS));
      const elapsed = Date.now() - t0;
      assert.ok(elapsed >= 900, `refused after ${elapsed} ms; the person had confirm_ttl (1 s)`);
      C.assertRefused(r, /in time/);
      const c = await s.next((m) => m.method === 'notifications/cancelled', LINE_DEADLINE_MS, "sluice's notifications/cancelled for its question");
      assert.deepEqual(c.msg.params.requestId, e.id, c.raw);
      assert.ok(!('id' in c.msg), `a notification has no id: ${c.raw}`);
      // A late accept is ignored.
      s.send({ jsonrpc: '2.0', id: e.id, result: ACCEPT });
      await assertNotForwarded(s, 'handshake', 'write_file');
      await s.noResponseTo(9, 200);
    });

    test(`the client cancels the held call: no response, sluice cancels its question, a later accept is ignored (${upstream} upstream)`, async (t) => {
      const s = await C.start(t, { policy: GATE, era: upstream });
      s.send(legacyCall(7, 'write_file', { path: 'a', content: 'b' }));
      const e = await nextElicitation(s);
      s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user gave up' } });
      const c = await s.next((m) => m.method === 'notifications/cancelled', LINE_DEADLINE_MS, "sluice's notifications/cancelled for its question (PROTOCOL §7.5)");
      assert.deepEqual(c.msg.params.requestId, e.id, c.raw);
      s.send({ jsonrpc: '2.0', id: e.id, result: ACCEPT });
      await assertNotForwarded(s, 'handshake', 'write_file');
      await s.noResponseTo(7, 300);
    });

    test(`an error response to the question: isError, nothing forwarded (${upstream} upstream)`, async (t) => {
      const s = await C.start(t, { policy: GATE, era: upstream });
      const { r } = await C.confirm(s, 7, 'write_file', { path: 'a', content: 'b' }, { error: { code: -32603, message: 'the UI crashed' } });
      C.assertRefused(r, /not run/);
      await assertNotForwarded(s, 'handshake', 'write_file');
    });

    test(`the client disconnects while a call is held: nothing forwarded, exit 0, audit "cancelled"/"client-gone" (${upstream} upstream)`, async (t) => {
      const dir = tmpDir(t);
      const audit = path.join(dir, 'audit.jsonl');
      const s = await C.start(t, { policy: GATE, era: upstream, dir, audit });
      s.send(legacyCall('held', 'write_file', { path: '/gone', content: 'b' }));
      await nextElicitation(s);
      const { code, signal } = await s.closeStdin(8000);
      assert.equal(signal, null, s.stderr);
      assert.equal(code, 0, s.stderr);
      assert.equal(s.upstreamCalls('write_file').length, 0, 'a held call was forwarded after the client left');
      const lines = readJsonLines(audit).filter((l) => l.tool === 'write_file');
      const gone = lines.filter((l) => l.decision === 'cancelled' && l.reason === 'client-gone');
      assert.equal(gone.length, 1, `audit: ${JSON.stringify(lines)}`);
      assert.equal(gone[0].upstream, 'not-forwarded', JSON.stringify(gone[0]));
      assert.ok(!lines.some((l) => l.upstream !== 'not-forwarded'), `audit: ${JSON.stringify(lines)}`);
    });
  }
});

describe('clients that cannot ask: refused, nothing forwarded', suiteOptions(), () => {
  for (const upstream of UPSTREAMS) {
    test(`modern client with clientCapabilities {}: -32021 (${upstream} upstream)`, async (t) => {
      const s = startSluice(t, { policy: GATE, era: upstream });
      const r = await s.request(toolCall(1, 'write_file', { path: 'a', content: 'b' }, { caps: {} }));
      assert.ok(r.error, `expected -32021, got ${r.raw}`);
      assert.equal(r.error.code, -32021, r.raw);
      assert.ok(r.error.data && r.error.data.requiredCapabilities && r.error.data.requiredCapabilities.elicitation, r.raw);
      await assertNotForwarded(s, 'modern', 'write_file');
    });

    for (const [label, hs] of [
      ['no elicitation capability', { capabilities: {} }],
      ['sampling and roots but no elicitation', { capabilities: { sampling: {}, roots: { listChanged: true } } }],
      ['protocolVersion 2025-03-26 without elicitation', { version: '2025-03-26', capabilities: {} }],
    ]) {
      test(`handshake client, ${label}: isError, no question asked (${upstream} upstream)`, async (t) => {
        const s = await CLIENTS.handshake.start(t, { policy: GATE, era: upstream }, hs);
        if (hs.version === '2025-03-26') assert.equal(s.init.protocolVersion, '2025-11-25', `sluice answers 2025-03-26 with 2025-11-25: ${JSON.stringify(s.init)}`);
        const r = await s.request(legacyCall(7, 'write_file', { path: 'a', content: 'b' }));
        CLIENTS.handshake.assertRefused(r, /not run/);
        await assertNotForwarded(s, 'handshake', 'write_file');
        assert.ok(!s.lines.some((l) => l.msg.method === 'elicitation/create'), 'a client that cannot answer was asked');
      });
    }
  }
});

describe('the upstream is initialized with what the client can answer', suiteOptions(), () => {
  test('handshake client: only its elicitation, sampling and roots capabilities reach the 2025 upstream', async (t) => {
    const caps = {
      elicitation: { form: {}, url: {} },
      sampling: { context: {} },
      roots: { listChanged: true },
      experimental: { 'x.example/thing': {} },
      tasks: { list: {}, cancel: {}, requests: { elicitation: { create: {} } } },
    };
    const s = await CLIENTS.handshake.start(t, { policy: GATE, era: 'legacy' }, { capabilities: caps });
    await legacySync(s);
    const inits = s.upstreamMessages().filter((m) => m.method === 'initialize');
    assert.equal(inits.length, 1, JSON.stringify(inits.map((m) => m.raw)));
    assert.deepEqual(inits[0].params.capabilities, { elicitation: caps.elicitation, sampling: caps.sampling, roots: caps.roots }, inits[0].raw);
  });

  test('modern client: the 2025 upstream is initialized with the routable capabilities of its first request', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'legacy' });
    const caps = { elicitation: { form: {} }, sampling: {}, roots: {}, experimental: { 'x.example/thing': {} } };
    const r = await s.request(modernRequest(1, 'tools/list', {}, { caps }));
    assert.ok(r.result, r.raw);
    const inits = s.upstreamMessages().filter((m) => m.method === 'initialize');
    assert.equal(inits.length, 1, JSON.stringify(inits.map((m) => m.raw)));
    assert.deepEqual(inits[0].params.capabilities, { elicitation: caps.elicitation, sampling: {}, roots: {} }, inits[0].raw);
    assert.equal(inits[0].params.clientInfo.name, 'sluice-e2e', inits[0].raw);
  });
});

describe('relay for a legacy client', suiteOptions(), () => {
  for (const upstream of UPSTREAMS) {
    for (const token of ['tok-h', 7]) {
      test(`upstream progress reaches the client with its token ${JSON.stringify(token)} (${upstream} upstream)`, async (t) => {
        const s = await CLIENTS.handshake.start(t, { policy: GATE, era: upstream });
        s.send(legacyCall('p', 'progress', {}, { _meta: { progressToken: token } }));
        const n1 = await s.next((m) => m.method === 'notifications/progress', LINE_DEADLINE_MS, 'progress 1');
        const n2 = await s.next((m) => m.method === 'notifications/progress', LINE_DEADLINE_MS, 'progress 2');
        assert.deepEqual(n1.msg.params.progressToken, token, n1.raw);
        assert.deepEqual(n2.msg.params.progressToken, token, n2.raw);
        assert.deepEqual([n1.msg.params.progress, n2.msg.params.progress], [1, 2]);
        const r = await s.responseTo('p');
        // The upstream sees sluice's own token (its request id), never the client's: two
        // clients may choose the same token.
        const call = s.upstreamMessages().find((m) => m.method === 'tools/call' && m.params.name === 'progress');
        assert.deepEqual(call.params._meta.progressToken, call.id, call.raw);
        assert.equal(resultText(r), `progress sent for ${JSON.stringify(call.id)}`, r.raw);
      });
    }

    test(`notifications/cancelled for a forwarded slow call reaches the upstream under its own id; no response (${upstream} upstream)`, async (t) => {
      const s = await CLIENTS.handshake.start(t, { policy: GATE, era: upstream });
      s.send(legacyCall('c1', 'sleep', { ms: 800 }));
      const call = await waitUpstream(s, (m) => m.method === 'tools/call' && m.params.name === 'sleep', 'the sleep call');
      s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1', reason: 'user' } });
      const cancel = await waitUpstream(s, (m) => m.method === 'notifications/cancelled', 'the cancellation');
      assert.deepEqual(cancel.params.requestId, call.id, `requestId must be the upstream's id: ${cancel.raw} vs ${call.raw}`);
      await s.noResponseTo('c1', 1200);
      const r = await s.request(legacyCall('after', 'echo', { x: 1 }));
      assert.ok(r.result, r.raw);
    });
  }

  test('a held call with a progressToken gets notifications/progress from sluice every 10 s while it waits', { timeout: scaled(40000) }, async (t) => {
    const s = await CLIENTS.handshake.start(t, { policy: GATE, era: 'legacy' });
    const args = { path: '/slow', content: 'x' };
    s.send(legacyCall('held', 'write_file', args, { _meta: { progressToken: 'wait-tok' } }));
    const e = await nextElicitation(s);
    const t0 = Date.now();
    const p = await s.next((m) => m.method === 'notifications/progress', 10000 + Math.max(3000, LINE_DEADLINE_MS), 'a keep-alive progress notification');
    const after = Date.now() - t0;
    assert.ok(after >= 8000, `the first keep-alive came after ${after} ms; expected about 10 s`);
    assert.equal(p.msg.params.progressToken, 'wait-tok', p.raw);
    assert.equal(typeof p.msg.params.progress, 'number', p.raw);
    assert.ok(p.msg.params.progress > 0, p.raw);
    assert.equal(p.msg.params.message, 'waiting for a person to confirm', p.raw);
    await legacySync(s);
    assert.equal(s.upstreamCalls('write_file').length, 0, 'forwarded while waiting');
    s.send({ jsonrpc: '2.0', id: e.id, result: ACCEPT });
    const r = await s.responseTo('held');
    CLIENTS.handshake.assertForwardedResult(r, 'wrote "/slow"');
    await assertForwardedOnce(s, 'handshake', 'legacy', 'write_file', args);
  });
});

describe("a 2025 upstream's own elicitation/create during a tools/call", suiteOptions(), () => {
  const UP_ANSWER = { action: 'accept', content: { answer: 'blue' } };

  test('handshake client with elicitation: relayed as sluice-u-N, answered under the upstream id, result returned', async (t) => {
    const s = await CLIENTS.handshake.start(t, { policy: GATE, era: 'legacy' });
    s.send(legacyCall('la', 'legacy_ask', { topic: 'colour' }));
    const q = await nextElicitation(s);
    assert.match(String(q.id), /^sluice-u-\d+$/, `the upstream's request needs an id of sluice's: ${q.raw}`);
    assert.equal(q.params.message, 'The upstream itself asks (topic "colour")', q.raw);
    assert.deepEqual(q.params.requestedSchema.required, ['answer'], q.raw);
    s.send({ jsonrpc: '2.0', id: q.id, result: UP_ANSWER });
    const r = await s.responseTo('la');
    const got = JSON.parse(resultText(r));
    assert.equal(typeof got.requestId, 'number', r.raw);
    assert.ok(got.answer, `the upstream got no answer: ${r.raw}`);
    assert.equal(got.answer.id, got.requestId, `the answer must come back under the upstream's own id: ${r.raw}`);
    assert.deepEqual(got.answer.result, UP_ANSWER, r.raw);
    const back = s.upstreamMessages().find((m) => m.method === undefined && m.id === got.requestId);
    assert.ok(back, 'the response is in the upstream log');
    assert.match(back.raw, new RegExp(`"id":${got.requestId}[,}]`), `id type must be kept (integer): ${back.raw}`);
    assert.ok(!back.raw.includes('sluice-u-'), back.raw);
  });

  test('handshake client with elicitation answering with an error: the upstream gets that error under its id', async (t) => {
    const s = await CLIENTS.handshake.start(t, { policy: GATE, era: 'legacy' });
    s.send(legacyCall('la', 'legacy_ask', {}));
    const q = await nextElicitation(s);
    s.send({ jsonrpc: '2.0', id: q.id, error: { code: -32602, message: 'no thanks' } });
    const r = await s.responseTo('la');
    const got = JSON.parse(resultText(r));
    assert.equal(got.answer.id, got.requestId, r.raw);
    assert.equal(got.answer.error.code, -32602, r.raw);
  });

  for (const [label, start] of [
    ['modern client without elicitation', (t) => CLIENTS.modern.start(t, { policy: GATE, era: 'legacy' })],
    ['handshake client without elicitation', (t) => CLIENTS.handshake.start(t, { policy: GATE, era: 'legacy' }, { capabilities: { sampling: {} } })],
  ]) {
    test(`${label}: the upstream gets a JSON-RPC error for its request, the client sees no request, the call completes`, async (t) => {
      const s = await start(t);
      const modern = label.startsWith('modern');
      // (a modern client declaring elicitation gets the question as a round: modern_relay.test.mjs)
      const r = modern ? await s.request(toolCall('la', 'legacy_ask', {}, { caps: {} })) : await s.request(legacyCall('la', 'legacy_ask', {}));
      assert.ok(r.result, r.raw);
      if (modern) assert.equal(r.result.resultType, 'complete', r.raw);
      const got = JSON.parse(resultText(r));
      assert.ok(got.answer && got.answer.error, `the upstream must get an error, not silence: ${r.raw}`);
      assert.equal(got.answer.id, got.requestId, r.raw);
      assert.equal(typeof got.answer.error.code, 'number', r.raw);
      assert.ok(!s.lines.some((l) => typeof l.msg.method === 'string' && 'id' in l.msg), `a request reached the client: ${JSON.stringify(s.lines.map((l) => l.raw))}`);
    });
  }

  test('a gated legacy_ask: sluice asks first (sluice-e-N), then the upstream asks (sluice-u-N), then the result', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  echo:\n    action: allow\n  legacy_ask:\n    action: confirm\n');
    const s = await CLIENTS.handshake.start(t, { policy, era: 'legacy', dir });
    s.send(legacyCall('g', 'legacy_ask', { topic: 't' }));
    const mine = await nextElicitation(s);
    assert.match(String(mine.id), /^sluice-e-\d+$/, mine.raw);
    await legacySync(s);
    assert.equal(s.upstreamCalls('legacy_ask').length, 0);
    s.send({ jsonrpc: '2.0', id: mine.id, result: ACCEPT });
    const theirs = await nextElicitation(s);
    assert.match(String(theirs.id), /^sluice-u-\d+$/, theirs.raw);
    s.send({ jsonrpc: '2.0', id: theirs.id, result: UP_ANSWER });
    const r = await s.responseTo('g');
    const got = JSON.parse(resultText(r));
    assert.deepEqual(got.answer.result, UP_ANSWER, r.raw);
    assert.equal(s.upstreamCalls('legacy_ask').length, 1);
  });
});

describe('tools/list with hide_denied, and annotations', suiteOptions(), () => {
  for (const upstream of UPSTREAMS) {
    test(`hide_denied: the denied tools are absent, the same for a modern and a handshake client (${upstream} upstream)`, async (t) => {
      const a = await CLIENTS.modern.start(t, { policy: HIDE, era: upstream });
      const b = await CLIENTS.handshake.start(t, { policy: HIDE, era: upstream });
      const ra = await CLIENTS.modern.list(a, 1);
      const rb = await CLIENTS.handshake.list(b, 1);
      const names = ra.result.tools.map((x) => x.name);
      assert.ok(!names.includes('drop_table') && !names.includes('delete_file'), `denied tools listed: ${names}`);
      for (const n of ['echo', 'write_file', 'sleep']) assert.ok(names.includes(n), `${n} missing: ${names}`);
      assert.deepEqual(rb.result.tools, ra.result.tools, 'both eras must see the same tools');
    });

    test(`without hide_denied the denied tool is listed for both clients (${upstream} upstream)`, async (t) => {
      const a = await CLIENTS.modern.start(t, { policy: GATE, era: upstream });
      const b = await CLIENTS.handshake.start(t, { policy: GATE, era: upstream });
      const ra = await CLIENTS.modern.list(a, 1);
      const rb = await CLIENTS.handshake.list(b, 1);
      assert.ok(ra.result.tools.some((x) => x.name === 'drop_table'), ra.raw);
      assert.deepEqual(rb.result.tools, ra.result.tools);
    });

    for (const client of Object.keys(CLIENTS)) {
      test(`a hidden denied tool called anyway is still denied (${client} client, ${upstream} upstream)`, async (t) => {
        const C = CLIENTS[client];
        const s = await C.start(t, { policy: HIDE, era: upstream });
        const r = await C.call(s, 1, 'drop_table', { table: 'users' });
        C.assertRefused(r, /tools\.drop_table/);
        await assertNotForwarded(s, client, 'drop_table');
      });

      test(`readOnlyHint on a confirm tool does not relax the gate (${client} client, ${upstream} upstream)`, async (t) => {
        const C = CLIENTS[client];
        const s = await C.start(t, { policy: GATE, era: upstream, fake: { FAKE_ANNOTATIONS: '1' } });
        const list = await C.list(s, 'l');
        const wf = list.result.tools.find((x) => x.name === 'write_file');
        assert.equal(wf.annotations && wf.annotations.readOnlyHint, true, `annotations pass through: ${list.raw}`);
        if (client === 'modern') {
          assertAsked(await s.request(toolCall(1, 'write_file', { path: 'a', content: 'b' })));
          const r = await s.request(toolCall(2, 'write_file', { path: 'a', content: 'b' }, { caps: {} }));
          assert.equal(r.error && r.error.code, -32021, r.raw);
        } else {
          s.send(legacyCall(1, 'write_file', { path: 'a', content: 'b' }));
          const e = await nextElicitation(s);
          s.send({ jsonrpc: '2.0', id: e.id, result: { action: 'decline' } });
          C.assertRefused(await s.responseTo(1));
        }
        C.assertRefused(await C.call(s, 3, 'drop_table', { table: 't' }), /tools\.drop_table/);
        await assertNotForwarded(s, client, 'write_file');
        await assertNotForwarded(s, client, 'drop_table');
      });
    }
  }
});

describe('batches from a legacy client', suiteOptions(), () => {
  for (const version of ['2025-11-25', '2025-03-26']) {
    test(`a JSON array is -32600 and nothing in it runs; the next line is served (negotiated from ${version})`, async (t) => {
      const s = await CLIENTS.handshake.start(t, { policy: GATE, era: 'legacy' }, { version });
      assert.notEqual(s.init.protocolVersion, '2025-03-26', 'sluice never negotiates the revision that has batches');
      s.sendRaw(`${JSON.stringify([legacyCall('b1', 'echo', { batched: 1 }), legacyCall('b2', 'write_file', { path: 'a', content: 'b' })])}\n`);
      const l = await s.next((m) => m && !Array.isArray(m) && 'error' in m, LINE_DEADLINE_MS, 'the batch error');
      assert.equal(l.msg.error.code, -32600, l.raw);
      assert.equal(l.msg.id, null, l.raw);
      s.sendRaw('[]\n');
      const l2 = await s.next((m) => m && 'error' in m, LINE_DEADLINE_MS, 'the empty batch error');
      assert.equal(l2.msg.error.code, -32600, l2.raw);
      const r = await s.request(legacyCall('next', 'echo', { after: 1 }));
      assert.deepEqual(r.result.structuredContent, { echoed: { after: 1 } }, r.raw);
      assert.ok(!s.upstreamCalls('echo').some((c) => c.params.arguments.batched), 'a batched call ran');
      assert.equal(s.upstreamCalls('write_file').length, 0);
      assert.ok(!s.lines.some((l3) => l3.msg.method === 'elicitation/create'), 'a batched gated call was asked about');
    });
  }
});
