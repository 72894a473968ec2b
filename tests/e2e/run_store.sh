# The run store: a real port (ppdev 6.1 -> 6.12) is recorded step by step; runs/show/explain
# read it back as JSON; patches are stored by sha256; rerun from a checkpoint is a linked run;
# KB export is scrubbed; a port killed with -9 midway reads `interrupted` and the file is
# intact; Ctrl-C (SIGINT) is recorded as interrupted by the process itself; a newer schema is refused.
. "$(dirname "$0")/lib.sh.inc"
need spatch
need python3
SRC=$("$AD" kernel source 6.1) || fail "kernel source 6.1"
"$AD" kernel source 6.12 > /dev/null || fail "kernel source 6.12"
S="$WORK/runs.sqlite"
mkdir -p "$WORK/ppdev"
cp "$SRC/drivers/char/ppdev.c" "$WORK/ppdev/"
echo "obj-m += ppdev.o" > "$WORK/ppdev/Makefile"
port() { "$AD" --store "$S" port "$WORK/ppdev" --from 6.1 --to 6.12 --leave-out drivers/char/ppdev.c "$@"; }

port -o "$WORK/out1" --json > "$WORK/port.json" || fail "port exited non-zero"
py "$WORK/port.json" "d['ok'] is True and isinstance(d['run'], int)"
RUN=$(python3 -c "import json; print(json.load(open('$WORK/port.json'))['run'])")

"$AD" runs --store "$S" --json > "$WORK/runs.json" || fail "runs"
py "$WORK/runs.json" "len(d['runs']) == 1 and d['runs'][0]['id'] == $RUN and d['runs'][0]['status'] == 'ok'"
py "$WORK/runs.json" "d['runs'][0]['command'] == 'port' and d['runs'][0]['summary']['outcome'] == 'ported' and d['runs'][0]['args']['to'] == '6.12'"
"$AD" runs --store "$S" --status failed --json > "$WORK/none.json" || fail "runs --status"
py "$WORK/none.json" "d['runs'] == []" "status filter"

"$AD" --store "$S" show "$RUN" --json > "$WORK/show.json" || fail "show"
py "$WORK/show.json" "[s['seq'] for s in d['steps']] == list(range(1, len(d['steps']) + 1))" "steps numbered in order"
py "$WORK/show.json" "{'build-target', 'propose', 'try', 'accept', 'integrity'} <= {s['kind'] for s in d['steps']}" "step kinds"
# A port that ends with a build never builds the unchanged tree on the old kernel (only a port
# that fails does, to tell from-fails apart).
py "$WORK/show.json" "'build-from' not in {s['kind'] for s in d['steps']}" "no old-kernel build in a successful port"
py "$WORK/show.json" "all(isinstance(s['elapsed_ms'], int) and s['elapsed_ms'] >= 0 and s['started_at'].endswith('Z') for s in d['steps'])" "timings"
py "$WORK/show.json" "sum(s['elapsed_ms'] for s in d['steps'] if s['kind'].startswith('build') or s['kind'] == 'try') > 0" "builds take time"
py "$WORK/show.json" "any(s['kind'] == 'build-target' and len(s['diagnostics']) > 0 and s['component'] == 'kbuild' for s in d['steps'])" "diagnostics of the first target build"
py "$WORK/show.json" "all(s['component'] for s in d['steps'] if s['kind'] in ('propose', 'accept'))" "proposer of every propose/accept step"
py "$WORK/show.json" "any('make' in c['argv'] and c['exit'] == 0 for s in d['steps'] if s['kind'] == 'try' for c in (s['argv'] or []))" "the trial build's command line"
py "$WORK/show.json" "len([a for a in d['artifacts'] if a['kind'] == 'patch']) == len([s for s in d['steps'] if s['kind'] == 'accept'])" "one patch per accept"
# Patches are stored by their content hash.
for p in "$WORK"/out1/patches/*.patch; do
  h=$(sha256sum "$p" | cut -d' ' -f1)
  py "$WORK/show.json" "any(a['sha256'] == '$h' for a in d['artifacts'])" "patch $(basename "$p") stored by sha256"
done

"$AD" --store "$S" explain "$RUN" --json > "$WORK/explain.json" || fail "explain"
py "$WORK/explain.json" "d['attribute'][0]['cause'] == 'none'"

# Rerun from the first accepted edit: a new run linked to the old one, still a good port.
FIRST=$(python3 -c "import json; print(min(s['seq'] for s in json.load(open('$WORK/show.json'))['steps'] if s['kind'] == 'accept'))")
"$AD" --store "$S" rerun "$RUN" --from-step "$FIRST" -o "$WORK/out2" --json > "$WORK/rerun.json" || fail "rerun"
py "$WORK/rerun.json" "d['ok'] is True and d['parent_run'] == $RUN and d['run'] != $RUN"
py "$WORK/rerun.json" "len(d['accepted']) < $(python3 -c "import json; print(len(json.load(open('$WORK/port.json'))['accepted']))")" "the checkpoint kept the first edit"
"$AD" --store "$S" show last --json > "$WORK/show2.json" || fail "show last"
py "$WORK/show2.json" "d['run']['parent_run'] == $RUN and d['run']['command'] == 'rerun' and d['run']['args']['from_step'] == $FIRST"
# A rerun of a rerun starts from both checkpoints (the first run's edit, then the rerun's first).
RUN2=$(python3 -c "import json; print(json.load(open('$WORK/rerun.json'))['run'])")
FIRST2=$(python3 -c "import json; print(min(s['seq'] for s in json.load(open('$WORK/show2.json'))['steps'] if s['kind'] == 'accept'))")
"$AD" --store "$S" rerun "$RUN2" --from-step "$FIRST2" -o "$WORK/out2b" --json > "$WORK/rerun2.json" || fail "rerun of a rerun"
NACC=$(python3 -c "import json; print(len(json.load(open('$WORK/port.json'))['accepted']))")
py "$WORK/rerun2.json" "d['ok'] is True and d['parent_run'] == $RUN2 and len(d['accepted']) == $NACC - 2" "rerun of a rerun keeps both checkpoints"

# KB: solved diagnostics, exported without local paths.
"$AD" --store "$S" kb export "$WORK/kb.json" > /dev/null || fail "kb export"
py "$WORK/kb.json" "d['schema'] == 'autodriver.kb-bundle' and any(e['change_id'] == 'call:class_create' for e in d['entries'])"
grep -q "$WORK" "$WORK/kb.json" && fail "kb export leaks a local path"
"$AD" --store "$WORK/other.sqlite" kb import "$WORK/kb.json" > /dev/null || fail "kb import"
python3 -c "
import sqlite3, sys
n = sqlite3.connect('$WORK/other.sqlite').execute(\"select count(*) from kb_entries where origin = 'import:kb.json'\").fetchone()[0]
sys.exit(0 if n > 0 else 1)" || fail "kb import added nothing"

# kill -9 midway: the run reads interrupted, the steps before the kill are there, the file is intact.
wait_steps() { # pid: until the newest run has a step (or the process ended)
  i=0
  while [ $i -lt 600 ]; do
    n=$(python3 -c "
import sqlite3
c = sqlite3.connect('$S')
r = c.execute('select id, (select count(*) from steps where run_id = runs.id) from runs order by id desc limit 1').fetchone()
print(r[1] if r and r[0] > $1 else 0)" 2>/dev/null || echo 0)
    [ "$n" -ge 1 ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1; i=$((i + 1))
  done
  return 1
}
LAST=$(python3 -c "import sqlite3; print(sqlite3.connect('$S').execute('select max(id) from runs').fetchone()[0])")
# (exec: $! must be autodriver itself, not a subshell around it)
(exec "$AD" --store "$S" port "$WORK/ppdev" --from 6.1 --to 6.12 -o "$WORK/out3" > /dev/null 2>&1) &
PID=$!
wait_steps "$LAST" "$PID" || fail "the killed port recorded no step"
kill -9 "$PID"
wait "$PID" 2>/dev/null || true
"$AD" --store "$S" runs --json > "$WORK/runs3.json" || fail "runs after kill -9"
py "$WORK/runs3.json" "d['runs'][0]['id'] > $LAST and d['runs'][0]['status'] == 'interrupted' and d['runs'][0]['steps'] >= 1"
python3 -c "
import sqlite3, sys
sys.exit(0 if sqlite3.connect('$S').execute('pragma integrity_check').fetchone()[0] == 'ok' else 1)" || fail "integrity_check after kill -9"

# Ctrl-C: the process records the interruption itself.
LAST=$(python3 -c "import sqlite3; print(sqlite3.connect('$S').execute('select max(id) from runs').fetchone()[0])")
(exec "$AD" --store "$S" port "$WORK/ppdev" --from 6.1 --to 6.12 -o "$WORK/out4" > /dev/null 2>&1) &
PID=$!
wait_steps "$LAST" "$PID" || fail "the interrupted port recorded no step"
kill -INT "$PID"
rc=0; wait "$PID" || rc=$?
[ "$rc" -ne 0 ] || fail "an interrupted port exited 0"
"$AD" --store "$S" show last --json > "$WORK/show4.json" || fail "show after SIGINT"
py "$WORK/show4.json" "d['run']['status'] == 'interrupted' and d['run']['summary']['outcome'] == 'interrupted'"

# A newer schema is refused with one line.
cp "$S" "$WORK/newer.sqlite"
python3 -c "import sqlite3; c = sqlite3.connect('$WORK/newer.sqlite'); c.execute('update schema_version set version = 99'); c.commit()"
rc=0; "$AD" --store "$WORK/newer.sqlite" runs > "$WORK/newer.out" 2> "$WORK/newer.err" || rc=$?
[ "$rc" -eq 2 ] || fail "a newer store schema: exit $rc, expected 2"
[ "$(wc -l < "$WORK/newer.err")" -eq 1 ] && grep -q "newer than this autodriver" "$WORK/newer.err" || fail "newer schema message: $(cat "$WORK/newer.err")"
echo PASS
