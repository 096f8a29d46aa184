// inspector.test.mjs: MCP Inspector's own CLI (@modelcontextprotocol/inspector-cli) launching
// sluice around a real server (server-filesystem). The Inspector strips the "--" of
// `sluice --policy p.yaml -- node srv.js` (its argument parser takes the first "--" as its own),
// so this passes only if sluice follows the wrapper convention of env(1): the first argument that
// is not an option starts the upstream command (issue 21). Assertions are on the file system.
//
// The Inspector CLI 1.0.3 reads its own package.json through a path it tests relative to the
// working directory, so it is run from its build directory.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules', '@modelcontextprotocol');
const INSPECTOR_DIR = path.join(MODULES, 'inspector-cli', 'build');
const INSPECTOR = path.join(INSPECTOR_DIR, 'cli.js');
const FS_SERVER = path.join(MODULES, 'server-filesystem', 'dist', 'index.js');
const SLUICE_BIN = path.resolve(process.env.SLUICE_BIN || path.join(HERE, '../../build/proxy/sluice'));

function skipReason() {
  if (fs.existsSync(INSPECTOR) && fs.existsSync(FS_SERVER) && fs.existsSync(SLUICE_BIN)) return null;
  if (process.env.CI === 'true') return null; // fail below, loudly
  return `needs ${INSPECTOR}, ${FS_SERVER} and ${SLUICE_BIN} (bash tests/interop/install.sh; build sluice)`;
}

function setup(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-inspector-')));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const policy = path.join(dir, 'policy.yaml');
  fs.writeFileSync(policy, 'version: 1\ndefaults:\n  action: deny\ntools:\n  list_allowed_directories:\n    action: allow\n  create_directory:\n    action: allow\n  write_file:\n    action: confirm\n');
  return { dir, root, policy };
}

/** `mcp-inspector-cli --cli sluice --policy P -- node FS_SERVER ROOT ...inspectorArgs`, the way a
 * person types it from the Inspector's README; returns the parsed JSON it prints. */
function inspect(env, inspectorArgs) {
  assert.ok(fs.existsSync(INSPECTOR), `the Inspector CLI is not installed: ${INSPECTOR}`);
  const pin = JSON.parse(fs.readFileSync(path.join(MODULES, 'inspector-cli', 'package.json'), 'utf8')).version;
  assert.equal(pin, '1.0.3', 'the pinned @modelcontextprotocol/inspector-cli version');
  const args = [INSPECTOR, '--cli', SLUICE_BIN, '--policy', env.policy, '--', process.execPath, FS_SERVER, env.root,
    ...inspectorArgs];
  const r = spawnSync(process.execPath, args, { cwd: INSPECTOR_DIR, encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, `inspector exit ${r.status} ${r.signal ?? ''}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  const start = r.stdout.indexOf('{');
  assert.ok(start >= 0, `no JSON from the inspector:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout.slice(start));
}

test('Inspector CLI lists the real server\'s tools through sluice', { timeout: 120000, skip: skipReason() ?? false }, (t) => {
  const env = setup(t);
  const out = inspect(env, ['--method', 'tools/list']);
  const names = out.tools.map((x) => x.name);
  // server-filesystem's tools, not the built-in demo's (which would mean the command was lost)
  assert.ok(names.includes('create_directory') && names.includes('move_file'), names.join(','));
});

test('Inspector CLI: an allowed call runs upstream, a confirm call is not run', { timeout: 120000, skip: skipReason() ?? false }, (t) => {
  const env = setup(t);
  const made = path.join(env.root, 'made');
  const ok = inspect(env, ['--method', 'tools/call', '--tool-name', 'create_directory', '--tool-arg', `path=${made}`]);
  assert.ok(!ok.isError, JSON.stringify(ok));
  assert.ok(fs.statSync(made).isDirectory(), 'create_directory ran on the real server');
  const file = path.join(env.root, 'f.txt');
  const held = inspect(env, ['--method', 'tools/call', '--tool-name', 'write_file', '--tool-arg', `path=${file}`, 'content=x']);
  assert.equal(held.isError, true, JSON.stringify(held));
  assert.match(held.content[0].text, /cannot ask\. The call was not run/);
  assert.equal(fs.existsSync(file), false, 'write_file must not have run');
});
