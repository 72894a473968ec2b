# A driver written for 6.12 ported to 7.3 builds (del_timer_sync -> timer_delete_sync) and then
# crashes the target in probe: the verdict is gates-failed and names the crash, the line it
# points at (from the ported modules' debug info) and what the source says happened there; the
# run store keeps it as a step.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 6.12
need_kernel 7.3
DRV="$AD_SRC/tests/fixtures/drivers/edu-crash-port"
rc=0; "$AD" port "$DRV" --from 6.12 --to 7.3 --boot --device edu -o "$WORK/out" --json > "$WORK/v.json" || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1 (a gate failed), got $rc"
py "$WORK/v.json" "d['status'] == 'gates-failed' and any('timer_delete_sync' in a['title'] for a in d['accepted'])"
py "$WORK/v.json" "d['gates']['crash']['title'] == 'BUG: kernel NULL pointer dereference in edu_probe'"
py "$WORK/v.json" "d['gates']['crash']['localized'][0]['file'] == 'edu_crash_port.c' and d['gates']['crash']['localized'][0]['line'] == 31"
py "$WORK/v.json" "d['gates']['crash']['hypotheses'][0]['kind'] == 'unchecked-result' and 'pci_get_drvdata() at edu_crash_port.c:29' in d['gates']['crash']['hypotheses'][0]['statement']"
py "$WORK/v.json" "d['gates']['crash']['repair'].startswith('not attempted')"
run=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"])' "$WORK/v.json")
"$AD" show "$run" | grep -q " crash " || fail "the run store has no crash step for run $run"
echo PASS
