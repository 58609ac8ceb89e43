#!/usr/bin/env bash
# Installs everything tracex needs on a fresh Debian 12 machine; skips what is already there.
# Usage: scripts/setup.sh [--no-browser]   (idempotent; run as root or with sudo available)
set -euo pipefail

want_browser=1
[ "${1:-}" = "--no-browser" ] && want_browser=0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# valgrind: the FFI tests (scripts/valgrind.sh); gcc-aarch64-linux-gnu, libc6-dev-arm64-cross: the
# aarch64 check of the OTF2 bindings and their C shim; python3-venv: the analysers' venv; perl:
# flamegraph.pl.
pkgs=(pkg-config libclang-dev libotf2-trace-dev otf2-tools python3-otf2 python3-venv perl binutils gzip time
      valgrind libc6-dev-arm64-cross gcc-aarch64-linux-gnu)
[ "$want_browser" = 1 ] && pkgs+=(chromium)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
  exit 1
fi

# inferno renders folded stacks; the tests use it as an independent reader.
if ! command -v inferno-flamegraph >/dev/null 2>&1; then
  echo "setup: installing inferno (cargo install, a few minutes)" >&2
  cargo install --quiet --locked inferno
fi
# cargo-fuzz drives the fuzz targets of fuzz/ (scripts/fuzz.sh); libFuzzer itself comes with the
# libfuzzer-sys crate.
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "setup: installing cargo-fuzz (cargo install, a few minutes)" >&2
  cargo install --quiet --locked cargo-fuzz
fi
# The standard library for aarch64, to check that the OTF2 bindings build there (not fatal:
# scripts/cross-check.sh says why it skips when it cannot be had).
if command -v rustup >/dev/null 2>&1 \
  && ! rustup target list --installed 2>/dev/null | grep -q '^aarch64-unknown-linux-gnu$'; then
  echo "setup: adding the aarch64-unknown-linux-gnu target (rustup)" >&2
  rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 \
    || echo "setup: could not add aarch64-unknown-linux-gnu; the cross check will be skipped" >&2
fi
# llvm-profdata from rustup's llvm-tools (it matches rustc's LLVM) merges the profile of the
# profile-guided build (scripts/pgo.sh: make bench, install, dist; make test checks its outputs).
profdata="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata"
if command -v rustup >/dev/null 2>&1 && [ ! -x "$profdata" ]; then
  echo "setup: adding rustup's llvm-tools (llvm-profdata)" >&2
  rustup component add llvm-tools >/dev/null 2>&1 \
    || echo "setup: could not add llvm-tools; scripts/pgo.sh will say why it cannot build" >&2
fi
# maturin builds the Python wheel (pyproject.toml); the tests install that wheel into a fresh venv.
MATURIN_VENV="${TRACEX_MATURIN_VENV:-$HOME/.cache/tracex/maturin}"
if ! command -v maturin >/dev/null 2>&1 && [ ! -x "$MATURIN_VENV/bin/maturin" ]; then
  echo "setup: installing maturin 1.x into $MATURIN_VENV (pip)" >&2
  python3 -m venv "$MATURIN_VENV"
  "$MATURIN_VENV/bin/pip" install --quiet 'maturin>=1.5,<2'
fi
# speedscope's web app, loaded headless by ../shared/tools/speedscope_check.sh in the tests.
SPEEDSCOPE_DIR="${TRACEX_SPEEDSCOPE:-$HOME/.cache/tracex/speedscope}"
if [ "$want_browser" = 1 ] && [ ! -f "$SPEEDSCOPE_DIR/package/dist/release/index.html" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "setup: fetching speedscope 1.25.0 (npm pack) into $SPEEDSCOPE_DIR" >&2
    mkdir -p "$SPEEDSCOPE_DIR"
    (cd "$SPEEDSCOPE_DIR" && npm pack --silent speedscope@1.25.0 >/dev/null && tar xzf speedscope-1.25.0.tgz)
  else
    echo "setup: npm not found; speedscope checks will be skipped" >&2
  fi
fi
# The analysers PyTorch users run on Chrome traces, as test oracles: HolisticTraceAnalysis
# (PyPI, about 100 packages, 1-2 minutes) and the few PyPI packages AMD's TraceLens needs (TraceLens
# itself is not on PyPI: its tests run where it is installed and say why they skip elsewhere).
ANALYSERS_VENV="${TRACEX_ANALYSERS_VENV:-$HOME/.cache/tracex/venv-analysers}"
if [ ! -x "$ANALYSERS_VENV/bin/python" ] || ! "$ANALYSERS_VENV/bin/python" -c 'import hta, tabulate, orjson' 2>/dev/null; then
  echo "setup: installing HolisticTraceAnalysis and TraceLens's dependencies into $ANALYSERS_VENV" >&2
  if /usr/bin/python3 -m venv "$ANALYSERS_VENV" \
     && "$ANALYSERS_VENV/bin/pip" install --quiet --disable-pip-version-check \
          HolisticTraceAnalysis tabulate orjson tqdm PyYAML >/dev/null; then
    :
  else
    echo "setup: could not install the analysers; their tests will be skipped" >&2
  fi
fi
# Perfetto's own protos (PyPI package `perfetto`) decode every .pftrace tracex writes in the tests.
PERFETTO_VENV="${TRACEX_PERFETTO_VENV:-$HOME/.cache/tracex/venv-perfetto}"
if ! "$PERFETTO_VENV/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null; then
  echo "setup: installing the perfetto Python package into $PERFETTO_VENV" >&2
  /usr/bin/python3 -m venv "$PERFETTO_VENV"
  "$PERFETTO_VENV/bin/pip" install --quiet --disable-pip-version-check perfetto==0.59.1
fi
echo "setup: ok" >&2
