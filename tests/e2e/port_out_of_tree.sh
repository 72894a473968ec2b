# Out-of-tree drivers from Debian's DKMS packages (build on 6.1, fail on 6.12) ported with
# --to 6.12 and NO --from: repairs from the target kernel alone. They build, pass integrity and
# load in the 6.12 guest. Then --compat on vpoll: the guarded result builds on 6.1 and 6.12.
. "$(dirname "$0")/lib.sh.inc"
need spatch
need qemu-system-x86_64
need apt-get
"$AD" kernel source 6.12 > /dev/null || fail "kernel source 6.12"
cd "$WORK"
apt-get download -q vpoll-dkms langford-dkms v4l2loopback-dkms > /dev/null 2>&1 || skip "Debian mirror unreachable"
for d in *.deb; do dpkg -x "$d" x; done
for src in x/usr/src/vpoll-* x/usr/src/langford-* x/usr/src/v4l2loopback-*; do
  name=$(basename "$src")
  "$AD" port "$src" --to 6.12 --boot -o "$WORK/$name.out" --json > "$WORK/$name.json" \
    || { python3 -c "import json; d=json.load(open('$WORK/$name.json')); print(d['status'], d['remaining'], d['integrity'])" >&2; fail "$name: port failed"; }
  py "$WORK/$name.json" "d['status'] == 'ported' and d['from'] == '' and d['integrity']['ok'] is True"
  py "$WORK/$name.json" "d['gates']['gates']['boot']['ok'] is True" "$name: loads in 6.12"
done
py "$WORK/$(basename x/usr/src/vpoll-*).json" "any(a['proposer'] == 'callback-signature' for a in d['accepted'])"
py "$WORK/$(basename x/usr/src/v4l2loopback-*).json" "any('strscpy' in a['symbols'] for a in d['accepted'])"

# --compat: guards at the KB's boundary when it lies in (6.1.192, 6.12.117] (vpoll's own entries
# left out), else at 6.12.0; verified by building on both kernels.
"$AD" port x/usr/src/vpoll-* --from 6.1 --to 6.12 --compat --kb-leave-out vpoll-dkms -o "$WORK/compat.out" --json > "$WORK/compat.json" || fail "compat port failed"
py "$WORK/compat.json" "d['compat']['ok'] is True and all(d['compat']['builds'].values()) and len(d['compat']['builds']) == 2"
py "$WORK/compat.json" "len(d['compat']['guards']) >= 1 and all((6,1,192) < tuple(map(int, g['version'].split('.'))) <= (6,12,117) for g in d['compat']['guards'])" "guard versions between the kernels"
py "$WORK/compat.json" "all(g['source'] == 'target' or g['source'].startswith('kb:') and 'vpoll' not in g['source'] for g in d['compat']['guards'])" "guard provenance"
g=$(python3 -c "import json; print(json.load(open('$WORK/compat.json'))['compat']['guards'][0]['guard'])")
grep -qF "#if $g" "$WORK/compat.out/tree/vpoll.c" || fail "no version guard '$g'"
grep -q "class_create(THIS_MODULE" "$WORK/compat.out/tree/vpoll.c" || fail "the old branch is gone"
"$AD" check "$WORK/compat.out/tree" -k 6.1 -k 6.12 --no-sparse --json > "$WORK/check.json" || fail "compat tree does not build on both"
echo PASS
