#!/usr/bin/env python3
"""Fidelity benchmark (issue 34 item 4; a benchmark, not a test): does `autodriver check` build a
driver tree exactly when a real Debian machine with the kernel's headers installed builds it the
way DKMS does?

For every (tree, kernel) pair it runs two builds and compares them:

  autodriver  `autodriver check TREE --kernel LINE --no-sparse --json`, with `--build-cmd` set to
              the same make command as the reference when the tree has a dkms.conf (DKMS variables
              mapped onto the placeholders {kdir} {kver} {tree}/{src}).
  reference   a "real Debian machine": an mmdebstrap root of the kernel's Debian suite (minbase +
              build-essential, kmod, bc, flex, bison, libelf-dev and linux-headers-<release>, all
              installed by apt inside the root), made once per kernel release and cached under
              <autodriver cache>/fidelity/roots/<release>. The tree is copied to a scratch folder,
              mounted where DKMS keeps its build copy (/var/lib/dkms/<name>/<version>/build, the
              pristine tree at /usr/src/<name>-<version>) and built as `dkms build` of DKMS 2.8/3.x
              does: dkms.conf is sourced with kernelver=<release>,
              kernel_source_dir=/lib/modules/<release>/build (the symlink the headers package
              made), arch=x86_64, dkms_tree, source_tree; PRE_BUILD runs if there is one; MAKE[0]
              (else DKMS's default `make -C $kernel_source_dir M=<build dir>`) gets its leading
              `make` rewritten to `make -j<jobs> KERNELRELEASE=<release>` (DKMS does that; a quoted
              'make' escapes it) and is eval'd in the build folder. BUILD_EXCLUSIVE_KERNEL is
              recorded, not obeyed: the build runs anyway so both sides are compared.
              The reference runs in bubblewrap: the root read-only, only the scratch copy
              writable, /proc mounted, private /tmp, all namespaces unshared (no network), every
              capability dropped, killed with its parent and after a timeout (900 s).
              `uname -r` inside any sandbox answers the HOST's release; a real DKMS build runs on
              the machine whose kernel it targets, or sees the target's release through
              `kernelver`. So the reference puts a tiny `uname` wrapper first on PATH that answers
              the target release wherever the real uname prints the host's (e.g. for -r).

Agreement: both succeed (exit 0 and at least one .ko) and build the same set of .ko names, or both
fail. A disagreement is recorded with both logs' last 30 lines and a guessed cause.

Inputs: every tree of WILD/*.tar.gz (trees.tsv names the driver folder), the default branch head
of every WILD/history/*.bundle, and every `*-dkms` package of bullseye, bookworm, trixie and sid
(fetched into the cache by `autodriver kb build --dkms --suite S`; identical (package, version)
pairs across suites are built once). Kernels: the lines 5.10, 6.1, 6.12, 7.2, 7.3 that are fetched
(`autodriver kernel fetch LINE`).

A DKMS package's Depends (from the archive's lists; minus dkms, kernel headers and other DKMS
packages) are installed on both sides, as apt installs them with the package: in a copy of the
reference root made once per set (/usr hard-linked, apt in bubblewrap) and with autodriver's
`--build-deps` (each side: only what its root lacks). The row records them.

Results are appended to a JSONL file (default <autodriver cache>/fidelity/results.jsonl; the
repository keeps its measured rows in bench/records/) one line per pair as soon as it is done,
without this machine's paths; a pair already there is skipped, so Ctrl-C loses nothing and a
second run (also on another machine, from the committed file) resumes. Full logs go to
<autodriver cache>/fidelity/logs/<results name>/.

  bench/fidelity.py [--kernels 6.1,6.12] [--only SUBSTR] [--no-dkms] [--no-wild]
                    [--sample N --seed S] [--results FILE]
  bench/fidelity.py --report [--results FILE]        # markdown: matrix, counts, disagreements
  bench/fidelity.py --prepare --kernels 6.1          # only make the reference roots and trees

Python 3 standard library only. Runs as root or as a user whose user namespaces work; builds run
one at a time, under nice.
"""

import argparse
import fcntl
import glob
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

K_LINES = ["5.10", "6.1", "6.12", "7.2", "7.3"]
K_DKMS_SUITES = ["bullseye", "bookworm", "trixie", "sid"]
K_ROOT_PACKAGES = ["build-essential", "kmod", "bc", "flex", "bison", "libelf-dev"]
K_REF_TIMEOUT_S = 900
K_TAIL = 30
K_SCHEMA = 1
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_WILD = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "wild"))

# What a DKMS `build` does, as a bash script run inside the reference root (and, with "expand", only
# to print the make command it would run). Arguments: kernelver module module_version jobs mode.
DKMS_SH = r"""
kernelver=$1; module=$2; module_version=$3; parallel_jobs=$4; mode=$5
arch=x86_64
kernel_source_dir=/lib/modules/$kernelver/build
dkms_tree=/var/lib/dkms
source_tree=/usr/src
install_tree=/lib/modules
build_dir=$dkms_tree/$module/$module_version/build
cd "$build_dir" || exit 97
if [ -f ./dkms.conf ]; then
  . ./dkms.conf
fi
make_command=${MAKE[0]}
[ -n "$make_command" ] || make_command="make -C $kernel_source_dir M=$dkms_tree/$module/$module_version/build"
the_make_command=${make_command/#make/make -j$parallel_jobs KERNELRELEASE=$kernelver}
excluded=
if [ -n "$BUILD_EXCLUSIVE_KERNEL" ] && ! [[ $kernelver =~ $BUILD_EXCLUSIVE_KERNEL ]]; then
  excluded="BUILD_EXCLUSIVE_KERNEL=$BUILD_EXCLUSIVE_KERNEL"
fi
if [ "$mode" = expand ]; then
  printf 'FIDELITY-PRE-BUILD\t%s\n' "$PRE_BUILD"
  printf 'FIDELITY-CMD\t%s\n' "$the_make_command"
  printf 'FIDELITY-EXCLUDED\t%s\n' "$excluded"
  exit 0
fi
echo "fidelity: dkms build of $module/$module_version for $kernelver: $the_make_command"
[ -z "$excluded" ] || echo "fidelity: note: DKMS would skip this kernel ($excluded); building anyway"
if [ -n "$PRE_BUILD" ] && [ -x "$build_dir/${PRE_BUILD%% *}" ]; then
  echo "fidelity: running the pre_build script: $PRE_BUILD"
  (cd "$build_dir" && exec $build_dir/$PRE_BUILD)
fi
eval "$the_make_command"
"""

# uname as the target machine answers it: the real output with the host's release replaced.
UNAME_SH = """#!/bin/sh
# fidelity.py: the reference build's uname answers the target release {release} where the real
# uname prints the host's (uname -r inside a sandbox is the host's; DKMS builds see kernelver).
out=$(/bin/uname "$@") || exit $?
host=$(/bin/uname -r)
printf '%s\\n' "$out" | sed "s|$host|{release}|g"
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ad_bin():
    return os.environ.get("AD") or shutil.which("autodriver") or "autodriver"


def ad_identity():
    """Which autodriver binary ran: the other side of every result (it changes while sessions work)."""
    path = shutil.which(ad_bin()) or ad_bin()
    try:
        h = hashlib.sha256(open(path, "rb").read()).hexdigest()[:12]
        return f"{h} ({time.strftime('%Y-%m-%d %H:%M', time.gmtime(os.stat(path).st_mtime))} UTC)"
    except OSError:
        return "unknown"


def cache_root():
    c = os.environ.get("AUTODRIVER_CACHE")
    if c:
        return os.path.abspath(c)
    x = os.environ.get("XDG_CACHE_HOME")
    if x:
        return os.path.join(x, "autodriver")
    return os.path.join(os.environ.get("HOME") or "/tmp", ".cache", "autodriver")


def work_dir():
    return os.path.join(cache_root(), "fidelity")


class Locked:
    """An exclusive flock held for the `with` block (one builder of a root, one run at a time)."""

    def __init__(self, path, wait=True):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.f = open(path, "w")
        self.wait = wait

    def __enter__(self):
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
        except BlockingIOError:
            sys.exit(f"fidelity: another run holds {self.f.name}; builds run one at a time")
        return self

    def __exit__(self, *a):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def run(argv, timeout, cwd=None, env=None):
    """Runs argv in its own process group; kills the group on timeout or Ctrl-C.
    Returns (exit code or None on timeout, output text, seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = None
    except BaseException:
        try:
            os.killpg(p.pid, signal.SIGINT)
            p.wait(timeout=10)
        except Exception:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group may be gone already (Ctrl-C reached it too)
            except ProcessLookupError:
                pass
            p.wait()
        raise
    return rc, out.decode("utf-8", "replace"), time.monotonic() - t0


def tail(text, n=K_TAIL, width=400):
    """The last N lines, each cut at WIDTH characters (kbuild's V=1 lines run to thousands)."""
    return "\n".join(l if len(l) <= width else l[:width] + " [...]" for l in text.rstrip("\n").splitlines()[-n:])


# ---- kernels and reference roots -----------------------------------------------------------------

def kernel_info(line):
    rc, out, _ = run([ad_bin(), "kernel", "info", line, "--json"], 120)
    if rc != 0:
        return None
    try:
        return json.loads(out[out.index("{"):])
    except ValueError:
        return None


def base_suite(suite):
    return suite.split("-")[0]


def sources_for(suite):
    """The archive lines autodriver's private apt configuration reads for this suite family."""
    base = base_suite(suite)
    lines = []
    path = os.path.join(cache_root(), "apt", "etc", "sources.list")
    for l in open(path):
        l = re.sub(r"\[[^]]*\]\s*", "", l.strip())
        f = l.split()
        if len(f) >= 4 and f[0] == "deb" and base_suite(f[2]) == base:
            lines.append(" ".join(f))
    if not lines:
        sys.exit(f"fidelity: {path} has no line for suite {base}")
    return base, lines


def reference_root(k):
    """The cached mmdebstrap root for kernel info k, made once (minutes)."""
    rel = k["release"]
    d = os.path.join(work_dir(), "roots", rel)
    stamp = os.path.join(d, "complete.json")
    with Locked(os.path.join(work_dir(), "locks", f"root-{rel}.lock")):
        if os.path.exists(stamp):
            return os.path.join(d, "root"), json.load(open(stamp))
        base, srcs = sources_for(k["suite"])
        partial = os.path.join(work_dir(), "roots", f".partial-{rel}")
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        pkgs = K_ROOT_PACKAGES + [f"linux-headers-{rel}"]
        argv = ["mmdebstrap", "--variant=minbase", "--format=directory",
                "--aptopt=Acquire::Check-Valid-Until \"false\"", "--include=" + ",".join(pkgs),
                base, os.path.join(partial, "root")] + srcs
        log(f"fidelity: making the reference root for {rel} ({base}; once; minutes): {shlex.join(argv)}")
        rc, out, secs = run(argv, 3600)
        open(os.path.join(partial, "mmdebstrap.log"), "w").write(out)
        if rc != 0:
            sys.exit(f"fidelity: mmdebstrap for {rel} failed (exit {rc}); log: {partial}/mmdebstrap.log\n{tail(out)}")
        build = os.path.join(partial, "root", "lib", "modules", rel, "build")
        target = os.readlink(build) if os.path.islink(build) else ""
        if not os.path.isdir(os.path.join(partial, "root", target.lstrip("/")) if target.startswith("/") else build):
            sys.exit(f"fidelity: the root for {rel} has no /lib/modules/{rel}/build after installing the headers")
        gcc = run(["chroot", os.path.join(partial, "root"), "gcc", "--version"], 60)[1].splitlines()[:1]
        info = {"schema_version": K_SCHEMA, "release": rel, "suite": base, "sources": srcs, "packages": pkgs,
                "seconds": round(secs, 1), "bytes": dir_bytes(os.path.join(partial, "root")),
                "gcc": gcc[0] if gcc else "", "made": time.strftime("%Y-%m-%d")}
        json.dump(info, open(os.path.join(partial, "complete.json"), "w"), indent=2)
        shutil.rmtree(d, ignore_errors=True)
        os.rename(partial, d)
        log(f"fidelity: reference root for {rel} made in {secs:.0f} s ({info['bytes'] / 2**20:.0f} MiB)")
        return os.path.join(d, "root"), info


def installed_in(root):
    """The packages dpkg lists as installed in a root (its var/lib/dpkg/status)."""
    out, name = set(), None
    try:
        for l in open(os.path.join(root, "var", "lib", "dpkg", "status"), errors="replace"):
            if l.startswith("Package: "):
                name = l[9:].strip()
            elif l.startswith("Status: ") and l.split()[-1] == "installed" and name:
                out.add(name)
    except OSError:
        pass
    return out


def stated_build_deps(depends):
    """A DKMS package's Depends as the packages apt installs with it, minus DKMS itself, kernel
    headers and other DKMS packages (their modules are other pairs): the first of each alternative,
    without version or architecture qualifiers."""
    out = []
    for group in depends.split(","):
        first = group.split("|")[0].strip()
        name = re.sub(r"\s*\(.*", "", first).split(":")[0].strip()
        if not name or name == "dkms" or name.endswith("-dkms") or name.startswith("linux-headers"):
            continue
        if name not in out:
            out.append(name)
    return out


class NotInstallable(RuntimeError):
    """A DKMS package's Depends that the kernel's suite does not have (a sid package needing
    libelf1t64 on bullseye's 5.10): a user of that suite could not install the package at all."""


def reference_root_with(k, base_root, deps):
    """The reference root with DEPS installed by apt as well (what a machine that installed the
    DKMS package with its Depends has), made once per set: /usr hard-linked to the base root's (dpkg
    replaces a file by renaming a new one over it, so the base is never written), the rest copied;
    apt runs in bubblewrap on the copy with the network. Root only."""
    if not deps:
        return base_root
    rel = k["release"]
    key = hashlib.sha256(",".join(sorted(deps)).encode()).hexdigest()[:12]
    d = os.path.join(work_dir(), "roots", f"{rel}+{key}")
    stamp = os.path.join(d, "complete.json")
    with Locked(os.path.join(work_dir(), "locks", f"root-{rel}+{key}.lock")):
        if os.path.exists(stamp):
            return os.path.join(d, "root")
        if os.geteuid() != 0:
            raise RuntimeError(f"installing a DKMS package's Depends ({', '.join(deps)}) into the reference root needs root")
        partial = os.path.join(work_dir(), "roots", f".partial-{rel}+{key}")
        shutil.rmtree(partial, ignore_errors=True)
        root = os.path.join(partial, "root")
        os.makedirs(root)
        for e in sorted(os.listdir(base_root)):
            src = os.path.join(base_root, e)
            argv = ["cp", "-al" if e == "usr" else "-a", src, root]
            rc, out, _ = run(argv, 1800)
            if rc != 0:
                raise RuntimeError(f"cannot copy {src} for the reference root with {deps}: {tail(out, 3)}")
        script = ("set -e; o='-o APT::Sandbox::User=root'; apt-get $o update -qq; DEBIAN_FRONTEND=noninteractive "
                  "apt-get $o install -y -qq --no-install-recommends \"$@\"; apt-get clean")
        argv = ["bwrap", "--bind", root, "/", "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
                "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf", "--die-with-parent",
                "--setenv", "PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "--setenv", "LC_ALL", "C",
                "bash", "-c", script, "apt"] + list(deps)
        log(f"fidelity: making the reference root for {rel} with {', '.join(deps)} (once per set)")
        rc, out, secs = run(argv, 1800)
        open(os.path.join(partial, "apt.log"), "w").write(out)
        if rc != 0:
            msg = f"apt-get install {' '.join(deps)} in the {rel} reference root failed (exit {rc}): {tail(out, 5)}"
            if re.search(r"Unable to locate package|has no installation candidate|but it is not installable", out):
                raise NotInstallable(msg)
            raise RuntimeError(msg)
        json.dump({"schema_version": K_SCHEMA, "release": rel, "base": base_root, "build_deps": sorted(deps),
                   "seconds": round(secs, 1), "made": time.strftime("%Y-%m-%d")}, open(os.path.join(partial, "complete.json"), "w"), indent=2)
        shutil.rmtree(d, ignore_errors=True)
        os.rename(partial, d)
        return os.path.join(d, "root")


def dir_bytes(path):
    n = 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            try:
                n += os.lstat(os.path.join(dp, f)).st_size
            except OSError:
                pass
    return n


def uname_dir(rel):
    d = os.path.join(work_dir(), "bin", rel)
    p = os.path.join(d, "uname")
    text = UNAME_SH.replace("{release}", rel)
    if not os.path.exists(p) or open(p).read() != text:
        os.makedirs(d, exist_ok=True)
        with open(p + ".new", "w") as f:
            f.write(text)
        os.chmod(p + ".new", 0o755)
        os.rename(p + ".new", p)
    return d


# ---- trees ---------------------------------------------------------------------------------------

def conf_fields(path):
    """PACKAGE_NAME / PACKAGE_VERSION of a dkms.conf, made safe for a path."""
    out = {}
    for l in open(path, errors="replace"):
        m = re.match(r"""\s*(PACKAGE_NAME|PACKAGE_VERSION)=["']?([^"'\s#]*)""", l)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return {k: re.sub(r"[^A-Za-z0-9._+~-]", "_", v) for k, v in out.items() if v}


def prepare_tree(dest, src_root, commit):
    """Make DEST what DKMS would have as /usr/src/<name>-<version> from a checkout: the folder with
    dkms.conf; a dkms.conf kept in dkms/ or a debian/*.dkms template is copied to the top, as the
    repository's install script or dh_dkms does (#MODULE_VERSION# replaced by the commit)."""
    conf_from = None
    top = src_root
    if os.path.exists(os.path.join(src_root, "dkms.conf")):
        conf_from = "dkms.conf"
    else:
        for c in sorted(glob.glob(os.path.join(src_root, "*", "dkms.conf"))):
            d = os.path.dirname(c)
            if any(os.path.exists(os.path.join(d, m)) for m in ("Makefile", "Kbuild", "makefile")):
                top, conf_from = d, os.path.relpath(c, src_root)
            else:
                conf_from = os.path.relpath(c, src_root)
            break
        if conf_from is None:
            c = sorted(glob.glob(os.path.join(src_root, "debian", "*.dkms")))
            if c:
                conf_from = os.path.relpath(c[0], src_root)
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(top, tmp, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    if conf_from and not os.path.exists(os.path.join(tmp, "dkms.conf")):
        text = open(os.path.join(src_root, conf_from), errors="replace").read()
        open(os.path.join(tmp, "dkms.conf"), "w").write(text.replace("#MODULE_VERSION#", "0+" + commit[:12]))
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    return conf_from, os.path.relpath(top, src_root)


def wild_units(wild):
    units = []
    tsv = os.path.join(wild, "trees.tsv")
    if not os.path.exists(tsv):
        return units
    base = os.path.join(work_dir(), "trees", "wild")
    os.makedirs(base, exist_ok=True)
    for l in open(tsv):
        if l.startswith("#") or not l.strip():
            continue
        name, repo, commit, date, folder = l.rstrip("\n").split("\t")[:5]
        folder = folder.split()[0]
        dest = os.path.join(base, name)
        meta = os.path.join(base, name + ".json")
        if not os.path.exists(meta):
            x = tempfile.mkdtemp(dir=base, prefix=".x-")
            subprocess.run(["tar", "xzf", os.path.join(wild, name + ".tar.gz"), "-C", x], check=True)
            conf_from, top = prepare_tree(dest, os.path.normpath(os.path.join(x, name, folder)), commit)
            shutil.rmtree(x)
            json.dump({"conf": conf_from, "folder": os.path.normpath(os.path.join(folder, top))}, open(meta, "w"))
        m = json.load(open(meta))
        units.append({"id": f"wild/{name}", "name": name, "path": dest, "origin": f"{repo}@{commit[:12]}",
                      "conf": m["conf"], "folder": m["folder"]})
    return units


def history_units(wild):
    units = []
    base = os.path.join(work_dir(), "trees", "history")
    os.makedirs(base, exist_ok=True)
    for b in sorted(glob.glob(os.path.join(wild, "history", "*.bundle"))):
        name = os.path.basename(b)[:-len(".bundle")]
        dest = os.path.join(base, name)
        meta = os.path.join(base, name + ".json")
        if not os.path.exists(meta):
            x = tempfile.mkdtemp(dir=base, prefix=".x-")
            subprocess.run(["git", "clone", "-q", b, os.path.join(x, "c")], check=True)
            head = subprocess.run(["git", "-C", os.path.join(x, "c"), "rev-parse", "HEAD"], check=True,
                                  capture_output=True, text=True).stdout.strip()
            branch = subprocess.run(["git", "-C", os.path.join(x, "c"), "rev-parse", "--abbrev-ref", "HEAD"],
                                    check=True, capture_output=True, text=True).stdout.strip()
            date = subprocess.run(["git", "-C", os.path.join(x, "c"), "log", "-1", "--format=%cs"], check=True,
                                  capture_output=True, text=True).stdout.strip()
            conf_from, top = prepare_tree(dest, os.path.join(x, "c"), head)
            shutil.rmtree(x)
            json.dump({"commit": head, "branch": branch, "date": date, "conf": conf_from, "folder": top},
                      open(meta, "w"))
        m = json.load(open(meta))
        units.append({"id": f"history/{name}", "name": name, "path": dest,
                      "origin": f"{m['branch']}@{m['commit'][:12]} ({m['date']})", "conf": m["conf"],
                      "folder": m["folder"]})
    return units


def archive_depends():
    """(package, version) -> Depends of every *-dkms package in the archive lists autodriver keeps."""
    out = {}
    for f in glob.glob(os.path.join(cache_root(), "apt", "lists", "*_binary-amd64_Packages")):
        for para in open(f, errors="replace").read().split("\n\n"):
            fields = dict(l.split(": ", 1) for l in para.splitlines() if ": " in l and not l.startswith(" "))
            if fields.get("Package", "").endswith("-dkms"):
                out[(fields["Package"], fields.get("Version", ""))] = fields.get("Depends", "")
    return out


def dkms_units():
    """Every *-dkms package of the four suites, fetched into the cache by autodriver itself
    (`kb build --dkms --suite S` downloads and unpacks each one, never installs); deduplicated."""
    units, seen = [], {}
    depends = archive_depends()
    for suite in K_DKMS_SUITES:
        d = os.path.join(cache_root(), "dkms", suite)
        stamp = os.path.join(work_dir(), "dkms-fetched-" + suite)
        if not os.path.exists(stamp):
            log(f"fidelity: fetching the *-dkms packages of {suite} (autodriver kb build --dkms --suite {suite})")
            kb = os.path.join(work_dir(), f"kb-{suite}.json")
            rc, out, _ = run([ad_bin(), "kb", "build", "--dkms", "--suite", suite, "-o", kb], 7200)
            if rc != 0:
                log(f"fidelity: warning: kb build --dkms --suite {suite} exit {rc}: {tail(out, 5)}")
            open(stamp, "w").write(f"exit {rc}\n")
        for c in sorted(glob.glob(os.path.join(d, "*", "complete.json"))):
            j = json.load(open(c))
            srcs = sorted(glob.glob(os.path.join(os.path.dirname(c), "root", "usr", "src", "*", "dkms.conf")))
            if not srcs:
                continue
            key = (j["package"], j["version"])
            if key in seen:
                seen[key]["suites"].append(suite)
                continue
            u = {"id": f"dkms/{j['package']}/{j['version']}", "name": j["package"], "path": os.path.dirname(srcs[0]),
                 "origin": f"{j['package']} {j['version']} ({j['suite']})", "conf": "dkms.conf", "folder": ".",
                 "suites": [suite], "depends": depends.get(key, "")}
            seen[key] = u
            units.append(u)
    return units


# ---- one pair ------------------------------------------------------------------------------------

def dkms_identity(unit):
    f = conf_fields(os.path.join(unit["path"], "dkms.conf")) if unit.get("conf") else {}
    name = f.get("PACKAGE_NAME") or unit["name"]
    version = f.get("PACKAGE_VERSION") or "0"
    return name, version


def bind_entries(root, folder):
    """bwrap arguments putting the root's entries of FOLDER back on a tmpfs mounted there."""
    argv = []
    for e in sorted(os.listdir(root + folder)):
        p = os.path.join(root + folder, e)
        argv += ["--symlink", os.readlink(p), f"{folder}/{e}"] if os.path.islink(p) else ["--ro-bind", p, f"{folder}/{e}"]
    return argv


def bwrap_argv(root, rel, tree_copy, pristine, name, version):
    build = f"/var/lib/dkms/{name}/{version}/build"
    argv = ["bwrap", "--ro-bind", root, "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--tmpfs", "/run", "--ro-bind", uname_dir(rel), "/run/fidelity-bin",
            # /var/lib and /usr/src as the machine has them, plus the build copy and the pristine
            # tree where DKMS keeps them (the root is read-only: a tmpfs with the root's entries
            # bound back gives the mount points).
            "--tmpfs", "/var/lib"]
    argv += bind_entries(root, "/var/lib")
    argv += ["--dir", "/var/lib/dkms", "--bind", tree_copy, build, "--tmpfs", "/usr/src"]
    argv += bind_entries(root, "/usr/src")
    argv += ["--ro-bind", pristine, f"/usr/src/{name}-{version}",
             "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv",
             "--setenv", "PATH", "/run/fidelity-bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "--setenv", "HOME", "/root", "--setenv", "LC_ALL", "C", "--setenv", "LANG", "C",
             "--chdir", build]
    return argv, build


def ko_names(folder):
    return sorted({f for _, _, fs in os.walk(folder) for f in fs if f.endswith(".ko")})


def to_placeholders(cmd, build, rel, name, version):
    for real, ph in ((build, "{tree}"), (f"/usr/src/{name}-{version}", "{src}"),
                     (f"/lib/modules/{rel}/build", "{kdir}"), (rel, "{kver}")):
        cmd = cmd.replace(real, ph)
    return cmd


def as_build_cmd(cmd, pre_build):
    """The --build-cmd string that runs CMD: as it is when it is a plain word list, else in sh -c."""
    simple = not re.search(r"[$`;|&<>()\\*?~]", cmd) and not re.match(r"\s*[A-Za-z_]\w*=", cmd)
    if simple and not pre_build:
        return cmd
    script = (f"./{pre_build}; " if pre_build else "") + cmd
    if "'" not in script:
        return f"sh -c '{script}'"
    if '"' not in script:
        return f'sh -c "{script}"'
    return None


def reference_build(unit, k, root, jobs, scratch):
    rel = k["release"]
    name, version = dkms_identity(unit)
    copy = os.path.join(scratch, "build")
    shutil.copytree(unit["path"], copy, symlinks=True)
    argv, build = bwrap_argv(root, rel, copy, unit["path"], name, version)
    rc, out, _ = run(argv + ["bash", "-c", DKMS_SH, "dkms", rel, name, version, str(jobs), "expand"], 120)
    fields = dict(l.split("\t", 1) for l in out.splitlines() if l.startswith("FIDELITY-") and "\t" in l)
    cmd = fields.get("FIDELITY-CMD", "")
    if rc != 0 or not cmd:
        raise RuntimeError(f"the reference sandbox did not start for {unit['id']} on {rel} (exit {rc}): {tail(out, 5)}")
    rc, out, secs = run(["nice", "-n", "10"] + argv + ["bash", "-c", DKMS_SH, "dkms", rel, name, version, str(jobs), "build"],
                        K_REF_TIMEOUT_S)
    kos = ko_names(copy)
    return {"ok": rc == 0 and bool(kos), "exit": rc, "timed_out": rc is None, "modules": kos, "seconds": round(secs, 2),
            "command": cmd, "pre_build": fields.get("FIDELITY-PRE-BUILD", ""),
            "excluded": fields.get("FIDELITY-EXCLUDED", ""), "log": out,
            "build_cmd": as_build_cmd(to_placeholders(cmd, build, rel, name, version),
                                      fields.get("FIDELITY-PRE-BUILD", "")) if unit.get("conf") and cmd else None}


def autodriver_build(unit, line, build_cmd, jobs, scratch, deps):
    argv = ["nice", "-n", "10", ad_bin(), "check", unit["path"], "--kernel", line, "--no-sparse", "--json",
            "-j", str(jobs), "--build-timeout", str(K_REF_TIMEOUT_S)]
    if build_cmd:
        argv += ["--build-cmd", build_cmd]
    if deps:
        argv += ["--build-deps", ",".join(deps)]
    env = dict(os.environ, AUTODRIVER_STORE=os.path.join(scratch, "runs.sqlite"), TMPDIR=scratch)
    rc, out, secs = run(argv, K_REF_TIMEOUT_S + 300, env=env)
    r = {"exit": rc, "seconds": round(secs, 2), "command": shlex.join(argv[3:]), "ok": False, "modules": [],
         "log": out, "summary": ""}
    try:
        d = json.loads(out[out.index("{"):])
        (g,) = d["gates"]["build"]["by_kernel"].values()
    except (ValueError, KeyError, TypeError):
        r["summary"] = "no check JSON: " + tail(out, 3)
        return r
    det = g.get("details") or {}
    r.update(ok=bool(g.get("ok")), modules=sorted({os.path.basename(m) for m in det.get("modules", [])}),
             gate_seconds=round(g.get("elapsed_ms", 0) / 1000, 2), summary=g.get("summary", ""),
             infra_error=g.get("infra_error"), build_command=det.get("command", ""),
             log=det.get("log_tail") or g.get("infra_error") or out)
    return r


def guess_cause(ref, ad, host_release, rel):
    """A first guess from the two logs (the report says it is a guess)."""
    a, b = ad["log"], ref["log"]
    causes = []
    m = re.search(r"\b(gcc|cc|cpp|ld|as)\b:? (command )?not found|\b(gcc|cc)\b: No such file or directory", a)
    if m and not re.search(r"\b(gcc|cc)\b:? (command )?not found", b):
        causes.append(f"`{m.group(1) or m.group(3)}` not found in the sandbox (a configure probe or a $(shell $(CC) ...) check runs it)")
    if host_release and host_release in a and host_release not in b:
        causes.append(f"`uname -r` answers the host's release ({host_release}): the Makefile defaults KVER/KDIR to it")
    if re.search(r"/lib/modules/[^/\s]+/build/?:? No such file|/lib/modules/[^/\s]+/build/?\S*: No such file", a):
        causes.append("no /lib/modules/<release>/build in the sandbox")
    if re.search(r"\bM=/tmp\b|/tmp/Makefile: No such file", a) and not re.search(r"\bM=/tmp\b", b):
        causes.append("`$(PWD)` is /tmp in the sandbox, not the build folder: `M=$(PWD)` builds /tmp")
    if ad.get("infra_error"):
        causes.append("autodriver could not run the build: " + str(ad["infra_error"]))
    if ref["timed_out"] or ad.get("exit") is None:
        causes.append("timeout")
    if not causes and ref["ok"] and ad["ok"]:
        causes.append(f"different modules: reference {ref['modules']}, autodriver {ad['modules']}")
    return "; ".join(causes) or "unknown (see the log tails)"


def stage(text):
    """How far a build got: objects compiled (in the log we have) and its first error line."""
    e = None
    for pat in (r"\berror: ", r"\*\*\* .*Stop\.", r"\b(gcc|cc|ld|as): (command )?not found", r"\bnot found", r"\bError \d+"):
        e = e or re.search(r"^.*" + pat + r".*$", text, re.M)
    first = re.sub(r"^[^\s:]*/", "", e.group(0).strip())[:240] if e else ""  # the message, not the build folder
    return {"compiled": len(re.findall(r"^\s*CC \[M\]", text, re.M)), "first_error": first}


_INSTALLED = {}


def missing_from(root, deps):
    """DEPS that a root does not have installed already."""
    if root not in _INSTALLED:
        _INSTALLED[root] = installed_in(root)
    return [d for d in deps if d not in _INSTALLED[root]]


def do_pair(unit, k, root, jobs, logdir, host_release):
    rel, line = k["release"], k["line"]
    binary = ad_identity()
    # A DKMS package's Depends, on both sides: installed in the reference as apt installs them with
    # the package, given to autodriver as --build-deps (each side: what its root lacks).
    stated = stated_build_deps(unit.get("depends", ""))
    deps = {"stated": stated, "ref": missing_from(root, stated),
            "autodriver": missing_from(k.get("toolchain_root") or "/nonexistent", stated)}
    try:
        root = reference_root_with(k, root, deps["ref"])
    except NotInstallable as e:
        # Not a pair either side can build: no agreement to count.
        return {"schema_version": K_SCHEMA, "tree": unit["id"], "origin": unit["origin"], "kernel": line, "release": rel,
                "agree": None, "not_installable": str(e), "date": time.strftime("%Y-%m-%d %H:%M"),
                "autodriver_binary": binary, "host_release": host_release, "build_deps": deps}
    scratch = tempfile.mkdtemp(prefix="fidelity-", dir=os.path.join(work_dir(), "scratch"))
    try:
        ref = reference_build(unit, k, root, jobs, os.path.join(scratch, "ref"))
        os.makedirs(os.path.join(scratch, "ad"))
        ad = autodriver_build(unit, line, ref["build_cmd"], jobs, os.path.join(scratch, "ad"), deps["autodriver"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    slug = unit["id"].replace("/", "__")
    open(os.path.join(logdir, f"{slug}__{rel}.ref.log"), "w").write(ref["log"])
    open(os.path.join(logdir, f"{slug}__{rel}.autodriver.log"), "w").write(ad["log"])
    for side in (ref, ad):
        side.update(stage(side["log"]))
    agree = (ref["ok"] and ad["ok"] and ref["modules"] == ad["modules"]) or (not ref["ok"] and not ad["ok"])
    rec = {"schema_version": K_SCHEMA, "tree": unit["id"], "origin": unit["origin"], "kernel": line, "release": rel,
           "agree": agree, "date": time.strftime("%Y-%m-%d %H:%M"), "autodriver_binary": binary,
           "host_release": host_release, "build_deps": deps,
           "ref": {k2: v for k2, v in ref.items() if k2 != "log"},
           "autodriver": {k2: v for k2, v in ad.items() if k2 != "log"}}
    if not agree:
        rec["cause_guess"] = guess_cause(ref, ad, host_release, rel)
        rec["ref_tail"] = tail(ref["log"])
        rec["autodriver_tail"] = tail(ad["log"])
    return rec


# ---- report --------------------------------------------------------------------------------------

def logs_of(results):
    """The folder keeping the full logs of a results file: <work>/logs/<its name> (in the cache, also
    for a results file kept in the repository)."""
    return os.path.join(work_dir(), "logs", os.path.splitext(os.path.basename(results))[0])


def scrubbed(text):
    """A record without this machine's paths: the autodriver binary, the cache, the wild trees and
    this checkout named, not spelled."""
    for path, name in ((ad_bin(), "autodriver"), (cache_root(), "<cache>"), (DEFAULT_WILD, "<wild>"),
                       (os.path.dirname(HERE), "<repo>")):
        if path and len(path) > 1:
            text = text.replace(path, name)
    return text


def load_results(path):
    rows = {}
    if os.path.exists(path):
        for l in open(path):
            l = l.strip()
            if not l:
                continue
            try:
                r = json.loads(l)
            except ValueError:
                continue  # a line cut by a crash: that pair runs again
            if r.get("schema_version", 0) > K_SCHEMA:
                sys.exit(f"fidelity: {path} was written by a newer fidelity.py (schema {r['schema_version']})")
            if r.get("kind") == "run":
                rows.setdefault("__runs__", []).append(r)
            else:
                rows[(r["tree"], r["kernel"])] = r
    return rows


def state(side):
    return "ok" if side["ok"] else ("timeout" if side.get("timed_out") or side.get("exit") is None else "fail")


def report(path, binary=None):
    rows = load_results(path)
    runs = rows.pop("__runs__", [])
    if binary:
        rows = {k: r for k, r in rows.items() if r.get("autodriver_binary", "").startswith(binary)}
    uninstallable = {k: r for k, r in rows.items() if r.get("not_installable")}
    rows = {k: r for k, r in rows.items() if k not in uninstallable}
    logdir = logs_of(path)
    for r in rows.values():  # the kept logs, when they are there, say how far each build got
        for side, suffix in (("ref", "ref"), ("autodriver", "autodriver")):
            f = os.path.join(logdir, f"{r['tree'].replace('/', '__')}__{r['release']}.{suffix}.log")
            if os.path.exists(f):
                r[side]["log"] = open(f, errors="replace").read()
                r[side].update(stage(r[side]["log"]))
        if not r["agree"] and "log" in r["ref"] and "log" in r["autodriver"]:
            r["cause_guess"] = guess_cause(r["ref"], r["autodriver"], r.get("host_release") or os.uname().release, r["release"])
    if not rows:
        print(f"no results yet in {path}")
        return
    kernels = [l for l in K_LINES if any(k == l for _, k in rows)]
    trees = sorted({t for t, _ in rows}, key=lambda t: (t.split("/")[0] != "wild", t.split("/")[0] != "history", t))
    print("## Fidelity: autodriver's build sandbox against a Debian machine building with DKMS\n")
    sels = sorted({r["selection"] for r in runs if r.get("selection")})
    print(f"{len(rows)} (tree, kernel) pairs in the results; selections run: {'; '.join(sels) or 'all'}.\n")
    bins = {}
    for r in rows.values():
        bins[r.get("autodriver_binary", "not recorded")] = bins.get(r.get("autodriver_binary", "not recorded"), 0) + 1
    print("autodriver binary (sha256 prefix, install time): " + "; ".join(f"{b}: {n} pairs" for b, n in sorted(bins.items()))
          + (" **(mixed: compare rows of one binary)**" if len(bins) > 1 else "") + ".\n")
    roots = {}
    for r in runs:
        roots.update(r.get("roots", {}))
    if roots:
        print("| kernel | release | reference root suite | made in | size | compiler |")
        print("|---|---|---|---|---|---|")
        for rel, i in sorted(roots.items()):
            print(f"| {i.get('line', '')} | {rel} | {i['suite']} | {i['seconds']:.0f} s | {i['bytes'] / 2**20:.0f} MiB | {i.get('gcc', '')} |")
        print()
    print("| kernel | pairs | agree | of which both build | disagree | reference builds | autodriver builds | median s reference | median s autodriver |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in kernels:
        rs = [r for (t, kk), r in rows.items() if kk == k]
        ag = [r for r in rs if r["agree"]]
        med = lambda xs: f"{statistics.median(xs):.1f}" if xs else "-"
        print(f"| {k} | {len(rs)} | {len(ag)} | {sum(r['ref']['ok'] for r in ag)} | {len(rs) - len(ag)} | "
              f"{sum(r['ref']['ok'] for r in rs)} | {sum(r['autodriver']['ok'] for r in rs)} | "
              f"{med([r['ref']['seconds'] for r in rs])} | {med([r['autodriver']['seconds'] for r in rs])} |")
    print("\nMatrix: the reference build (DKMS on a Debian machine with the headers installed); "
          "**bold** where autodriver disagrees (its result after the slash); - not run.\n")
    print("| tree | " + " | ".join(kernels) + " |")
    print("|---|" + "---|" * len(kernels))
    for t in trees:
        cells = []
        for k in kernels:
            r = rows.get((t, k))
            if not r:
                cells.append("-")
            elif r["agree"]:
                cells.append(state(r["ref"]) + ("*" if r["ref"].get("excluded") else ""))
            else:
                cells.append(f"**{state(r['ref'])} / {state(r['autodriver'])}**")
        print(f"| {t} | " + " | ".join(cells) + " |")
    if any(r["ref"].get("excluded") for r in rows.values()):
        print("\n\\* dkms.conf's BUILD_EXCLUSIVE_KERNEL excludes this kernel: DKMS would not build it (built anyway).")
    with_deps = [r for r in rows.values() if (r.get("build_deps") or {}).get("stated")]
    if with_deps:
        print(f"\n### Pairs whose package states Depends beyond DKMS and the headers ({len(with_deps)})\n")
        print("Installed on both sides (reference: apt in its root; autodriver: `--build-deps`, what its toolchain root lacks).\n")
        print("| tree | kernel | Depends used | reference installed | autodriver --build-deps | reference | autodriver |")
        print("|---|---|---|---|---|---|---|")
        for r in sorted(with_deps, key=lambda r: (r["tree"], K_LINES.index(r["kernel"]))):
            d = r["build_deps"]
            print(f"| {r['tree']} | {r['kernel']} | {', '.join(d['stated'])} | {', '.join(d['ref']) or '-'} | "
                  f"{', '.join(d['autodriver']) or '-'} | {state(r['ref'])} | {state(r['autodriver'])} |")
    masked = [r for r in rows.values() if r["agree"] and not r["ref"]["ok"]
              and (r["ref"].get("compiled", 0) > 0) != (r["autodriver"].get("compiled", 0) > 0)]
    if masked:
        print(f"\n### Both fail, but one of them before compiling anything ({len(masked)})\n")
        print("Counted as agreement; the sandbox's own failure may hide the driver's.\n")
        for r in sorted(masked, key=lambda r: (r["tree"], K_LINES.index(r["kernel"]))):
            print(f"- {r['tree']} on {r['kernel']}: reference `{r['ref'].get('first_error', '')}`; "
                  f"autodriver `{r['autodriver'].get('first_error', '')}`")
    if uninstallable:
        print(f"\n### Not installable on the kernel's suite ({len(uninstallable)}): left out of the counts\n")
        print("The package's Depends do not exist in the suite of the kernel's reference root, so a user of that suite "
              "could not install it.\n")
        for r in sorted(uninstallable.values(), key=lambda r: (r["tree"], K_LINES.index(r["kernel"]))):
            print(f"- {r['tree']} on {r['kernel']}: {', '.join(r['build_deps']['ref'])}")
    dis = [r for r in rows.values() if not r["agree"]]
    print(f"\n### Disagreements ({len(dis)})\n")
    for r in sorted(dis, key=lambda r: (r["tree"], K_LINES.index(r["kernel"]))):
        print(f"- **{r['tree']} on {r['kernel']}** ({r['release']}): reference {state(r['ref'])} "
              f"{r['ref']['modules'] or ''}, autodriver {state(r['autodriver'])} {r['autodriver']['modules'] or ''}"
              f" ({r['autodriver'].get('summary', '')}). Cause (guessed from the logs): {r['cause_guess']}.")
        print(f"  - reference: `{r['ref']['command']}`")
        bc = r["ref"].get("build_cmd")
        q = f'"{bc}"' if bc and "'" in bc and '"' not in bc else shlex.quote(bc or "")
        print(f"  - autodriver: " + (f"`--build-cmd {q}`" if bc else "its kbuild default (`make -k -C KDIR M=TREE modules`)"))
        if os.environ.get("FIDELITY_TAILS", "1") != "0":
            for side in ("ref_tail", "autodriver_tail"):
                print(f"\n  <details><summary>{side.replace('_tail', '')} log, last {K_TAIL} lines</summary>\n")
                print("  ```")
                for l in r[side].replace(cache_root(), "<cache>").splitlines():
                    print("  " + l)
                print("  ```\n  </details>\n")


# ---- main ----------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the header of this script for what the reference build is.")
    ap.add_argument("--kernels", default=",".join(K_LINES), help="comma-separated kernel lines (default: all five)")
    ap.add_argument("--only", action="append", default=[], help="only trees whose id contains SUBSTR (repeatable)")
    ap.add_argument("--sample", type=int, help="a seeded random sample of N pairs, run in that random order (N >= all pairs: every pair, shuffled; named in the results and the report)")
    ap.add_argument("--seed", type=int, default=1, help="seed of --sample (default 1)")
    ap.add_argument("--results", default=os.path.join(work_dir(), "results.jsonl"), help="JSONL results file")
    ap.add_argument("--wild", default=DEFAULT_WILD, help="folder with trees.tsv, *.tar.gz and history/*.bundle")
    ap.add_argument("--no-wild", action="store_true", help="leave out the wild trees and history heads")
    ap.add_argument("--no-dkms", action="store_true", help="leave out Debian's *-dkms packages")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="make -j of both builds (default: CPUs)")
    ap.add_argument("--report", action="store_true", help="print the markdown report of the results file and exit")
    ap.add_argument("--binary", help="with --report: only the pairs of the autodriver binary whose identity starts so")
    ap.add_argument("--prepare", action="store_true", help="only make the reference roots and unpack the trees")
    a = ap.parse_args()
    if a.report:
        report(a.results, a.binary)
        return 0
    lines = [l for l in a.kernels.split(",") if l]
    for l in lines:
        if l not in K_LINES:
            sys.exit(f"fidelity: unknown kernel line '{l}' (lines: {', '.join(K_LINES)})")
    for tool in ("bwrap", "mmdebstrap", "git", "tar"):
        if not shutil.which(tool):
            sys.exit(f"fidelity: {tool} is not installed (apt-get install bubblewrap mmdebstrap git)")
    os.makedirs(os.path.join(work_dir(), "scratch"), exist_ok=True)
    logdir = logs_of(a.results)
    os.makedirs(logdir, exist_ok=True)
    os.nice(5)
    with Locked(os.path.join(work_dir(), "locks", "run.lock"), wait=False):
        kernels = []
        for l in lines:
            k = kernel_info(l)
            if not k or not k.get("headers_fetched"):
                log(f"fidelity: kernel {l} is not fetched (autodriver kernel fetch {l}); left out")
                continue
            k["line"] = l
            kernels.append(k)
        units = []
        if not a.no_wild:
            units += wild_units(a.wild) + history_units(a.wild)
        if not a.no_dkms:
            units += dkms_units()
        if a.only:
            units = [u for u in units if any(s in u["id"] for s in a.only)]
        pairs = [(u, k) for u in units for k in kernels]
        selection = f"{len(units)} trees x kernels {','.join(k['line'] for k in kernels)}"
        if a.only:
            selection += f", --only {','.join(a.only)}"
        if a.sample is not None:
            # Kept in the seeded random order: a run stopped early (and resumed later) has run a
            # prefix of that order, itself a seeded random sample, never the first packages by name.
            pairs = random.Random(a.seed).sample(pairs, min(a.sample, len(pairs)))
            selection = f"sample of {len(pairs)} of {len(units) * len(kernels)} pairs in seeded random order (seed {a.seed}) from {selection}"
        roots = {}
        for k in sorted({k["release"]: k for _, k in pairs}.values(), key=lambda k: lines.index(k["line"])):
            root, info = reference_root(k)
            roots[k["release"]] = (root, dict(info, line=k["line"]))
        if a.prepare:
            log(f"fidelity: prepared {len(units)} trees and {len(roots)} reference roots")
            return 0
        done = load_results(a.results)
        host_release = os.uname().release
        with open(a.results, "a") as out:
            out.write(scrubbed(json.dumps({"kind": "run", "schema_version": K_SCHEMA, "date": time.strftime("%Y-%m-%d %H:%M"),
                                  "autodriver_binary": ad_identity(),
                                  "selection": selection, "roots": {r: i for r, (_, i) in roots.items()}})) + "\n")
            out.flush()
            todo = [(u, k) for u, k in pairs if (u["id"], k["line"]) not in done]
            log(f"fidelity: {selection}: {len(pairs)} pairs, {len(pairs) - len(todo)} already in {a.results}")
            for i, (u, k) in enumerate(todo, 1):
                try:
                    rec = do_pair(u, k, roots[k["release"]][0], a.jobs, logdir, host_release)
                except KeyboardInterrupt:
                    log("fidelity: interrupted; every finished pair is in the results file")
                    return 130
                except RuntimeError as e:
                    log(f"fidelity: {e}")
                    return 2
                out.write(scrubbed(json.dumps(rec)) + "\n")
                out.flush()
                os.fsync(out.fileno())
                if rec.get("not_installable"):
                    log(f"[{i}/{len(todo)}] {u['id']} on {k['line']}: not installable on that kernel's suite (left out)")
                    continue
                say = lambda s: "ok" if s["ok"] else ("timed out" if s.get("timed_out") else "failed")
                log(f"[{i}/{len(todo)}] {u['id']} on {k['line']}: ref {say(rec['ref'])}, autodriver "
                    f"{say(rec['autodriver'])}{'' if rec['agree'] else ' (DISAGREE)'} "
                    f"({rec['ref']['seconds']:.1f} s / {rec['autodriver']['seconds']:.1f} s)")
    return 0


def interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    # Ctrl-C and kill stop the run the same way, also when a shell started it in the background
    # with SIGINT ignored: the current pair's builds are killed, finished pairs are kept.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
