# Three real 6.1 drivers ported to 6.12 with --from 6.1 (leave-one-out: their own 6.12
# versions are never learned from): each builds, passes the integrity gate and loads in the
# 6.12 guest; DIR is untouched; one patch per API change.
. "$(dirname "$0")/lib.sh.inc"
need spatch
need qemu-system-x86_64
SRC=$("$AD" kernel source 6.1) || fail "kernel source 6.1"
"$AD" kernel source 6.12 > /dev/null || fail "kernel source 6.12"
port_one() { # name kernel-path [extra files...]
  name=$1; rel=$2; shift 2
  mkdir -p "$WORK/$name"
  cp "$SRC/$rel" "$WORK/$name/"
  for f in "$@"; do cp "$SRC/$f" "$WORK/$name/"; done
  echo "obj-m += $(basename "$rel" .c).o" > "$WORK/$name/Makefile"
  cp -r "$WORK/$name" "$WORK/$name.orig"
  "$AD" port "$WORK/$name" --from 6.1 --to 6.12 --boot --leave-out "$rel" -o "$WORK/$name.out" \
    --author "Ada Lovelace <ada@example.org>" --signoff --json > "$WORK/$name.json" \
    || { python3 -c "import json,sys; d=json.load(open('$WORK/$name.json')); print(d['status'], d['remaining'], d['integrity'])" >&2; fail "$name: port exited non-zero"; }
  py "$WORK/$name.json" "d['schema'] == 'autodriver.port' and d['ok'] is True and d['status'] == 'ported'"
  py "$WORK/$name.json" "d['integrity']['ok'] is True"
  py "$WORK/$name.json" "d['gates']['gates']['boot']['ok'] is True"
  py "$WORK/$name.json" "len(d['patches']) == len(d['accepted']) > 0"
  py "$WORK/$name.json" "all(p.endswith('.patch') for p in d['patches'])"
  diff -r "$WORK/$name" "$WORK/$name.orig" > /dev/null || fail "$name: the input tree was modified"
  [ -f "$WORK/$name.out/verdict.json" ] || fail "$name: no verdict.json"
  grep -q "^Subject: \[PATCH 1/" "$WORK/$name.out/patches/0001-"*.patch || fail "$name: patch lacks a subject"
  # Patches a maintainer can send: the author given, signed off, dated now, descriptions within
  # 75 columns, checked by the target's checkpatch.pl --strict without sign-off or log findings.
  for p in "$WORK/$name.out/patches/"*.patch; do
    grep -q "^From: Ada Lovelace <ada@example.org>" "$p" || fail "$name: $(basename "$p") lacks the author"
    grep -q "^Signed-off-by: Ada Lovelace <ada@example.org>" "$p" || fail "$name: $(basename "$p") is not signed off"
    grep -q "^Date: .* $(date -u +%Y) " "$p" || fail "$name: $(basename "$p") is not dated this year"
    awk 'body && /^---$/ {exit} body && length($0) > 75 && !/^Signed-off-by:/ {bad=1} /^$/ {body=1} END {exit bad}' "$p" || fail "$name: $(basename "$p") has a description line over 75 columns"
  done
  py "$WORK/$name.json" "d['checkpatch']['ran'] is True" "$name: checkpatch did not run"
  py "$WORK/$name.json" "not any(f['type'] in ('MISSING_SIGN_OFF', 'COMMIT_LOG_LONG_LINE') for p in d['checkpatch']['patches'] for f in p['findings'])" \
    "$name: checkpatch finds the patches' own descriptions wanting"
  find "$WORK/$name.out/tree" -name '.*.d' -o -name '*.o' | grep -q . && fail "$name: OUT/tree holds build products"
  true
}
port_one ppdev drivers/char/ppdev.c
py "$WORK/ppdev.json" "any(a['symbols'][0] == 'class_create' and a['label'] == 'arguments-changed' for a in d['accepted'])"
grep -q "class_create(CHRDEV)" "$WORK/ppdev.out/tree/ppdev.c" || fail "ppdev: class_create not rewritten"
port_one w83793 drivers/hwmon/w83793.c
py "$WORK/w83793.json" "any('probe_new' in a['symbols'] for a in d['accepted'])"
grep -q "\.probe = w83793_probe" "$WORK/w83793.out/tree/w83793.c" || fail "w83793: .probe_new not renamed"
port_one aquacomputer drivers/hwmon/aquacomputer_d5next.c
grep -q "#include <linux/unaligned.h>" "$WORK/aquacomputer.out/tree/aquacomputer_d5next.c" || fail "header not moved"
echo PASS
