#!/usr/bin/env bash
# Benchmark: retries (`--max-tries`) in stallbench `run --load-only` against
# pgbench 15+, same server, script, clients, protocol and duration,
# alternating ROUNDS times, each run on a freshly built table: a SERIALIZABLE
# read-modify-write of HOT_ROWS hot rows, CLIENTS clients, --max-tries TRIES.
# Prints, per client, the share of transactions that were retried, the
# retries per transaction, the share that failed (each over the transactions
# that ended: completed and failed, as pgbench counts them) and tps
# (completed per second), and stallbench's figures relative to pgbench's;
# then tps judged as bench-vs-pgbench.sh judges it: the geometric mean of the
# per-round ratios with a 95% bootstrap interval, ahead, at parity or behind.
# Prints figures; asserts nothing.
#
#   scripts/bench-retries.sh                          # 3 rounds of 10 s, 8 clients, 4 rows, 10 tries
#   ROUNDS=3 DURATION=10 CLIENTS=8 HOT_ROWS=4 TRIES=10 scripts/bench-retries.sh
#   SLEEP_MS=2 scripts/bench-retries.sh               # a pg_sleep of 2 ms between the read and the write
#   BIN=/path/to/stallbench scripts/bench-retries.sh  # measure that build instead of building this tree
#
# stallbench runs without its lock observer (--no-observer): this compares the
# clients, as the open-loop comparison of bench-vs-pgbench.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-8}
HOT_ROWS=${HOT_ROWS:-4}
TRIES=${TRIES:-10}
SLEEP_MS=${SLEEP_MS:-0}

if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/stallbench
fi
PG_BIN=${STALLBENCH_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
PGBENCH=$PG_BIN/pgbench
[ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench)

work=$(mktemp -d /tmp/sbretries-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$work"
  as_pg=(runuser -u postgres --)
fi
"${as_pg[@]}" "$PG_BIN/initdb" -D "$work/data" -U postgres --auth=trust --no-sync --no-instructions >/dev/null
# As in bench-vs-pgbench.sh: commits do not wait for the disk, so the round
# trips bound the rate; unix socket only.
"${as_pg[@]}" "$PG_BIN/postgres" -D "$work/data" -k "$work" -c listen_addresses= \
  -c synchronous_commit=off >"$work/server.log" 2>&1 &
server_pid=$!
stop_server() {
  "${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$work/data" stop -m fast >/dev/null 2>&1 || kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap stop_server EXIT
for _ in $(seq 100); do
  "$PG_BIN/pg_isready" -q -h "$work" -U postgres && break
  sleep 0.1
done
export PGHOST=$work PGUSER=postgres PGDATABASE=postgres
URL="host=$work user=postgres dbname=postgres"

SETUP="CREATE TABLE hot_rows (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO hot_rows SELECT g, 0 FROM generate_series(1, $HOT_ROWS) g;"
cat >"$work/rmw.sql" <<SQL
\\set id random(1, $HOT_ROWS)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT n FROM hot_rows WHERE id = :id;
$(if [ "$SLEEP_MS" != 0 ]; then echo "SELECT pg_sleep($SLEEP_MS / 1000.0);"; fi)
UPDATE hot_rows SET n = n + 1 WHERE id = :id;
COMMIT;
SQL
cat >"$work/rmw.toml" <<TOML
name = "rmw"
setup = """$SETUP"""
[load]
clients = $CLIENTS
duration = "${DURATION}s"
[[load.scripts]]
file = "rmw.sql"
TOML

# Each prints "tps completed failed retried retries".
run_pgbench() {
  # A fresh table, vacuumed as stallbench's setup vacuums its own.
  "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
    -c "DROP TABLE IF EXISTS hot_rows" -c "$SETUP" -c "VACUUM (ANALYZE) hot_rows" >/dev/null
  "$PGBENCH" -n -M prepared -c "$CLIENTS" -T "$DURATION" --max-tries "$TRIES" -f "$work/rmw.sql" \
    >"$work/pgbench.out" 2>/dev/null
  python3 - "$work/pgbench.out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def number(pattern):
    found = re.search(pattern, text, re.M)
    return found.group(1) if found else "0"
print(number(r"^tps = ([0-9.]+)"), number(r"^number of transactions actually processed: (\d+)"),
      number(r"^number of failed transactions: (\d+)"), number(r"^number of transactions retried: (\d+)"),
      number(r"^total number of retries: (\d+)"))
PY
}
run_stallbench() {
  "$BIN" run "$work/rmw.toml" --load-only --quiet --no-observer --protocol prepared --max-tries "$TRIES" \
    --db-url "$URL" --out "$work/out" --force >/dev/null
  python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['strategies'][0]; print(s['mean_tps'], s['transactions'], s['failed'], s['retried'], s['retries'])" \
    "$work/out/summary.json"
  rm -rf "$work/out"
}

echo "stallbench $($BIN --version | cut -d' ' -f2) vs $("$PGBENCH" --version); SERIALIZABLE read-modify-write of $HOT_ROWS rows (sleep ${SLEEP_MS} ms),"
echo "$CLIENTS clients, -M prepared, --max-tries $TRIES, ${DURATION}s per run, $ROUNDS rounds, $(nproc) cores"
rounds="$work/rounds"
: >"$rounds"
for round in $(seq "$ROUNDS"); do
  # Odd rounds run pgbench first, even rounds stallbench first.
  if [ $((round % 2)) = 1 ]; then order="pgbench stallbench"; else order="stallbench pgbench"; fi
  line="  round $round:"
  for tool in $order; do
    read -r tps completed failed retried retries < <("run_$tool")
    echo "$tool $tps $completed $failed $retried $retries $round" >>"$rounds"
    line="$line $tool $tps tps ($completed completed, $failed failed, $retried retried, $retries retries),"
  done
  echo "${line%,}"
done
python3 - "$rounds" <<'PY'
import math, random, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
figures = {}
for tool in ("stallbench", "pgbench"):
    mine = [[float(x) for x in r[1:6]] for r in rows if r[0] == tool]
    tps = sum(r[0] for r in mine) / len(mine)
    completed, failed, retried, retries = (sum(r[i] for r in mine) for i in (1, 2, 3, 4))
    ended = completed + failed
    figures[tool] = {"tps": tps, "retried share": retried / ended, "retries per transaction": retries / ended,
                     "failed share": failed / ended}
for name in ("retried share", "retries per transaction", "failed share", "tps"):
    s, p = figures["stallbench"][name], figures["pgbench"][name]
    ratio = f"{s / p:.3f}" if p else "n/a"
    print(f"{name}: stallbench {s:.4f}, pgbench {p:.4f}, stallbench/pgbench {ratio}")
# As bench-vs-pgbench.sh judges tps: the geometric mean of the per-round
# ratios with a 95% bootstrap interval (10,000 resamples, fixed seed).
tps = {(r[0], r[6]): float(r[1]) for r in rows}
logs = [math.log(tps[("stallbench", n)] / tps[("pgbench", n)]) for (tool, n) in tps if tool == "pgbench"]
rng = random.Random(1)
means = sorted(statistics.mean(rng.choices(logs, k=len(logs))) for _ in range(10_000))
low, high = math.exp(means[250]), math.exp(means[9_749])
verdict = "ahead" if low > 1 else "behind" if high < 1 else "at parity"
print(f"tps per round: stallbench/pgbench {math.exp(statistics.mean(logs)):.3f} (95% interval {low:.3f} to {high:.3f}): {verdict}")
PY
