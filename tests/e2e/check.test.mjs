// check.test.mjs: `sluice check --policy FILE` on good and bad policies. Each file under
// policies/bad/ starts with "# expect: LINE:COL" (alternatives separated by "|", or "any") naming
// where the offending node is.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { POLICIES, runSluice, suiteOptions, tmpDir, writePolicy } from './lib.mjs';

const GOOD = fs.readdirSync(POLICIES).filter((f) => f.endsWith('.yaml')).sort();
const BAD_DIR = path.join(POLICIES, 'bad');
const BAD = fs.readdirSync(BAD_DIR).filter((f) => f.endsWith('.yaml')).sort();

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function check(file) {
  const r = runSluice(['check', '--policy', file]);
  return { ...r, out: `${r.stdout}${r.stderr}` };
}

describe('sluice check', suiteOptions(), () => {
  for (const f of GOOD) {
    test(`good: ${f}`, () => {
      const r = check(path.join(POLICIES, f));
      assert.equal(r.status, 0, `exit ${r.status}; output:\n${r.out}`);
    });
  }

  for (const f of BAD) {
    test(`bad: ${f}`, () => {
      const file = path.join(BAD_DIR, f);
      const expect = /^# expect: (.+)$/m.exec(fs.readFileSync(file, 'utf8'))[1].trim();
      const r = check(file);
      assert.equal(r.status, 1, `exit ${r.status}; output:\n${r.out}`);
      const m = new RegExp(`^${escapeRe(file)}:(\\d+):(\\d+): (.+)$`, 'm').exec(r.out);
      assert.ok(m, `expected "${file}:line:col: message", got:\n${r.out}`);
      const at = `${m[1]}:${m[2]}`;
      if (expect !== 'any') {
        assert.ok(expect.split('|').includes(at), `error at ${at}, expected ${expect}: ${m[0]}`);
      } else {
        assert.ok(Number(m[1]) >= 1 && Number(m[2]) >= 1, m[0]);
      }
      assert.ok(m[3].trim().length > 0, 'a message after the location');
    });
  }

  test('the message names the unknown key and the bad value', () => {
    const r1 = check(path.join(BAD_DIR, 'unknown_tool_key.yaml'));
    assert.match(r1.out, /acton/);
    const r2 = check(path.join(BAD_DIR, 'bad_action.yaml'));
    assert.match(r2.out, /maybe|action/);
  });

  test('a back-reference is refused, naming the field and where it is', () => {
    const r = check(path.join(BAD_DIR, 'regex_backref.yaml'));
    assert.match(r.out, /:7:21: tools\.echo\.args\.text\.regex "\(\.\*\)\\\\1" does not compile \(at character 5\): a back-reference \(\\1\)/);
  });

  test('glob syntax the matcher lacks is refused, saying what to write instead', () => {
    const r1 = check(path.join(BAD_DIR, 'glob_braces.yaml'));
    assert.match(r1.out, /:7:37: tools\.echo\.args\.text\.deny_glob pattern "\*\*\/\*\.\{pem,key\}": braces are not alternatives here \(character 6\): write one pattern per entry/);
    const r2 = check(path.join(BAD_DIR, 'glob_tilde.yaml'));
    assert.match(r2.out, /:7:26: .*"~\/\.aws\/\*\*": ~ is not the home directory \(character 1\): write the absolute path/);
  });

  test('a tool name no server has is refused: names are matched exactly', () => {
    const r1 = check(path.join(BAD_DIR, 'tool_name_glob.yaml'));
    assert.match(r1.out, /:4:3: tool name "delete_\*" has '\*' \(a glob character\) at character 8: tool names are matched exactly/);
    const r2 = check(path.join(BAD_DIR, 'tool_name_zero_width.yaml'));
    assert.match(r2.out, /:4:3: tool name "delete\\xe2\\x80\\x8bfile" has U\+200B \(an invisible or format character\) at character 7/);
  });

  test('a relative path is reported as given', (t) => {
    const dir = tmpDir(t);
    writePolicy(dir, 'version: 1\nbogus: 1\n', 'rel.yaml');
    const r = runSluice(['check', '--policy', 'rel.yaml'], { cwd: dir });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(`${r.stdout}${r.stderr}`, /^rel\.yaml:2:1: /m);
  });

  test('a file that does not exist: exit 1 and a message naming it', (t) => {
    const dir = tmpDir(t);
    const file = path.join(dir, 'missing.yaml');
    const r = check(file);
    assert.equal(r.status, 1, r.out);
    assert.ok(r.out.includes(file), r.out);
  });

  test('an empty file: exit 1', (t) => {
    const dir = tmpDir(t);
    const r = check(writePolicy(dir, ''));
    assert.equal(r.status, 1, r.out);
  });

  test('a file with a NUL byte: exit 1', (t) => {
    const dir = tmpDir(t);
    const r = check(writePolicy(dir, 'version: 1\ntools:\n  ec\u0000ho:\n    action: allow\n'));
    assert.equal(r.status, 1, r.out);
  });

  test('a policy over 1 MiB: exit 1', (t) => {
    const dir = tmpDir(t);
    const r = check(writePolicy(dir, `version: 1\n# ${'x'.repeat(1 << 20)}\n`));
    assert.equal(r.status, 1, r.out);
  });

  test('deeply nested YAML does not crash the checker', (t) => {
    const dir = tmpDir(t);
    const r = check(writePolicy(dir, `version: 1\ntools: ${'['.repeat(5000)}${']'.repeat(5000)}\n`));
    assert.equal(r.status, 1, r.out);
  });

  test('4096 tools is accepted, 4097 is refused', (t) => {
    const dir = tmpDir(t);
    const body = (n) => `version: 1\ntools:\n${Array.from({ length: n }, (_, i) => `  t${i}:\n    action: confirm\n`).join('')}`;
    assert.equal(check(writePolicy(dir, body(4096), 'ok.yaml')).status, 0);
    assert.equal(check(writePolicy(dir, body(4097), 'over.yaml')).status, 1);
  });

  test('check without --policy: non-zero exit', () => {
    const r = runSluice(['check']);
    assert.notEqual(r.status, 0);
  });
});

describe('sluice check on names that read as one', suiteOptions(), () => {
  test('exit 0, a warning naming both tools and their lines', (t) => {
    const file = writePolicy(tmpDir(t), 'version: 1\ntools:\n  delete_file: { action: confirm }\n  echo: { action: allow }\n  Delete-File: { action: allow }\n');
    const r = check(file);
    assert.equal(r.status, 0, r.out);
    assert.ok(r.out.includes(`warning: ${file}:5:3: tools.Delete-File reads as tools.delete_file (line 3)`), r.out);
    assert.equal(r.out.match(/reads as/g).length, 1, r.out);
  });
});
