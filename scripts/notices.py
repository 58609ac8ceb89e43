#!/usr/bin/env python3
"""Writes THIRD-PARTY-NOTICES for what the tracex binary contains besides its own code.

The release archive, the wheel and the Docker image ship one binary with every Rust dependency,
SQLite (rusqlite's bundled build) and libotf2 (linked statically) inside. Their licences (MIT,
BSD, Apache) ask that their notices travel with the binary, so this lists each crate in the
binary's dependency graph (normal dependencies only: build and dev ones are not shipped) with its
licence and the licence files of its source package, then libotf2's Debian copyright file and
SQLite's dedication.

Usage: scripts/notices.py OUT   (needs cargo; reads Cargo.lock, does not build)
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OTF2_COPYRIGHT = pathlib.Path("/usr/share/doc/libotf2-trace-dev/copyright")
SQLITE = """SQLite (bundled by the libsqlite3-sys crate)
The author disclaims copyright to this source code. In place of a legal notice, here is a
blessing: May you do good and not evil. May you find forgiveness for yourself and forgive
others. May you share freely, never taking more than you give. (https://sqlite.org/copyright.html)
"""


def shipped_packages(meta):
    """The packages reachable from the tracex binary through normal dependencies."""
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = next(p["id"] for p in meta["packages"] if p["name"] == "tracex"
                and pathlib.Path(p["manifest_path"]).parent == ROOT)
    seen, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                todo.append(dep["pkg"])
    return [p for p in meta["packages"] if p["id"] in seen and p["source"] is not None]


def licence_files(pkg):
    d = pathlib.Path(pkg["manifest_path"]).parent
    names = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "UNLICENSE")
    return sorted(f for f in d.iterdir() if f.is_file() and f.name.upper().startswith(names))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/notices.py OUT")
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"], cwd=ROOT,
        check=True, capture_output=True, text=True).stdout)
    pkgs = sorted(shipped_packages(meta), key=lambda p: (p["name"], p["version"]))
    out = ["THIRD-PARTY NOTICES for the tracex binary",
           "=" * 42, "",
           "tracex itself is MIT OR Apache-2.0 (LICENSE-MIT, LICENSE-APACHE). The binary also",
           f"contains the {len(pkgs)} Rust crates below, libotf2 and SQLite.", ""]
    missing = []
    for p in pkgs:
        out.append(f"{p['name']} {p['version']}: {p.get('license') or p.get('license_file')}"
                   f" ({p.get('repository') or 'crates.io'})")
    out.append("")
    for p in pkgs:
        files = licence_files(p)
        if not files:
            missing.append(p["name"])
            continue
        for f in files:
            out += ["-" * 78, f"{p['name']} {p['version']}: {f.name}", "-" * 78,
                    f.read_text(errors="replace").rstrip(), ""]
    out += ["-" * 78, "libotf2 (OTF2, linked statically): Debian copyright file", "-" * 78]
    if OTF2_COPYRIGHT.is_file():
        out.append(OTF2_COPYRIGHT.read_text(errors="replace").rstrip())
    else:
        sys.exit(f"notices: {OTF2_COPYRIGHT} not found (install libotf2-trace-dev)")
    out += ["", "-" * 78, SQLITE]
    if missing:
        out += ["", "Crates whose source package has no licence file (their licence is the SPDX "
                "expression listed above): " + ", ".join(missing)]
    pathlib.Path(sys.argv[1]).write_text("\n".join(out) + "\n")
    print(f"notices: {len(pkgs)} crates, {len(pkgs) - len(missing)} with licence files",
          file=sys.stderr)


if __name__ == "__main__":
    main()
