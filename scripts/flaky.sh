#!/usr/bin/env bash
# Finds flaky tests by measurement: clones the committed HEAD into a fresh
# folder, builds the tests once, runs every test binary N times back to back
# (as `cargo test` runs them: from the crate's folder, with the
# RUST_TEST_THREADS that .cargo/config.toml sets),
# and prints per test how often it failed and its slowest time.
#
#   scripts/flaky.sh 10          # ten runs on this machine as it is
#   HOG=1 scripts/flaky.sh 3     # three runs with one core kept busy
#
# HOG=1 starts one busy loop (what a shared CI runner's neighbour does) for the
# runs and stops it on every exit path. FILTER=outage:: passes a libtest
# filter to the suite binary (the other binaries then run no test).
# KEEP=1 keeps the clone and the per-run JSON in the work folder it prints;
# `scripts/flaky.sh --report DIR` prints the table again from such a folder.
# The per-test times come from libtest's JSON report (`--report-time`), which
# stable libtest prints when RUSTC_BOOTSTRAP=1 is set for the test binary at
# run time; the build itself does not see it.
set -euo pipefail

# Prints per test how often it failed and its slowest time, from the libtest
# JSON reports run-*.json in folder $1 ($2 runs).
report() {
python3 - "$1" "$2" <<'EOF'
import glob, json, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
work, runs = sys.argv[1], int(sys.argv[2])
tests = {}
for path in sorted(glob.glob(f"{work}/run-*.json")):
    for line in open(path):
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("type") != "test" or event.get("event") not in ("ok", "failed"):
            continue
        seen = tests.setdefault(event["name"], {"runs": 0, "failed": 0, "slowest_s": 0.0})
        seen["runs"] += 1
        seen["failed"] += event["event"] == "failed"
        seen["slowest_s"] = max(seen["slowest_s"], float(event.get("exec_time", 0)))
flaky = {name: t for name, t in tests.items() if t["failed"]}
print(f"\n{len(tests)} tests, {runs} runs; {len(flaky)} failed at least once")
print("| test | failed | slowest s |")
print("| --- | --- | --- |")
shown = sorted(tests.items(), key=lambda kv: (-kv[1]["failed"], -kv[1]["slowest_s"]))
for name, t in shown[: max(len(flaky), 15)]:
    print(f"| {name} | {t['failed']} of {t['runs']} | {t['slowest_s']:.1f} |")
EOF
}

if [[ "${1:-}" == "--report" ]]; then
  dir="${2:?usage: scripts/flaky.sh --report DIR}"
  report "$dir" "$(find "$dir" -maxdepth 1 -name 'run-*.json' | wc -l)"
  exit 0
fi

runs="${1:?usage: scripts/flaky.sh N  (HOG=1 for one busy core, FILTER=name to narrow)}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t stallbench-flaky.XXXXXX)"
hog_pid=""

cleanup() {
  if [[ -n "$hog_pid" ]]; then kill "$hog_pid" 2>/dev/null || true; fi
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT INT TERM

echo "flaky: cloning $(git -C "$repo" rev-parse --short HEAD) into $work/clone"
git clone --quiet "$repo" "$work/clone"
cd "$work/clone"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/clone/target}"

echo "flaky: building the tests (a clean build takes a few minutes)"
cargo test --no-run --message-format=json 2>"$work/build.log" \
  | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])
' >"$work/binaries"
echo "flaky: $(wc -l <"$work/binaries") test binaries"

if [[ "${HOG:-0}" == 1 ]]; then
  bash -c 'while :; do :; done' &
  hog_pid=$!
  echo "flaky: one core kept busy by pid $hog_pid"
fi

# As `cargo test` does: .cargo/config.toml's [env] value, unless set here.
configured_threads=$(sed -n 's/^RUST_TEST_THREADS = "\([0-9]*\)"$/\1/p' "$work/clone/.cargo/config.toml")
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-${configured_threads:-3}}"
echo "flaky: $RUST_TEST_THREADS tests at a time"
for run in $(seq 1 "$runs"); do
  started=$(date +%s)
  status=0
  while read -r binary; do
    filter=()
    if [[ -n "${FILTER:-}" ]]; then filter=("$FILTER"); fi
    RUSTC_BOOTSTRAP=1 "$binary" "${filter[@]}" -Z unstable-options --format json --report-time \
      >>"$work/run-$run.json" 2>>"$work/run-$run.stderr" || status=1
  done <"$work/binaries"
  echo "flaky: run $run of $runs: $([[ $status == 0 ]] && echo green || echo RED) in $(($(date +%s) - started)) s"
done

report "$work" "$runs"
if [[ "${KEEP:-0}" == 1 ]]; then echo "flaky: kept $work"; fi
