// canon.test.mjs: sluice's RFC 8785 canonicalizer (proxy/canon.c) against the reference
// implementation, the canonicalize package (by the RFC's author), on generated JSON texts.
//
// For every text t, sluice's json_parse + canon_write (tests/differential/canon_driver) must give
// exactly the bytes of canonicalize(JSON.parse(t)). The texts are valid JSON inside sluice's
// limits (no duplicate keys, no NUL in keys, no lone surrogates, depth and sizes bounded), so
// there is no exception to allow: every difference fails. Numbers are written in many spellings
// of the same double (1e+21, 1E21, 1.0e21, 1000000000000000000000.000) and strings with mixed
// escapes, so normalizing them is tested too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Rng, SEED, SCALE, genDouble, numberText, genString, genKey, genText, stringText, valueText,
  genValue, runDriver, loadCanonicalize, stricterReasons,
} from './lib.mjs';

const canonicalize = await loadCanonicalize();

// Compares sluice with the reference on texts; fails listing the first differences.
function compare(name, texts) {
  const inputs = texts.map((t) => Buffer.from(t, 'utf8'));
  const got = runDriver(inputs);
  const bad = [];
  for (let i = 0; i < texts.length; i++) {
    const reasons = stricterReasons(texts[i], inputs[i].length);
    assert.equal(reasons.size, 0, `generator made a text sluice refuses on purpose (${[...reasons]})`);
    const want = Buffer.from(canonicalize(JSON.parse(texts[i])), 'utf8');
    const g = got[i];
    if (g.kind !== 'OK' || !g.text.equals(want)) {
      bad.push(`#${i} input ${JSON.stringify(texts[i]).slice(0, 300)}\n   want ${want.toString('utf8').slice(0, 300)}\n   got  ${g.kind} ${g.text.toString('utf8').slice(0, 300)}`);
    }
  }
  console.log(`${name}: ${texts.length} texts compared, ${bad.length} differ (seed ${SEED})`);
  assert.equal(bad.length, 0, `${bad.length} of ${texts.length} differ from canonicalize (DIFF_SEED=${SEED}):\n${bad.slice(0, 20).join('\n')}`);
  return texts.length;
}

test('numbers across the whole double range', () => {
  const r = new Rng(SEED ^ 0x1001);
  const texts = [];
  for (let i = 0; i < 6000 * SCALE; i++) {
    const d = genDouble(r);
    texts.push(numberText(r, d));
  }
  // Every power of two, and both neighbours of each: the lopsided intervals where the shortest
  // decimal is not the nearest one.
  for (let e = -1074; e <= 1023; e++) {
    const p = 2 ** e;
    texts.push(String(p), String(-p));
  }
  // Integers beyond 2^53 as integer text: read as the nearest double, as JSON.parse does.
  for (const t of ['9007199254740993', '9007199254740992', '-9007199254740993', '18446744073709551615',
    '123456789012345678901234567890', '100000000000000000000', '1000000000000000000000',
    '999999999999999999999', '0.000001', '0.0000001', '1e-7', '-0', '-0.0', '-0e-5', '0e400',
    '1e-400', '-1e-400', '4.9406564584124654e-324', '2.4703282292062328e-324', '2.4703282292062327e-324',
    '1.7976931348623157e308', '1.7976931348623158e308', '5e-324', '0.1', '0.2', '0.30000000000000004']) {
    texts.push(t);
  }
  compare('numbers', texts);
});

test('strings: astral characters, escapes, control characters, lone BMP characters', () => {
  const r = new Rng(SEED ^ 0x2002);
  const texts = [];
  for (let i = 0; i < 3000 * SCALE; i++) texts.push(stringText(r, genString(r)));
  for (let cp = 0; cp < 0x80; cp++) texts.push(stringText(r, String.fromCodePoint(cp)));
  for (const cp of [0x7f, 0x80, 0x9f, 0xa0, 0x2028, 0x2029, 0xd7ff, 0xe000, 0xfeff, 0xfffe, 0xffff,
    0x10000, 0x1f600, 0x10ffff]) {
    texts.push(JSON.stringify(String.fromCodePoint(cp)));
    const hex = [...String.fromCodePoint(cp)].length && String.fromCodePoint(cp).split('')
      .map((u) => '\\u' + u.charCodeAt(0).toString(16).padStart(4, '0')).join('');
    texts.push(`"${hex}"`);
  }
  compare('strings', texts);
});

test('object keys that sort differently by UTF-16 code unit and by code point', () => {
  const r = new Rng(SEED ^ 0x3003);
  const texts = [];
  for (let i = 0; i < 2000 * SCALE; i++) {
    const keys = new Set();
    for (let n = r.range(2, 8); n > 0; n--) keys.add(genKey(r).replace(/\0/g, ''));
    const m = new Map([...keys].map((k) => [k, r.int(3) === 0 ? genValue(r, 1, 3) : { num: String(r.int(1000)) }]));
    texts.push(valueText(r, m));
  }
  texts.push('{"\\uFFFF":1,"\\ud83d\\ude00":2}', '{"\u{1F600}":1,"\uFFFF":2,"\uE000":3,"\u{10000}":4}',
    '{"\uFB33":1,"\u{1F602}":2}', '{"a\u{1F600}":1,"a\uFFFF":2,"a":3,"":4}');
  compare('keys', texts);
});

test('nested documents', () => {
  const r = new Rng(SEED ^ 0x4004);
  const texts = [];
  for (let i = 0; i < 2000 * SCALE; i++) texts.push(genText(r, r.range(1, 8)));
  // Deep but within SL_MAX_DEPTH (64 containers).
  texts.push('['.repeat(64) + ']'.repeat(64), '{"a":'.repeat(63) + '[1.0]' + '}'.repeat(63));
  compare('documents', texts);
});
