#!/usr/bin/env bash
# Converts the bundled example trace to every output format tracex can write and says where
# the outputs are. Run by `make demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/tracex
in=fixtures/demo/gpu_training_step.json
out=demo-out
mkdir -p "$out"
echo "== input: $in"
"$bin" info "$in"
echo
for target in "$out/trace.json" "$out/trace.json.gz" "$out/trace.pftrace" "$out/trace.otf2"; do
  "$bin" convert --force "$in" "$target"
done
"$bin" convert --force --fold timeline --prefix thread "$in" "$out/timeline.folded"
# GPU flame graph: uprobe CPU stacks joined to CUPTI kernels (fixtures/cupti/README.md)
"$bin" convert --force --summary fixtures/cupti/app_cpu.txt fixtures/cupti/app_gpu.txt "$out/gpu_by_cpu_stack.folded"
# ... and the same drawn as an SVG flame graph (inferno inside)
"$bin" convert --force fixtures/cupti/app_cpu.txt fixtures/cupti/app_gpu.txt "$out/gpu_by_cpu_stack.svg"
echo
echo "== outputs in $out/:"
ls -l "$out"
echo
echo "Open $out/trace.pftrace (Perfetto's own format) or $out/trace.json in https://ui.perfetto.dev,"
echo "$out/trace.json in chrome://tracing, $out/trace.otf2 in Vampir, $out/gpu_by_cpu_stack.svg in a"
echo "browser; open the .folded files in speedscope or render them with inferno-flamegraph."
