# kernel fetch into a fresh cache: two fetchers at once both succeed and produce one complete
# entry; a fetch killed midway is completed by the next one; the system is not changed.
. "$(dirname "$0")/lib.sh.inc"
need apt-get
export AUTODRIVER_CACHE="$WORK/cache"
"$AD" kernel fetch 6.1 > "$WORK/a.log" 2>&1 & a=$!
"$AD" kernel fetch 6.1 > "$WORK/b.log" 2>&1 & b=$!
wait $a || { cat "$WORK/a.log"; fail "first fetch failed"; }
wait $b || { cat "$WORK/b.log"; fail "second fetch failed"; }
"$AD" kernel info 6.1 --json > "$WORK/i.json"
py "$WORK/i.json" "d['image_cached'] is True and d['headers_installed'] is True"
[ "$(ls -A "$WORK/cache/kernels" | grep -c partial || true)" -eq 0 ] || fail "partial directory left behind"
head -c 4 "$WORK/cache/kernels/$R61/vmlinux" | grep -q ELF || fail "vmlinux is not ELF"
[ -s "$WORK/cache/kernels/$R61/image/lib/modules/$R61/modules.dep" ] || fail "no modules.dep"

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
echo PASS
