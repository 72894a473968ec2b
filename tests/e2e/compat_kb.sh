#!/bin/sh
# Compat KB from two real Debian DKMS packages: entries with provenance and version boundaries,
# leave-out, collapsed-block cases and their comparison with the maintainers' new branch.
. "$AD_SRC/tests/e2e/lib.sh.inc"
need apt-get
need dpkg

# Bad input: nothing to learn from.
set +e
"$AD" kb build -o "$WORK/none.json" 2>"$WORK/none.err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "kb build without sources exited $rc, want 2"

"$AD" kb build --package rapiddisk-dkms --package xtables-addons-dkms -o "$WORK/kb.json" --json > "$WORK/summary.json" \
  || fail "kb build failed"
py "$WORK/kb.json" 'd["schema"] == "autodriver.compat-kb" and d["schema_version"] == 1' "schema"
py "$WORK/kb.json" 'sorted(d["sources"]) == ["rapiddisk-dkms", "xtables-addons-dkms"]' "sources"
py "$WORK/kb.json" 'len(d["entries"]) >= 10 and all(e["provenance"]["package"] in d["sources"] and e["provenance"]["line"] > 0 and e["provenance"]["file"] for e in d["entries"])' "provenance"
# Real entries: rapiddisk's blk_alloc_disk gained an argument in 6.9; xtables' prandom_u32_max rename in 6.2.
py "$WORK/kb.json" 'any(e["kind"] == "call-args" and e["old"] == "blk_alloc_disk($0)" and e["new"] == "blk_alloc_disk(NULL, $0)" and e["boundary"] == "6.9.0" for e in d["entries"])' "blk_alloc_disk entry"
py "$WORK/kb.json" 'any(e["kind"] == "ident-rename" and e["old"] == "prandom_u32_max" and e["new"] == "get_random_u32_below" and e["boundary"] == "6.2.0" for e in d["entries"])' "prandom_u32_max entry"
py "$WORK/summary.json" 'd["entry_count"] >= 10 and d["stats"]["blocks"] > d["stats"]["complex"] >= 0' "summary"

# Two Debian releases: each one's version of the package is read (xtables-addons 3.13 in bullseye,
# 3.31 in sid), the package named once among the sources; a release without it is a warning.
"$AD" kb build --package xtables-addons-dkms --suite bullseye,sid -o "$WORK/kb-two.json" >/dev/null 2>"$WORK/two.err" \
  || fail "kb build --suite bullseye,sid failed: $(tail -3 "$WORK/two.err")"
py "$WORK/kb-two.json" 'd["sources"] == ["xtables-addons-dkms"] and len({e["provenance"]["version"] for e in d["entries"]}) == 2' "two releases"
set +e
"$AD" kb build --package xtables-addons-dkms --suite nosuchrelease -o "$WORK/none2.json" 2>"$WORK/none2.err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "kb build --suite nosuchrelease exited $rc, want 2"
grep -q "nosuchrelease" "$WORK/none2.err" || fail "an unknown release is not named: $(cat "$WORK/none2.err")"

"$AD" kb build --package rapiddisk-dkms --package xtables-addons-dkms --leave-out rapiddisk-dkms -o "$WORK/kb-lo.json" >/dev/null
py "$WORK/kb-lo.json" 'd["sources"] == ["xtables-addons-dkms"] and d["entries"] and all(e["provenance"]["package"] == "xtables-addons-dkms" for e in d["entries"])' "leave-out"

# Collapsed-block cases between 6.1 and 6.12 (needs the kernels' headers for their versions).
if [ "$(kernel_field 6.1 headers_fetched)" = True ] && [ "$(kernel_field 6.12 headers_fetched)" = True ]; then
  "$AD" kb cases --package rapiddisk-dkms -o "$WORK/cases" > "$WORK/cases.txt"
  c="$WORK/cases/rapiddisk-dkms--rapiddisk.c--L801"
  [ -f "$c/case.json" ] || fail "no blk_alloc_disk case: $(cat "$WORK/cases.txt")"
  grep -q 'blk_alloc_disk(NUMA_NO_NODE)' "$c/tree/rapiddisk.c" || fail "case does not hold the old branch"
  ! grep -q 'blk_alloc_disk(NULL' "$c/tree/rapiddisk.c" || fail "case still holds the new branch"
  set +e
  "$AD" kb compare "$c" "$c/tree" > "$WORK/cmp0.json"; rc=$?
  set -e
  [ $rc -eq 1 ] || fail "unported case compared identical (rc $rc)"
  cp -r "$c/tree" "$WORK/fixed"
  sed -i 's/blk_alloc_disk(NUMA_NO_NODE);/blk_alloc_disk(NULL,\n\t\tNUMA_NO_NODE); \/* 6.9 *\//' "$WORK/fixed/rapiddisk.c"
  "$AD" kb compare "$c" "$WORK/fixed" > "$WORK/cmp1.json" || fail "the maintainers' form (reflowed) did not compare identical"
  py "$WORK/cmp1.json" 'd["identical"] is True and d["file"] == "rapiddisk.c"' "compare json"

  # One case per boundary: 6.9 changed both the allocation and its check (two blocks), so the
  # case holds both old branches and only the whole port compares identical.
  "$AD" kb cases --package rapiddisk-dkms --by-boundary -o "$WORK/bcases" > "$WORK/bcases.txt"
  b="$WORK/bcases/rapiddisk-dkms--B6.9.0"
  [ -f "$b/case.json" ] || fail "no 6.9 boundary case: $(cat "$WORK/bcases.txt")"
  py "$b/case.json" 'd["schema_version"] == 2 and len(d["blocks"]) == 2 and {x["boundary"] for x in d["blocks"]} == {"6.9.0"}' "two blocks of 6.9"
  py "$WORK/bcases/summary.json" 'd["by_boundary"] and d["selected_blocks"] > d["selected_cases"]' "blocks grouped"
  grep -q 'blk_alloc_disk(NUMA_NO_NODE)' "$b/tree/rapiddisk.c" && grep -q 'if (!disk)' "$b/tree/rapiddisk.c" \
    || fail "the case does not hold both old branches"
  cp -r "$b/tree" "$WORK/half"
  sed -i 's/blk_alloc_disk(NUMA_NO_NODE);/blk_alloc_disk(NULL, NUMA_NO_NODE);/' "$WORK/half/rapiddisk.c"
  set +e
  "$AD" kb compare "$b" "$WORK/half" > "$WORK/cmp-half.json"; rc=$?
  set -e
  [ $rc -eq 1 ] || fail "half of the boundary's port compared identical (rc $rc)"
  cp -r "$WORK/half" "$WORK/whole"
  sed -i 's/if (!disk)/if (IS_ERR(disk))/' "$WORK/whole/rapiddisk.c"
  "$AD" kb compare "$b" "$WORK/whole" > "$WORK/cmp-whole.json" || fail "the whole port did not compare identical"
  py "$WORK/cmp-whole.json" 'd["identical"] is True and d["blocks"] == d["blocks_identical"] == 2' "every block identical"
fi
echo "ok"
