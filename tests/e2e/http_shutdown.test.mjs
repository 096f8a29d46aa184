// http_shutdown.test.mjs: SIGTERM with clients still connected, in front of an HTTP upstream. A
// drain ends the legacy GET streams and closes idle keep-alive connections; such a connection is
// closed later, by the reaper, and with an HTTP upstream (nothing to wait for) the process may
// exit first. Freeing the front must then free each connection once: the conformance test found
// a use-after-free under ASan there (front_http_free freed every connection, then walked the
// reaper's list of the closed ones).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { SluiceProc, policyPath, sluiceCommand, suiteOptions } from './lib.mjs';
import { LegacyHttpSession, keepAliveAgent, waitLog, waitForPort, waitReady } from './http_lib.mjs';
import { RawUpstream } from './raw_http_upstream.mjs';

const GATE = policyPath('gate.yaml');

describe('HTTP: SIGTERM with clients connected', suiteOptions(), () => {
  test('an HTTP upstream, open GET streams and keep-alive connections: exit 0, no sanitizer report', async (t) => {
    const up = new RawUpstream({ era: 'legacy' });
    await up.listen(0);
    t.after(() => up.close());
    const args = ['--policy', GATE, '--listen', '127.0.0.1:0', '--drain-grace', '1', '--upstream', `http://127.0.0.1:${up.port}/mcp`];
    const cmd = sluiceCommand(args);
    const env = { ...process.env };
    delete env.SLUICE_STATE_KEY;
    const s = new SluiceProc(spawn(cmd.file, cmd.args, { stdio: ['pipe', 'pipe', 'pipe'], env }), { args, memcheck: cmd.memcheck });
    t.after(() => s.kill());
    s.port = await waitForPort(s);
    s.target = { port: s.port };
    await waitReady(s.target, 15000, s);
    for (let i = 0; i < 3; i++) {
      const sess = new LegacyHttpSession(s.target, { agent: keepAliveAgent(t, s.target) });
      await sess.initialize();
      const g = await sess.openStream();
      assert.equal(g.status, 200, g.text);
    }
    s.proc.kill('SIGTERM');
    await waitLog(s, /draining/, 3000);
    const { code, signal } = await s.waitExit(10000);
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${s.stderr.slice(-3000)}`);
    s.assertClean(); // no sanitizer report (under ASan)
  });
});
