#!/bin/sh
# corpus mine on a git repository with a kernel layout and real-looking API changes:
# an API change with its driver updates (mined), a merge, a whitespace-only commit, a driver-only
# and a core-only commit, and a treewide commit (listed in the summary, not written).
# Then: resume (nothing redone), --include-treewide, and bad input (one line, exit 2).
# Env: AD = autodriver binary, AD_SRC = repository root.
. "$(dirname "$0")/lib.sh.inc"
need git
need python3
W="$WORK"
R="$W/linux"
g() { git -C "$R" -c user.name="Jane Dev" -c user.email=jane@example.org -c commit.gpgsign=false "$@"; }
put() { mkdir -p "$(dirname "$R/$1")"; cat > "$R/$1"; }

mkdir -p "$R"
g init -q -b master
put include/linux/foo.h <<'C'
#ifndef _LINUX_FOO_H
#define _LINUX_FOO_H
struct device;
int foo_register(struct device *dev);
void foo_unregister(struct device *dev);
#endif
C
put kernel/foo.c <<'C'
#include <linux/foo.h>
int foo_register(struct device *dev) { return 0; }
void foo_unregister(struct device *dev) { }
C
put drivers/net/ethernet/acme/acme_main.c <<'C'
#include <linux/foo.h>
static int acme_probe(struct device *dev)
{
	return foo_register(dev);
}
C
put drivers/net/ethernet/acme/Makefile <<'C'
obj-$(CONFIG_ACME) += acme_main.o
C
put drivers/hwmon/bar.c <<'C'
#include <linux/foo.h>
static int bar_probe(struct device *dev)
{
	return foo_register(dev);
}
C
for i in $(seq 1 60); do
  put "drivers/misc/m$i/m$i.c" <<C
#include <linux/foo.h>
static void m${i}_remove(struct device *dev) { foo_unregister(dev); }
C
done
put Documentation/foo.rst <<'C'
foo
C
g add -A && g commit -q -m "Linux 6.0"
g tag v6.0

# 1. The API change: foo_register() gains a flags argument, drivers follow.
put include/linux/foo.h <<'C'
#ifndef _LINUX_FOO_H
#define _LINUX_FOO_H
struct device;
#define FOO_F_NONE 0
int foo_register(struct device *dev, unsigned int flags);
void foo_unregister(struct device *dev);
#endif
C
sed -i 's/int foo_register(struct device \*dev)/int foo_register(struct device *dev, unsigned int flags)/' "$R/kernel/foo.c"
sed -i 's/foo_register(dev);/foo_register(dev, FOO_F_NONE);/' "$R/drivers/net/ethernet/acme/acme_main.c" "$R/drivers/hwmon/bar.c"
g add -A && g commit -q -F - <<'M'
foo: add a flags argument to foo_register()

Callers need to pass FOO_F_* flags now. Convert all in-tree users.

Fixes: 0123456789ab ("foo: introduce foo_register()")
Link: https://lore.kernel.org/r/20240102-foo-flags-v2-1@example.org
Signed-off-by: Jane Dev <jane@example.org>
Signed-off-by: Maintainer Person <maint@example.org>
M
API=$(g rev-parse HEAD)

# 2. Whitespace only, in core and driver files.
sed -i 's/^int foo_register/int  foo_register/' "$R/include/linux/foo.h"
sed -i 's/^\treturn/        return/' "$R/drivers/hwmon/bar.c"
g add -A && g commit -q -m "foo: whitespace cleanup"
WS=$(g rev-parse HEAD)

# 3. Driver only.
printf '/* acme: comment */\n' >> "$R/drivers/net/ethernet/acme/acme_main.c"
g add -A && g commit -q -m "acme: add a comment"
# 4. Core only.
printf 'void foo_reset(void) { }\n' >> "$R/kernel/foo.c"
g add -A && g commit -q -m "foo: add foo_reset()"
# 5. A side branch merged back: the merge itself is skipped; the branch commit (driver only) is walked.
g checkout -q -b side
printf '/* side */\n' >> "$R/drivers/hwmon/bar.c"
g add -A && g commit -q -m "bar: side change"
g checkout -q master
printf 'doc\n' >> "$R/Documentation/foo.rst"
g add -A && g commit -q -m "docs: foo"
g merge -q --no-ff -m "Merge branch 'side'" side
# 6. Treewide: foo_unregister() renamed in the header and in 60 drivers.
sed -i 's/foo_unregister/foo_remove/' "$R/include/linux/foo.h" "$R/kernel/foo.c"
for i in $(seq 1 60); do sed -i 's/foo_unregister/foo_remove/' "$R/drivers/misc/m$i/m$i.c"; done
g add -A && g commit -q -m "treewide: rename foo_unregister() to foo_remove()"
TW=$(g rev-parse HEAD)
# 7. A binary blob beside a driver change and a header change.
printf '\000\001\002binary' > "$R/drivers/hwmon/bar.fw"
printf '/* v2 */\n' >> "$R/drivers/hwmon/bar.c"
printf '/* foo v2 */\n' >> "$R/include/linux/foo.h"
g add -A && g commit -q -m "bar: firmware"
BIN=$(g rev-parse HEAD)

OUT="$W/out"
"$AD" corpus mine "$R" --range v6.0..master -o "$OUT" --json > "$W/s1.json" 2> "$W/err1"
python3 - "$W/s1.json" "$OUT" "$API" "$WS" "$TW" "$BIN" <<'P'
import json, os, sys
s = json.load(open(sys.argv[1])); out, api, ws, tw, binc = sys.argv[2:7]
k = s["by_kind"]
assert s["schema_version"] == 1, s
assert s["commits_in_range"] == 9 and s["commits_walked"] == 9, s
assert k.get("mined") == 2 and k.get("merge") == 1 and k.get("whitespace_only") == 1, k
assert k.get("treewide") == 1 and k.get("core_only") == 1 and k.get("driver_only") == 2 and k.get("unrelated") == 1, k
assert s["cases_written"] == 2 and s["cases_present"] == 0, s
assert s["case_ids"] == ["git-" + api[:12], "git-" + binc[:12]], s["case_ids"]
assert [t["commit"] for t in s["treewide"]] == [tw], s["treewide"]
assert s["treewide"][0]["driver_files"] == 60 and s["treewide"][0]["core_files"] == 2, s["treewide"]
assert not os.path.exists(os.path.join(out, "cases", "git-" + tw[:12])), "treewide written without --include-treewide"
assert not os.path.exists(os.path.join(out, "cases", "git-" + ws[:12]))
assert json.load(open(os.path.join(out, "mine-summary.json")))["case_ids"] == s["case_ids"]
assert json.load(open(os.path.join(out, "corpus.json")))["origin"] == "mined"

d = os.path.join(out, "cases", "git-" + api[:12])
m = json.load(open(os.path.join(d, "metadata.json")))
assert m["schema_version"] == 1 and m["origin"] == "mined" and m["id"] == "git-" + api[:12], m
assert m["commit"] == api and m["to"]["commit"] == api and len(m["from"]["commit"]) == 40, m
assert m["subsystem"] in ("hwmon", "net/ethernet") and m["subsystems"] == ["hwmon", "net/ethernet"], m
assert m["split"] in ("dev", "test") and m["description"] == m["subject"], m
assert m["size"] == {"c_lines": 10, "files": 2}, m["size"]
assert m["files"]["api_delta"] == "api_delta.patch", m["files"]
assert m["subject"] == "foo: add a flags argument to foo_register()", m
assert m["trailers"]["fixes"] == ['0123456789ab ("foo: introduce foo_register()")'], m["trailers"]
assert m["trailers"]["link"] == ["https://lore.kernel.org/r/20240102-foo-flags-v2-1@example.org"], m["trailers"]
assert len(m["trailers"]["signed_off_by"]) == 2, m["trailers"]
assert sorted(m["core_files"]) == ["include/linux/foo.h", "kernel/foo.c"], m["core_files"]
assert sorted(m["driver_files"]) == ["drivers/hwmon/bar.c", "drivers/net/ethernet/acme/acme_main.c"], m["driver_files"]
assert m["driver_units"] == ["drivers/hwmon", "drivers/net/ethernet/acme"], m["driver_units"]
assert m["treewide"] is False and m["skipped_files"] == [], m
assert m["author_date"][:2] == "20" and m["author"]["email"] == "jane@example.org", m
b = open(os.path.join(d, "before/drivers/net/ethernet/acme/acme_main.c")).read()
a = open(os.path.join(d, "golden/drivers/net/ethernet/acme/acme_main.c")).read()
assert "foo_register(dev);" in b and "foo_register(dev, FOO_F_NONE);" in a, (b, a)
assert os.path.exists(os.path.join(d, "golden/drivers/hwmon/bar.c"))
assert not os.path.exists(os.path.join(d, "before/drivers/net/ethernet/acme/Makefile")), "untouched file copied"
p = open(os.path.join(d, "api_delta.patch")).read()
assert "+int foo_register(struct device *dev, unsigned int flags);" in p and "kernel/foo.c" in p, p
assert "drivers/" not in p, "driver hunks in the core diff"
assert "FOO_F_NONE" in open(os.path.join(d, "driver.patch")).read()
assert json.load(open(os.path.join(d, "diagnostics.json"))) == []
assert open(os.path.join(d, "message.txt")).read().startswith("foo: add a flags argument")
assert m["message"] == open(os.path.join(d, "message.txt")).read() and "Convert all in-tree users" in m["message"]
assert m["source"]["range"] == "v6.0..master" and m["source"]["repository"].rstrip("/").endswith("/linux"), m["source"]
assert oct(os.stat(d).st_mode & 0o777) == "0o755", oct(os.stat(d).st_mode)

d = os.path.join(out, "cases", "git-" + binc[:12])
m = json.load(open(os.path.join(d, "metadata.json")))
assert {"path": "drivers/hwmon/bar.fw", "side": "golden", "reason": "binary"} in m["skipped_files"], m["skipped_files"]
assert not os.path.exists(os.path.join(d, "golden/drivers/hwmon/bar.fw"))
assert not [n for n in os.listdir(os.path.join(out, "cases")) if n.startswith(".")], "temporary directories left"
P

# Resume: nothing redone, same cases.
"$AD" corpus mine "$R" --range v6.0..master -o "$OUT" --json > "$W/s2.json" 2>/dev/null
python3 - "$W/s1.json" "$W/s2.json" <<'P'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert b["cases_written"] == 0 and b["cases_present"] == 2 and b["case_ids"] == a["case_ids"], b
P

# --include-treewide writes the treewide commit, marked as such; threshold is an option.
"$AD" corpus mine "$R" --range v6.0..master -o "$W/tw" --include-treewide --json > "$W/s3.json" 2>/dev/null
python3 - "$W/s3.json" "$W/tw" "$TW" <<'P'
import json, os, sys
s = json.load(open(sys.argv[1])); tw = sys.argv[3]
assert s["cases_written"] == 3, s
m = json.load(open(os.path.join(sys.argv[2], "cases", "git-" + tw[:12], "metadata.json")))
assert m["treewide"] is True and len(m["driver_files"]) == 60 and len(m["driver_units"]) == 60, m["treewide"]
P
"$AD" corpus mine "$R" --range v6.0..master -o "$W/t100" --treewide-threshold 100 --json > "$W/s4.json" 2>/dev/null
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["cases_written"]==3 and s["treewide"]==[], s' "$W/s4.json"

# A range with a single API-change commit, by sha.
"$AD" corpus mine "$R" --range "$API~1..$API" -o "$W/one" --json > "$W/s5.json" 2>/dev/null
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["commits_walked"]==1 and s["cases_written"]==1, s' "$W/s5.json"

# Bad input: one clear line on stderr, exit 2, nothing written.
bad() {
  expect="$1"; shift
  set +e; "$AD" "$@" > "$W/bad.out" 2> "$W/bad.err"; rc=$?; set -e
  [ "$rc" -eq 2 ] || { echo "FAIL: exit $rc for: $*"; cat "$W/bad.err"; exit 1; }
  [ "$(wc -l < "$W/bad.err")" -eq 1 ] || { echo "FAIL: not one line for: $*"; cat "$W/bad.err"; exit 1; }
  grep -q "$expect" "$W/bad.err" || { echo "FAIL: '$expect' not in: $(cat "$W/bad.err")"; exit 1; }
}
mkdir -p "$W/plain"
bad "not a git repository" corpus mine "$W/plain" --range v6.0..master -o "$W/bad1"
bad "does not exist" corpus mine "$W/missing" --range v6.0..master -o "$W/bad2"
bad "unknown revision 'v9.9'" corpus mine "$R" --range v9.9..master -o "$W/bad3"
bad "unknown revision 'nope'" corpus mine "$R" --range v6.0..nope -o "$W/bad4"
bad "A..B" corpus mine "$R" --range master -o "$W/bad5"
bad "A...B" corpus mine "$R" --range v6.0...master -o "$W/bad6"
for d in bad1 bad2 bad3 bad4 bad5 bad6; do [ ! -e "$W/$d" ] || { echo "FAIL: $d written on bad input"; exit 1; }; done
echo '{"schema_version":1,"origin":"in-tree","from":"6.1","to":"6.12"}' > "$W/built.json"
mkdir -p "$W/built" && cp "$W/built.json" "$W/built/corpus.json"
bad "origin" corpus mine "$R" --range v6.0..master -o "$W/built"

echo "PASS corpus_mine"
