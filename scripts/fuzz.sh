#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz, libFuzzer, AddressSanitizer) for every reader.
#   scripts/fuzz.sh regress          replay every saved corpus once (part of `make test`)
#   scripts/fuzz.sh run [SECONDS]    fuzz each target for SECONDS (default 180; `make fuzz`),
#                                    then print executions and coverage per target
# New inputs found by `run` go to fuzz/target/grown/<target>, not into the saved corpora (kept
# small); crashes go to fuzz/artifacts/<target>/ — add a reduced copy to corpus/<target>/ with
# the fix, so `make test` replays it from then on.
#
# cargo-fuzz passes flags (-Zsanitizer=address, coverage instrumentation) that only nightly
# rustc accepts; RUSTC_BOOTSTRAP=1 lets the stable toolchain take them.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

TARGETS=(chrome chrome_gzip folded folded_extended cupti otf2 nsys nsys_pages perfetto)
# Contract of every target (fuzz/src/lib.rs): no panic, no hang, memory under the bound.
# -malloc_limit_mb only high: libotf2 callocs counts read from a corrupt anchor (22 GB) that the
# kernel maps lazily or refuses; what matters is the resident memory (-rss_limit_mb).
LIMITS=(-rss_limit_mb=1024 -malloc_limit_mb=65536 -timeout=20)
# A malloc too large to serve returns NULL, as glibc's does: libotf2 asks for sizes read from
# a corrupt anchor (30 GB) and reports MEM_ALLOC_FAILED, which tracex turns into a clean error.
# A Rust allocation that fails still aborts, and is reported as a crash.
export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1}"
# libotf2's own leaks on its failure paths (see the file).
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/lsan.supp:print_suppressions=0}"

mode="${1:-regress}"
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: cargo-fuzz is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
# Debug assertions on, optimised; the same build serves both modes.
cargo fuzz build -O --debug-assertions >&2
bin_dir="target/x86_64-unknown-linux-gnu/release"

case "$mode" in
  regress)
    for t in "${TARGETS[@]}"; do
      n=$(find "corpus/$t" -type f | wc -l)
      echo "fuzz regress: $t over $n saved inputs" >&2
      mkdir -p "artifacts/$t"
      "$bin_dir/$t" "${LIMITS[@]}" -runs=0 -artifact_prefix="artifacts/$t/" "corpus/$t" \
        >"target/regress-$t.log" 2>&1 || { tail -40 "target/regress-$t.log" >&2; exit 1; }
    done
    echo "fuzz regress: ${#TARGETS[@]} targets replayed their corpora without a failure" >&2
    ;;
  run)
    secs="${2:-180}"
    printf '%-16s %12s %8s %8s %8s\n' target executions exec/s cov ft
    for t in "${TARGETS[@]}"; do
      mkdir -p "target/grown/$t" "artifacts/$t"
      log="target/fuzz-$t.log"
      dict=()
      [ -f "dict/$t.dict" ] && dict=(-dict="dict/$t.dict")
      nice "$bin_dir/$t" "${LIMITS[@]}" "${dict[@]}" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" "target/grown/$t" "corpus/$t" >"$log" 2>&1 || {
        echo "fuzz: $t failed, see fuzz/$log and fuzz/artifacts/$t/" >&2
        tail -40 "$log" >&2
        exit 1
      }
      execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
      speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
      last=$(grep -E '^#[0-9]+' "$log" | tail -1)
      cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo '?')
      ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo '?')
      printf '%-16s %12s %8s %8s %8s\n' "$t" "$execs" "$speed" "$cov" "$ft"
    done
    ;;
  *)
    echo "usage: scripts/fuzz.sh regress | run [SECONDS]" >&2
    exit 2
    ;;
esac
