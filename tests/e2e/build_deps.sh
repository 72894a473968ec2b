#!/bin/sh
# --build-deps: a vendor tree whose own build calls a program the kernel's build does not need
# (pkg-config, as configure scripts and iptables-netflow's do) fails in the plain toolchain root,
# as it fails on a Debian machine without that package, and builds once the package is named: it is
# installed into a toolchain root of its own (made once per set), never into the shared one.
. "$(dirname "$0")/lib.sh.inc"
need bwrap
need_kernel 6.1
mkdir -p "$WORK/vendor"
empty_module "$WORK/vendor/needs_pc.c" needs_pc
cat > "$WORK/vendor/Makefile" <<'MEOF'
ifneq ($(KERNELRELEASE),)
obj-m := needs_pc.o
else
all:
	pkg-config --version
	$(MAKE) -C /lib/modules/$(shell uname -r)/build M=$(PWD) modules
endif
MEOF
rc=0; "$AD" check "$WORK/vendor" --kernel 6.1 --no-sparse --build-cmd make --json > "$WORK/plain.json" || rc=$?
[ $rc -eq 1 ] || fail "without --build-deps: expected exit 1 (no pkg-config in the toolchain root), got $rc"
py "$WORK/plain.json" "'pkg-config' in d['gates']['build']['by_kernel']['$R61']['details']['failure']" \
  "the failure does not name pkg-config"
"$AD" check "$WORK/vendor" --kernel 6.1 --no-sparse --build-cmd make --build-deps pkg-config --json > "$WORK/deps.json" 2> "$WORK/deps.err" \
  || fail "with --build-deps pkg-config the build failed: $(tail -5 "$WORK/deps.err")"
py "$WORK/deps.json" "d['gates']['build']['by_kernel']['$R61']['details']['modules'] == ['needs_pc.ko']"
# The shared root is untouched; the set's own root says what it holds.
base=$("$AD" kernel info 6.1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["toolchain_root"])')
[ -n "$base" ] && [ -d "$base/usr" ] || fail "kernel info names no toolchain root"
[ ! -e "$base/usr/bin/pkg-config" ] || fail "pkg-config was installed into the shared toolchain root"
found=$(grep -l '"pkg-config"' "$(dirname "$(dirname "$base")")"/*+*/complete.json 2>/dev/null | head -1)
[ -n "$found" ] || fail "no toolchain root of the set records pkg-config"
# Bad input is refused before anything runs.
rc=0; "$AD" check "$WORK/vendor" --kernel 6.1 --build-deps 'Pkg Config' > "$WORK/bad.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "a bad package name: expected exit 2, got $rc"
grep -q 'not a Debian package name' "$WORK/bad.out" || fail "a bad package name is not said: $(cat "$WORK/bad.out")"
echo PASS
