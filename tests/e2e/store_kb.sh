# The run store's KB in the loop (6.12 headers, real kbuild): a solved port records an entry; a
# second driver with the same diagnostic signature gets the recorded edit from store-kb first;
# --no-store-kb turns it off; `bench` never replays a case's own entries; a bundle with a script
# rule is refused.
. "$(dirname "$0")/lib.sh.inc"
need spatch
need python3
need_kernel 6.12
S="$WORK/runs.sqlite"
# Two different drivers hitting the same 6.4 API change (class_create lost its owner argument).
mkdir -p "$WORK/drva" "$WORK/drvb"
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
cat > "$WORK/drvb/bravo.c" <<'EOF'
#include <linux/module.h>
#include <linux/device.h>
#include <linux/err.h>

struct bravo_state {
	struct class *cls;
	int opened;
};

static struct bravo_state state;

static int bravo_setup(struct bravo_state *s)
{
	s->opened = 0;
	s->cls = class_create(THIS_MODULE, "bravo_ctl");
	return IS_ERR(s->cls) ? PTR_ERR(s->cls) : 0;
}

static int __init bravo_init(void)
{
	return bravo_setup(&state);
}

static void __exit bravo_exit(void)
{
	class_destroy(state.cls);
}

module_init(bravo_init);
module_exit(bravo_exit);
MODULE_LICENSE("GPL");
EOF
echo "obj-m += bravo.o" > "$WORK/drvb/Makefile"
run_of() { python3 -c "import json; print(json.load(open('$1'))['run'])"; }
steps_of() { "$AD" --store "$2" show "$1" --json > "$WORK/steps.json" || fail "show $1"; }

# 1. drva: solved by a fresh proposer; the store keeps one entry per solved diagnostic.
"$AD" --store "$S" port "$WORK/drva" --to 6.12 -o "$WORK/outa" --json > "$WORK/a.json" || fail "port drva"
py "$WORK/a.json" "d['ok'] and [a['proposer'] for a in d['accepted']] != ['store-kb']" "drva solved without the KB"
python3 -c "
import sqlite3, sys
n = sqlite3.connect('$S').execute(\"select count(*) from kb_entries where signature = 'too-many-arguments: too many arguments to function ''class_create''' and run_id = $(run_of "$WORK/a.json")\").fetchone()[0]
sys.exit(0 if n == 1 else 1)" || fail "no KB entry for drva's solved diagnostic"

# 2. drvb (another driver, file and line): store-kb proposes the recorded edit and it is accepted.
"$AD" --store "$S" port "$WORK/drvb" --to 6.12 -o "$WORK/outb" --json > "$WORK/b.json" || fail "port drvb"
py "$WORK/b.json" "d['ok'] and [a['proposer'] for a in d['accepted']] == ['store-kb']" "drvb: the KB edit was not the accepted one"
RB=$(run_of "$WORK/b.json")
steps_of "$RB" "$S"
py "$WORK/steps.json" "[s['component'] for s in d['steps'] if s['kind'] == 'propose'][0] == 'store-kb'" "store-kb asked first"
# Tried first among the single edits (a combined trial of every candidate, component "loop", comes
# first when other proposers offer edits too: then the single edits may not be tried at all), and
# the first accepted.
py "$WORK/steps.json" "(lambda t, a: (not t or t[0] == 'store-kb') and a[:1] == ['store-kb'])([s['component'] for s in d['steps'] if s['kind'] == 'try' and s['component'] != 'loop'], [s['component'] for s in d['steps'] if s['kind'] == 'accept'])" "the KB edit tried first"
grep -q "class_create(\"bravo_ctl\")" "$WORK/outb/tree/bravo.c" || fail "the replayed edit is not in drvb's tree"
# --no-store-kb: the same port without the KB uses another proposer.
"$AD" --store "$S" port "$WORK/drvb" --to 6.12 --no-store-kb -o "$WORK/outb2" --json > "$WORK/b2.json" || fail "port --no-store-kb"
py "$WORK/b2.json" "d['ok'] and 'store-kb' not in [a['proposer'] for a in d['accepted']]" "--no-store-kb still replayed the KB"

# 3. Bench leave-out: a case never replays entries recorded by its own runs.
C="$WORK/corpus/cases/drivers__misc__drva"
mkdir -p "$C/before"
cp "$WORK/drva/drva.c" "$WORK/drva/Makefile" "$C/before/"
cat > "$C/metadata.json" <<'EOF'
{"schema_version": 1, "id": "drivers__misc__drva", "origin": "in-tree", "split": "dev",
 "from": {"line": "6.1"}, "to": {"line": "6.12"},
 "unit": {"path": "drivers/misc/drva", "dir": "drivers/misc", "files": ["drva.c"]},
 "runtime": {"kind": "none"}, "golden": {"status": "none"}}
EOF
BS="$WORK/bench.sqlite"
"$AD" --store "$BS" bench "$WORK/corpus" --no-from --no-boot -o "$WORK/bench1" --json > /dev/null || fail "bench 1"
"$AD" --store "$BS" bench "$WORK/corpus" --no-from --no-boot -o "$WORK/bench2" --json > /dev/null || fail "bench 2"
"$AD" --store "$BS" show last --json > "$WORK/bench2.json"
py "$WORK/bench2.json" "d['run']['case_id'] == 'drivers__misc__drva' and d['run']['status'] == 'ok'" "bench 2 ran the case"
py "$WORK/bench2.json" "[s['output']['edits'] for s in d['steps'] if s['kind'] == 'propose' and s['component'] == 'store-kb'] == [0]" "bench replayed the case's own KB entry"
# ... while a plain port of the same tree does get it (the entry exists and matches).
"$AD" --store "$BS" port "$C/before" --to 6.12 -o "$WORK/outc" --json > "$WORK/c.json" || fail "port of the case tree"
py "$WORK/c.json" "[a['proposer'] for a in d['accepted']] == ['store-kb']" "the case's entry is retrievable outside bench"

# A bundle with a script rule is refused and adds nothing.
cat > "$WORK/script.json" <<'EOF'
{"schema": "autodriver.kb-bundle", "schema_version": 1, "entries": [
 {"signature": "too-many-arguments: too many arguments to function 'class_create'", "change_id": "call:class_create",
  "edit": {"smpl": "@script:python@\n@@\nimport os\nos.system('touch /tmp/ad-kb-pwned')\n"}}]}
EOF
rc=0; "$AD" --store "$S" kb import "$WORK/script.json" > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "a script rule in a bundle: exit $rc, expected 2"
python3 -c "
import sqlite3, sys
sys.exit(0 if sqlite3.connect('$S').execute(\"select count(*) from kb_entries where origin like 'import:%'\").fetchone()[0] == 0 else 1)" || fail "the refused bundle added entries"
echo PASS
