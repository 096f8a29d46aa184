// http_origin.test.mjs: DNS-rebinding protection that lets a local page in. On a loopback
// listener an Origin whose host is localhost, 127.0.0.1 or [::1] (any port, http or https) is
// served, as the MCP conformance scenario dns-rebinding-protection expects; near misses and
// foreign hosts get 403. On a listener that is not loopback (0.0.0.0), a local-looking Origin
// proves nothing (a rebinding page can come from anywhere the address reaches) and only
// --allow-origin lets an Origin in.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { policyPath, suiteOptions, toolCall } from './lib.mjs';
import { httpSync, rpc, startHttpSluice } from './http_lib.mjs';

const GATE = policyPath('gate.yaml');

const LOCAL = ['http://localhost:1234', 'http://localhost', 'https://localhost:8443', 'http://127.0.0.1:5173', 'http://[::1]:3000', 'https://[::1]'];
const FOREIGN = [
  'http://evil.example', 'http://localhost.evil.example', 'http://127.0.0.1.evil.example:80', 'http://localhost:12ab',
  'http://localhost:1234/path', 'ftp://localhost', 'http://[::1]x', 'null', 'http://127.0.0.2:80', 'http://localhos',
];

/** Sends an echo call marked with the Origin; returns the HTTP status. */
async function tryOrigin(s, origin, id) {
  const r = await rpc(s.target, toolCall(id, 'echo', { marker: `origin:${origin}` }), { headers: { Origin: origin } });
  if (r.status !== 200) assert.ok(r.msg && r.msg.error, `a JSON-RPC error body: ${r.raw}`);
  return r.status;
}

function forwarded(s, origin) {
  return s.upstreamCalls('echo').filter((c) => c.params.arguments && c.params.arguments.marker === `origin:${origin}`).length;
}

describe('HTTP: Origin on a loopback listener and elsewhere', suiteOptions(), () => {
  test('loopback listener: localhost, 127.0.0.1 and [::1] Origins (any port) are served; foreign ones get 403', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    let id = 1;
    for (const origin of LOCAL) assert.equal(await tryOrigin(s, origin, id++), 200, `Origin ${origin}`);
    for (const origin of FOREIGN) assert.equal(await tryOrigin(s, origin, id++), 403, `Origin ${origin}`);
    await httpSync(s);
    for (const origin of LOCAL) assert.equal(forwarded(s, origin), 1, `Origin ${origin} reached the upstream once`);
    for (const origin of FOREIGN) assert.equal(forwarded(s, origin), 0, `Origin ${origin} was forwarded`);
  });

  test('0.0.0.0 listener: localhost Origins get 403 unless --allow-origin lists them', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, listen: '0.0.0.0:0', args: ['--allow-origin', 'http://localhost:1234'] });
    let id = 1;
    assert.equal(await tryOrigin(s, 'http://localhost:1234', id++), 200, 'listed');
    for (const origin of ['http://localhost:9999', 'http://127.0.0.1:5173', 'http://[::1]:3000', 'http://evil.example']) {
      assert.equal(await tryOrigin(s, origin, id++), 403, `Origin ${origin}`);
    }
    const none = await rpc(s.target, toolCall(id++, 'echo', { marker: 'no-origin' }));
    assert.equal(none.status, 200, none.raw);
    await httpSync(s);
    assert.equal(forwarded(s, 'http://localhost:1234'), 1);
    assert.equal(forwarded(s, 'http://localhost:9999'), 0);
    assert.equal(forwarded(s, 'http://127.0.0.1:5173'), 0);
  });
});
