#!/usr/bin/env bash
# Converts generated large traces and prints throughput and peak RSS for each conversion.
# Usage: scripts/bench.sh [section...]   (sections: chrome nsys; default: all)
# Inputs are generated under bench-out/ (not committed). Run by `make bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p tracex -p tracex-gen
bin=target/release/tracex
gen=target/release/tracex-gen
out=bench-out
mkdir -p "$out"
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(chrome nsys)

# measure LABEL INPUT_BYTES CMD...: runs CMD under /usr/bin/time, prints wall time, MB/s, peak RSS.
measure() {
  local label=$1 bytes=$2; shift 2
  local t; t=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$t" "$@" >/dev/null
  read -r secs kb < "$t"; rm -f "$t"
  awk -v l="$label" -v s="$secs" -v k="$kb" -v b="$bytes" \
    'BEGIN { printf "%-48s %7.2f s %9.1f MB/s %8.1f MB peak RSS\n", l, s, (s > 0 ? b / 1e6 / s : 0), k / 1024 }'
}

size() { stat -c %s "$1"; }

for s in "${sections[@]}"; do
  case "$s" in
    chrome)
      f=$out/chrome-2m.json
      [ -f "$f" ] || "$gen" chrome --events 2000000 --out "$f"
      echo "== chrome: $(size "$f") bytes, 2M events"
      measure "import only (tracex info)" "$(size "$f")" "$bin" -q info "$f"
      measure "chrome -> chrome json" "$(size "$f")" "$bin" -q convert -f "$f" "$out/chrome-2m.out.json"
      measure "chrome -> chrome json.gz" "$(size "$f")" "$bin" -q convert -f "$f" "$out/chrome-2m.out.json.gz"
      ;;
    nsys)
      # 1M kernels, 1M runtime calls, 100k NVTX ranges; and a quarter of that, to show that
      # memory does not grow with the number of rows
      f=$out/nsys-1m.sqlite q=$out/nsys-250k.sqlite u=$out/nsys-1m-unsorted.sqlite
      [ -f "$f" ] || "$gen" nsys --kernels 1000000 --nvtx 100000 --out "$f"
      [ -f "$q" ] || "$gen" nsys --kernels 250000 --nvtx 25000 --out "$q"
      [ -f "$u" ] || "$gen" nsys --kernels 1000000 --nvtx 100000 --unsorted --out "$u"
      echo "== nsys: $(size "$f") bytes, 1M kernels + 1M runtime calls + 100k NVTX ranges"
      measure "nsys 1M -> chrome json" "$(size "$f")" "$bin" -q convert -f "$f" "$out/nsys-1m.json"
      measure "nsys 1M -> chrome json, without nvtx-kernel" "$(size "$f")" \
        "$bin" -q convert -f --activity=-nvtx-kernel "$f" "$out/nsys-1m.json"
      measure "nsys 250k -> chrome json" "$(size "$q")" "$bin" -q convert -f "$q" "$out/nsys-250k.json"
      measure "nsys 1M, rows not in time order -> chrome json" "$(size "$u")" \
        "$bin" -q convert -f "$u" "$out/nsys-1m.json"
      ;;
    *) echo "unknown section $s" >&2; exit 2 ;;
  esac
done
