// http_large.test.mjs: request bodies that arrive in pieces after their head, and large ones.
// The HTTP front parses a head once and then waits for its body by length alone (http_conn.c):
// these tests check that the body that reaches the upstream is the one sent, whole, and that
// the next request on the connection is read from where the last one ended.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { policyPath, sleep, suiteOptions, toolCall } from './lib.mjs';
import { httpSync, mcpHeadersFor, rawConnect, rawRequest, rpc, startHttpSluice } from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

/** echo calls carrying marker that reached the upstream. */
function marked(s, marker) {
  return s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.marker === marker);
}

describe('HTTP: bodies in pieces, large bodies', suiteOptions(), () => {
  test('a body sent in three pieces after its head reaches the upstream whole; the next request follows', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const pad = 'p'.repeat(20000) + 'END';
    const msg = toolCall(1, 'echo', { marker: 'split', pad });
    const body = Buffer.from(JSON.stringify(msg));
    const c = await rawConnect(s.target, t);
    await c.write(rawRequest('POST', '/mcp', { ...mcpHeadersFor(msg), 'Content-Length': body.length }));
    const third = Math.floor(body.length / 3);
    for (const [from, to] of [[0, third], [third, 2 * third], [2 * third, body.length]]) {
      await sleep(60); // separate reads on sluice's side
      await c.write(body.subarray(from, to));
    }
    const r = await c.response();
    assert.equal(r.status, 200, r.head);
    // The same connection: a request sent whole right after, read from where the first ended.
    c.chunks = [];
    const next = toolCall(2, 'echo', { marker: 'after-split' });
    await c.write(rawRequest('POST', '/mcp', mcpHeadersFor(next), JSON.stringify(next)));
    const r2 = await c.response();
    assert.equal(r2.status, 200, r2.head);
    await httpSync(s);
    const got = marked(s, 'split');
    assert.equal(got.length, 1, 'the split request ran once');
    assert.equal(got[0].params.arguments.pad, pad, 'the upstream got the body as sent');
    assert.equal(marked(s, 'after-split').length, 1, 'the next request ran');
  });

  test('a 1 MiB argument reaches the upstream byte for byte', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--max-body', String(4 << 20)] });
    const pad = 'q'.repeat(1 << 20) + '\u00e9"\\end';
    const r = await rpc(s.target, toolCall(1, 'echo', { marker: 'large', pad }));
    assert.equal(r.status, 200, r.raw && r.raw.slice(0, 300));
    await httpSync(s);
    const got = marked(s, 'large');
    assert.equal(got.length, 1);
    assert.equal(got[0].params.arguments.pad, pad);
  });
});
