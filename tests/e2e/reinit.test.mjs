// reinit.test.mjs: a legacy stdio client that sends initialize again while work is in flight.
// The second initialize replaces the capabilities sluice keeps for the session (and the envelope
// made from them for a 2026-07-28 upstream); what is already in flight must not depend on the
// memory of the first.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FORM_CAPS, legacyCall, legacyHandshake, legacyRequest, legacySync, nextElicitation, policyPath,
  resultText, startSluice, suiteOptions,
} from './lib.mjs';

const GATE = policyPath('gate.yaml');

describe('a legacy client initializes again while a call is in flight', suiteOptions(), () => {
  test('an upstream round answered after a second initialize: the retry carries a whole envelope', async (t) => {
    const s = startSluice(t, { policy: GATE, era: 'modern' });
    // Large capabilities: the envelope made from them is a tree of its own, freed with them.
    const big = { ...FORM_CAPS, experimental: { pad: { text: 'x'.repeat(4000), list: Array.from({ length: 64 }, (_, i) => ({ i })) } } };
    await legacyHandshake(s, { capabilities: big });
    s.send(legacyCall('c1', 'ask', { topic: 'colour' }));
    const q = await nextElicitation(s);
    assert.match(String(q.id), /^sluice-u-\d+$/, q.raw);
    // initialize again, with other capabilities; then a call that builds the new envelope, so
    // the memory of the old one is reused.
    const r = await s.request(legacyRequest('init-2', 'initialize', {
      protocolVersion: '2025-11-25', capabilities: { elicitation: { form: {} }, roots: {} },
      clientInfo: { name: 'again', version: '1' } }));
    assert.ok(r.result, r.raw);
    for (let i = 0; i < 4; i++) await legacySync(s);
    s.send({ jsonrpc: '2.0', id: q.id, result: { action: 'accept', content: { answer: 'blue' } } });
    const fin = await s.responseTo('c1');
    assert.ok(fin.result && !fin.result.isError, fin.raw);
    assert.match(resultText(fin), /^answered: blue/, fin.raw);
    const calls = s.upstreamCalls('ask');
    assert.equal(calls.length, 2, JSON.stringify(calls.map((c) => c.raw)));
    // The retry is the first call again: the envelope it was sent with, whole.
    assert.deepEqual(calls[1].params._meta, calls[0].params._meta, `${calls[0].raw}\n${calls[1].raw}`);
  });
});
