#!/usr/bin/env bash
# Builds the release archive: tracex-VERSION-TARGET.tar.gz in target/dist/ holding the binary
# (libotf2 linked in statically, so it runs where libotf2 is not installed), shell completions,
# man pages, README, licences and the notices of what the binary contains (THIRD-PARTY-NOTICES,
# from scripts/notices.py). Run by `make dist`.
# TRACEX_BIN=path packages that binary instead of building one (the tests do).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${TRACEX_BIN:-}"
if [ -z "$bin" ]; then
  scripts/pgo.sh >&2 # the profile-guided build; stdout is the archive's path
  bin=target/pgo/tracex
fi
version=$("$bin" --version | head -1 | awk '{print $2}')
target=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
target=${target:-$(uname -m)-unknown-linux-gnu}
name="tracex-$version-$target"
out="${TRACEX_DIST_DIR:-target/dist}"
stage="$out/$name"
rm -rf "$stage" "$out/$name.tar.gz"
mkdir -p "$stage/complete" "$stage/man"
cp "$bin" "$stage/tracex"
strip "$stage/tracex" 2>/dev/null || true
for shell in bash zsh fish powershell elvish; do
  "$bin" completions "$shell" >"$stage/complete/tracex.$shell"
done
"$bin" man --dir "$stage/man"
cp README.md LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES "$stage/"
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
rm -rf "$stage"
echo "$out/$name.tar.gz"
