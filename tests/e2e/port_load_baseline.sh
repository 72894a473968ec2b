# A module the unchanged driver cannot load on its own kernel either (it needs a parameter):
# the port's load test on the target fails, the unchanged driver is loaded on --from, and the
# verdict says the load test cannot judge the port instead of blaming it (gates-failed).
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 6.1
need_kernel 6.12
rc=0; "$AD" port "$AD_SRC/tests/fixtures/drivers/needs-param" --from 6.1 --to 6.12 --boot --no-store-kb \
  -o "$WORK/out" --json > "$WORK/v.json" || rc=$?
[ $rc -eq 0 ] || { cat "$WORK/v.json" >&2; fail "expected exit 0 (nothing the port broke), got $rc"; }
py "$WORK/v.json" "d['status'] != 'gates-failed'" "the port was blamed for a module that never loads"
py "$WORK/v.json" "d['gates']['gates']['boot']['by_kernel']['$R612']['details']['outcome'] == 'insmod-failed'" "the target's load did not fail as expected"
py "$WORK/v.json" "d['gates']['baseline']['outcome'] == 'insmod-failed'" "the baseline load on 6.1 is not in the verdict"
py "$WORK/v.json" "any(s['step'] == 'baseline-load' for s in d['steps'])" "no baseline-load step"
echo PASS
