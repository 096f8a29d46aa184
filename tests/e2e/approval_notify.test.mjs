// approval_notify.test.mjs: --notify-url (issue 22). When a call waits for the approval page,
// sluice POSTs an approval-pending event to a webhook: here a loopback server of the test's own,
// which records every request and answers from a script. What is checked: the event's fields
// and the page URL (the one the caller was given), that no argument value reaches the webhook,
// retries (500, 500, then 200: three POSTs of the same event; always 500: three and no more),
// the metric, and that a webhook which refuses connections or never answers does not delay
// the caller's answer. The URL: an IPv6 literal ([::1]) is reached, with the brackets in the
// Host header only; $SLUICE_NOTIFY_URL gives it out of ps; and no log line, not even a refusal
// at start, shows its path, query or password (a webhook's path is often its secret).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { describe, test } from 'node:test';
import { MODERN, confirmRetry, runSluice, scaled, sleep, suiteOptions, tmpDir, writePolicy } from './lib.mjs';
import { assertNotForwardedHttp, makePki, metricValue, metrics, rpc, startHttpSluice, waitLog } from './http_lib.mjs';

// A value no part of the event may carry: the webhook's channel is read by more than approvers.
const SECRET = 'SECRET-7f3a9c-do-not-leak';
const ARGS = { path: `/srv/${SECRET}/report.pdf`, reason: `${SECRET} ünïcode\nline two` };

const POLICY = `version: 1
defaults:
  action: allow
  confirm_ttl: 120
tools:
  echo:
    action: allow
  delete_file:
    action: confirm
    irreversible: true
    approval: page
    approvers: ["header:bob"]
`;

/** A loopback webhook: answers the statuses in `script` in turn (then its last one), records
 * {at, method, path, headers, body} of every request. */
async function startWebhook(t, script = [200], tlsOpts = null, host = '127.0.0.1') {
  const hook = { requests: [], url: '' };
  const handler = (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const n = hook.requests.length;
      hook.requests.push({ at: Date.now(), method: req.method, path: req.url, headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8') });
      const status = script[Math.min(n, script.length - 1)];
      res.writeHead(status, { 'Content-Type': 'text/plain' });
      res.end(status === 200 ? 'ok' : 'try later');
    });
  };
  const srv = tlsOpts ? https.createServer(tlsOpts, handler) : http.createServer(handler);
  await new Promise((resolve) => srv.listen(0, host, resolve));
  hook.port = srv.address().port;
  const authority = `${host.includes(':') ? `[${host}]` : host}:${hook.port}`;
  hook.url = `${tlsOpts ? 'https' : 'http'}://${authority}/services/T0/B0/hook-secret`;
  t.after(() => new Promise((resolve) => { srv.closeAllConnections(); srv.close(resolve); }));
  return hook;
}

/** Waits until the webhook got n requests (bounded), and returns them. */
async function waitRequests(hook, n, ms = 10000) {
  ms = scaled(ms);
  const end = Date.now() + ms;
  while (hook.requests.length < n && Date.now() < end) await sleep(25);
  assert.ok(hook.requests.length >= n, `the webhook got ${hook.requests.length} requests, expected ${n} within ${ms} ms`);
  return hook.requests;
}

/** A server that accepts connections and never answers. */
async function startSilent(t) {
  const socks = new Set();
  const srv = net.createServer((c) => { socks.add(c); c.on('error', () => {}); });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => { for (const c of socks) c.destroy(); srv.close(resolve); }));
  return `http://127.0.0.1:${srv.address().port}/hook`;
}

/** A loopback port that refuses connections (bound, then closed). */
async function refusedUrl() {
  const srv = net.createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return `http://127.0.0.1:${port}/hook`;
}

/** Whether this machine has an IPv6 loopback to listen on. */
async function hasIpv6Loopback() {
  const srv = net.createServer();
  const ok = await new Promise((resolve) => {
    srv.once('error', () => resolve(false));
    srv.listen(0, '::1', () => resolve(true));
  });
  if (ok) await new Promise((resolve) => srv.close(resolve));
  return ok;
}

/** sluice before the test's webhook: notifyUrl in --notify-url (null: none; the URL may come from
 * env.SLUICE_NOTIFY_URL). opts: fake (the fake upstream's settings), args (more options). */
async function startSluice(t, notifyUrl, env = undefined, policyText = POLICY, opts = {}) {
  const dir = tmpDir(t);
  const policy = writePolicy(dir, policyText);
  const notify = notifyUrl === null ? [] : ['--notify-url', notifyUrl];
  const s = await startHttpSluice(t, { dir, policy, era: 'modern', env, fake: opts.fake,
    args: ['--principal', 'header:X-User', ...notify, ...(opts.args ?? [])] });
  s.syncHeaders = { 'X-User': 'alice' };
  return s;
}

/** Round one of delete_file as alice, from a client that can open a URL: the page's question.
 * Returns {r, ms, pageUrl} (pageUrl: the approval page the answer names). */
async function askPage(s, id = 1, args = ARGS, caps = { elicitation: { url: {} } }, user = 'alice') {
  const msg = {
    jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'delete_file', arguments: args, _meta: {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientCapabilities': caps,
      'io.modelcontextprotocol/clientInfo': { name: 'e2e', version: '1' },
    } },
  };
  const t0 = Date.now();
  const r = await rpc(s.target, msg, { headers: { 'X-User': user } });
  const ms = Date.now() - t0;
  assert.equal(r.status, 200, r.raw);
  const m = /https?:\/\/[^\s"\\]+\/approve\/[A-Za-z0-9_~.-]+/.exec(r.raw);
  assert.ok(m, `the answer names no approval page: ${r.raw}`);
  return { r, ms, pageUrl: m[0] };
}

describe('--notify-url', suiteOptions(), () => {
  test('a pending page approval posts approval-pending with the page URL and no argument value', async (t) => {
    const hook = await startWebhook(t);
    const s = await startSluice(t, hook.url);
    const { r, pageUrl } = await askPage(s);
    const [req] = await waitRequests(hook, 1);
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/services/T0/B0/hook-secret');
    assert.match(req.headers['content-type'], /^application\/json/);
    const ev = JSON.parse(req.body);
    assert.equal(ev.event, 'approval-pending');
    assert.equal(ev.tool, 'delete_file');
    assert.equal(ev.caller, 'header:alice');
    assert.equal(typeof ev.server, 'string');
    assert.ok(ev.server.length > 0, req.body);
    assert.equal(ev.url, pageUrl);
    const exp = Date.parse(ev.expires_at);
    assert.match(ev.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(exp > Date.now() && exp <= Date.now() + 121000, `expires_at ${ev.expires_at}`);
    assert.match(ev.text, /^sluice: `header:alice` asks to run `delete_file` on `.+`; approve at \S+ before \d\d:\d\d:\d\dZ$/);
    assert.ok(ev.text.includes(pageUrl), ev.text);
    for (const bad of [SECRET, 'report.pdf', 'ünïcode', 'line two'])
      assert.ok(!req.body.includes(bad), `the webhook received an argument value (${bad}): ${req.body}`);
    assert.deepEqual(Object.keys(ev).sort(), ['caller', 'event', 'expires_at', 'server', 'text', 'tool', 'url']);
    // The webhook's path is its secret: not in the log.
    assert.ok(!s.stderr.includes('hook-secret'), 'the webhook path was logged');
    await waitLog(s, /notify: approval-pending for delete_file sent to http:\/\/127\.0\.0\.1:\d+ \(HTTP 200, attempt 1\)/);
    const m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_notify_total', { result: 'sent' }), 1);
    assert.equal(metricValue(m, 'sluice_notify_total', { result: 'failed' }), 0);
    // Asking again while the page is pending tells the webhook nothing new.
    const again = await rpc(s.target, confirmRetry(2, 'delete_file', ARGS, r.msg.result.requestState, { action: 'accept' },
      { caps: { elicitation: { url: {} } } }), { headers: { 'X-User': 'alice' } });
    assert.equal(again.msg.result.resultType, 'input_required', again.raw);
    await sleep(300);
    assert.equal(hook.requests.length, 1, 'one event, one POST');
    await assertNotForwardedHttp(s, 'delete_file');
  });

  test('a caller\'s name cannot write a mention, a link or formatting in the chat text', async (t) => {
    const hook = await startWebhook(t);
    const s = await startSluice(t, hook.url);
    const user = '<!channel> *URGENT* approve http://evil.example/x `@here`';
    const { pageUrl } = await askPage(s, 1, { path: '/srv/x' }, undefined, user);
    const [req] = await waitRequests(hook, 1);
    const ev = JSON.parse(req.body);
    assert.equal(ev.caller, `header:${user}`, 'the JSON field is the principal as it is');
    // In one inline code span it cannot end: no backtick inside, entities for < > &, and no
    // "://" for a link to form from.
    assert.ok(ev.text.startsWith(
      "sluice: `header:&lt;!channel&gt; *URGENT* approve http[:]//evil.example/x '@here'` asks to run `delete_file` on `"),
    ev.text);
    const name = ev.text.slice('sluice: `'.length, ev.text.indexOf('` asks to run'));
    assert.ok(!name.includes('`'), name);
    assert.ok(!ev.text.includes('<'), ev.text);
    assert.ok(!ev.text.includes('http://evil'), ev.text);
    assert.equal(ev.text.split('://').length, 2, `one link only, the page's: ${ev.text}`);
    assert.ok(ev.text.includes(`approve at ${pageUrl} before`), ev.text);
  });

  test('the queue is bounded: beyond 64 events waiting, an event is dropped (logged, counted)', async (t) => {
    // Room for more open questions than the queue holds (the default fatigue limit is 8).
    const policy = POLICY.replace('  confirm_ttl: 120\n', '  confirm_ttl: 120\n  max_open_confirmations: 100\n  max_questions_per_minute: 100\n');
    const s = await startSluice(t, await startSilent(t), undefined, policy);
    // All at once: the count of 3 dropped holds only while the first jobs still wait for the
    // silent webhook (16.5 s of timeouts and backoff), which one by one under valgrind can pass.
    await Promise.all(Array.from({ length: 67 }, (_, i) => askPage(s, i + 1, { path: `/srv/${i + 1}` })));
    await waitLog(s, /notify: 64 events already waiting for http:\/\/127\.0\.0\.1:\d+; dropped approval-pending for delete_file/);
    const m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_notify_total', { result: 'dropped' }), 3);
    assert.equal(metricValue(m, 'sluice_notify_total', { result: 'sent' }), 0);
  });

  test('a client that cannot open a URL: the event names the page its tool error names', async (t) => {
    const hook = await startWebhook(t);
    const s = await startSluice(t, hook.url);
    const { r, pageUrl } = await askPage(s, 1, ARGS, {});
    assert.equal(r.msg.result.isError, true, r.raw);
    const [req] = await waitRequests(hook, 1);
    assert.equal(JSON.parse(req.body).url, pageUrl);
    assert.ok(!req.body.includes(SECRET), req.body);
  });

  test('500, 500, then 200: three POSTs of the same event, then sent', async (t) => {
    const hook = await startWebhook(t, [500, 500, 200]);
    const s = await startSluice(t, hook.url);
    await askPage(s);
    const reqs = await waitRequests(hook, 3, 10000);
    assert.equal(reqs[1].body, reqs[0].body);
    assert.equal(reqs[2].body, reqs[0].body);
    assert.ok(reqs[1].at - reqs[0].at >= 400, 'a backoff before the second attempt');
    assert.ok(reqs[2].at - reqs[1].at >= reqs[1].at - reqs[0].at, 'the backoff grows');
    await waitLog(s, /notify: http:\/\/127\.0\.0\.1:\d+ answered HTTP 500 to attempt 1 of 3; retrying/);
    await waitLog(s, /sent to .* \(HTTP 200, attempt 3\)/);
    await sleep(1500);
    assert.equal(hook.requests.length, 3, 'no POST after success');
    const m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_notify_total', { result: 'sent' }), 1);
  });

  test('always 503: three attempts, then failed (counted, logged), never a fourth', async (t) => {
    const hook = await startWebhook(t, [503]);
    const s = await startSluice(t, hook.url);
    await askPage(s);
    await waitRequests(hook, 3, 10000);
    await waitLog(s, /notify: gave up on approval-pending for delete_file: .* answered HTTP 503 \(attempt 3 of 3\)/);
    await sleep(2500);
    assert.equal(hook.requests.length, 3);
    const m = await metrics(s.target);
    assert.equal(metricValue(m, 'sluice_notify_total', { result: 'failed' }), 1);
    assert.equal(metricValue(m, 'sluice_notify_total', { result: 'sent' }), 0);
  });

  test('https: the webhook certificate is verified ($SSL_CERT_FILE); an unknown CA is not trusted', async (t) => {
    const pki = makePki(tmpDir(t, 'sluice-pki-'));
    const tlsOpts = { cert: fs.readFileSync(pki.files.serverCert), key: fs.readFileSync(pki.files.serverKey) };
    const good = await startWebhook(t, [200], tlsOpts);
    const s = await startSluice(t, good.url, { SSL_CERT_FILE: pki.files.ca });
    const { pageUrl } = await askPage(s);
    const [req] = await waitRequests(good, 1);
    assert.equal(JSON.parse(req.body).url, pageUrl);
    await waitLog(s, /sent to https:\/\/127\.0\.0\.1:\d+ \(HTTP 200, attempt 1\)/);
    // The same server without its CA in the trust store: three failed handshakes, no event.
    const bad = await startWebhook(t, [200], tlsOpts);
    const s2 = await startSluice(t, bad.url, { SSL_CERT_FILE: '/dev/null' });
    await askPage(s2);
    await waitLog(s2, /notify: gave up on approval-pending for delete_file: https:\/\/127\.0\.0\.1:\d+: .*\(attempt 3 of 3\)/, 10000);
    assert.equal(bad.requests.length, 0, 'an unverified server got the event');
  });

  for (const kind of ['refused', 'silent']) {
    test(`a webhook that is ${kind === 'refused' ? 'unreachable' : 'silent'} does not delay the caller's answer`, async (t) => {
      const url = kind === 'refused' ? await refusedUrl() : await startSilent(t);
      const s = await startSluice(t, url);
      // The first call starts the notifier's first attempt; the next ones must not wait for it.
      for (let i = 1; i <= 3; i++) {
        const { ms } = await askPage(s, i);
        // The first attempt alone may last 5 s (silent) and the retries 0.5 s and 1 s more.
        assert.ok(ms < scaled(1500), `round one took ${ms} ms with a ${kind} webhook`);
      }
      if (kind === 'refused')
        await waitLog(s, /notify: http:\/\/127\.0\.0\.1:\d+: .* \(attempt 1 of 3\); retrying in 500 ms/);
      await assertNotForwardedHttp(s, 'delete_file');
    });
  }
});

describe('--notify-url: an IPv6 literal', suiteOptions(), () => {
  // libevent gives the host of http://[::1]:PORT/ with its brackets; they belong in the Host
  // header and the logged URL, not in the address connected to or the certificate's IP.
  // Needs no IPv6 on the machine (the cases below skip without it): the start line is built
  // from the same host as the Host header, so its brackets are checked everywhere.
  test('the start line names http://[::1]:PORT, with one pair of brackets', async (t) => {
    const s = await startSluice(t, 'http://[::1]:9/services/T0/B0/hook-secret');
    await waitLog(s, /notify: pending page approvals are posted to http:\/\/\[::1\]:9 \(path not logged\)/);
    assert.ok(!s.stderr.includes('[['), 'a doubled bracket in the log');
    assert.ok(!s.stderr.includes('hook-secret'), 'the path is not logged');
  });

  test('http://[::1]:PORT gets the event; Host is [::1]:PORT; the log names http://[::1]:PORT', async (t) => {
    if (!await hasIpv6Loopback()) return t.skip('no IPv6 loopback (::1) on this machine');
    const hook = await startWebhook(t, [200], null, '::1');
    const s = await startSluice(t, hook.url);
    const { pageUrl } = await askPage(s);
    const [req] = await waitRequests(hook, 1, 5000);
    assert.equal(req.path, '/services/T0/B0/hook-secret');
    assert.equal(req.headers.host, `[::1]:${hook.port}`);
    assert.equal(JSON.parse(req.body).url, pageUrl);
    await waitLog(s, new RegExp(`notify: approval-pending for delete_file sent to http://\\[::1\\]:${hook.port} \\(HTTP 200, attempt 1\\)`));
    assert.match(s.stderr, new RegExp(`notify: pending page approvals are posted to http://\\[::1\\]:${hook.port} \\(path not logged\\)`));
    assert.ok(!s.stderr.includes('[['), 'a doubled bracket in the log');
  });

  test('https://[::1]:PORT: the certificate is checked for the IP ::1, and the event arrives', async (t) => {
    if (!await hasIpv6Loopback()) return t.skip('no IPv6 loopback (::1) on this machine');
    const pki = makePki(tmpDir(t, 'sluice-pki-'));
    const tlsOpts = { cert: fs.readFileSync(pki.files.serverCert), key: fs.readFileSync(pki.files.serverKey) };
    const hook = await startWebhook(t, [200], tlsOpts, '::1');
    const s = await startSluice(t, hook.url, { SSL_CERT_FILE: pki.files.ca });
    await askPage(s);
    const [req] = await waitRequests(hook, 1, 5000);
    assert.equal(req.headers.host, `[::1]:${hook.port}`);
    await waitLog(s, new RegExp(`sent to https://\\[::1\\]:${hook.port} \\(HTTP 200, attempt 1\\)`));
  });
});

describe('--notify-url at start', suiteOptions(), () => {
  test('a URL that is not http(s) is refused, naming the option, not showing the path', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY);
    const r = runSluice(['--policy', policy, '--notify-url', 'ftp://hooks.example/x', '--listen', '127.0.0.1:0']);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /--notify-url: ftp:\/\/hooks\.example \(path not shown\): the scheme is not http:\/\/ or https:\/\//);
  });

  // A file or a variable often leaves a newline at the end; a chat webhook's path is its secret.
  const BAD = [
    { url: `https://hooks.example.com/services/${SECRET}\n`, shown: 'https://hooks.example.com (path not shown)', why: /the path or query holds a space, control or non-ASCII byte \(0x0a, at its end\)/ },
    { url: `https://hooks.example.com:8443/hook?token=${SECRET} `, shown: 'https://hooks.example.com:8443 (path not shown)', why: /the path or query holds a space, control or non-ASCII byte \(0x20, at its end\)/ },
    { url: `http://hooks.example.com/a b/${SECRET}`, shown: 'http://hooks.example.com (path not shown)', why: /the path or query holds a space, control or non-ASCII byte \(0x20\)/ },
    { url: `https://user:${SECRET}@hooks.example.com/x`, shown: 'https://hooks.example.com (path not shown)', why: /a user name or password \(USER@HOST\) is not supported/ },
    { url: `http://hooks.example.com\n/${SECRET}`, shown: 'http://hooks.example.com\\x0a (path not shown)', why: /the host holds a space, control or non-ASCII byte \(0x0a\)/ },
    { url: `hooks.example.com/${SECRET}`, shown: '(URL not shown)', why: /the scheme is not http:\/\/ or https:\/\// },
  ];
  test('a bad URL\'s error shows scheme://host[:port] and what is wrong, never its path, query or password', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY);
    for (const { url, shown, why } of BAD) {
      const r = runSluice(['--policy', policy, '--notify-url', url, '--listen', '127.0.0.1:0']);
      assert.equal(r.status, 1, r.stderr);
      assert.ok(r.stderr.includes(`--notify-url: ${shown}: `), `${JSON.stringify(url)}: ${r.stderr}`);
      assert.match(r.stderr, why, r.stderr);
      assert.ok(!r.stderr.includes(SECRET), `the error showed the URL's secret: ${r.stderr}`);
    }
  });

  test('a bad $SLUICE_NOTIFY_URL is refused naming the variable, not showing its path', async (t) => {
    const dir = tmpDir(t);
    const policy = writePolicy(dir, POLICY);
    const r = runSluice(['--policy', policy, '--listen', '127.0.0.1:0'],
      { env: { SLUICE_NOTIFY_URL: `https://hooks.example.com/services/${SECRET}\n` } });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /SLUICE_NOTIFY_URL: https:\/\/hooks\.example\.com \(path not shown\): the path or query holds a space, control or non-ASCII byte \(0x0a, at its end\)/);
    assert.ok(!r.stderr.includes(SECRET), r.stderr);
  });
});

describe('$SLUICE_NOTIFY_URL', suiteOptions(), () => {
  test('gives the webhook out of argv: the event arrives, and no log line nor the upstream sees the URL', async (t) => {
    const hook = await startWebhook(t);
    const envFile = `${tmpDir(t)}/child-env.json`;
    const s = await startSluice(t, null, { SLUICE_NOTIFY_URL: hook.url }, POLICY,
      { fake: { FAKE_ENV_FILE: envFile }, args: ['--log-level', 'debug'] });
    assert.ok(!s.args.join(' ').includes('hook-secret'));
    const { pageUrl } = await askPage(s);
    const [req] = await waitRequests(hook, 1);
    assert.equal(req.path, '/services/T0/B0/hook-secret');
    assert.equal(JSON.parse(req.body).url, pageUrl);
    await waitLog(s, /notify: approval-pending for delete_file sent to http:\/\/127\.0\.0\.1:\d+ \(HTTP 200, attempt 1\)/);
    assert.ok(!s.stderr.includes('hook-secret'), 'the webhook path was logged');
    const childEnv = fs.readFileSync(envFile, 'utf8');
    assert.ok(!childEnv.includes('hook-secret'), 'the upstream child got the webhook URL');
  });

  test('with --notify-url too: the option wins and a warning says the variable is ignored', async (t) => {
    const byFlag = await startWebhook(t);
    const byEnv = await startWebhook(t);
    const envUrl = byEnv.url.replace('hook-secret', 'env-secret');
    const s = await startSluice(t, byFlag.url, { SLUICE_NOTIFY_URL: envUrl });
    assert.match(s.stderr, /warning: --notify-url is given: SLUICE_NOTIFY_URL is ignored/);
    await askPage(s);
    await waitRequests(byFlag, 1);
    await waitLog(s, /sent to http:\/\/127\.0\.0\.1:\d+ \(HTTP 200, attempt 1\)/);
    assert.equal(byEnv.requests.length, 0, 'the variable\'s webhook got the event');
    assert.ok(!s.stderr.includes('env-secret') && !s.stderr.includes('hook-secret'), 'a webhook path was logged');
  });
});
