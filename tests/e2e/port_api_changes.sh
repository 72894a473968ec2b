# port --api-changes on drivetemp from linux-source-6.1: the verdict's `changes` name the kernel API
# change behind each 6.12 diagnostic (apidiff on the real headers), and the patches say it too.
. "$(dirname "$0")/lib.sh.inc"
need_kernel 6.1
need_kernel 6.12
SRC=$("$AD" kernel source 6.1) || fail "kernel source 6.1"
mkdir -p "$WORK/drivetemp"
cp "$SRC/drivers/hwmon/drivetemp.c" "$WORK/drivetemp/"
echo 'obj-m += drivetemp.o' > "$WORK/drivetemp/Makefile"
"$AD" port "$WORK/drivetemp" --from 6.1 --to 6.12 --api-changes --no-store-kb -o "$WORK/out" --budget-s 300 --json \
  > "$WORK/v.json" || fail "port exited $?"
V="$WORK/v.json"
py "$V" "d['status'] == 'ported'"
py "$V" "any(x['diagnostic']['kind'] == 'incompatible-pointer-type' and any(c['kind'] == 'callback-type-changed' and c['symbol'] == 'struct class_interface' and c['member'] == 'add_dev' for c in x['changes']) for x in d['changes'])" "add_dev named"
py "$V" "any(x['diagnostic']['kind'] == 'implicit-function-declaration' and [c['symbol'] for c in x['changes']] == ['scsi_execute_req'] for x in d['changes'])" "scsi_execute_req named"
grep -l "Kernel API change (apidiff 6.1 -> 6.12): struct class_interface.add_dev" "$WORK/out/patches/"*.patch > /dev/null ||
  fail "no patch names the add_dev change"
echo PASS
