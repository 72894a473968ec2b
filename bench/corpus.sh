#!/bin/sh
# DriveBench scan benchmark (not a test: a full 6.1 -> 6.12 scan is ~3,750 units and hours on
# 2 cores). Usage: [FROM=6.1 TO=6.12] bench/corpus.sh OUT_DIR [PREFIX ...]   (no prefix: the whole
# tree + DKMS; FROM/TO any kernel lines, e.g. FROM=6.12 TO=7.3)
# Resumable: rerun with the same OUT_DIR to continue. Prints the summary JSON (units decided,
# cases, runtime-testable, units/minute of this run) and keeps it in OUT_DIR/summary.json.
set -eu
AD=${AD:-autodriver}
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [PREFIX ...]" >&2; exit 2; }
out=$1; shift
set -- "$AD" corpus build --from "${FROM:-6.1}" --to "${TO:-6.12}" -o "$out" --jobs "${JOBS:-2}" $(for p in "$@"; do printf -- '--only %s ' "$p"; done) --json
"$@" > "$out.summary.json"
python3 - "$out.summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); r = d["this_run"]
print(f"candidates {r['candidates']}  decided this run {r['decided']}  in {r['seconds']/60:.1f} min "
      f"= {r['units_per_minute']:.1f} units/min (--jobs {r['jobs']})")
print(f"units decided {d['units_decided']}  cases {d['cases']} (DKMS {d['dkms_cases']})  "
      f"runtime-testable {d['runtime_testable']}  outcomes {d['outcomes']}")
PY
