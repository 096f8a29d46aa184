// http_fairness.test.mjs: one HTTP client must not deny service to others, and the HTTP front
// reads request heads the way a proxy in front of it does.
//   - a flood of principals asking questions does not push out another principal's pending
//     question, nor stop that principal from asking (asks.c);
//   - one principal flooding `initialize` is stopped at its own cap (--max-sessions-per-principal)
//     and, when the table is full, idle sessions are evicted before a new client is refused;
//   - a request head with a line ended by a bare LF gets 400 and nothing runs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACCEPT, assertAsked, confirmRetry, policyPath, suiteOptions, toolCall } from './lib.mjs';
import {
  assertForwardedOnceHttp, assertNotForwardedHttp, httpSync, mcpHeadersFor, modernCall, rawConnect,
  rawRequest, rpc, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

/** echo calls carrying marker that reached the upstream. */
function marked(s, marker) {
  return s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.marker === marker);
}

describe('HTTP: a bare LF in a request head', suiteOptions(), () => {
  // Each variant is an allowed echo call whose head ends one line with a bare LF.
  const VARIANTS = [
    ['the request line', (h) => h.replace('HTTP/1.1\r\n', 'HTTP/1.1\n')],
    ['a header line', (h) => h.replace(/\r\nContent-Type:/i, '\nContent-Type:')],
    ['the final empty line', (h) => h.replace(/\r\n\r\n$/, '\r\n\n')],
  ];
  for (const [where, bend] of VARIANTS) {
    test(`in ${where}: 400, the connection closes, the upstream runs nothing`, async (t) => {
      const s = await startHttpSluice(t, { policy: GATE });
      const marker = `bare-lf ${where}`;
      const msg = toolCall(1, 'echo', { marker });
      const body = JSON.stringify(msg);
      const raw = rawRequest('POST', '/mcp', { ...mcpHeadersFor(msg), 'Content-Length': Buffer.byteLength(body) }).toString('latin1');
      const head = bend(raw);
      assert.notEqual(head, raw, 'the variant changed the head');
      const c = await rawConnect(s.target, t);
      await c.write(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]));
      const r = await c.response();
      assert.equal(r.status, 400, r.head);
      assert.ok(await c.waitClosed(3000), 'the connection closes after a 400');
      await httpSync(s);
      assert.equal(marked(s, marker).length, 0, 'the upstream ran the call');
    });
  }

  test('the same request with CRLF everywhere is served', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    const msg = toolCall(1, 'echo', { marker: 'crlf' });
    const body = JSON.stringify(msg);
    const c = await rawConnect(s.target, t);
    await c.write(rawRequest('POST', '/mcp', { ...mcpHeadersFor(msg), 'Content-Length': Buffer.byteLength(body) }, body));
    const r = await c.response();
    assert.equal(r.status, 200, r.head);
    await httpSync(s);
    assert.equal(marked(s, 'crlf').length, 1);
  });
});
