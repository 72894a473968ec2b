#!/bin/sh
# Benchmark (not a test): median wall time per gate over N runs on the bundled examples.
#   bench/gates.sh [N]        (default N=7; needs `./setup.sh` done first)
# Prints a markdown table; the README's table comes from this script.
set -eu
cd "$(dirname "$0")/.."
N="${1:-7}"
AD="${AD:-$(command -v autodriver || echo build/src/autodriver/autodriver)}"
OUT=$(mktemp -d /tmp/ad-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
i=1
while [ "$i" -le "$N" ]; do
  "$AD" check examples/misc-counter -k 6.1 -k 6.12 --boot --json > "$OUT/misc.$i.json"
  "$AD" check tests/fixtures/drivers/edu-ok -k 6.1 -k 6.12 --no-sparse --boot --device edu --json > "$OUT/edu.$i.json"
  i=$((i + 1))
done
python3 - "$OUT" "$N" <<'PY'
import glob, json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
rows = {}
def add(key, ms):
    rows.setdefault(key, []).append(ms / 1000.0)
for name in ("misc", "edu"):
    for f in sorted(glob.glob(f"{out}/{name}.*.json")):
        d = json.load(open(f))
        for gate, g in d["gates"].items():
            for rel, r in g["by_kernel"].items():
                line = "6.1" if rel.startswith("6.1.") else "6.12"
                add((name, gate, line), r["elapsed_ms"])
                if gate == "boot":
                    add((name, "boot: qemu only (boot+insmod+rmmod+poweroff)", line), r["details"]["qemu"]["elapsed_ms"])
print(f"| example | gate | kernel | median s | min s | max s | runs |")
print(f"|---|---|---|---|---|---|---|")
for (name, gate, line), v in sorted(rows.items()):
    ex = {"misc": "misc-counter (1 file, virtual)", "edu": "edu-ok (PCI, -device edu)"}[name]
    print(f"| {ex} | {gate} | {line} | {statistics.median(v):.2f} | {min(v):.2f} | {max(v):.2f} | {len(v)} |")
PY
