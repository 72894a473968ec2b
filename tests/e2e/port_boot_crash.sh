# A driver written for 6.12 ported to 7.3 builds (del_timer_sync -> timer_delete_sync) and then
# crashes the target in probe: the verdict is gates-failed and names the crash, the line it
# points at (from the ported modules' debug info) and what the source says happened there; the
# run store keeps it as a step. The unchanged driver crashes the same way on 6.12: port does not
# repair a bug that is not the port's. A second driver's 7.x teardown frees its data before the
# last use: unloading the port crashes 7.3 (poisoned memory), never 6.12; port repairs it by
# reproduction and the repair is the series' last patch.
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
py "$WORK/v.json" "'crashes the same way on 6.12' in d['gates']['crash']['repair']"

REL="$AD_SRC/tests/fixtures/drivers/edu-release-port"
before=$(cat "$REL/edu_release_port.c" | cksum)
rc=0; "$AD" port "$REL" --from 6.12 --to 7.3 --boot --device edu --crash-runs 2 -o "$WORK/rel" --json > "$WORK/r.json" || rc=$?
[ $rc -eq 0 ] || fail "release: expected exit 0 after the crash repair, got $rc: $(python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); c = (d.get("gates") or {}).get("crash") or {}
print(d.get("status"), "|", c.get("title"), "|", c.get("repair"), "|", [h.get("kind") for h in c.get("hypotheses") or []])' "$WORK/r.json" 2>&1)"
py "$WORK/r.json" "d['status'] == 'ported' and d['gates']['ok'] is True"
py "$WORK/r.json" "d['gates']['crash']['title'] == 'general protection fault in kobject_put'"
py "$WORK/r.json" "d['gates']['crash']['hypotheses'][0]['kind'] == 'use-after-release' and d['gates']['crash']['hypotheses'][0]['function'] == 'edu_teardown'"
py "$WORK/r.json" "d['gates']['crash']['localized'][0]['role'] == 'cause' and d['gates']['crash']['localized'][0]['line'] == 47"
py "$WORK/r.json" "d['gates']['crash']['repair']['status'] == 'repaired' and d['gates']['crash']['repair']['repair']['clean_runs'] == 2"
[ "$(ls "$WORK/rel/patches" | wc -l)" -eq 2 ] || fail "release: expected two patches: $(ls "$WORK/rel/patches")"
p2=$(ls "$WORK/rel/patches/"0002-*.patch)
grep -q "^Subject: \[PATCH 2/2\] edu_release_port: fix use-after-release in edu_teardown()" "$p2" || fail "release: patch 2's subject: $(grep Subject "$p2")"
grep -q "^-	kfree(priv);" "$p2" && grep -q "^+	kfree(priv);" "$p2" || fail "release: patch 2 does not move kfree: $(cat "$p2")"
grep -q "kfree(priv);" "$WORK/rel/tree/edu_release_port.c" || fail "release: OUT/tree lost kfree"
[ "$(cat "$REL/edu_release_port.c" | cksum)" = "$before" ] || fail "release: the driver folder was written"
echo PASS
