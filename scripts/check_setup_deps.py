#!/usr/bin/python3
"""Checks that scripts/setup.sh installs every Debian package the configured build uses.

A machine that has been used for a while holds packages someone installed by hand, so a green build
there proves little about a fresh one. This maps every absolute /usr path of the configured build
(the FILEPATH/PATH values of CMakeCache.txt: found libraries, headers, programs and CMake package
directories) to the Debian package that owns it (`dpkg -S`) and reports each owner that setup.sh
neither names in its PACKAGES=( ... ) list nor pulls in as a hard dependency (Depends and
Pre-Depends, followed recursively; Recommends do not count, since setup.sh installs with
--no-install-recommends).

    scripts/check_setup_deps.py [--build DIR] [--setup FILE] [--fresh LIST]

--setup may name any copy of setup.sh (tests run it on an old one); --fresh a file of packages a new
machine already has ("apt<TAB>name<TAB>version" or one name per line), which need not be named.
Exit 0: nothing missing. Exit 1: prints each missing package with the paths that need it.
Exit 2: the inputs cannot be read.
"""
import argparse
import pathlib
import re
import subprocess
import sys

PACKAGE_WORD = re.compile(r"^[a-z0-9][a-z0-9.+-]+$")


def named_packages(setup_text):
    """The words of setup.sh's PACKAGES=( ... ) array (comments stripped)."""
    m = re.search(r"^PACKAGES=\((.*?)\)", setup_text, re.S | re.M)
    if not m:
        return None
    words = []
    for line in m.group(1).splitlines():
        words += line.split("#", 1)[0].split()
    return {w for w in words if PACKAGE_WORD.match(w)}


def build_paths(cache_text):
    """Absolute paths under /usr (not /usr/local, which is not Debian's) that the build was configured with."""
    paths = set()
    for line in cache_text.splitlines():
        m = re.match(r"^[A-Za-z0-9_]+:(?:FILEPATH|PATH)=(.*)$", line)
        if not m or "NOTFOUND" in m.group(1):
            continue
        for p in m.group(1).split(";"):
            if p.startswith("/usr/") and not p.startswith("/usr/local/"):
                paths.add(p)
    return sorted(paths)


def owners(paths):
    """{path: its one owning package} for the paths a single package owns (one `dpkg -S` call; a
    path shared by several packages, like /usr/include, or owned by none says nothing)."""
    r = subprocess.run(["dpkg", "-S"] + list(paths), capture_output=True, text=True)
    found = {}
    for line in r.stdout.splitlines():
        pkgs, _, owned = line.partition(": ")
        owned = owned.strip()
        if owned in paths:  # dpkg -S matches patterns; keep exact ownership only
            found.setdefault(owned, set()).update(p.strip().split(":")[0] for p in pkgs.split(","))
    return {path: pkgs.pop() for path, pkgs in found.items() if len(pkgs) == 1}


def installed_depends():
    """{package: [alternatives per dependency]} for every installed package, from dpkg's database
    (it needs no apt lists, which a machine may have cleaned), with what each package Provides."""
    fmt = "${Package}\t${Provides}\t${Pre-Depends}, ${Depends}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True).stdout
    deps, provides = {}, {}
    for line in out.splitlines():
        name, prov, dep = (line.split("\t") + ["", ""])[:3]
        alts = []
        for clause in dep.split(","):
            names = [re.sub(r"[\s(:].*", "", a.strip()) for a in clause.split("|")]
            names = [n for n in names if n]
            if names:
                alts.append(names)
        deps[name] = alts
        for p in prov.split(","):
            p = re.sub(r"[\s(].*", "", p.strip())
            if p:
                provides.setdefault(p, set()).add(name)
    return deps, provides


def closure(roots, deps, provides):
    """Every package reachable from `roots` through hard dependencies (every alternative counts)."""
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for alts in deps.get(p, ()):
            for a in alts:
                todo.append(a)
                todo.extend(provides.get(a, ()))
    return seen


def fresh_packages(path):
    names = set()
    for line in pathlib.Path(path).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split("\t")
        names.add((f[1] if len(f) > 1 and f[0] == "apt" else f[0]).split(":")[0])
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="the configured build directory (default: build)")
    ap.add_argument("--setup", default="scripts/setup.sh", help="the setup script to check (default: scripts/setup.sh)")
    ap.add_argument("--fresh", help="packages a fresh machine already has")
    args = ap.parse_args()

    cache = pathlib.Path(args.build) / "CMakeCache.txt"
    if not cache.is_file():
        print("check_setup_deps: no %s (configure the build first)" % cache)
        return 2
    try:
        named = named_packages(pathlib.Path(args.setup).read_text())
    except OSError as e:
        print("check_setup_deps: cannot read %s: %s" % (args.setup, e.strerror))
        return 2
    if not named:
        print("check_setup_deps: found no PACKAGES=( ... ) list in %s" % args.setup)
        return 2
    deps, provides = installed_depends()
    covered = closure(named, deps, provides)
    if args.fresh:
        covered |= fresh_packages(args.fresh)

    missing = {}
    paths = build_paths(cache.read_text())
    for path, pkg in sorted(owners(paths).items()):
        if pkg not in covered:
            missing.setdefault(pkg, []).append(path)
    if not missing:
        print("check_setup_deps: every Debian package the build uses is installed by %s" % args.setup)
        return 0
    print("check_setup_deps: the build uses packages that %s does not install:" % args.setup)
    for pkg in sorted(missing):
        print("  %s  <- %s" % (pkg, ", ".join(missing[pkg])))
    print("add them to the PACKAGES list of %s (they were installed by hand, or only recommended)" % args.setup)
    return 1


if __name__ == "__main__":
    sys.exit(main())
