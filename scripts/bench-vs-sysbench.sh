#!/usr/bin/env bash
# Benchmark: stallbench's MariaDB load (`run --load-only`) against sysbench's
# oltp_point_select, on the same throwaway mariadbd, table, clients and
# duration, in ROUNDS rounds of alternating order (odd rounds sysbench first;
# the two runs of a round are back to back, so the machine's drift mostly
# cancels within a round). Prints each
# round's tps, each client's CPU per transaction (user + system, the marginal
# cost beyond a SHORT run), the per-round ratio stallbench/sysbench, their
# geometric mean with a 95% bootstrap interval, and a verdict: `ahead` (the
# interval lies above 1.00), `at parity` (it contains 1.00) or `behind`.
# Asserts nothing.
#
# The load on both sides: one prepared `SELECT c FROM sbtest1 WHERE id = ?`
# per transaction, the id uniform in 1..TABLE_SIZE (sysbench
# --rand-type=uniform; stallbench `\set id random(1, TABLE_SIZE)`), no
# BEGIN/COMMIT (oltp_point_select's event is the select alone), on sysbench's
# own sbtest1 (stallbench copies it into its database before each run).
#
#   scripts/bench-vs-sysbench.sh                         # 6 rounds of 10 s at 4 clients
#   ROUNDS=6 DURATION=10 CLIENTS=4 scripts/bench-vs-sysbench.sh   # the run docs/benchmark.md quotes
#   TABLE_SIZE=100000 ...                                # a larger sbtest1 (default 10000)
#   BIN=/path/to/stallbench scripts/bench-vs-sysbench.sh # measure that build instead of building this tree
#
# Needs Debian's mariadb-server and sysbench (apt-get install mariadb-server sysbench).
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-4}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-6}
TABLE_SIZE=${TABLE_SIZE:-10000}
for tool in mariadbd mariadb-install-db sysbench; do
  PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null ||
    { echo "error: $tool not found; install it with apt-get install mariadb-server sysbench" >&2; exit 1; }
done
MARIADBD=$(PATH=$PATH:/usr/sbin command -v mariadbd)

if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/stallbench
fi

# A throwaway mariadbd as the harness starts its own: a fresh data folder, a
# unix socket only, performance_schema with the metadata-lock instrument (the
# harness's lock observer samples it during its runs), no binary log.
work=$(mktemp -d /tmp/sbmaria-XXXXXX)
mkdir "$work/tmp"
as_mysql=()
if [ "$(id -u)" = 0 ]; then
  chown -R mysql: "$work"
  as_mysql=(runuser -u mysql --)
fi
"${as_mysql[@]}" mariadb-install-db --no-defaults --datadir="$work/data" --tmpdir="$work/tmp" \
  --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >"$work/install.log" 2>&1
SOCK=$work/mysqld.sock
"${as_mysql[@]}" "$MARIADBD" --no-defaults --datadir="$work/data" --socket="$SOCK" \
  --tmpdir="$work/tmp" --pid-file="$work/mariadbd.pid" --log-error="$work/server.log" \
  --skip-networking --performance-schema=ON \
  --performance-schema-instrument='wait/lock/metadata/sql/mdl=ON' --skip-log-bin \
  --innodb-buffer-pool-size=128M --max-connections=100 >/dev/null 2>&1 &
server_pid=$!
stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap stop_server EXIT
for _ in $(seq 200); do
  mariadb --no-defaults -S "$SOCK" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.1
done
mariadb --no-defaults -S "$SOCK" -uroot -e 'CREATE DATABASE sbtest'

SYSBENCH=(sysbench oltp_point_select --db-driver=mysql --mysql-socket="$SOCK" --mysql-user=root
  --mysql-db=sbtest --tables=1 --table-size="$TABLE_SIZE")
"${SYSBENCH[@]}" prepare >/dev/null

# stallbench's side: the same table copied into its own database, the same select.
cat >"$work/point-select.toml" <<TOML
engine = "mariadb"
description = "sysbench's oltp_point_select: SELECT c FROM sbtest1 WHERE id = ?"
strategies = ["naive"]
[setup]
sql = ["CREATE TABLE sbtest1 LIKE sbtest.sbtest1", "INSERT INTO sbtest1 SELECT * FROM sbtest.sbtest1"]
[load]
clients = $CLIENTS
duration_s = $DURATION
[[load.scripts]]
name = "point-select"
sql = """
\\\\set id random(1, $TABLE_SIZE)
SELECT c FROM sbtest1 WHERE id = :id;
"""
# Unused by --load-only, which runs no report and no DDL.
[blocker]
sql = "SELECT 1"
at_s = 0
hold_s = 0
[ddl]
sql = "SELECT 1"
at_s = 0
TOML

# Runs a command with its stdout into file $1; prints the user + system CPU
# time it used, in seconds.
cpu_of() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    subprocess.run(sys.argv[2:], check=True, stdout=out, stderr=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{usage.ru_utime + usage.ru_stime:.3f}")
PY
}

# One run of $1 seconds of each client; each prints "tps transactions cpu_s".
run_sysbench() {
  local cpu
  cpu=$(cpu_of "$work/sysbench.out" "${SYSBENCH[@]}" --threads="$CLIENTS" --time="$1" \
    --rand-type=uniform run)
  sed -n 's/^ *transactions: *\([0-9]*\) *(\([0-9.]*\) per sec\.)/\2 \1/p' "$work/sysbench.out" |
    tr '\n' ' '
  echo "$cpu"
}
run_stallbench() {
  local cpu
  cpu=$(cpu_of /dev/null "$BIN" run "$work/point-select.toml" --load-only --quiet \
    --duration "$1s" --db-url "mysql://root@localhost/?socket=$SOCK" --out "$work/out" --force)
  python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['strategies'][0]; \
print(s['mean_tps'], s['transactions'], sys.argv[2])" "$work/out/summary.json" "$cpu"
  rm -rf "$work/out"
}

# Client CPU per transaction is the marginal cost: (CPU of a DURATION run -
# CPU of a SHORT run) / (their transactions' difference), so start-up,
# connecting and writing the results folder (charts) do not count.
SHORT=${SHORT:-2}
marginal_us() {
  python3 -c "import sys; t, n, c, st, sn, sc = map(float, sys.argv[1:]); \
print(f'{(c - sc) / max(n - sn, 1) * 1e6:.2f}')" "$@"
}
read -r _ sb_short_txns sb_short_cpu <<<"$(run_sysbench "$SHORT")"
read -r _ st_short_txns st_short_cpu <<<"$(run_stallbench "$SHORT")"

echo "stallbench $("$BIN" --version | cut -d' ' -f2) vs $(sysbench --version) on" \
  "$("$MARIADBD" --version | sed 's/.*Ver //; s/ for.*//'); oltp_point_select, $CLIENTS clients," \
  "${DURATION}s per run, $ROUNDS rounds, table of $TABLE_SIZE rows, $(nproc) cores;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for round in $(seq "$ROUNDS"); do
  # Odd rounds sysbench first, even rounds stallbench first.
  if ((round % 2)); then
    read -r sb sb_txns sb_cpu <<<"$(run_sysbench "$DURATION")"
    read -r st st_txns st_cpu <<<"$(run_stallbench "$DURATION")"
  else
    read -r st st_txns st_cpu <<<"$(run_stallbench "$DURATION")"
    read -r sb sb_txns sb_cpu <<<"$(run_sysbench "$DURATION")"
  fi
  ratio=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.3f}')" "$st" "$sb")
  ratios+=("$ratio")
  printf 'round %d: sysbench %.0f tps (%s us CPU/txn), stallbench %.0f tps (%s us CPU/txn), ratio %s (load average %s)\n' \
    "$round" "$sb" "$(marginal_us "$sb" "$sb_txns" "$sb_cpu" 0 "$sb_short_txns" "$sb_short_cpu")" \
    "$st" "$(marginal_us "$st" "$st_txns" "$st_cpu" 0 "$st_short_txns" "$st_short_cpu")" \
    "$ratio" "$(cut -d' ' -f1 /proc/loadavg)"
done
python3 - "${ratios[@]}" <<'PY'
import math, random, statistics, sys
logs = [math.log(float(r)) for r in sys.argv[1:]]
rng = random.Random(1)
means = sorted(statistics.mean(rng.choices(logs, k=len(logs))) for _ in range(10_000))
low, high = math.exp(means[250]), math.exp(means[9_749])
verdict = "ahead" if low > 1 else "behind" if high < 1 else "at parity"
print(f"geometric mean of stallbench/sysbench: {math.exp(statistics.mean(logs)):.3f} "
      f"(95% interval {low:.3f}-{high:.3f}): {verdict}")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
