#!/bin/sh
# Real-world bytes and kills: a Latin-1 comment on an erroring line and a binary .c file never
# crash the JSON output; children (QEMU, a hung build) die with the tool on kill -9, and the next
# run removes the scratch folders the killed runs left.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
need_kernel 6.1
need_kernel 6.12

# 1. A Latin-1 byte (0xFC) in a comment on a line gcc rejects.
mkdir -p "$WORK/latin1"
cp "$AD_SRC/examples/misc-counter/Makefile" "$WORK/latin1/"
sed 's|\treturn 0;|\treturn no_such_symbol; /* J\xfcrgen */|' "$AD_SRC/examples/misc-counter/misc_counter.c" > "$WORK/latin1/misc_counter.c"
grep -q "$(printf 'J\374rgen')" "$WORK/latin1/misc_counter.c" || fail "the fixture lacks its Latin-1 byte"
rc=0; "$AD" check "$WORK/latin1" -k 6.1 --no-sparse --json > "$WORK/l.json" || rc=$?
[ $rc -eq 1 ] || fail "Latin-1 check: expected exit 1 (build fails), got $rc"
py "$WORK/l.json" "any('no_such_symbol' in x['message'] for x in d['gates']['build']['by_kernel']['$R61']['diagnostics'])" \
  "the diagnostic on the Latin-1 line is not in the JSON"

# ... and port: a binary .c beside it, the port runs to a verdict with the bytes kept in OUT/tree.
head -c 4096 /dev/urandom > "$WORK/latin1/blob.c"
rc=0; "$AD" port "$WORK/latin1" --to 6.12 -o "$WORK/lout" --budget-s 120 --no-store-kb --json > "$WORK/p.json" || rc=$?
[ $rc -eq 1 ] || [ $rc -eq 0 ] || fail "Latin-1 port: expected a verdict (exit 0 or 1), got $rc"
py "$WORK/lout/verdict.json" "d['status'] not in ('interrupted', 'error')" "the Latin-1 port ended as an error"
cmp -s "$WORK/latin1/blob.c" "$WORK/lout/tree/blob.c" || fail "OUT/tree lost the binary file's bytes"

# 2. kill -9 of a check whose guest hangs: QEMU goes with it.
mkdir -p "$WORK/hang-tmp"
TMPDIR="$WORK/hang-tmp" "$AD" check "$AD_SRC/tests/fixtures/drivers/hang-on-load" -k 6.1 --no-sparse --boot --boot-timeout 120 > /dev/null 2>&1 &
CHECK=$!
for i in $(seq 1 240); do pgrep -f "qemu-system.*$WORK/hang-tmp" > /dev/null && break; sleep 0.5; done
pgrep -f "qemu-system.*$WORK/hang-tmp" > /dev/null || fail "the hung guest never started"
kill -9 $CHECK
sleep 2
pgrep -f "qemu-system.*$WORK/hang-tmp" > /dev/null && fail "QEMU outlived the tool killed with -9"

# 3. kill -9 of a port whose build command hangs: the build goes with it.
TMPDIR="$WORK/hang-tmp" "$AD" port "$AD_SRC/examples/misc-counter" --to 6.12 -o "$WORK/hout" --no-store-kb \
  --build-cmd "sleep 7777$$" > /dev/null 2>&1 &
PORT=$!
for i in $(seq 1 120); do pgrep -f "^sleep 7777$$" > /dev/null && break; sleep 0.5; done
pgrep -f "^sleep 7777$$" > /dev/null || fail "the hanging build never started"
kill -9 $PORT
sleep 2
pgrep -f "^sleep 7777$$" > /dev/null && fail "the build outlived the tool killed with -9"

# 4. SIGINT and SIGTERM during the first build: the verdict says `interrupted` (exit 130), never
# that the driver fails to build.
for sig in INT TERM; do
  "$AD" port "$AD_SRC/examples/misc-counter" --from 6.1 --to 6.12 -o "$WORK/sig-$sig" --no-store-kb \
    --build-cmd "sleep 6666$$" > /dev/null 2>&1 &
  PORT=$!
  for i in $(seq 1 120); do pgrep -f "^sleep 6666$$" > /dev/null && break; sleep 0.5; done
  kill -$sig $PORT
  rc=0; wait $PORT || rc=$?
  [ $rc -eq 130 ] || fail "SIG$sig during the first build: expected exit 130, got $rc"
  py "$WORK/sig-$sig/verdict.json" "d['status'] == 'interrupted'" "SIG$sig: the verdict does not say interrupted"
  pgrep -f "^sleep 6666$$" > /dev/null && fail "SIG$sig: the build outlived the tool"
done

# 5. The killed runs left their scratch folders; the next run removes them (and its own).
left=$(find "$WORK/hang-tmp" -mindepth 2 -maxdepth 2 -type d | wc -l)
[ "$left" -ge 1 ] || fail "the killed runs left no scratch folder (nothing to test)"
TMPDIR="$WORK/hang-tmp" "$AD" check "$AD_SRC/examples/misc-counter" -k 6.1 --no-sparse > /dev/null 2>&1 || fail "the next check failed"
left=$(find "$WORK/hang-tmp" -mindepth 2 -maxdepth 2 -type d | wc -l)
[ "$left" -eq 0 ] || { find "$WORK/hang-tmp" -maxdepth 2; fail "scratch folders of killed runs were not removed"; }
echo PASS
