# A lock left held, on 7.3: a misc device's read() returns at end of file without mutex_unlock().
# Loading and unloading are clean; a reproducer script that reads the device twice blocks for ever
# in mutex_lock() and the guest's hung-task detector reports it. `crash --repair` names the exit
# that leaves the lock held (mutex_lock/mutex_unlock learned as a pair from 7.3's own drivers),
# adds the unlock there (with braces around the unbraced return) and keeps it after 2 clean runs
# of the same reproducer. DIR is never written. A module init that fails (no firmware) after
# registering a misc device and returns without misc_deregister() leaves the device listed in freed
# module memory: reading /proc/misc faults with no driver frame; the error exit is named
# (misc_register/misc_deregister learned as an undo from 7.3's drivers' error paths) and the
# repair, validated by the same reproducer, keeps init failing but without the crash. A recorded hang
# in rtnl_lock() (a lock taken without an argument) is hypothesized at the exit that leaves it held.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 7.3
MLL="$AD_SRC/tests/fixtures/drivers/misc-lock-leak"
REPRO="$AD_SRC/tests/fixtures/repro/read_misc_lock_leak.sh"
before=$(cat "$MLL/misc_lock_leak.c" | cksum)
rc=0; "$AD" check "$MLL" -k 7.3 --no-sparse --boot --repro "$REPRO" --json > "$WORK/c.json" || rc=$?
[ $rc -eq 1 ] || fail "the reproducer should hang a task on 7.3 (exit 1), got $rc"
py "$WORK/c.json" "list(d['gates']['boot']['by_kernel'].values())[0]['details']['finding_counts'].get('hung-task', 0) >= 1" \
  "no hung-task finding in the boot gate's verdict"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(list(d["gates"]["boot"]["by_kernel"].values())[0]["details"]["console"])' \
  "$WORK/c.json" > "$WORK/c.txt"
rc=0; "$AD" crash "$WORK/c.txt" --driver "$MLL" --kernel 7.3 --repair --repro "$REPRO" --runs 2 -o "$WORK/out" --json > "$WORK/r.json" || rc=$?
[ $rc -eq 0 ] || fail "crash --repair exited $rc: $(repair_why "$WORK/r.json"); the boot's hang report: $(grep -m2 -A12 'blocked for more than' "$WORK/c.txt")"
py "$WORK/r.json" "d['reports'][0]['title'] == 'INFO: task hung in mll_read' and d['reports'][0]['kind'] == 'hung-task'"
py "$WORK/r.json" "d['hypotheses'][0]['kind'] == 'missing-unlock' and d['hypotheses'][0]['line'] == 32"
py "$WORK/r.json" "d['localized'][0]['role'] == 'cause' and d['localized'][0]['line'] == 32"
py "$WORK/r.json" "d['repair']['status'] == 'repaired' and d['repair']['repair']['clean_runs'] == 2"
py "$WORK/r.json" "d['repair']['repair']['integrity']['ok']"
grep -q '^+		mutex_unlock(&mll.lock);' "$WORK/out/repair.patch" && grep -q '^+	if (\*pos > 0) {' "$WORK/out/repair.patch" ||
  fail "the patch does not release the mutex on the early return: $(cat "$WORK/out/repair.patch")"
[ "$(cat "$MLL/misc_lock_leak.c" | cksum)" = "$before" ] || fail "the driver folder was written"
# A lock taken without an argument: rtnl_lock() left held by read() (its console recorded from the
# same kind of run on 7.3): the pair rtnl_lock/rtnl_unlock is learned from 7.3's drivers, the exit named.
MRL="$AD_SRC/tests/fixtures/drivers/misc-rtnl-leak"
rc=0; "$AD" crash "$AD_SRC/tests/fixtures/console/7.3-hung-task-rtnl.txt" --driver "$MRL" --kernel 7.3 --json > "$WORK/rtnl.json" || rc=$?
[ $rc -eq 0 ] || fail "crash of the rtnl console exited $rc"
py "$WORK/rtnl.json" "d['hypotheses'][0]['kind'] == 'missing-unlock' and d['hypotheses'][0]['line'] == 25 and d['localized'][0]['role'] == 'cause'"
py "$WORK/rtnl.json" "any('call rtnl_unlock() after' in e for e in d['hypotheses'][0]['evidence'])"
MIL="$AD_SRC/tests/fixtures/drivers/misc-init-leak"
rc=0; "$AD" check "$MIL" -k 7.3 --no-sparse --boot --repro 'cat /proc/misc' --json > "$WORK/i.json" || rc=$?
[ $rc -eq 1 ] || fail "reading /proc/misc after the failed init should crash 7.3 (exit 1), got $rc"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(list(d["gates"]["boot"]["by_kernel"].values())[0]["details"]["console"])' \
  "$WORK/i.json" > "$WORK/i.txt"
rc=0; "$AD" crash "$WORK/i.txt" --driver "$MIL" --kernel 7.3 --repair --repro 'cat /proc/misc' --runs 2 -o "$WORK/iout" --json > "$WORK/ir.json" || rc=$?
[ $rc -eq 0 ] || fail "crash --repair of the failed init exited $rc: $(repair_why "$WORK/ir.json")"
py "$WORK/ir.json" "d['hypotheses'][0]['kind'] == 'missing-cleanup' and d['localized'][0]['function'] == 'mil_init'"
py "$WORK/ir.json" "d['repair']['status'] == 'repaired' and all(r['outcome'] == 'insmod-failed' and not r['titles'] for r in d['repair']['repair']['runs'])"
grep -q '^+		misc_deregister(&mil_dev);' "$WORK/iout/repair.patch" || fail "no misc_deregister on the error path: $(cat "$WORK/iout/repair.patch")"
echo PASS
