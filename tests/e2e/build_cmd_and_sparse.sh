# --build-cmd with {kdir}/{kver} placeholders for a driver with its own Makefile variables;
# the sparse gate counts findings, and with --baseline only new ones.
. "$(dirname "$0")/lib.sh.inc"
need sparse
"$AD" check "$AD_SRC/tests/fixtures/drivers/custom-makefile" -k 6.1 -k 6.12 --no-sparse \
  --build-cmd 'make KERNELDIR={kdir} KVER={kver}' --json > "$WORK/c.json" || fail "custom build exited $?"
py "$WORK/c.json" "'KVER=$R612' in d['gates']['build']['by_kernel']['$R612']['details']['command']"
py "$WORK/c.json" "d['gates']['build']['by_kernel']['$R612']['details']['modules'] == ['hello_custom.ko']"

rc=0; "$AD" check "$AD_SRC/tests/fixtures/drivers/sparse-warn" -k 6.12 --json > "$WORK/s.json" || rc=$?
[ $rc -eq 1 ] || fail "sparse findings must fail the gate (exit $rc)"
py "$WORK/s.json" "d['gates']['build']['ok'] is True and d['gates']['sparse']['ok'] is False"
py "$WORK/s.json" "all(x['tool'] == 'sparse' for x in d['gates']['sparse']['by_kernel']['$R612']['diagnostics'])"
py "$WORK/s.json" "any('sparse_warn_counter' in x['message'] for x in d['gates']['sparse']['by_kernel']['$R612']['diagnostics'])"
py "$WORK/s.json" "any('plain integer as NULL' in x['message'] for x in d['gates']['sparse']['by_kernel']['$R612']['diagnostics'])"

"$AD" check "$AD_SRC/tests/fixtures/drivers/sparse-warn" -k 6.12 --baseline "$AD_SRC/tests/fixtures/drivers/sparse-warn" --json > "$WORK/b.json" || fail "baseline: same findings must pass"
py "$WORK/b.json" "d['gates']['sparse']['by_kernel']['$R612']['details']['baseline_findings'] >= 2"
echo PASS
