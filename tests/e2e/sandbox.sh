#!/bin/sh
# Every build runs under bubblewrap: a Makefile's $(shell ...) and a --build-cmd cannot write outside
# the scratch copy (not the user's folders, not the kernel tree in the cache, not the driver's own
# tree), have no network, and the build still works. The driver tree is data.
. "$(dirname "$0")/lib.sh.inc"
need bwrap
need_kernel 6.1
KDIR=$(kernel_field 6.1 build_dir)
OUT="$WORK/outside"
mkdir -p "$OUT" "$WORK/evil"
empty_module "$WORK/evil/evil.c" evil
cat > "$WORK/evil/Makefile" <<MEOF
obj-m += evil.o
ESCAPE := \$(shell touch $OUT/from-makefile; touch $KDIR/from-makefile; touch $WORK/evil/from-makefile; echo x > /dev/tcp/127.0.0.1/1 2>/dev/null; getent hosts deb.debian.org > $OUT/net 2>&1; echo done)
MEOF
"$AD" check "$WORK/evil" --kernel 6.1 --no-sparse --json > "$WORK/m.json" || fail "the sandboxed build failed"
py "$WORK/m.json" "d['gates']['build']['by_kernel']['$R61']['details']['modules'] == ['evil.ko']"
[ ! -e "$OUT/from-makefile" ] || fail "a Makefile wrote outside the scratch copy"
[ ! -e "$OUT/net" ] || fail "a Makefile wrote outside the scratch copy (net)"
[ ! -e "$KDIR/from-makefile" ] || fail "a Makefile wrote into the kernel tree"
[ ! -e "$WORK/evil/from-makefile" ] || fail "a Makefile wrote into the driver's own tree"

# A --build-cmd is the driver's code too: same walls, and no network (a listener on the host's
# loopback is not reachable from the sandbox's own network namespace).
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True); time.sleep(120)' > "$WORK/port" &
LISTENER=$!
trap 'kill $LISTENER 2>/dev/null; rm -rf "$WORK"' EXIT
for i in $(seq 1 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
PORT=$(cat "$WORK/port")
bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" || fail "the test's listener is not reachable from the host"
"$AD" check "$WORK/evil" --kernel 6.1 --no-sparse --json \
  --build-cmd "bash -c 'if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then exit 3; fi; touch $OUT/from-cmd; touch $KDIR/from-cmd; touch /tmp/ad-sandbox-tmp-$$; make -C {kdir} M={tree} modules'" \
  > "$WORK/c.json" || fail "the sandboxed --build-cmd failed (or reached the host's network)"
py "$WORK/c.json" "d['gates']['build']['by_kernel']['$R61']['details']['modules'] == ['evil.ko']"
[ ! -e "$OUT/from-cmd" ] || fail "--build-cmd wrote outside the scratch copy"
[ ! -e "$KDIR/from-cmd" ] || fail "--build-cmd wrote into the kernel tree"
[ ! -e "/tmp/ad-sandbox-tmp-$$" ] || fail "the sandbox's /tmp is the host's"
echo PASS
