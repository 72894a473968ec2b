#!/bin/sh
# autodriver setup on Debian 12, as root. Installs Debian packages (the tools only: no kernel,
# headers or source package is ever installed), builds and installs autodriver into /usr/local/bin,
# fetches the 6.1, 6.12 and 7.3 kernel targets into the cache (with their toolchain roots) and builds
# the compat KB, then:
#   ./setup.sh run    checks the bundled example driver on 6.1, 6.12 and 7.3 with the QEMU boot test
#   ./setup.sh test   runs the whole test suite (ctest)
#   ./setup.sh        setup only
set -eu
cd "$(dirname "$0")"
mode="${1:-setup}"
# Each step's time, so that a slow one is visible (progress on a fresh machine takes minutes).
t0=$(date +%s)
took() { echo "setup.sh: $1 ($(( $(date +%s) - t0 )) s)"; t0=$(date +%s); }

PACKAGES="build-essential cmake ninja-build pkg-config git ca-certificates
 nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libgit2-dev libcurl4-openssl-dev libcpp-httplib-dev libarchive-dev
 libgtest-dev libgmock-dev libclang-14-dev clang clang-format-14
 qemu-system-x86 qemu-system-data busybox-static kmod xz-utils zstd cpio bc flex bison libelf-dev libssl-dev
 sparse coccinelle dpkg-dev python3 sqlite3 procps diffutils patch
 apt mmdebstrap bubblewrap uidmap debian-archive-keyring"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup.sh: these Debian packages are missing and installing them needs root:$missing" >&2
    exit 2
  fi
  echo "setup.sh: installing$missing"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
  took "packages installed"
fi

# A unity build without debug information: under a third of the CPU time of a RelWithDebInfo
# build file by file (docs/benchmarks.md, "Build time"). Developers may configure their own folder.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
# The main job needs the tool alone; the tests need everything (unit tests, fuzzers).
if [ "$mode" = test ]; then
  cmake --build build -j "$(nproc)"
else
  cmake --build build -j "$(nproc)" --target autodriver
fi
took "autodriver built"
if [ "$(id -u)" = 0 ]; then
  cmake --install build --prefix /usr/local >/dev/null
  AD=/usr/local/bin/autodriver
else
  AD="$PWD/build/src/autodriver/autodriver"
fi
# Kernels come from Debian's archive through autodriver's own apt configuration in the cache; each
# is built in a toolchain root of its suite (mmdebstrap, once per suite), under bubblewrap.
"$AD" kernel fetch 6.1 6.12 7.3
took "kernels fetched"
# The compat KB that `port` uses (maintainers' #if LINUX_VERSION_CODE blocks of Debian's DKMS
# packages, downloaded into the cache, never installed); a port still works without it. The host's
# release only: `kb build --dkms --suite all` reads every release's (docs/compat-kb.md) but its
# first download takes about 15 minutes more.
"$AD" kb build --dkms >/dev/null || echo "setup.sh: warning: no compat KB (autodriver kb build --dkms failed)" >&2
took "compat KB built"

case "$mode" in
  run)
    exec "$AD" check examples/misc-counter --kernel 6.1 --kernel 6.12 --kernel 7.3 --boot ;;
  test)
    # Everything the tests need is installed above: a test that would skip fails instead.
    AUTODRIVER_TEST_NO_SKIP=1 exec ctest --test-dir build --output-on-failure -j 2 ;;
  setup) ;;
  *) echo "setup.sh: unknown mode '$mode' (run, test or nothing)" >&2; exit 2 ;;
esac
