#!/bin/sh
# 5.6 gave /proc entries their own operations table: a driver passing a struct file_operations to
# proc_create() (tests/fixtures/drivers/old-proc) ports on 6.1 to a struct proc_ops with the
# proc_* members, its .owner (which proc_ops lacks) gone, and the integrity gate accepts that.
# ~30 s.
. "$AD_SRC/tests/e2e/lib.sh.inc"
need_kernel 6.1
DRV="$AD_SRC/tests/fixtures/drivers/old-proc"
printf '{"schema":"autodriver.compat-kb","schema_version":1,"sources":[],"stats":{},"entries":[]}\n' > "$WORK/kb.json"
"$AD" port "$DRV" --to 6.1 --no-store-kb --kb "$WORK/kb.json" -o "$WORK/out" --json > "$WORK/port.json" ||
  fail "port: $(cat "$WORK/port.json")"
T="$WORK/out/tree/oldproc.c"
for want in 'static const struct proc_ops op_fops = {' '.proc_open = op_open,' '.proc_read = seq_read,' \
  '.proc_write = op_write,' '.proc_lseek = seq_lseek,' '.proc_release = single_release,'; do
  grep -qF "$want" "$T" || fail "the port lacks '$want': $(diff -u "$DRV/oldproc.c" "$T")"
done
grep -q 'owner' "$T" && fail "proc_ops has no .owner: $(diff -u "$DRV/oldproc.c" "$T")"
echo PASS
