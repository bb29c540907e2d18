#!/usr/bin/env python3
"""Lists the workspace's long non-test functions: every `fn` item under crates/*/src of at
least N lines (default 100), longest first, as `lines  file:line  name`.

A function's length is its lines from the one holding `fn` to the one holding its closing
brace. Left out: `#[cfg(test)]` items (test modules included), files under tests/ and benches/,
and functions without a body. Comments and string literals are read as such, so a brace inside
them never counts.

Usage: scripts/long-functions.py [MIN_LINES] [PATH_PREFIX...]
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def code_only(text: str) -> str:
    """`text` with comments and the contents of string and char literals blanked (newlines
    kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        prev_ident = i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")
        if c == "/" and nxt == "/":
            while i < n and text[i] != "\n":
                i += 1
        elif c == "/" and nxt == "*":
            depth = 0
            while i < n:
                if text.startswith("/*", i):
                    depth += 1
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    i += 2
                    if depth == 0:
                        break
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and not prev_ident and re.match(r'r#*"', text[i:]):
            hashes = len(re.match(r"r(#*)", text[i:]).group(1))
            end = text.find('"' + "#" * hashes, i + 2 + hashes)
            end = n if end < 0 else end + 1 + hashes
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and nxt == "\\":
            j = text.find("'", i + 2)
            out.append("' '")
            i = j + 1
        elif c == "'" and i + 2 < n and text[i + 2] == "'":
            out.append("' '")
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def test_spans(code: str):
    """The spans of `#[cfg(test)]` items."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        k = m.end()
        depth = 0
        while k < len(code):
            ch = code[k]
            if ch in "[(":
                depth += 1
            elif ch in "])":
                depth -= 1
            elif ch == "{" and depth == 0:
                k = matching_brace(code, k)
                break
            elif ch == ";" and depth == 0:
                break
            k += 1
        spans.append((m.start(), k))
    return spans


def functions(path: Path):
    code = code_only(path.read_text(encoding="utf-8"))
    skip = test_spans(code)
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        # The body starts at the first `{` outside the signature's brackets, unless a `;`
        # ends a bodiless declaration first.
        k, depth = m.end(), 0
        while k < len(code):
            ch = code[k]
            if ch in "([<":
                depth += 1
            elif ch in ")]>" and not (ch == ">" and code[k - 1] == "-"):
                depth -= 1
            elif ch == ";" and depth <= 0:
                k = -1
                break
            elif ch == "{" and depth <= 0:
                break
            k += 1
        if k < 0 or k >= len(code):
            continue
        end = matching_brace(code, k)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        yield m.group(1), first, last - first + 1


def main():
    args = sys.argv[1:]
    minimum = int(args.pop(0)) if args and args[0].isdigit() else 100
    found = []
    for path in sorted(ROOT.glob("crates/*/src/**/*.rs")):
        rel = path.relative_to(ROOT).as_posix()
        if "/tests/" in rel or "/benches/" in rel:
            continue
        if args and not any(rel.startswith(p) for p in args):
            continue
        for name, line, length in functions(path):
            if length >= minimum:
                found.append((length, f"{rel}:{line}", name))
    for length, where, name in sorted(found, key=lambda f: (-f[0], f[1])):
        print(f"{length:5}  {where}  {name}")
    print(f"{len(found)} functions of {minimum}+ lines", file=sys.stderr)


if __name__ == "__main__":
    main()
