#!/bin/sh
# The build host a driver expects, inside the sandbox: a vendor tree built the way its README says
# (`make` in the tree, M=$(PWD)) finds `cc` for its configure-style probe, defaults its kernel to
# /lib/modules/$(uname -r)/build and gets the target's release from `uname -r`; a dkms.conf MAKE
# line runs as written with ${kernelver}. On 6.1 (bookworm's gcc-12) and 7.3 (trixie's gcc-14),
# whose toolchain roots have only gcc-N.
. "$(dirname "$0")/lib.sh.inc"
need bwrap
need_kernel 6.1
need_kernel 7.3
mkdir -p "$WORK/vendor"
empty_module "$WORK/vendor/probe.c" probe '#ifndef HAVE_PROBE' \
  '#error "the configure probe did not find a working compiler"' '#endif'
cat > "$WORK/vendor/Makefile" <<'MEOF'
KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
ifneq ($(KERNELRELEASE),)
obj-m := probe.o
ifneq ($(KVER),$(KERNELRELEASE))
$(error uname -r said $(KVER), the kernel is $(KERNELRELEASE))
endif
ccflags-y += $(shell cat $(src)/config.h)
else
all:
	echo 'int main(void) { return 0; }' > conftest.c
	if $(CC) conftest.c -o conftest; then echo -DHAVE_PROBE > config.h; else : > config.h; fi
	$(MAKE) -C $(KDIR) M=$(PWD) modules
endif
MEOF
for k in 6.1 7.3; do
  rel=$(kernel_field $k release)
  "$AD" check "$WORK/vendor" --kernel $k --no-sparse --build-cmd make --json > "$WORK/v-$k.json" || \
    fail "$k: the vendor-style build failed: $(python3 -c 'import json,sys; print(list(json.load(open(sys.argv[1]))["gates"]["build"]["by_kernel"].values())[0]["summary"])' "$WORK/v-$k.json")"
  py "$WORK/v-$k.json" "d['gates']['build']['by_kernel']['$rel']['details']['modules'] == ['probe.ko']"
  # A dkms.conf MAKE line, as written.
  "$AD" check "$WORK/vendor" --kernel $k --no-sparse --json \
    --build-cmd 'make -C /lib/modules/${kernelver}/build M={tree} KVER=$kernelver ccflags-y=-DHAVE_PROBE modules' > "$WORK/d-$k.json" \
    || fail "$k: the dkms.conf-style build failed"
  py "$WORK/d-$k.json" "d['gates']['build']['by_kernel']['$rel']['details']['modules'] == ['probe.ko']"
done
# A build that stops before the compiler runs says why in its own words.
rc=0; "$AD" check "$WORK/vendor" --kernel 6.1 --no-sparse --build-cmd 'make KDIR=/nonexistent' --json > "$WORK/f.json" || rc=$?
[ $rc -eq 1 ] || fail "a build with a wrong KDIR: expected exit 1, got $rc"
py "$WORK/f.json" "d['gates']['build']['by_kernel']['$R61']['summary'].startswith('the build failed before the compiler ran: ')"
py "$WORK/f.json" "'/nonexistent' in d['gates']['build']['by_kernel']['$R61']['details']['failure']"
echo PASS
