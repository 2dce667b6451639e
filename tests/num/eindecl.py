"""eindecl.py - read the declarations of a .ein program: its constants
(with -D overrides), imports, and the names, element types and shapes of
its inputs, weights and outputs.

The test scripts need the shapes to generate input files (tests/gpu/
prepare.sh) and to check that a PyTorch reference takes the tensors the
.ein file declares (run.py), with a clearer message than a failed run.
This is no parser of the language: it splits statements the way the
language does (newlines end them except inside ( ) [ ] { } or after an
operator, ',' or '='), skips def bodies and tensor statements, and
evaluates constant expressions with floor '/' and '%'.

    python3 eindecl.py [-D NAME=VALUE]... [-I DIR]... FILE.ein
prints one line per input and weight: KIND NAME ELEM DIM...
"""

import os
import re
import sys

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+) | (?P<comment>\#[^\n]*) | (?P<nl>\n) |
    (?P<str>"[^"\n]*") | (?P<num>\d+(\.\d*)?([eE][-+]?\d+)?) |
    (?P<name>[A-Za-z_][A-Za-z_0-9]*) |
    (?P<op>max=|min=|\+=|->|==|!=|<=|>=|&&|\|\||\.\.|\?:|[-+*/%()\[\]{},:;=<>!.])
""", re.X)
# a newline after one of these does not end a statement
_CONT = {",", "=", "+=", "max=", "min=", ":", "->", "+", "-", "*", "/", "%",
         "==", "!=", "<", "<=", ">", ">=", "&&", "||", "(", "[", "{", "?:"}


class DeclError(Exception):
    pass


def _tokens(text, path):
    pos = 0
    out = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            line = text.count("\n", 0, pos) + 1
            raise DeclError("%s:%d: cannot read %r" % (path, line, text[pos]))
        pos = m.end()
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            continue
        out.append((kind, m.group(kind)))
    return out


def _statements(toks):
    """Split into statements; def bodies become one ('def', ...) statement."""
    stmts, cur, depth = [], [], 0
    for i, (kind, val) in enumerate(toks):
        if kind == "nl":
            prev = cur[-1][1] if cur else None
            nxt = next((v for k, v in toks[i + 1:] if k != "nl"), None)
            if depth == 0 and cur and prev not in _CONT and nxt != "where":
                stmts.append(cur)
                cur = []
            continue
        if val in ("(", "[", "{"):
            depth += 1
        elif val in (")", "]", "}"):
            depth -= 1
        if val == ";" and depth == 0:
            if cur:
                stmts.append(cur)
            cur = []
            continue
        cur.append((kind, val))
        if val == "}" and depth == 0 and cur and cur[0][1] == "def":
            stmts.append(cur)
            cur = []
    if cur:
        stmts.append(cur)
    return stmts


def _eval(toks, consts, path):
    expr = []
    for kind, val in toks:
        if kind == "name":
            if val not in consts:
                raise DeclError("%s: unknown constant %r" % (path, val))
            expr.append("(%d)" % consts[val])
        elif kind == "num" and val.isdigit():
            expr.append(val)
        elif val in ("+", "-", "*", "%", "(", ")"):
            expr.append(val)
        elif val == "/":
            expr.append("//")
        else:
            raise DeclError("%s: not an integer expression: %r" % (path, val))
    return int(eval(" ".join(expr), {"__builtins__": {}}, {}))


def _split_commas(toks):
    parts, cur, depth = [], [], 0
    for t in toks:
        if t[1] in ("(", "["):
            depth += 1
        elif t[1] in (")", "]"):
            depth -= 1
        if t[1] == "," and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return parts


class Program:
    def __init__(self):
        self.consts = {}
        self.tensors = []           # (kind, name, elem, [dims])
        self.outputs = []
        self.model = None
        self.files = []


def read(path, defines=None, includes=(), _prog=None, _top=True):
    prog = _prog or Program()
    defines = defines or {}
    path = os.path.abspath(path)
    if path in prog.files:
        return prog
    prog.files.append(path)
    with open(path) as f:
        # import <nn.ein> as a string that keeps its brackets
        text = re.sub(r'(?m)^(\s*import\s*)<([^>\n]+)>', r'\1"<\2>"', f.read())
        toks = _tokens(text, path)
    for st in _statements(toks):
        head = st[0][1]
        if head == "import":
            if st[1][1].startswith('"<'):   # import <nn.ein>: -I, then the library
                rel = st[1][1][2:-2]
                cands = [os.path.join(d, rel) for d in includes]
                lib = os.environ.get("EINC_STDLIB") or os.path.join(
                    os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib")
                cands.append(os.path.join(lib, rel))
            else:
                rel = st[1][1].strip('"')
                cands = [os.path.join(os.path.dirname(path), rel)]
                cands += [os.path.join(d, rel) for d in includes]
            found = next((c for c in cands if os.path.exists(c)), None)
            if not found:
                raise DeclError("%s: cannot find import %r" % (path, rel))
            read(found, defines, includes, prog, False)
        elif head == "const":
            for part in _split_commas(st[1:]):
                name = part[0][1]
                if part[1][1] != "=":
                    raise DeclError("%s: bad const %r" % (path, name))
                val = _eval(part[2:], prog.consts, path)
                prog.consts[name] = int(defines.get(name, val))
        elif head in ("input", "weight"):
            if not _top:            # an import brings defs and consts only
                continue
            for part in _split_commas(st[1:]):
                name, colon, elem, lb = [t[1] for t in part[:4]]
                if colon != ":" or lb != "[" or part[-1][1] != "]":
                    raise DeclError("%s: bad declaration of %r" % (path, name))
                inner = part[4:-1]
                dims = [] if not inner else [
                    _eval(d, prog.consts, path) for d in _split_commas(inner)]
                prog.tensors.append((head, name, elem, dims))
        elif head == "output":
            prog.outputs += [p[0][1] for p in _split_commas(st[1:])]
        elif head == "model":
            prog.model = st[1][1]
    return prog


def main(argv):
    defines, includes, files = {}, [], []
    it = iter(argv)
    for a in it:
        if a.startswith("-D"):
            kv = a[2:] or next(it)
            k, v = kv.split("=", 1)
            defines[k] = int(v)
        elif a.startswith("-I"):
            includes.append(a[2:] or next(it))
        else:
            files.append(a)
    if len(files) != 1:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    prog = read(files[0], defines, includes)
    for kind, name, elem, dims in prog.tensors:
        print(kind, name, elem, *dims)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
