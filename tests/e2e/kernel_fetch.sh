#!/bin/sh
# kernel fetch into a fresh cache from Debian's archive (private apt configuration): two fetchers
# at once both succeed and produce one complete entry; a fetch killed midway is completed by the
# next one; a non-root user fetches and builds; the system is not changed (/boot, dpkg's database,
# the system's apt lists); bad names get one clear line.
. "$(dirname "$0")/lib.sh.inc"
need apt-get
need setpriv
MAIN=${AUTODRIVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autodriver}
need_kernel 6.1
TC=$(kernel_field 6.1 toolchain_root)
TC=$(dirname "$TC")
[ -f "$TC/complete.json" ] || fail "6.1 has no toolchain root in the main cache"

# The toolchain root is made once per machine (setup.sh): the fresh caches here share it.
share_toolchain() {
  mkdir -p "$1/toolchains"
  cp -al "$TC" "$1/toolchains/" 2>/dev/null || cp -a "$TC" "$1/toolchains/"
}
system_state() {
  { ls -lA --time-style=full-iso /boot; md5sum /var/lib/dpkg/status; ls -lA --time-style=full-iso /var/lib/apt/lists; } 2>/dev/null
}
system_state > "$WORK/sys.before"

export AUTODRIVER_CACHE="$WORK/cache"
share_toolchain "$AUTODRIVER_CACHE"
"$AD" kernel fetch 6.1 > "$WORK/a.log" 2>&1 & a=$!
"$AD" kernel fetch 6.1 > "$WORK/b.log" 2>&1 & b=$!
wait $a || { cat "$WORK/a.log"; fail "first fetch failed"; }
wait $b || { cat "$WORK/b.log"; fail "second fetch failed"; }
"$AD" kernel info 6.1 --json > "$WORK/i.json"
py "$WORK/i.json" "d['image_cached'] is True and d['headers_fetched'] is True and d['release'] == '$R61'"
py "$WORK/i.json" "d['suite'].startswith('bookworm') and d['compiler'] == 'gcc-12' and d['toolchain_root'].startswith('$WORK/cache/')"
[ "$(ls -A "$WORK/cache/kernels" | grep -c partial || true)" -eq 0 ] || fail "partial directory left behind"
head -c 4 "$WORK/cache/kernels/$R61/vmlinux" | grep -q ELF || fail "vmlinux is not ELF"
[ -s "$WORK/cache/kernels/$R61/root/lib/modules/$R61/modules.dep" ] || fail "no modules.dep"
# Nothing in the unpacked kernel points out of the cache.
[ -z "$(find "$WORK/cache/kernels/$R61/root" -type l -lname '/*')" ] || fail "absolute symlinks left in the kernel tree"
"$AD" kernel list --json > "$WORK/l.json"
py "$WORK/l.json" "[k['release'] for k in d['kernels']] == ['$R61']" "kernel list shows the fetched kernel"
"$AD" kernel list --available --json > "$WORK/av.json"
py "$WORK/av.json" "{'5.10', '6.1', '6.12', '7.2', '7.3'} <= {l['line'] for l in d['lines']}" "the archive's kernel lines"
py "$WORK/av.json" "all(l['release'].endswith('-amd64') and l['suite'] for l in d['lines'])"

# Interrupt a fetch midway (kill -9 of the whole group), then fetch again.
rm -rf "$WORK/cache/kernels/$R61"
setsid "$AD" kernel fetch 6.1 > "$WORK/c.log" 2>&1 & c=$!
for i in $(seq 1 100); do
  ls -A "$WORK/cache/kernels" 2>/dev/null | grep -q partial && break
  sleep 0.1
done
sleep 1
kill -9 -- -$c 2>/dev/null || kill -9 $c
wait $c 2>/dev/null || true
[ ! -e "$WORK/cache/kernels/$R61/complete.json" ] || fail "killed fetch claims to be complete"
"$AD" kernel fetch 6.1 > "$WORK/d.log" 2>&1 || { cat "$WORK/d.log"; fail "fetch after interruption failed"; }
[ -e "$WORK/cache/kernels/$R61/complete.json" ] || fail "not completed"
[ "$(ls -A "$WORK/cache/kernels" | grep -c partial || true)" -eq 0 ] || fail "partial directory left behind"

# A fetched kernel works offline: an unreachable mirror does not matter once it is here.
AUTODRIVER_MIRROR=http://127.0.0.1:9/debian "$AD" kernel info 6.1 --json > "$WORK/off.json" || fail "offline info"
py "$WORK/off.json" "d['headers_fetched'] is True"

# Bad input: one clear line each, exit 2.
expect_bad() {
  set +e
  "$@" > "$WORK/bad.out" 2> "$WORK/bad.err"; rc=$?
  set -e
  [ $rc -eq 2 ] || fail "$* exited $rc, want 2"
  [ "$(wc -l < "$WORK/bad.err")" -le 2 ] || fail "$*: more than one line of error: $(cat "$WORK/bad.err")"
}
expect_bad "$AD" kernel fetch 4.19
grep -q "5.10" "$WORK/bad.err" || fail "an unknown line does not list the archive's lines: $(cat "$WORK/bad.err")"
expect_bad "$AD" kernel info "$WORK"
grep -q "not a kernel build directory" "$WORK/bad.err" || fail "a non-kernel path: $(cat "$WORK/bad.err")"
expect_bad env AUTODRIVER_CACHE="$WORK/nocache" AUTODRIVER_MIRROR=http://127.0.0.1:9/debian "$AD" kernel fetch 7.3
grep -q "not reachable" "$WORK/bad.err" || fail "an unreachable mirror: $(cat "$WORK/bad.err")"

# A normal user: fetch into their own cache and build there (no root, nothing installed).
chmod 755 "$WORK"
U="$WORK/user"
mkdir -p "$U/home"
share_toolchain "$U/cache"
cp -r "$AD_SRC/examples/misc-counter" "$U/tree"
# Not -R over the shared toolchain root: its files are hard links to the main cache's, whose owner
# would change with them (the sandbox's uid owning the main toolchain root, /etc/shadow included).
chown nobody:nogroup "$U" "$U/cache"
chown -R nobody:nogroup "$U/home" "$U/tree"
as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$U/home" AUTODRIVER_CACHE="$U/cache" AUTODRIVER_STORE="$U/store.sqlite" "$@"; }
as_user "$AD" kernel fetch 6.1 > "$WORK/u.log" 2>&1 || { cat "$WORK/u.log"; fail "fetch as a normal user failed"; }
as_user "$AD" check "$U/tree" --kernel 6.1 --no-sparse --json > "$WORK/u.json" 2> "$WORK/u.err" || { cat "$WORK/u.err"; fail "check as a normal user failed"; }
py "$WORK/u.json" "d['gates']['build']['by_kernel']['$R61']['details']['modules'] == ['misc_counter.ko']"

system_state > "$WORK/sys.after"
cmp -s "$WORK/sys.before" "$WORK/sys.after" || { diff "$WORK/sys.before" "$WORK/sys.after"; fail "the system changed"; }
echo PASS
