#!/bin/sh
# Containment whoever runs autodriver: a driver's Makefile holds no capability in the sandbox. Run as
# root (as setup.sh and most users run it) and as an ordinary user (uid 65534 here), the Makefile
# tries to remount the read-only binds writable and write the toolchain root, the kernel tree, the
# cache, the user's $HOME and, through a kernel given by path (the host's own /), the host's /usr,
# and to read /etc/shadow. Every attempt fails and nothing is left behind; the build itself runs
# (its output proves the attempts were made).
. "$(dirname "$0")/lib.sh.inc"
need bwrap
need setpriv
need_kernel 6.1
[ "$(id -u)" = 0 ] || skip "needs root (it also runs autodriver as an ordinary user)"
KDIR=$(kernel_field 6.1 build_dir)
CACHE=$("$AD" kernel info 6.1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["build_dir"].split("/kernels/")[0])')
TOOLROOT=$(ls -d "$CACHE"/toolchains/*/root | head -1)
[ -d "$TOOLROOT/usr/bin" ] || fail "no toolchain root in $CACHE"
chmod 755 "$WORK"
TAG="ad-evil-$$"

# evil_tree DIR HOMEDIR: a driver whose Makefile tries every escape and says how each went.
evil_tree() {
  mkdir -p "$1"
  empty_module "$1/evil.c" evil
  cat > "$1/Makefile" <<MEOF
obj-m += evil.o
try = \$(shell if ( \$(1) ) >/dev/null 2>&1; then echo yes; else echo no; fi)
\$(info PROBE uid=\$(shell id -u))
\$(info PROBE remount=\$(call try,mount -o remount,rw,bind /usr))
\$(info PROBE remount-root=\$(call try,mount -o remount,rw /))
\$(info PROBE usr=\$(call try,touch /usr/$TAG))
\$(info PROBE toolroot=\$(call try,touch $TOOLROOT/usr/$TAG))
\$(info PROBE kernel=\$(call try,touch $KDIR/$TAG))
\$(info PROBE cache=\$(call try,touch $CACHE/$TAG))
\$(info PROBE home=\$(call try,touch $2/$TAG))
\$(info PROBE shadow=\$(call try,head -c1 /etc/shadow))
\$(info PROBE remount-userns=\$(call try,unshare -U -r -m mount -o remount,rw,bind /usr))
MEOF
}

# probes JSON KERNEL_RELEASE: the PROBE lines of the build's log.
probes() {
  python3 - "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
tail = d["gates"]["build"]["by_kernel"][sys.argv[2]]["details"]["log_tail"]
print("\n".join(l for l in tail.splitlines() if l.startswith("PROBE ")))
PYEOF
}

# expect_contained PROBES UID: every escape said no; the build ran as UID.
expect_contained() {
  echo "$1" | grep -q "^PROBE uid=$2\$" || fail "the build did not run as uid $2: $1"
  for p in remount remount-root remount-userns usr toolroot kernel cache home shadow; do
    echo "$1" | grep -q "^PROBE $p=no\$" || fail "$p was allowed in the sandbox: $(echo "$1" | grep "PROBE $p=")"
  done
}

leftovers() {
  for f in "/usr/$TAG" "$TOOLROOT/usr/$TAG" "$KDIR/$TAG" "$CACHE/$TAG" "$HOME/$TAG" "$WORK/uhome/$TAG"; do
    [ ! -e "$f" ] || fail "the sandbox left $f behind"
  done
}

# A kernel given by path, whose sandbox root is the host's own /: a stand-in build directory that
# reads the driver's Makefile as kbuild does.
mkdir -p "$WORK/pathk/include/config"
echo "9.9.9-evil" > "$WORK/pathk/include/config/kernel.release"
printf 'include $(M)/Makefile\nmodules:\n\t@echo stand-in kbuild\n' > "$WORK/pathk/Makefile"

# As root: a Debian kernel (its toolchain root) and the path kernel (the host's /).
evil_tree "$WORK/evil" "$HOME"
"$AD" check "$WORK/evil" --kernel 6.1 --no-sparse --json > "$WORK/root61.json" || fail "the sandboxed build as root failed"
expect_contained "$(probes "$WORK/root61.json" "$R61")" 65534
"$AD" check "$WORK/evil" --kernel "$WORK/pathk" --no-sparse --json > "$WORK/rootpath.json" || true
expect_contained "$(probes "$WORK/rootpath.json" 9.9.9-evil)" 65534
leftovers

# As an ordinary user (uid 65534, its own home, cache and run store): the path kernel.
mkdir -p "$WORK/uhome" "$WORK/ucache" "$WORK/utmp"
chown 65534:65534 "$WORK/uhome" "$WORK/ucache" "$WORK/utmp"
evil_tree "$WORK/uevil" "$WORK/uhome"
chmod -R a+rX "$WORK/uevil" "$WORK/pathk"
setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$WORK/uhome" AUTODRIVER_CACHE="$WORK/ucache" \
  AUTODRIVER_STORE="$WORK/uhome/store.sqlite" TMPDIR="$WORK/utmp" \
  "$AD" check "$WORK/uevil" --kernel "$WORK/pathk" --no-sparse --json > "$WORK/user.json" || true
expect_contained "$(probes "$WORK/user.json" 9.9.9-evil)" 65534
leftovers
echo PASS
