#!/usr/bin/env python3
"""The drivers users bring (issue 35 item 1; a benchmark, not a test): real out-of-tree drivers'
own ports, replayed, on the five Debian kernel lines (5.10, 6.1, 6.12, 7.2, 7.3). Two kinds of
case, one table:

  history    the commits in which a driver's maintainers followed a kernel release. A commit that
             adds an `#if ... KERNEL_VERSION(a,b,c)` boundary its file did not have is a port: the
             tree before it (the parent) is the input, the commit's tree the answer, its target the
             first Debian line at or after the newest boundary it added. Mined from the git
             histories (../shared/wild/history/*.bundle, or --bundle), cloned once and walked
             (`git rev-list --no-merges`); both trees exported (`git archive`). Eligible when the
             answer builds on the target and the input does not (`autodriver check`, its kbuild
             default on the driver folder: the shallowest with a dkms.conf, else with a
             Makefile/Kbuild naming obj-m); the input is also built on the line below, which becomes
             `--from` when it builds there.
  collapsed  every `#if LINUX_VERSION_CODE` block of a tree collapsed to its old branch, the
             maintainers' new branch the answer (`autodriver kb cases --check-build`: the tree as
             shipped builds on the target, the collapsed one does not), for the blocks whose
             boundary lies in (line below, target] (5.10: every boundary up to 5.10, the API changes
             older than the oldest kernel source Debian serves). Trees: the wild trees, the newest
             commit of each history, and every `*-dkms` source package of bullseye, bookworm,
             trixie and sid (fetched by autodriver into its cache, as bench/fidelity.py does), at
             most --cap cases per tree and line. Each case is one block collapsed alone, its
             siblings of the same boundary left new (a tree no maintainer had): kept for the
             figures already published, no longer part of `--kind all`.
  boundary   as collapsed, but one case per boundary: every block of the tree with that boundary
             collapsed together (`kb cases --by-boundary`), the maintainers' whole port to that
             kernel; compared on every block.

Each case is ported with `autodriver port INPUT --to T --no-store-kb --budget-s 300` (history
cases also `--from F --api-changes` when their input builds on the line below; collapsed cases
are ported from the target alone, as bench/collapsed_blocks.sh ports them), every compat-KB package named like the case's repository or package left out (a
case never sees its answer), and graded: builds + integrity (the port's own verdict), identical to
the maintainers' change (history: both trees' version blocks evaluated for the target's
LINUX_VERSION_CODE by unifdef, then compared on C tokens without comments; collapsed: `kb
compare`), seconds; an unsolved case is classed by its first remaining diagnostic (gcc's kind, and
apidiff's change kind where --from gave one), with counts per class and split.

Split by repository or package (FNV-1a 64 of "history/<name>", "wild/<name>" or
"dkms/<package>", even dev, odd test: the rule of src/autodriver/corpus/split.hpp), so all of a
repository's cases sit in one split. The test split is run to report, never to debug; a repository
whose cases were debugged on moves to dev (MOVED_TO_DEV, with the reason) and its records follow.

Every stage is resumable (JSONL under <cache>/users-bench/, one run at a time):

  bench/users.py [--kind history|boundary|collapsed] [--stage make|check|port|all] [--split dev|test]
                 [--only SUBSTR] [--sample N --seed S] [--kb-sources dkms|all] [--report]

The compat KB the ports read is the bench's own, built once per --kb-sources set (all: every
*-dkms package of the four suites, the wild trees, and every committed version of the histories'
C files; dkms: the packages alone); each port record names its set.

Needs git, unifdef (apt-get install unifdef) and the kernels (`autodriver kernel fetch LINE`).
"""

import argparse
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity as F  # noqa: E402  (shared: run, log, cache_root, kernel_info, ad_bin, ad_identity, Locked)

K_LINES = ["5.10", "6.1", "6.12", "7.2", "7.3"]
K_SCHEMA = 1
K_COLLAPSED_KINDS = ("boundary", "collapsed")
K_CASE_FILE = {"collapsed": "col_cases", "boundary": "bnd_cases"}  # each collapsed kind's key in paths()
K_ALL_KINDS = ("history", "boundary")  # what --kind all makes and the headline figures count
DEFAULT_WILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "wild")
K_BUILD_TIMEOUT_S = 300
K_PORT_BUDGET_S = 300
K_GENERIC_WORDS = {"linux", "dkms", "compat", "hid", "kernel", "driver", "drivers", "module"}


def work_dir():
    return os.path.join(F.cache_root(), "users-bench")


def hist_dir():
    return os.path.join(work_dir(), "history")


def fnv1a_64(text):
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


# Repositories moved from test to dev because a change was made after reading their cases (rule:
# the test split is never debugged; a repository whose cases were debugged on is dev from then on).
MOVED_TO_DEV = {
    "dkms/evdi-dkms": "prototype-sync for gcc 10's message without the type was written after reading its cases "
                      "(2026-12-06)",
    "dkms/dm-writeboost-dkms": "its remaining errors were read in the same debugging session (2026-12-06)",
    "dkms/rtpengine-kernel-dkms": "its remaining errors (5.6's proc_ops) were read (2026-12-06) and the integrity "
                                  "gate's table rule was extended for that class (2026-12-07)",
}


def split_of(unit):
    if unit in MOVED_TO_DEV:
        return "dev"
    return "dev" if fnv1a_64(unit) % 2 == 0 else "test"


def git(repo, *args, check=True):
    p = subprocess.run(["git", "-C", repo, *args], capture_output=True, timeout=600)
    if check and p.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {repo}: {p.stderr.decode(errors='replace').strip()}")
    return p.stdout.decode("utf-8", "replace")


# ---- versions ------------------------------------------------------------------------------------

K_KV = re.compile(r"KERNEL_VERSION\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
K_COND = re.compile(r"^\s*#\s*(?:if|elif)\b")


def version_code(a, b, c):
    return (a << 16) + (b << 8) + min(c, 255)


def line_versions():
    """{line: (release, version code of its source version)} for the fetched kernel lines."""
    out = {}
    for l in K_LINES:
        k = F.kernel_info(l)
        if not k or not k.get("headers_fetched"):
            F.log(f"users: kernel {l} is not fetched (autodriver kernel fetch {l}); its cases are left out")
            continue
        m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", k.get("version", ""))
        if m:
            out[l] = (k["release"], version_code(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)))
    return out


def target_of(boundary, lines):
    for l in K_LINES:
        if l in lines and lines[l][1] >= boundary:
            return l
    return None


def prev_line(target, lines):
    i = K_LINES.index(target)
    return next((l for l in reversed(K_LINES[:i]) if l in lines), None)


# ---- history: mining -----------------------------------------------------------------------------

def new_boundaries(diff_text):
    """Version codes in `#if`/`#elif` lines a commit added to a file and that file's removed lines
    did not have (a block moved or re-indented is not a port)."""
    added, removed = {}, {}
    path = None
    for l in diff_text.splitlines():
        if l.startswith("+++ "):
            path = l[6:] if l.startswith("+++ b/") else None
            continue
        if l.startswith("--- ") or path is None:
            continue
        if l.startswith("+") and K_COND.match(l[1:]):
            added.setdefault(path, set()).update(version_code(*map(int, m)) for m in K_KV.findall(l))
        elif l.startswith("-") and K_COND.match(l[1:]):
            removed.setdefault(path, set()).update(version_code(*map(int, m)) for m in K_KV.findall(l))
    out = set()
    for p, vs in added.items():
        out |= vs - removed.get(p, set())
    return out


def driver_folder(tree):
    """The folder DKMS or kbuild would build: the shallowest with a dkms.conf, else the shallowest
    whose Makefile or Kbuild names obj-m (relative, "." for the top)."""
    best = None
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        depth = 0 if root == tree else os.path.relpath(root, tree).count(os.sep) + 1
        if "dkms.conf" in files and any(f in files for f in ("Makefile", "Kbuild", "makefile")):
            cand = (0, depth, os.path.relpath(root, tree))
        elif any(f in files and "obj-" in open(os.path.join(root, f), errors="replace").read()
                 for f in ("Makefile", "Kbuild", "makefile")):
            cand = (1, depth, os.path.relpath(root, tree))
        else:
            continue
        if best is None or cand < best:
            best = cand
    return best[2] if best else None


def export_tree(repo, commit, dest):
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    archive = subprocess.Popen(["git", "-C", repo, "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "x", "-C", tmp], stdin=archive.stdout, check=True, timeout=600)
    if archive.wait(timeout=600) != 0:
        raise RuntimeError(f"git archive {commit} failed in {repo}")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)


def clone(bundle):
    name = os.path.basename(bundle)[:-len(".bundle")]
    dest = os.path.join(hist_dir(), "repos", name)
    if not os.path.exists(os.path.join(dest, ".git")):
        tmp = dest + ".partial"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", bundle, tmp], check=True, timeout=1200)
        os.rename(tmp, dest)
    return name, dest


def mine_repo(bundle, lines, known):
    name, repo = clone(bundle)
    unit = f"history/{name}"
    made = []
    stats = {"commits": 0, "ports": 0, "no_target": 0}
    for c in git(repo, "rev-list", "--reverse", "--no-merges", "HEAD").split():
        stats["commits"] += 1
        parents = git(repo, "rev-list", "--parents", "-n", "1", c).split()[1:]
        if not parents:
            continue
        vs = new_boundaries(git(repo, "diff", "-U0", "--no-color", parents[0], c, "--", "*.c", "*.h"))
        if not vs:
            continue
        stats["ports"] += 1
        boundary = max(vs)
        target = target_of(boundary, lines)
        if target is None:
            stats["no_target"] += 1
            continue
        cid = f"{name}-{c[:12]}"
        if cid in known:
            continue
        d = os.path.join(hist_dir(), "cases", cid)
        export_tree(repo, parents[0], os.path.join(d, "before"))
        export_tree(repo, c, os.path.join(d, "golden"))
        folder = driver_folder(os.path.join(d, "golden")) or driver_folder(os.path.join(d, "before"))
        subj, date = git(repo, "log", "-1", "--format=%s%x00%cs", c).rstrip("\n").split("\0")
        b = lambda v: f"{v >> 16}.{(v >> 8) & 255}.{v & 255}"
        made.append({"kind": "case", "source": "history", "schema_version": K_SCHEMA, "id": cid, "repository": name,
                     "unit": unit, "split": split_of(unit), "commit": c, "parent": parents[0], "subject": subj,
                     "date": date, "boundaries": sorted(b(v) for v in vs), "boundary": b(boundary), "target": target,
                     "folder": folder})
    return made, stats


def check_build(tree, line, jobs):
    argv = ["nice", "-n", "10", F.ad_bin(), "check", tree, "--kernel", line, "--no-sparse", "--json", "-j", str(jobs),
            "--build-timeout", str(K_BUILD_TIMEOUT_S)]
    rc, out, secs = F.run(argv, K_BUILD_TIMEOUT_S + 120)
    summary = ""
    try:
        d = json.loads(out[out.index("{"):])
        g = next(iter(d["gates"]["build"]["by_kernel"].values()))
        summary = g.get("summary", "")
    except (ValueError, KeyError, StopIteration):
        summary = F.tail(out, 3)
    return {"ok": rc == 0, "exit": rc, "seconds": round(secs, 1), "summary": summary[:400]}


def check_history_case(c, lines, jobs):
    d = os.path.join(hist_dir(), "cases", c["id"])
    if not c["folder"]:
        return {"eligible": False, "why": "no-driver-folder"}
    golden = check_build(os.path.join(d, "golden", c["folder"]), c["target"], jobs)
    if not golden["ok"]:
        return {"eligible": False, "why": "answer-fails-on-target", "golden": golden}
    before = check_build(os.path.join(d, "before", c["folder"]), c["target"], jobs)
    if before["ok"]:
        return {"eligible": False, "why": "input-builds-on-target", "golden": golden, "before": before}
    rec = {"eligible": True, "golden": golden, "before": before, "from": None}
    f = prev_line(c["target"], lines)
    if f:
        on_from = check_build(os.path.join(d, "before", c["folder"]), f, jobs)
        rec["before_on_from"] = on_from
        rec["from"] = f if on_from["ok"] else None
    return rec


# ---- collapsed blocks ----------------------------------------------------------------------------

def collapsed_units(wild, no_dkms):
    """The trees whose blocks are collapsed: the wild trees, the history heads and (unless
    NO_DKMS) every *-dkms package of the four suites, prepared as bench/fidelity.py prepares them."""
    units = F.wild_units(wild) + F.history_units(wild)
    if not no_dkms:
        units += F.dkms_units()
    for u in units:
        parts = u["id"].split("/")
        u["repo_unit"] = "/".join(parts[:2])  # dkms/<package>/<version> -> dkms/<package>
        u["slug"] = re.sub(r"[^A-Za-z0-9._+-]", "_", u["id"].replace("/", "__"))
    return units


def make_collapsed(u, line, lines, cap, jobs, kind):
    """`kb cases` for one tree and one target line (KIND boundary: --by-boundary); the case
    records (and the tally) it gave."""
    out = os.path.join(work_dir(), kind, u["slug"], line)
    shutil.rmtree(out, ignore_errors=True)
    argv = [F.ad_bin(), "kb", "cases", "--source", u["path"], "--to", line, "--check-build",
            "--max-per-package", str(cap), "--max-package-build-s", str(K_BUILD_TIMEOUT_S), "-o", out]
    if kind == "boundary":
        argv.append("--by-boundary")
    f = prev_line(line, lines)
    argv += ["--from", f] if f else ["--older-than-target"]
    rc, text, secs = F.run(["nice", "-n", "10"] + argv, 6 * 3600)
    try:
        summary = json.load(open(os.path.join(out, "summary.json")))
    except (OSError, ValueError):
        summary = {}
    recs = []
    for cj in sorted(glob.glob(os.path.join(out, "*", "case.json"))):
        c = json.load(open(cj))
        cid = f"{u['slug']}@{line}/{os.path.basename(os.path.dirname(cj))}"
        recs.append({"kind": "case", "source": kind, "schema_version": K_SCHEMA, "id": cid,
                     "repository": u["name"], "unit": u["repo_unit"], "split": split_of(u["repo_unit"]),
                     "target": line, "from": f, "dir": os.path.relpath(os.path.dirname(cj), work_dir()),
                     "package": c.get("package", u["name"]), "build_cmd": c.get("build_cmd", ""),
                     "boundary": c.get("boundary"), "file": c.get("file"),
                     "blocks": len(c.get("blocks") or [None])})
    tally = {"kind": "unit", "id": f"{u['id']}@{line}", "exit": rc, "seconds": round(secs, 1), "cases": len(recs),
             "summary_excluded": summary.get("excluded") if isinstance(summary.get("excluded"), dict) else {},
             "log": F.tail(text, 5) if rc != 0 else ""}
    return recs, tally


# ---- porting -------------------------------------------------------------------------------------

K_KB_SETS = ("dkms", "all")


def kb_path(kb_set):
    return os.path.join(work_dir(), f"compat-kb-{kb_set}.json")


def ensure_kb(kb_set, wild):
    """The compat KB the ports read, built once per set: `dkms` from every *-dkms package of the
    four suites (the figures before 2026-12-07); `all` also from the wild trees (--source) and every
    committed version of the histories' C files (--git), where blocks the maintainers dropped later
    still state old API changes. A case's own sources are left out when it is ported."""
    path = kb_path(kb_set)
    if os.path.exists(path):
        return path
    argv = [F.ad_bin(), "kb", "build", "--dkms", "--suite", "all", "-o", path + ".partial", "--json"]
    if kb_set == "all":
        argv += [x for u in F.wild_units(wild) for x in ("--source", u["path"])]
        argv += [x for b in sorted(glob.glob(os.path.join(wild, "history", "*.bundle"))) for x in ("--git", clone(b)[1])]
    rc, text, secs = F.run(argv, 3600)
    if rc != 0:
        sys.exit(f"users: kb build failed ({rc}): {F.tail(text)}")
    os.rename(path + ".partial", path)
    F.log(f"users: compat KB '{kb_set}' built in {secs:.0f} s: {path}")
    return path


def kb_leave_out(kb_set, *names):
    """Compat-KB sources named like the case's repository or package (its answer may be among
    their blocks)."""
    words = {w for n in names if n for w in re.split(r"[-_.]", n.lower()) if len(w) > 3 and w not in K_GENERIC_WORDS}
    try:
        sources = json.load(open(kb_path(kb_set))).get("sources", [])
    except (OSError, ValueError):
        sources = []
    return sorted({s for s in sources if any(w in s.lower() for w in words)} | {n for n in names if n})


def kb_packages_of(verdict):
    """The compat-KB sources behind the port's accepted compat-kb edits (their descriptions name
    the packages whose maintainers write the new form)."""
    out = set()
    for a in verdict.get("accepted", []):
        if isinstance(a, dict) and a.get("proposer") == "compat-kb":
            m = re.search(r"maintainers of (.*?) write", a.get("description", ""))
            if m:
                out.update(x.strip() for x in m.group(1).split(","))
    return sorted(out)


def source_kind(name, wild):
    """history, wild or dkms: where a compat-KB source came from."""
    if os.path.exists(os.path.join(wild, "history", name + ".bundle")):
        return "history"
    return "wild" if os.path.exists(os.path.join(wild, name + ".tar.gz")) else "dkms"


def tokens_for_target(folder, code):
    """{relative path: C tokens} of every .c/.h under FOLDER, its version blocks evaluated for CODE."""
    out = {}
    for root, _, files in os.walk(folder):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            p = os.path.join(root, f)
            text = open(p, errors="replace").read()
            text = "\n".join(K_KV.sub(lambda m: str(version_code(*map(int, m.groups()))), l) if K_COND.match(l) else l
                             for l in text.splitlines())
            r = subprocess.run(["unifdef", "-k", f"-DLINUX_VERSION_CODE={code}"], input=text.encode(), capture_output=True,
                               timeout=60)
            text = r.stdout.decode("utf-8", "replace") if r.returncode in (0, 1) else text
            text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
            text = re.sub(r"//[^\n]*", " ", text)
            out[os.path.relpath(p, folder)] = re.findall(r"\w+|[^\s\w]", text)
    return out


def first_class(verdict):
    """The class of the first unsolved diagnostic: gcc's kind (from the last build step), and
    apidiff's change kind where --api-changes named one."""
    errs = []
    for st in verdict.get("steps") or []:
        if isinstance(st, dict) and isinstance(st.get("errors"), list):
            errs = st["errors"]
    if not errs:
        return verdict.get("status") or "unknown"
    first = errs[0] if isinstance(errs[0], dict) else {}
    kind = first.get("kind", "unknown")
    syms = set(first.get("symbols") or [])
    for ch in verdict.get("changes") or []:
        if isinstance(ch, dict) and syms & set(ch.get("symbols") or [ch.get("symbol")]):
            return f"{kind}/{ch.get('change_type') or ch.get('kind')}"
    return kind


def port_case(c, chk, lines, jobs, kb_set):
    out = os.path.join(work_dir(), "runs", c["id"].replace("/", "__"))
    shutil.rmtree(out, ignore_errors=True)
    if c["source"] == "history":
        d = os.path.join(hist_dir(), "cases", c["id"])
        tree, frm, leave = os.path.join(d, "before", c["folder"]), chk.get("from"), kb_leave_out(kb_set, c["repository"])
        build_cmd = ""
    else:
        d = os.path.join(work_dir(), c["dir"])
        # Target only, as bench/collapsed_blocks.sh ports: the tree as shipped need not build on
        # the line below (the newest trees drop old kernels), and `port --from` wants it to.
        tree, frm, leave = os.path.join(d, "tree"), None, kb_leave_out(kb_set, c["repository"], c.get("package"))
        build_cmd = c.get("build_cmd") or ""
    argv = ["nice", "-n", "10", F.ad_bin(), "port", tree, "--to", c["target"], "-o", out, "--json", "--no-store-kb",
            "--budget-s", str(K_PORT_BUDGET_S), "-j", str(jobs), "--kb", kb_path(kb_set)]
    if frm:
        argv += ["--from", frm, "--api-changes"]
    if build_cmd:
        argv += ["--build-cmd", build_cmd]
    for p in leave:
        argv += ["--kb-leave-out", p]
    rc, text, secs = F.run(argv, K_PORT_BUDGET_S + 300)
    try:
        v = json.loads(text[text.index("{"):])
    except ValueError:
        v = {"status": "tool-error", "ok": False}
    ok = bool(v.get("ok")) and rc == 0
    identical = False
    if ok and os.path.isdir(os.path.join(out, "tree")):
        if c["source"] == "history":
            code = lines[c["target"]][1]
            identical = tokens_for_target(os.path.join(out, "tree"), code) == tokens_for_target(
                os.path.join(d, "golden", c["folder"]), code)
        else:
            identical = F.run([F.ad_bin(), "kb", "compare", d, os.path.join(out, "tree")], 120)[0] == 0
    return {"status": v.get("status"), "ok": ok, "identical": identical, "seconds": round(secs, 1),
            "class": None if ok else first_class(v),
            "accepted": [a.get("proposer", "") + ": " + a.get("title", "") for a in v.get("accepted", []) if isinstance(a, dict)][:8],
            "kb_packages": kb_packages_of(v),
            "argv": " ".join(argv[3:]).replace(F.cache_root(), "<cache>")}


# ---- results -------------------------------------------------------------------------------------

def load(path, kind, keep=None):
    """{id: the newest record of KIND} (among those KEEP accepts)."""
    out = {}
    if os.path.exists(path):
        for l in open(path):
            try:
                r = json.loads(l)
            except ValueError:
                continue  # a line cut by a crash
            if r.get("kind") == kind and (keep is None or keep(r)):
                if r.get("unit"):
                    r["split"] = split_of(r["unit"])  # a repository moved to dev since the record was made
                out[r["id"]] = r
    return out


def append(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())


def paths():
    return {"hist_cases": os.path.join(hist_dir(), "cases.jsonl"), "hist_checks": os.path.join(hist_dir(), "checks.jsonl"),
            "col_cases": os.path.join(work_dir(), "collapsed.jsonl"), "bnd_cases": os.path.join(work_dir(), "boundary.jsonl"),
            "ports": os.path.join(work_dir(), "ports.jsonl")}


def all_cases():
    p = paths()
    cases = load(p["hist_cases"], "case")
    for c in cases.values():
        c.setdefault("source", "history")
    for key in K_CASE_FILE.values():
        cases.update(load(p[key], "case"))
    return cases


def eligible(c, checks):
    return c["source"] in K_COLLAPSED_KINDS or bool(checks.get(c["id"], {}).get("eligible"))


def port_filter(binary, kb_set):
    """Ports of one binary (identity prefix) and one KB set; a record without kb_set read the
    DKMS KB (before the sets existed)."""
    return lambda r: ((not binary or r.get("autodriver_binary", "").startswith(binary))
                      and (not kb_set or r.get("kb_set", "dkms") == kb_set))


def report(wild, binary=None, kb_set=None):
    p = paths()
    cases = all_cases()
    checks = load(p["hist_checks"], "check")
    units = {kind: load(p[key], "unit") for kind, key in K_CASE_FILE.items()}
    ports = load(p["ports"], "port", port_filter(binary, kb_set))
    print(f"# The drivers users bring ({len(cases)} cases)" + (f", compat KB '{kb_set}'" if kb_set else "") + "\n")
    print("| kind | target | split | cases | ported | builds + integrity | identical | median s |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("history", "boundary", "collapsed"):
        for line in K_LINES:
            for split in ("dev", "test"):
                el = [i for i, c in cases.items() if c["source"] == kind and c["target"] == line and c["split"] == split
                      and eligible(c, checks)]
                pr = [ports[i] for i in el if i in ports]
                if not el:
                    continue
                secs = sorted(x["seconds"] for x in pr)
                med = f"{secs[len(secs) // 2]:.1f}" if secs else "-"
                print(f"| {kind} | {line} | {split} | {len(el)} | {len(pr)} | {sum(x['ok'] for x in pr)} | "
                      f"{sum(x['identical'] for x in pr)} | {med} |")
    for kinds in (K_ALL_KINDS, ("collapsed",)):
        for split in ("dev", "test"):
            pr = [ports[i] for i, c in cases.items() if c["split"] == split and c["source"] in kinds and i in ports]
            if pr:
                print(f"\n**{split}, {' + '.join(kinds)}**: {sum(x['ok'] for x in pr)}/{len(pr)} build + integrity, "
                      f"{sum(x['identical'] for x in pr)}/{len(pr)} identical")
    per = {}
    for c in cases.values():
        if c["source"] == "history":
            per[(c["target"], c["split"])] = per.get((c["target"], c["split"]), 0) + 1
    print("\nHistory: mined cases per target line: " + ", ".join(
        f"{l} {per.get((l, 'dev'), 0)} dev / {per.get((l, 'test'), 0)} test" for l in K_LINES))
    why = {}
    for ch in checks.values():
        if not ch.get("eligible"):
            why[ch.get("why")] = why.get(ch.get("why"), 0) + 1
    print(f"History: {sum(1 for c in checks.values() if c.get('eligible'))} of {len(checks)} checked are eligible; "
          "not eligible: " + (", ".join(f"{k} {v}" for k, v in sorted(why.items())) or "none"))
    for kind, us in units.items():
        ex = {}
        for u in us.values():
            for k, v in (u.get("summary_excluded") or {}).items():
                ex[k] = ex.get(k, 0) + v
        print(f"{kind.capitalize()}: {len(us)} (tree, line) pairs made; selections not made cases: "
              + (", ".join(f"{k} {v}" for k, v in sorted(ex.items())) or "none"))
    for split in ("dev", "test"):
        by = {}
        for i, x in ports.items():
            if x["ok"] and cases.get(i, {}).get("split") == split and x.get("kb_packages"):
                for k in {source_kind(n, wild) for n in x["kb_packages"]}:
                    by[k] = by.get(k, 0) + 1
        if by:
            print(f"\n{split}: solved cases with a compat-kb edit, by where its rule was learned: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    for kinds in (K_ALL_KINDS, ("collapsed",)):
        classes = {}
        for i, x in ports.items():
            c = cases.get(i, {})
            if not x["ok"] and c.get("source") in kinds:
                key = (c.get("split", "?"), x.get("class") or "unknown")
                classes[key] = classes.get(key, 0) + 1
        if classes:
            print(f"\n| failure class (first unsolved diagnostic), {' + '.join(kinds)} | dev | test |")
            print("|---|---|---|")
            for cl in sorted({k[1] for k in classes}, key=lambda x: -sum(v for k, v in classes.items() if k[1] == x)):
                print(f"| {cl} | {classes.get(('dev', cl), 0)} | {classes.get(('test', cl), 0)} |")


# ---- main ----------------------------------------------------------------------------------------

def make_stage(a, lines, cases, port_now):
    """Makes the cases; with PORT_NOW (stage all) each (tree, line) pair's collapsed cases are
    ported as soon as they exist, so an interrupted run has results, not only cases."""
    p = paths()
    if a.kind in ("history", "all"):
        bundles = a.bundle or sorted(glob.glob(os.path.join(a.wild, "history", "*.bundle")))
        for b in bundles:
            if a.only and not any(s in os.path.basename(b) for s in a.only):
                continue
            made, stats = mine_repo(b, lines, cases)
            for c in made:
                append(p["hist_cases"], c)
                cases[c["id"]] = c
            F.log(f"users: {os.path.basename(b)}: {stats['commits']} commits, {stats['ports']} add a version "
                  f"boundary ({stats['no_target']} newer than every fetched line), {len(made)} new cases")
    kinds = [k for k in K_COLLAPSED_KINDS if a.kind == k or (a.kind == "all" and k in K_ALL_KINDS)]
    chosen = None
    for kind in kinds:
        units = [u for u in collapsed_units(a.wild, a.no_dkms) if not a.only or any(s in u["id"] for s in a.only)]
        units = [u for u in units if not a.split or split_of(u["repo_unit"]) == a.split]
        pairs = [(u, l) for u in units for l in K_LINES if l in lines and (not a.line or l in a.line)]
        if a.sample is not None:
            # Kept in the seeded random order: a run stopped early (and resumed later) has made a
            # prefix of that order, itself a seeded random sample, never the first trees by name.
            pairs = random.Random(a.seed).sample(pairs, min(a.sample, len(pairs)))
            F.log(f"users: {kind}: a sample of {len(pairs)} (tree, line) pairs in seeded random order (seed {a.seed})")
        key = K_CASE_FILE[kind]
        done = load(p[key], "unit")
        chosen = (chosen or set()) | {f"{u['slug']}@{l}/" for u, l in pairs}
        for i, (u, l) in enumerate(pairs, 1):
            if f"{u['id']}@{l}" in done:
                continue
            recs, tally = make_collapsed(u, l, lines, a.cap, a.jobs, kind)
            for r in recs:
                append(p[key], r)
                cases[r["id"]] = r
            append(p[key], tally)
            F.log(f"[{i}/{len(pairs)}] {kind}: {u['id']} on {l}: {tally['cases']} case(s) ({tally['seconds']} s)")
            if port_now:
                for r in recs:
                    port_now(r, f"[{i}/{len(pairs)}]")
    return chosen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["history", "boundary", "collapsed", "all"], default="all",
                    help="all: history and boundary (collapsed, one block per case, only when named)")
    ap.add_argument("--stage", choices=["make", "check", "port", "all"], default="all",
                    help="make the cases (history: mine; collapsed: kb cases), check history cases' eligibility, port")
    ap.add_argument("--wild", default=DEFAULT_WILD, help="folder with trees.tsv, *.tar.gz and history/*.bundle")
    ap.add_argument("--bundle", action="append", default=[], help="a git bundle or repository to mine (repeatable; default: WILD/history/*.bundle)")
    ap.add_argument("--no-dkms", action="store_true", help="collapsed: leave out Debian's *-dkms packages")
    ap.add_argument("--cap", type=int, default=6, help="collapsed: at most N cases per tree and line (default 6)")
    ap.add_argument("--only", action="append", default=[], help="only trees or repositories whose id contains SUBSTR (repeatable)")
    ap.add_argument("--case", action="append", default=[], help="only this case id (repeatable)")
    ap.add_argument("--split", choices=["dev", "test"], help="only this split")
    ap.add_argument("--line", action="append", default=[], choices=K_LINES,
                    help="only cases whose target is this kernel line (repeatable; default: every fetched line)")
    ap.add_argument("--sample", type=int, help="a seeded random sample of N (tree, line) pairs to make, in that random order (N >= all: every pair, shuffled), and of N cases to check and port")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="make -j of each build")
    ap.add_argument("--rerun", action="store_true", help="port the selected cases again unless this autodriver binary "
                    "already ported them (the newest result counts; a stopped rerun resumes)")
    ap.add_argument("--report", action="store_true", help="print the markdown report and exit")
    ap.add_argument("--binary", help="with --report: only the ports of the autodriver binary whose identity starts so")
    ap.add_argument("--kb-sources", choices=K_KB_SETS, default="all",
                    help="the compat KB ports read: dkms (every *-dkms package of the four suites) or all (also the "
                    "wild trees and every committed version of the histories); built once into the bench's folder. "
                    "With --report: only ports with that KB (default there: every port)")
    a = ap.parse_args()
    if a.report:
        report(a.wild, a.binary, a.kb_sources if "--kb-sources" in sys.argv else None)
        return 0
    for tool in ("git", "tar", "unifdef"):
        if not shutil.which(tool):
            sys.exit(f"users: {tool} is not installed (apt-get install git tar unifdef)")
    os.makedirs(hist_dir(), exist_ok=True)
    os.nice(5)
    with F.Locked(os.path.join(work_dir(), "run.lock"), wait=False):
        lines = line_versions()
        p = paths()
        cases = all_cases()
        checks = load(p["hist_checks"], "check")
        binary = F.ad_identity()
        ports = load(p["ports"], "port", port_filter(None, a.kb_sources))
        ensure_kb(a.kb_sources, a.wild)
        selection = f"sample of {a.sample} (tree, line) pairs (seed {a.seed})" if a.sample is not None else "all cases"

        def port_one(c, where):
            rec = dict(port_case(c, checks.get(c["id"], {}), lines, a.jobs, a.kb_sources), kind="port", id=c["id"],
                       autodriver_binary=binary, kb_set=a.kb_sources, selection=selection, date=time.strftime("%Y-%m-%d %H:%M"))
            append(p["ports"], rec)
            ports[c["id"]] = rec
            F.log(f"{where} {c['id']} -> {c['target']}: {rec['status']}"
                  f"{', identical' if rec['identical'] else ''} ({rec['seconds']} s)"
                  + ("" if rec["ok"] else f" [{rec['class']}]"))

        if a.stage in ("make", "all"):
            chosen = make_stage(a, lines, cases, port_one if a.stage == "all" else None)
        else:
            chosen = None
        todo = [c for c in cases.values() if ((a.kind == "all" and c["source"] in K_ALL_KINDS) or c["source"] == a.kind)
                and (not a.only or any(s in c["unit"] for s in a.only)) and (not a.split or c["split"] == a.split)
                and (not a.case or c["id"] in a.case) and (not a.line or c["target"] in a.line)]
        if chosen is not None and a.sample is not None:
            # The collapsed cases of the sampled (tree, line) pairs; history cases sampled below.
            todo = [c for c in todo if c["source"] not in K_COLLAPSED_KINDS or any(c["id"].startswith(x) for x in chosen)]
        # Newest target lines first (all run; the order only decides what an interrupted run has).
        todo.sort(key=lambda c: (-K_LINES.index(c["target"]), c["source"], c.get("date", ""), c["id"]))
        selection = f"{len(todo)} cases"
        hist = [c for c in todo if c["source"] == "history"]
        if a.sample is not None and a.sample < len(hist):
            keep = {c["id"] for c in random.Random(a.seed).sample(hist, a.sample)}
            todo = [c for c in todo if c["source"] != "history" or c["id"] in keep]
            selection = f"sample of {a.sample} of the history cases (seed {a.seed}); {selection}"
        for i, c in enumerate(todo, 1):
            if c["target"] not in lines:
                continue
            if a.stage in ("check", "all") and c["source"] == "history" and c["id"] not in checks:
                rec = dict(check_history_case(c, lines, a.jobs), kind="check", id=c["id"], autodriver_binary=binary)
                append(p["hist_checks"], rec)
                checks[c["id"]] = rec
                F.log(f"[{i}/{len(todo)}] {c['id']} -> {c['target']}: " + ("eligible" if rec["eligible"] else rec["why"]))
            # --rerun ports again what another binary ported: a stopped rerun resumes.
            done = ports.get(c["id"], {}).get("autodriver_binary") == binary if a.rerun else c["id"] in ports
            if a.stage in ("port", "all") and eligible(c, checks) and not done:
                port_one(c, f"[{i}/{len(todo)}]")
    return 0


if __name__ == "__main__":
    F.signal.signal(F.signal.SIGINT, F.interrupt)
    F.signal.signal(F.signal.SIGTERM, F.interrupt)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        F.log("users: interrupted; every finished step is in the results")
        sys.exit(130)
