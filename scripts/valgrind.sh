#!/usr/bin/env bash
# The FFI under valgrind: the tracex-otf2 unit tests (archives written and read back through
# libotf2 in-process) and a round trip of the tracex binary through OTF2. Fails on any memory
# error and on any definite leak. Usage: scripts/valgrind.sh [path/to/tracex]
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind: not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
VG=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-origins=yes --num-callers=30 --quiet)

# The unit tests' binary, as cargo builds it (the system allocator: no mimalloc in this crate).
bin=$(cargo test -p tracex-otf2 --lib --no-run --locked --message-format=json 2>/dev/null \
  | grep -o '"executable":"[^"]*"' | tail -1 | sed 's/"executable":"//; s/"$//')
[ -x "$bin" ] || { echo "valgrind: cannot find the tracex-otf2 test binary" >&2; exit 1; }
echo "valgrind: tracex-otf2 unit tests ($bin)" >&2
"${VG[@]}" --log-file=target/valgrind-otf2-unit.log "$bin" --test-threads=1 -q >&2 || {
  cat target/valgrind-otf2-unit.log >&2
  exit 1
}
cat target/valgrind-otf2-unit.log >&2

# The binary, both directions, built with the system allocator so that valgrind sees every
# allocation (mimalloc maps its own memory).
tracex="${1:-}"
if [ -z "$tracex" ]; then
  tracex=$(cargo build --locked --no-default-features --features otf2 --message-format=json \
    2>/dev/null | grep -o '"executable":"[^"]*tracex"' | tail -1 | sed 's/"executable":"//; s/"$//')
  [ -x "$tracex" ] || { echo "valgrind: cannot build tracex without mimalloc" >&2; exit 1; }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for step in "fixtures/demo/gpu_training_step.json $tmp/rt.otf2" "$tmp/rt.otf2 $tmp/back.json"; do
  # shellcheck disable=SC2086
  echo "valgrind: tracex convert $step" >&2
  # shellcheck disable=SC2086
  "${VG[@]}" --log-file="$tmp/vg.log" "$tracex" --quiet convert $step || {
    cat "$tmp/vg.log" >&2
    exit 1
  }
  cat "$tmp/vg.log" >&2
done
echo "valgrind: no memory errors, no definite leaks" >&2
