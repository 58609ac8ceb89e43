#!/usr/bin/env bash
# The tracex-otf2 unit tests built with AddressSanitizer (use after free, overflows, leaks in
# Rust and in what libotf2 frees through Rust's allocator). -Zsanitizer is a nightly flag:
# RUSTC_BOOTSTRAP=1 lets the stable toolchain take it; the sanitizer runtime ships with rust-std.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=address"
export RUSTDOCFLAGS="-Zsanitizer=address"
# LeakSanitizer: libotf2 keeps a few process-wide allocations (error callback, locale) on
# purpose; definite leaks of ours are in Rust frames.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
cargo test --locked -p tracex-otf2 --lib --target "$host" --target-dir target/asan -- --test-threads=1 >&2
echo "sanitize: tracex-otf2 unit tests clean under AddressSanitizer" >&2
