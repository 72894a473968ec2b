#!/bin/sh
# Benchmark (not a test): clean-build time of a target under several build configurations.
#   bench/build_time.sh [N] [TARGET]   (default N=1, TARGET=autodriver, the main job's build)
# Each run configures a fresh build folder in a temporary directory (deleted after) and builds
# TARGET with -j$(nproc); the configurations alternate, so that load from other work on the machine
# falls on all of them alike. Prints a markdown table of the median wall, user and sys seconds.
# VARIANTS overrides the configurations: "name:cmake-args;name:cmake-args" (args comma-separated).
set -eu
cd "$(dirname "$0")/.."
N="${1:-1}"
TARGET="${2:-autodriver}"
VARIANTS="${VARIANTS:-RelWithDebInfo:-DCMAKE_BUILD_TYPE=RelWithDebInfo;Release:-DCMAKE_BUILD_TYPE=Release;RelWithDebInfo+unity:-DCMAKE_BUILD_TYPE=RelWithDebInfo,-DCMAKE_UNITY_BUILD=ON;Release+unity (setup.sh):-DCMAKE_BUILD_TYPE=Release,-DCMAKE_UNITY_BUILD=ON}"
OUT=$(mktemp -d /tmp/ad-build-time.XXXXXX)
trap 'rm -rf "$OUT"' EXIT INT TERM
i=1
while [ "$i" -le "$N" ]; do
  echo "$VARIANTS" | tr ';' '\n' | while IFS= read -r v; do
    name="${v%%:*}"
    args=$(echo "${v#*:}" | tr ',' ' ')
    key=$(echo "$name" | tr -c 'A-Za-z0-9+\n' '_')
    rm -rf "$OUT/build"
    # shellcheck disable=SC2086
    cmake -S . -B "$OUT/build" -G Ninja $args >/dev/null
    /usr/bin/time -f "%e %U %S" -o "$OUT/$key.$i.time" cmake --build "$OUT/build" --target "$TARGET" -j "$(nproc)" >"$OUT/$key.$i.log" 2>&1 ||
      { echo "build_time.sh: $name failed, see the log:" >&2; tail -20 "$OUT/$key.$i.log" >&2; exit 1; }
    echo "$name $i: $(cat "$OUT/$key.$i.time")" >&2
  done
  i=$((i + 1))
done
python3 - "$OUT" "$VARIANTS" <<'PY'
import glob, re, statistics, sys
out, variants = sys.argv[1], sys.argv[2]
print("| configuration | runs | wall s | user s | sys s | CPU s |")
print("|---|---|---|---|---|---|")
for v in variants.split(";"):
    name = v.split(":", 1)[0]
    key = re.sub(r"[^A-Za-z0-9+]", "_", name)
    runs = [list(map(float, open(f).read().split())) for f in sorted(glob.glob(f"{out}/{key}.*.time"))]
    if not runs:
        continue
    med = [statistics.median(r[k] for r in runs) for k in range(3)]
    cpu = statistics.median(r[1] + r[2] for r in runs)
    print(f"| {name} | {len(runs)} | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.0f} | **{cpu:.0f}** |")
PY
