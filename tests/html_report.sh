#!/usr/bin/env bash
# The HTML report loads in headless Chromium without a script error, and a screenshot of it is taken.
# Usage: html_report.sh SAPP_BINARY OUTPUT_DIR. Exits 77 (skipped) when Chromium is not installed.
set -euo pipefail
sapp=$1
out=$2
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium not installed: skipped"
  exit 77
fi
mkdir -p "$out"
"$sapp" search --model llama3-70b --hardware h100-sxm --devices 64 --global-batch 128 --seq 8192 -q --report "$out/report.html" >/dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile")
dom=$("$browser" "${flags[@]}" --dump-dom "file://$out/report.html" 2>/dev/null)
status=$(grep -o '<p id="status">[^<]*' <<<"$dom" | sed 's/.*>//')
if [ "$status" != "loaded" ]; then
  echo "the report's script did not finish: status '$status'"
  exit 1
fi
for section in "Ranked layouts" "Step time against peak memory" "Rejections per rule" "Memory per stage of rank 1" "Step time of rank 1"; do
  grep -q "$section" <<<"$dom" || { echo "missing section: $section"; exit 1; }
done
"$browser" "${flags[@]}" --window-size=1280,2400 --screenshot="$out/report.png" "file://$out/report.html" 2>/dev/null
test -s "$out/report.png"
echo "report loaded; screenshot $out/report.png"
