#!/usr/bin/env bash
# Benchmark: stallbench `run --load-only` against pgbench, same server, script,
# clients, protocol and duration, alternating ROUNDS times, each run on freshly
# built and vacuumed tables: the read script, SELECT 1, and pgbench's built-in
# tpcb-like, simple-update and select-only at scale 1 (`-b NAME` on both
# sides), at each "protocol:clients" of MODES. Then the lock observer's cost
# (load-only TPS with and without it, at 4 and 64 clients, on the read script
# and tpcb-like); the open-loop scheduler's cost; the application pool's cost
# (--pool-size 4 against the lean open loop, SELECT 1); open-loop schedule lag
# and latency against `pgbench -R`; the cost of TLS (`sslmode=require` against
# `sslmode=disable` on a TCP listener, both clients); the peak RSS of the
# default `compare`; with MANY=N, both clients at N connections on a server of
# their own. Ends with a summary, one line per ratio: `ahead` (its 95% interval
# lies above 1.00), `at parity` (it contains 1.00) or `behind`. Prints
# figures; asserts nothing.
#
# The server runs with synchronous_commit = off: a commit does not wait for the
# disk's flush, which neither client controls and which varies from run to run,
# so the round trips the clients make bound the rate.
#
#   scripts/bench-vs-pgbench.sh            # 6 rounds of 10 s per case
#   ROUNDS=6 DURATION=5 scripts/bench-vs-pgbench.sh   # the run docs/benchmark.md quotes
#   MODES="prepared:4 prepared:32" ...     # protocol:clients cases (default prepared:4 prepared:32 simple:4 extended:4)
#   SCRIPTS="read-order tpcb-like" ...     # only these scripts' cases
#   CLIENTS=8 ...                          # the clients of the other rounds (default 4)
#   OBSERVER_CLIENTS="4 64" ...            # the lock observer's rounds (default $CLIENTS 64)
#   ALT_ROUNDS=2 ...                       # rounds of the observer, scheduler, open-loop and TLS comparisons (default ROUNDS)
#   LONG_S=600 scripts/bench-vs-pgbench.sh # also peak RSS of a 60 s and a 600 s run
#   PROFILE=1 scripts/bench-vs-pgbench.sh  # also where the client's cycles go (needs valgrind and strace)
#   MANY=1000 scripts/bench-vs-pgbench.sh  # also N clients each: tps and peak RSS (ALT_ROUNDS rounds)
#   BIN=/path/to/stallbench scripts/...    # measure that build instead of building this tree
#   PARTS="tls" scripts/bench-vs-pgbench.sh # only these parts, of: cases observer pool openloop tls rss
#                                          # (openloop needs cases: its rates come from them)
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-4}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-6}
ALT_ROUNDS=${ALT_ROUNDS:-$ROUNDS}
PARTS=${PARTS:-cases observer pool openloop tls rss}
# Whether part $1 is to run.
want() { [[ " $PARTS " == *" $1 "* ]]; }
if want openloop && ! want cases; then
  echo "error: PARTS=\"$PARTS\": openloop needs cases (its rates come from the read script's case); add cases or drop openloop" >&2
  exit 2
fi
if [ -n "${PROFILE:-}" ]; then
  for tool in valgrind strace; do
    command -v "$tool" >/dev/null || { echo "error: PROFILE=1 needs $tool; install it (apt-get install valgrind strace) or leave PROFILE unset" >&2; exit 2; }
  done
fi

if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/stallbench
fi
PG_BIN=${STALLBENCH_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
PGBENCH=$PG_BIN/pgbench
[ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench)

work=$(mktemp -d /tmp/sbbench-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$work"
  as_pg=(runuser -u postgres --)
fi
"${as_pg[@]}" "$PG_BIN/initdb" -D "$work/data" -U postgres --auth=trust --no-sync --no-instructions >/dev/null
# Besides its unix socket the server listens on 127.0.0.1 for the TLS round,
# with a self-signed certificate made here (initdb's pg_hba.conf trusts
# 127.0.0.1 with and without TLS). The other rounds use the socket.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tls=()
if command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
    -keyout "$work/server.key" -out "$work/server.crt" 2>/dev/null
  chmod 600 "$work/server.key"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$work/server.key" "$work/server.crt"; fi
  tls=(-c ssl=on -c "ssl_cert_file=$work/server.crt" -c "ssl_key_file=$work/server.key")
fi
"${as_pg[@]}" "$PG_BIN/postgres" -D "$work/data" -k "$work" -p "$PORT" -c listen_addresses=127.0.0.1 \
  -c synchronous_commit=off "${tls[@]}" >"$work/server.log" 2>&1 &
server_pid=$!
stop_server() {
  "${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$work/data" stop -m fast >/dev/null 2>&1 || kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null || true
  if [ -n "${many_pid:-}" ]; then
    "${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$work/many/data" stop -m fast >/dev/null 2>&1 || kill "$many_pid" 2>/dev/null
    wait "$many_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap stop_server EXIT
for _ in $(seq 100); do
  "$PG_BIN/pg_isready" -q -h "$work" -U postgres && break
  sleep 0.1
done
export PGHOST=$work PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
URL="host=$work port=$PORT user=postgres dbname=postgres"
TCP="host=127.0.0.1 port=$PORT user=postgres dbname=postgres"

# The reference tables, in public for pgbench; stallbench makes its own copy in its schema.
SETUP="CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, city text NOT NULL);
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int NOT NULL REFERENCES customers (id),
  total numeric(10,2) NOT NULL, status text NOT NULL DEFAULT 'new', created_at timestamptz NOT NULL DEFAULT now());
INSERT INTO customers SELECT g, 'customer ' || g, (ARRAY['Riyadh','Jeddah','Dammam','Abha'])[1 + g % 4] FROM generate_series(1, 1000) g;
INSERT INTO orders (customer_id, total) SELECT 1 + g % 1000, (g % 500) + 0.99 FROM generate_series(1, 200000) g;
CREATE INDEX ON orders (customer_id);
ANALYZE customers; ANALYZE orders;"
# pgbench's tables are rebuilt and vacuumed before each of its runs, as
# stallbench's setup does before each of its own, so both measure the same
# fresh tables with the same background writing after them.
fresh_tables() {
  "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
    -c "DROP TABLE IF EXISTS orders, customers;" -c "$SETUP" \
    -c "VACUUM (ANALYZE) customers, orders;" >/dev/null
}

printf '\\set c random(1, 1000)\nSELECT count(*), sum(total) FROM orders WHERE customer_id = :c;\n' >"$work/read-order.sql"
printf 'SELECT 1;\n' >"$work/select-1.sql"
for name in read-order select-1; do
  cat >"$work/$name.toml" <<TOML
name = "$name"
setup = """$SETUP"""
[load]
clients = $CLIENTS
duration = "${DURATION}s"
[[load.scripts]]
file = "$name.sql"
TOML
done

ratio_line() { python3 -c "import sys; a=[float(x) for x in sys.argv[1].split()]; b=[float(x) for x in sys.argv[2].split()]; print(f'{sum(a)/len(a):.1f} {sum(b)/len(b):.1f} {sum(a)/sum(b):.3f}')" "$1" "$2"; }

# Runs a command with its stdout into file $1; prints the user and the system
# CPU time it used, in seconds, and how many times it went to sleep (voluntary
# context switches).
cpu_of() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    subprocess.run(sys.argv[2:], check=True, stdout=out, stderr=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{usage.ru_utime:.3f} {usage.ru_stime:.3f} {usage.ru_nvcsw}")
PY
}

# Prints the fields $2... of the first strategy in the results folder $1's summary.json.
summary_of() {
  python3 -c "import json,sys; s=json.load(open(sys.argv[1] + '/summary.json'))['strategies'][0]; print(*(s[k] for k in sys.argv[2:]))" "$@"
}

# One run of script $1 for $2 seconds with $3 clients in protocol $4, on the
# server's unix socket or on the connection string $5; each prints
# "tps transactions user_s system_s sleeps". A built-in script ($1 is
# tpcb-like, simple-update or select-only) runs on pgbench's tables at scale
# 1: `pgbench -i` before each pgbench run, the bundled workload `pgbench` (the
# same tables) for stallbench.
is_builtin() { [ "$1" = tpcb-like ] || [ "$1" = simple-update ] || [ "$1" = select-only ]; }
run_pgbench() {
  local cpu tps txns conninfo=() script=(-f "$work/$1.sql")
  if [ -n "${5:-}" ]; then conninfo=("$5"); fi
  if is_builtin "$1"; then
    "$PGBENCH" -i -q -s 1 "${conninfo[@]}" >/dev/null 2>&1
    script=(-b "$1")
  else
    fresh_tables
  fi
  cpu=$(cpu_of "$work/pgbench.out" "$PGBENCH" -n -M "$4" -c "$3" -T "$2" "${script[@]}" "${conninfo[@]}")
  tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench.out" | head -n 1)
  txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench.out")
  echo "$tps $txns $cpu"
}
run_stallbench() {
  local cpu workload=("$work/$1.toml")
  if is_builtin "$1"; then workload=(pgbench -b "$1" --set scale=1); fi
  cpu=$(cpu_of /dev/null "$BIN" run "${workload[@]}" --clients "$3" --protocol "$4" --load-only --quiet \
    --duration "$2s" --db-url "${5:-$URL}" --out "$work/out-run" --force)
  echo "$(summary_of "$work/out-run" mean_tps transactions) $cpu"
  rm -rf "$work/out-run"
}

# Client CPU per transaction is the marginal cost: (CPU of the DURATION runs -
# CPU of a SHORT run) / (their transactions - its transactions), so start-up,
# connecting and writing the results folder (charts) do not count.
SHORT=${SHORT:-2}

# The geometric mean of the per-round ratios (python's argv: the ratios) with
# a 95% bootstrap interval (10,000 resamples of the rounds, fixed seed), and
# where that puts stallbench: `ahead` (the interval lies above 1.00), `at
# parity` (it contains 1.00) or `behind`. Prints "mean low high verdict".
cat >"$work/interval.py" <<'PY'
import math, random, statistics, sys
logs = [math.log(float(r)) for r in sys.argv[1:]]
rng = random.Random(1)
means = sorted(statistics.mean(rng.choices(logs, k=len(logs))) for _ in range(10_000))
low, high = math.exp(means[250]), math.exp(means[9_749])
verdict = "ahead" if low > 1 else "behind" if high < 1 else "at parity"
print(f"{math.exp(statistics.mean(logs)):.3f} {low:.3f} {high:.3f} {verdict}")
PY
# One line per figure for the summary at the end.
: >"$work/summary"

# The cases: each script at each "protocol:clients" of MODES. The rounds are
# pairs run back to back, so the machine's drift mostly cancels within a pair.
MODES=${MODES:-prepared:$CLIENTS prepared:32 simple:$CLIENTS extended:$CLIENTS}
echo "stallbench $($BIN --version | cut -d' ' -f2) vs $("$PGBENCH" --version); ${DURATION}s per run, $ROUNDS rounds, $(nproc) cores"
echo "parts: $PARTS"
if want cases; then
echo "cases: scripts ${SCRIPTS:-read-order select-1 tpcb-like simple-update select-only} at protocol:clients $MODES"
for mode in $MODES; do
  protocol=${mode%%:*} clients=${mode##*:}
  for name in ${SCRIPTS:-read-order select-1 tpcb-like simple-update select-only}; do
    label="$name, $clients clients, -M $protocol"
    rounds="$work/$name-$protocol-$clients.rounds"
    : >"$rounds"
    for round in $(seq "$ROUNDS"); do
      # Odd rounds run pgbench first, even rounds stallbench first, so a drift in
      # the machine's speed does not favour one side.
      if [ $((round % 2)) = 1 ]; then order="pgbench stallbench"; else order="stallbench pgbench"; fi
      line="  $label, round $round:"
      for tool in $order; do
        read -r tps rest < <("run_$tool" "$name" "$DURATION" "$clients" "$protocol")
        echo "$round $tool $tps $rest" >>"$rounds"
        line="$line $tool $tps tps,"
      done
      echo "${line%,}"
    done
    for tool in pgbench stallbench; do
      echo "short $tool $("run_$tool" "$name" "$SHORT" "$clients" "$protocol")" >>"$rounds"
    done
    python3 - "$rounds" "$label" "$work/interval.py" "$work/summary" <<'PY'
import statistics, subprocess, sys
rows = [line.split() for line in open(sys.argv[1])]
label = sys.argv[2]
long = {tool: [r for r in rows if r[0] != "short" and r[1] == tool] for tool in ("stallbench", "pgbench")}
short = {r[1]: r for r in rows if r[0] == "short"}
mean = {tool: statistics.mean(float(r[2]) for r in long[tool]) for tool in long}
by_round = {(r[0], r[1]): float(r[2]) for r in rows if r[0] != "short"}
ratios = sorted(by_round[(n, "stallbench")] / by_round[(n, "pgbench")] for n, tool in by_round if tool == "pgbench")
geo, low, high, verdict = subprocess.run([sys.executable, sys.argv[3], *map(str, ratios)], check=True,
                                         capture_output=True, text=True).stdout.split(maxsplit=3)
verdict = verdict.strip()
cpu = {}
for tool in long:
    txns = statistics.mean(float(r[3]) for r in long[tool]) - float(short[tool][3])
    user = statistics.mean(float(r[4]) for r in long[tool]) - float(short[tool][4])
    system = statistics.mean(float(r[5]) for r in long[tool]) - float(short[tool][5])
    sleeps = statistics.mean(float(r[6]) for r in long[tool]) - float(short[tool][6])
    cpu[tool] = (user / txns * 1e6, system / txns * 1e6, sleeps / txns)
print(f"{label}: stallbench {mean['stallbench']:.1f} tps, pgbench {mean['pgbench']:.1f} tps; "
      f"per-round ratio stallbench/pgbench, geometric mean {geo} (95% interval {low} to {high}, "
      f"{len(ratios)} rounds from {ratios[0]:.3f} to {ratios[-1]:.3f}): {verdict}")
print(f"{label}: client CPU per transaction: " + ", ".join(
    f"{tool} {cpu[tool][0] + cpu[tool][1]:.1f} us (user {cpu[tool][0]:.1f}, system {cpu[tool][1]:.1f}; "
    f"{cpu[tool][2]:.2f} sleeps)" for tool in ("stallbench", "pgbench")))
with open(sys.argv[4], "a") as summary:
    summary.write(f"{label}: stallbench/pgbench {geo} ({low} to {high}): {verdict}\n")
PY
  done
done
fi

# Mean TPS of `run --load-only` on script $1 with flags $2 and with flags $3,
# alternating ALT_ROUNDS times; prints "tps_a tps_b ratio".
alternate() {
  local name=$1 a="" b="" round side flags tps order
  for round in $(seq "$ALT_ROUNDS"); do
    # Alternating order, as above.
    if [ $((round % 2)) = 1 ]; then order="a b"; else order="b a"; fi
    for side in $order; do
      if [ "$side" = a ]; then flags=$2; else flags=$3; fi
      # shellcheck disable=SC2086 # flags are words
      "$BIN" run "$work/$name.toml" --load-only --quiet $flags --db-url "$URL" --out "$work/out-alt-$side-$round" --force >/dev/null
      tps=$(summary_of "$work/out-alt-$side-$round" mean_tps)
      if [ "$side" = a ]; then a="$a $tps"; else b="$b $tps"; fi
      rm -rf "$work/out-alt-$side-$round"
    done
  done
  ratio_line "$a" "$b"
}

# The lock observer's cost: load-only tps with it against without it
# (--no-observer), on the read script and on tpcb-like, at each of
# OBSERVER_CLIENTS, ALT_ROUNDS rounds of alternating order: the geometric mean
# of the per-round ratios with its 95% interval. The observer costs at most 2%
# where the interval's lower end is above 0.98.
if want observer; then
for clients in ${OBSERVER_CLIENTS:-$CLIENTS 64}; do
  for name in read-order tpcb-like; do
    workload=("$work/$name.toml")
    if is_builtin "$name"; then workload=(pgbench -b "$name" --set scale=1); fi
    ratios="" line="  lock observer, $name, $clients clients:"
    for round in $(seq "$ALT_ROUNDS"); do
      if [ $((round % 2)) = 1 ]; then order="with without"; else order="without with"; fi
      for side in $order; do
        flags=()
        if [ "$side" = without ]; then flags=(--no-observer); fi
        "$BIN" run "${workload[@]}" --clients "$clients" --load-only --quiet "${flags[@]}" --duration "${DURATION}s" \
          --db-url "$URL" --out "$work/out-observer" --force >/dev/null
        tps=$(summary_of "$work/out-observer" mean_tps)
        rm -rf "$work/out-observer"
        if [ "$side" = with ]; then with=$tps; else without=$tps; fi
      done
      ratios="$ratios $(python3 -c "print(f'{$with / $without:.4f}')")"
      line="$line $with/$without,"
    done
    echo "${line%,} tps with/without"
    read -r geo low high _ < <(python3 "$work/interval.py" $ratios)
    cheap=$(python3 -c "print('yes' if $low > 0.98 else 'no')")
    echo "lock observer, $name, $clients clients: tps with/without, geometric mean $geo (95% interval $low to $high, $ALT_ROUNDS rounds); costs at most 2%: $cheap"
    echo "lock observer, $name, $clients clients: with/without $geo ($low to $high): costs at most 2%: $cheap" >>"$work/summary"
  done
done
fi

# The open-loop scheduler's cost: a --rate far above capacity (every arrival is
# already due, so the clients never sleep) against the closed loop, on SELECT 1.
if want pool; then
read -r mean_open mean_closed ratio <<<"$(alternate select-1 "--rate 10000000" "")"
echo "open-loop scheduler: $mean_open tps at --rate 10000000, $mean_closed tps closed loop, ratio $ratio"

# The application pool's cost per request (--rate with --pool-size, deadpool-postgres):
# SELECT 1 offered at the closed loop's capacity measured just above, a pool of 4
# against the lean open loop's 4 connections; past 1,000 requests in flight a new one
# is rejected, so an overloaded pool's queue stays bounded. Completed requests per second.
pool_rate=${mean_closed%.*}
read -r mean_pool mean_lean ratio <<<"$(alternate select-1 "--rate $pool_rate --pool-size 4 --max-in-flight 1000" "--rate $pool_rate --clients 4")"
echo "application pool: $mean_pool tps with --pool-size 4, $mean_lean tps on 4 lean connections, at --rate $pool_rate (SELECT 1), ratio $ratio"
fi

# Open loop on the read script: stallbench --rate R against pgbench -R R, at
# R = 1000 and at half the closed-loop capacity measured above (pgbench's mean
# tps), ALT_ROUNDS rounds of alternating order each. Both clients count latency
# from the scheduled start; the schedule lag is how late a transaction was
# sent. Both figures are means over the transactions of the steady state, the
# first and the last second left out: stallbench's timeline.csv (lag_ms and
# lat_mean_ms per second, weighted by tps), pgbench's per-second aggregate log.
# stallbench runs without its lock observer: this compares the clients.
if want openloop; then
capacity=$(awk '$1 != "short" && $2 == "pgbench" { tps += $3; n++ } END { printf "%d", tps / n }' "$work/read-order-prepared-$CLIENTS.rounds")
# One open-loop run of pgbench at rate $1; prints "lag_ms latency_ms".
open_pgbench() {
  fresh_tables
  rm -f "$work"/pgbench-open.*
  "$PGBENCH" -n -M prepared -c "$CLIENTS" -T "$DURATION" -R "$1" -f "$work/read-order.sql" \
    --log --log-prefix="$work/pgbench-open" --aggregate-interval=1 >/dev/null 2>&1
  python3 - "$work"/pgbench-open.* <<'PY'
import sys
# An aggregate line: interval_start transactions sum_latency sum_latency_2
# min_latency max_latency sum_lag ..., times in us.
rows = sorted([float(x) for x in line.split()] for path in sys.argv[1:] for line in open(path))
steady = rows[1:-1]
transactions = sum(r[1] for r in steady) or float("nan")  # nan: a run too short for a steady state
print(f"{sum(r[6] for r in steady) / transactions / 1000:.4f} "
      f"{sum(r[2] for r in steady) / transactions / 1000:.4f}")
PY
}
# One open-loop run of stallbench at rate $1; prints "lag_ms latency_ms".
open_stallbench() {
  "$BIN" run "$work/read-order.toml" --load-only --quiet --no-observer --rate "$1" --duration "${DURATION}s" \
    --db-url "$URL" --out "$work/out-open" --force >/dev/null
  python3 - "$work/out-open/timeline.csv" <<'PY'
import csv, sys
rows = sorted(csv.DictReader(open(sys.argv[1])), key=lambda row: int(row["second"]))
steady = rows[1:-1]
transactions = sum(float(r["tps"]) for r in steady) or float("nan")
print(f"{sum(float(r['tps']) * float(r['lag_ms']) for r in steady) / transactions:.4f} "
      f"{sum(float(r['tps']) * float(r['lat_mean_ms']) for r in steady) / transactions:.4f}")
PY
  rm -rf "$work/out-open"
}
echo "open loop: closed-loop capacity $capacity tps (pgbench, read script), rates 1000 and $((capacity / 2))"
for rate in 1000 $((capacity / 2)); do
  echo "open loop at $rate tps:"
  echo "  pgbench:    $PGBENCH -n -M prepared -c $CLIENTS -T $DURATION -R $rate -f read-order.sql --log --aggregate-interval=1"
  echo "  stallbench: $BIN run read-order.toml --load-only --no-observer --rate $rate --duration ${DURATION}s --db-url ..."
  rounds="$work/open-$rate.rounds"
  : >"$rounds"
  for round in $(seq "$ALT_ROUNDS"); do
    # Alternating order, as above.
    if [ $((round % 2)) = 1 ]; then order="pgbench stallbench"; else order="stallbench pgbench"; fi
    line="  round $round:"
    for tool in $order; do
      read -r lag_ms latency_ms < <("open_$tool" "$rate")
      echo "$tool $lag_ms $latency_ms" >>"$rounds"
      line="$line $tool lag $lag_ms ms latency $latency_ms ms,"
    done
    echo "${line%,}"
  done
  python3 - "$rounds" "$rate" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
lag = {tool: statistics.mean(float(r[1]) for r in rows if r[0] == tool) for tool in ("stallbench", "pgbench")}
latency = {tool: statistics.mean(float(r[2]) for r in rows if r[0] == tool) for tool in ("stallbench", "pgbench")}
ratio = lambda a, b: f"{a / b:.2f}" if b > 0 else "n/a"
print(f"open loop at {sys.argv[2]} tps, steady state, {len(rows) // 2} rounds: "
      f"schedule lag stallbench {lag['stallbench']:.3f} ms, pgbench {lag['pgbench']:.3f} ms "
      f"(ratio {ratio(lag['stallbench'], lag['pgbench'])}, difference {lag['stallbench'] - lag['pgbench']:+.3f} ms); "
      f"mean latency stallbench {latency['stallbench']:.3f} ms, pgbench {latency['pgbench']:.3f} ms "
      f"(ratio {ratio(latency['stallbench'], latency['pgbench'])})")
PY
done
fi

# TLS: the read script over TCP on 127.0.0.1 with sslmode=require and with
# sslmode=disable, for both clients, ALT_ROUNDS rounds; odd rounds run TLS
# first and pgbench first within each mode, even rounds the other way round.
# Both modes use the same listener, so each client's TLS/plain ratio is the
# cost of TLS alone (handshake, encryption), not of TCP against the socket.
if ! want tls; then
  :
elif [ ${#tls[@]} = 0 ]; then
  echo "TLS round skipped: no openssl to make the server's certificate (apt-get install openssl)"
else
  echo "TLS: read script on $TCP, sslmode=require against sslmode=disable, $ALT_ROUNDS rounds"
  rounds="$work/tls.rounds"
  : >"$rounds"
  for round in $(seq "$ALT_ROUNDS"); do
    # Alternating order, as above.
    if [ $((round % 2)) = 1 ]; then
      modes="require disable" order="pgbench stallbench"
    else
      modes="disable require" order="stallbench pgbench"
    fi
    line="  round $round:"
    for sslmode in $modes; do
      for tool in $order; do
        read -r tps _ < <("run_$tool" read-order "$DURATION" "$CLIENTS" prepared "$TCP sslmode=$sslmode")
        echo "$tool $sslmode $tps $round" >>"$rounds"
        line="$line $tool $sslmode $tps tps,"
      done
    done
    echo "${line%,}"
  done
  python3 - "$rounds" "$work/interval.py" "$work/summary" <<'PY'
import statistics, subprocess, sys
rows = [line.split() for line in open(sys.argv[1])]
tps = {(tool, mode): statistics.mean(float(r[2]) for r in rows if r[0] == tool and r[1] == mode)
       for tool in ("stallbench", "pgbench") for mode in ("require", "disable")}
by_round = {(r[0], r[1], r[3]): float(r[2]) for r in rows}
for mode, label in (("require", "TLS (sslmode=require)"), ("disable", "plain TCP (sslmode=disable)")):
    # The per-round ratios' geometric mean and interval, as for the cases.
    ratios = [by_round["stallbench", mode, n] / by_round["pgbench", mode, n]
              for (tool, m, n) in by_round if tool == "pgbench" and m == mode]
    geo, low, high, verdict = subprocess.run([sys.executable, sys.argv[2], *map(str, ratios)], check=True,
                                             capture_output=True, text=True).stdout.split(maxsplit=3)
    verdict = verdict.strip()
    print(f"read-order over {label}: stallbench {tps['stallbench', mode]:.1f} tps, "
          f"pgbench {tps['pgbench', mode]:.1f} tps; per-round ratio stallbench/pgbench, "
          f"geometric mean {geo} (95% interval {low} to {high}, {len(ratios)} rounds "
          f"from {min(ratios):.3f} to {max(ratios):.3f}): {verdict}")
    with open(sys.argv[3], "a") as summary:
        summary.write(f"read-order over {label}: stallbench/pgbench {geo} ({low} to {high}): {verdict}\n")
print("read-order TLS/plain tps ratio: " + ", ".join(
    f"{tool} {tps[tool, 'require'] / tps[tool, 'disable']:.3f}" for tool in ("stallbench", "pgbench")))
PY
fi

# Peak RSS of the default compare (against this server, so only stallbench is measured).
if want rss; then
rss_kib=$(python3 - "$BIN" "$URL" "$work/out-compare" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "compare", "--quiet", "--db-url", sys.argv[2], "--out", sys.argv[3], "--force"],
               check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)
echo "peak RSS of the default compare: $((rss_kib / 1024)) MiB ($rss_kib KiB)"
fi

# Many clients (set MANY, e.g. MANY=1000): both clients with MANY connections
# on a server of their own (max_connections MANY + 50), on the read script's
# tables in public (stallbench `--in-place`, so both read the same tables),
# ALT_ROUNDS rounds in alternating order: tps, their ratio, and each client's
# peak RSS. pgbench runs MANY_JOBS threads (default 2), stallbench its one load
# thread. Runs last MANY_DURATION seconds (default 20): pgbench's -T includes
# opening its connections (its tps leaves that time out), which takes seconds
# at 1,000 clients. Before each run the previous run's backends are gone.
if [ -n "${MANY:-}" ]; then
  MANY_JOBS=${MANY_JOBS:-2}
  MANY_DURATION=${MANY_DURATION:-20}
  many=$work/many
  mkdir "$many"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$many"; fi
  "${as_pg[@]}" "$PG_BIN/initdb" -D "$many/data" -U postgres --auth=trust --no-sync --no-instructions >/dev/null
  "${as_pg[@]}" "$PG_BIN/postgres" -D "$many/data" -k "$many" -p "$PORT" -c listen_addresses= \
    -c max_connections=$((MANY + 50)) >"$many/server.log" 2>&1 &
  many_pid=$!
  for _ in $(seq 100); do
    "$PG_BIN/pg_isready" -q -h "$many" -U postgres && break
    sleep 0.1
  done
  "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 -h "$many" -c "$SETUP" -c "VACUUM (ANALYZE) customers, orders;" >/dev/null
  # Runs a command with its stdout into file $1; prints its peak RSS in KiB.
  peak_of() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    subprocess.run(sys.argv[2:], check=True, stdout=out, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
  }
  # Waits until the backends of the last run have exited.
  many_settle() {
    for _ in $(seq 300); do
      [ "$("$PG_BIN/psql" -X -A -t -h "$many" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")" -le 1 ] && return
      sleep 0.1
    done
  }
  # One run with MANY clients; each prints "tps peak_rss_kib".
  many_pgbench() {
    local kib
    many_settle
    kib=$(peak_of "$work/pgbench-many.out" "$PGBENCH" -n -M prepared -c "$MANY" -j "$MANY_JOBS" -T "$MANY_DURATION" \
      -f "$work/read-order.sql" -h "$many")
    echo "$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench-many.out" | head -n 1) $kib"
  }
  many_stallbench() {
    local kib
    many_settle
    kib=$(peak_of /dev/null "$BIN" run "$work/read-order.toml" --load-only --in-place --quiet --clients "$MANY" \
      --duration "${MANY_DURATION}s" --db-url "host=$many port=$PORT user=postgres dbname=postgres" --out "$work/out-many" --force)
    echo "$(summary_of "$work/out-many" mean_tps) $kib"
    rm -rf "$work/out-many"
  }
  echo "$MANY clients: read script, ${MANY_DURATION}s per run, $ALT_ROUNDS rounds, on a server with max_connections $((MANY + 50))"
  echo "  pgbench:    $PGBENCH -n -M prepared -c $MANY -j $MANY_JOBS -T $MANY_DURATION -f read-order.sql"
  echo "  stallbench: $BIN run read-order.toml --load-only --in-place --clients $MANY --duration ${MANY_DURATION}s --db-url ..."
  rounds="$work/many.rounds"
  : >"$rounds"
  for round in $(seq "$ALT_ROUNDS"); do
    # Alternating order, as above.
    if [ $((round % 2)) = 1 ]; then order="pgbench stallbench"; else order="stallbench pgbench"; fi
    line="  round $round:"
    for tool in $order; do
      read -r tps kib < <("many_$tool")
      echo "$tool $tps $kib" >>"$rounds"
      line="$line $tool $tps tps peak RSS $kib KiB,"
    done
    echo "${line%,}"
  done
  python3 - "$rounds" "$MANY" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
tps = {tool: [float(r[1]) for r in rows if r[0] == tool] for tool in ("stallbench", "pgbench")}
kib = {tool: [int(r[2]) for r in rows if r[0] == tool] for tool in ("stallbench", "pgbench")}
ratios = [s / p for s, p in zip(tps["stallbench"], tps["pgbench"])]
print(f"{sys.argv[2]} clients: stallbench {statistics.mean(tps['stallbench']):.1f} tps, "
      f"pgbench {statistics.mean(tps['pgbench']):.1f} tps, ratio stallbench/pgbench "
      f"{statistics.mean(tps['stallbench']) / statistics.mean(tps['pgbench']):.3f} "
      f"(per round: {', '.join(f'{r:.3f}' for r in ratios)}); peak RSS stallbench "
      f"{max(kib['stallbench']) / 1024:.1f} MiB, pgbench {max(kib['pgbench']) / 1024:.1f} MiB (highest of the rounds)")
PY
fi

# Memory over a long run (set LONG_S, e.g. LONG_S=600): peak RSS of a 60 s and a
# LONG_S load-only run; per-second histograms are settled as the run goes, so
# the two should be close.
if [ -n "${LONG_S:-}" ]; then
  for seconds in 60 "$LONG_S"; do
    kib=$(python3 - "$BIN" "$URL" "$work/read-order.toml" "$seconds" "$work/out-long-$seconds" <<'PY'
import resource, subprocess, sys
bin, url, workload, seconds, out = sys.argv[1:]
subprocess.run([bin, "run", workload, "--load-only", "--quiet", "--duration", f"{seconds}s",
                "--db-url", url, "--out", out, "--force"], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)
    echo "peak RSS of a ${seconds} s run --load-only: $((kib / 1024)) MiB ($kib KiB)"
  done
fi

# Where the client's cycles go (PROFILE=1), on the read script: user-space
# instructions per transaction under callgrind, and system calls per
# transaction under strace (all threads), both marginal (a DURATION run minus a
# SHORT run). The tools slow the clients down, so these count work, not time.
# System calls made less than 0.05 times per transaction are left out.
if [ -n "${PROFILE:-}" ]; then
  # One run of the read script by $1 for $2 seconds under the command in the
  # rest; prints its transactions.
  profiled() {
    local tool=$1 seconds=$2
    shift 2
    if [ "$tool" = pgbench ]; then
      fresh_tables
      "$@" "$PGBENCH" -n -M prepared -c "$CLIENTS" -T "$seconds" -f "$work/read-order.sql" 2>/dev/null |
        sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p'
    else
      "$@" "$BIN" run "$work/read-order.toml" --load-only --quiet --duration "${seconds}s" --db-url "$URL" --out "$work/out-prof" --force >/dev/null 2>&1
      summary_of "$work/out-prof" transactions
      rm -rf "$work/out-prof"
    fi
  }
  for tool in pgbench stallbench; do
    for seconds in "$SHORT" "$DURATION"; do
      txns=$(profiled "$tool" "$seconds" valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out")
      echo "$txns $(sed -n 's/^totals: //p' "$work/callgrind.out")" >"$work/$tool-$seconds.callgrind"
      profiled "$tool" "$seconds" strace -f -c -o "$work/$tool-$seconds.strace" >"$work/$tool-$seconds.strace-txns"
    done
  done
  python3 - "$work" "$SHORT" "$DURATION" <<'PY'
import sys
work, short, long = sys.argv[1:]

def syscalls(path):
    """Calls and failed calls per system call, from strace -c's table."""
    counts = {}
    for line in open(path):
        fields = line.split()
        if len(fields) in (5, 6) and fields[3].isdigit() and fields[-1] != "total":
            counts[fields[-1]] = (int(fields[3]), int(fields[4]) if len(fields) == 6 else 0)
    return counts

for tool in ("stallbench", "pgbench"):
    (t0, i0), (t1, i1) = ([int(x) for x in open(f"{work}/{tool}-{s}.callgrind").read().split()] for s in (short, long))
    s0, s1 = (syscalls(f"{work}/{tool}-{s}.strace") for s in (short, long))
    n0, n1 = (int(open(f"{work}/{tool}-{s}.strace-txns").read()) for s in (short, long))
    per_txn = {name: ((s1.get(name, (0, 0))[0] - s0.get(name, (0, 0))[0]) / (n1 - n0),
                      (s1.get(name, (0, 0))[1] - s0.get(name, (0, 0))[1]) / (n1 - n0)) for name in s1}
    top = sorted(((calls, failed, name) for name, (calls, failed) in per_txn.items() if calls >= 0.05), reverse=True)
    print(f"read-order: client work per transaction: {tool} {(i1 - i0) / (t1 - t0):,.0f} user-space instructions, "
          f"{sum(calls for calls, _, _ in top):.2f} system calls of the main kinds ("
          + ", ".join(f"{name} {calls:.2f}" + (f" of which {failed:.2f} failed" if failed >= 0.05 else "")
                      for calls, failed, name in top) + ")")
PY
fi

echo "summary:"
sed 's/^/  /' "$work/summary"
