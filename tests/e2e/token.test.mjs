// token.test.mjs: the token fallback (policy `fallback: token`). A client that cannot ask a person
// (either era) gets an isError result carrying a one-time token in _meta["dev.sluice/token"]; the
// same call again with that token runs once. Every refusal is checked against the fake upstream's
// log. Also: `sluice check` refuses the fallback where it must never apply.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  ACCEPT, MODERN, POLICIES, assertAsked, assertInvalidState, confirmRetry, jcs, legacyCall,
  legacyHandshake, legacySync, nextElicitation, policyPath, readJsonLines, resultText, runSluice,
  sha256hex, sleep, startSluice, suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';

const TOKEN = policyPath('token.yaml');
const TOKEN_TTL1 = policyPath('token_ttl1.yaml');
const TOKEN_META = 'dev.sluice/token';
const UPSTREAMS = ['legacy', 'modern'];

/** Clients that cannot ask a person. */
const CLIENTS = {
  'modern client (clientCapabilities {})': {
    modern: true,
    async start(t, opts) {
      return startSluice(t, opts);
    },
    sync: (s) => s.sync(),
    msg(id, name, args, token) {
      return toolCall(id, name, args, { caps: {}, meta: token === undefined ? {} : { [TOKEN_META]: token } });
    },
  },
  'handshake client (no elicitation)': {
    modern: false,
    async start(t, opts) {
      const s = startSluice(t, opts);
      await legacyHandshake(s, { capabilities: { sampling: {} } });
      return s;
    },
    sync: (s) => legacySync(s),
    msg(id, name, args, token) {
      return legacyCall(id, name, args, token === undefined ? {} : { _meta: { [TOKEN_META]: token } });
    },
  },
};

/** Asserts r is the token refusal; returns the token. */
function assertToken(r, modern) {
  assert.ok(r.result, `expected a result carrying a token, got ${r.raw}`);
  assert.equal(r.result.isError, true, r.raw);
  if (modern) assert.equal(r.result.resultType, 'complete', r.raw);
  const tok = r.result._meta && r.result._meta[TOKEN_META];
  assert.equal(typeof tok, 'string', `no _meta["${TOKEN_META}"]: ${r.raw}`);
  assert.ok(tok.length >= 16, r.raw);
  assert.ok(resultText(r).includes(tok), `the token must also be in the text: ${r.raw}`);
  return tok;
}

async function calls(s, C, name) {
  await C.sync(s);
  return s.upstreamCalls(name);
}

describe('token fallback', suiteOptions(), () => {
  for (const [label, C] of Object.entries(CLIENTS)) {
    for (const upstream of UPSTREAMS) {
      const where = `${label}, ${upstream} upstream`;

      test(`issued, then redeemed exactly once with canonical arguments and no token upstream; a second use is -32602 (${where})`, async (t) => {
        const dir = tmpDir(t);
        const audit = path.join(dir, 'audit.jsonl');
        const s = await C.start(t, { policy: TOKEN, era: upstream, dir, audit });
        const args = { path: '/t', content: 'c', n: 100, meta: { b: 1, a: 2 } };
        const tok = assertToken(await s.request(C.msg(1, 'write_file', args)), C.modern);
        assert.equal((await calls(s, C, 'write_file')).length, 0, 'issuing a token runs nothing');
        // The same call in another key order and number spelling is the same call.
        const again = C.msg(2, 'write_file', { meta: { a: 2, b: 1 }, n: 100, content: 'c', path: '/t' }, tok);
        const line = JSON.stringify(again).replace('"n":100', '"n":1.00E2');
        assert.ok(line.includes('1.00E2'));
        s.sendRaw(`${line}\n`);
        const r = await s.responseTo(2);
        assert.ok(r.result && !r.result.isError, r.raw);
        assert.equal(resultText(r), 'wrote "/t"', r.raw);
        if (C.modern) assert.equal(r.result.resultType, 'complete', r.raw);
        const got = await calls(s, C, 'write_file');
        assert.equal(got.length, 1, JSON.stringify(got.map((c) => c.raw)));
        const p = got[0].params;
        assert.deepEqual(p.arguments, args, got[0].raw);
        assert.ok(got[0].raw.includes(`"arguments":${jcs(args)}`), `arguments not canonical upstream: ${got[0].raw}`);
        assert.ok(!(p._meta && TOKEN_META in p._meta), `the token reached the upstream: ${got[0].raw}`);
        assert.ok(!got[0].raw.includes('dev.sluice') && !got[0].raw.includes(tok), `the token reached the upstream: ${got[0].raw}`);
        if (upstream === 'modern') {
          assert.equal(p._meta['io.modelcontextprotocol/protocolVersion'], MODERN, got[0].raw);
        }
        // Second use: the first run's result again, not a second run.
        const used = await s.request(C.msg(3, 'write_file', args, tok));
        assert.equal(used.result && used.result._meta && used.result._meta['dev.sluice/replayed'], true, used.raw);
        assert.equal((await calls(s, C, 'write_file')).length, 1, 'a token ran twice');
        // The journal: issued, then redeemed, both naming the same digest.
        await s.closeStdin(5000);
        const lines = readJsonLines(audit).filter((l) => l.tool === 'write_file');
        const issued = lines.filter((l) => l.decision === 'token-issued');
        const redeemed = lines.filter((l) => l.decision === 'token-redeemed');
        assert.equal(issued.length, 1, JSON.stringify(lines));
        assert.equal(redeemed.length, 1, JSON.stringify(lines));
        assert.ok(lines.indexOf(issued[0]) < lines.indexOf(redeemed[0]), JSON.stringify(lines));
        assert.equal(issued[0].upstream, 'not-forwarded', JSON.stringify(issued[0]));
        assert.equal(redeemed[0].upstream, 'ok', JSON.stringify(redeemed[0]));
        assert.equal(issued[0].args_sha256, sha256hex(jcs(args)));
        assert.equal(redeemed[0].args_sha256, sha256hex(jcs(args)));
        // Before it ran: one forwarding line that names the token as what let it through.
        const fwd = lines.filter((l) => l.decision === 'forwarding');
        assert.equal(fwd.length, 1, JSON.stringify(lines));
        assert.equal(fwd[0].reason, 'token-redeemed');
        assert.equal(fwd[0].args_sha256, redeemed[0].args_sha256);
        assert.ok(lines.indexOf(fwd[0]) < lines.indexOf(redeemed[0]), JSON.stringify(lines));
        assert.ok(!fs.readFileSync(audit, 'utf8').includes(tok), 'the token is in the journal');
      });

      test(`a token used for another fallback tool: -32602, nothing forwarded (${where})`, async (t) => {
        const s = await C.start(t, { policy: TOKEN, era: upstream });
        const args = { path: '/x' };
        const tok = assertToken(await s.request(C.msg(1, 'write_file', args)), C.modern);
        assertInvalidState(await s.request(C.msg(2, 'delete_file', args, tok)), /^This token was altered, or was made for another tool/);
        assert.equal((await calls(s, C, 'delete_file')).length, 0);
        assert.equal((await calls(s, C, 'write_file')).length, 0);
      });

      test(`changed arguments: isError "arguments changed", nothing forwarded (${where})`, async (t) => {
        const s = await C.start(t, { policy: TOKEN, era: upstream });
        const tok = assertToken(await s.request(C.msg(1, 'write_file', { path: '/a', content: 'safe' })), C.modern);
        const r = await s.request(C.msg(2, 'write_file', { path: '/a', content: 'evil' }, tok));
        assert.ok(r.result, r.raw);
        assert.equal(r.result.isError, true, r.raw);
        assert.match(resultText(r), /arguments changed/i, r.raw);
        assert.equal((await calls(s, C, 'write_file')).length, 0);
      });

      test(`an expired token (confirm_ttl 1, waited 2.2 s): -32602, nothing forwarded (${where})`, async (t) => {
        const s = await C.start(t, { policy: TOKEN_TTL1, era: upstream });
        const args = { path: '/late' };
        const tok = assertToken(await s.request(C.msg(1, 'write_file', args)), C.modern);
        await sleep(2200);
        assertInvalidState(await s.request(C.msg(2, 'write_file', args, tok)), /^This token expired/);
        assert.equal((await calls(s, C, 'write_file')).length, 0);
      });

      test(`a forged or tampered token: -32602, nothing forwarded (${where})`, async (t) => {
        const s = await C.start(t, { policy: TOKEN, era: upstream });
        const args = { path: '/f' };
        const tok = assertToken(await s.request(C.msg(1, 'write_file', args)), C.modern);
        const flip = tok.slice(0, -3) + (tok.at(-3) === 'A' ? 'B' : 'A') + tok.slice(-2);
        for (const [i, bad] of [flip, `${tok}x`, 'not-a-token', ''].entries()) {
          assertInvalidState(await s.request(C.msg(`bad-${i}`, 'write_file', args, bad)));
        }
        assert.equal((await calls(s, C, 'write_file')).length, 0);
      });
    }
  }

  test('a client that can ask is asked, not given a token (modern client with form elicitation)', async (t) => {
    const s = startSluice(t, { policy: TOKEN });
    const r = await s.request(toolCall(1, 'write_file', { path: '/q' }));
    assertAsked(r);
    assert.ok(!r.raw.includes(TOKEN_META), r.raw);
  });

  test('a client that can ask is asked, not given a token (handshake client with elicitation)', async (t) => {
    const s = startSluice(t, { policy: TOKEN });
    await legacyHandshake(s);
    s.send(legacyCall(1, 'write_file', { path: '/q' }));
    const e = await nextElicitation(s);
    s.send({ jsonrpc: '2.0', id: e.id, result: { action: 'decline' } });
    const r = await s.responseTo(1);
    assert.equal(r.result.isError, true, r.raw);
    assert.ok(!r.raw.includes(TOKEN_META), r.raw);
  });

  test('a token is not a confirmation state, and a confirmation state is not a token', async (t) => {
    const s = startSluice(t, { policy: TOKEN });
    const args = { path: '/k' };
    const tok = assertToken(await s.request(toolCall(1, 'write_file', args, { caps: {} })), true);
    assertInvalidState(await s.request(confirmRetry(2, 'write_file', args, tok, ACCEPT)));
    const q = assertAsked(await s.request(toolCall(3, 'write_file', args)));
    assertInvalidState(await s.request(toolCall(4, 'write_file', args, { caps: {}, meta: { [TOKEN_META]: q.state } })));
    await s.sync();
    assert.equal(s.upstreamCalls('write_file').length, 0);
  });

  test('a token on a tool without the fallback does nothing (modern: -32021, nothing forwarded)', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  echo:\n    action: allow\n  write_file:\n    action: confirm\n    fallback: token\n  sleep:\n    action: confirm\n');
    const s = startSluice(t, { policy, dir });
    const tok = assertToken(await s.request(toolCall(1, 'write_file', { ms: 1 }, { caps: {} })), true);
    const r = await s.request(toolCall(2, 'sleep', { ms: 1 }, { caps: {}, meta: { [TOKEN_META]: tok } }));
    assert.equal(r.error && r.error.code, -32021, r.raw);
    await s.sync();
    assert.equal(s.upstreamCalls('sleep').length, 0);
  });
});

describe('sluice check and fallback: token', suiteOptions(), () => {
  function check(file) {
    const r = runSluice(['check', '--policy', file]);
    return { ...r, out: `${r.stdout}${r.stderr}` };
  }

  test('the token policies check clean', () => {
    for (const f of ['token.yaml', 'token_ttl1.yaml']) {
      const r = check(path.join(POLICIES, f));
      assert.equal(r.status, 0, r.out);
    }
  });

  for (const [label, body, re] of [
    ['an irreversible tool', 'version: 1\ntools:\n  delete_file:\n    action: confirm\n    irreversible: true\n    fallback: token\n', /irreversible/],
    ['an irreversible tool (fallback written first)', 'version: 1\ntools:\n  delete_file:\n    fallback: token\n    action: confirm\n    irreversible: true\n', /irreversible/],
    ['an allow tool', 'version: 1\ntools:\n  echo:\n    action: allow\n    fallback: token\n', /confirm/],
    ['a value other than token', 'version: 1\ntools:\n  write_file:\n    action: confirm\n    fallback: yes\n', /token/],
  ]) {
    test(`refused on ${label}: exit 1, file:line:col, a message saying why`, (t) => {
      const dir = tmpDir(t);
      const file = writePolicy(dir, body);
      const r = check(file);
      assert.equal(r.status, 1, r.out);
      const m = new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:(\\d+):(\\d+): (.+)$`, 'm').exec(r.out);
      assert.ok(m, `expected FILE:LINE:COL: message, got ${r.out}`);
      const lines = body.split('\n');
      assert.match(lines[Number(m[1]) - 1], /fallback/, `the error should point at the fallback line: ${m[0]}`);
      assert.match(m[3], re, m[0]);
    });
  }

  // A deny tool's leftover fallback is ignored with a warning (issue 17: tightening to deny in an
  // emergency must always load); prompt.test.mjs covers start and SIGHUP.
  test('accepted on a deny tool with a warning at the fallback line: exit 0', (t) => {
    const dir = tmpDir(t);
    const file = writePolicy(dir, 'version: 1\ntools:\n  drop_table:\n    action: deny\n    fallback: token\n');
    const r = check(file);
    assert.equal(r.status, 0, r.out);
    assert.ok(r.out.includes(`warning: ${file}:5:5: tools.drop_table.fallback is ignored`), r.out);
  });

  test('sluice refuses to start with such a policy', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, 'version: 1\ntools:\n  delete_file:\n    action: confirm\n    irreversible: true\n    fallback: token\n');
    const s = startSluice(t, { policy, dir });
    const { code } = await s.waitExit(5000);
    assert.notEqual(code, 0, s.stderr);
    assert.match(s.stderr, /irreversible/, s.stderr);
  });
});
