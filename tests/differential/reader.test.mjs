// reader.test.mjs: sluice's JSON reader (json_parse in proxy/jsonrpc.c) against Node's JSON.parse
// on valid texts, generated malformed ones and the edge cases of RFC 8259.
//
// Accept/reject must agree, except where sluice is stricter on purpose (proxy/jsonrpc.h,
// proxy/base.h). Those exceptions are decided here without sluice's code (lib.mjs
// stricterReasons) and each one must come with sluice's own message for it:
//   invalid-utf8    the bytes are not UTF-8 (RFC 3629; JSON.parse never sees bytes)
//   lone-surrogate  a \uD800-style escape without its pair       "surrogate"
//   duplicate-key   two equal keys in one object                 "duplicate key"
//   nul-in-key      U+0000 in a key                              "NUL in an object key"
//   depth           over SL_MAX_DEPTH (64) containers open       "nesting too deep"
//   members         over SL_MAX_MEMBERS (10000) in a container   "too many members"
//   number-length   a literal over SL_MAX_NUMBER (64) chars      "number literal too long"
//   size            over SL_MAX_MESSAGE (16 MiB)                 "message too large"
// Any other disagreement fails: sluice accepting what JSON.parse refuses, or refusing what it
// accepts for no listed reason. When both accept, the canonical form must also equal the
// reference canonicalize(JSON.parse(text)) (a non-finite number such as 1e400 has none on
// either side).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Rng, SEED, SCALE, genText, runDriver, loadCanonicalize, stricterReasons, decodeUtf8,
  MAX_MESSAGE, MAX_MEMBERS, MAX_DEPTH, MAX_NUMBER,
} from './lib.mjs';

const canonicalize = await loadCanonicalize();

const MESSAGE = {
  'lone-surrogate': /surrogate/,
  'duplicate-key': /duplicate key/,
  'nul-in-key': /NUL in an object key/,
  depth: /nesting too deep/,
  members: /too many members/,
  'number-length': /number literal too long/,
  size: /message too large/,
};

function judge(inputs) {
  const got = runDriver(inputs);
  const tally = new Map();
  const count = (k) => tally.set(k, (tally.get(k) ?? 0) + 1);
  const bad = [];
  const show = (b) => JSON.stringify(b.length > 200 ? b.subarray(0, 200).toString('latin1') + `...(${b.length} bytes)` : b.toString('latin1'));
  for (let i = 0; i < inputs.length; i++) {
    const buf = inputs[i];
    const g = got[i];
    const sluiceAccepts = g.kind !== 'PARSE_ERROR';
    const text = decodeUtf8(buf);
    if (text === null) {
      count('invalid-utf8');
      if (sluiceAccepts) bad.push(`#${i} sluice accepted bytes that are not UTF-8: ${show(buf)}`);
      continue;
    }
    let value;
    let nodeAccepts = true;
    try { value = JSON.parse(text); } catch { nodeAccepts = false; }
    if (!nodeAccepts) {
      count('both-reject');
      if (sluiceAccepts) bad.push(`#${i} sluice accepted what JSON.parse refuses: ${show(buf)} -> ${g.kind} ${g.text}`);
      continue;
    }
    const reasons = stricterReasons(text, buf.length);
    if (reasons.size > 0) {
      for (const r of reasons) count(r);
      if (sluiceAccepts) {
        bad.push(`#${i} sluice accepted a text it must refuse (${[...reasons]}): ${show(buf)}`);
      } else if (![...reasons].some((r) => MESSAGE[r].test(g.text.toString('utf8')))) {
        bad.push(`#${i} sluice refused (${[...reasons]}) with another message: ${g.text} for ${show(buf)}`);
      }
      continue;
    }
    if (!sluiceAccepts) {
      bad.push(`#${i} sluice refused valid JSON (${g.text}): ${show(buf)}`);
      continue;
    }
    let want = null;
    try { want = Buffer.from(canonicalize(value), 'utf8'); } catch { /* no canonical form */ }
    if (want === null) {
      count('both-accept-no-canonical-form');
      if (g.kind !== 'CANON_ERROR') bad.push(`#${i} sluice canonicalized what has no canonical form: ${show(buf)} -> ${g.text}`);
    } else {
      count('both-accept');
      if (g.kind !== 'OK' || !g.text.equals(want)) {
        bad.push(`#${i} canonical form differs for ${show(buf)}\n   want ${want}\n   got  ${g.kind} ${g.text}`);
      }
    }
  }
  return { tally, bad };
}

function check(name, inputs) {
  const { tally, bad } = judge(inputs);
  console.log(`${name}: ${inputs.length} inputs; ${[...tally].map(([k, v]) => `${k} ${v}`).join(', ')}; ${bad.length} disagreements (seed ${SEED})`);
  assert.equal(bad.length, 0, `${bad.length} of ${inputs.length} disagree (DIFF_SEED=${SEED}):\n${bad.slice(0, 25).join('\n')}`);
  return tally;
}

const b = (s) => Buffer.from(s, 'utf8');
const raw = (...parts) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

// ===== hand-picked edge cases =====

const EDGE = [
  // grammar
  '', ' ', '\n', 'null', 'true', 'false', 'nul', 'True', 'NULL', '"', '""', '"\\"', '[', ']', '{', '}',
  '[]', '{}', '[1,]', '[,1]', '[1,,2]', '{"a":1,}', '{,"a":1}', '{"a" 1}', '{"a":}', '{"a"}', '{1:2}',
  "{'a':1}", '{a:1}', '[1 2]', '1 2', '{}x', '{} ', ' {} ', '{}\n', '[]]', '[[]', '"a" "b"',
  // trailing data that is the start of a token (yajl waits for the rest of it)
  '{}t', '{} nul', '{}"', '{}"abc', '{"a":1}"', '1"', '', '[] 1', '[] -', '{}[', '{} {', '{}1.',
  '\uFEFF{}', '{}\uFEFF', '\u00A0{}', '\f{}', '\v{}', '{}\f', '[1,\f2]', '[1,\v2]', '\t\r\n[ ]\t\r\n',
  '/* c */ {}', '{} // c', '[1/**/]', '#{}',
  // numbers
  '0', '-0', '01', '-01', '00', '0.', '.5', '1.', '1.e5', '1e', '1e+', '1E-', '+1', '- 1', '--1',
  '0x10', '1_000', 'NaN', '-NaN', 'Infinity', '-Infinity', 'infinity', '1e400', '-1e400', '1e-400',
  '1E+2', '1e02', '0e0', '0.0e-0', '123.456e-789', '-0.0000', '2e308', '1.7976931348623157e309',
  '1' + '0'.repeat(MAX_NUMBER - 1), '1' + '0'.repeat(MAX_NUMBER), '-' + '1'.repeat(MAX_NUMBER),
  '0.' + '0'.repeat(MAX_NUMBER - 3) + '1', '0.' + '0'.repeat(MAX_NUMBER - 2) + '1',
  '[' + '9'.repeat(400) + ']', '9007199254740993', '1e1000000000000',
  // strings and escapes
  '"\\x41"', '"\\u41"', '"\\u004"', '"\\u00G1"', '"\\U0041"', "\"\\'\"", '"\\a"', '"\\0"', '"\\/"',
  '"\\u0000"', '"a\\u0000b"', '"\\b\\f\\n\\r\\t"', '"\t"', '"\n"', '"\u0001"', '"\u001f"', '"\u007f"',
  '"\u2028\u2029"', '"\\ud83d\\ude00"', '"\\uD83D\\uDE00"', '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"',
  '"\\ud800\\ud800"', '"\\udbff\\udfff"', '"\\ud800x"', '"x\\udfff"', '"\\ud83d"', '"\\ude00\\ud83d"',
  '{"\\ud800":1}', '["\\ud800"]', '"\\\\ud800"', '"\\\\\\ud800"', '"\\u00e9"', '"\\uFFFF"', '"\\uFFFE"',
  // keys
  '{"a":1,"a":2}', '{"a":1,"\\u0061":2}', '{"a":{"b":1,"b":2}}', '[{"x":1},{"x":1}]',
  '{"\u00e9":1,"e\u0301":2}', '{"\u00e9":1,"\\u00e9":2}', '{"":1,"":2}', '{"":1}', '{"a\\u0000":1}',
  '{"\\u0000":1}', '{"a\\u0000":1,"a":2}', '["a\\u0000b"]', '{"a":"\\u0000"}', '{"__proto__":1}',
  '{"__proto__":1,"__proto__":2}', '{"a":1,"b":2,"a":3}', '{"\\ud83d\\ude00":1,"\u{1F600}":2}',
  // depth
  '['.repeat(MAX_DEPTH) + ']'.repeat(MAX_DEPTH), '['.repeat(MAX_DEPTH + 1) + ']'.repeat(MAX_DEPTH + 1),
  '{"a":'.repeat(MAX_DEPTH) + '1' + '}'.repeat(MAX_DEPTH), '{"a":'.repeat(MAX_DEPTH + 1) + '1' + '}'.repeat(MAX_DEPTH + 1),
  '['.repeat(1000) + ']'.repeat(1000), '['.repeat(MAX_DEPTH + 1), '['.repeat(100000) + ']'.repeat(100000),
].map(b);

// Raw bytes: invalid UTF-8 in and out of strings, and the valid sequences at the edges.
const BYTES = [
  [0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0x80], [0xe0, 0x9f, 0xbf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf],
  [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80], [0xf0, 0x80, 0x80, 0x80], [0xf0, 0x8f, 0xbf, 0xbf],
  [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xff], [0xfe], [0x80],
  [0xbf], [0xc2], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc2, 0x41], [0xe2, 0x28, 0xa1],
  // valid
  [0xc2, 0x80], [0xdf, 0xbf], [0xe0, 0xa0, 0x80], [0xed, 0x9f, 0xbf], [0xee, 0x80, 0x80], [0xef, 0xbf, 0xbf],
  [0xf0, 0x90, 0x80, 0x80], [0xf4, 0x8f, 0xbf, 0xbf], [0xf0, 0x9f, 0x98, 0x80],
];
const BYTE_CASES = [];
for (const seq of BYTES) {
  BYTE_CASES.push(raw('"', seq, '"'), raw('{"', seq, '":1}'), raw('["a', seq, 'b"]'), raw(seq, '[]'),
    raw('[1', seq, ']'), raw('"', seq));
}

// Limits at their edges.
function limitCases() {
  const out = [];
  const arr = (n) => '[' + Array(n).fill('0').join(',') + ']';
  const obj = (n) => '{' + Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',') + '}';
  out.push(b(arr(MAX_MEMBERS)), b(arr(MAX_MEMBERS + 1)), b(obj(MAX_MEMBERS)), b(obj(MAX_MEMBERS + 1)));
  out.push(b('[' + arr(MAX_MEMBERS + 1) + ']'));
  // exactly SL_MAX_MESSAGE bytes, and one more
  out.push(b('"' + 'a'.repeat(MAX_MESSAGE - 2) + '"'), b('"' + 'a'.repeat(MAX_MESSAGE - 1) + '"'));
  out.push(b(' '.repeat(MAX_MESSAGE - 2) + '{}'), b(' '.repeat(MAX_MESSAGE - 1) + '{}'));
  return out;
}

// ===== generated malformed texts =====

const INSERTS = [',', ']', '}', '[', '{', '"', '\\', ':', '0', '-', '+', 'e', '.', ' ', '\u0000', '\u0001',
  '\u007f', '\\u', '\\ud800', 'NaN', 'Infinity', '\f', '\v', '\u00a0', '\uFEFF', '/*', '//', "'", 'tru', 'nul'];
const BYTE_INSERTS = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]];

function mutate(r, text) {
  let buf = Buffer.from(text, 'utf8');
  for (let n = r.range(1, 3); n > 0; n--) {
    const at = r.int(buf.length + 1);
    switch (r.int(8)) {
      case 0: buf = buf.subarray(0, at); break; // truncate
      case 1: buf = Buffer.concat([buf.subarray(0, at), buf.subarray(Math.min(buf.length, at + r.range(1, 3)))]); break;
      case 2: case 3: buf = Buffer.concat([buf.subarray(0, at), Buffer.from(r.pick(INSERTS), 'utf8'), buf.subarray(at)]); break;
      case 4: if (r.chance(0.4)) buf = Buffer.concat([buf.subarray(0, at), Buffer.from(r.pick(BYTE_INSERTS)), buf.subarray(at)]); break;
      case 5: if (buf.length) { buf = Buffer.from(buf); buf[r.int(buf.length)] = r.chance(0.8) ? r.int(128) : r.int(256); } break;
      default: { // duplicate a slice (repeats a key, a member, a bracket)
        const len = r.range(1, 12);
        buf = Buffer.concat([buf.subarray(0, at), buf.subarray(at, at + len), buf.subarray(at)]);
      }
    }
  }
  return buf;
}

test('valid generated texts: both accept, same canonical form', () => {
  const r = new Rng(SEED ^ 0x5005);
  const inputs = [];
  for (let i = 0; i < 1500 * SCALE; i++) inputs.push(b(genText(r, r.range(0, 7))));
  const t = check('valid', inputs);
  assert.ok((t.get('both-accept') ?? 0) >= inputs.length * 0.99, 'the generator should make texts sluice accepts');
});

test('hand-picked edge cases of RFC 8259 and of sluice\'s limits', () => {
  check('edge', [...EDGE, ...BYTE_CASES, ...limitCases()]);
});

test('generated malformed texts: truncations, insertions, bad bytes, repeated slices', () => {
  const r = new Rng(SEED ^ 0x6006);
  const inputs = [];
  for (let i = 0; i < 4000 * SCALE; i++) inputs.push(mutate(r, genText(r, r.range(0, 5))));
  const t = check('malformed', inputs);
  assert.ok((t.get('both-reject') ?? 0) > inputs.length / 3, 'most mutated texts should be invalid');
});
