#!/usr/bin/env bash
# Converts generated large traces and prints throughput and peak RSS for each conversion.
# Usage: scripts/bench.sh [section...]   (sections: chrome otf2 otf2-mpi merge nsys perfetto android
# series; default: all)
# otf2-mpi: a Score-P-shaped MPI archive (scripts/gen-scorep-mpi.py, needs python3-otf2).
# perfetto: set TRACEX_NSYS_PERFETTER=/path/to/nsys-perfetter (a checkout, not part of tracex) to
# also time it on the same export.
# merge: set TRACEX_REFERENCE_MERGE=/path/to/merge_gpu_cpu_trace.py to also time the reference
# script (not part of tracex) on 20k launches: src/xpu/flamegraph/ of
# https://github.com/eunomia-bpf/bpf-developer-tutorial (the current version matches by thread
# and weighs by µs, which tracex's --weight gpu-us reproduces).
# Every job prints wall time (the median and range of TRACEX_BENCH_ROUNDS rounds, default 3),
# CPU time (user + system), peak RSS and input MB/s, of the profile-guided build (scripts/pgo.sh;
# TRACEX_PGO=0: of the plain release build).
# tracex runs under SCHED_BATCH on Linux (src/sched.rs); TRACEX_SCHED_BATCH=0 bench.sh measures it
# under the policy it was started with, as builds before f6af0c3 ran.
#
# Peers (never part of the project; measured in the same run, with the ratio peer/tracex):
#   TRACEX_PEER_NSYS_CHROME=/path/to/nsys-chrome   nCompass's converter: `python3 -m venv v &&
#       v/bin/pip install ncompass==0.1.15`, the binary is v/lib/python3*/site-packages/ncompass/bin/
#       nsys-chrome (a release build of ncompass_rust/trace_converters/nsys-chrome is faster)
#   TRACEX_PEER_NSYS2JSON=/path/to/nsys2json.py    `git clone https://github.com/chenyu-jiang/nsys2json`
#       (run with python3: the interpreter itself, see `py` below)
# Inputs are generated under bench-out/ (not committed). Run by `make bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p tracex -p tracex-gen
gen=target/release/tracex-gen
# the profile-guided build that make install and make dist ship (scripts/pgo.sh);
# TRACEX_PGO=0 measures the plain release build instead
if [ "${TRACEX_PGO:-1}" = 0 ]; then
  bin=target/release/tracex
else
  scripts/pgo.sh >&2
  bin=target/pgo/tracex
fi
echo "tracex: $bin"
out=bench-out
mkdir -p "$out"
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(chrome otf2 otf2-mpi merge nsys perfetto android series)

# measure [--fresh OUTPUT] LABEL INPUT_BYTES CMD...: runs CMD under /usr/bin/time $rounds
# times (OUTPUT removed before each) and prints the median wall time with the range, the CPU
# time of that median round, MB/s and the largest peak RSS; leaves the median's wall and CPU
# seconds in $last_wall and $last_cpu. With $repeat > 1, a round runs CMD that many times over
# and counts the mean of one run (jobs of tens of ms, below the timer's 10 ms).
# One run is not a figure on these machines: the same nsys job took 2.42 s and 3.22 s (4.4 and
# 6.0 s of CPU) within one bench.sh run on a quiet 2-core machine. TRACEX_BENCH_ROUNDS=1 for a
# quick look.
rounds=${TRACEX_BENCH_ROUNDS:-3}
repeat=1
last_wall=0 last_cpu=0
measure() {
  local fresh_out=
  if [ "$1" = --fresh ]; then fresh_out=$2; shift 2; fi
  local label=$1 bytes=$2; shift 2
  local t; t=$(mktemp)
  local runs=() i secs kb user sys
  for ((i = 0; i < rounds; i++)); do
    # the last job's output is written back now, not by the kernel's flusher during this job
    fresh ${fresh_out:+"$fresh_out"}
    /usr/bin/time -f "%e %M %U %S" -o "$t" bash -c \
      'n=$1; shift; for ((j = 0; j < n; j++)); do "$@" || exit; done' _ "$repeat" "$@" >/dev/null
    read -r secs kb user sys < "$t"
    runs+=("$(awk -v s="$secs" -v u="$user" -v y="$sys" -v n="$repeat" \
      'BEGIN { printf "%.4f %.4f", s / n, (u + y) / n }') $kb")
  done
  rm -f "$t"
  # median by wall time; the range; the largest peak RSS of all rounds
  read -r last_wall last_cpu kb lo hi < <(printf '%s\n' "${runs[@]}" | sort -n -k1,1 | awk '
    { w[NR] = $1; c[NR] = $2; if ($3 > k) k = $3 }
    END { m = int((NR + 1) / 2); print w[m], c[m], k, w[1], w[NR] }')
  # the mean of repeated runs with four decimals
  awk -v l="$label" -v s="$last_wall" -v c="$last_cpu" -v k="$kb" -v b="$bytes" \
    -v lo="$lo" -v hi="$hi" -v n="$rounds" -v rep="$repeat" 'BEGIN {
      f = (rep > 1 ? "%.4f" : "%.2f")
      r = (n > 1 ? sprintf(" (" f "-" f ")", lo, hi) : "")
      printf "%-48s %7s s%s (cpu %6s s) %9.1f MB/s %8.1f MB peak RSS\n", l, sprintf(f, s), r,
        sprintf(f, c), (s > 0 ? b / 1e6 / s : 0), k / 1024 }'
}

# versus LABEL INPUT_BYTES CMD...: measures a peer (one round, as it takes tens of seconds)
# right after the tracex job just measured and prints how many times slower the peer is than that
# job's median, in wall and in CPU time.
versus() {
  local wall=$last_wall cpu=$last_cpu label=$1
  local rounds=1
  measure "$@"
  awk -v l="  $label / tracex" -v w="$last_wall" -v tw="$wall" -v c="$last_cpu" -v tc="$cpu" \
    'BEGIN { printf "%-48s %7.1fx wall, %5.1fx cpu\n", l, (tw > 0 ? w / tw : 0), (tc > 0 ? c / tc : 0) }'
}

size() { stat -c %s "$1"; }

# The Python that runs the Python peers: the interpreter `python3` names, itself. A launcher
# in front of it (pyenv's shim, a bash script that runs pyenv first) added 60-90 ms to every
# run of the 20k-launch reference merge, a fifth of its time, which no user of it pays; a
# machine without one runs the same binary. TRACEX_PEER_PYTHON=/path/to/python3 picks another.
py=${TRACEX_PEER_PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}

# The machine's speed now: a fixed single-thread Python loop (CPU seconds), alone and as two
# copies at once. Cloud machines of the same kind differ by a third or more from hour to hour
# (stop 33 saw 2.4-3.1 s alone); figures are comparable where these lines are.
calibrate() {
  local loop='import time
t = time.process_time()
s = 0
for i in range(20_000_000): s += i
print(f"{time.process_time() - t:.2f}")'
  local one two
  one=$(python3 -c "$loop")
  two=$( (python3 -c "$loop" & python3 -c "$loop"; wait) | tr '\n' ' ')
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//');" \
    "reference loop ${one} s alone, ${two}s as two copies"
}
calibrate

# fresh PATH...: removes the outputs of an earlier job or run before a job writes them again.
# Replacing a file of 1 GB made the job pay for freeing it (ext4 truncates the old file's pages
# and, on a rename over an existing file, writes the new one back at once: 0.3-1 s of one core).
fresh() { rm -f -- "$@"; sync; }

# nsys2json.py and nsys-chrome on the nsys export $1, right after tracex's job on it (each only
# when its path is set).
vs_nsys2json() {
  [ -z "${TRACEX_PEER_NSYS2JSON:-}" ] || fresh "$out/nsys-1m.peer.json"
  [ -z "${TRACEX_PEER_NSYS2JSON:-}" ] || versus "nsys2json.py" "$(size "$1")" \
    "$py" "$TRACEX_PEER_NSYS2JSON" -f "$1" -t kernel nvtx nvtx-kernel cuda-api -o "$out/nsys-1m.peer.json"
}
vs_nsys_chrome() {
  [ -z "${TRACEX_PEER_NSYS_CHROME:-}" ] || fresh "$out/nsys-1m.peer.json.gz"
  [ -z "${TRACEX_PEER_NSYS_CHROME:-}" ] || versus "nsys-chrome" "$(size "$1")" \
    "$TRACEX_PEER_NSYS_CHROME" "$1" -o "$out/nsys-1m.peer.json.gz"
}
# Bytes of an OTF2 archive OUT.otf2 (anchor, definitions and event directory).
archive_size() { du -cb "$1" "${1%.otf2}.def" "${1%.otf2}" | tail -1 | cut -f1; }

for s in "${sections[@]}"; do
  case "$s" in
    chrome)
      f=$out/chrome-2m.json
      [ -f "$f" ] || "$gen" chrome --events 2000000 --out "$f"
      echo "== chrome: $(size "$f") bytes, 2M events"
      "$gen" measure "$f"
      measure "import only (tracex info)" "$(size "$f")" "$bin" -q info "$f"
      measure --fresh "$out/chrome-2m.out.json" "chrome -> chrome json" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/chrome-2m.out.json"
      measure --fresh "$out/chrome-2m.out.json.gz" "chrome -> chrome json.gz" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/chrome-2m.out.json.gz"
      # a flame graph reads no args: the importer's args are dropped as they are emitted
      measure "chrome -> folded (timeline)" "$(size "$f")" \
        "$bin" -q convert -f --fold timeline "$f" "$out/chrome-2m.folded"
      ;;
    otf2)
      f=$out/chrome-2m.json
      [ -f "$f" ] || "$gen" chrome --events 2000000 --out "$f"
      small=$out/chrome-200k.json
      [ -f "$small" ] || "$gen" chrome --events 200000 --out "$small"
      echo "== otf2: $(size "$f") bytes, 2M events (the Python reference chrome2otf2 needs 7.4 s for 200k)"
      measure "chrome 200k -> otf2" "$(size "$small")" "$bin" -q convert -f "$small" "$out/chrome-200k.otf2"
      measure "chrome 2M -> otf2" "$(size "$f")" "$bin" -q convert -f "$f" "$out/chrome-2m.otf2"
      a=$out/chrome-2m.otf2
      measure "otf2 -> chrome json (import)" "$(archive_size "$a")" "$bin" -q convert -f "$a" "$out/otf2-2m.json"
      measure "otf2 -> otf2" "$(archive_size "$a")" "$bin" -q convert -f "$a" "$out/otf2-2m.otf2"
      ;;
    otf2-mpi)
      # An archive as Score-P writes an MPI program's: messages, collectives and I/O records
      # whose details become slice arguments (8 ranks x 25000 iterations, 2M events).
      a=$out/scorep-mpi/traces.otf2
      if [ ! -f "$a" ]; then
        if ! /usr/bin/python3 -c "import otf2" 2>/dev/null; then
          echo "== otf2-mpi: skipped, python3-otf2 is not installed (scripts/setup.sh)"
          continue
        fi
        /usr/bin/python3 scripts/gen-scorep-mpi.py "$out/scorep-mpi" 8 25000
      fi
      echo "== otf2-mpi: $(archive_size "$out/scorep-mpi/traces.otf2") bytes, 2M events"
      measure "score-p mpi -> chrome json" "$(archive_size "$a")" "$bin" -q convert -f "$a" "$out/scorep-mpi.json"
      measure "score-p mpi -> pftrace" "$(archive_size "$a")" "$bin" -q convert -f "$a" "$out/scorep-mpi.pftrace"
      ;;
    merge)
      # The GPU flame-graph merge: uprobe CPU stacks + CUPTI records -> folded.
      for n in 100000 1000000; do
        cpu=$out/merge-$n-cpu.txt; gpu=$out/merge-$n-gpu.json; text=$out/merge-$n-gpu.txt
        [ -f "$gpu" ] || "$gen" cupti --launches "$n" --cpu "$cpu" --gpu "$gpu"
        [ -f "$text" ] || "$gen" cupti --launches "$n" --cpu "$cpu" --gpu "$text" --gpu-format text
        echo "== merge: $n launches"
        measure "CPU stacks + CUPTI JSON -> folded" "$(( $(size "$cpu") + $(size "$gpu") ))" \
          "$bin" -q convert -f "$cpu" "$gpu" "$out/merge-$n.folded"
        measure "CPU stacks + CUPTI text -> folded" "$(( $(size "$cpu") + $(size "$text") ))" \
          "$bin" -q convert -f "$cpu" "$text" "$out/merge-$n-text.folded"
      done
      if [ -n "${TRACEX_REFERENCE_MERGE:-}" ]; then
        # The current upstream script weighs stacks by kernel µs: tracex's --weight gpu-us.
        cpu=$out/merge-20000-cpu.txt; gpu=$out/merge-20000-gpu.json
        [ -f "$gpu" ] || "$gen" cupti --launches 20000 --cpu "$cpu" --gpu "$gpu"
        bytes=$(( $(size "$cpu") + $(size "$gpu") ))
        echo "== merge: 20000 launches, the reference script against tracex --weight gpu-us"
        repeat=20 measure "tracex" "$bytes" \
          "$bin" -q convert -f --weight gpu-us "$cpu" "$gpu" "$out/merge-20000.folded"
        repeat=5 versus "merge_gpu_cpu_trace.py" "$bytes" \
          "$py" "$TRACEX_REFERENCE_MERGE" -c "$cpu" -g "$gpu" -o "$out/merge-20000-ref.folded"
        cmp -s "$out/merge-20000.folded" "$out/merge-20000-ref.folded" && echo "same lines as the reference" \
          || echo "OUTPUTS DIFFER from the reference"
      fi
      ;;
    nsys)
      # 1M kernels, 1M runtime calls, 100k NVTX ranges; and a quarter of that, to show that
      # memory does not grow with the number of rows
      # rows thread after thread (--unsorted), and shuffled with 44k partially overlapping kernels
      f=$out/nsys-1m.sqlite q=$out/nsys-250k.sqlite u=$out/nsys-1m-unsorted.sqlite
      sh=$out/nsys-1m-shuffled.sqlite
      [ -f "$f" ] || "$gen" nsys --kernels 1000000 --nvtx 100000 --out "$f"
      [ -f "$q" ] || "$gen" nsys --kernels 250000 --nvtx 25000 --out "$q"
      [ -f "$u" ] || "$gen" nsys --kernels 1000000 --nvtx 100000 --unsorted --out "$u"
      [ -f "$sh" ] || "$gen" nsys --kernels 1000000 --nvtx 100000 --shuffle --overlap 44000 --out "$sh"
      echo "== nsys: $(size "$f") bytes, 1M kernels + 1M runtime calls + 100k NVTX ranges"
      measure "import only (tracex info)" "$(size "$f")" "$bin" -q info "$f"
      measure --fresh "$out/nsys-1m.json" "nsys 1M -> chrome json" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/nsys-1m.json"
      vs_nsys2json "$f"
      # again over that output, as a user converting twice does (tracex swaps the files: a
      # rename over a 1 GB file would make ext4 write all of it out first)
      measure "nsys 1M -> chrome json, replacing it" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/nsys-1m.json"
      measure --fresh "$out/nsys-1m.json.gz" "nsys 1M -> chrome json.gz" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/nsys-1m.json.gz"
      vs_nsys_chrome "$f"
      measure --fresh "$out/nsys-1m.json" "nsys 1M -> chrome json, without nvtx-kernel" "$(size "$f")" \
        "$bin" -q convert -f --activity=-nvtx-kernel "$f" "$out/nsys-1m.json"
      measure --fresh "$out/nsys-250k.json" "nsys 250k -> chrome json" "$(size "$q")" \
        "$bin" -q convert -f "$q" "$out/nsys-250k.json"
      measure "nsys 250k -> otf2" "$(size "$q")" "$bin" -q convert -f "$q" "$out/nsys-250k.otf2"
      measure "nsys 1M -> otf2" "$(size "$f")" "$bin" -q convert -f "$f" "$out/nsys-1m.otf2"
      measure "nsys 1M -> folded (timeline)" "$(size "$f")" "$bin" -q convert -f "$f" "$out/nsys-1m.folded"
      measure "import only, rows not in time order" "$(size "$u")" "$bin" -q info "$u"
      measure --fresh "$out/nsys-1m.json" "nsys 1M, rows not in time order -> chrome json" "$(size "$u")" \
        "$bin" -q convert -f "$u" "$out/nsys-1m.json"
      vs_nsys2json "$u"
      measure "import only, rows shuffled, 44k overlaps" "$(size "$sh")" "$bin" -q info "$sh"
      measure --fresh "$out/nsys-1m.json" "nsys 1M shuffled -> chrome json" "$(size "$sh")" \
        "$bin" -q convert -f "$sh" "$out/nsys-1m.json"
      vs_nsys2json "$sh"
      measure --fresh "$out/nsys-1m.json.gz" "nsys 1M shuffled -> chrome json.gz" "$(size "$sh")" \
        "$bin" -q convert -f "$sh" "$out/nsys-1m.json.gz"
      vs_nsys_chrome "$sh"
      ;;
    perfetto)
      # nsys 1M kernels + 1M runtime calls + 100k NVTX ranges -> .pftrace beside -> Chrome JSON:
      # time, peak RSS and size (goal: at most 1/4 of the JSON, written at least as fast)
      f=$out/nsys-1m.sqlite
      [ -f "$f" ] || "$gen" nsys --kernels 1000000 --nvtx 100000 --out "$f"
      echo "== perfetto: $(size "$f") bytes of nsys export"
      measure --fresh "$out/nsys-1m.json" "nsys 1M -> chrome json" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/nsys-1m.json"
      measure --fresh "$out/nsys-1m.pftrace" "nsys 1M -> pftrace" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/nsys-1m.pftrace"
      measure --fresh "$out/nsys-1m.pftrace.gz" "nsys 1M -> pftrace.gz" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/nsys-1m.pftrace.gz"
      measure --fresh "$out/pftrace-1m.json" "pftrace 1M -> chrome json (import)" "$(size "$out/nsys-1m.pftrace")" \
        "$bin" -q convert -f "$out/nsys-1m.pftrace" "$out/pftrace-1m.json"
      j=$(size "$out/nsys-1m.json") p=$(size "$out/nsys-1m.pftrace") z=$(size "$out/nsys-1m.pftrace.gz")
      awk -v j="$j" -v p="$p" -v z="$z" 'BEGIN { printf "sizes: json %.1f MB, pftrace %.1f MB (%.3f of the json), pftrace.gz %.1f MB\n", j/1e6, p/1e6, p/j, z/1e6 }'
      if [ -n "${TRACEX_NSYS_PERFETTER:-}" ]; then
        measure "nsys-perfetter (reference)" "$(size "$f")" \
          sh -c "cd '$TRACEX_NSYS_PERFETTER' && python3 -m lib.nsys_perfetter --nsys-report '$PWD/$f' --output '$PWD/$out/nsys-1m.perfetter.pftrace'" \
          || echo "nsys-perfetter failed on this export"
      fi
      ;;
    android)
      # An Android system trace: 2M atrace markers (ftrace print events in per-CPU bundles out
      # of time order), a process tree, 16 GPU counters; trace processor's import of the same
      # file as a reference when it is on the machine (TRACE_PROCESSOR_SHELL or PATH)
      f=$out/android-2m.pftrace
      [ -f "$f" ] || "$gen" android --markers 2000000 --out "$f"
      echo "== android: $(size "$f") bytes, 2M atrace markers + GPU counters"
      measure "import only (tracex info)" "$(size "$f")" "$bin" -q info "$f"
      measure --fresh "$out/android-2m.json" "android -> chrome json" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/android-2m.json"
      measure --fresh "$out/android-2m.out.pftrace" "android -> pftrace" "$(size "$f")" \
        "$bin" -q convert -f "$f" "$out/android-2m.out.pftrace"
      tp=${TRACE_PROCESSOR_SHELL:-$(command -v trace_processor_shell || true)}
      if [ -n "$tp" ]; then
        echo "select count(*) from slice;" >"$out/count.sql"
        versus "trace_processor_shell (import + a count)" "$(size "$f")" \
          sh -c '"$0" -q "$1" "$2" 2>/dev/null' "$tp" "$out/count.sql" "$f"
      fi
      ;;
    series)
      # ten runs of 100k kernels whose kernels grow with the batch size; stats over all ten
      # (read in parallel) and a batch conversion of the folder, both on every core
      d=$out/series
      mkdir -p "$d"
      for b in 1 2 4 8 16 32 64 128 256 512; do
        [ -f "$d/run_b$b.sqlite" ] || "$gen" nsys --kernels 100000 --nvtx 10000 \
          --kernel-scale "$(awk -v b="$b" 'BEGIN { print 1 + log(b) / log(2) / 4 }')" --out "$d/run_b$b.sqlite"
      done
      total=$(du -cb "$d"/run_b*.sqlite | tail -1 | cut -f1)
      echo "== series: ten nsys exports of 100k kernels ($total bytes)"
      measure "stats over 10 traces (--param)" "$total" "$bin" -q stats "$d"/run_b*.sqlite \
        --param 'run_b$p.sqlite' --events 'Kernel|gemm' cudaLaunchKernel forward
      measure "batch convert 10 traces -> chrome" "$total" \
        "$bin" -q convert -f "$d" --to chrome -o "$out/series-json"
      measure "batch convert 10 traces -> otf2" "$total" \
        "$bin" -q convert -f "$d" --to otf2 -o "$out/series-otf2"
      ;;
    *) echo "unknown section $s" >&2; exit 2 ;;
  esac
done
