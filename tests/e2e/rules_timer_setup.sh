#!/bin/sh
# The timer interface before 4.15 (tests/fixtures/drivers/old-timers: setup_timer() with the
# holder as its cookie, init_timer() with .function/.data, a constant cookie the callback reads, a
# net_device cookie whose private data holds the timer and points back to it,
# DEFINE_TIMER()'s four arguments, a callback's prototype in a header) ports through the shipped
# timer-setup rules: from_timer() on 6.1, timer_container_of() on 7.3 (6.16's name), where
# del_timer_sync() also became timer_delete_sync(). callback-signature does not retype a cookie
# the body casts back (that compiles and points at the timer, not the object). The fixture is
# never written. ~2 min.
. "$AD_SRC/tests/e2e/lib.sh.inc"
need spatch
need_kernel 6.1
need_kernel 7.3
DRV="$AD_SRC/tests/fixtures/drivers/old-timers"
before=$(cat "$DRV"/* | cksum)
printf '{"schema":"autodriver.compat-kb","schema_version":1,"sources":[],"stats":{},"entries":[]}\n' > "$WORK/kb.json"
for k in 6.1 7.3; do
  if [ "$k" = 6.1 ]; then rule=timer-setup; back=from_timer; else rule=timer-setup-6.16; back=timer_container_of; fi
  "$AD" port "$DRV" --to "$k" --no-store-kb --kb "$WORK/kb.json" -o "$WORK/out$k" --json > "$WORK/port$k.json" ||
    fail "port to $k: $(cat "$WORK/port$k.json")"
  py "$WORK/port$k.json" "any(a['proposer'] == 'rule-pack' and 'rules/$rule.rule' in a['description'] for a in d['accepted'])" \
    "rule $rule did not port $k"
  py "$WORK/port$k.json" "not any(a['proposer'] == 'callback-signature' for a in d['accepted'])" \
    "callback-signature retyped a cookie on $k"
  T="$WORK/out$k/tree/oldtimers.c"
  for want in "struct ot_dev *d = $back(d, t, poll_timer);" "d = $back(d, t, kick_timer);" \
    'timer_setup(&ot->poll_timer, ot_poll, 0);' 'timer_setup(&ot->kick_timer, ot_kick, 0);' \
    'timer_setup(&ot_once, ot_fire_once, 0);' 'static DEFINE_TIMER(ot_beat_timer, ot_heartbeat);' \
    'static void ot_fire_once(struct timer_list *t) { if (1)' 'void ot_heartbeat(struct timer_list *t) {' \
    "struct ot_net *np = $back(np, t, watchdog); struct net_device *dev = np->ndev;" \
    'timer_setup(&np->watchdog, ot_watchdog, 0);'; do
    tr -s ' \t\n' ' ' < "$T" | grep -qF "$want" || fail "the $k port lacks '$want': $(diff -u "$DRV/oldtimers.c" "$T")"
  done
  grep -v '^ \*' "$T" | grep -qE 'init_timer\(|setup_timer\(|\.data =|\.function =|unsigned long (data|arg|verbose|unused)' &&
    fail "the $k port kept the old interface: $(diff -u "$DRV/oldtimers.c" "$T")"
  grep -qF 'void ot_heartbeat(struct timer_list *t);' "$WORK/out$k/tree/oldtimers.h" || fail "the header's prototype on $k"
done
grep -qF 'timer_delete_sync(&ot->poll_timer);' "$WORK/out7.3/tree/oldtimers.c" || fail "del_timer_sync() kept on 7.3"
rc=0; "$AD" port "$DRV" --to 6.1 --no-store-kb --kb "$WORK/kb.json" --no-rule-packs -o "$WORK/bare" --json > "$WORK/bare.json" || rc=$?
py "$WORK/bare.json" "not d['ok']" "without the rule packs the old timers should not port (exit $rc)"
[ "$(cat "$DRV"/* | cksum)" = "$before" ] || fail "the fixture was written"
echo PASS
