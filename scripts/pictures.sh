#!/usr/bin/env bash
# Regenerates the pictures of the README and docs/ with tracex's own commands on the bundled
# examples (fixtures/):
#   docs/img/gpu-flamegraph.svg   GPU time by CPU call stack (uprobe stacks + CUPTI records)
#   docs/img/timeline-flamegraph.svg  self time by call path of the demo trace
#   docs/img/demo-catapult.png    the demo converted to Chrome JSON, in the Catapult Trace Viewer
#                                 (the engine of chrome://tracing), rendered by headless chromium
# The last needs chromium and the viewer page of ../shared/tools/traceviewer (built on this
# machine, never committed); without them it is skipped with the reason.
# Usage: scripts/pictures.sh [TRACEX_BIN]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${TRACEX_BIN:-target/release/tracex}}"
img=docs/img
mkdir -p "$img"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin" --quiet convert --force --weight gpu-ns \
  --title "GPU time by CPU call stack (fixtures/cupti)" \
  fixtures/cupti/app_cpu.txt fixtures/cupti/app_gpu.txt "$img/gpu-flamegraph.svg"
"$bin" --quiet convert --force --fold timeline --weight ns \
  fixtures/demo/gpu_training_step.json "$img/timeline-flamegraph.svg"
echo "pictures: $img/gpu-flamegraph.svg $img/timeline-flamegraph.svg"

viewer="${CATAPULT_VIEWER_HTML:-$HOME/.cache/tracex-tools/catapult-viewer.html}"
if ! command -v chromium >/dev/null; then
  echo "pictures: chromium not installed; $img/demo-catapult.png not regenerated" >&2
  exit 0
fi
if [ ! -f "$viewer" ]; then
  echo "pictures: no Catapult viewer page at $viewer (see ../shared/tools/traceviewer/README.md); $img/demo-catapult.png not regenerated" >&2
  exit 0
fi
"$bin" --quiet convert --force fixtures/demo/gpu_training_step.json "$work/demo.json"
{
  cat "$viewer"
  printf '<script id="trace" type="application/json">'
  # JSON inside a script element: only "</" needs escaping
  sed 's#</#<\\/#g' "$work/demo.json"
  cat <<'JS'
</script>
<style>html, body { margin: 0; height: 100%; background: white; }</style>
<script>
document.addEventListener('DOMContentLoaded', () => {
  const model = new tr.Model();
  new tr.importer.Import(model).importTraces([document.getElementById('trace').textContent]);
  const view = document.createElement('tr-ui-timeline-view');
  view.style.height = '100%';
  const tracks = document.createElement('track-view-container');
  tracks.id = 'track_view_container';
  Polymer.dom(view).appendChild(tracks);
  Polymer.dom(document.body).appendChild(view);
  view.model = model;
  view.globalMode = true;
});
</script>
</head><body></body></html>
JS
} >"$work/page.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/udd" \
  --allow-file-access-from-files --window-size=1400,800 --virtual-time-budget=10000 \
  --screenshot="$work/shot.png" "file://$work/page.html" >/dev/null 2>"$work/chromium.log" || {
  echo "pictures: chromium failed:" >&2
  tail -5 "$work/chromium.log" >&2
  exit 1
}
cp "$work/shot.png" "$img/demo-catapult.png"
echo "pictures: $img/demo-catapult.png"
