#!/usr/bin/env bash
# Dumps every nsys export of the corpus (and the bench inputs when present) with two tracex
# binaries and diffs the text: a change to the nsys importer's speed must not change what it reads.
# Usage: scripts/nsys-dump-diff.sh OLD_TRACEX NEW_TRACEX [extra sqlite files...]
#   corpus: $TRACEX_CORPUS, else ../shared/fixtures; each file is dumped with the default
#   activities and with --activity=-nvtx-kernel (the launch join then runs in the flow streams).
set -euo pipefail
old=$1 new=$2; shift 2
corpus=${TRACEX_CORPUS:-$(dirname "$0")/../../shared/fixtures}
files=("$corpus"/nsys/*.sqlite "$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0 n=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  for opts in "" "--activity=-nvtx-kernel"; do
    # shellcheck disable=SC2086
    "$old" -q dump $opts "$f" > "$tmp/old" 2>&1 || echo "exit $?" >> "$tmp/old"
    # shellcheck disable=SC2086
    "$new" -q dump $opts "$f" > "$tmp/new" 2>&1 || echo "exit $?" >> "$tmp/new"
    n=$((n + 1))
    if ! cmp -s "$tmp/old" "$tmp/new"; then
      echo "DIFFERS: $f $opts"; diff "$tmp/old" "$tmp/new" | head -20; status=1
    fi
  done
done
echo "$n dumps compared"
exit $status
