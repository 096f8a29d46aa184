#!/usr/bin/env python3
"""Writes a C file holding the bytes of a file: embed.py SYMBOL INPUT OUTPUT."""
import sys

symbol, src, dst = sys.argv[1:4]
data = open(src, 'rb').read()
with open(dst, 'w') as out:
    out.write('#include <stddef.h>\n')
    out.write('extern const char %s[];\nextern const size_t %s_len;\n' % (symbol, symbol))
    out.write('const char %s[] = {\n' % symbol)
    for i in range(0, len(data), 16):
        out.write(''.join('%d,' % b for b in data[i:i + 16]) + '\n')
    out.write('0};\nconst size_t %s_len = %d;\n' % (symbol, len(data)))
