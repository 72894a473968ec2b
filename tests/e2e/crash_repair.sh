# Crash repair validated by reproduction: on 7.3, a probe that stores into its private
# data before allocating it oopses; `crash --repair` reproduces the oops with the unchanged driver,
# moves the allocation (with its test) before the store and keeps it only after 2 clean boots. A
# probe that reads drvdata never set (on 6.12) gets the kernel drivers' NULL test, which stops the oops but
# leaves the device unbound: refused. A misc device's read() uses its buffer after kfree(): only a
# reproducer (--repro, a C file compiled statically) that reads the device crashes 6.12, and the
# repair moves the kfree() after the last use, validated with the same reproducer. DIR is never written.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 6.12
need_kernel 7.3
UBS="$AD_SRC/tests/fixtures/drivers/edu-use-before-set"
before=$(cat "$UBS/edu_ubs.c" | cksum)
console() { # DIR KERNEL OUT: the boot gate's console of DIR on KERNEL
  "$AD" check "$1" -k "$2" --no-sparse --boot --device edu --json > "$WORK/c.json" || true
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(list(d["gates"]["boot"]["by_kernel"].values())[0]["details"]["console"])' \
    "$WORK/c.json" > "$3"
}
for k in 7.3; do
  console "$UBS" $k "$WORK/ubs-$k.txt"
  rc=0; "$AD" crash "$WORK/ubs-$k.txt" --driver "$UBS" --kernel $k --repair --device edu --runs 2 -o "$WORK/out-$k" --json \
    > "$WORK/r-$k.json" || rc=$?
  [ $rc -eq 0 ] || fail "$k: crash --repair exited $rc: $(repair_why "$WORK/r-$k.json")"
  py "$WORK/r-$k.json" "d['hypotheses'][0]['kind'] == 'use-before-set'"
  py "$WORK/r-$k.json" "d['repair']['status'] == 'repaired' and d['repair']['before']['titles'][0] == d['reports'][0]['title']"
  py "$WORK/r-$k.json" "d['repair']['repair']['clean_runs'] == 2 and all(r['outcome'] == 'ok' for r in d['repair']['repair']['runs'])"
  py "$WORK/r-$k.json" "d['repair']['repair']['integrity']['ok'] and d['repair']['repair']['integrity']['hunks'] >= 1" "the repair did not pass the integrity gate"
  grep -q '^-	priv->pdev = pdev;' "$WORK/out-$k/repair.patch" && grep -q '^+	priv->pdev = pdev;' "$WORK/out-$k/repair.patch" ||
    fail "$k: the patch does not move the store: $(cat "$WORK/out-$k/repair.patch")"
  # The repaired tree boots clean.
  "$AD" check "$WORK/out-$k/tree" -k $k --no-sparse --boot --device edu > /dev/null || fail "$k: the repaired tree does not pass check --boot"
done
[ "$(cat "$UBS/edu_ubs.c" | cksum)" = "$before" ] || fail "the driver folder was written"
CP="$AD_SRC/tests/fixtures/drivers/edu-crash-port"
console "$CP" 6.12 "$WORK/cp.txt"
rc=0; "$AD" crash "$WORK/cp.txt" --driver "$CP" --kernel 6.12 --repair --device edu --runs 3 -o "$WORK/out-cp" --json > "$WORK/cp.json" || rc=$?
[ $rc -eq 1 ] || fail "refused repair: expected exit 1, got $rc"
py "$WORK/cp.json" "d['repair']['status'] == 'not-repaired' and d['repair']['candidates'][0]['kind'] == 'unchecked-result'"
py "$WORK/cp.json" "d['repair']['candidates'][0]['runs'][0]['outcome'] == 'not-bound' and not d['repair']['candidates'][0]['kept']"
py "$WORK/cp.json" "'return -E' in d['repair']['candidates'][0]['patch']"
[ ! -d "$WORK/out-cp/tree" ] || fail "a refused repair left a tree"
rc=0; "$AD" crash "$WORK/cp.txt" --repair 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "needs --driver" "$WORK/err" || fail "--repair without --driver: exit $rc"

UAR="$AD_SRC/tests/fixtures/drivers/misc-read-uar"
REPRO="$AD_SRC/tests/fixtures/repro/read_misc_read_uar.c"
"$AD" check "$UAR" -k 6.12 --no-sparse --boot > /dev/null || fail "misc-read-uar must load and unload cleanly without a reproducer"
rc=0; "$AD" check "$UAR" -k 6.12 --no-sparse --boot --repro "$REPRO" --json > "$WORK/u.json" || rc=$?
[ $rc -eq 1 ] || fail "--repro: expected the reproducer to crash 6.12 (exit 1), got $rc"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(list(d["gates"]["boot"]["by_kernel"].values())[0]["details"]["console"])' \
  "$WORK/u.json" > "$WORK/u.txt"
rc=0; "$AD" crash "$WORK/u.txt" --driver "$UAR" --kernel 6.12 --repair --repro "$REPRO" --runs 2 -o "$WORK/out-u" --json > "$WORK/uc.json" || rc=$?
[ $rc -eq 0 ] || fail "--repro repair: exit $rc"
# The read of the freed buffer faults on SLUB's poison, or KFENCE (which samples allocations)
# reports it first: either names mru_read.
py "$WORK/uc.json" "d['reports'][0]['title'] in ('general protection fault in mru_read', 'KFENCE: use-after-free read in mru_read')"
py "$WORK/uc.json" "d['hypotheses'][0]['kind'] == 'use-after-release' and d['localized'][0]['role'] == 'cause' and d['localized'][0]['file'] == 'misc_read_uar.c'"
py "$WORK/uc.json" "d['repair']['status'] == 'repaired' and d['repair']['repair']['clean_runs'] == 2"
grep -q '^+	kfree(b);' "$WORK/out-u/repair.patch" || fail "--repro repair: kfree(b) not moved: $(cat "$WORK/out-u/repair.patch")"
# Bad reproducers are bad input.
rc=0; "$AD" check "$UAR" -k 6.12 --boot --repro /nonexistent/r.c 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "no such file" "$WORK/err" || fail "--repro missing file: exit $rc: $(cat "$WORK/err")"
printf 'int main(void) { return nope; }\n' > "$WORK/bad.c"
rc=0; "$AD" check "$UAR" -k 6.12 --boot --repro "$WORK/bad.c" 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "does not compile" "$WORK/err" || fail "--repro that does not compile: exit $rc: $(cat "$WORK/err")"
rc=0; "$AD" crash "$WORK/u.txt" --repro "$REPRO" 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] || fail "crash --repro without --repair: exit $rc"
echo PASS
