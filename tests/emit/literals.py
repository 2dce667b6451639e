#!/usr/bin/env python3
"""literals.py [-v] FILE... - function bodies that emit/ writes from string
literals, as issue 9 bounds them: support code is code (runtime/), so no
body of more than 20 lines may stand in literals.

The literals of each file, decoded and joined in the order they appear,
stand for the text the file writes.  A body runs from a line that is "{"
to the next line that starts with "}" (both at column 0); its lines are
counted as literal lines, so code the writer adds between the literals
(names, sizes, generated statements) does not count, and the literals of
both branches of a condition do.  Prints FILE:LINE: N lines for every
body over the limit (with -v, for every body, longest first) and exits 1
if there is one."""
import sys

LIMIT = 20
ESC = {'n': '\n', 't': '\t', '\\': '\\', '"': '"', "'": "'", '?': '?',
       '0': '\0', 'a': '\a', 'b': '\b', 'f': '\f', 'r': '\r', 'v': '\v'}


def literals(src):
    """(source line, decoded text) of every string literal, in order;
    comments and character constants are skipped."""
    out, i, n, line = [], 0, len(src), 1
    while i < n:
        c = src[i]
        if c == '\n':
            line += 1
            i += 1
        elif src.startswith('/*', i):
            j = src.index('*/', i + 2) + 2
            line += src.count('\n', i, j)
            i = j
        elif src.startswith('//', i):
            i = src.index('\n', i)
        elif c == "'":
            j = i + 1
            while src[j] != "'":
                j += 2 if src[j] == '\\' else 1
            i = j + 1
        elif c == '"':
            j, buf = i + 1, []
            while src[j] != '"':
                if src[j] == '\\':
                    buf.append(ESC.get(src[j + 1], src[j + 1]))
                    j += 2
                else:
                    buf.append(src[j])
                    j += 1
            out.append((line, ''.join(buf)))
            i = j + 1
        else:
            i += 1
    return out


def bodies(path):
    """(source line of the "{", literal lines in the body) of each body."""
    lines, where = [''], [0]         # the joined text, by line
    for line, s in literals(open(path, encoding='utf-8').read()):
        if s.startswith('{\n') and lines[-1]:
            lines.append('')         # a body's brace opens its own line
            where.append(line)
        for ch in s:
            if ch == '\n':
                lines.append('')
                where.append(line)
            else:
                if not lines[-1]:
                    where[-1] = line
                lines[-1] += ch
    found, start = [], None
    for k, l in enumerate(lines):
        if l == '{' and start is None:
            start = k
        elif l.startswith('}') and start is not None:
            found.append((where[start], k - start - 1))
            start = None
    return found


def main(argv):
    verbose = '-v' in argv
    files = [a for a in argv[1:] if a != '-v']
    if not files:
        print(__doc__.split('\n')[0], file=sys.stderr)
        return 2
    rows = [(n, path, line) for path in files for line, n in bodies(path)]
    bad = [r for r in rows if r[0] > LIMIT]
    for n, path, line in sorted(rows if verbose else bad, key=lambda r: -r[0]):
        print('%s:%d: a function body of %d lines in string literals%s'
              % (path, line, n, ' (more than %d)' % LIMIT if n > LIMIT else ''))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
