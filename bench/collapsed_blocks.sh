#!/bin/bash
# Collapsed-block benchmark (issue 5 items 4-5): every `#if LINUX_VERSION_CODE` block of Debian's
# *-dkms sources whose boundary lies in (6.1, 6.12] is collapsed to the branch 6.1 compiles; the
# case is ported with `--to 6.12`, leaving the case's own package out of the compat KB, once with
# `--from 6.1` and once with the target alone; the result is compared with the maintainers' branch
# for 6.12 (C tokens, so whitespace and comments do not count).
#
#   AD=build/src/autodriver/autodriver bench/collapsed_blocks.sh [WORKDIR]
#
# Not a test: it prints a table. Cases that do not build on 6.1, already build on 6.12, or that the
# port refuses (no Makefile/Kbuild at the package root) are counted and left out of the shares.
# SUMMARY_ONLY=1 reprints the table of an earlier WORKDIR.
set -u
AD=${AD:-build/src/autodriver/autodriver}
W=${1:-$(mktemp -d /tmp/ad-collapsed.XXXXXX)}
mkdir -p "$W/runs"
echo "workdir: $W" >&2
if [ -z "${SUMMARY_ONLY:-}" ]; then
"$AD" kb build --dkms -o "$W/kb.json" >&2 || exit 2
rm -rf "$W/cases"
"$AD" kb cases --dkms --from 6.1 --to 6.12 -o "$W/cases" >/dev/null || exit 2
: > "$W/results.jsonl"
for c in "$W"/cases/*/; do
  id=$(basename "$c")
  pkg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["package"])' "$c/case.json")
  for mode in from target-only; do
    out="$W/runs/$id.$mode"
    rm -rf "$out"
    extra=()
    [ "$mode" = from ] && extra=(--from 6.1)
    bcmd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("build_cmd", ""))' "$c/case.json")
    [ -n "$bcmd" ] && extra+=(--build-cmd "$bcmd")
    t0=$(date +%s.%N)
    "$AD" port "$c/tree" --to 6.12 "${extra[@]}" --kb "$W/kb.json" --kb-leave-out "$pkg" \
      -o "$out" --json --budget-s 600 > "$out.json" 2> "$out.log"
    t1=$(date +%s.%N)
    same=false
    [ -d "$out/tree" ] && "$AD" kb compare "$c" "$out/tree" >/dev/null 2>&1 && same=true
    python3 - "$out.json" "$id" "$mode" "$t0" "$t1" "$same" >> "$W/results.jsonl" <<'PY'
import json, sys
f, cid, mode, t0, t1, same = sys.argv[1:]
try:
    d = json.load(open(f))
except Exception:
    d = {"status": "tool-error", "ok": False, "accepted": []}
print(json.dumps({"case": cid, "mode": mode, "status": d.get("status"), "ok": d.get("ok", False),
                  "identical": same == "true", "seconds": float(t1) - float(t0),
                  "accepted": [a.get("proposer") + ": " + a.get("title", "") for a in d.get("accepted", [])]}))
PY
  done
done
fi
python3 - "$W/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ineligible = {r["case"]: r["status"] for r in rows if r["mode"] == "from" and r["status"] in ("from-fails", "already-builds", "tool-error")}
print(f"cases: {len({r['case'] for r in rows})} collapsed blocks, {len(ineligible)} not eligible "
      f"({', '.join(sorted(set(ineligible.values()))) or '-'})")
print("| mode | eligible cases | builds on 6.12 + integrity | identical to maintainers' 6.12 branch | median s/case |")
print("|---|---|---|---|---|")
for mode in ("from", "target-only"):
    rs = [r for r in rows if r["mode"] == mode and r["case"] not in ineligible]
    n = len(rs)
    ok = sum(r["ok"] for r in rs)
    same = sum(r["identical"] for r in rs)
    med = statistics.median([r["seconds"] for r in rs]) if rs else 0
    label = "--from 6.1 --to 6.12" if mode == "from" else "--to 6.12 (no --from)"
    pct = lambda k: f"{k}/{n} ({100*k/n:.0f} %)" if n else "0/0"
    print(f"| {label} | {n} | {pct(ok)} | {pct(same)} | {med:.1f} |")
print()
for r in rows:
    print(f"{r['case']} [{r['mode']}]: {r['status']}, identical={r['identical']}, {r['seconds']:.1f} s; "
          + "; ".join(r["accepted"]))
PY
