#!/bin/bash
# --compat on Debian's DKMS drivers that build on 6.1 and fail on 6.12 (issue 5 item 3). Not a
# test: it prints a table. Each package is ported with --from 6.1 --to 6.12 --compat, its own KB
# entries left out; a compat result counts when the guarded tree builds on both kernels.
#
#   AD=build/src/autodriver/autodriver bench/compat_dkms.sh [WORKDIR]
set -u
AD=${AD:-build/src/autodriver/autodriver}
PKGS=${PKGS:-"vpoll-dkms langford-dkms v4l2loopback-dkms tp-smapi-dkms rapiddisk-dkms evdi-dkms apfs-dkms"}
BUDGET_S=${BUDGET_S:-300}
W=${1:-$(mktemp -d /tmp/ad-compat.XXXXXX)}
mkdir -p "$W/deb" "$W/x"
echo "workdir: $W" >&2
(cd "$W/deb" && apt-get download -q $PKGS >/dev/null 2>&1) || { echo "apt-get download failed" >&2; exit 2; }
for pkg in $PKGS; do # one folder per package: its source dir under usr/src is named its own way
  deb=$(ls "$W"/deb/${pkg}_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] && { mkdir -p "$W/x/$pkg"; dpkg -x "$deb" "$W/x/$pkg"; }
done
: > "$W/results.jsonl"
for pkg in $PKGS; do
  src=$(ls -d "$W"/x/$pkg/usr/src/*/ 2>/dev/null | head -1)
  [ -n "$src" ] || { echo "$pkg: no source" >&2; continue; }
  out="$W/$pkg.out"; rm -rf "$out"
  t0=$(date +%s.%N)
  "$AD" port "$src" --from 6.1 --to 6.12 --compat --kb-leave-out "$pkg" -o "$out" --json --budget-s "$BUDGET_S" \
    > "$W/$pkg.json" 2> "$W/$pkg.log"
  t1=$(date +%s.%N)
  python3 - "$W/$pkg.json" "$pkg" "$t0" "$t1" >> "$W/results.jsonl" <<'PY'
import json, sys
f, pkg, t0, t1 = sys.argv[1:]
try:
    d = json.load(open(f))
except Exception:
    d = {"status": "tool-error"}
c = d.get("compat") or {}
print(json.dumps({"package": pkg, "status": d.get("status"), "ported": d.get("status") in ("ported", "compat-failed"),
                  "compat_ok": bool(c.get("ok")), "builds": c.get("builds", {}),
                  "guards": [g.get("guard") + " (" + g.get("source", "") + ")" for g in c.get("guards", [])],
                  "seconds": float(t1) - float(t0)}))
PY
done
python3 - "$W/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| package | port status | compat builds on 6.1 and 6.12 | guards (source) | s |")
print("|---|---|---|---|---|")
for r in rows:
    b = ", ".join(f"{k}: {'ok' if v else 'FAILS'}" for k, v in sorted(r["builds"].items())) or "-"
    g = "; ".join(sorted(set(r["guards"]))) or "-"
    print(f"| {r['package']} | {r['status']} | {'yes' if r['compat_ok'] else 'no'} ({b}) | {g} | {r['seconds']:.0f} |")
ported = [r for r in rows if r["ported"]]
print(f"\nported: {len(ported)}/{len(rows)}; compat result builds on both kernels: "
      f"{sum(r['compat_ok'] for r in ported)}/{len(ported)}")
PY
