#!/usr/bin/env python3
"""Writes unicode_cats.h: every format (Cf) and enclosing mark (Me) code point as ranges, from
Python's unicodedata. test_confirm.c checks that the confirmation text escapes each one.
Run from tests/unit/: python3 gen_unicode_cats.py > unicode_cats.h"""
import unicodedata

def ranges(cats):
    out = []
    for c in range(0x110000):
        if unicodedata.category(chr(c)) in cats:
            if out and out[-1][1] == c - 1:
                out[-1][1] = c
            else:
                out.append([c, c])
    return out

print("/* unicode_cats.h: made by gen_unicode_cats.py from Unicode %s; do not edit. */"
      % unicodedata.unidata_version)
print("static const struct { unsigned lo, hi; } unicode_cf_me[] = {")
for lo, hi in ranges(("Cf", "Me")):
    print("    { 0x%04X, 0x%04X }," % (lo, hi))
print("};")
