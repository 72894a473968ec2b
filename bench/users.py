#!/usr/bin/env python3
"""History-port benchmark (issue 35 item 1, real ports; a benchmark, not a test): the commits in
which a driver's maintainers followed a kernel release, replayed.

A commit that adds an `#if ... KERNEL_VERSION(a,b,c)` boundary the file did not have before is a
port by the maintainers. Its case: the tree before it (the commit's parent) is the input, the
commit's tree the answer, and its target the first Debian kernel line (5.10, 6.1, 6.12, 7.2, 7.3)
at or after the newest boundary it added. Stages, each resumable (one JSONL line per case):

  mine   every history bundle (../shared/wild/history/*.bundle, or --bundle) cloned once into the
         work folder and walked (`git rev-list --no-merges`); each case's two trees exported
         (`git archive`) into WORK/cases/<id>/{before,golden}; WORK/cases.jsonl lists them with
         their boundaries, target, the driver folder (the shallowest with a dkms.conf, else with a
         Makefile/Kbuild naming obj-m) and the split.
  check  eligibility, by `autodriver check --kernel T` (its kbuild default on the driver folder):
         the answer builds on the target and the input does not. The input is also built on the
         line below the target, which becomes `--from` when it builds there.
  port   `autodriver port before/FOLDER --to T [--from F --api-changes] --no-store-kb
         --budget-s 300`, every compat-KB package named like the repository left out (a case
         never sees its answer). Graded: builds + integrity (the port's own verdict), identical
         to the maintainers' change (both trees' `#if` blocks evaluated for the target's
         LINUX_VERSION_CODE by unifdef, then compared on C tokens, comments and whitespace
         dropped), seconds; an unsolved case is classed by its first remaining diagnostic
         (gcc's kind, and apidiff's change kind where --from gave one).

Split by repository (FNV-1a 64 of "history/<name>", even dev, odd test: the rule of
src/autodriver/corpus/split.hpp), so all of a repository's cases sit in one split. The test
split is run to report, never to debug.

  bench/history_ports.py [--stage mine|check|port|all] [--only NAME] [--sample N --seed S] [--report]

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
DEFAULT_WILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "wild")
K_BUILD_TIMEOUT_S = 300
K_PORT_BUDGET_S = 300
K_GENERIC_WORDS = {"linux", "dkms", "compat", "hid", "kernel", "driver", "drivers", "module"}


def work_dir():
    return os.path.join(F.cache_root(), "history-ports")


def fnv1a_64(text):
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def split_of(unit):
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
            F.log(f"history-ports: kernel {l} is not fetched (autodriver kernel fetch {l}); its cases are left out")
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


# ---- mining --------------------------------------------------------------------------------------

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
        depth = os.path.relpath(root, tree).count(os.sep) + (0 if root == tree else 1)
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
    dest = os.path.join(work_dir(), "repos", name)
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
        d = os.path.join(work_dir(), "cases", cid)
        export_tree(repo, parents[0], os.path.join(d, "before"))
        export_tree(repo, c, os.path.join(d, "golden"))
        folder = driver_folder(os.path.join(d, "golden")) or driver_folder(os.path.join(d, "before"))
        subj, date = git(repo, "log", "-1", "--format=%s%x00%cs", c).rstrip("\n").split("\0")
        b = lambda v: f"{v >> 16}.{(v >> 8) & 255}.{v & 255}"
        made.append({"kind": "case", "schema_version": K_SCHEMA, "id": cid, "repository": name, "unit": unit,
                     "split": split_of(unit), "commit": c, "parent": parents[0], "subject": subj, "date": date,
                     "boundaries": sorted(b(v) for v in vs), "boundary": b(boundary), "target": target,
                     "folder": folder})
    return made, stats


# ---- checking and porting ------------------------------------------------------------------------

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


def prev_line(target, lines):
    i = K_LINES.index(target)
    return next((l for l in reversed(K_LINES[:i]) if l in lines), None)


def check_case(c, lines, jobs):
    d = os.path.join(work_dir(), "cases", c["id"])
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


def kb_leave_out(repository):
    """Compat-KB packages named like the repository (its answer may be among their blocks)."""
    words = [w for w in re.split(r"[-_.]", repository.lower()) if len(w) > 3 and w not in K_GENERIC_WORDS]
    try:
        kb = json.load(open(os.path.join(F.cache_root(), "kb", "compat-kb.json")))
        sources = kb.get("sources", [])
    except (OSError, ValueError):
        sources = []
    return sorted(s for s in sources if any(w in s.lower() for w in words))


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
    """The class of the first unsolved diagnostic: gcc's kind, and apidiff's change kind if known."""
    rem = verdict.get("remaining") or []
    if not rem:
        return verdict.get("status") or "unknown"
    r = rem[0]
    kind = r.get("kind", "unknown") if isinstance(r, dict) else "unknown"
    change = None
    syms = set(r.get("symbols") or []) if isinstance(r, dict) else set()
    for ch in verdict.get("changes") or []:
        if isinstance(ch, dict) and syms & set(ch.get("symbols") or [ch.get("symbol")]):
            change = ch.get("change_type") or ch.get("kind")
            break
    return f"{kind}/{change or 'unknown'}"


def port_case(c, chk, lines, jobs):
    d = os.path.join(work_dir(), "cases", c["id"])
    out = os.path.join(work_dir(), "runs", c["id"])
    shutil.rmtree(out, ignore_errors=True)
    argv = ["nice", "-n", "10", F.ad_bin(), "port", os.path.join(d, "before", c["folder"]), "--to", c["target"], "-o", out,
            "--json", "--no-store-kb", "--budget-s", str(K_PORT_BUDGET_S), "-j", str(jobs)]
    if chk.get("from"):
        argv += ["--from", chk["from"], "--api-changes"]
    for p in kb_leave_out(c["repository"]):
        argv += ["--kb-leave-out", p]
    rc, text, secs = F.run(argv, K_PORT_BUDGET_S + 300)
    try:
        v = json.loads(text[text.index("{"):])
    except ValueError:
        v = {"status": "tool-error", "ok": False}
    ok = bool(v.get("ok")) and rc == 0
    identical = False
    if ok and os.path.isdir(os.path.join(out, "tree")):
        code = lines[c["target"]][1]
        identical = tokens_for_target(os.path.join(out, "tree"), code) == tokens_for_target(
            os.path.join(d, "golden", c["folder"]), code)
    return {"status": v.get("status"), "ok": ok, "identical": identical, "seconds": round(secs, 1),
            "class": None if ok else first_class(v),
            "accepted": [a.get("proposer", "") + ": " + a.get("title", "") for a in v.get("accepted", []) if isinstance(a, dict)][:8],
            "argv": " ".join(argv[3:]).replace(F.cache_root(), "<cache>")}


# ---- results -------------------------------------------------------------------------------------

def load(path, kind):
    out = {}
    if os.path.exists(path):
        for l in open(path):
            try:
                r = json.loads(l)
            except ValueError:
                continue  # a line cut by a crash
            if r.get("kind") == kind:
                out[r["id"]] = r
    return out


def append(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())


def report(binary=None):
    cases = load(os.path.join(work_dir(), "cases.jsonl"), "case")
    checks = load(os.path.join(work_dir(), "checks.jsonl"), "check")
    ports = {k: v for k, v in load(os.path.join(work_dir(), "ports.jsonl"), "port").items()
             if not binary or v.get("autodriver_binary", "").startswith(binary)}
    print(f"# History ports ({len(cases)} mined cases)\n")
    print("| repository | split | mined | eligible | ported | builds + integrity | identical | median s |")
    print("|---|---|---|---|---|---|---|---|")
    for repo in sorted({c["repository"] for c in cases.values()}):
        ids = [i for i, c in cases.items() if c["repository"] == repo]
        el = [i for i in ids if checks.get(i, {}).get("eligible")]
        pr = [ports[i] for i in el if i in ports]
        secs = sorted(p["seconds"] for p in pr)
        med = f"{secs[len(secs) // 2]:.1f}" if secs else "-"
        print(f"| {repo} | {cases[ids[0]]['split']} | {len(ids)} | {len(el)} of {sum(i in checks for i in ids)} checked | "
              f"{len(pr)} | {sum(p['ok'] for p in pr)} | {sum(p['identical'] for p in pr)} | {med} |")
    per = {}
    for c in cases.values():
        per[(c["target"], c["split"])] = per.get((c["target"], c["split"]), 0) + 1
    print("\nMined cases per target line: " + ", ".join(
        f"{l} {per.get((l, 'dev'), 0)} dev / {per.get((l, 'test'), 0)} test" for l in K_LINES))
    print("\n| target | split | eligible | ported | builds + integrity | identical |")
    print("|---|---|---|---|---|---|")
    for line in K_LINES:
        for split in ("dev", "test"):
            el = [i for i, c in cases.items() if c["target"] == line and c["split"] == split and checks.get(i, {}).get("eligible")]
            pr = [ports[i] for i in el if i in ports]
            if el:
                print(f"| {line} | {split} | {len(el)} | {len(pr)} | {sum(p['ok'] for p in pr)} | {sum(p['identical'] for p in pr)} |")
    why = {}
    for i, ch in checks.items():
        if not ch.get("eligible"):
            why[ch.get("why")] = why.get(ch.get("why"), 0) + 1
    print("\nNot eligible: " + (", ".join(f"{k} {v}" for k, v in sorted(why.items())) or "none"))
    classes = {}
    for i, p in ports.items():
        if not p["ok"]:
            key = (cases.get(i, {}).get("split", "?"), p.get("class") or "unknown")
            classes[key] = classes.get(key, 0) + 1
    if classes:
        print("\n| failure class (first unsolved diagnostic) | dev | test |")
        print("|---|---|---|")
        for cl in sorted({k[1] for k in classes}, key=lambda x: -sum(v for k, v in classes.items() if k[1] == x)):
            print(f"| {cl} | {classes.get(('dev', cl), 0)} | {classes.get(('test', cl), 0)} |")


# ---- main ----------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", choices=["mine", "check", "port", "all"], default="all")
    ap.add_argument("--wild", default=DEFAULT_WILD, help="folder with history/*.bundle")
    ap.add_argument("--bundle", action="append", default=[], help="a git bundle or repository to mine (repeatable; default: WILD/history/*.bundle)")
    ap.add_argument("--only", action="append", default=[], help="only repositories whose name contains SUBSTR (repeatable)")
    ap.add_argument("--case", action="append", default=[], help="only this case id (repeatable)")
    ap.add_argument("--split", choices=["dev", "test"], help="only this split's cases")
    ap.add_argument("--sample", type=int, help="check and port a seeded random sample of N cases (named in the results)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="make -j of each build")
    ap.add_argument("--report", action="store_true", help="print the markdown report and exit")
    ap.add_argument("--binary", help="with --report: only the ports of the autodriver binary whose identity starts so")
    a = ap.parse_args()
    if a.report:
        report(a.binary)
        return 0
    for tool in ("git", "tar", "unifdef"):
        if not shutil.which(tool):
            sys.exit(f"history-ports: {tool} is not installed (apt-get install git tar unifdef)")
    os.makedirs(work_dir(), exist_ok=True)
    os.nice(5)
    with F.Locked(os.path.join(work_dir(), "run.lock"), wait=False):
        lines = line_versions()
        cases_path = os.path.join(work_dir(), "cases.jsonl")
        cases = load(cases_path, "case")
        if a.stage in ("mine", "all"):
            bundles = a.bundle or sorted(glob.glob(os.path.join(a.wild, "history", "*.bundle")))
            for b in bundles:
                if a.only and not any(s in os.path.basename(b) for s in a.only):
                    continue
                made, stats = mine_repo(b, lines, cases)
                for c in made:
                    append(cases_path, c)
                    cases[c["id"]] = c
                F.log(f"history-ports: {os.path.basename(b)}: {stats['commits']} commits, {stats['ports']} add a version "
                      f"boundary ({stats['no_target']} newer than every fetched line), {len(made)} new cases")
        todo = [c for c in cases.values() if (not a.only or any(s in c["repository"] for s in a.only))
                and (not a.split or c["split"] == a.split) and (not a.case or c["id"] in a.case)]
        # Newest target lines first (all run; the order only decides what an interrupted run has).
        todo.sort(key=lambda c: (-K_LINES.index(c["target"]), c["date"], c["id"]))
        selection = f"{len(todo)} cases"
        if a.sample is not None and a.sample < len(todo):
            todo = sorted(random.Random(a.seed).sample(todo, a.sample), key=lambda c: c["id"])
            selection = f"sample of {a.sample} of {selection} (seed {a.seed})"
        checks_path = os.path.join(work_dir(), "checks.jsonl")
        ports_path = os.path.join(work_dir(), "ports.jsonl")
        checks = load(checks_path, "check")
        ports = load(ports_path, "port")
        binary = F.ad_identity()
        for i, c in enumerate(todo, 1):
            if a.stage in ("check", "all") and c["id"] not in checks and c["target"] in lines:
                rec = dict(check_case(c, lines, a.jobs), kind="check", id=c["id"], autodriver_binary=binary)
                append(checks_path, rec)
                checks[c["id"]] = rec
                F.log(f"[{i}/{len(todo)}] {c['id']} -> {c['target']}: "
                      + ("eligible" if rec["eligible"] else rec["why"]))
            chk = checks.get(c["id"])
            if a.stage in ("port", "all") and chk and chk.get("eligible") and c["id"] not in ports:
                rec = dict(port_case(c, chk, lines, a.jobs), kind="port", id=c["id"], autodriver_binary=binary,
                           selection=selection, date=time.strftime("%Y-%m-%d %H:%M"))
                append(ports_path, rec)
                ports[c["id"]] = rec
                F.log(f"[{i}/{len(todo)}] {c['id']} -> {c['target']}: {rec['status']}"
                      f"{', identical' if rec['identical'] else ''} ({rec['seconds']} s)"
                      + ("" if rec["ok"] else f" [{rec['class']}]"))
    return 0


if __name__ == "__main__":
    F.signal.signal(F.signal.SIGINT, F.interrupt)
    F.signal.signal(F.signal.SIGTERM, F.interrupt)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        F.log("history-ports: interrupted; every finished case is in the results")
        sys.exit(130)
