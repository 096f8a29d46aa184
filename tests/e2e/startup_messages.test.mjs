// startup_messages.test.mjs: what sluice says at start and from `sluice probe`, in words a person
// can act on: a confirm_ttl longer than the 60 s after which MCP SDK 1.x clients give up is
// warned about (and a short one is not), and a probe of a port nobody listens on says
// "connection refused".
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { runSluiceAsync, startSluice, suiteOptions, tmpDir } from './lib.mjs';

function closedPort() {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function policy(dir, ttl) {
  const f = path.join(dir, `ttl${ttl}.yaml`);
  fs.writeFileSync(f, `version: 1\ndefaults:\n  action: allow\n  confirm_ttl: ${ttl}\ntools:\n  write_file:\n    action: confirm\n`);
  return f;
}

describe('start-up and probe messages', suiteOptions(), () => {
  test('sluice probe of a closed port: "connection refused", exit 1', async () => {
    const port = await closedPort();
    const r = await runSluiceAsync(['probe', `http://127.0.0.1:${port}/healthz`]);
    assert.equal(r.status, 1, JSON.stringify(r));
    assert.match(r.stdout, /connection refused/, r.stdout);
  });

  test('confirm_ttl over 60 s is warned about at start; 30 s is not', async (t) => {
    const dir = tmpDir(t);
    const long = startSluice(t, { policy: policy(dir, 120), dir, tag: 'long' });
    await long.sync();
    assert.match(long.stderr, /confirm_ttl is 120 s; clients built on the MCP SDK 1\.x/, long.stderr);
    const short = startSluice(t, { policy: policy(dir, 30), dir, tag: 'short' });
    await short.sync();
    assert.doesNotMatch(short.stderr, /confirm_ttl is/, short.stderr);
  });

  // strtoull takes "-1" as the largest number: the budget would have no bound.
  test('SLUICE_MEMORY_STORE_BYTES that is not a positive number is warned about; a number is taken', async (t) => {
    const dir = tmpDir(t);
    for (const v of ['-1', '99999999999999999999999', '0', '12k']) {
      const s = startSluice(t, { policy: policy(dir, 30), dir, tag: `bytes${v}`, env: { SLUICE_MEMORY_STORE_BYTES: v } });
      await s.sync();
      assert.match(s.stderr, /SLUICE_MEMORY_STORE_BYTES is not a positive number of bytes: using 64 MiB/, `${v}: ${s.stderr}`);
    }
    const ok = startSluice(t, { policy: policy(dir, 30), dir, tag: 'bytesok', env: { SLUICE_MEMORY_STORE_BYTES: '300000' } });
    await ok.sync();
    assert.doesNotMatch(ok.stderr, /SLUICE_MEMORY_STORE_BYTES/, ok.stderr);
  });
});
