# Bad input: one clear line on stderr, a non-zero exit, nothing left running.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
expect_error() { # expect_error PATTERN cmd...
  pat=$1; shift
  rc=0; "$@" > "$WORK/out" 2> "$WORK/err" || rc=$?
  [ $rc -eq 2 ] || fail "'$*': expected exit 2, got $rc"
  [ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "'$*': expected one line on stderr"; }
  grep -q "$pat" "$WORK/err" || { cat "$WORK/err"; fail "'$*': stderr lacks '$pat'"; }
}
expect_error "no such directory" "$AD" check "$WORK/missing" -k 6.1
mkdir -p "$WORK/empty"
expect_error "no Makefile or Kbuild" "$AD" check "$WORK/empty" -k 6.1
expect_error "archive has no amd64 kernel 4.4" "$AD" check "$AD_SRC/examples/misc-counter" -k 4.4
expect_error "is not a kernel" "$AD" kernel info nosuch
# --llm options that cannot be used: one line, exit 2, before anything runs.
M="$AD_SRC/examples/misc-counter"
expect_error "need --llm URL" "$AD" port "$M" --to 6.1 -o "$WORK/o" --model m
expect_error "needs --model" "$AD" port "$M" --to 6.1 -o "$WORK/o" --llm http://127.0.0.1:1/v1
expect_error "not an http" "$AD" port "$M" --to 6.1 -o "$WORK/o" --llm ftp://x --model m
expect_error "names no host" "$AD" port "$M" --to 6.1 -o "$WORK/o" --llm http:// --model m
expect_error "port is not 1-65535" "$AD" port "$M" --to 6.1 -o "$WORK/o" --llm http://127.0.0.1:99999/v1 --model m
expect_error "needs --llm-price" "$AD" port "$M" --to 6.1 -o "$WORK/o" --llm http://127.0.0.1:1/v1 --model m --llm-max-cost 1
expect_error "expected IN,OUT" "$AD" port "$M" --to 6.1 -o "$WORK/o" --llm http://127.0.0.1:1/v1 --model m --llm-price 3
expect_error "expected IN,OUT" "$AD" bench "$WORK" -o "$WORK/o" --llm http://127.0.0.1:1/v1 --model m --llm-price a,b
[ -e "$WORK/o" ] && fail "a refused --llm option left an output folder"
# A number option out of its bound says which bound, plainly (not CLI11's range to 1.8e308).
for bad in "-j 0:0 is not a whole number of at least 1" "--budget-s -5:-5 is not above 0" "-j abc:'abc' is not a number" \
  "--max-iters 0:at least 1, not 0" "--max-iters -3:at least 1, not -3"; do
  rc=0; "$AD" port "$M" --to 6.1 -o "$WORK/o" ${bad%%:*} > "$WORK/out" 2> "$WORK/err" || rc=$?
  [ $rc -eq 2 ] || fail "'${bad%%:*}': expected exit 2, got $rc"
  grep -q -- "${bad#*:}" "$WORK/err" || { cat "$WORK/err"; fail "'${bad%%:*}': stderr lacks '${bad#*:}'"; }
  grep -q 1797693 "$WORK/err" && fail "'${bad%%:*}': CLI11's range message"
done
[ -e "$WORK/o" ] && fail "a refused number option left an output folder"
# -j far above the CPUs is lowered with a note, not forked until the build timeout.
"$AD" check "$M" -k 6.1 --no-sparse -j 100000 > "$WORK/out" 2> "$WORK/err" || true
grep -q "running $((4 * $(nproc))) at a time" "$WORK/err" || { cat "$WORK/err"; fail "-j 100000 was not lowered"; }
# A refused -o writes nothing anywhere: not into the driver's tree, not into a folder that is not empty.
cp -r "$M" "$WORK/drv"
expect_error "inside" "$AD" port "$WORK/drv" --to 6.1 -o "$WORK/drv"
expect_error "inside" "$AD" port "$WORK/drv" --to 6.1 -o "$WORK/drv/out"
[ -z "$(diff -r "$M" "$WORK/drv")" ] || fail "a refused -o wrote into the driver's tree"
mkdir -p "$WORK/full" && echo mine > "$WORK/full/verdict.json"
expect_error "not empty" "$AD" port "$WORK/drv" --to 6.1 -o "$WORK/full"
[ "$(cat "$WORK/full/verdict.json")" = mine ] || fail "a refused -o overwrote the user's verdict.json"
expect_error "inside" "$AD" crash "$AD_SRC/tests/fixtures/crash/gpf-kasan-null.txt" --repair --driver "$WORK/drv" -k 6.1 -o "$WORK/drv/fix"
[ ! -e "$WORK/drv/fix" ] || fail "crash --repair -o inside the driver's tree wrote there"
expect_error "not empty" "$AD" crash "$AD_SRC/tests/fixtures/crash/gpf-kasan-null.txt" --repair --driver "$WORK/drv" -k 6.1 -o "$WORK/full"
[ "$(ls "$WORK/full")" = verdict.json ] || fail "a refused crash --repair -o wrote into a folder that was not empty"
# A driver tree holding a symbolic link loop is bad input, the link named (it was an internal error).
cp -r "$M" "$WORK/loop" && ln -s b "$WORK/loop/a" && ln -s a "$WORK/loop/b"
expect_error "loop/[ab]: a symbolic link that loops" "$AD" check "$WORK/loop" -k 6.1
expect_error "loop/[ab]: a symbolic link that loops" "$AD" port "$WORK/loop" --to 6.1 -o "$WORK/loop-out"
py "$WORK/loop-out/verdict.json" 'd["status"] == "error" and "loops" in d["error"]' "the verdict says what ended the run"
AUTODRIVER_CACHE="$WORK/emptycache" expect_error "autodriver kernel fetch 6.1" "$AD" check "$AD_SRC/examples/misc-counter" -k 6.1 --boot

# A source line of 200 KB with an error on it (a vendor's firmware table): gcc echoes the line;
# the build fails and is reported (this crashed autodriver with a stack overflow once).
cp -r "$M" "$WORK/longline"
python3 - "$WORK/longline/misc_counter.c" <<'PY'
import sys
p = sys.argv[1]
blob = "static const unsigned char fw_blob[] = { sizeof(struct no_such_struct_x), " + ", ".join("0x%02x" % (i % 256) for i in range(40000)) + " };\n"
open(p, "w").write(blob + open(p).read())
PY
rc=0; "$AD" check "$WORK/longline" -k 6.1 --no-sparse --json > "$WORK/ll.json" 2> "$WORK/ll.err" || rc=$?
[ $rc -eq 1 ] || { tail -3 "$WORK/ll.err"; fail "a 200 KB source line with an error: expected exit 1, got $rc"; }
py "$WORK/ll.json" "any('no_such_struct_x' in e['message'] for e in d['gates']['build']['by_kernel']['$R61']['diagnostics'])"

# A build that never ends is killed at its timeout and reported as a failed build.
rc=0; "$AD" check "$AD_SRC/examples/misc-counter" -k 6.1 --build-cmd 'sleep 600' --build-timeout 2 --json > "$WORK/b.json" || rc=$?
[ $rc -eq 1 ] || fail "hanging build: expected exit 1, got $rc"
py "$WORK/b.json" "d['gates']['build']['by_kernel']['$R61']['details']['timed_out'] is True"
pgrep -f 'sleep 600' >/dev/null && fail "the hanging build is still running"

# A module that hangs in init: the guest is killed at the boot timeout, reported as hung.
# (its own TMPDIR, so the check below sees only this test's QEMU, not a parallel test's)
mkdir -p "$WORK/hang-tmp"
rc=0; TMPDIR="$WORK/hang-tmp" "$AD" check "$AD_SRC/tests/fixtures/drivers/hang-on-load" -k 6.1 --no-sparse --boot --boot-timeout 20 --json > "$WORK/h.json" || rc=$?
[ $rc -eq 1 ] || fail "hang on load: expected exit 1, got $rc"
py "$WORK/h.json" "$(boot_of $R61)['details']['outcome'] == 'hung'"
py "$WORK/h.json" "$(boot_of $R61)['details']['qemu']['timed_out'] is True"
pgrep -f "$WORK/hang-tmp" >/dev/null && fail "QEMU still running after the timeout"

# An unknown QEMU device is a tool error for that gate, with QEMU's own words.
rc=0; "$AD" check "$AD_SRC/examples/misc-counter" -k 6.1 --no-sparse --boot --device nosuchdev --json > "$WORK/d.json" || rc=$?
[ $rc -eq 1 ] || fail "bad device: expected exit 1, got $rc"
py "$WORK/d.json" "'nosuchdev' in $(boot_of $R61)['infra_error']"
echo PASS
