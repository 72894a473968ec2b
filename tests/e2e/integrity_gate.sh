# The integrity gate in `check --baseline ORIGINAL`: the honest ppdev port builds on 6.12 and
# passes; a port that stubs pp_write compiles but is rejected with the rule and the line.
. "$(dirname "$0")/lib.sh.inc"
need make
F="$AD_SRC/tests/fixtures/integrity"
I="d['gates']['integrity']"

rc=0; "$AD" check "$F/function-stubbed/candidate" -k 6.1 --no-sparse --baseline "$F/function-stubbed/original" \
  --json > "$WORK/stub.json" || rc=$?
[ $rc -eq 1 ] || fail "a stubbed function must fail the integrity gate (exit $rc)"
line=$(grep -n '^static ssize_t pp_write(' "$F/function-stubbed/candidate/ppdev.c" | cut -d: -f1)
py "$WORK/stub.json" "d['gates']['build']['ok'] is True" "the cheat compiles: only the integrity gate may catch it"
py "$WORK/stub.json" "$I['requested'] is True and $I['ok'] is False"
py "$WORK/stub.json" "any(v['rule'] == 'function-stubbed' and v['file'] == 'ppdev.c' and v['line'] == $line and 'pp_write' in v['detail'] for v in $I['by_kernel']['$R61']['details']['violations'])" "function-stubbed at ppdev.c:$line"
py "$WORK/stub.json" "$I['by_kernel']['$R61']['details']['rule_counts']['function-stubbed'] == 1"
py "$WORK/stub.json" "$I['by_kernel']['$R61']['details']['baseline_diagnostics'] == 0"

"$AD" check "$F/legit-ppdev/candidate" -k 6.12 --no-sparse --baseline "$F/legit-ppdev/original" \
  --json > "$WORK/legit.json" || fail "the honest ppdev port must build on 6.12 and pass integrity (exit $?)"
py "$WORK/legit.json" "$I['ok'] is True and $I['by_kernel']['$R612']['details']['violations'] == []"
py "$WORK/legit.json" "$I['by_kernel']['$R612']['details']['baseline_diagnostics'] >= 4" "the baseline's 6.12 diagnostics"
py "$WORK/legit.json" "$I['by_kernel']['$R612']['details']['changed_files'] == ['ppdev.c']"

"$AD" check "$F/legit-ppdev/candidate" -k 6.12 --no-sparse --json > "$WORK/nobase.json" || fail "no baseline (exit $?)"
py "$WORK/nobase.json" "$I['requested'] is False and $I['ok'] is None and $I['by_kernel'] == {}"
echo PASS
