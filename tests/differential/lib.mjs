// lib.mjs: what both differential tests share: a seeded PRNG, the generators of JSON texts, the
// canon_driver runner, and the independent classifier of the rules where sluice is stricter than
// JSON.parse on purpose.
//
// Everything is deterministic for a given seed (DIFF_SEED, default below), so a failure names the
// seed and the case and can be replayed; set DIFF_SEED to explore other values, and DIFF_SCALE
// (default 1) to generate more of them.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export const SEED = Number(process.env.DIFF_SEED ?? 0x5eed1e5);
export const SCALE = Number(process.env.DIFF_SCALE ?? 1);

// The limits of proxy/base.h, and what proxy/jsonrpc.c refuses beyond JSON.parse.
export const MAX_MESSAGE = 16 * 1024 * 1024; // SL_MAX_MESSAGE (and SL_MAX_STRING)
export const MAX_DEPTH = 64;                 // SL_MAX_DEPTH: containers open at once
export const MAX_MEMBERS = 10000;            // SL_MAX_MEMBERS per object or array
export const MAX_NUMBER = 64;                // SL_MAX_NUMBER characters of one literal

// ===== the driver =====

// The driver path: CANON_DRIVER, else next to the sluice binary meson built (SLUICE_BIN is
// <build>/proxy/sluice, the driver <build>/tests/differential/canon_driver).
export function driverPath() {
  if (process.env.CANON_DRIVER) return process.env.CANON_DRIVER;
  if (!process.env.SLUICE_BIN) throw new Error('set CANON_DRIVER or SLUICE_BIN (run through meson test)');
  return path.join(path.dirname(process.env.SLUICE_BIN), '..', 'tests', 'differential', 'canon_driver');
}

// Runs the driver over inputs (Buffers). Returns one {kind, text} per input: kind OK (text is the
// canonical JSON as a Buffer), CANON_ERROR, or PARSE_ERROR (text is the message).
export function runDriver(inputs) {
  const exe = driverPath();
  if (!existsSync(exe)) throw new Error(`canon driver not built: ${exe}`);
  const parts = [];
  for (const b of inputs) parts.push(Buffer.from(`${b.length}\n`), b);
  const r = spawnSync(exe, [], { input: Buffer.concat(parts), maxBuffer: 1 << 30 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`canon driver exited ${r.status} ${r.signal ?? ''}: ${r.stderr}`);
  if (r.stderr.length) throw new Error(`canon driver wrote to stderr (a sanitizer?): ${r.stderr}`);
  const out = [];
  let at = 0;
  while (at < r.stdout.length) {
    const nl = r.stdout.indexOf(10, at);
    if (nl < 0) throw new Error('canon driver output does not end in a newline');
    const line = r.stdout.subarray(at, nl);
    at = nl + 1;
    const sp = line.indexOf(32);
    const kind = (sp < 0 ? line : line.subarray(0, sp)).toString('latin1');
    const text = sp < 0 ? Buffer.alloc(0) : line.subarray(sp + 1);
    if (!['OK', 'CANON_ERROR', 'PARSE_ERROR'].includes(kind)) throw new Error(`bad driver line ${line}`);
    out.push({ kind, text });
  }
  if (out.length !== inputs.length) {
    throw new Error(`canon driver answered ${out.length} of ${inputs.length} records`);
  }
  return out;
}

export function haveCanonicalize() {
  return existsSync(path.join(here, 'node_modules', 'canonicalize', 'package.json'));
}

export async function loadCanonicalize() {
  if (!haveCanonicalize()) {
    throw new Error('the canonicalize package is missing: run tests/differential/install.sh');
  }
  return (await import('canonicalize')).default;
}

// ===== PRNG (sfc32: small, fast, and the same on every platform) =====

export class Rng {
  constructor(seed) {
    this.a = 0x9e3779b9; this.b = 0x243f6a88; this.c = 0xb7e15162; this.d = seed >>> 0;
    for (let i = 0; i < 16; i++) this.u32();
  }
  u32() {
    let { a, b, c, d } = this;
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    Object.assign(this, { a, b, c, d });
    return t;
  }
  int(n) { return this.u32() % n; }                  // 0 <= x < n (n small)
  range(lo, hi) { return lo + this.int(hi - lo + 1); } // lo <= x <= hi
  chance(p) { return this.u32() / 2 ** 32 < p; }
  pick(arr) { return arr[this.int(arr.length)]; }
}

// ===== numbers =====

const f64 = new Float64Array(1);
const u32s = new Uint32Array(f64.buffer); // little-endian: [low, high]

function fromBits(hi, lo) {
  u32s[0] = lo >>> 0; u32s[1] = hi >>> 0;
  return f64[0];
}

function nextUp(d) { // the next double above d (d finite, not MAX_VALUE)
  if (d === 0) return Number.MIN_VALUE;
  f64[0] = d;
  let lo = u32s[0], hi = u32s[1];
  if (d > 0) { lo = (lo + 1) >>> 0; if (lo === 0) hi = (hi + 1) >>> 0; }
  else { if (lo === 0) hi = (hi - 1) >>> 0; lo = (lo - 1) >>> 0; }
  u32s[0] = lo; u32s[1] = hi;
  return f64[0];
}
function nextDown(d) { return -nextUp(-d); }

// A finite double: the whole range, with the edges where shortest-digit printers go wrong.
export function genDouble(r) {
  for (;;) {
    const d = anyDouble(r);
    if (Number.isFinite(d)) return d;
  }
}

function anyDouble(r) {
  switch (r.int(12)) {
    case 0: case 1: case 2: { // any finite bit pattern
      for (;;) {
        const d = fromBits(r.u32(), r.u32());
        if (Number.isFinite(d)) return d;
      }
    }
    case 3: // subnormals
      return fromBits((r.u32() & 0x000fffff) | (r.chance(0.5) ? 0x80000000 : 0), r.u32());
    case 4: { // powers of two and their neighbours
      const p = 2 ** r.range(-1074, 1023);
      const d = r.pick([p, nextUp(p), p === Number.MIN_VALUE ? p : nextDown(p)]);
      return r.chance(0.3) ? -d : d;
    }
    case 5: { // integers near 2^53 (and the point where Number::toString switches to 1e21)
      const base = r.pick([2 ** 53, 2 ** 53, 2 ** 54, 1e21, 1e21, 2 ** 64, 2 ** 31, 2 ** 32]);
      const d = base + r.range(-40, 40);
      return r.chance(0.2) ? -d : d;
    }
    case 6: // the layout boundaries: 1e21, 1e-6, 1e-7
      return r.pick([1e21, nextDown(1e21), nextUp(1e21), 1e-6, nextDown(1e-6), nextUp(1e-6),
        1e-7, nextDown(1e-7), 1e20, 123456789012345680000, 0.000001, 9.999999999999999e-7,
        Number.MAX_VALUE, nextDown(Number.MAX_VALUE), Number.MIN_VALUE, 2.2250738585072014e-308,
        nextDown(2.2250738585072014e-308), 5e-324, 1.7976931348623157e308, 0, -0]);
    case 7: // short decimals: 0.1, 12.5, 3e-5
      return Number((r.range(1, 99999) * 10 ** r.range(-12, 12)).toPrecision(r.range(1, 6))) *
        (r.chance(0.3) ? -1 : 1);
    case 8: // small integers, the fast path
      return r.range(-100000, 100000);
    case 9: // random decimal text of 1..17 digits and a wide exponent
      return Number(`${r.range(1, 9)}.${String(r.u32()).padStart(9, '0')}${String(r.u32()).slice(0, r.int(8))}e${r.range(-330, 310)}`) || 0;
    case 10: // a random mantissa at a moderate exponent: shortest forms of 15 to 17 digits
      return fromBits((r.range(1023 - 70, 1023 + 70) << 20) | (r.u32() & 0xfffff) |
        (r.chance(0.3) ? 0x80000000 : 0), r.u32());
    default:
      return -0;
  }
}

// One JSON literal for d: the shortest form, or another spelling that reads as the same double
// (RFC 8785 asks the canonicalizer to map them all to one form). Never longer than MAX_NUMBER.
export function numberText(r, d) {
  const neg = Object.is(d, -0) || d < 0;
  const a = Math.abs(d);
  const sign = neg ? '-' : '';
  const forms = [String(a), a.toExponential(), a.toPrecision(17), a.toExponential(20)];
  if (a === 0) forms.push('0', '0.0', '0e0', '0E+5', '0.000e-10');
  if (Number.isInteger(a) && a < 1e21) forms.push(`${BigInt(a)}`, `${BigInt(a)}.0`, `${BigInt(a)}.000`);
  let t = r.pick(forms);
  if (r.chance(0.2)) t = t.replace('e', 'E');
  if (r.chance(0.2) && !/e/i.test(t)) t += r.pick(['e0', 'E+0', 'e-0']);
  t = t.replace(/e\+?/i, (m) => (r.chance(0.3) ? m[0] : m)); // "1e+21" or "1e21"
  t = sign + t;
  if (t.length > MAX_NUMBER || Number(t) !== d && !(Object.is(d, -0) && Number(t) === 0)) {
    t = sign + String(a);
  }
  return t;
}

// ===== strings =====

// Code points from every class that matters to an escaper or a UTF-16 sort.
export function genCodePoint(r, { controls = true } = {}) {
  switch (r.int(10)) {
    case 0: return controls ? r.range(0, 0x1f) : r.range(0x20, 0x7e);
    case 1: return r.pick([0x22, 0x5c, 0x2f, 0x7f, 0x20, 0x27]); // " \ / DEL space '
    case 2: case 3: return r.range(0x20, 0x7e);
    case 4: return r.range(0x80, 0x7ff);
    case 5: return r.pick([0x2028, 0x2029, 0xfeff, 0x200b, 0x202e, 0xd7ff, 0xe000, 0xfb33, 0xfffd,
      0xfffe, 0xffff, 0xe9, 0x80, 0x9f, 0xa0]);
    case 6: return r.range(0x800, 0xd7ff);
    case 7: return r.range(0xe000, 0xffff);
    case 8: return r.pick([0x10000, 0x1f600, 0x1f602, 0x10ffff, 0xe0041, 0x1d11e]);
    default: return r.range(0x10000, 0x10ffff);
  }
}

export function genString(r, opts) {
  const n = r.chance(0.1) ? 0 : r.range(1, r.chance(0.1) ? 60 : 8);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCodePoint(genCodePoint(r, opts));
  return s;
}

// Keys chosen so that UTF-16 order and code point (UTF-8 byte) order disagree: a supplementary
// character sorts before U+E000..U+FFFF in UTF-16 and after them by code point.
const KEY_POOL = ['\u{1F600}', '\uFFFF', '\uE000', '\uFB33', '\u{1F602}', '\u{10000}', '\uFFFD',
  '\u{10FFFF}', '\uD7FF', 'a', 'A', 'b', '', ' ', 'aa', 'a\u{1F600}', 'a\uFFFF', '\u0080', '\u00e9',
  'e\u0301', '1', '10', '2', '__proto__', 'constructor', 'toString', '\u2028', '\t', '"', '\\',
  '\u007f', '\u{1F600}\uFFFF', '\uFFFF\u{1F600}', 'path', 'Path', 'content'];

export function genKey(r) {
  return r.chance(0.5) ? r.pick(KEY_POOL) : genString(r, { controls: r.chance(0.3) });
}

// ===== values and their text =====

// A JS value with no duplicate keys, no NUL in keys, depth at most maxDepth. Numbers are kept as
// {num: text} so that the chosen spelling goes into the JSON text.
export function genValue(r, depth = 0, maxDepth = 6) {
  const k = r.int(depth >= maxDepth ? 4 : 7);
  switch (k) {
    case 0: return r.pick([null, true, false]);
    case 1: case 2: { const d = genDouble(r); return { num: numberText(r, d), value: d }; }
    case 3: return genString(r);
    case 4: case 5: {
      const n = r.range(0, r.chance(0.1) ? 40 : 5);
      const o = new Map();
      for (let i = 0; i < n; i++) {
        const key = genKey(r).replace(/\0/g, '');
        if (!o.has(key)) o.set(key, genValue(r, depth + 1, maxDepth));
      }
      return o;
    }
    default: {
      const n = r.range(0, r.chance(0.1) ? 40 : 5);
      const a = [];
      for (let i = 0; i < n; i++) a.push(genValue(r, depth + 1, maxDepth));
      return a;
    }
  }
}

const WS = [' ', '\t', '\n', '\r'];
function ws(r) {
  if (!r.chance(0.15)) return '';
  let s = '';
  for (let n = r.range(1, 3); n > 0; n--) s += r.pick(WS);
  return s;
}

// A JSON string literal for s, each character written raw or escaped at random (\uXXXX in either
// case, surrogate pairs for supplementary characters, the short escapes, an escaped '/').
export function stringText(r, s) {
  const mode = r.int(4); // 0: JSON.stringify; 1-3: mixed escapes
  if (mode === 0) return JSON.stringify(s);
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    const hex4 = (u) => {
      const h = u.toString(16).padStart(4, '0');
      return '\\u' + (r.chance(0.5) ? h : h.toUpperCase());
    };
    const short = { 0x22: '\\"', 0x5c: '\\\\', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t' };
    if (cp < 0x20 || cp === 0x22 || cp === 0x5c) {
      out += short[cp] && r.chance(0.6) ? short[cp] : hex4(cp);
    } else if (cp === 0x2f && r.chance(0.5)) {
      out += '\\/';
    } else if (r.chance(mode === 3 ? 0.8 : 0.15)) {
      if (cp > 0xffff) {
        const v = cp - 0x10000;
        out += hex4(0xd800 + (v >> 10)) + hex4(0xdc00 + (v & 0x3ff));
      } else {
        out += hex4(cp);
      }
    } else {
      out += ch;
    }
  }
  return out + '"';
}

export function valueText(r, v) {
  if (v === null || v === true || v === false) return String(v);
  if (typeof v === 'string') return stringText(r, v);
  if (v instanceof Map) {
    const parts = [];
    for (const [k, x] of v) parts.push(ws(r) + stringText(r, k) + ws(r) + ':' + ws(r) + valueText(r, x) + ws(r));
    return '{' + (parts.length ? parts.join(',') : ws(r)) + '}';
  }
  if (Array.isArray(v)) {
    const parts = v.map((x) => ws(r) + valueText(r, x) + ws(r));
    return '[' + (parts.length ? parts.join(',') : ws(r)) + ']';
  }
  return v.num;
}

// A whole document: a value with optional surrounding whitespace.
export function genText(r, maxDepth = 6) {
  return ws(r) + valueText(r, genValue(r, 0, maxDepth)) + ws(r);
}

// ===== where sluice is stricter than JSON.parse, judged without sluice's code =====

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// Decodes bytes as strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF),
// or returns null.
export function decodeUtf8(buf) {
  try { return utf8.decode(buf); } catch { return null; }
}

function wellFormed(s) {
  return typeof s.isWellFormed === 'function' ? s.isWellFormed()
    : !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

// Reasons sluice refuses a text that JSON.parse accepts (text must be valid JSON). Walks the
// tokens with an explicit stack, so any depth is fine. Returns a (possibly empty) Set of:
//   size            over SL_MAX_MESSAGE bytes
//   depth           more than SL_MAX_DEPTH containers open at once
//   members         more than SL_MAX_MEMBERS members or elements in one container
//   number-length   a number literal over SL_MAX_NUMBER characters
//   duplicate-key   two equal keys (after unescaping) in one object
//   nul-in-key      U+0000 in a key
//   lone-surrogate  a string or key that is not well-formed UTF-16 (a lone \uD800 escape)
export function stricterReasons(text, byteLength) {
  const why = new Set();
  if (byteLength > MAX_MESSAGE) why.add('size');
  const stack = [];
  const valueStarts = () => {
    const top = stack[stack.length - 1];
    if (top && top.arr && ++top.n > MAX_MEMBERS) why.add('members');
  };
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '{' || c === '[') {
      valueStarts();
      stack.push({ arr: c === '[', keys: new Set(), n: 0, wantKey: c === '{' });
      if (stack.length > MAX_DEPTH) why.add('depth');
      i++;
    } else if (c === '}' || c === ']') {
      stack.pop();
      i++;
    } else if (c === ':') {
      top.wantKey = false;
      i++;
    } else if (c === ',') {
      if (!top.arr) top.wantKey = true;
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const s = JSON.parse(text.slice(i, j + 1));
      i = j + 1;
      if (!wellFormed(s)) why.add('lone-surrogate');
      if (top && !top.arr && top.wantKey) {
        if (top.keys.has(s)) why.add('duplicate-key');
        top.keys.add(s);
        if (++top.n > MAX_MEMBERS) why.add('members');
        if (s.includes('\0')) why.add('nul-in-key');
      } else {
        valueStarts();
      }
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < n && /[0-9.eE+-]/.test(text[j])) j++;
      valueStarts();
      if (j - i > MAX_NUMBER) why.add('number-length');
      i = j;
    } else if (text.startsWith('true', i) || text.startsWith('null', i)) {
      valueStarts();
      i += 4;
    } else if (text.startsWith('false', i)) {
      valueStarts();
      i += 5;
    } else {
      throw new Error(`classifier could not tokenize valid JSON at ${i}: ${JSON.stringify(text.slice(i, i + 20))}`);
    }
  }
  return why;
}
