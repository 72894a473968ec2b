#!/bin/bash
# Collapsed-block benchmark (issue 5 items 4-5). Not a test: it prints a table.
#
#   AD=build/src/autodriver/autodriver bench/collapsed_blocks.sh [WORKDIR]
#
# MODE=older (default): every `#if LINUX_VERSION_CODE` block of Debian's *-dkms sources whose new
#   branch 6.1 compiles (boundary <= 6.1, and below the next branch of an #elif chain) is collapsed
#   to the branch just below it (the old-API form); `kb cases --check-build` keeps the eligible ones
#   (the package as shipped builds on 6.1, the collapsed tree does not) and counts the rest by
#   reason. Each case is ported with `--to 6.1` (no --from: no older kernel exists here), leaving
#   its own package out of the compat KB, and compared on C tokens with the maintainers' branch.
#   CAP (default 6) eligible cases per package, packages whose own build takes > MAX_BUILD_S
#   (default 60) seconds are skipped; JOBS (default 2) ports at a time.
# MODE=span: the blocks with a boundary in (6.1, 6.12], collapsed to the branch 6.1 compiles and
#   ported with `--to 6.12`, with and without `--from 6.1` (the earlier benchmark).
#
# SUMMARY_ONLY=1 reprints the table of an earlier WORKDIR; CASES=DIR ports the cases of an earlier
# `kb cases` run instead of making them again. PORT_ARGS="--no-rule-packs" adds options to every
# port (split on spaces).
set -u
AD=${AD:-build/src/autodriver/autodriver}
MODE=${MODE:-older}
CAP=${CAP:-6}
MAX_BUILD_S=${MAX_BUILD_S:-60}
JOBS=${JOBS:-2}
BUDGET_S=${BUDGET_S:-300}
W=${1:-$(mktemp -d /tmp/ad-collapsed.XXXXXX)}
mkdir -p "$W/runs"
echo "workdir: $W" >&2

port_case() { # case-dir mode -> one JSON line on stdout
  local c=$1 mode=$2 id pkg bcmd out t0 t1 same to extra=()
  id=$(basename "$c")
  pkg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["package"])' "$c/case.json")
  bcmd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("build_cmd", ""))' "$c/case.json")
  to=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["to"])' "$c/case.json")
  [ "$mode" = from ] && extra=(--from 6.1)
  [ -n "$bcmd" ] && extra+=(--build-cmd "$bcmd")
  # shellcheck disable=SC2206
  [ -n "${PORT_ARGS:-}" ] && extra+=($PORT_ARGS)
  out="$W/runs/$id.$mode"
  rm -rf "$out"
  t0=$(date +%s.%N)
  "$AD" port "$c/tree" --to "$to" "${extra[@]}" --kb "$W/kb.json" --kb-leave-out "$pkg" \
    -o "$out" --json --budget-s "$BUDGET_S" > "$out.json" 2> "$out.log"
  t1=$(date +%s.%N)
  same=false
  [ -d "$out/tree" ] && "$AD" kb compare "$c" "$out/tree" >/dev/null 2>&1 && same=true
  python3 - "$out.json" "$id" "$mode" "$t0" "$t1" "$same" <<'PY'
import json, sys
f, cid, mode, t0, t1, same = sys.argv[1:]
try:
    d = json.load(open(f))
except Exception:
    d = {"status": "tool-error", "ok": False, "accepted": []}
print(json.dumps({"case": cid, "mode": mode, "status": d.get("status"), "ok": d.get("ok", False),
                  "identical": same == "true", "seconds": float(t1) - float(t0),
                  "remaining": d.get("remaining", [])[:3],
                  "accepted": [a.get("proposer", "") + ": " + a.get("title", "") for a in d.get("accepted", [])]}))
PY
}

if [ -z "${SUMMARY_ONLY:-}" ]; then
  "$AD" kb build --dkms -o "$W/kb.json" >&2 || exit 2
  if [ -n "${CASES:-}" ]; then
    [ "$(cd "$CASES" && pwd)" = "$(cd "$W" && pwd)/cases" ] || { rm -rf "$W/cases"; cp -r "$CASES" "$W/cases"; }
    modes=(target-only)
    [ "$MODE" = older ] || modes=(from target-only)
  elif [ "$MODE" = older ]; then
    rm -rf "$W/cases"
    "$AD" kb cases --dkms --to 6.1 --older-than-target --check-build --max-per-package "$CAP" \
      --max-package-build-s "$MAX_BUILD_S" -o "$W/cases" >/dev/null || exit 2
    modes=(target-only)
  else
    rm -rf "$W/cases"
    "$AD" kb cases --dkms --from 6.1 --to 6.12 -o "$W/cases" >/dev/null || exit 2
    modes=(from target-only)
  fi
  : > "$W/results.jsonl"
  rm -f "$W"/runs/*.row
  for c in "$W"/cases/*/; do
    for mode in "${modes[@]}"; do
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
      port_case "${c%/}" "$mode" > "$W/runs/$(basename "$c").$mode.row" &
    done
  done
  wait
  cat "$W"/runs/*.row > "$W/results.jsonl"
fi
python3 - "$W/results.jsonl" "$W/cases/summary.json" "$MODE" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
mode_kind = sys.argv[3]
if os.path.exists(sys.argv[2]):
    s = json.load(open(sys.argv[2]))
    print(f"blocks selected: {s['selected_blocks']}, cases: {s['cases']}, excluded: "
          + ", ".join(f"{k} {v}" for k, v in sorted(s["excluded"].items())))
    if s.get("check_build"):
        print("package build on the target (s): " + ", ".join(
            f"{p['package']} {p.get('build_s', 0):.1f}" for p in s["packages"]))
ineligible = {r["case"]: r["status"] for r in rows if r["status"] in ("from-fails", "already-builds", "tool-error")}
if ineligible:
    print(f"not eligible at port time: {len(ineligible)} ({', '.join(sorted(set(ineligible.values())))})")
target = "6.1" if mode_kind == "older" else "6.12"
print(f"| mode | eligible cases | builds on {target} + integrity | identical to maintainers' new branch | median s/case |")
print("|---|---|---|---|---|")
for mode in ("from", "target-only"):
    rs = [r for r in rows if r["mode"] == mode and r["case"] not in ineligible]
    if not rs:
        continue
    n = len(rs)
    ok = sum(r["ok"] for r in rs)
    same = sum(r["identical"] for r in rs)
    med = statistics.median([r["seconds"] for r in rs])
    label = f"--from 6.1 --to {target}" if mode == "from" else f"--to {target} (no --from)"
    pct = lambda k: f"{k}/{n} ({100*k/n:.0f} %)"
    print(f"| {label} | {n} | {pct(ok)} | {pct(same)} | {med:.1f} |")
print()
for r in sorted(rows, key=lambda r: (r["case"], r["mode"])):
    print(f"{r['case']} [{r['mode']}]: {r['status']}, ok={r['ok']}, identical={r['identical']}, {r['seconds']:.1f} s; "
          + "; ".join(r["accepted"]) + ("" if r["ok"] else " | " + " / ".join(r.get("remaining", []))[:300]))
PY
