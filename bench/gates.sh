#!/bin/sh
# Benchmark (not a test): median wall time per gate over N runs on the bundled examples.
#   bench/gates.sh [N] [LINE...]   (default N=7, every fetched kernel; needs `./setup.sh` done first)
# Prints a markdown table; docs/benchmarks.md's gate table comes from this script.
set -eu
cd "$(dirname "$0")/.."
N="${1:-7}"
[ $# -gt 0 ] && shift
AD="${AD:-$(command -v autodriver || echo build/src/autodriver/autodriver)}"
LINES="${*:-$("$AD" kernel list --json | python3 -c 'import json, sys; print(" ".join(k["line"] for k in json.load(sys.stdin)["kernels"] if k.get("headers_fetched")))')}"
OUT=$(mktemp -d /tmp/ad-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
KS=""
for l in $LINES; do KS="$KS -k $l"; done
i=1
while [ "$i" -le "$N" ]; do
  # shellcheck disable=SC2086
  "$AD" check examples/misc-counter $KS --boot --json > "$OUT/misc.$i.json" || true
  # shellcheck disable=SC2086
  "$AD" check tests/fixtures/drivers/edu-ok $KS --no-sparse --boot --device edu --json > "$OUT/edu.$i.json" || true
  i=$((i + 1))
done
python3 - "$OUT" "$N" <<'PY'
import glob, json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
rows, fails = {}, {}
for name in ("misc", "edu"):
    for f in sorted(glob.glob(f"{out}/{name}.*.json")):
        d = json.load(open(f))
        for gate, g in d["gates"].items():
            for rel, r in g["by_kernel"].items():
                key = (name, gate, rel)
                if not r["ok"]:
                    fails[key] = fails.get(key, 0) + 1
                    continue
                rows.setdefault(key, []).append(r["elapsed_ms"] / 1000.0)
                if gate == "boot":
                    rows.setdefault((name, "boot: qemu only", rel), []).append(r["details"]["qemu"]["elapsed_ms"] / 1000.0)
print("| example | gate | kernel | median s | min s | max s | ok runs |")
print("|---|---|---|---|---|---|---|")
ver = lambda rel: tuple(int(x) for x in rel.split("-")[0].split("+")[0].split(".") if x.isdigit())
for key in sorted(set(rows) | set(fails), key=lambda k: (k[0], k[1], ver(k[2]))):
    name, gate, rel = key
    ex = {"misc": "misc-counter (1 file, virtual)", "edu": "edu-ok (PCI, -device edu)"}[name]
    v = rows.get(key, [])
    ok = f"{len(v)}/{len(v) + fails.get(key, 0)}"
    if v:
        print(f"| {ex} | {gate} | {rel} | {statistics.median(v):.2f} | {min(v):.2f} | {max(v):.2f} | {ok} |")
    else:
        print(f"| {ex} | {gate} | {rel} | - | - | - | {ok} |")
PY
