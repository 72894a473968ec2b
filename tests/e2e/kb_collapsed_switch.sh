#!/bin/sh
# Collapsed-block cases of two more real DKMS packages, ported with --to 6.1 and the package left
# out of the KB: acpi-call's `#define HAVE_PROC_CREATE` (its LINUX_VERSION_CODE >= 3.10 block,
# collapsed to the empty old branch) comes back through the feature-switch proposer, and
# lime-forensics' set_fs()/get_fs() lines (a < 2.6.8 block) go through rule-pack (rules/set-fs-removal.rule);
# both are identical to the maintainers' new branch. With --no-rule-packs the lime case has no
# rule-pack edit. ~1.5 min.
. "$AD_SRC/tests/e2e/lib.sh.inc"
need apt-get
need dpkg
need spatch
need_kernel 6.1
"$AD" kernel source 6.1 > /dev/null || fail "kernel source 6.1"

"$AD" kb build --package acpi-call-dkms --package lime-forensics-dkms -o "$WORK/kb.json" > /dev/null || fail "kb build"
for pkg in acpi-call-dkms lime-forensics-dkms; do
  "$AD" kb cases --package $pkg --to 6.1 --older-than-target --check-build --max-per-package 1 -o "$WORK/cases-$pkg" > /dev/null \
    || fail "kb cases $pkg"
done

port_case() { # case-dir package proposer
  c=$1; pkg=$2; want=$3; name=$(basename "$c")
  [ -f "$c/case.json" ] || fail "no case $name: $(ls "$(dirname "$c")")"
  "$AD" port "$c/tree" --to 6.1 --kb "$WORK/kb.json" --kb-leave-out $pkg -o "$WORK/$name.out" --json > "$WORK/$name.json" \
    || fail "$name: port failed: $(python3 -c "import json; d=json.load(open('$WORK/$name.json')); print(d['status'], d['remaining'][:2])")"
  py "$WORK/$name.json" "d['ok'] and d['status'] == 'ported' and d['integrity']['ok'] is True" "$name: ported"
  py "$WORK/$name.json" "any(a['proposer'] == '$want' for a in d['accepted'])" "$name: $want accepted"
  "$AD" kb compare "$c" "$WORK/$name.out/tree" > "$WORK/$name.cmp" || fail "$name: not the maintainers' new branch"
}

c=$(ls -d "$WORK"/cases-acpi-call-dkms/acpi-call-dkms--acpi_call.c--L* | head -1)
grep -q "^#ifdef HAVE_PROC_CREATE" "$c/tree/acpi_call.c" || fail "acpi-call case has no HAVE_PROC_CREATE test"
! grep -q "^#define HAVE_PROC_CREATE" "$c/tree/acpi_call.c" || fail "acpi-call case not collapsed"
port_case "$c" acpi-call-dkms feature-switch
grep -q "^#define HAVE_PROC_CREATE" "$WORK/$(basename "$c").out/tree/acpi_call.c" || fail "no switch in the port"

c="$WORK/cases-lime-forensics-dkms/lime-forensics-dkms--disk.c--L48"
grep -q "set_fs(KERNEL_DS)" "$c/tree/disk.c" || fail "lime case lacks the old branch"
port_case "$c" lime-forensics-dkms rule-pack
py "$WORK/$(basename "$c").json" "any('rules/set-fs-removal.rule' in a['description'] for a in d['accepted'])" "the edit names its rule"
# the live save/switch lines went; those in the package's other (old-kernel) branches stayed
n=$(diff "$c/tree/disk.c" "$WORK/$(basename "$c").out/tree/disk.c" | grep -c '^<.*set_fs(KERNEL_DS);' || true)
[ "$n" = 1 ] || fail "want the one live set_fs(KERNEL_DS) removed, got $n"
grep -q "set_fs(KERNEL_DS);" "$WORK/$(basename "$c").out/tree/disk.c" || fail "old-kernel branches lost their set_fs"
# The shipped rules switched off: the set_fs knowledge is not used.
"$AD" port "$c/tree" --to 6.1 --kb "$WORK/kb.json" --kb-leave-out lime-forensics-dkms --no-rule-packs -o "$WORK/norules.out" --json \
  > "$WORK/norules.json" || true
py "$WORK/norules.json" "not any(a['proposer'] == 'rule-pack' for a in d['accepted'])" "--no-rule-packs: no rule-pack edit"
echo ok
