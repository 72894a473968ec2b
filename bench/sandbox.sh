#!/bin/sh
# Benchmark (not a test): the build sandbox's overhead. For each driver and kernel, N times:
#   plain     `make -j2 -C KDIR M=COPY modules` in the shell, host compiler, no sandbox;
#   sandboxed `autodriver check --no-sparse` build gate (bubblewrap, the suite's toolchain root,
#             scratch copy; the gate's own elapsed_ms, which also counts copying the tree).
#   bench/sandbox.sh [N] [LINE...]   (default N=5, lines 6.1 6.12: their compiler is the host's gcc-12)
# Prints a markdown table of medians; docs/benchmarks.md's table comes from this script.
set -eu
cd "$(dirname "$0")/.."
N="${1:-5}"
[ $# -gt 0 ] && shift
LINES="${*:-6.1 6.12}"
AD="${AD:-$(command -v autodriver || echo build/src/autodriver/autodriver)}"
OUT=$(mktemp -d /tmp/ad-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
# Drivers: the bundled one-file example and e1000 (4 files) from linux-source-6.1.
mkdir -p "$OUT/drivers"
cp -r examples/misc-counter "$OUT/drivers/misc-counter"
SRC=$("$AD" kernel source 6.1)
cp -r "$SRC/drivers/net/ethernet/intel/e1000" "$OUT/drivers/e1000"
sed -i 's/^obj-\$(CONFIG_E1000)/obj-m/' "$OUT/drivers/e1000/Makefile"
now_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }
for line in $LINES; do
  kdir=$("$AD" kernel info "$line" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["build_dir"])')
  for drv in misc-counter e1000; do
    i=1
    while [ "$i" -le "$N" ]; do
      rm -rf "$OUT/copy" && cp -r "$OUT/drivers/$drv" "$OUT/copy"
      t0=$(now_ms)
      make -j2 -C "$kdir" M="$OUT/copy" modules > "$OUT/plain.log" 2>&1 || { cat "$OUT/plain.log"; exit 1; }
      t1=$(now_ms)
      echo "$drv $line plain $((t1 - t0))" >> "$OUT/times"
      "$AD" check "$OUT/drivers/$drv" -k "$line" --no-sparse --json > "$OUT/c.json"
      python3 - "$OUT/c.json" "$drv" "$line" >> "$OUT/times" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(r,) = d["gates"]["build"]["by_kernel"].values()
assert r["ok"], "sandboxed build failed"
print(sys.argv[2], sys.argv[3], "sandboxed", r["elapsed_ms"])
PY
      i=$((i + 1))
    done
  done
done
python3 - "$OUT/times" <<'PY'
import statistics, sys
t = {}
for l in open(sys.argv[1]):
    drv, line, mode, ms = l.split()
    t.setdefault((drv, line), {}).setdefault(mode, []).append(int(ms) / 1000)
print("| driver | kernel | plain median s | sandboxed median s | overhead | runs |")
print("|---|---|---|---|---|---|")
for (drv, line), m in t.items():
    p, s = statistics.median(m["plain"]), statistics.median(m["sandboxed"])
    print(f"| {drv} | {line} | {p:.2f} | {s:.2f} | {100 * (s - p) / p:+.0f} % | {len(m['plain'])} |")
PY
