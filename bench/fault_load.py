#!/usr/bin/env python3
"""Fault and load benchmark (issue 17 item 6; a benchmark, not a test).

Load: JOBS autodriver runs at once on one run store (ports 6.12 -> 7.3 of hangcheck-timer, every
fourth one with --boot, every fifth a `check --boot`), a random one killed with -9 every few
seconds for MINUTES minutes and replaced. The benchmark is the child subreaper of everything it
starts, so a process that outlives its autodriver is reparented to it and counted:
  orphans      processes still alive 2 s after their autodriver was killed (sampled at each kill
               and at the end), by name;
  scratch      folders left in the runs' private scratch root after one more run (the next run
               removes those of dead runs);
  store        PRAGMA integrity_check of the shared store, and every run's status (complete:
               ok/failed/error, or interrupted; none `running`);
  runs         finished, killed, and how many killed ones the store shows as interrupted.
Disk full: the same port with its scratch root and OUT on a small tmpfs, at several sizes: the exit
code, whether stderr says the disk is full, and whether OUT holds anything half-written (a tree or
a patch folder that is not the complete one, a verdict that is not valid JSON).

  bench/fault_load.py [--jobs 20] [--minutes 10] [--kill-every 3:8] [--disk-sizes 64,128,...]
                      [--skip-load] [--skip-disk] [--json]

Needs root for the tmpfs (or skip it with --skip-disk), QEMU, kernels 6.12 and 7.3 (fetched on
first use). Prints a markdown summary; docs/benchmarks.md's fault/load table comes from it.
"""
import argparse
import ctypes
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

PR_SET_CHILD_SUBREAPER = 36


def ad_binary():
    env = os.environ.get("AD")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "build", "src", "autodriver", "autodriver")
    return built if os.path.exists(built) else shutil.which("autodriver")


def proc_children(ppid):
    """{pid: (state, comm)} of the live children of ppid."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        close = stat.rfind(")")
        comm = stat[stat.find("(") + 1:close]
        fields = stat[close + 2:].split()
        if int(fields[1]) == ppid:
            out[int(name)] = (fields[0], comm)
    return out


def make_driver(ad, work):
    src = subprocess.run([ad, "kernel", "source", "6.12"], capture_output=True, text=True, check=True,
                         timeout=1800).stdout.strip()
    drv = os.path.join(work, "hangcheck")
    os.makedirs(drv)
    shutil.copy(os.path.join(src, "drivers/char/hangcheck-timer.c"), drv)
    with open(os.path.join(drv, "Makefile"), "w") as f:
        f.write("obj-m += hangcheck-timer.o\n")
    return drv


def job_argv(ad, drv, out, k):
    if k % 5 == 4:
        return [ad, "check", drv, "-k", "6.12", "--boot", "--json"]
    argv = [ad, "port", drv, "--from", "6.12", "--to", "7.3", "--no-store-kb",
            "--leave-out", "drivers/char/hangcheck-timer.c", "-o", out, "--json"]
    if k % 4 == 3:
        argv.append("--boot")
    return argv


def load(ad, drv, work, args, env):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    lo, hi = (float(x) for x in args.kill_every.split(":"))
    running = {}  # pid -> (Popen, k)
    finished, killed = [], []
    orphans = {}  # pid -> comm, alive 2 s after its autodriver died
    first_seen = {}  # stray pid -> when it was first seen reparented here
    k = 0
    log = open(os.path.join(work, "load.log"), "w")

    def start():
        nonlocal k
        out = os.path.join(work, "out", str(k))
        p = subprocess.Popen(job_argv(ad, drv, out, k), env=env, stdout=subprocess.DEVNULL, stderr=log,
                             start_new_session=True)
        running[p.pid] = (p, k)
        k += 1

    def reap():
        for pid, (p, kk) in list(running.items()):
            if p.poll() is not None:
                del running[pid]
                finished.append((kk, p.returncode))
        # Reparented strays: count the live ones past their grace time, collect the dead ones.
        ours = set(running)
        for pid, (state, comm) in proc_children(os.getpid()).items():
            if pid in ours:
                continue
            if state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
            else:
                seen = first_seen.setdefault(pid, time.monotonic())
                if time.monotonic() - seen >= 2.0:
                    orphans[pid] = comm

    t_end = time.monotonic() + args.minutes * 60
    next_kill = time.monotonic() + random.uniform(lo, hi)
    rng = random.Random(args.seed)
    while time.monotonic() < t_end:
        while len(running) < args.jobs:
            start()
        if time.monotonic() >= next_kill and running:
            pid = rng.choice(sorted(running))
            p, kk = running.pop(pid)
            os.kill(pid, signal.SIGKILL)
            p.wait()
            killed.append((kk, pid))
            next_kill = time.monotonic() + rng.uniform(lo, hi)
        time.sleep(0.5)
        reap()
        print(f"\r{int(t_end - time.monotonic()):4d} s left: {len(running)} running, {len(finished)} finished, "
              f"{len(killed)} killed, {len(orphans)} orphan(s)", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    # Drain: the rest finish on their own (bounded), then nothing of ours may be left.
    drain_end = time.monotonic() + args.drain_minutes * 60
    while running and time.monotonic() < drain_end:
        time.sleep(1)
        reap()
    stragglers = len(running)
    for pid, (p, kk) in list(running.items()):
        os.kill(pid, signal.SIGKILL)
        p.wait()
        killed.append((kk, pid))
        del running[pid]
    reap()
    time.sleep(2.5)
    reap()
    left = {pid: comm for pid, (state, comm) in proc_children(os.getpid()).items() if state != "Z"}
    orphans.update(left)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    log.close()
    return finished, killed, orphans, stragglers


def store_report(ad, env, store, drv, killed_pids):
    # The next runs: a check (its first scratch folder sweeps those of dead runs) and a listing
    # (settles the runs of dead processes as interrupted).
    subprocess.run([ad, "check", drv, "-k", "6.12", "--no-sparse", "--json"], env=env, capture_output=True, timeout=900)
    subprocess.run([ad, "runs", "--json"], env=env, capture_output=True, timeout=300)
    db = sqlite3.connect(store)
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    statuses = {}
    for (st,) in db.execute("SELECT status FROM runs"):
        statuses[st] = statuses.get(st, 0) + 1
    by_pid = {pid: st for pid, st in db.execute("SELECT pid, status FROM runs")}
    killed_interrupted = sum(1 for pid in killed_pids if by_pid.get(pid) == "interrupted")
    killed_recorded = sum(1 for pid in killed_pids if pid in by_pid)
    db.close()
    return integrity, statuses, killed_recorded, killed_interrupted


def scratch_left(env):
    """Folders left in the private scratch root after one more run that creates scratch."""
    root = os.path.join(env["TMPDIR"], f"autodriver-{os.getuid()}")
    return sorted(os.listdir(root)) if os.path.isdir(root) else []


def half_written(out):
    """What in OUT is partial: a staging folder or temporary file, a verdict that does not parse,
    a tree or patch folder beside a verdict that says the run failed, an ok verdict whose tree or
    patches are not all there."""
    bad = []
    if not os.path.isdir(out):
        return bad
    for name in os.listdir(out):
        if name not in ("tree", "patches", "verdict.json"):
            bad.append(name)
    v = os.path.join(out, "verdict.json")
    verdict = None
    if os.path.exists(v):
        try:
            verdict = json.load(open(v))
        except ValueError:
            bad.append("verdict.json (not JSON)")
    if verdict is not None and verdict.get("ok") is False and verdict.get("status") in ("error", "interrupted"):
        for name in ("tree", "patches"):
            if os.path.exists(os.path.join(out, name)):
                bad.append(f"{name} beside a failed verdict")
    elif verdict is not None and verdict.get("ok"):
        for p in verdict.get("patches", []):
            if not os.path.exists(p) or os.path.getsize(p) == 0:
                bad.append(f"patch {os.path.basename(p)}")
        if not os.path.exists(os.path.join(out, "tree", "hangcheck-timer.c")):
            bad.append("tree without the driver")
    return bad


def disk_full(ad, drv, work, sizes, base_env, where):
    """`where`: "scratch" (the scratch root and OUT on the tmpfs) or "out" (only OUT there)."""
    rows = []
    for kb in sizes:
        mnt = os.path.join(work, f"tmpfs-{where}-{kb}")
        os.makedirs(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kb}k", "tmpfs", mnt], check=True, timeout=60)
        try:
            env = dict(base_env, TMPDIR=mnt) if where == "scratch" else dict(base_env)
            out = os.path.join(mnt, "out")
            t0 = time.monotonic()
            r = subprocess.run([ad, "port", drv, "--from", "6.12", "--to", "7.3", "--no-store-kb",
                                "--leave-out", "drivers/char/hangcheck-timer.c", "-o", out, "--json"],
                               env=env, capture_output=True, text=True, errors="replace", timeout=1800)
            secs = time.monotonic() - t0
            says_full = "no space left" in r.stderr.lower()
            last = [l for l in r.stderr.splitlines() if l.strip()][-1:] or [""]
            rows.append({"on_tmpfs": where, "size_kib": kb, "exit": r.returncode, "seconds": round(secs, 1), "says_disk_full": says_full,
                         "verdict": os.path.exists(os.path.join(out, "verdict.json")),
                         "half_written": half_written(out),
                         "last_line": last[0].replace(mnt, "TMPFS").replace(work, "WORK")[:160]})
        finally:
            subprocess.run(["umount", "-l", mnt], timeout=60)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--drain-minutes", type=float, default=10)
    ap.add_argument("--kill-every", default="3:8", help="seconds between kills, LO:HI (uniform)")
    ap.add_argument("--disk-sizes", default="64,128,256,512,1024,2048,4096", help="tmpfs sizes in KiB")
    ap.add_argument("--out-sizes", default="4,8,12,16,32", help="tmpfs sizes in KiB with only OUT on it")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--skip-disk", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ad = ad_binary()
    if not ad:
        sys.exit("autodriver not found: build it or set AD")
    work = tempfile.mkdtemp(prefix="ad-fault-")
    result = {"jobs": args.jobs, "minutes": args.minutes, "kill_every_s": args.kill_every}
    try:
        drv = make_driver(ad, work)
        os.makedirs(os.path.join(work, "tmp"))
        env = dict(os.environ, TMPDIR=os.path.join(work, "tmp"), AUTODRIVER_STORE=os.path.join(work, "runs.sqlite"))
        if not args.skip_load:
            finished, killed, orphans, stragglers = load(ad, drv, work, args, env)
            integrity, statuses, k_rec, k_int = store_report(ad, env, env["AUTODRIVER_STORE"], drv, [p for _, p in killed])
            result.update({
                "finished": len(finished),
                "finished_exit_codes": sorted({rc for _, rc in finished}),
                "killed": len(killed), "stragglers_killed": stragglers,
                "killed_recorded": k_rec, "killed_interrupted": k_int,
                "orphans": sorted(set(orphans.values())), "orphan_count": len(orphans),
                "scratch_left": scratch_left(env),
                "store_integrity": integrity, "store_statuses": statuses,
            })
        if not args.skip_disk:
            denv = dict(os.environ, AUTODRIVER_STORE=os.path.join(work, "disk.sqlite"))
            result["disk_full"] = (disk_full(ad, drv, work, [int(s) for s in args.disk_sizes.split(",")], denv, "scratch") +
                                   disk_full(ad, drv, work, [int(s) for s in args.out_sizes.split(",")], denv, "out"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    if "finished" in result:
        print(f"| jobs at once | minutes | finished | killed -9 | killed runs interrupted in the store | orphans | "
              f"scratch left | integrity_check | statuses |")
        print("|---|---|---|---|---|---|---|---|---|")
        print(f"| {args.jobs} | {args.minutes:g} | {result['finished']} (exit {result['finished_exit_codes']}) | "
              f"{result['killed']} | {result['killed_interrupted']}/{result['killed_recorded']} recorded | "
              f"{result['orphan_count']} {result['orphans']} | {len(result['scratch_left'])} | "
              f"{result['store_integrity']} | {result['store_statuses']} |")
    if "disk_full" in result:
        print()
        print("| on the tmpfs | KiB | exit | s | says disk full | verdict.json | half-written in OUT | last line |")
        print("|---|---|---|---|---|---|---|---|")
        for r in result["disk_full"]:
            print(f"| {r['on_tmpfs']} | {r['size_kib']} | {r['exit']} | {r['seconds']} | {r['says_disk_full']} | {r['verdict']} | "
                  f"{', '.join(r['half_written']) or 'nothing'} | {r['last_line'].replace('|', '/')} |")


if __name__ == "__main__":
    main()
