# Rerun and explain on real runs (6.1/6.12 headers, real kbuild): rerun keeps the run's options
# (--from, proposers, iterations) unless --with overrides them; a wrong imported KB entry is
# attributed by explain to the store-kb edit and confirmed by a counterfactual replay.
. "$(dirname "$0")/lib.sh.inc"
need spatch
need python3
need_kernel 6.12
need_kernel 6.1
S="$WORK/runs.sqlite"
# A driver hit by the 6.4 API change of class_create (it lost its owner argument).
mkdir -p "$WORK/drva"
cat > "$WORK/drva/drva.c" <<'EOF'
#include <linux/module.h>
#include <linux/device.h>
#include <linux/err.h>

static struct class *drva_class;

static int __init drva_init(void)
{
	drva_class = class_create(THIS_MODULE, "drva");
	if (IS_ERR(drva_class))
		return PTR_ERR(drva_class);
	return 0;
}

static void __exit drva_exit(void)
{
	class_destroy(drva_class);
}

module_init(drva_init);
module_exit(drva_exit);
MODULE_LICENSE("GPL");
EOF
echo "obj-m += drva.o" > "$WORK/drva/Makefile"
run_of() { python3 -c "import json; print(json.load(open('$1'))['run'])"; }

# 1. Rerun keeps the original options; --with overrides them (recorded in args.with).
"$AD" --store "$S" port "$WORK/drva" --from 6.1 --to 6.12 --proposer target-api --max-iters 2 --budget-s 120 -o "$WORK/outa2" --json > "$WORK/a2.json" || fail "port drva --from"
RA2=$(run_of "$WORK/a2.json")
"$AD" --store "$S" rerun "$RA2" --from-step 0 -o "$WORK/outr" --json > "$WORK/r.json" || fail "rerun"
"$AD" --store "$S" show last --json > "$WORK/r_show.json" || fail "show rerun"
py "$WORK/r_show.json" "d['run']['parent_run'] == $RA2 and d['run']['command'] == 'rerun' and d['run']['status'] == 'ok'" "rerun linked"
py "$WORK/r_show.json" "[d['run']['args'][k] for k in ('from', 'to', 'proposers', 'max_iters', 'budget_s', 'with')] == ['6.1', '6.12', ['target-api'], 2, 120, {}]" "rerun kept the options"
py "$WORK/r_show.json" "{s['component'] for s in d['steps'] if s['kind'] == 'propose'} == {'target-api'}" "rerun used the recorded proposers only"
"$AD" --store "$S" show "$RA2" --json > "$WORK/a2_show.json"
ACC=$(python3 -c "import json; print(min(s['seq'] for s in json.load(open('$WORK/a2_show.json'))['steps'] if s['kind'] == 'accept'))")
"$AD" --store "$S" rerun "$RA2" --from-step "$ACC" --with budget-s=60 -o "$WORK/outr2" --json > "$WORK/r2.json" || fail "rerun from the accepted edit"
"$AD" --store "$S" show last --json > "$WORK/r2_show.json"
py "$WORK/r2_show.json" "d['run']['args']['from'] == '6.1' and d['run']['args']['proposers'] == ['target-api'] and d['run']['args']['max_iters'] == 2 and d['run']['args']['budget_s'] == 60 and d['run']['args']['with'] == {'budget-s': 60}" "rerun kept --from/--proposer/--max-iters and took --with"
py "$WORK/r2_show.json" "[(s['kind'], s['output']['ok']) for s in d['steps'] if s['kind'].startswith('build')][:1] == [('build-target', True)] and 'build-from' not in [s['kind'] for s in d['steps']]" "the target built the checkpoint (a port that builds needs no old-kernel build)"
rc=0; "$AD" --store "$S" rerun "$RA2" --from-step 0 --with colour=blue -o "$WORK/outr3" 2> "$WORK/with.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "colour=blue" "$WORK/with.err" || fail "an unknown --with key: exit $rc"

# 2. A wrong KB entry (a correct class_create fix plus a bogus class_destroy rename), imported:
# explain attributes the new error to the store-kb edit and confirms it by replay.
cat > "$WORK/wrong.json" <<'EOF'
{"schema": "autodriver.kb-bundle", "schema_version": 1, "entries": [
 {"signature": "too-many-arguments: too many arguments to function 'class_create'", "change_id": "call:class_create",
  "label": "arguments-changed", "title": "class_create() lost its owner (and a wrong class_destroy rename)", "proposer": "target-api",
  "edit": {"smpl": "@@\nexpression E0, E1;\n@@\n- class_create(E0, E1)\n+ class_create(E1)\n\n@@\nexpression E;\n@@\n- class_destroy(E)\n+ class_destroy_all(E)\n",
           "symbols": ["class_create"], "renames": [], "text_edits": []},
  "patch": "", "evidence": {}}]}
EOF
WS="$WORK/wrong.sqlite"
"$AD" --store "$WS" kb import "$WORK/wrong.json" > /dev/null || fail "kb import"
rc=0; "$AD" --store "$WS" port "$WORK/drva" --to 6.12 --proposer store-kb -o "$WORK/outw" --json > "$WORK/w.json" || rc=$?
[ "$rc" -eq 1 ] || fail "the wrong entry's port: exit $rc, expected 1 (failed)"
RW=$(run_of "$WORK/w.json")
"$AD" --store "$WS" explain "$RW" --json > "$WORK/explain.json" || fail "explain"
py "$WORK/explain.json" "d['attribute'][0]['cause'] == 'proposer-regression' and d['attribute'][0]['step']['component'] == 'store-kb'" "attributed to the store-kb edit"
py "$WORK/explain.json" "d['attribute'][0]['replay']['result'] == 'confirmed' and d['replays'] == 1" "confirmed by replay"
py "$WORK/explain.json" "[b['has_error'] for b in d['attribute'][0]['replay']['builds']] == [False, True]" "absent before, present after"
py "$WORK/explain.json" "any('--with store-kb=false' in r.get('command', '') for r in d['recover'])" "recover without the KB"
"$AD" --store "$WS" explain "$RW" --no-replay --json > "$WORK/explain0.json" || fail "explain --no-replay"
py "$WORK/explain0.json" "d['replays'] == 0 and 'replay' not in d['attribute'][0]" "--no-replay rebuilt something"
echo PASS
