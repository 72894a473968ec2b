# Missing teardown, found with no frame of the driver: misc-timer-leak's init arms a polling timer
# that its exit never stops; after rmmod the next tick runs the module's freed memory from the
# timer softirq (6.12). `crash --repair` names the exit function, learns from the kernel's drivers
# what ends timer_setup() on a teardown path, puts that call first in the exit function and keeps
# it only after 2 clean boots. DIR is never written.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 6.12
MTL="$AD_SRC/tests/fixtures/drivers/misc-timer-leak"
before=$(cat "$MTL/misc_timer_leak.c" | cksum)
rc=0; "$AD" check "$MTL" -k 6.12 --no-sparse --boot --json > "$WORK/c.json" || rc=$?
[ $rc -eq 1 ] || fail "the timer left armed should crash 6.12 after rmmod (exit 1), got $rc: $(gate_why "$WORK/c.json")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(list(d["gates"]["boot"]["by_kernel"].values())[0]["details"]["console"])' \
  "$WORK/c.json" > "$WORK/c.txt"
rc=0; "$AD" crash "$WORK/c.txt" --driver "$MTL" --kernel 6.12 --repair --runs 2 -o "$WORK/out" --json > "$WORK/r.json" || rc=$?
[ $rc -eq 0 ] || fail "crash --repair of the timer left armed exited $rc: $(repair_why "$WORK/r.json")"
py "$WORK/r.json" "d['hypotheses'][0]['kind'] == 'missing-teardown' and d['hypotheses'][0]['function'] == 'mtl_exit'"
py "$WORK/r.json" "'timer_setup' in d['hypotheses'][0]['statement'] and any('teardown function' in e for e in d['hypotheses'][0]['evidence'])"
py "$WORK/r.json" "d['repair']['status'] == 'repaired' and d['repair']['repair']['clean_runs'] == 2 and all(r['outcome'] == 'ok' for r in d['repair']['repair']['runs'])"
grep -Eq '^\+	(del_timer_sync|timer_delete_sync)\(&mtl_timer\);' "$WORK/out/repair.patch" ||
  fail "the exit function does not stop the timer: $(cat "$WORK/out/repair.patch")"
[ "$(cat "$MTL/misc_timer_leak.c" | cksum)" = "$before" ] || fail "the driver folder was written"
echo PASS
