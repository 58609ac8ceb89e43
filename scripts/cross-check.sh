#!/usr/bin/env bash
# The OTF2 bindings must build beyond x86-64: `cargo check` of tracex-otf2 for aarch64 (bindgen
# for that target, the C error shim compiled by aarch64-linux-gnu-gcc). Skips, saying why, where
# the aarch64 standard library or cross compiler is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu
if ! rustup target list --installed 2>/dev/null | grep -q "^$target\$"; then
  echo "cross-check: skipped: rustup target $target not installed (scripts/setup.sh adds it)" >&2
  exit 0
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
  echo "cross-check: skipped: aarch64-linux-gnu-gcc missing (Debian gcc-aarch64-linux-gnu)" >&2
  exit 0
fi
cargo check --locked -p tracex-otf2 --target "$target" >&2
echo "cross-check: tracex-otf2 checks for $target" >&2
