#!/bin/sh
# API changes older than 5.10 (the oldest kernel source Debian serves, so no tree pair shows them):
# a driver using twenty-four of them (tests/fixtures/drivers/old-apis) ports on 6.1 through the
# shipped rule packs, each named in the verdict by its rule file; without the rule packs it does
# not build. The port is the kernel's own conversion: no include a defined macro does not need,
# no parentheses a macro body carried for its own sake. A callback whose parameters and return
# type changed together (vm_operations_struct.fault) is retyped in one edit, the dropped
# parameter computed as the kernel's own implementations compute it. The fixture is never written. ~2 min.
. "$AD_SRC/tests/e2e/lib.sh.inc"
need spatch
need_kernel 6.1
DRV="$AD_SRC/tests/fixtures/drivers/old-apis"
before=$(cat "$DRV/oldapis.c" "$DRV/oldblk.c" | cksum)
# An empty compat KB: what ports it here is the rule packs alone.
printf '{"schema":"autodriver.compat-kb","schema_version":1,"sources":[],"stats":{},"entries":[]}\n' > "$WORK/kb.json"
"$AD" port "$DRV" --to 6.1 --no-store-kb --kb "$WORK/kb.json" -o "$WORK/out" --json > "$WORK/port.json" ||
  fail "port with the rule packs: $(cat "$WORK/port.json")"
for r in kzfree-kfree-sensitive gfp-retry-mayfail page-cache-macros ioremap-nocache field-sizeof set-ethtool-ops \
  dma-zalloc-coherent probe-kernel-nofault access-ok-no-type alloc-netdev-name-assign vmalloc-no-prot mmap-lock-api \
  net-trans-start bio-error-status bio-endio-error access-once discard-zeroes-data mmiowb-removal timeval-gettimeofday skb-frag-accessors \
  wait-queue-entry task-state-accessors irqf-disabled; do
  py "$WORK/port.json" "any(a['proposer'] == 'rule-pack' and 'rules/$r.rule' in a['description'] for a in d['accepted'])" \
    "rule $r ported nothing: $(python3 -c 'import json,sys; print([a["title"] for a in json.load(open(sys.argv[1]))["accepted"]])' "$WORK/port.json")"
done
T="$WORK/out/tree/oldapis.c"
for want in 'kfree_sensitive(buf);' 'GFP_KERNEL | __GFP_RETRY_MAYFAIL' 'kmalloc(PAGE_SIZE,' 'put_page(pg);' \
  'return ioremap(start, 64);' 'sizeof_field(struct oa_priv, regs)' 'dev->ethtool_ops = &oa_ethtool_ops;' \
  'dma_alloc_coherent(d, 64, h, GFP_KERNEL)' 'copy_from_kernel_nofault(&v, kbuf, sizeof(v))' \
  'access_ok(p, sizeof(long))' '"oa%d", NET_NAME_UNKNOWN, oa_setup)' '__vmalloc(4 * PAGE_SIZE, GFP_KERNEL);' \
  'mmap_read_lock(mm);' 'mmap_read_unlock(mm);' 'netif_trans_update(dev);' 'struct timespec64 tv;' \
  'writel(1, regs); ktime_get_real_ts64(&tv);' '(tv.tv_nsec / NSEC_PER_USEC) / 1000;' \
  'static vm_fault_t oa_fault(struct vm_fault *vmf) { struct vm_area_struct *vma = vmf->vma;' \
  'skb_frag_off_add(frag, 2);' 'return skb_frag_size(frag) + skb_frag_off(&skb_shinfo(skb)->frags[1]);' \
  'wait_queue_entry_t wait;' '__set_current_state(TASK_INTERRUPTIBLE);' '__set_current_state(TASK_RUNNING);' \
  'request_irq(irq, oa_irq, IRQF_SHARED, "oldapis", data);'; do
  tr -s ' \t\n' ' ' < "$T" | grep -qF "$want" || fail "the port lacks '$want': $(diff -u "$DRV/oldapis.c" "$T")"
done
B="$WORK/out/tree/oldblk.c"
for want in 'if (bio->bi_status)' 'bio->bi_status = errno_to_blk_status(error); bio_endio(bio);' \
  'bio->bi_status = BLK_STS_IOERR; bio_io_error(bio);' \
  'WRITE_ONCE(oldblk_last_error, blk_status_to_errno(bio->bi_status));' 'READ_ONCE(oldblk_last_error)'; do
  tr -s ' \t\n' ' ' < "$B" | grep -qF "$want" || fail "the port lacks '$want': $(diff -u "$DRV/oldblk.c" "$B")"
done
grep -q discard_zeroes_data "$B" && fail "the removed queue limit is still set"
grep -q '#include <asm' "$T" && fail "an include the defined access_ok() macro does not need: $(grep '#include' "$T")"
rc=0; "$AD" port "$DRV" --to 6.1 --no-store-kb --kb "$WORK/kb.json" --no-rule-packs -o "$WORK/bare" --json > "$WORK/bare.json" || rc=$?
py "$WORK/bare.json" "not d['ok']" "without the rule packs the old APIs should not port (exit $rc)"
[ "$(cat "$DRV/oldapis.c" "$DRV/oldblk.c" | cksum)" = "$before" ] || fail "the fixture was written"
echo PASS
