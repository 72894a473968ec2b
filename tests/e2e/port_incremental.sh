#!/bin/sh
# Big drivers fast (issue 16): a trial starts from the built work tree, so kbuild recompiles only
# what its edit touched (counted from kbuild's "CC [M]" lines in each step of the verdict):
#  1. a six-file driver whose one broken file calls del_timer_sync() (gone in 7.3): the first
#     build compiles all six files, the trial that fixes it one;
#  2. the same call in a header two of the six files include: the trial compiles those two;
#     with another file still broken, a trial that touches one C file compiles that object alone
#     (with --from, the old kernel's build runs last, only because the port ended without a build);
#     a header eight files include, with another file still broken: the trial is judged by a
#     sample of its users, and one full build afterwards refreshes the others;
#  3. two ports of one tree at once (each trial in its own copy, built at the same path inside
#     its own sandbox) both succeed;
#  4. --build-timeout is honoured and said (status `timeout`), and a timeout <= 0 is bad input.
. "$(dirname "$0")/lib.sh.inc"
need_kernel 6.12
need_kernel 7.3

mkdriver() { # DIR BROKEN(main|header)
  d=$1
  mkdir -p "$d"
  cat > "$d/helpers.h" <<'EOF'
#include <linux/timer.h>
static inline void helpers_stop(struct timer_list *t)
{
EOF
  if [ "$2" = header ]; then echo '	del_timer_sync(t);' >> "$d/helpers.h"; else echo '	timer_delete(t);' >> "$d/helpers.h"; fi
  echo '}' >> "$d/helpers.h"
  cat > "$d/main.c" <<'EOF'
#include <linux/module.h>
#include <linux/timer.h>
static struct timer_list tick;
static void tick_fn(struct timer_list *t) { }
static int __init m_init(void) { timer_setup(&tick, tick_fn, 0); return 0; }
static void __exit m_exit(void)
{
EOF
  if [ "$2" = main ]; then echo '	del_timer_sync(&tick);' >> "$d/main.c"; else echo '	timer_delete_sync(&tick);' >> "$d/main.c"; fi
  cat >> "$d/main.c" <<'EOF'
}
module_init(m_init);
module_exit(m_exit);
MODULE_LICENSE("GPL");
EOF
  for f in a b; do
    printf '#include "helpers.h"\nvoid part_%s(struct timer_list *t);\nvoid part_%s(struct timer_list *t) { helpers_stop(t); }\n' $f $f > "$d/$f.c"
  done
  for f in c d e; do
    printf '#include <linux/kernel.h>\nint part_%s(int x);\nint part_%s(int x) { return x + 1; }\n' $f $f > "$d/$f.c"
  done
  echo 'obj-m += six.o
six-y := main.o a.o b.o c.o d.o e.o
ccflags-y += -I$(src)' > "$d/Makefile"
}
mkdriver "$WORK/one" main
mkdriver "$WORK/hdr" header

# compiled FILE STEP: the "compiled" counts of the verdict's steps of that kind
counts() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(s.get("compiled")) for s in d["steps"] if s["step"] == sys.argv[2]))' "$1" "$2"; }

# 1. one broken .c file
"$AD" port "$WORK/one" --from 6.12 --to 7.3 --no-store-kb -o "$WORK/o1" --json > "$WORK/o1.json" || fail "port (one file) exited $?"
py "$WORK/o1.json" "d['status'] == 'ported'" "six-file driver ported"
[ "$(counts "$WORK/o1.json" build-target | cut -d' ' -f1)" = 6 ] || fail "first target build compiled $(counts "$WORK/o1.json" build-target), not 6 files"
py "$WORK/o1.json" "[s['compiled'] for s in d['steps'] if s['step'] == 'try'] == [1]" \
  "the trial fixing main.c compiled $(counts "$WORK/o1.json" try) file(s), not only main.c"
grep -q 'timer_delete_sync(&tick)' "$WORK/o1/tree/main.c" || fail "no timer_delete_sync in the port"
[ -z "$(find "$WORK/o1/tree" -name '*.o' -o -name '.*.cmd')" ] || fail "build products in OUT/tree"

# 2. the call in a header that a.c and b.c include
"$AD" port "$WORK/hdr" --from 6.12 --to 7.3 --no-store-kb -o "$WORK/o2" --json > "$WORK/o2.json" || fail "port (header) exited $?"
py "$WORK/o2.json" "d['status'] == 'ported'" "header case ported"
py "$WORK/o2.json" "[s['compiled'] for s in d['steps'] if s['step'] == 'try'] == [2]" \
  "the trial fixing helpers.h compiled $(counts "$WORK/o2.json" try) file(s), not its two users"

# 2b. main.c fixed while c.c keeps an error no proposer fixes: the trial is judged by compiling
#     main.c alone (a kbuild single object), c.c's error carried over from the build before
cp -r "$WORK/one" "$WORK/two"
sed -i 's/return x + 1;/return x +;/' "$WORK/two/c.c"
rc=0
"$AD" port "$WORK/two" --to 7.3 --no-store-kb -o "$WORK/o2b" --json > "$WORK/o2b.json" || rc=$?
[ "$rc" = 1 ] || fail "port with an unfixable error exited $rc, not 1"
py "$WORK/o2b.json" "d['final_errors'] >= 1 and all(r.startswith('c.c:') for r in d['remaining'])" "c.c's error remains, the rest is fixed"
py "$WORK/o2b.json" "[(s['compiled'], s['objects_only']) for s in d['steps'] if s['step'] == 'try' and s['errors_after'] < s['errors_before']] == [(1, True)]" \
  "the trial fixing main.c was not judged by main.o alone"
grep -q 'timer_delete_sync(&tick)' "$WORK/o2b/tree/main.c" || fail "main.c not fixed beside c.c's error"
# The same with --from 6.12: the port ends without a build, so the unchanged tree is built on
# 6.12 last (never before: a port that builds needs no second full build) and fails there too.
rc=0
"$AD" port "$WORK/two" --from 6.12 --to 7.3 --no-store-kb -o "$WORK/o2f" --json > "$WORK/o2f.json" || rc=$?
[ "$rc" = 1 ] || fail "port of a driver broken on its own kernel exited $rc, not 1"
py "$WORK/o2f.json" "d['status'] == 'from-fails' and all(r.startswith('c.c:') for r in d['remaining'])" "from-fails, c.c's error on 6.12 remaining"
py "$WORK/o2f.json" "[s['step'] for s in d['steps'] if s['step'].startswith('build')][-1] == 'build-from' and [s['step'] for s in d['steps']][0] == 'build-target'" \
  "the old kernel's build ran last, the target's first"
py "$WORK/o1.json" "'build-from' not in [s['step'] for s in d['steps']]" "a port that builds ran an old-kernel build"

# 2c. a header eight files include, and an error of c.c's own no proposer fixes: the trial that
#     fixes the header is judged by compiling c.c (its own error) and two files that reported the
#     header's error, not all eight users; the next full build (a refresh) compiles the others
d="$WORK/wide"
mkdriver "$d" header
sed -i 's/return x + 1;/return x +;/' "$d/c.c"
for f in c d e f g h; do
  printf '#include "helpers.h"\nint part_%s(struct timer_list *t);\nint part_%s(struct timer_list *t) { helpers_stop(t); return 0 +; }\n' $f $f > "$d/$f.c"
done
sed -i 's/return 0 +;/return 0;/' "$d/d.c" "$d/e.c" "$d/f.c" "$d/g.c" "$d/h.c"
echo 'obj-m += six.o
six-y := main.o a.o b.o c.o d.o e.o f.o g.o h.o
ccflags-y += -I$(src)' > "$d/Makefile"
rc=0
"$AD" port "$d" --to 7.3 --no-store-kb -o "$WORK/o2c" --json > "$WORK/o2c.json" || rc=$?
[ "$rc" = 1 ] || fail "port of the wide header case exited $rc, not 1"
py "$WORK/o2c.json" "[(s['compiled'], s['objects_only']) for s in d['steps'] if s['step'] == 'try' and s['errors_after'] < s['errors_before']] == [(3, True)]" \
  "the trial fixing helpers.h was not judged by three of its eight users"
py "$WORK/o2c.json" "any(s['step'] == 'build-target' and s.get('refresh') and s['compiled'] == 6 for s in d['steps'])" \
  "no refresh build compiled the five users outside the sample and c.c (whose compilation fails each time)"
py "$WORK/o2c.json" "d['final_errors'] >= 1 and all(r.startswith('c.c:') for r in d['remaining'])" "c.c's error remains, the header is fixed"
grep -q 'timer_delete_sync(t)' "$WORK/o2c/tree/helpers.h" || fail "helpers.h not fixed"

# 3. two ports of one tree at once
"$AD" port "$WORK/one" --from 6.12 --to 7.3 --no-store-kb -o "$WORK/p1" --json > "$WORK/p1.json" & p1=$!
"$AD" port "$WORK/one" --from 6.12 --to 7.3 --no-store-kb -o "$WORK/p2" --json > "$WORK/p2.json" & p2=$!
wait $p1 || fail "first of two parallel ports exited $?"
wait $p2 || fail "second of two parallel ports exited $?"
for p in p1 p2; do
  py "$WORK/$p.json" "d['status'] == 'ported'" "parallel port $p"
  cmp -s "$WORK/o1/tree/main.c" "$WORK/$p/tree/main.c" || fail "parallel port $p differs from the single one"
done

# 4. the build timeout
rc=0
"$AD" port "$WORK/one" --to 7.3 --build-cmd 'sleep 30' --build-timeout 2 --no-store-kb -o "$WORK/o4" --json > "$WORK/o4.json" || rc=$?
[ "$rc" = 1 ] || fail "a build cut by --build-timeout exited $rc, not 1"
py "$WORK/o4.json" "d['status'] == 'timeout' and 'within 2 s' in d['remaining'][0]" "verdict says timeout"
run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"])' "$WORK/o4.json")
"$AD" explain "$run" --json > "$WORK/x4.json" || fail "explain of the timed-out run"
py "$WORK/x4.json" "d['attribute'][0]['cause'] == 'timeout' and 'build-timeout=' in d['recover'][0]['command']" "explain blames the timeout"
for bad in 0 -5; do
  rc=0
  "$AD" port "$WORK/one" --to 7.3 --build-timeout "$bad" -o "$WORK/bad$bad" > /dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "--build-timeout $bad exited $rc, not 2"
done
echo PASS
