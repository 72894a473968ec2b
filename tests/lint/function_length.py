#!/usr/bin/env python3
"""No function in src/ over 150 lines (issue 20 item 1). A function is a definition that starts at
column 0 (namespace scope, or a member defined outside its class) or column 2 (a member defined in
its class, a lambda at a function's top level) and ends at the first '}' at that column after it. The functions listed in KNOWN were longer when the check came in and are to be
split: they may not grow, and the list only shrinks (a listed function that is now short fails
until it is removed from the list)."""
import glob
import os
import re
import sys

LIMIT = 150
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# file: {function name: its length when listed}
KNOWN = {
}

START = re.compile(r"^( {0}| {2})[A-Za-z_][\w:<>,\s\*&]*?\b([A-Za-z_~][\w]*)\s*\([^;]*$")
KEYWORDS = {"if", "for", "while", "switch", "return", "catch", "else", "do", "sizeof", "defined"}
problems = []
seen_known = set()
for path in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.cpp"), recursive=True)):
    rel = os.path.relpath(path, ROOT)
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if not m or m.group(2) in KEYWORDS or lines[i].strip().startswith(
                ("namespace", "using", "static_assert", "#", "struct", "class", "enum", "template", "//")):
            i += 1
            continue
        indent, name = m.group(1), m.group(2)
        # The body opens on this line or the next few (a wrapped parameter list).
        j = i
        while j < len(lines) and j < i + 8 and not lines[j].rstrip().endswith("{"):
            if lines[j].rstrip().endswith(";"):
                break
            j += 1
        if j >= len(lines) or not lines[j].rstrip().endswith("{"):
            i += 1
            continue
        k = j + 1
        while k < len(lines) and not (lines[k].startswith(indent + "}") and
                                      (indent == "" or not lines[k].startswith(indent + " "))):
            k += 1
        length = k - i + 1
        known = KNOWN.get(rel, {}).get(name)
        if known is not None:
            seen_known.add((rel, name))
            if length > known:
                problems.append(f"{rel}:{i + 1}: {name}() is {length} lines, more than the {known} it had when listed: split it")
            elif length <= LIMIT:
                problems.append(f"{rel}:{i + 1}: {name}() is {length} lines now: remove it from KNOWN in {os.path.relpath(__file__, ROOT)}")
        elif length > LIMIT:
            problems.append(f"{rel}:{i + 1}: {name}() is {length} lines (at most {LIMIT}): split it into named steps")
        i = k + 1

for rel, names in KNOWN.items():
    for name in names:
        if (rel, name) not in seen_known:
            problems.append(f"{rel}: {name}() is listed in KNOWN but not found: remove it from the list")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
