// gen.js: regenerates the canon fixtures. Run from this directory: node gen.js
//
// Each NAME.in.json is JSON text as a client might send it (any key order, whitespace, escapes,
// number spellings); NAME.out.json is its RFC 8785 form as computed by an independent oracle:
// ECMAScript itself (JSON.parse, Number::toString via JSON.stringify, keys sorted by
// Array.prototype.sort, which compares UTF-16 code units). test_canon.c checks canon_write
// against every pair. The generators are seeded, so rerunning gives the same bytes.
'use strict';
const fs = require('fs');

function jcs(v) {
    if (v === null || typeof v !== 'object')
        return JSON.stringify(v);
    if (Array.isArray(v))
        return '[' + v.map(jcs).join(',') + ']';
    return '{' + Object.keys(v).sort().map(k => JSON.stringify(k) + ':' + jcs(v[k])).join(',') + '}';
}

// xorshift32: deterministic, so the fixtures do not change between runs
let seed = 0x5eed1234;
function rnd(n) {
    seed ^= seed << 13; seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5; seed >>>= 0;
    return seed % n;
}
function pick(a) { return a[rnd(a.length)]; }

const ws = () => pick(['', '', '', ' ', '\n  ', '\t', '\r\n']);

function hex4(u) { return u.toString(16).padStart(4, '0'); }
function esc(u) { return '\\u' + (rnd(2) ? hex4(u) : hex4(u).toUpperCase()); }

// One code point, as JSON string text (raw or escaped), and its UTF-16 form.
function codepoint() {
    const pools = [
        [0x20, 0x7e], [0x00, 0x1f], [0x7f, 0xa0], [0xe000, 0xffff], [0x10000, 0x10ffff],
        [0x2028, 0x2029], [0x0100, 0x07ff], [0x0800, 0xd7ff], [0x1f600, 0x1f64f], [0xfb00, 0xfb4f],
    ];
    const [lo, hi] = pick(pools);
    const cp = lo + rnd(hi - lo + 1);
    const s = String.fromCodePoint(cp);
    let text;
    if (cp === 0x22) text = '\\"';
    else if (cp === 0x5c) text = '\\\\';
    else if (cp < 0x20) text = pick(['\\b', '\\t', '\\n', '\\f', '\\r'].filter(e => JSON.parse('"' + e + '"') === s).concat([esc(cp)]));
    else if (cp === 0x2f && rnd(2)) text = '\\/';
    else if (cp >= 0x10000 && rnd(2)) text = esc(s.charCodeAt(0)) + esc(s.charCodeAt(1));
    else if (rnd(4) === 0 && cp < 0x10000) text = esc(cp);
    else text = s;
    return text;
}
function str(maxlen) {
    let t = '';
    for (let n = rnd(maxlen + 1); n > 0; n--)
        t += codepoint();
    return '"' + t + '"';
}

function num() {
    const neg = rnd(3) === 0 ? '-' : '';
    const int = rnd(5) === 0 ? '0' : String(1 + rnd(9)) + Array.from({ length: rnd(18) }, () => rnd(10)).join('');
    const frac = rnd(2) ? '.' + Array.from({ length: 1 + rnd(18) }, () => rnd(10)).join('') : '';
    const exp = rnd(2) ? pick(['e', 'E']) + pick(['', '+', '-']) + String(rnd(290)) : '';
    return neg + int + frac + exp;
}

function value(depth) {
    const r = rnd(depth > 4 ? 6 : 9);
    if (r === 0) return pick(['null', 'true', 'false']);
    if (r <= 2) return num();
    if (r <= 5) return str(8);
    if (r <= 6) {
        const n = rnd(5);
        const items = [];
        for (let i = 0; i < n; i++) items.push(ws() + value(depth + 1) + ws());
        return '[' + items.join(',') + ']';
    }
    const n = rnd(7);
    const seen = new Set();
    const items = [];
    for (let i = 0; i < n; i++) {
        const k = str(4);
        const key = JSON.parse(k);
        // I-JSON: no duplicate names; sluice also refuses NUL in keys (C peers cut them short)
        if (seen.has(key) || key.includes('\0')) continue;
        seen.add(key);
        items.push(ws() + k + ws() + ':' + ws() + value(depth + 1) + ws());
    }
    return '{' + items.join(',') + '}';
}

function write(name, text) {
    fs.writeFileSync(name + '.in.json', text);
    fs.writeFileSync(name + '.out.json', jcs(JSON.parse(text)));
}

// numbers.in.json: doubles written with 17 significant digits (so each reads back exactly), in
// the forms that make shortest-digit search hard: every power of two (lopsided rounding
// intervals), mantissas at both ends of each binade, subnormals, and random bit patterns.
function numbers() {
    const out = [];
    const buf = Buffer.alloc(8);
    const put = bits => {
        buf.writeBigUInt64BE(bits);
        const d = buf.readDoubleBE(0);
        if (isFinite(d))
            out.push(d === 0 ? '0' : d.toExponential(16).replace('e+', 'E'));
    };
    for (let e = 0n; e < 2047n; e++)
        for (const m of [0n, 1n, 0xfffffffffffffn])
            put((e << 52n) | m);
    let x = 0x9e3779b97f4a7c15n;
    for (let i = 0; i < 1500; i++) {
        x ^= (x << 13n) & 0xffffffffffffffffn;
        x ^= x >> 7n;
        x ^= (x << 17n) & 0xffffffffffffffffn;
        put(i % 5 === 0 ? x & 0x800fffffffffffffn : x); // every fifth a subnormal
    }
    return '[' + out.join(',\n') + ']\n';
}
write('numbers', numbers());

for (let i = 1; i <= 4; i++) {
    const items = [];
    for (let j = 0; j < 40; j++) items.push(value(0));
    write('random-' + i, '[' + items.join(',\n') + ']\n');
}
