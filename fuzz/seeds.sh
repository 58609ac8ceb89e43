#!/usr/bin/env bash
# Rebuilds the saved seed corpora (corpus/<target>/) from the project's own fixtures and small
# generated inputs, beside the inputs saved from fuzzing runs.
# Usage: fuzz/seeds.sh path/to/tracex   (from anywhere; the repo root is found from this
# script). Review and commit what changes; keep every file small.
set -euo pipefail
tracex="$(realpath "$1")"
cd "$(dirname "$0")/.."
root="$PWD"
c=fuzz/corpus
# Files already there stay: inputs saved from fuzzing runs (crashes fixed, reduced) are
# regression tests too.
mkdir -p "$c"/{chrome,chrome_gzip,folded,folded_extended,cupti,otf2,nsys,nsys_pages,perfetto}

for f in fixtures/chrome/*.json fixtures/chrome/*.txt fixtures/otf2/*.json fixtures/demo/*.json; do
  cp "$f" "$c/chrome/"
  gzip -9 -n -c "$f" >"$c/chrome_gzip/$(basename "$f").gz"
done
cp fixtures/folded/*.folded fixtures/folded/*.txt "$c/folded/"
cp fixtures/folded/extended_*.txt fixtures/cupti/*_cpu.txt "$c/folded_extended/"
cp fixtures/cupti/*.json fixtures/cupti/*.txt "$c/cupti/"
cp fixtures/perfetto/*.pftrace "$c/perfetto/"

# OTF2: archives, packed as the target reads them (fuzz_targets/otf2.rs).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pack_otf2() {
  python3 - "$1" "$2" <<'PY'
import struct, sys, os
d, out = sys.argv[1], sys.argv[2]
files = ["traces.otf2", "traces.def", "traces/0.evt", "traces/0.def", "traces/1.evt", "traces/1.def"]
with open(out, "wb") as o:
    for f in files:
        p = os.path.join(d, f)
        b = open(p, "rb").read() if os.path.exists(p) else b""
        o.write(struct.pack("<I", len(b)) + b)
PY
}
for f in fixtures/chrome/all_phases.json fixtures/otf2/tf_trace.json fixtures/chrome/partial_overlap.json; do
  name=$(basename "$f" .json)
  "$tracex" --quiet convert "$f" "$tmp/$name" --to otf2
  pack_otf2 "$tmp/$name" "$c/otf2/$name.bin"
done
# and the project's own Score-P-like archive (MPI, I/O, threading records; first two locations)
pack_otf2 fixtures/otf2/mpi_io_threads "$c/otf2/mpi_io_threads.bin"

# nsys: the SQL that builds the test databases of tests/nsys.rs (schema + one part each).
python3 - tests/nsys.rs "$c/nsys" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
consts = dict(re.findall(r'const (\w+): &str = "(.*?)";', src, re.S))
for part in ["CUDA", "NVTX", "CPU", "BAD"]:
    sql = consts["DDL"] + consts["NAMES"] + consts[part]
    open(f"{sys.argv[2]}/{part.lower()}.sql", "w").write(sql.replace('\\"', '"'))
PY
# nsys_pages: the same databases as files with 512-byte pages, and one whose runtime table is
# a b-tree three levels deep.
for sql in "$c"/nsys/*.sql; do
  out="$c/nsys_pages/$(basename "$sql" .sql).sqlite"
  rm -f "$out"
  python3 - "$sql" "$out" <<'PY'
import sqlite3, sys
conn = sqlite3.connect(sys.argv[2])
conn.execute("PRAGMA page_size = 512")
conn.executescript(open(sys.argv[1]).read())
conn.commit()
PY
done
rm -f "$c/nsys_pages/deep.sqlite"
python3 - "$c/nsys/cuda.sql" "$c/nsys_pages/deep.sqlite" <<'PY'
import sqlite3, sys
conn = sqlite3.connect(sys.argv[2])
conn.execute("PRAGMA page_size = 512")
conn.executescript(open(sys.argv[1]).read())
for i in range(1500):
    conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (?, ?, 0, ?, ?, 1, 0)", (10 * i, 10 * i + 5, (1 << 24) | 1, 100 + i))
conn.commit()
PY
du -sh "$c"/* >&2
