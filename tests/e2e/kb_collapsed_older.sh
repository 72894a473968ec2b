#!/bin/sh
# Collapsed-block cases for the target alone (issue 5 item 4): tp-smapi-dkms's blocks whose new
# branch 6.1 compiles, collapsed to the branch below; --check-build keeps the eligible ones and
# counts the rest; one real case (<asm/semaphore.h>, 2.6.26) ported with --to 6.1 and the package
# left out of the KB reproduces the maintainers' new branch. ~30 s.
. "$AD_SRC/tests/e2e/lib.sh.inc"
need_kernel 6.1
"$AD" kb build --package tp-smapi-dkms -o "$WORK/kb.json" > /dev/null || fail "kb build (fetches the package)"

"$AD" kb cases --package tp-smapi-dkms --to 6.1 --older-than-target --check-build -o "$WORK/cases" > "$WORK/ids.txt" \
  || fail "kb cases failed"
S="$WORK/cases/summary.json"
py "$S" 'd["mode"] == "older-than-target" and d["check_build"] and d["cases"] >= 1' "mode / at least one case"
py "$S" 'd["selected_blocks"] == d["cases"] + sum(d["excluded"].values())' "every selected block is a case or counted"
py "$S" 'd["packages"][0]["package"] == "tp-smapi-dkms" and d["packages"][0]["build_s"] > 0' "package build timed"
py "$S" 'd["excluded"].get("already-builds", 0) >= 1' "a collapsed tree that still builds is not a case"
c="$WORK/cases/tp-smapi-dkms--thinkpad_ec.c--L42"
[ -f "$c/case.json" ] || fail "no <asm/semaphore.h> case: $(cat "$WORK/ids.txt")"
py "$c/case.json" 'd["boundary"] == "2.6.26" and d["from"] == "" and d["to"] == "6.1"' "case fields"
grep -q '#include <asm/semaphore.h>' "$c/tree/thinkpad_ec.c" || fail "case does not hold the old branch"
! grep -q 'LINUX_VERSION_CODE < KERNEL_VERSION(2,6,26)' "$c/tree/thinkpad_ec.c" || fail "block not collapsed"

"$AD" port "$c/tree" --to 6.1 --kb-leave-out tp-smapi-dkms -o "$WORK/out" --json > "$WORK/port.json" || fail "port failed"
py "$WORK/port.json" 'd["ok"] and d["status"] == "ported"' "port ok"
"$AD" kb compare "$c" "$WORK/out/tree" > "$WORK/cmp.json" || fail "not the maintainers' new branch"
echo "ok"
