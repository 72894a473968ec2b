# corpus build on real Debian 6.1 / 6.12 trees: one real case (drivers/hwmon/w83793: i2c probe_new
# removed, no_llseek removed), its metadata/diagnostics/golden/api_delta, JSONL export, then a run
# killed midway and resumed: nothing decided is redone. Bad input: unknown kernel, mismatched corpus,
# a disk that fills up.
. "$(dirname "$0")/lib.sh.inc"
need make
need gcc
need_kernel 6.1
need_kernel 6.12

# 1. One real case.
"$AD" corpus build --from 6.1 --to 6.12 --no-dkms --only drivers/hwmon/w83793 -o "$WORK/c" --json > "$WORK/s.json"
py "$WORK/s.json" "d['cases'] == 1 and d['this_run']['decided'] == 1" "w83793 is not a case"
C="$WORK/c/cases/drivers__hwmon__w83793"
[ -f "$C/metadata.json" ] || fail "no case directory"
py "$C/metadata.json" "d['schema_version'] == 1 and d['origin'] == 'in-tree' and d['id'] == 'drivers__hwmon__w83793'"
py "$C/metadata.json" "d['from']['line'] == '6.1' and d['to']['line'] == '6.12' and d['from']['release'] == '$R61'"
py "$C/metadata.json" "d['unit']['path'] == 'drivers/hwmon/w83793' and d['unit']['config'] == 'CONFIG_SENSORS_W83793'"
py "$C/metadata.json" "d['subsystem'] == 'hwmon' and d['size']['c_lines'] > 1000"
py "$C/metadata.json" "'member-changed' in d['change_types'] and 'removed-with-replacement' in d['change_types']"
py "$C/metadata.json" "d['diagnostics']['distinct_symbols'] == 2 and d['diagnostics']['errors'] >= 2"
py "$C/metadata.json" "'probe_new' in d['description']"
py "$C/metadata.json" "d['golden']['status'] == 'builds' and d['runtime']['kind'] == 'none'"
# The documented split rule: FNV-1a 64 of the unit path, even = dev.
py "$C/metadata.json" "d['split'] == ('dev' if (lambda h: [h := ((h ^ c) * 0x100000001b3) % 2**64 for c in b'drivers/hwmon/w83793'][-1])(0xcbf29ce484222325) % 2 == 0 else 'test')"
grep -q '^obj-m += w83793.o' "$C/before/Makefile" || fail "before/Makefile lacks obj-m"
grep -q 'probe_new' "$C/before/w83793.c" || fail "before/ is not the 6.1 driver"
grep -q 'probe_new' "$C/golden/w83793.c" && fail "golden/ still uses probe_new"
grep -q -- '-	int (\*probe_new)' "$C/api_delta.patch" || fail "api_delta.patch lacks the i2c_driver hunk"
py "$C/diagnostics.json" "any(x['kind'] == 'no-member' and 'probe_new' in x['symbols'] for x in d)"

# 2. JSONL export: one line per case, metadata plus file contents.
"$AD" corpus export "$WORK/c" --jsonl "$WORK/c.jsonl" 2>/dev/null
[ "$(wc -l < "$WORK/c.jsonl")" -eq 1 ] || fail "export: expected one line"
python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).readline()); sys.exit(0 if 'w83793.c' in r['before_files'] and r['api_delta'] else 1)" "$WORK/c.jsonl" || fail "export lacks files"

# 3. Kill a run midway, then resume: decided units are not redone.
set -- --no-dkms --only drivers/hwmon/lm8 --jobs 1 -o "$WORK/r"
"$AD" corpus build "$@" > /dev/null 2> "$WORK/r1.err" &
pid=$!
i=0
while [ ! -s "$WORK/r/journal.jsonl" ] && [ $i -lt 600 ]; do sleep 0.5; i=$((i + 1)); done
kill -INT $pid
rc=0; wait $pid || rc=$?
[ $rc -eq 130 ] || { cat "$WORK/r1.err"; fail "interrupted run: expected exit 130, got $rc"; }
n1=$(wc -l < "$WORK/r/journal.jsonl")
[ "$n1" -ge 1 ] || fail "nothing journaled before the kill"
ls -a "$WORK/r/cases" | grep -q '^\.tmp' && fail "a half-written case directory was left behind"
"$AD" corpus build "$@" --json > "$WORK/r2.json" 2>/dev/null
py "$WORK/r2.json" "d['this_run']['already_decided'] == $n1" "resume did not see the $n1 decided units"
py "$WORK/r2.json" "d['this_run']['decided'] + $n1 == d['this_run']['candidates'] and d['this_run']['complete']"
python3 - "$WORK/r/journal.jsonl" <<'PYEOF' || fail "a unit was decided twice"
import json, sys
units = [json.loads(l)["unit"] for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if len(units) == len(set(units)) else 1)
PYEOF
# A third run has nothing to do.
"$AD" corpus build "$@" --json > "$WORK/r3.json" 2>/dev/null
py "$WORK/r3.json" "d['this_run']['decided'] == 0"

# 4. Bad input: one clear line, exit 2.
rc=0; "$AD" corpus build --from 4.4 -o "$WORK/x" 2> "$WORK/e1" || rc=$?
[ $rc -eq 2 ] && grep -q "archive has no amd64 kernel 4.4" "$WORK/e1" || { cat "$WORK/e1"; fail "unknown kernel"; }
rc=0; "$AD" corpus build --from 6.12 --to 6.1 --no-dkms --only drivers/hwmon/w83793 -o "$WORK/c" 2> "$WORK/e2" || rc=$?
[ $rc -eq 2 ] && grep -q "use another -o directory" "$WORK/e2" || { cat "$WORK/e2"; fail "mismatched corpus not refused"; }
rc=0; "$AD" corpus export "$WORK/nosuch" --jsonl "$WORK/n.jsonl" 2> "$WORK/e3" || rc=$?
[ $rc -eq 2 ] && grep -q "not a corpus directory" "$WORK/e3" || { cat "$WORK/e3"; fail "export of a non-corpus"; }

# 5. Disk full mid-run (a 64 KiB tmpfs; only where this user may mount one): one clear line,
#    exit 2, no half-written case directory.
mkdir -p "$WORK/tiny"
if mount -t tmpfs -o size=64k tmpfs "$WORK/tiny" 2>/dev/null; then
  trap 'umount "$WORK/tiny" 2>/dev/null || true; rm -rf "$WORK"' EXIT
  rc=0; "$AD" corpus build --no-dkms --only drivers/hwmon/w83793 -o "$WORK/tiny/c" > /dev/null 2> "$WORK/e4" || rc=$?
  [ $rc -eq 2 ] && grep -q "No space left on device" "$WORK/e4" || { cat "$WORK/e4"; fail "disk full: expected exit 2 and a clear error"; }
  ls -a "$WORK/tiny/c/cases" | grep -q '^\.tmp' && fail "disk full left a half-written case directory"
  [ ! -s "$WORK/tiny/c/journal.jsonl" ] || fail "disk full: the unit must stay undecided"
  umount "$WORK/tiny"
else
  echo "note: cannot mount a tmpfs here; disk-full scenario not run" >&2
fi
echo PASS
