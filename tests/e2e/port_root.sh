#!/bin/sh
# Drivers that reach outside their folder (issue 17 item 7): a vendor repository whose driver's
# Makefile compiles a file of a sibling folder (../../common/timer_helpers.o) and adds its
# include folder (-I$(src)/../../common/inc).
#  1. check DIR finds the root from the Makefile, copies it, builds; the JSON names the root;
#  2. the driver's folder copied alone: the build fails and the diagnostic says to give --root;
#     a --root that does not hold DIR is bad input (exit 2);
#  3. port DIR --to 7.3 repairs the sibling file (del_timer_sync() is gone in 7.3): OUT/tree is
#     the root with the driver inside, the patch names the repository's paths, the user's tree
#     is untouched; a rerun copies the recorded root again; with --root given the same.
. "$(dirname "$0")/lib.sh.inc"
need_kernel 6.12
need_kernel 7.3

REPO="$WORK/repo"
mkdir -p "$REPO/common/inc" "$REPO/drivers/tick" "$REPO/drivers/other"
cat > "$REPO/common/inc/timer_helpers.h" <<'EOF'
#include <linux/timer.h>
void helpers_stop(struct timer_list *t);
EOF
cat > "$REPO/common/timer_helpers.c" <<'EOF'
#include <linux/timer.h>
#include "timer_helpers.h"

void helpers_stop(struct timer_list *t)
{
	del_timer_sync(t);
}
EOF
cat > "$REPO/drivers/tick/main.c" <<'EOF'
#include <linux/module.h>
#include <linux/timer.h>
#include "timer_helpers.h"

static struct timer_list tick;
static void tick_fn(struct timer_list *t) { }
static int __init m_init(void) { timer_setup(&tick, tick_fn, 0); return 0; }
static void __exit m_exit(void) { helpers_stop(&tick); }
module_init(m_init);
module_exit(m_exit);
MODULE_LICENSE("GPL");
EOF
cat > "$REPO/drivers/tick/Makefile" <<'EOF'
obj-m += tick.o
tick-y := main.o ../../common/timer_helpers.o
ccflags-y += -I$(src)/../../common/inc
EOF
echo 'this folder is not the driver' > "$REPO/drivers/other/README"
before=$(cd "$REPO" && find . -type f | sort | xargs md5sum)

# 1. check finds the root
"$AD" check "$REPO/drivers/tick" --kernel 6.12 --no-sparse --json > "$WORK/check.json" 2> "$WORK/check.err" ||
  { cat "$WORK/check.err" "$WORK/check.json" >&2; fail "check of a driver with a sibling folder failed"; }
py "$WORK/check.json" "d['ok'] and d['root'] == '$REPO' and d['tree'] == '$REPO/drivers/tick'" "check names the root and the driver"

# 2. the folder alone cannot build, and says why
cp -r "$REPO/drivers/tick" "$WORK/alone"
rc=0
"$AD" check "$WORK/alone" --kernel 6.12 --no-sparse --json > "$WORK/alone.json" 2> "$WORK/alone.err" || rc=$?
[ "$rc" = 1 ] || fail "check of the folder alone: exit $rc, expected 1 (a failed build)"
"$AD" check "$WORK/alone" --kernel 6.12 --no-sparse > "$WORK/alone.txt" 2>&1 || true
grep -q 'outside its folder, which is not there.*give --root' "$WORK/alone.txt" || { cat "$WORK/alone.txt" >&2; fail "the log does not say to give --root"; }
py "$WORK/alone.json" "'root' not in d and any('--root' in x['message'] for x in d['gates']['build']['by_kernel']['$R612']['diagnostics'])" \
  "the build's diagnostic names --root"
rc=0
"$AD" check "$REPO/drivers/tick" --root "$REPO/drivers/other" --kernel 6.12 > /dev/null 2> "$WORK/badroot.err" || rc=$?
[ "$rc" = 2 ] || fail "--root not holding DIR: exit $rc, expected 2"
grep -q 'is not inside --root' "$WORK/badroot.err" || { cat "$WORK/badroot.err" >&2; fail "no clear message for a --root that does not hold DIR"; }

# 3. port repairs the sibling file
"$AD" port "$REPO/drivers/tick" --to 7.3 --from 6.12 --no-store-kb -o "$WORK/out" --json > "$WORK/port.json" 2> "$WORK/port.err" ||
  { cat "$WORK/port.err" >&2; fail "port of a driver with a sibling folder failed"; }
py "$WORK/port.json" "d['status'] == 'ported' and d['root'] == '$REPO' and d['tree'] == '$REPO/drivers/tick'" "port verdict"
grep -q 'timer_delete_sync(t)' "$WORK/out/tree/common/timer_helpers.c" || fail "the sibling file was not repaired in OUT/tree"
[ -f "$WORK/out/tree/drivers/tick/main.c" ] || fail "OUT/tree does not hold the driver at its place in the root"
grep -q '^+++ b/common/timer_helpers.c' "$WORK"/out/patches/*.patch || fail "the patch does not name the repository's path"
# a rerun from the first accepted edit copies the recorded root again
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"])' "$WORK/port.json")
"$AD" rerun "$RUN" --from-step 1 -o "$WORK/out3" --json > "$WORK/rerun.json" 2> "$WORK/rerun.err" ||
  { cat "$WORK/rerun.err" >&2; fail "rerun of a port with a root failed"; }
py "$WORK/rerun.json" "d['ok'] is True and d['parent_run'] == $RUN" "rerun of the root port"
[ -f "$WORK/out3/tree/drivers/tick/main.c" ] && [ -f "$WORK/out3/tree/common/timer_helpers.c" ] || fail "the rerun's OUT/tree is not the root"
after=$(cd "$REPO" && find . -type f | sort | xargs md5sum)
[ "$before" = "$after" ] || fail "the user's repository was written"

"$AD" port "$REPO/drivers/tick" --root "$REPO" --to 7.3 --no-store-kb -o "$WORK/out2" --json > "$WORK/port2.json" 2> "$WORK/port2.err" ||
  { cat "$WORK/port2.err" >&2; fail "port with --root failed"; }
py "$WORK/port2.json" "d['status'] == 'ported' and d['root'] == '$REPO'" "port --root verdict"
echo "ok: port_root"
