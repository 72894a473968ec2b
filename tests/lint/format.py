#!/usr/bin/env python3
"""The C++ of src/ and tests/ is laid out as .clang-format says (clang-format 14, Debian 12's; setup.sh
installs it). Exit 1 naming each file that differs; `clang-format-14 -i FILE` fixes it."""
import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
tool = shutil.which("clang-format-14") or shutil.which("clang-format")
if not tool:
    print("format: no clang-format-14 (./setup.sh test installs it)")
    sys.exit(1)
version = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
if "version 14." not in version:
    print(f"format: {tool} is {version.strip()!r}; the layout is defined by clang-format 14 (Debian 12's clang-format-14)")
    sys.exit(1)
files = sorted(f for d in ("src", "tests") for ext in ("cpp", "hpp")
               for f in glob.glob(os.path.join(ROOT, d, "**", "*." + ext), recursive=True))
problems = []
for i in range(0, len(files), 50):
    r = subprocess.run([tool, "--dry-run", "--Werror", "--style=file"] + files[i:i + 50],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    for line in r.stderr.splitlines():
        if "error:" in line:
            path = os.path.relpath(line.split(":", 1)[0], ROOT)
            if path not in problems:
                problems.append(path)
for p in problems:
    print(f"{p}: not formatted as .clang-format says (clang-format-14 -i {p})")
sys.exit(1 if problems else 0)
