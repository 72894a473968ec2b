# The bundled example builds, is sparse-clean and loads on 6.1, 6.12 and 7.3 (each with its own compiler); the tree is not written.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 7.3
cp -r "$AD_SRC/examples/misc-counter" "$WORK/tree"
"$AD" check "$WORK/tree" --kernel 6.1 --kernel 6.12 --kernel 7.3 --boot --json > "$WORK/out.json" || fail "check exited $?"
py "$WORK/out.json" "d['schema'] == 'autodriver.check' and d['schema_version'] == 1 and d['ok'] is True"
py "$WORK/out.json" "d['gates']['build']['ok'] and d['gates']['sparse']['ok'] and d['gates']['boot']['ok']"
for r in $R61 $R612 $R73; do
  py "$WORK/out.json" "$(boot_of $r)['details']['outcome'] == 'ok'"
  py "$WORK/out.json" "$(boot_of $r)['details']['insmod']['misc_counter']['rc'] == 0"
  py "$WORK/out.json" "$(boot_of $r)['details']['rmmod']['misc_counter'] == 0"
  py "$WORK/out.json" "'O' in $(boot_of $r)['details']['tainted']['flags']"
  py "$WORK/out.json" "d['gates']['build']['by_kernel']['$r']['details']['modules'] == ['misc_counter.ko']"
done
# The user's tree was never written: no build products appeared.
[ -z "$(find "$WORK/tree" -name '*.o' -o -name '*.ko' -o -name '.*.cmd')" ] || fail "build products in the user's tree"
echo PASS
