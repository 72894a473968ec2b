#!/bin/sh
# A user's own rule folder (--rules DIR): a semantic patch for an API the kernel never had is
# proposed by rule-pack, ports the driver on 6.1 and is named in the verdict and the patch;
# `rules check` names a bad file and line (exit 2); `rules list` shows shipped and user rules,
# `--no-rule-packs` only the user's. ~1 min.
. "$AD_SRC/tests/e2e/lib.sh.inc"
need spatch
need_kernel 6.1

mkdir -p "$WORK/drv" "$WORK/rules" "$WORK/bad"
cat > "$WORK/drv/Makefile" <<'MK'
obj-m += ruledrv.o
MK
cat > "$WORK/drv/ruledrv.c" <<'C'
#include <linux/module.h>
#include <linux/delay.h>

static int __init ruledrv_init(void)
{
	vendor_old_sleep(10);
	return 0;
}

static void __exit ruledrv_exit(void)
{
}

module_init(ruledrv_init);
module_exit(ruledrv_exit);
MODULE_LICENSE("GPL");
C
cat > "$WORK/rules/vendor-old-sleep.rule" <<'R'
# Our vendor SDK's sleep helper is gone; the kernel's msleep() does the same.
kind: smpl
kernel: any
source: vendor SDK 2.3 release notes
kernel-definition: no
symbols: vendor_old_sleep
target-lacks: vendor_old_sleep
why: vendor_old_sleep() is gone: use msleep()
---
@@
expression E;
@@
- vendor_old_sleep(E)
+ msleep(E)
R

"$AD" rules list --rules "$WORK/rules" > "$WORK/list.txt" || fail "rules list"
grep -q "^vendor-old-sleep .*smpl" "$WORK/list.txt" || fail "user rule not listed: $(cat "$WORK/list.txt")"
grep -q "^pci-dma-compat " "$WORK/list.txt" || fail "shipped rule not listed"
"$AD" rules list --rules "$WORK/rules" --no-rule-packs --json > "$WORK/list.json" || fail "rules list --json"
py "$WORK/list.json" "[r['name'] for r in d] == ['vendor-old-sleep'] and d[0]['kernel_definition'] is False" "--no-rule-packs lists only the user's"

"$AD" port "$WORK/drv" --to 6.1 --rules "$WORK/rules" --no-store-kb -o "$WORK/out" --json > "$WORK/port.json" \
  || fail "port with --rules: $(cat "$WORK/port.json")"
py "$WORK/port.json" "d['ok'] and any(a['proposer'] == 'rule-pack' and 'rules/vendor-old-sleep.rule' in a['description'] for a in d['accepted'])" \
  "the user's rule ported it and is named"
grep -q "msleep(10);" "$WORK/out/tree/ruledrv.c" || fail "no msleep in the port"
grep -q "vendor-old-sleep.rule" "$WORK/out/patches/"*.patch || fail "the patch does not name the rule"

# A malformed rule: exit 2, the file and line named; a port refuses it before building.
printf 'kind: smpl\nkernel: any\nsource: s\nkernel-definition: no\nsymbols: a\ncolour red\n---\nx\n' > "$WORK/bad/broken.rule"
rc=0; "$AD" rules check "$WORK/bad" 2> "$WORK/check.err" || rc=$?
[ "$rc" = 2 ] || fail "rules check of a bad file: exit $rc"
grep -q "broken.rule:6:" "$WORK/check.err" || fail "bad line not named: $(cat "$WORK/check.err")"
rc=0; "$AD" port "$WORK/drv" --to 6.1 --rules "$WORK/bad" -o "$WORK/out2" 2> "$WORK/port2.err" || rc=$?
[ "$rc" = 2 ] || fail "port with a bad rule folder: exit $rc"
grep -q "broken.rule" "$WORK/port2.err" || fail "port did not name the bad rule"
echo ok
