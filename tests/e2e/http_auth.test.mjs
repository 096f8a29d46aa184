// http_auth.test.mjs: TLS and mutual TLS on the HTTP front (certificates made by openssl in the
// test), and the principal a confirmation is bound to: the client certificate's subject, a bearer
// token's digest, or a header set by a trusted proxy. A state minted for one principal must not
// run for another.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ACCEPT, assertAsked, assertInvalidState, confirmRetry, policyPath, suiteOptions, toolCall,
} from './lib.mjs';
import {
  LegacyHttpSession, assertForwardedOnceHttp, assertNotForwardedHttp, get, legacyToolCall, makePki,
  modernCall, rawConnect, rawRequest, rpc, startHttpSluice,
} from './http_lib.mjs';

const GATE = policyPath('gate.yaml');
let pki;
let pkiDir;

function opensslAvailable() {
  try {
    fs.accessSync('/usr/bin/openssl', fs.constants.X_OK);
    return true;
  } catch {
    return process.env.PATH.split(':').some((d) => fs.existsSync(path.join(d, 'openssl')));
  }
}

// Without the openssl command the TLS tests are skipped, except under CI=true, where they fail.
const tlsOpts = suiteOptions(opensslAvailable() || process.env.CI === 'true' ? {} : { skip: 'openssl not found' });

function tlsArgs(clientCa) {
  const a = ['--tls-cert', pki.files.serverCert, '--tls-key', pki.files.serverKey];
  if (clientCa) a.push('--tls-client-ca', pki.files.ca);
  return a;
}

/** A client TLS identity for target. */
function as(who) {
  return { ca: pki.ca, ...(who ? pki[who] : {}) };
}

describe('HTTP over TLS', tlsOpts, () => {
  before(() => {
    pkiDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-e2e-pki-'));
    pki = makePki(pkiDir);
  });
  after(() => {
    if (pkiDir && !process.env.E2E_KEEP_TMP) fs.rmSync(pkiDir, { recursive: true, force: true });
  });

  test('https with --tls-cert/--tls-key: the gate round works; plain HTTP to the TLS port gets nothing useful', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: tlsArgs(false), clientTls: as(null) });
    assert.match(s.stderr, /listening on https:\/\//);
    const args = { path: '/tls', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(1, 'write_file', args), { status: 200 }));
    await assertNotForwardedHttp(s, 'write_file');
    const r = await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
    // A client that speaks plain HTTP to the TLS port is not served.
    const plain = await rawConnect({ port: s.port }, t);
    await plain.write(rawRequest('GET', '/healthz'));
    await plain.waitClosed(3000);
    assert.doesNotMatch(plain.text, /^HTTP\/1\.1 200/, 'no plaintext answer on the TLS port');
    // A client that does not trust the CA refuses the server.
    await assert.rejects(get({ port: s.port, tls: {} }, '/healthz'), /self.signed|unable to verify|certificate/i);
  });

  test('mutual TLS: no client certificate is refused; a certificate from another CA is refused; alice is served', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: tlsArgs(true), clientTls: as('alice') });
    assert.match(s.stderr, /principal from cert/);
    // Without a certificate: the handshake fails, or the request gets 401. Never a 200.
    let noCert;
    try {
      noCert = await rpc({ port: s.port, tls: as(null) }, toolCall(1, 'echo', { marker: 'nocert' }));
    } catch (e) {
      noCert = { error: e };
    }
    assert.ok(noCert.error || noCert.status === 401, `no client certificate: ${noCert.error ? noCert.error.message : noCert.status}`);
    let foreign;
    try {
      foreign = await rpc({ port: s.port, tls: as('mallory') }, toolCall(2, 'echo', { marker: 'mallory' }));
    } catch (e) {
      foreign = { error: e };
    }
    assert.ok(foreign.error || foreign.status === 401, `a certificate from another CA: ${foreign.error ? foreign.error.message : foreign.status}`);
    const ok = await rpc(s.target, toolCall(3, 'echo', { marker: 'alice' }));
    assert.equal(ok.status, 200, ok.raw);
    const calls = s.upstreamCalls('echo').map((c) => c.params.arguments.marker);
    assert.ok(!calls.includes('nocert') && !calls.includes('mallory'), `refused clients must not reach the upstream: ${calls}`);
    assert.ok(calls.includes('alice'));
  });

  test('mutual TLS: a state minted for alice is refused when round two comes with bob\'s certificate; alice\'s own round two runs', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: tlsArgs(true), clientTls: as('alice') });
    const alice = { port: s.port, tls: as('alice') };
    const bob = { port: s.port, tls: as('bob') };
    const args = { path: '/mtls', content: 'bound to alice' };
    const q = assertAsked(await modernCall(alice, toolCall(1, 'write_file', args), { status: 200 }));
    assertInvalidState(await modernCall(bob, confirmRetry(2, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwardedHttp(s, 'write_file');
    // mallory's certificate carries alice's subject but another CA: the handshake refuses it.
    await assert.rejects(rpc({ port: s.port, tls: as('mallory') }, confirmRetry(3, 'write_file', args, q.state, ACCEPT)));
    await assertNotForwardedHttp(s, 'write_file');
    const r = await modernCall(alice, confirmRetry(4, 'write_file', args, q.state, ACCEPT), { status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('mutual TLS: a legacy session belongs to its certificate (another certificate gets 404)', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: tlsArgs(true), clientTls: as('alice') });
    const a = new LegacyHttpSession({ port: s.port, tls: as('alice') });
    await a.initialize();
    const b = new LegacyHttpSession({ port: s.port, tls: as('bob') });
    b.sessionId = a.sessionId;
    const r = await b.rpc(legacyToolCall(1, 'echo', { marker: 'bob-in-alice' }));
    assert.equal(r.status, 404, r.raw);
    const ok = await a.rpc(legacyToolCall(2, 'echo', { marker: 'alice' }));
    assert.equal(ok.status, 200, ok.raw);
  });
});

describe('HTTP principal: bearer', suiteOptions(), () => {
  const bearer = (tok) => ({ Authorization: `Bearer ${tok}` });

  test('no Authorization (or not a bearer): 401, nothing forwarded', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer'] });
    s.syncHeaders = bearer('sync');
    for (const headers of [{}, { Authorization: 'Basic dXNlcjpwdw==' }, { Authorization: 'Bearer' }]) {
      const r = await rpc(s.target, toolCall(1, 'echo', { marker: 'unauth' }), { headers });
      assert.equal(r.status, 401, `${JSON.stringify(headers)}: ${r.raw}`);
    }
    await assertNotForwardedHttp(s, 'write_file');
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments.marker === 'unauth').length, 0);
    // The operational endpoints need no credentials.
    assert.equal((await get(s.target, '/healthz')).status, 200);
  });

  test('round one with token X, round two with token Y: refused; round two with X: forwarded once', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer'] });
    s.syncHeaders = bearer('sync');
    const args = { path: '/bearer', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(1, 'write_file', args), { headers: bearer('token-X'), status: 200 }));
    assertInvalidState(await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { headers: bearer('token-Y') }));
    assertInvalidState(await modernCall(s.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { headers: bearer('token-x') }));
    await assertNotForwardedHttp(s, 'write_file');
    const r = await modernCall(s.target, confirmRetry(4, 'write_file', args, q.state, ACCEPT), { headers: bearer('token-X'), status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });

  test('the token itself never appears in the log or the upstream\'s traffic', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer', '--log-level', 'debug'] });
    s.syncHeaders = bearer('sync');
    const secret = 'sk-live-SECRET-0123456789abcdef';
    const args = { path: '/secret', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(1, 'write_file', args), { headers: bearer(secret), status: 200 }));
    await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { headers: bearer(secret), status: 200 });
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
    assert.ok(!s.stderr.includes(secret), 'the bearer token is logged');
    assert.ok(!s.upstreamMessages().some((m) => m.raw.includes(secret)), 'the bearer token reached the upstream');
    assert.ok(!q.state.includes(secret) && !Buffer.from(q.state.split('.').pop(), 'base64url').toString('latin1').includes(secret));
  });

  test('a legacy session belongs to its token: another token gets 404 for it', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'bearer'] });
    const a = new LegacyHttpSession(s.target, { headers: bearer('token-A') });
    await a.initialize();
    const b = new LegacyHttpSession(s.target, { headers: bearer('token-B') });
    b.sessionId = a.sessionId;
    const r = await b.rpc(legacyToolCall(1, 'echo', {}));
    assert.equal(r.status, 404, r.raw);
    // And the held call's answer from another token does not release it.
    const reply = await a.post(legacyToolCall(2, 'write_file', { path: '/s', content: 'x' }));
    const ask = await reply.nextEvent((m) => m && m.method === 'elicitation/create');
    const forged = await b.answer(ask.id, { action: 'accept', content: { approve: true } });
    assert.equal(forged.status, 404, forged.text);
    await a.answer(ask.id, { action: 'decline' });
    const fin = await reply.nextEvent((m) => m && m.id === 2);
    assert.equal(fin.result.isError, true);
    s.syncHeaders = bearer('sync');
    await assertNotForwardedHttp(s, 'write_file');
  });
});

describe('HTTP principal: header:X-User (a trusted proxy in front)', suiteOptions(), () => {
  const user = (u) => ({ 'X-User': u });

  test('without the header: 401; alice\'s state is refused for bob; alice\'s round two runs once', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'header:X-User'] });
    assert.match(s.stderr, /principal from header X-User/);
    s.syncHeaders = user('sync');
    const none = await rpc(s.target, toolCall(1, 'echo', { marker: 'nouser' }));
    assert.equal(none.status, 401, none.raw);
    const empty = await rpc(s.target, toolCall(1, 'echo', { marker: 'nouser' }), { headers: user('') });
    assert.equal(empty.status, 401, empty.raw);
    const args = { path: '/hdr', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(2, 'write_file', args), { headers: user('alice'), status: 200 }));
    assertInvalidState(await modernCall(s.target, confirmRetry(3, 'write_file', args, q.state, ACCEPT), { headers: user('bob') }));
    assertInvalidState(await modernCall(s.target, confirmRetry(4, 'write_file', args, q.state, ACCEPT), { headers: user('Alice') }));
    await assertNotForwardedHttp(s, 'write_file');
    // Two X-User headers are ambiguous: refused.
    const two = await rpc(s.target, confirmRetry(5, 'write_file', args, q.state, ACCEPT), { headers: { 'X-User': ['alice', 'bob'] } });
    assert.equal(two.status, 401, two.raw);
    await assertNotForwardedHttp(s, 'write_file');
    const r = await modernCall(s.target, confirmRetry(6, 'write_file', args, q.state, ACCEPT), { headers: user('alice'), status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
    assert.equal(s.upstreamCalls('echo').filter((c) => c.params.arguments.marker === 'nouser').length, 0);
  });

  test('long principals (in and past the inline buffers) that differ only in their last byte are two; over 256 bytes is refused', async (t) => {
    let id = 10;
    for (const n of [80, 250]) { // "header:" and n + 1 bytes: inside the session's 96, then past all
      const s = await startHttpSluice(t, { policy: GATE, args: ['--principal', 'header:X-User'] });
      s.syncHeaders = user('sync');
      const over = await rpc(s.target, toolCall(9, 'echo', { marker: 'over' }), { headers: user('u'.repeat(257)) });
      assert.equal(over.status, 401, over.raw);
      const long = 'u'.repeat(n);
      const args = { path: `/long${n}`, content: 'y' };
      const q = assertAsked(await modernCall(s.target, toolCall(id++, 'write_file', args), { headers: user(long + 'a'), status: 200 }));
      assertInvalidState(await modernCall(s.target, confirmRetry(id++, 'write_file', args, q.state, ACCEPT), { headers: user(long + 'b') }));
      assertInvalidState(await modernCall(s.target, confirmRetry(id++, 'write_file', args, q.state, ACCEPT), { headers: user(long) }));
      await assertNotForwardedHttp(s, 'write_file');
      const r = await modernCall(s.target, confirmRetry(id++, 'write_file', args, q.state, ACCEPT), { headers: user(long + 'a'), status: 200 });
      assert.ok(r.result && !r.result.isError, r.raw);
      await assertForwardedOnceHttp(s, 'write_file', args, q.state);
    }
  });

  test('--principal anonymous (the default): everyone is the same principal', async (t) => {
    const s = await startHttpSluice(t, { policy: GATE });
    assert.match(s.stderr, /principal from anonymous/);
    const args = { path: '/anon', content: 'x' };
    const q = assertAsked(await modernCall(s.target, toolCall(1, 'write_file', args), { headers: user('alice'), status: 200 }));
    const r = await modernCall(s.target, confirmRetry(2, 'write_file', args, q.state, ACCEPT), { headers: { ...user('bob'), Authorization: 'Bearer other' }, status: 200 });
    assert.ok(r.result && !r.result.isError, r.raw);
    await assertForwardedOnceHttp(s, 'write_file', args, q.state);
  });
});
