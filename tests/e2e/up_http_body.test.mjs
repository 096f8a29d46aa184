// up_http_body.test.mjs: the body of a large JSON reply from an HTTP upstream, which sluice reads
// with recv() straight into place (up_http.c read_direct: a Content-Length body of more than
// 64 KiB over plain TCP), against a scripted server (raw_http_upstream.mjs) that decides every
// byte and every TCP write:
//   - bytes the server sends right behind the body (a whole second response, written in the same
//     write as the body's end) are never glued onto the body: the client gets the result byte for
//     byte, the forged second response never reaches anyone, the connection is dropped;
//   - a body split into many writes with pauses (recv() meets EAGAIN in mid-body) is taken whole,
//     and the connection stays in the pool;
//   - a body the server cuts short (FIN or RST) fails the call with one error, at once (not at the
//     read timeout), and never delivers a truncated result.
//
// Some shapes pause sluice (SIGSTOP) while the server writes, so that everything written is
// already in sluice's socket when it reads: only then is it certain that read_direct itself meets
// the bytes after the body (or the end of the connection), whatever the scheduling of two
// processes on a busy machine. sluice is continued before anything waits on it.
//
// sluice is driven over stdio (--upstream URL with the stdio front). Every wait has a deadline;
// every server and process is closed in an after hook.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as lib from './lib.mjs';
import { RawUpstream, headBytes, sleep, splitBytes } from './raw_http_upstream.mjs';

const { SluiceProc, SLUICE_BIN, cleanups, suiteOptions, toolCall, resultText, scaled } = lib;
const DIRECT_MIN = 64 * 1024; // proxy/up_http.c: a JSON body left larger than this is read by recv()
const MIB = 1024 * 1024;

const POLICY_TEXT = `version: 1
defaults:
  action: allow
`;

let workDir;
let policyFile;

before(() => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-e2e-upbody-'));
  policyFile = path.join(workDir, 'policy.yaml');
  fs.writeFileSync(policyFile, POLICY_TEXT);
});
after(() => {
  if (workDir && !process.env.E2E_KEEP_TMP) fs.rmSync(workDir, { recursive: true, force: true });
});

// ===== harness =====

async function startUpstream(defer, opts = {}) {
  const up = new RawUpstream(opts);
  await up.listen(0);
  defer(() => up.close());
  return up;
}

/**
 * sluice with --upstream url over stdio. The read timeout is short, so that a reply sluice
 * wrongly thinks unfinished fails the call in seconds rather than holding it for 300 s; every
 * reply here keeps its bytes coming far more often than that.
 */
async function startSluice(defer, url, args = []) {
  assert.ok(fs.existsSync(SLUICE_BIN), `sluice binary not found at ${SLUICE_BIN}`);
  const all = ['--policy', policyFile, '--upstream', url, '--upstream-timeout', '5', ...args];
  const env = { ...process.env };
  delete env.SLUICE_STATE_KEY;
  delete env.SLUICE_UPSTREAM_AUTHORIZATION;
  const cmd = typeof lib.sluiceCommand === 'function' ? lib.sluiceCommand(all) : { file: SLUICE_BIN, args: all, memcheck: null };
  const proc = spawn(cmd.file, cmd.args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const s = new SluiceProc(proc, { args: all, memcheck: cmd.memcheck });
  defer(() => s.kill());
  // Never leave it stopped (a test that failed between SIGSTOP and SIGCONT): kill() needs it to run.
  defer(() => signal(s, 'SIGCONT'));
  return s;
}

function signal(s, sig) {
  if (s.exited) return;
  try {
    process.kill(s.pid, sig);
  } catch { /* gone */ }
}

/**
 * Runs fn (the server's writes) while sluice is stopped, then waits a little so that loopback has
 * moved every byte written into sluice's socket, and continues sluice. A write the socket buffers
 * cannot take while sluice does not read is not waited for beyond 300 ms (it finishes once sluice
 * runs again).
 */
async function whileStopped(s, fn) {
  signal(s, 'SIGSTOP');
  let writes;
  try {
    writes = Promise.resolve(fn());
    await Promise.race([writes, sleep(300)]);
    await sleep(100);
  } finally {
    signal(s, 'SIGCONT');
  }
  await writes;
}

let idSeq = 0;

/** A tools/call over stdio; resolves with the response (result or error). */
function call(s, name, args = {}, ms = undefined) {
  idSeq += 1;
  const id = `${name}-${idSeq}`;
  return s.request(toolCall(id, name, args), ms).then((r) => ({ ...r, sentId: id }));
}

function okText(r) {
  assert.ok(r.result, `expected a result, got ${r.raw.slice(0, 500)}`);
  assert.notEqual(r.result.isError, true, r.raw.slice(0, 500));
  return resultText(r);
}

/** The response must be a JSON-RPC error (not a result) for the id. */
function assertError(r, re) {
  assert.ok(r.error && !('result' in r), `expected a JSON-RPC error, got ${r.raw.slice(0, 500)}`);
  if (re) assert.match(r.error.message, re, r.raw);
}

/** Nothing else came for these ids (a second answer would be a duplicate or a leftover's). */
function assertNoMoreFor(s, ids) {
  const extra = s.lines.filter((l) => l.msg && !('method' in l.msg) && ids.includes(l.msg.id));
  assert.deepEqual(extra.map((l) => l.raw.slice(0, 200)), [], 'more than one answer for an id');
}

/** Waits until the tools/list sluice sends once ready has been answered (its connection is idle). */
async function startupListDone(up) {
  const q = await up.waitFor(() => up.posts('tools/list')[0], scaled(5000), 'the start-up tools/list');
  await up.waitFor(() => q.answered, scaled(5000), 'the answer to the start-up tools/list');
  await sleep(50);
}

async function ready(up, s) {
  assert.equal(okText(await call(s, 'echo', { warm: 1 })), JSON.stringify({ warm: 1 }));
  await startupListDone(up);
}

// ===== the bytes =====

/**
 * n characters of text that say where they are (a shifted, cut or doubled stretch shows), with a
 * quote, a backslash, a newline and multi-byte UTF-8 in every block, so that the body on the wire
 * is JSON with escapes, not plain ASCII.
 */
function bigText(n, tag) {
  const parts = [];
  let len = 0;
  for (let i = 0; len < n; i++) {
    const block = `${tag}:${i.toString(36).padStart(5, '0')} "q" \\ é✓\n`;
    parts.push(block);
    len += block.length;
  }
  return parts.join('').slice(0, n);
}

/** The head and the Content-Length body of a JSON reply answering msg with text. */
function jsonReply(up, msg, text) {
  const body = Buffer.from(JSON.stringify(up.textResult(msg, text)), 'utf8');
  return { head: headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]), body };
}

/**
 * A whole second response right behind the body: a result for the next id sluice will use (its
 * ids count up), so a connection that took it for the next call's reply would hand that call a
 * forged answer.
 */
function forgedResponse(up, msg) {
  const body = Buffer.from(JSON.stringify(up.textResult({ id: Number(msg.id) + 1 }, 'SMUGGLED')));
  return Buffer.concat([headBytes(200, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]), body]);
}

// ===== bytes after the body =====

describe('bytes the server sends right behind a large JSON body are never taken as part of it', suiteOptions(), () => {
  for (const era of ['modern', 'legacy']) {
    test(`a 1 MiB body and a forged second response in the same write: the exact result, the forgery reaches nobody, the connection is dropped (${era})`, async (t) => {
      const defer = cleanups(t);
      const up = await startUpstream(defer, { era });
      const s = await startSluice(defer, up.url());
      const texts = {};
      // All in one write, as a server that disagrees about framing would send it.
      up.tool('one_write', async (req, res, msg) => {
        const { head, body } = jsonReply(up, msg, texts.one_write);
        await res.write(Buffer.concat([head, body, forgedResponse(up, msg)]));
      });
      // The body's last 80 KiB (more than DIRECT_MIN, so it is read by recv() too) and the forged
      // response in one write, which reaches sluice while it is stopped: when it reads, all of it
      // is in its socket, and only the bound on recv() keeps the forgery out of the body.
      up.tool('tail_stopped', async (req, res, msg) => {
        const { head, body } = jsonReply(up, msg, texts.tail_stopped);
        const cut = body.length - (DIRECT_MIN + 16 * 1024);
        await res.write(Buffer.concat([head, body.subarray(0, cut)]));
        await sleep(150);
        await whileStopped(s, () => res.write(Buffer.concat([body.subarray(cut), forgedResponse(up, msg)])));
      });
      // The whole reply and the forgery written while sluice is stopped: the body's end and what
      // follows arrive together, however sluice's reads fall.
      up.tool('all_stopped', async (req, res, msg) => {
        const { head, body } = jsonReply(up, msg, texts.all_stopped);
        await whileStopped(s, () => res.write(Buffer.concat([head, body, forgedResponse(up, msg), Buffer.from('garbage after it all\r\n')])));
      });
      texts.one_write = bigText(MIB, 'one');
      texts.tail_stopped = bigText(MIB + 12345, 'tail');
      texts.all_stopped = bigText(96 * 1024, 'all');
      await ready(up, s);
      const sent = [];
      for (const name of ['one_write', 'tail_stopped', 'all_stopped']) {
        const r = await call(s, name, {}, scaled(15000));
        sent.push(r.sentId);
        const got = okText(r);
        assert.equal(got.length, texts[name].length, `${name}: the result's length`);
        assert.ok(got === texts[name], `${name}: the result differs from what the server sent, first at ${[...got].findIndex((c, i) => c !== texts[name][i])}`);
        assert.doesNotMatch(r.raw, /SMUGGLED|garbage after/);
        // The connection that carried it had bytes nobody asked for behind the reply: sluice
        // closes it and sends nothing more on it.
        const q = up.calls(name)[0];
        await up.waitFor(() => q.conn.closed, scaled(3000), `sluice to close the connection that carried ${name}`);
        const next = await call(s, 'echo', { after: name });
        assert.equal(okText(next), JSON.stringify({ after: name }), `the call after ${name} gets its own answer, not the forgery`);
        const later = up.requests.filter((x) => x.connId === q.connId && x.seq > q.seq);
        assert.deepEqual(later.map((x) => x.text.slice(0, 100)), [], `nothing more was sent on the connection that ${name} ended`);
      }
      for (const name of ['one_write', 'tail_stopped', 'all_stopped']) assert.equal(up.calls(name).length, 1, `${name}: POSTed once`);
      await sleep(100);
      assert.ok(!s.lines.some((l) => /SMUGGLED/.test(l.raw)), 'the forged response reached the client');
      assertNoMoreFor(s, sent);
    });
  }
});

describe('bytes a server sends on an idle pooled connection later', suiteOptions(), () => {
  // A reply, then 150 ms later a second response nobody asked for, on the same connection while
  // it waits in the pool: sluice drops the connection, so the next call cannot take those bytes
  // for its reply. (Bytes right behind a body are caught by read_direct's peek; these come after
  // the exchange ended, so only conn_read's idle branch sees them.)
  test('the connection is dropped and the next call gets its own answer', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(defer, { era: 'modern' });
    const s = await startSluice(defer, up.url());
    up.tool('late', async (req, res, msg) => {
      const { head, body } = jsonReply(up, msg, 'on time');
      await res.write(Buffer.concat([head, body]));
      const timer = setTimeout(() => res.write(forgedResponse(up, msg)).catch(() => {}), 150);
      defer(() => clearTimeout(timer));
    });
    await ready(up, s);
    const r = await call(s, 'late', {}, scaled(15000));
    assert.equal(okText(r), 'on time');
    const q = up.calls('late')[0];
    await up.waitFor(() => q.conn.closed, scaled(3000), 'sluice to close the idle connection that got bytes nobody asked for');
    const next = await call(s, 'echo', { after: 'late' });
    assert.equal(okText(next), JSON.stringify({ after: 'late' }), 'the call after gets its own answer, not the forgery');
    const later = up.requests.filter((x) => x.connId === q.connId && x.seq > q.seq);
    assert.deepEqual(later.map((x) => x.text.slice(0, 100)), [], 'nothing more was sent on the connection that got them');
    await sleep(100);
    assert.ok(!s.lines.some((l) => /SMUGGLED/.test(l.raw)), 'the forged response reached the client');
    assertNoMoreFor(s, [r.sentId, next.sentId]);
  });
});

// ===== a body in many writes =====

describe('a large JSON body in many writes with pauses (recv() meets EAGAIN in mid-body)', suiteOptions(), () => {
  test('bodies from just over 64 KiB to 3 MiB, split at awkward sizes, arrive byte for byte; the connection stays in the pool', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(defer, { era: 'modern' });
    const s = await startSluice(defer, up.url());
    const shapes = {
      // The head alone, a pause, then the body in odd pieces: 1-byte writes where the body left
      // crosses 64 KiB (read_direct's threshold) and pieces of 64 KiB + 1.
      head_alone: {
        text: bigText(MIB, 'head'),
        write: async (res, head, body) => {
          await res.write(head);
          await sleep(40);
          const a = body.length - DIRECT_MIN - 8;
          await res.write([...splitBytes(body.subarray(0, a), [40000, 1, 4095, DIRECT_MIN + 1, 3, 777]), ...splitBytes(body.subarray(a, a + 16), [1]), ...splitBytes(body.subarray(a + 16), [9000])], 3);
        },
      },
      // The head and 10 bytes of the body in one write, then 37 KiB pieces 5 ms apart.
      head_and_ten: {
        text: bigText(MIB + 1, 'ten'),
        write: async (res, head, body) => {
          await res.write([Buffer.concat([head, body.subarray(0, 10)]), ...splitBytes(body.subarray(10), [37 * 1024])], 5);
        },
      },
      // Just over the threshold: the body left after the first read is barely more than 64 KiB.
      just_over: {
        text: bigText(DIRECT_MIN + 5000, 'over'),
        write: async (res, head, body) => {
          await res.write([Buffer.concat([head, body.subarray(0, 100)]), ...splitBytes(body.subarray(100), [5000, 1, 20000])], 10);
        },
      },
      // 3 MiB in 256 KiB writes, 20 ms apart.
      three_mib: {
        text: bigText(3 * MIB, 'three'),
        write: async (res, head, body) => {
          await res.write([head, ...splitBytes(body, [256 * 1024])], 20);
        },
      },
    };
    for (const [name, shape] of Object.entries(shapes)) {
      up.tool(name, async (req, res, msg) => {
        const { head, body } = jsonReply(up, msg, shape.text);
        await shape.write(res, head, body);
      });
    }
    await ready(up, s);
    for (const [name, shape] of Object.entries(shapes)) {
      const r = await call(s, name, {}, scaled(20000));
      const got = okText(r);
      assert.equal(got.length, shape.text.length, `${name}: the result's length`);
      assert.ok(got === shape.text, `${name}: the result differs from what the server sent, first at ${[...got].findIndex((c, i) => c !== shape.text[i])}`);
      // A reply read exactly to its end leaves the connection clean: kept, and the next call
      // needs no new connection.
      // Connections are told apart by the requests they carried: sluice's liveness probe (a
      // bare connect when the server said nothing for a second, as a slow 3 MiB body can make
      // it) opens one that carries none.
      const q = up.calls(name)[0];
      const carried = new Set(up.requests.map((x) => x.connId));
      assert.equal(okText(await call(s, 'echo', { after: name })), JSON.stringify({ after: name }));
      assert.equal(q.conn.closed, false, `${name}: sluice closed a connection whose reply ended cleanly`);
      const after = up.requests.filter((x) => x.text.includes(`"after":"${name}"`));
      assert.equal(after.length, 1, `${name}: the call after it reached the server once`);
      assert.ok(carried.has(after[0].connId), `${name}: a new connection for the call after it`);
      assert.equal(up.calls(name).length, 1, `${name}: POSTed once`);
    }
  });
});

// ===== a body cut short =====

describe('a large JSON body the server cuts short fails the call at once, never with a truncated result', suiteOptions(), () => {
  test('FIN or RST in mid-body, with or without pauses, and an end that reaches read_direct itself: one error each, the next call works', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(defer, { era: 'modern' });
    // A long read timeout: an error that comes in seconds comes from the end of the connection.
    const s = await startSluice(defer, up.url(), ['--upstream-timeout', '30']);
    const announced = (msg) => jsonReply(up, msg, bigText(MIB, 'cut'));
    const shapes = {
      // 300 KiB of a 1 MiB body, then FIN.
      fin_at_once: async (req, res, msg) => {
        const { head, body } = announced(msg);
        await res.write(Buffer.concat([head, body.subarray(0, 300 * 1024)]));
        await res.end();
      },
      // Pieces with pauses (sluice waits in mid-body), then FIN.
      fin_after_pauses: async (req, res, msg) => {
        const { head, body } = announced(msg);
        await res.write([head, ...splitBytes(body.subarray(0, 400 * 1024), [50 * 1024])], 20);
        await sleep(100);
        await res.end();
      },
      // All but the last byte, then FIN: the shortest cut.
      fin_one_short: async (req, res, msg) => {
        const { head, body } = announced(msg);
        await res.write([head, body.subarray(0, 200 * 1024), body.subarray(200 * 1024, body.length - 1)], 30);
        await res.end();
      },
      // The head, 30 KiB and the FIN all in sluice's socket before it reads: read_direct itself
      // meets the end (recv() returns 0).
      fin_stopped: async (req, res, msg) => {
        const { head, body } = announced(msg);
        await whileStopped(s, async () => {
          await res.write(Buffer.concat([head, body.subarray(0, 30 * 1024)]));
          await res.end();
        });
      },
      // The same after sluice has read part of the body and waits for more.
      fin_stopped_later: async (req, res, msg) => {
        const { head, body } = announced(msg);
        await res.write(Buffer.concat([head, body.subarray(0, 200 * 1024)]));
        await sleep(150);
        await whileStopped(s, async () => {
          await res.write(body.subarray(200 * 1024, 230 * 1024));
          await res.end();
        });
      },
      // A reset in mid-body.
      rst: async (req, res, msg) => {
        const { head, body } = announced(msg);
        await res.write(Buffer.concat([head, body.subarray(0, 500 * 1024)]));
        await sleep(50);
        res.sock.resetAndDestroy();
      },
    };
    for (const [name, fn] of Object.entries(shapes)) up.tool(name, fn);
    await ready(up, s);
    const sent = [];
    for (const name of Object.keys(shapes)) {
      const t0 = Date.now();
      const r = await call(s, name, {}, scaled(8000));
      const took = Date.now() - t0;
      sent.push(r.sentId);
      assertError(r, name === 'rst' ? /mid-reply|reset|connection/ : /closed the connection in mid-reply/);
      assert.doesNotMatch(r.raw, /cut:0/, `${name}: part of the body reached the client`);
      assert.ok(took < scaled(5000), `${name}: the error took ${took} ms (the read timeout is 30 s: the end was not seen)`);
      const next = await call(s, 'echo', { after: name });
      assert.equal(okText(next), JSON.stringify({ after: name }), `the call after ${name}`);
    }
    await sleep(200);
    for (const name of Object.keys(shapes)) assert.equal(up.calls(name).length, 1, `${name}: POSTed exactly once, never retried`);
    assertNoMoreFor(s, sent);
  });
});

// ===== a waiting POST and stray bytes =====

describe('a POST waiting for a pooled connection', suiteOptions(), () => {
  // With a reply read by recv() exactly to its end, the bytes behind it are still in the socket
  // when the exchange ends. Were the connection kept (its input is empty), dispatch_waiting
  // would hand it at once to a POST waiting because all 64 pooled connections are busy, and the
  // stray bytes would be read as that POST's reply. read_direct peeks and drops it instead.
  test('is not given the connection of a large reply that had bytes behind it (64 connections busy)', async (t) => {
    const defer = cleanups(t);
    const up = await startUpstream(defer, { era: 'modern' });
    const s = await startSluice(defer, up.url());
    let release;
    let markSent;
    const victimSent = new Promise((resolve) => { markSent = resolve; });
    const released = new Promise((resolve) => { release = resolve; });
    defer(() => { release(); markSent(); });
    up.tool('hold', async (req, res, msg) => {
      await released; // at the latest when the test ends (a pending promise holds no timer)
      await res.json(200, up.textResult(msg, 'held'));
    });
    up.tool('big', async (req, res, msg) => {
      // Answered once the victim waits in sluice's queue (it was sent after big: its id is next).
      await victimSent;
      await sleep(300);
      const { head, body } = jsonReply(up, msg, bigText(MIB, 'big'));
      await res.write(Buffer.concat([head, body, forgedResponse(up, msg)]));
    });
    await ready(up, s);
    for (let i = 0; i < 63; i++) s.send(toolCall(`hold-${i}`, 'hold', { i }));
    await up.waitFor(() => up.calls('hold').length === 63, scaled(5000), '63 held calls');
    s.send(toolCall('big', 'big', {}));
    await up.waitFor(() => up.calls('big').length === 1, scaled(5000), 'the big call');
    const victim = s.request(toolCall('victim', 'echo', { victim: 1 }), scaled(10000));
    markSent();
    const big = await s.responseTo('big', scaled(10000));
    assert.equal(okText(big).length, MIB);
    const v = await victim;
    release();
    assert.equal(okText(v), JSON.stringify({ victim: 1 }), 'the waiting call got the bytes sent behind the large reply');
    const vq = up.calls('echo').find((q) => q.json.params.arguments.victim === 1);
    assert.notEqual(vq.connId, up.calls('big')[0].connId, 'the waiting call was sent on the connection that had stray bytes');
  });
});
