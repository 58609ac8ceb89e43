#!/usr/bin/env bash
# Builds target/pgo/tracex: tracex optimised with a profile of its own runs (profile-guided
# optimisation). The conversions are bound by branchy per-event code (row decoding, the merge of
# streams, JSON formatting), where the compiler's guesses of hot paths and inlining decide a
# tenth of the time: on the 2-core benchmark machine the profiled build converted the 1M-kernel
# nsys exports 6-9% faster with 8-10% less CPU, Chrome JSON 12% faster, the 20k-launch merge 8%
# (README, performance). `make bench`, `make install` and `make dist` use it.
#
# How: an instrumented build (-Cprofile-generate) runs every importer and exporter on traces
# that tracex-gen draws (small ones, about a minute in all) and on the bundled fixtures; LLVM's
# llvm-profdata (rustup's llvm-tools component, which matches rustc's LLVM; scripts/setup.sh
# adds it) merges the counts; the release build reads them (-Cprofile-use). Only the tracex
# crates and their Rust dependencies are profiled (--target keeps build scripts out); SQLite
# and libotf2 are C and built as usual.
#
# Usage: scripts/pgo.sh [--check]
#   --check  converts the same traces with target/release/tracex (built beforehand) and with the
#            profiled build, and fails unless every output is byte-identical (`make test` runs it).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
check=false
[ "${1:-}" = --check ] && check=true

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "pgo: $profdata not found: scripts/setup.sh adds it (rustup component add llvm-tools)" >&2
  if $check; then
    echo "pgo: skipped the check of the profiled build" >&2
    exit 0
  fi
  exit 1
fi
work="$PWD/target/pgo-work"
inputs="$work/in"
mkdir -p "$inputs"

cargo build --release --locked -q -p tracex-gen
gen=target/release/tracex-gen
# the training traces: every importer, sorted and unsorted storage, both GPU merge inputs
[ -f "$inputs/nsys.sqlite" ] || "$gen" nsys --kernels 250000 --nvtx 25000 --out "$inputs/nsys.sqlite"
[ -f "$inputs/nsys-unsorted.sqlite" ] ||
  "$gen" nsys --kernels 250000 --nvtx 25000 --unsorted --out "$inputs/nsys-unsorted.sqlite"
[ -f "$inputs/nsys-shuffled.sqlite" ] ||
  "$gen" nsys --kernels 250000 --nvtx 25000 --shuffle --overlap 11000 --out "$inputs/nsys-shuffled.sqlite"
[ -f "$inputs/chrome.json" ] || "$gen" chrome --events 200000 --out "$inputs/chrome.json"
[ -f "$inputs/gpu.json" ] ||
  "$gen" cupti --launches 50000 --cpu "$inputs/cpu.txt" --gpu "$inputs/gpu.json"
[ -f "$inputs/gpu.txt" ] ||
  "$gen" cupti --launches 50000 --cpu "$inputs/cpu.txt" --gpu "$inputs/gpu.txt" --gpu-format text
[ -f "$inputs/android.pftrace" ] || "$gen" android --markers 200000 --out "$inputs/android.pftrace"

# train BIN OUTDIR: the conversions the profile is made of (and the ones --check compares)
train() {
  local bin=$1 o=$2 in=$inputs f i=0
  # successful runs end through the usual exit, whose handlers write the profile (src/main.rs)
  export TRACEX_FULL_EXIT=1
  rm -rf "$o"
  mkdir -p "$o"
  run() { "$bin" -q convert -f "$@"; }
  run "$in/nsys.sqlite" "$o/nsys.json"
  run "$in/nsys.sqlite" "$o/nsys.json.gz"
  run "$in/nsys.sqlite" "$o/nsys.pftrace"
  run "$in/nsys.sqlite" "$o/nsys.otf2"
  run "$in/nsys.sqlite" "$o/nsys.folded"
  run "$in/nsys-unsorted.sqlite" "$o/nsys-unsorted.json"
  run "$in/nsys-shuffled.sqlite" "$o/nsys-shuffled.json.gz"
  "$bin" info "$in/nsys-shuffled.sqlite" >"$o/nsys-shuffled.info"
  run "$in/chrome.json" "$o/chrome.json"
  run "$in/chrome.json" "$o/chrome.json.gz"
  run "$in/chrome.json" "$o/chrome.otf2"
  run "$in/chrome.json" "$o/chrome.pftrace"
  run "$o/chrome.json.gz" "$o/chrome-gz.json"
  run "$o/chrome.otf2" "$o/otf2.json"
  run "$o/nsys.pftrace" "$o/pftrace.json"
  run "$in/android.pftrace" "$o/android.json"
  run "$in/cpu.txt" "$in/gpu.json" "$o/merge.folded"
  run "$in/cpu.txt" "$in/gpu.txt" "$o/merge-text.folded"
  run --weight gpu-us "$in/cpu.txt" "$in/gpu.json" "$o/merge-us.folded"
  run "$o/merge.folded" "$o/folded.json"
  while IFS= read -r f; do
    i=$((i + 1))
    run "$f" "$o/fixture-$i.json" 2>/dev/null || echo "exit $?" >"$o/fixture-$i.failed"
  done < <(find fixtures -type f ! -name '*.md' ! -name '*.py' ! -name '*.def' ! -name '*.evt' | sort)
}

# the instrumented build, outside target/release (RUSTFLAGS would rebuild it); its profile is
# made again only when it changed
RUSTFLAGS="-Cprofile-generate=$work/raw" \
  cargo build --release --locked -q -p tracex --target "$host" --target-dir target/pgo-gen
instrumented="target/pgo-gen/$host/release/tracex"
made_by=$(cat "$instrumented" "$self" | sha256sum | cut -c1-16)
if [ "$(cat "$work/profile.of" 2>/dev/null)" != "$made_by" ]; then
  rm -rf "$work/raw" "$work"/tracex-*.profdata "$work/profile.of"
  train "$instrumented" "$work/out-train"
  "$profdata" merge -o "$work/tracex.profdata" "$work/raw"
  # the profile must come from the successful runs, which commit an output: tracex ends them
  # with _exit, which skips the at-exit handler that writes the profile, unless
  # TRACEX_FULL_EXIT is set (train does); a profile of the failing runs only made a build a
  # quarter slower than the plain release build (the name's part that both of rustc's symbol
  # manglings, legacy and v0, spell alike)
  if ! "$profdata" show --counts --function=7OutFile6commit "$work/tracex.profdata" \
    | grep -Eq 'Block counts: \[[1-9]'; then
    echo "pgo: the profile holds no successful conversion (no output committed)" >&2
    exit 1
  fi
  # named after its content: cargo does not watch the file, but rebuilds when RUSTFLAGS change
  mv "$work/tracex.profdata" "$work/tracex-$(sha256sum <"$work/tracex.profdata" | cut -c1-16).profdata"
  echo "$made_by" >"$work/profile.of"
fi
profile=$(ls "$work"/tracex-*.profdata)

RUSTFLAGS="-Cprofile-use=$profile" \
  cargo build --release --locked -q -p tracex --target "$host" --target-dir target/pgo
cp "target/pgo/$host/release/tracex" target/pgo/tracex
echo "pgo: target/pgo/tracex"

if $check; then
  train target/release/tracex "$work/out-release"
  train target/pgo/tracex "$work/out-pgo"
  differ=false
  diff -r -x '*.otf2' "$work/out-release" "$work/out-pgo" >&2 || differ=true
  # an OTF2 anchor file holds a random trace identifier: its other properties must match
  anchor() { otf2-print -A "$1" | grep -v '^Trace identifier'; }
  for a in "$work"/out-release/*.otf2; do
    diff <(anchor "$a") <(anchor "$work/out-pgo/${a##*/}") >&2 || differ=true
  done
  if $differ; then
    echo "pgo: the profiled build's outputs differ from target/release/tracex's (above)" >&2
    exit 1
  fi
  echo "pgo: $(find "$work/out-pgo" -type f | wc -l) output files byte-identical to target/release/tracex's"
fi
