#!/usr/bin/env python3
"""The layering of src/autodriver (ARCHITECTURE.md), checked: a library includes headers of its own
layer's libraries below it only, and links (CMake, transitively) every library it includes.

  (util, csrc) <- core <- (kernel, store, apidiff) <- gate <- (corpus, propose, crash) <- loop <- bench <- cli
  util <- llm (the model client; loop and above may use it)

Exit 1 with one line per violation."""
import collections
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SRC = os.path.join(ROOT, "src", "autodriver")
# Each library and the libraries it may include (besides itself).
LAYERS = {
    "util": set(),
    "csrc": set(),
    "core": {"util"},
    "kernel": {"core", "util"},
    "store": {"core", "util"},
    "apidiff": {"core", "util"},
    "gate": {"csrc", "kernel", "core", "util"},
    "corpus": {"csrc", "gate", "kernel", "core", "util"},
    "propose": {"llm", "csrc", "gate", "kernel", "store", "core", "util"},
    "crash": {"csrc", "kernel", "core", "util"},
    "llm": {"util"},
    "loop": {"llm", "crash", "csrc", "propose", "gate", "kernel", "store", "apidiff", "core", "util"},
    "bench": {"llm", "crash", "csrc", "loop", "propose", "gate", "kernel", "store", "apidiff", "core", "util"},
}

problems = []
includes = collections.defaultdict(set)
for path in glob.glob(os.path.join(SRC, "*", "**", "*.[ch]pp"), recursive=True):
    lib = os.path.relpath(path, SRC).split(os.sep)[0]
    if lib == "cli":
        continue  # the top: may include anything
    if lib not in LAYERS:
        problems.append(f"{os.path.relpath(path, ROOT)}: library '{lib}' has no place in the layering (tests/lint/layering.py)")
        continue
    for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        m = re.match(r'\s*#\s*include\s+"autodriver/(\w+)/', line)
        if not m or m.group(1) == lib:
            continue
        includes[lib].add(m.group(1))
        if m.group(1) not in LAYERS[lib]:
            problems.append(f"{os.path.relpath(path, ROOT)}:{n}: {lib} includes {m.group(1)}, a layer above it or beside it")

# CMake: ad_X links ad_Y (PUBLIC or PRIVATE), transitively through PUBLIC links.
cmake = open(os.path.join(SRC, "CMakeLists.txt"), encoding="utf-8").read()
links = collections.defaultdict(set)
for m in re.finditer(r"target_link_libraries\(\s*ad_(\w+)\s+([^)]*)\)", cmake):
    for dep in re.findall(r"\bad_(\w+)\b", m.group(2)):
        if dep != "warnings":
            links[m.group(1)].add(dep)


def closure(lib):
    seen, todo = set(), [lib]
    while todo:
        for d in links[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


for lib, used in sorted(includes.items()):
    missing = sorted(used - closure(lib))
    if missing:
        problems.append(f"src/autodriver/CMakeLists.txt: ad_{lib} includes {', '.join(missing)} without linking "
                        f"{', '.join('ad_' + m for m in missing)}")

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
