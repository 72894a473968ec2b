#!/bin/sh
# Porting to today's kernel (issue 15): hangcheck-timer, a real in-tree driver as linux-source-6.12
# and -6.1 ship it, builds on its own kernel and fails on 7.3 (del_timer_sync() went in 6.16).
#  1. --from 6.12 --to 7.3 --compat --compat 6.1 --boot: ported by the rewrite the kernel's own
#     drivers made, guarded so the result builds on 6.1, 6.12 and 7.3, and loads in the 7.3 guest;
#  2. --from 6.1 --to 7.3 in one run;
#  3. no --from: the newest older source (7.2) no longer declares del_timer_sync, so the port walks
#     down Debian's chain of kernel sources to one that does and learns from it;
#  4. no --from, a driver of 6.12 using the timer APIs 2025 changed (from_timer(), hrtimer_init()
#     with its .function assignment, del_timer_sync() in a condition) behind a header that moved:
#     gcc names the functions only once the header is fixed, and the reference is chosen again for
#     them; the hrtimer merge folds the assignment into hrtimer_setup() and the gate accepts it.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 6.1
need_kernel 6.12
need_kernel 7.3
for l in 6.1 6.12; do
  src=$("$AD" kernel source $l) || fail "kernel source $l"
  mkdir -p "$WORK/h$l"
  cp "$src/drivers/char/hangcheck-timer.c" "$WORK/h$l/"
  echo 'obj-m += hangcheck-timer.o' > "$WORK/h$l/Makefile"
done
grep -q 'del_timer_sync' "$WORK/h6.12/hangcheck-timer.c" || fail "fixture: 6.12's hangcheck-timer no longer calls del_timer_sync"

# 1. one run: port, guard, build on three kernels, boot the target
"$AD" port "$WORK/h6.12" --from 6.12 --to 7.3 --compat --compat 6.1 --boot --leave-out drivers/char/hangcheck-timer.c \
  --no-store-kb -o "$WORK/o1" --json > "$WORK/o1.json" || fail "port --from 6.12 --to 7.3 --compat --compat 6.1 exited $?"
V="$WORK/o1.json"
py "$V" "d['status'] == 'ported' and d['initial_errors'] >= 1" "ported"
py "$V" "any(a['proposer'] == 'learned-rewrite' and 'timer_delete_sync' in a['symbols'] for a in d['accepted'])" "learned del_timer_sync -> timer_delete_sync"
py "$V" "d['compat']['ok'] and d['compat']['builds'] == {'$R61': True, '$R612': True, '$R73': True}" "builds on 6.1, 6.12 and 7.3"
py "$V" "d['gates']['gates']['boot']['by_kernel']['$R73']['ok'] is True" "loads on 7.3"
grep -q 'timer_delete_sync(&hangcheck_ticktock)' "$WORK/o1/tree/hangcheck-timer.c" || fail "no timer_delete_sync in the port"
grep -q '^#if LINUX_VERSION_CODE >= KERNEL_VERSION' "$WORK/o1/tree/hangcheck-timer.c" || fail "no guard in the port"
grep -q 'del_timer_sync(&hangcheck_ticktock)' "$WORK/o1/tree/hangcheck-timer.c" || fail "the old kernels' branch went"

# 2. from 6.1 straight to 7.3
"$AD" port "$WORK/h6.1" --from 6.1 --to 7.3 --leave-out drivers/char/hangcheck-timer.c --no-store-kb -o "$WORK/o2" --json \
  > "$WORK/o2.json" || fail "port --from 6.1 --to 7.3 exited $?"
py "$WORK/o2.json" "d['status'] == 'ported' and d['from'] == '6.1' and d['to'] == '7.3'" "6.1 -> 7.3 ported"

# 3. target only: the reference chain
"$AD" port "$WORK/h6.12" --to 7.3 --leave-out drivers/char/hangcheck-timer.c --no-store-kb -o "$WORK/o3" --json \
  > "$WORK/o3.json" || fail "port --to 7.3 exited $?"
py "$WORK/o3.json" "d['status'] == 'ported'" "target-only port"
py "$WORK/o3.json" "[s['kernel'] for s in d['steps'] if s['step'] == 'reference'][-1] != '$(kernel_field 7.2 release)'" "the reference moved past 7.2"
py "$WORK/o3.json" "any(s['step'] == 'reference' and s.get('declares_missing', 0) >= 1 for s in d['steps'])" "reference declares the missing name"

# 4. names gcc reports only after the first fix choose the reference too
"$AD" port "$AD_SRC/tests/fixtures/drivers/timers-2025" --to 7.3 --no-store-kb -o "$WORK/o4" --json > "$WORK/o4.json" ||
  fail "port timers-2025 --to 7.3 exited $?"
py "$WORK/o4.json" "d['status'] == 'ported' and d['integrity']['ok']" "timers-2025 ported, integrity passed"
py "$WORK/o4.json" "[s['kernel'] for s in d['steps'] if s['step'] == 'reference'][-1] != '$(kernel_field 7.2 release)'" "the reference moved past 7.2 for the later names"
grep -q 'hrtimer_setup(&f->hr, t25_hr, CLOCK_MONOTONIC, HRTIMER_MODE_REL);' "$WORK/o4/tree/timers2025.c" || fail "no hrtimer_setup with the callback"
grep -q 'timer_container_of(f, t, t)' "$WORK/o4/tree/timers2025.c" || fail "no timer_container_of"
grep -q 'if (timer_delete_sync(&f->t))' "$WORK/o4/tree/timers2025.c" || fail "no timer_delete_sync in the condition"
grep -q 'f->hr.function' "$WORK/o4/tree/timers2025.c" && fail "the .function assignment is still there"
echo PASS
