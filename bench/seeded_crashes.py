#!/usr/bin/env python3
"""Seeded-bug crash-repair benchmark (issue 18 item 5; a benchmark, not a test).

Real drivers of the kernel's own tree that bind to a device QEMU emulates are copied out, and a
deterministic mutator injects one bug per mutant at sites it finds itself (nothing hand-placed):

  use-before-set  in the function a driver structure names as `.probe`: the first statement that
                  dereferences a pointer (`p->...`) after `p = f(...)` moves before that assignment;
  release-early   in the function named as `.remove`: a call statement `f(x, ...)` moves before
                  an earlier statement that still uses x or a pointer derived from x in the
                  function's declarations (`q = g(x)`): before the nearest such statement, and
                  (a second mutant) before the first one;
  release-twice   in the function named as `.remove`: one of its last two call statements
                  `f(x, ...)` is repeated at the end of the function (a second release on the same
                  path, as when a cleanup path releases what was released already).
  unlock-dropped  in any function a structure names as a member (`.ndo_get_stats = f`): the last
                  top-level `*unlock*(E, ...)` after a top-level `*lock*(E, ...)` is deleted (the
                  lock stays held on the path every call takes; the seeded lines are that path,
                  from the deleted line to the function's end); these mutants boot with a
                  reproducer script that brings the interface up and down and reads its
                  statistics (--repro, for both the mutant's boot and the crash command).

Sites are taken in source order, at most --per-class per driver and class. Each mutant is built
and booted with its device (`autodriver check --boot`); one that does not build or does not crash
is counted and dropped (the bug did not manifest). For each crashing mutant, `autodriver crash LOG
--driver MUT --kernel K --repair --device D --runs N` is run on the recorded console and scored:

  top-1 / top-3   the first / one of the first three localized places lies on a line the mutation
                  moved or moved before (the seeded site);
  repaired        the crash is gone in N of N boots and the integrity gate passed;
  time            wall time of the crash command (localize, hypothesize, repair and reproduction).

  bench/seeded_crashes.py [--kernel 6.12] [--runs 3] [--per-class 2] [--only NAME] [--class CLASS] [-o WORK] [--json]

Needs QEMU and the kernel's source (`autodriver kernel source K`). Prints a markdown table;
docs/benchmarks.md's seeded-crash table comes from it.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

# Drivers of the kernel tree that bind to a device QEMU emulates: name, files relative to the
# kernel source, kbuild lines, QEMU -device. The benchmark's inputs, not knowledge of the engine.
DRIVERS = [
    ("8139cp", ["drivers/net/ethernet/realtek/8139cp.c"], "obj-m += 8139cp.o\n", "rtl8139"),
    ("pcnet32", ["drivers/net/ethernet/amd/pcnet32.c"], "obj-m += pcnet32.o\n", "pcnet"),
    ("e100", ["drivers/net/ethernet/intel/e100.c"], "obj-m += e100.o\n", "i82559er"),
    ("ne2k-pci", ["drivers/net/ethernet/8390/" + f for f in ("ne2k-pci.c", "8390.c", "8390.h", "lib8390.c")],
     "obj-m += ne2k-pci.o 8390.o\n", "ne2k_pci"),
    ("e1000", ["drivers/net/ethernet/intel/e1000/" + f for f in
               ("e1000.h", "e1000_hw.h", "e1000_osdep.h", "e1000_main.c", "e1000_hw.c", "e1000_ethtool.c",
                "e1000_param.c")],
     "obj-m += e1000.o\ne1000-y := e1000_main.o e1000_hw.o e1000_ethtool.o e1000_param.o\n", "e1000"),
    ("tulip", ["drivers/net/ethernet/dec/tulip/" + f for f in
               ("tulip.h", "tulip_core.c", "eeprom.c", "interrupt.c", "media.c", "timer.c", "21142.c", "pnic.c",
                "pnic2.c")],
     "obj-m += tulip.o\ntulip-y := eeprom.o interrupt.o media.o timer.o tulip_core.o 21142.o pnic.o pnic2.o\n",
     "tulip"),
]


# ---- a small C reader: comments and literals blanked, functions and their top-level statements ----

def blank(text):
    """The text with comments, string and character literals replaced by spaces (same offsets)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def callbacks(code, member):
    """Functions a structure initializer names as `.member = fn` (any member when None)."""
    m = r"\w+" if member is None else member
    return sorted(set(re.findall(r"\." + m + r"\s*=\s*([A-Za-z_]\w*)\s*[,}\n]", code)))


def function_body(code, name):
    """(open brace offset, close brace offset) of the definition of `name`, or None."""
    # The return type on the line before (`static int\nf(...)`) leaves the name at the line's start.
    for m in re.finditer(r"(?m)^(?:[A-Za-z_][\w \t\*]*\b)?" + name + r"\s*\(([^;{}]*)\)\s*\{", code):
        start = m.end() - 1
        depth = 0
        for i in range(start, len(code)):
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    return start, i
    return None


def statements(code, body):
    """Top-level statements of a body: (first offset, end offset exclusive) each."""
    start, end = body
    out = []
    i = start + 1
    while i < end:
        while i < end and code[i].isspace():
            i += 1
        if i >= end:
            break
        j, paren, brace = i, 0, 0
        while j < end:
            c = code[j]
            if c == "(":
                paren += 1
            elif c == ")":
                paren -= 1
            elif c == "{":
                brace += 1
            elif c == "}":
                brace -= 1
                if brace == 0 and paren == 0:
                    rest = code[j + 1:end].lstrip()
                    if not rest.startswith("else") and not rest.startswith(";"):
                        j += 1
                        break
            elif c == ";" and paren == 0 and brace == 0:
                rest = code[j + 1:end].lstrip()
                if not rest.startswith("else"):
                    j += 1
                    break
            elif c == ":" and paren == 0 and brace == 0 and re.fullmatch(r"[A-Za-z_]\w*\s*", code[i:j]):
                j += 1  # a label
                break
            j += 1
        out.append((i, j))
        i = j
    return out


def line_of(code, off):
    return code.count("\n", 0, off) + 1


def whole_lines(code, st):
    """The statement widened to whole lines, or None when it shares a line with another one."""
    a, b = st
    la = code.rfind("\n", 0, a) + 1
    lb = code.find("\n", b)
    lb = len(code) if lb < 0 else lb
    if code[la:a].strip() or code[b:lb].strip():
        return None
    return la, lb + 1


def move_before(text, moved, before):
    """The text with the whole lines `moved` placed right before the whole lines `before`."""
    seg = text[moved[0]:moved[1]]
    rest = text[:moved[0]] + text[moved[1]:]
    at = before[0] if before[0] < moved[0] else before[0] - (moved[1] - moved[0])
    return rest[:at] + seg + rest[at:], at


def pointer_locals(code, body):
    head = code[body[0]:body[1]]
    return set(re.findall(r"\*\s*([A-Za-z_]\w*)\s*[;=,)]", head)) | set(re.findall(r"\(\s*[\w\s]+\*\s*([A-Za-z_]\w*)\s*[,)]", code[:body[0]][-300:]))


def sites_use_before_set(code, fn):
    body = function_body(code, fn)
    if not body:
        return
    ptrs = pointer_locals(code, body)
    sts = statements(code, body)
    for i, (a, b) in enumerate(sts):
        m = re.match(r"([A-Za-z_]\w*)\s*=\s*[A-Za-z_][\w>.-]*\s*\(", code[a:b])
        if not m or m.group(1) not in ptrs:
            continue
        v = m.group(1)
        for a2, b2 in sts[i + 1:i + 6]:
            s = code[a2:b2]
            if re.match(r"if\b", s) or re.match(r"[A-Za-z_]\w*\s*:", s):
                continue
            if re.match(r"\s*" + v + r"\s*->", s):
                moved, before = whole_lines(code, (a2, b2)), whole_lines(code, (a, b))
                if moved and before:
                    yield {"class": "use-before-set", "function": fn, "variable": v, "moved": moved,
                           "before": before}
            break


def sites_release_early(code, fn):
    body = function_body(code, fn)
    if not body:
        return
    sts = statements(code, body)
    head = code[body[0]:body[1]]
    derived = {}
    for m in re.finditer(r"\*\s*([A-Za-z_]\w*)\s*=\s*[A-Za-z_]\w*\s*\(\s*&?\s*([A-Za-z_]\w*)", head):
        derived.setdefault(m.group(2), set()).add(m.group(1))
    for k in range(len(sts) - 1, 0, -1):
        a, b = sts[k]
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)\s*[,)][^;{]*;", code[a:b].strip())
        if not m or m.group(1) in ("if", "while", "for", "switch", "return", "sizeof"):
            continue
        x = m.group(2)
        names = {x} | derived.get(x, set())
        uses = []
        for j in range(k - 1, -1, -1):
            s = code[sts[j][0]:sts[j][1]]
            if re.match(r"(struct|unsigned|const|int|u\d+|void)\b", s):
                break  # the declarations: nothing earlier to release before
            if any(re.search(r"\b" + re.escape(n) + r"\b", s) for n in names):
                uses.append(j)
        # Two placements: before the nearest earlier use, and before the first use.
        for j in sorted(set(uses[:1] + uses[-1:]), reverse=True):
            moved, before = whole_lines(code, (a, b)), whole_lines(code, sts[j])
            if moved and before:
                yield {"class": "release-early", "function": fn, "variable": x, "callee": m.group(1),
                       "moved": moved, "before": before}


def sites_release_twice(code, fn):
    body = function_body(code, fn)
    if not body:
        return
    sts = statements(code, body)
    if not sts:
        return
    last = sts[-1]
    end = last if code[last[0]:last[1]].startswith("return") else None
    n = 0
    for k in range(len(sts) - 1, 0, -1):
        a, b = sts[k]
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)\s*[,)][^;{]*;", code[a:b].strip())
        if not m or m.group(1) in ("if", "while", "for", "switch", "return", "sizeof"):
            continue
        moved = whole_lines(code, (a, b))
        if not moved:
            continue
        # The copy goes before a final return, else after the last statement.
        at = whole_lines(code, end) if end else None
        at = at[0] if at else whole_lines(code, last)[1] if whole_lines(code, last) else None
        if at is None:
            continue
        yield {"class": "release-twice", "function": fn, "variable": m.group(2), "callee": m.group(1),
               "copied": moved, "at": at}
        n += 1
        if n == 2:
            break


def sites_unlock_dropped(code, fn):
    """The last top-level `*unlock*(E, ...);` of a function that took E with an earlier top-level
    `*lock*(E, ...);` (the path every call takes): the mutant leaves the lock held on return."""
    body = function_body(code, fn)
    if not body:
        return
    sts = statements(code, body)
    call = re.compile(r"([A-Za-z_]\w*)\s*\(\s*([^,;()]+?)\s*[,)][^;{]*;")
    taken = {}
    last = None
    for a, b in sts:
        m = call.fullmatch(code[a:b].strip())
        if not m:
            continue
        name, arg = m.group(1), re.sub(r"\s+", "", m.group(2))
        if "unlock" in name and arg in taken:
            last = (a, b, name, arg)
        elif "lock" in name and "unlock" not in name:
            taken[arg] = name
    if not last:
        return
    dropped = whole_lines(code, last[:2])
    if dropped:
        yield {"class": "unlock-dropped", "function": fn, "variable": last[3], "callee": last[2], "dropped": dropped}


def copy_to(text, copied, at):
    """The text with the whole lines `copied` inserted again at offset `at` (a line start)."""
    seg = text[copied[0]:copied[1]]
    return text[:at] + seg + text[at:], at


def mutants(tree, files, per_class, classes=()):
    """Every mutant of the driver: (file, site, new text), deterministic order."""
    out = []
    for cls, member, finder in (("use-before-set", "probe", sites_use_before_set),
                                ("release-early", "remove", sites_release_early),
                                ("release-twice", "remove", sites_release_twice),
                                ("unlock-dropped", None, sites_unlock_dropped)):
        if classes and cls not in classes:
            continue
        n = 0
        for f in sorted(files):
            if not f.endswith(".c"):
                continue
            text = open(os.path.join(tree, f), encoding="utf-8", errors="surrogateescape").read()
            code = blank(text)
            for fn in callbacks(code, member):
                for site in finder(code, fn):
                    if n >= per_class:
                        break
                    if "dropped" in site:
                        # The seeded lines: the path that now lacks the unlock, from the line
                        # before the deleted one to the end of the function.
                        a, b = site["dropped"]
                        new = text[:a] + text[b:]
                        end = function_body(blank(new), site["function"])
                        last = line_of(new, end[1]) if end else line_of(new, a)
                        site.update(file=f, lines=list(range(line_of(text, a) - 1, last + 1)),
                                    moved_text=text[a:b].strip())
                    elif "copied" in site:
                        # The seeded lines: the original statement and its copy.
                        new, at = copy_to(text, site["copied"], site["at"])
                        seg = text[site["copied"][0]:site["copied"][1]]
                        orig = line_of(text, site["copied"][0])
                        first = line_of(new, at)
                        n_lines = seg.count("\n")
                        site.update(file=f, lines=list(range(orig, orig + n_lines)) + list(range(first, first + n_lines)),
                                    moved_text=seg.strip())
                    else:
                        new, at = move_before(text, site["moved"], site["before"])
                        # The seeded lines in the mutant: the moved statement and the one it now precedes.
                        seg = text[site["moved"][0]:site["moved"][1]]
                        first = line_of(new, at)
                        last = first + seg.count("\n") - 1
                        after_len = text[site["before"][0]:site["before"][1]].count("\n")
                        site.update(file=f, lines=list(range(first, last + after_len + 1)),
                                    moved_text=seg.strip())
                    out.append((f, site, new))
                    n += 1
    return out


# ---- the runs ----

def run(argv, timeout, out=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        rc, so, se = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, so, se = -1, b"", b"timeout"
    if out:
        with open(out, "wb") as f:
            f.write(so)
    return rc, so.decode("utf-8", "replace"), se.decode("utf-8", "replace"), time.monotonic() - t0


# What the guest runs for mutants whose bug only shows once the interface is used (a lock left held
# in a callback): brings the NIC up and down and reads its statistics, twice.
NET_REPRO = """ip link set eth0 up
cat /proc/net/dev
cat /proc/net/dev
ip link set eth0 down
ip link set eth0 up
cat /proc/net/dev
"""
NEEDS_REPRO = {"unlock-dropped"}


def boot_console(ad, tree, kernel, device, work, tag, repro=None):
    rc, so, se, _ = run([ad, "check", tree, "-k", kernel, "--no-sparse", "--boot", "--device", device, "--json"] +
                        (["--repro", repro] if repro else []), 900, os.path.join(work, tag + ".check.json"))
    try:
        d = json.loads(so)
    except ValueError:
        return "error", "", se[-300:]
    if not d.get("gates", {}).get("build", {}).get("ok", False):
        return "not-built", "", ""
    by = list(d["gates"].get("boot", {}).get("by_kernel", {}).values())
    if not by:
        return "error", "", se[-300:]
    det = by[0].get("details", {})
    console = det.get("console", "")
    return ("ok" if by[0].get("ok") else "crash"), console, det.get("reason", "")


def score(site, d):
    lines = set(site["lines"])
    locs = [(l.get("file"), l.get("line")) for l in d.get("localized", [])]
    hits = [f == site["file"] and ln in lines for f, ln in locs]
    rep = d.get("repair", {})
    rep = rep if isinstance(rep, dict) else {}
    kept = rep.get("repair", {}) if isinstance(rep.get("repair"), dict) else {}
    return {
        "top1": bool(hits[:1] and hits[0]),
        "top3": any(hits[:3]),
        "function_top1": bool(d.get("localized")) and d["localized"][0].get("function") == site["function"],
        "hypothesis": (d.get("hypotheses") or [{}])[0].get("kind", ""),
        "repair_status": rep.get("status", ""),
        "repaired": rep.get("status") == "repaired" and kept.get("integrity", {}).get("ok", False),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default="6.12")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--per-class", type=int, default=2)
    ap.add_argument("--only", action="append", default=[], help="only this driver (repeatable)")
    ap.add_argument("--class", dest="classes", action="append", default=[], help="only this bug class (repeatable)")
    ap.add_argument("-o", "--work", default="seeded-work")
    ap.add_argument("--ad", default=os.environ.get("AD", "autodriver"))
    ap.add_argument("--list", action="store_true", help="print the mutants and stop")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="print the table of an earlier run's results.json and stop")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.report:
        report(json.load(open(a.report)))
        return
    src = subprocess.run([a.ad, "kernel", "source", a.kernel], stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    os.makedirs(a.work, exist_ok=True)
    rows = []
    for name, files, makefile, device in DRIVERS:
        if a.only and name not in a.only:
            continue
        base = os.path.join(a.work, name, "orig")
        shutil.rmtree(os.path.join(a.work, name), ignore_errors=True)
        os.makedirs(base)
        for f in files:
            shutil.copy(os.path.join(src, f), base)
        with open(os.path.join(base, "Makefile"), "w") as fh:
            fh.write(makefile)
        local = [os.path.basename(f) for f in files]
        for idx, (f, site, new) in enumerate(mutants(base, local, a.per_class, a.classes)):
            tag = "%s-%s-%d" % (name, site["class"], idx)
            row = {"driver": name, "device": device, "id": tag, "class": site["class"], "file": f,
                   "function": site["function"], "lines": site["lines"], "moved": site["moved_text"]}
            rows.append(row)
            if a.list:
                print(tag, f, site["function"], site["lines"], "|", site["moved_text"][:70])
                continue
            mut = os.path.join(a.work, name, tag)
            shutil.copytree(base, mut)
            with open(os.path.join(mut, f), "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(new)
            repro = None
            if site["class"] in NEEDS_REPRO:
                repro = os.path.abspath(os.path.join(a.work, "net-repro.sh"))
                with open(repro, "w") as fh:
                    fh.write(NET_REPRO)
            outcome, console, reason = boot_console(a.ad, mut, a.kernel, device, os.path.join(a.work, name), tag, repro)
            row["mutant"] = outcome
            print("%-32s %-10s %s" % (tag, outcome, reason), file=sys.stderr, flush=True)
            if outcome != "crash":
                continue
            log = os.path.join(a.work, name, tag + ".console.txt")
            with open(log, "w") as fh:
                fh.write(console)
            rc, so, se, secs = run([a.ad, "crash", log, "--driver", mut, "--kernel", a.kernel, "--repair", "--device",
                                    device, "--runs", str(a.runs), "-o", os.path.join(a.work, name, tag + ".out"),
                                    "--json"] + (["--repro", repro] if repro else []), 3600,
                                   os.path.join(a.work, name, tag + ".crash.json"))
            try:
                d = json.loads(so)
            except ValueError:
                row.update(error=se[-300:] or "no output", seconds=round(secs, 1))
                continue
            row.update(score(site, d), seconds=round(secs, 1), title=(d.get("reports") or [{}])[0].get("title", ""))
            print("%-32s top1=%s top3=%s %s %s %.0fs" % (tag, row["top1"], row["top3"], row["hypothesis"],
                                                       row["repair_status"], secs), file=sys.stderr, flush=True)
    if a.list:
        return
    with open(os.path.join(a.work, "results.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    report(rows)


def report(rows):
    print("| class | mutants | built | crashed | top-1 | top-3 | repaired | median s |")
    print("|---|---|---|---|---|---|---|---|")
    for cls in sorted({r["class"] for r in rows}) + ["all"]:
        rs = [r for r in rows if cls in ("all", r["class"])]
        built = [r for r in rs if r.get("mutant") in ("ok", "crash")]
        # Every crashing mutant counts; one the crash command failed on (an error row) is a miss.
        crashed = [r for r in rs if r.get("mutant") == "crash"]
        if not crashed:
            print("| %s | %d | %d | 0 | - | - | - | - |" % (cls, len(rs), len(built)))
            continue
        hit = lambda k: sum(1 for r in crashed if r.get(k))
        pct = lambda k: "%d (%.0f %%)" % (hit(k), 100.0 * hit(k) / len(crashed))
        print("| %s | %d | %d | %d | %s | %s | %s | %.0f |" % (
            cls, len(rs), len(built), len(crashed), pct("top1"), pct("top3"), pct("repaired"),
            statistics.median(r["seconds"] for r in crashed if "seconds" in r)))
    print()
    for r in rows:
        print("- %s: %s%s%s" % (r["id"], r.get("mutant", "?"),
                                "" if "top1" not in r else ", %s, top-1 %s, %s (%s)" % (
                                    r.get("title", ""), r["top1"], r["repair_status"], r["hypothesis"]),
                                ", crash command failed: " + r["error"].strip().splitlines()[-1][:160] if "error" in r else ""))


if __name__ == "__main__":
    main()
