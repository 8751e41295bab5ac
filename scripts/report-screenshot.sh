#!/usr/bin/env bash
# The README's picture of report.html: a screenshot of a results folder's page
# taken by headless chromium (Debian's `chromium`), hovering nothing.
#
#   scripts/report-screenshot.sh results/example    # writes results/example/report.png
#
# Not a test: the pixels change with chromium's version and fonts; the page's
# behaviour is tested by the unit tests export::html::browser_tests.
set -euo pipefail
dir="${1:?usage: scripts/report-screenshot.sh RESULTS_DIR}"
page="$(cd "$dir" && pwd)/report.html"
[[ -f "$page" ]] || { echo "no $page: run stallbench plot $dir first" >&2; exit 2; }
browser="${STALLBENCH_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
[[ -n "$browser" ]] || { echo "no chromium: apt-get install chromium" >&2; exit 2; }
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
  --force-device-scale-factor=1 --window-size=1280,1500 --user-data-dir="$profile" \
  --screenshot="$(dirname "$page")/report.png" "file://$page" 2>/dev/null
echo "wrote $(dirname "$page")/report.png"
