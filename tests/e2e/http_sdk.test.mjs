// http_sdk.test.mjs: the official SDK clients through sluice's HTTP front, over their Streamable
// HTTP client transports:
//   @modelcontextprotocol/client 2.4.0 (SDK2), pinned to 2026-07-28, with an elicitation handler:
//     the confirmation round (input_required, the handler, the retry) runs inside the SDK;
//   @modelcontextprotocol/sdk 1.32.2 (SDK1), the 2025-11-25 handshake: sluice's elicitation/create
//     arrives on the call's event stream and the SDK POSTs the answer.
// The packages are the ones tests/interop installs (tests/interop/node_modules); without them the
// tests are skipped, except under CI=true, where they fail.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { HERE, policyPath, suiteOptions } from './lib.mjs';
import { httpSync, startHttpSluice } from './http_lib.mjs';

const MODULES = path.join(HERE, '..', 'interop', 'node_modules');
const CLIENT_DIR = path.join(MODULES, '@modelcontextprotocol', 'client');
const SDK1_DIR = path.join(MODULES, '@modelcontextprotocol', 'sdk');
const GATE = policyPath('gate.yaml');
const MODERN = '2026-07-28';

function skipReason() {
  if (fs.existsSync(path.join(CLIENT_DIR, 'package.json')) && fs.existsSync(path.join(SDK1_DIR, 'package.json'))) return null;
  if (process.env.CI === 'true') return null; // fail in loadSdk2/loadSdk1
  return `SDK packages missing under ${MODULES}: run (cd tests/interop && npm install --no-package-lock)`;
}

async function loadSdk2() {
  const pkg = JSON.parse(fs.readFileSync(path.join(CLIENT_DIR, 'package.json'), 'utf8'));
  assert.equal(pkg.version, '2.4.0', 'the pinned @modelcontextprotocol/client version');
  return import(pathToFileURL(path.join(CLIENT_DIR, 'dist', 'index.mjs')).href);
}

async function loadSdk1() {
  const pkg = JSON.parse(fs.readFileSync(path.join(SDK1_DIR, 'package.json'), 'utf8'));
  assert.equal(pkg.version, '1.32.2', 'the pinned @modelcontextprotocol/sdk version');
  const base = path.join(SDK1_DIR, 'dist', 'esm');
  const { Client } = await import(pathToFileURL(path.join(base, 'client', 'index.js')).href);
  const { StreamableHTTPClientTransport } = await import(pathToFileURL(path.join(base, 'client', 'streamableHttp.js')).href);
  const { ElicitRequestSchema } = await import(pathToFileURL(path.join(base, 'types.js')).href);
  return { Client, StreamableHTTPClientTransport, ElicitRequestSchema };
}

const reason = skipReason();
const opts = suiteOptions(reason ? { skip: reason } : {});

describe('SDK2 (@modelcontextprotocol/client 2.4.0) over Streamable HTTP', opts, () => {
  for (const [label, mode, version] of [
    ['pinned to 2026-07-28', { pin: MODERN }, MODERN],
    ['version negotiation auto (probes the era)', 'auto', MODERN],
    ['legacy mode (the 2025-11-25 handshake)', 'legacy', '2025-11-25'],
  ]) {
    test(`${label}: a confirmed call runs once; a declined one does not; an allowed one passes`, async (t) => {
      const sdk = await loadSdk2();
      assert.equal(typeof sdk.StreamableHTTPClientTransport, 'function', 'the package exports StreamableHTTPClientTransport');
      const s = await startHttpSluice(t, { policy: GATE });
      const asked = [];
      let next = 'accept';
      const client = new sdk.Client({ name: 'sluice-e2e-sdk2-http', version: '1.0.0' }, {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode },
      });
      client.setRequestHandler('elicitation/create', async (request) => {
        asked.push(request.params);
        return next === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
      });
      const transport = new sdk.StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${s.port}/mcp`));
      t.after(() => client.close().catch(() => {}));
      await client.connect(transport, { timeout: 15000 });
      assert.equal(client.getNegotiatedProtocolVersion(), version);

      const { tools } = await client.listTools();
      assert.ok(tools.some((x) => x.name === 'write_file'), `tools: ${tools.map((x) => x.name)}`);

      const args = { path: '/sdk2/http.txt', content: 'written by SDK2 over HTTP' };
      const r1 = await client.callTool({ name: 'write_file', arguments: args });
      assert.notEqual(r1.isError, true, JSON.stringify(r1));
      assert.equal(r1.content[0].text, 'wrote "/sdk2/http.txt"');
      assert.equal(asked.length, 1, 'the elicitation handler was asked once');
      assert.match(asked[0].message, /write_file/);
      assert.equal(asked[0].requestedSchema.properties.approve.type, 'boolean');
      let calls = s.upstreamCalls('write_file');
      assert.equal(calls.length, 1, 'the accepted call ran once');
      assert.deepEqual(calls[0].params.arguments, args);
      assert.ok(!calls[0].raw.includes('sluice.confirm') && !('requestState' in calls[0].params), calls[0].raw);

      next = 'decline';
      const r2 = await client.callTool({ name: 'write_file', arguments: { path: '/sdk2/no.txt', content: 'no' } });
      assert.equal(r2.isError, true, JSON.stringify(r2));
      assert.equal(asked.length, 2);
      await httpSync(s);
      calls = s.upstreamCalls('write_file');
      assert.equal(calls.length, 1, 'the declined call did not run');

      const r3 = await client.callTool({ name: 'echo', arguments: { hello: 'sdk' } });
      assert.notEqual(r3.isError, true, JSON.stringify(r3));
      assert.equal(asked.length, 2, 'no question for an allowed tool');
    });
  }
});

describe('SDK1 (@modelcontextprotocol/sdk 1.32.2) over Streamable HTTP, 2025-11-25 handshake', opts, () => {
  test('sluice asks on the call\'s stream; accept runs the call once, decline does not', async (t) => {
    const sdk = await loadSdk1();
    const s = await startHttpSluice(t, { policy: GATE });
    const asked = [];
    let next = 'accept';
    const client = new sdk.Client({ name: 'sluice-e2e-sdk1-http', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(sdk.ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return next === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
    });
    const transport = new sdk.StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${s.port}/mcp`));
    t.after(() => client.close().catch(() => {}));
    await client.connect(transport, { timeout: 15000 });
    assert.ok(transport.sessionId, 'sluice minted a session id');

    const args = { path: '/sdk1/http.txt', content: 'written by SDK1 over HTTP' };
    const r1 = await client.callTool({ name: 'write_file', arguments: args }, undefined, { timeout: 15000 });
    assert.notEqual(r1.isError, true, JSON.stringify(r1));
    assert.equal(asked.length, 1);
    assert.match(asked[0].message, /write_file/);
    assert.equal(s.upstreamCalls('write_file').length, 1);

    next = 'decline';
    const r2 = await client.callTool({ name: 'write_file', arguments: { path: '/sdk1/no.txt', content: 'no' } }, undefined, { timeout: 15000 });
    assert.equal(r2.isError, true, JSON.stringify(r2));
    assert.equal(asked.length, 2);
    await httpSync(s);
    assert.equal(s.upstreamCalls('write_file').length, 1, 'the declined call did not run');
    await transport.terminateSession();
  });
});
