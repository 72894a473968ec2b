# A module that oopses in probe: the verdict says oops (then panic), names the module and
# the faulting function, and the exit code is 1.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
rc=0; "$AD" check "$AD_SRC/tests/fixtures/drivers/edu-oops" -k 6.1 -k 6.12 --no-sparse --boot --device edu --json > "$WORK/o.json" || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1, got $rc"
py "$WORK/o.json" "d['ok'] is False and d['gates']['build']['ok'] is True and d['gates']['boot']['ok'] is False"
for r in $R61 $R612; do
  py "$WORK/o.json" "$(boot_of $r)['details']['outcome'] == 'panic'"
  py "$WORK/o.json" "$(boot_of $r)['details']['qemu']['exit_code'] == 1" "pvpanic made QEMU exit 1"
  py "$WORK/o.json" "[f['kind'] for f in $(boot_of $r)['details']['findings']][:2] == ['oops', 'panic']"
  py "$WORK/o.json" "$(boot_of $r)['details']['findings'][0]['module'] == 'edu_oops'"
  py "$WORK/o.json" "'edu_probe' in $(boot_of $r)['details']['findings'][0]['location']"
  py "$WORK/o.json" "'Call Trace' in $(boot_of $r)['details']['console']"
done
echo PASS
