// arg_rules.test.mjs: the argument rules of tools.<tool>.args against the real binary, asserted
// on what the fake upstream received. A deny_glob or confirm_glob names a file by its text, and a
// server may reach that file by another spelling of the text: Unicode composes "a\u0308" and
// "\u00e4" alike, and the reference filesystem server looks up a path component that does not
// exist as spelt by its composed form (so does macOS's file system). Case is another spelling:
// macOS and Windows open ".ssh" for ".SSH", and Windows "\\srv\\.ssh" and "/srv/.ssh." for
// "/srv/.ssh". A server that takes URIs decodes "%2e" as ".". Such a spelling must meet the rule,
// not slip past it to the server.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertAsked, assertRefusal, resultText, startSluice, suiteOptions, tmpDir, toolCall, writePolicy,
} from './lib.mjs';

const POLICY = `version: 1
defaults:
  action: deny
tools:
  echo:
    action: allow
  read_file:
    action: allow
    args:
      path:
        deny_glob: ["**/Vertr\u00e4ge/**", "**/Keys/**", "**/.ssh/**", "**/Stra\u00dfe/**", "**/id_rsa"]
  write_file:
    action: allow
    args:
      path:
        confirm_glob: ["/home/J\u00fcrgen/**"]
        allow_glob: ["/home/**", "/d\u00e9p\u00f4t/**"]
      content: {}
`;

function start(t) {
  const dir = tmpDir(t);
  return startSluice(t, { policy: writePolicy(dir, POLICY), dir, era: 'modern', fake: { FAKE_EXTRA_TOOLS: 1 } });
}

async function assertNotForwarded(s, name) {
  await s.sync();
  const calls = s.upstreamCalls(name);
  assert.equal(calls.length, 0, `upstream must not have received ${name}; got ${JSON.stringify(calls)}`);
}

describe('globs meet every spelling of a name: Unicode composition and case', suiteOptions(), () => {
  /** Each of refused is refused by read_file's deny_glob and nothing reaches the server; then
   * other, another name, reaches it. */
  async function denyEach(t, refused, other) {
    const s = start(t);
    for (const [i, path] of refused.entries()) {
      const r = await s.request(toolCall(i + 1, 'read_file', { path }, { caps: {} }));
      assertRefusal(r, /tools\.read_file\.args\.path\.deny_glob\[[0-4]\]/);
    }
    await assertNotForwarded(s, 'read_file');
    const r = await s.request(toolCall(99, 'read_file', { path: other }, { caps: {} }));
    assert.doesNotMatch(resultText(r), /deny_glob/, r.raw); // another name: the server is asked
    assert.equal(s.upstreamCalls('read_file').length, 1);
  }

  test('deny_glob refuses the decomposed spelling and the Kelvin sign; nothing forwarded', (t) =>
    denyEach(t, ['/srv/Vertr\u00e4ge/a.txt', '/srv/Vertra\u0308ge/a.txt', '/srv/\u212aeys/id'], '/srv/Vertrage/a.txt'));

  test('deny_glob refuses every case of a name, as macOS and Windows open it; nothing forwarded', (t) =>
    denyEach(t, ['/srv/.SSH/id_rsa', '/srv/.Ssh/config', '/srv/VERTR\u00c4GE/a.txt', '/srv/VERTRA\u0308GE/a.txt', '/srv/keys/id'],
      '/srv/.sshd/x'));

  test('deny_glob refuses the names that Linux, Windows and HFS+ read alike: ß as ss, ı as i, no joiners; nothing forwarded', (t) =>
    denyEach(t, ['/srv/STRASSE/a.txt', '/srv/strasse/a.txt', '/srv/Stra\u1e9ee/a.txt', '/srv/.ssh2/\u0131d_rsa',
      '/srv/x/\u0131D_RSA', '/srv/.s\u200csh/config', '/srv/x/\ufeffid_rsa'], '/srv/Strase/a.txt'));

  test('deny_glob refuses a path as Windows reads it (\\ as /, trailing dots, streams); nothing forwarded', (t) =>
    denyEach(t, ['/srv\\.ssh\\id_rsa', 'C:\\Users\\me\\.SSH\\config', '/srv/.ssh./id_rsa', '/srv/x/id_rsa.::$DATA',
      '/srv/.ssh.:$I30:$INDEX_ALLOCATION/config', 'C:\\Keys\\id'], '/srv\\.sshd\\x'));

  test('deny_glob refuses a percent-encoded path or file URI, decoded once or twice; nothing forwarded', (t) =>
    denyEach(t, ['/srv/%2essh/id_rsa', 'file:///srv/%2Essh/config', '/srv/x/%69d_rsa', '/srv/%252essh/config',
      '/srv/%5c.ssh%5cid_rsa'], '/srv/%2esshd/x'));

  test('deny_glob refuses the path a URL parser finds: before ? or #, then decoded, without ;params, after //host; nothing forwarded', (t) =>
    denyEach(t, ['/srv/x/id_rsa#frag', '/srv/x/id_rsa?/../y', '/srv/x/id_rsa;v=1', '/srv/x/id_rsa%3Fv',
      '/srv/a%23/../.ssh/id_rs%61#x', '/srv/.ssh\\...\\k',
      '/srv/q%2523/id_rs%2561%23z'],
      '/srv/x/id_rsa_pub#frag'));

  test('a "..;" segment (".." to a servlet container, a name to the rest) is refused; nothing forwarded', async (t) => {
    const s = start(t);
    for (const [i, path] of ['/srv/.ssh/..;/../k#/../../..', '/srv/x/%2e%2e;a/y'].entries()) {
      const r = await s.request(toolCall(i + 1, 'read_file', { path }, { caps: {} }));
      assertRefusal(r, /has a "\.\.;" segment: servers differ.*rule tools\.read_file\.args\.path\.deny_glob\)/);
    }
    await assertNotForwarded(s, 'read_file');
  });

  test('a value that names a host ("//host", "/\\host") is refused; nothing forwarded', async (t) => {
    const s = start(t);
    for (const [i, path] of ['//localhost/srv/.s%73h/k', '/\\srv/x', '//srv/x#y', '/%2fsrv/x', '//h\\x/srv/.ssh/k'].entries()) {
      const r = await s.request(toolCall(i + 1, 'read_file', { path }, { caps: {} }));
      assertRefusal(r, /names a host \("\/\/host"\): servers differ.*rule tools\.read_file\.args\.path\.deny_glob\)/);
    }
    await assertNotForwarded(s, 'read_file');
  });

  test('a ".." out of a segment some servers drop ("", "...", ";x") is refused; nothing forwarded', async (t) => {
    const s = start(t);
    for (const [i, path] of ['/srv//../x/.ssh/k', '/srv/.ssh\\...\\..\\k', '/srv/.ssh/;x/../k;y'].entries()) {
      const r = await s.request(toolCall(i + 1, 'read_file', { path }, { caps: {} }));
      assertRefusal(r, /has a "\.\." out of a segment that some servers drop and others keep \(empty, or only dots and spaces, before any ";"\).*rule tools\.read_file\.args\.path\.deny_glob\)/);
    }
    await assertNotForwarded(s, 'read_file');
  });

  test('a letter and ":" past the drive, or a space outside ASCII at an end, is refused; a ":" after a digit passes', async (t) => {
    const s = start(t);
    const refused = [
      ['/srv/c:.ssh/k', /has a letter and ":" or "\|" that servers read as a drive, a URL scheme or a name/],
      ['ab:.ssh/id_rsa', /servers read as a drive/],
      ['C:Keys\\id', /servers read as a drive/],
      ['/srv/.ssh:$I30:$INDEX_ALLOCATION/config', /servers read as a drive/],
      ['/srv/x/id_rsa\u00a0', /starts or ends with a space outside ASCII/],
    ];
    for (const [i, [path, why]] of refused.entries()) {
      const r = await s.request(toolCall(i + 1, 'read_file', { path }, { caps: {} }));
      assertRefusal(r, why);
      assertRefusal(r, /rule tools\.read_file\.args\.path\.deny_glob\)/);
    }
    await assertNotForwarded(s, 'read_file');
    const r = await s.request(toolCall(99, 'read_file', { path: '/srv/log/10:30.txt' }, { caps: {} }));
    assert.match(resultText(r), /no such file/, r.raw); // forwarded: the server answered
  });

  test('confirm_glob asks for the decomposed spelling; nothing forwarded unasked', async (t) => {
    const s = start(t);
    for (const [i, path] of ['/home/J\u00fcrgen/x', '/home/Ju\u0308rgen/x', '/home/J\u00dcRGEN/x'].entries()) {
      const r = await s.request(toolCall(i + 1, 'write_file', { path, content: 'c' }));
      assertAsked(r);
    }
    await assertNotForwarded(s, 'write_file');
  });

  test('allow_glob allows only the spelling it names', async (t) => {
    const s = start(t);
    const r1 = await s.request(toolCall(1, 'write_file', { path: '/de\u0301po\u0302t/x', content: 'c' }));
    assertRefusal(r1, /allow_glob/);
    const r3 = await s.request(toolCall(3, 'write_file', { path: '/D\u00c9P\u00d4T/x', content: 'c' }));
    assertRefusal(r3, /allow_glob/);
    // Windows reads "\\" as "/": this is /etc/passwd there, not a name under /d\u00e9p\u00f4t
    const r4 = await s.request(toolCall(4, 'write_file', { path: '/d\u00e9p\u00f4t/..\\..\\etc\\passwd', content: 'c' }));
    assertRefusal(r4, /allow_glob/);
    // a server that decodes "%2e" reads this as /etc/passwd; one that resolves ".." before it
    // decodes reads the next as /etc/passwd too, and one that decodes first as /d\u00e9p\u00f4t/etc/passwd
    const r5 = await s.request(toolCall(5, 'write_file', { path: '/d\u00e9p\u00f4t/%2e%2e/etc/passwd', content: 'c' }));
    assertRefusal(r5, /percent-decoded has "\.\." and an escaped.*rule tools\.write_file\.args\.path\.allow_glob/);
    const r7 = await s.request(toolCall(7, 'write_file', { path: '/d\u00e9p\u00f4t/q%2fq/../%2e%2e/etc/passwd', content: 'c' }));
    assertRefusal(r7, /servers differ on where it leads/);
    // a URL parser opens /etc/passwd for this
    const r9 = await s.request(toolCall(9, 'write_file', { path: '/etc/passwd#/../../d\u00e9p\u00f4t/x', content: 'c' }));
    assertRefusal(r9, /\(as a URL "\/etc\/passwd"\) matches no allow_glob/);
    // two separators first: a network share on Windows, not a directory under /d\u00e9p\u00f4t
    const r8 = await s.request(toolCall(8, 'write_file', { path: '//d\u00e9p\u00f4t/x', content: 'c' }));
    assertRefusal(r8, /names a host \("\/\/host"\): servers differ.*allow_glob/);
    await assertNotForwarded(s, 'write_file');
    const r2 = await s.request(toolCall(2, 'write_file', { path: '/d\u00e9p\u00f4t/x', content: 'c' }));
    assert.ok(r2.result && !r2.result.isError, r2.raw);
    // "%25" is "%" decoded: still a name under /d\u00e9p\u00f4t
    const r6 = await s.request(toolCall(6, 'write_file', { path: '/d\u00e9p\u00f4t/100%25.txt', content: 'c' }));
    assert.ok(r6.result && !r6.result.isError, r6.raw);
    assert.equal(s.upstreamCalls('write_file').length, 2);
  });
});
