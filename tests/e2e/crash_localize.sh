# A seeded bug crashes in QEMU; `autodriver crash` reads the console the boot gate captured,
# symbolizes it against the driver built with debug info and points at the line that wrote
# through NULL (edu_oops.c:20), stating that p was set to NULL at line 17, on 6.12 and 7.3.
# Bad input: a log with no crash, a log of another kernel, a driver that does not build: one
# clear line, exit 2.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 6.12
need_kernel 7.3
DRV="$AD_SRC/tests/fixtures/drivers/edu-oops"
for k in 6.12 7.3; do
  rc=0; "$AD" check "$DRV" -k $k --no-sparse --boot --device edu --json > "$WORK/check-$k.json" || rc=$?
  [ $rc -eq 1 ] || fail "$k: check --boot expected exit 1, got $rc"
  rel=$(kernel_field $k release)
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["gates"]["boot"]["by_kernel"][sys.argv[2]]["details"]["console"])' \
    "$WORK/check-$k.json" "$rel" > "$WORK/console-$k.txt"
  "$AD" crash "$WORK/console-$k.txt" --driver "$DRV" --kernel $k --json > "$WORK/crash-$k.json" || fail "$k: crash exited $?"
  py "$WORK/crash-$k.json" "d['reports'][0]['title'] == 'BUG: kernel NULL pointer dereference in edu_probe'"
  py "$WORK/crash-$k.json" "d['reports'][0]['kind'] == 'null-deref' and d['reports'][0]['panicked']"
  py "$WORK/crash-$k.json" "d['in_driver'] and d['symbolized_frames'] >= 1"
  py "$WORK/crash-$k.json" "d['localized'][0]['function'] == 'edu_probe' and d['localized'][0]['why'] == 'faulting instruction'"
  py "$WORK/crash-$k.json" "d['localized'][0]['file'] == 'edu_oops.c' and d['localized'][0]['line'] == 20 and d['localized'][0]['from_debug_info']" \
    "$k: expected edu_oops.c:20 from the debug info, got $(cat "$WORK/crash-$k.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["localized"][:1])')"
  py "$WORK/crash-$k.json" "d['hypotheses'][0]['kind'] == 'null-pointer' and d['hypotheses'][0]['statement'] == 'p is set to NULL at edu_oops.c:17 and dereferenced at edu_oops.c:20 in edu_probe()'" \
    "$k: hypothesis: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hypotheses"][:1])' "$WORK/crash-$k.json")"
  "$AD" crash "$WORK/console-$k.txt" --driver "$DRV" --kernel $k | grep -q "edu_oops.c:20" || fail "$k: human output lacks edu_oops.c:20"
  # Recorded in the run store, with its hypotheses as a step.
  run=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"])' "$WORK/crash-$k.json")
  "$AD" show "$run" > "$WORK/show-$k.txt" || fail "$k: show $run failed"
  grep -q "crash ok (localized)" "$WORK/show-$k.txt" && grep -q " hypothesize .*p is set to NULL at edu_oops.c:17" "$WORK/show-$k.txt" ||
    fail "$k: the run store lacks the crash run: $(cat "$WORK/show-$k.txt")"
done
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a["reports"][0]["title"] != b["reports"][0]["title"])' "$WORK/crash-6.12.json" "$WORK/crash-7.3.json" \
  || fail "the same bug has two titles on 6.12 and 7.3"
# Bad input.
printf 'just a boot log\nnothing happened\n' > "$WORK/clean.txt"
rc=0; "$AD" crash "$WORK/clean.txt" 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "no crash report" "$WORK/err" || fail "a log with no crash: exit $rc, $(cat "$WORK/err")"
rc=0; "$AD" crash "$WORK/console-6.12.txt" --kernel 7.3 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "is from kernel" "$WORK/err" || fail "a log of another kernel: exit $rc, $(cat "$WORK/err")"
mkdir -p "$WORK/broken" && printf 'obj-m := b.o\n' > "$WORK/broken/Makefile" && printf 'int x = ;\n' > "$WORK/broken/b.c"
rc=0; "$AD" crash "$WORK/console-6.12.txt" --driver "$WORK/broken" --kernel 6.12 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "does not build" "$WORK/err" || fail "a driver that does not build: exit $rc, $(cat "$WORK/err")"
echo PASS
