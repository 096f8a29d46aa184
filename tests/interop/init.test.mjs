// init.test.mjs: `sluice init` round-trips through `sluice check` for the official reference
// servers (@modelcontextprotocol/server-filesystem, server-memory, server-everything, at the
// versions package.json pins): the output loads unchanged, `check --against` the same server
// (strict too) finds nothing, the actions follow the annotations, and sluice serving that policy
// lists every tool (each live definition matches the pin init wrote) and runs a read tool.
//
// Setup: bash tests/interop/install.sh. Without node_modules the test is skipped, except under
// CI=true, where it fails.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  LEGACY, legacyCall, legacyRequest, runSluice, startSluice, tmpDir, writePolicy,
} from '../e2e/lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules', '@modelcontextprotocol');
const SLUICE_BIN = path.resolve(process.env.SLUICE_BIN || path.join(HERE, '../../build/proxy/sluice'));

const SERVERS = [
  {
    pkg: 'server-filesystem',
    args: (dir) => [dir],
    allow: 'read_text_file', confirm: 'create_directory', irreversible: 'write_file',
    read: (dir) => ['list_allowed_directories', {}, (text) => text.includes(dir)],
  },
  {
    pkg: 'server-memory',
    args: () => [],
    allow: 'read_graph', confirm: 'create_entities', irreversible: 'delete_entities',
    read: () => ['read_graph', {}, (text) => text.includes('entities')],
  },
  {
    pkg: 'server-everything',
    args: () => ['stdio'],
    allow: 'echo', confirm: null, irreversible: null,
    read: () => ['echo', { message: 'pinned hello' }, (text) => text.includes('pinned hello')],
  },
];

function skipReason() {
  const missing = SERVERS.filter((s) => !fs.existsSync(path.join(MODULES, s.pkg, 'package.json')));
  if (missing.length === 0 && fs.existsSync(SLUICE_BIN)) return null;
  if (process.env.CI === 'true') return null; // fail below, loudly
  return missing.length ? `interop node_modules missing (${missing.map((s) => s.pkg)}): run bash ${HERE}/install.sh`
    : `sluice binary not found at ${SLUICE_BIN}`;
}

/** The entry init wrote for tool: its lines up to the next tool. */
function entry(policy, tool) {
  const m = new RegExp(`^ {2}${tool.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\n((?: {4}.*\\n)+)`, 'm').exec(policy);
  assert.ok(m, `no entry for ${tool} in:\n${policy}`);
  return m[1];
}

describe('sluice init round-trips through check', { skip: skipReason() ?? false, timeout: 300000 }, () => {
  for (const srv of SERVERS) {
    test(srv.pkg, async (t) => {
      const dir = tmpDir(t);
      const root = path.join(dir, 'root');
      fs.mkdirSync(root);
      const pkg = JSON.parse(fs.readFileSync(path.join(MODULES, srv.pkg, 'package.json'), 'utf8'));
      const bin = path.join(MODULES, srv.pkg, typeof pkg.bin === 'string' ? pkg.bin : Object.values(pkg.bin)[0]);
      const upstream = [process.execPath, bin, ...srv.args(root)];
      const env = { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') };
      const init = runSluice(['init', '--', ...upstream], { timeout: 60000, env });
      assert.equal(init.status, 0, init.stderr);
      const policy = writePolicy(dir, init.stdout, 'init.yaml');

      const ok = runSluice(['check', '--policy', policy], { env });
      assert.equal(ok.status, 0, ok.stdout + ok.stderr);
      const pins = runSluice(['pin', '--', ...upstream], { timeout: 60000, env });
      const names = [...pins.stdout.matchAll(/^(\S+):$/gm)].map((m) => m[1]);
      assert.ok(names.length >= 3, pins.stdout);
      assert.match(ok.stdout, new RegExp(`ok \\(${names.length} tools named\\)`));
      for (const strict of [[], ['--strict']]) {
        const c = runSluice(['check', '--policy', policy, ...strict, '--against', '--', ...upstream], { timeout: 60000, env });
        assert.equal(c.status, 0, c.stdout + c.stderr);
        assert.match(c.stdout, /: 0 errors, 0 warnings/);
      }
      // the actions follow the annotations; every tool carries init's pin, as `sluice pin` says
      assert.match(entry(init.stdout, srv.allow), /action: allow .*readOnlyHint/);
      if (srv.confirm) assert.match(entry(init.stdout, srv.confirm), /^ {4}action: confirm\n {4}pin:/);
      if (srv.irreversible) assert.match(entry(init.stdout, srv.irreversible), /action: confirm .*\n {4}irreversible: true\n/);
      for (const m of pins.stdout.matchAll(/^(\S+):\n {2}pin: (sha256:[0-9a-f]{64})$/gm)) {
        assert.match(entry(init.stdout, m[1]), new RegExp(`pin: ${m[2]}\\n`));
      }

      // serving it: every tool listed (live definitions match the pins), a read tool runs
      const s = startSluice(t, { policy, dir, upstream, env });
      // the first answer waits for the server's start (server-everything takes a few seconds)
      const hello = await s.request(legacyRequest('init', 'initialize', { protocolVersion: LEGACY,
        capabilities: {}, clientInfo: { name: 'sluice-interop', version: '1.0.0' } }), 30000);
      assert.ok(hello.result, hello.raw);
      s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const list = await s.request(legacyRequest('l', 'tools/list', {}), 30000);
      assert.deepEqual(list.result.tools.map((x) => x.name).sort(), [...names].sort(), list.raw);
      const [tool, args, check] = srv.read(root);
      const r = await s.request(legacyCall('r', tool, args), 30000);
      assert.ok(r.result && !r.result.isError, r.raw);
      assert.ok(check(r.result.content.map((c) => c.text).join('\n')), r.raw);
      assert.doesNotMatch(s.stderr, /pin: tool/);
    });
  }
});
