#!/usr/bin/env bash
# The committed example folders (results/example*/), made anew from real runs
# with the commands README.md and docs/ quote for each, then report.png.
# Run it after a change of what a results folder holds (a new column, a new
# file): the test export::read_tests::the_example_folders_render_again_byte_for_byte
# fails until the folders are made by the new version. About 7 minutes on a
# 2-core machine; run it on a quiet machine, since the figures go into the
# README.
#
#   scripts/regenerate-examples.sh            # all five folders
#   scripts/regenerate-examples.sh example    # one of them, by its folder name
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/stallbench"

run() {
  local name="$1"
  shift
  [[ -n "${only:-}" && "$only" != "$name" ]] && return 0
  echo "== results/$name: stallbench $*"
  rm -rf "results/$name"
  "$bin" "$@" --out "results/$name"
}

only="${1:-}"
run example compare
run example-open-loop compare --rate 200 --client-timeout 1s
run example-pool compare --rate 200 --pool-size 10 --pool-timeout 1s
run example-replica compare replica-report
run example-sweep compare --duration 15s --blocker-at 3s --blocker-hold 7s --ddl-at 4.3s \
  --sweep retry.lock_timeout=100ms,500ms,1s,6s
if [[ -z "$only" || "$only" == example ]]; then
  scripts/report-screenshot.sh results/example
fi
