# Target-only repair (no --from) of five hand-written 6.1 drivers using APIs 6.12 changed
# (tests/fixtures/target_only): with --no-reference everything comes from the 6.12 tree itself
# (its headers, its own callers, Documentation/filesystems/porting.rst); by default an older
# known kernel's source is also learned from (the statements the kernel's own drivers deleted).
. "$(dirname "$0")/lib.sh.inc"
need spatch
"$AD" kernel source 6.12 > /dev/null || fail "kernel source 6.12"
"$AD" kernel source 6.1 > /dev/null || fail "kernel source 6.1"
F="$AD_SRC/tests/fixtures/target_only"
port() { # NAME OUT [args...]
  n=$1; o=$2; shift 2
  "$AD" port "$F/$n" --to 6.12 -o "$WORK/$o" --no-store-kb --json "$@" > "$WORK/$o.json" \
    || { python3 -c "import json; d=json.load(open('$WORK/$o.json')); print(d['status'], d['remaining'])" >&2; fail "$o: port failed"; }
  py "$WORK/$o.json" "d['status'] == 'ported' and d['integrity']['ok'] is True and d['from'] == ''" "$o: ported"
}

port probe1 p1 --no-reference
py "$WORK/p1.json" "d['reference'] == ''" "p1: no reference kernel"
t="$WORK/p1/tree/probe1.c"
grep -q '= no_llseek' "$t" && fail "p1: no_llseek stayed"
grep -q 'noop_llseek' "$t" && fail "p1: no_llseek became noop_llseek (the porting notes say: leave it NULL)"
grep -q 'DEFINE_SEMAPHORE(pr_sem, 1);' "$t" || fail "p1: the driver's own semaphore was renamed or not fixed"
grep -q 'strscpy(pr_name' "$t" || fail "p1: strlcpy"
grep -q 'u64_stats_fetch_begin(&pr_stats.syncp)' "$t" || fail "p1: u64_stats_fetch_begin_irq"
grep -q '#include <linux/unaligned.h>' "$t" || fail "p1: unaligned header"
grep -q 'class_create("probe1")' "$t" || fail "p1: class_create"

port probe2 p2 --no-reference
t="$WORK/p2/tree/probe2.c"
grep -qF 'vm_flags_set(vma, VM_IO | VM_DONTEXPAND);' "$t" || fail "p2: vm_flags accessor"
grep -qF 'inode_set_mtime_to_ts(inode,' "$t" || fail "p2: mtime accessor"
grep -qF 'inode_set_ctime_to_ts(inode, current_time(inode))' "$t" || fail "p2: ctime accessor"
grep -qF 'i2c_client_get_device_id(client)' "$t" || fail "p2: i2c probe id from the client"

# From 6.12 alone nothing says what became of the AER calls: no-progress, but no wrong guess.
"$AD" port "$F/probe3" --to 6.12 -o "$WORK/p3n" --no-store-kb --no-reference --json > "$WORK/p3n.json" || true
py "$WORK/p3n.json" "d['status'] == 'no-progress' and len(d['remaining']) == 2" "p3n: the two AER calls remain"
grep -q 'prandom_u32_state' "$WORK/p3n/tree/probe3.c" && fail "p3: a call renamed to a function that does not take its arguments"
port probe3 p3
py "$WORK/p3.json" "d['reference'] == '$R61'" "p3: 6.1 as the reference kernel"
t="$WORK/p3/tree/probe3.c"
grep -q 'pcie_error_reporting(pdev)' "$t" && fail "p3: the AER calls the kernel's drivers deleted stayed"
grep -q 'EINVAL' "$t" && fail "p3: a config-off stub body was inlined"
grep -qF 'get_random_u32_below(10)' "$t" || fail "p3: prandom_u32_max"
grep -qF 'static ssize_t p3_write(struct tty_struct *tty, const u8 *buf, size_t count)' "$t" || fail "p3: tty write retyped"
grep -qF 'version_show(const struct class *class, const struct class_attribute *attr' "$t" || fail "p3: CLASS_ATTR_RO's show retyped"

# 6.10's CPU-model constants (a family learned from the kernel's own changed functions, with the
# x86_model -> x86_vfm of the same comparisons) and 6.6's sysctl paths.
port probe4 p4
t="$WORK/p4/tree/probe4.c"
grep -qF 'if (boot_cpu_data.x86_vfm == INTEL_ATOM_AIRMONT)' "$t" || fail "p4: model comparison"
grep -qF 'switch (boot_cpu_data.x86_vfm) {' "$t" || fail "p4: switch head"
grep -qF 'case INTEL_ICELAKE_X:' "$t" || fail "p4: case label"
grep -qF 'register_sysctl("dev/probe4", p4_table)' "$t" || fail "p4: sysctl path"
grep -q 'p4_root_table\|\.child' "$t" && fail "p4: directory tables stayed"
# 6.9's ethtool_keee through the driver's own helper (members converted as the target's
# net/ethtool/ioctl.c converts them), ->iterate_shared (not the similarly named read_iter), a
# bus callback on a one-line initializer, and spi.h's compat layer replaced together.
port probe5 p5
t="$WORK/p5/tree/probe5.c"
grep -q 'struct ethtool_eee\b' "$t" && fail "p5: struct ethtool_eee stayed"
grep -qF 'ethtool_convert_legacy_u32_to_link_mode(e->supported, mmd_eee_cap_to_ethtool_sup_t(val));' "$t" || fail "p5: keee write"
grep -qF 'ethtool_convert_link_mode_to_legacy_u32(&legacy_advertised, e->advertised);' "$t" || fail "p5: keee read"
grep -qF '.iterate_shared = p5_readdir,' "$t" || fail "p5: iterate_shared"
grep -q 'read_iter' "$t" && fail "p5: .iterate became .read_iter"
grep -qF 'static int p5_uevent(const struct device *dev' "$t" || fail "p5: uevent retyped"
grep -v '^ \*' "$t" | grep -q 'spi_master' && fail "p5: spi_master names stayed"
grep -qF 'devm_spi_register_controller(&pdev->dev, master)' "$t" || fail "p5: spi register"
echo PASS
