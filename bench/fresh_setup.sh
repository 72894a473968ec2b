#!/bin/sh
# Benchmark (not a test): the README's `./setup.sh MODE` on a fresh Debian 12 machine, timed.
#   bench/fresh_setup.sh [MODE] [WORKDIR]   (MODE run (default), test or setup; as root)
# A minimal bookworm root is made with mmdebstrap (--variant=minbase) in WORKDIR (default: a
# temporary folder, deleted after), a clean clone of this checkout's HEAD is put in its /root, and
# setup.sh runs there as root with an empty cache: packages installed from Debian's archive, the
# build, the kernel fetch and the main job, each step's time printed by setup.sh. The root is
# entered with its own mount and pid namespace and pivot_root (a chroot may not create the user
# namespaces that bubblewrap's sandbox needs), with its own /proc and the host's /dev and /sys.
set -eu
cd "$(dirname "$0")/.."
MODE="${1:-run}"
if [ "$(id -u)" != 0 ]; then
  echo "fresh_setup.sh: needs root (mmdebstrap, mount, pivot_root)" >&2
  exit 2
fi
if [ $# -ge 2 ]; then
  W="$2"
  mkdir -p "$W"
else
  W=$(mktemp -d /tmp/ad-fresh.XXXXXX)
  trap 'rm -rf "$W"' EXIT INT TERM
fi
R="$W/root"
rm -rf "$R"
start=$(date +%s)
mmdebstrap --variant=minbase bookworm "$R" "deb http://deb.debian.org/debian bookworm main" \
  "deb http://deb.debian.org/debian bookworm-updates main" \
  "deb http://deb.debian.org/debian-security bookworm-security main" >"$W/mmdebstrap.log" 2>&1 ||
  { tail -20 "$W/mmdebstrap.log" >&2; exit 1; }
echo "fresh_setup.sh: fresh root made ($(( $(date +%s) - start )) s)"
git clone -q "$PWD" "$R/root/autodriver"
git -C "$R/root/autodriver" checkout -q "$(git rev-parse HEAD)"
cp /etc/resolv.conf "$R/etc/resolv.conf"
start=$(date +%s)
rc=0
unshare --mount --pid --fork --propagation private sh -c '
  set -e
  R="$1"; MODE="$2"
  mount --bind "$R" "$R"
  mount -t proc proc "$R/proc"
  mount --rbind /dev "$R/dev"
  mount --rbind /sys "$R/sys"
  mount -t tmpfs tmpfs "$R/tmp"
  mkdir -p "$R/.oldroot"
  cd "$R"
  pivot_root . .oldroot
  umount -l /.oldroot
  cd /root/autodriver
  exec /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ./setup.sh "$MODE"
' sh "$R" "$MODE" || rc=$?
echo "fresh_setup.sh: ./setup.sh $MODE exited $rc after $(( $(date +%s) - start )) s (commit $(git rev-parse --short HEAD))"
exit "$rc"
