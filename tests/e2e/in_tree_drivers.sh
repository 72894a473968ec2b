# Real in-tree drivers from linux-source-6.1: ppdev builds on 6.1 and fails on 6.12 with the
# class_create API change; 8139cp builds on both and binds to QEMU's rtl8139 on both kernels.
. "$(dirname "$0")/lib.sh.inc"
need qemu-system-x86_64
SRC=$("$AD" kernel source 6.1) || fail "kernel source 6.1"
mkdir -p "$WORK/ppdev" "$WORK/8139cp"
cp "$SRC/drivers/char/ppdev.c" "$WORK/ppdev/"
echo 'obj-m += ppdev.o' > "$WORK/ppdev/Makefile"
cp "$SRC/drivers/net/ethernet/realtek/8139cp.c" "$WORK/8139cp/"
echo 'obj-m += 8139cp.o' > "$WORK/8139cp/Makefile"

rc=0; "$AD" check "$WORK/ppdev" -k 6.1 -k 6.12 --no-sparse --json > "$WORK/ppdev.json" || rc=$?
[ $rc -eq 1 ] || fail "ppdev: expected exit 1 (gate failed), got $rc"
py "$WORK/ppdev.json" "d['gates']['build']['by_kernel']['$R61']['ok'] is True"
py "$WORK/ppdev.json" "d['gates']['build']['by_kernel']['$R612']['ok'] is False"
py "$WORK/ppdev.json" "any(x['kind'] == 'too-many-arguments' and x['symbols'] == ['class_create'] and x['file'] == 'ppdev.c' and any('class.h' in n['file'] for n in x['notes']) for x in d['gates']['build']['by_kernel']['$R612']['diagnostics'])" "class_create diagnostic"
py "$WORK/ppdev.json" "any(x['kind'] == 'undeclared-identifier' and x['symbols'] == ['no_llseek'] for x in d['gates']['build']['by_kernel']['$R612']['diagnostics'])" "no_llseek diagnostic"

"$AD" check "$WORK/8139cp" -k 6.1 -k 6.12 --no-sparse --boot --device rtl8139 --json > "$WORK/cp.json" || fail "8139cp check exited $?: $(gate_why "$WORK/cp.json")"
for r in $R61 $R612; do
  py "$WORK/cp.json" "$(boot_of $r)['details']['bound'] is True"
  py "$WORK/cp.json" "'mii' in $(boot_of $r)['details']['preload']" "mii loaded as a dependency"
  py "$WORK/cp.json" "any(p['module'] == '8139cp' and p['vendor'] == '0x10ec' for p in $(boot_of $r)['details']['pci'])"
done
echo PASS
