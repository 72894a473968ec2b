# The LLM generator in the port loop, against a loopback stand-in for a model (tests/e2e/fake_llm.py):
# with the rule proposers limited to one that has nothing to say, a module still calling strlcpy()
# (removed in 6.8) is ported to 6.12 by the model's SEARCH/REPLACE answer, tried and gated like any
# edit; the verdict counts the calls and tokens. An answer that disables the failing call instead
# (`#if 0`) is found by the reviewer's integrity gate, fed back and never kept; an answer that brings a
# new error is refined by the next; an unreachable endpoint leaves the rule-based result standing.
# bench --llm passes the endpoint to each case and reports what it spent.
. "$(dirname "$0")/lib.sh.inc"
need_kernel 6.12
D="$AD_SRC/tests/fixtures/drivers/llm-strlcpy"
serve() { # ANSWERS.json: starts the stand-in, sets URL
  rm -f "$WORK/port" "$WORK/requests"
  python3 "$AD_SRC/tests/e2e/fake_llm.py" "$1" "$WORK/port" "$WORK/requests" &
  SERVER=$!
  for _ in $(seq 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
  [ -s "$WORK/port" ] || fail "the stand-in model did not start"
  URL="http://127.0.0.1:$(cat "$WORK/port")/v1"
}
trap 'kill ${SERVER:-} 2>/dev/null || true; rm -rf "$WORK"' EXIT
port() { # OUT: port D to 6.12 with the stand-in, rules limited to entry-points
  rc=0
  "$AD" port "$D" --to 6.12 -o "$WORK/$1" --no-store-kb --no-reference --proposer entry-points --llm "$URL" --model fake \
    --json > "$WORK/$1.json" || rc=$?
}
cat > "$WORK/good.json" <<'JSON'
[{"content": "llm_strlcpy.c\n<<<<<<< SEARCH\n\tstrlcpy(ls_name, KBUILD_MODNAME, sizeof(ls_name));\n=======\n\tstrscpy(ls_name, KBUILD_MODNAME, sizeof(ls_name));\n>>>>>>> REPLACE\n"}]
JSON
serve "$WORK/good.json"
port good
[ $rc -eq 0 ] || fail "port with the model's answer: exit $rc"
py "$WORK/good.json" "d['status'] == 'ported' and d['accepted'][0]['proposer'] == 'llm'"
py "$WORK/good.json" "d['llm']['calls'] == 1 and d['llm']['prompt_tokens'] == 200 and d['llm']['completion_tokens'] == 40"
grep -q 'strscpy(ls_name' "$WORK/good/tree/llm_strlcpy.c" || fail "strscpy not in the ported tree"
# The run store shows the model's round as a step with its tokens.
run=$(python3 -c "import json; print(json.load(open('$WORK/good.json'))['run'])")
"$AD" show "$run" > "$WORK/show.txt" || fail "show $run"
grep -q 'agent .*llm .*tokens 200/40 .*fake: 1 edit(s), 1 call(s)' "$WORK/show.txt" || fail "show lacks the agent step: $(grep agent "$WORK/show.txt")"
grep -q 'strlcpy' "$WORK/requests" || fail "the prompt did not show the error"
grep -q '"role": "system"\|"role":"system"' "$WORK/requests" || fail "no system message"
kill $SERVER
cat > "$WORK/cheat.json" <<'JSON'
[{"content": "llm_strlcpy.c\n<<<<<<< SEARCH\n\tstrlcpy(ls_name, KBUILD_MODNAME, sizeof(ls_name));\n=======\n#if 0\n\tstrlcpy(ls_name, KBUILD_MODNAME, sizeof(ls_name));\n#endif\n>>>>>>> REPLACE\n"}]
JSON
serve "$WORK/cheat.json"
port cheat
[ $rc -ne 0 ] || fail "a port whose only fix disables the failing call must not succeed"
# The reviewer runs the integrity gate on each answer: the cheat is fed back, never kept.
py "$WORK/cheat.json" "d['status'] == 'no-progress' and not d['accepted']"
py "$WORK/cheat.json" "all('code-disabled' in a['review']['findings'][0] for a in d['llm']['rounds'][0]['attempts'])"
py "$WORK/cheat.json" "[a['role'] for a in d['llm']['rounds'][0]['attempts']] == ['generator', 'refiner', 'reflection']"
grep -q 'integrity gate rejects' "$WORK/requests" || fail "the refiner was not told of the integrity finding"
grep -q 'Earlier answers to this task failed' "$WORK/requests" || fail "no reflection over the failed answers"
run=$(python3 -c "import json; print(json.load(open('$WORK/cheat.json'))['run'])")
"$AD" explain "$run" > "$WORK/explain.txt" || fail "explain $run"
grep -q 'agent.*rejected by the integrity gate' "$WORK/explain.txt" || fail "explain does not name the agents' rounds: $(cat "$WORK/explain.txt")"
kill $SERVER
# An answer that brings a new error is reviewed and the refiner's second answer ports.
cat > "$WORK/refine.json" <<'JSON'
[{"content": "llm_strlcpy.c\n<<<<<<< SEARCH\n\tstrlcpy(ls_name, KBUILD_MODNAME, sizeof(ls_name));\n=======\n\tstrscpy(ls_name, KBUILD_MODNAME, sizeof(ls_nam));\n>>>>>>> REPLACE\n"},
 {"content": "llm_strlcpy.c\n<<<<<<< SEARCH\n\tstrlcpy(ls_name, KBUILD_MODNAME, sizeof(ls_name));\n=======\n\tstrscpy(ls_name, KBUILD_MODNAME, sizeof(ls_name));\n>>>>>>> REPLACE\n"}]
JSON
serve "$WORK/refine.json"
port refine
[ $rc -eq 0 ] || fail "port with a refined answer: exit $rc"
py "$WORK/refine.json" "d['status'] == 'ported' and d['llm']['calls'] == 2"
py "$WORK/refine.json" "[a['role'] for a in d['llm']['rounds'][0]['attempts']] == ['generator', 'refiner']"
grep -q 'ls_nam' "$WORK/requests" || fail "the refiner did not see the new error"
# bench passes --llm to each case's port; its report names the model and counts what was spent.
C="$WORK/corpus/cases/llm_strlcpy"
mkdir -p "$C/before"
cp "$D/llm_strlcpy.c" "$D/Makefile" "$C/before/"
cat > "$C/metadata.json" <<'JSON'
{"schema_version": 1, "id": "llm_strlcpy", "origin": "in-tree", "split": "dev",
 "from": {"line": "6.1"}, "to": {"line": "6.12"},
 "unit": {"path": "drivers/misc/llm_strlcpy", "dir": "drivers/misc", "files": ["llm_strlcpy.c"]},
 "runtime": {"kind": "none"}, "golden": {"status": "none"}}
JSON
"$AD" bench "$WORK/corpus" --no-from --no-boot --no-store-kb --llm "$URL" --model fake -o "$WORK/bench" --json > "$WORK/bench.json" ||
  fail "bench --llm"
py "$WORK/bench.json" "d['llm']['model'] == 'fake' and d['llm']['calls'] >= 0 and d['cases'] == 1"
kill $SERVER
SERVER=
URL="http://127.0.0.1:1/v1"
port nowhere
py "$WORK/nowhere.json" "d['status'] == 'no-progress' and any('network' in r.get('error', '') for r in d['llm']['rounds'])"
echo PASS
