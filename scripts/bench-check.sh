#!/usr/bin/env bash
# Benchmark: check's row fill against `pgbench -i`, on this machine's
# PostgreSQL: pgbench -i's rows per second at scale 10 (1,000,110 rows, its
# tables, the vacuum and the primary keys, as its "done in" line counts
# them), then check's fill rows per second on a generated folder of 20
# tables (a tree of NOT NULL and nullable foreign keys, a unique key, a
# CHECK and two plain indexes each) at --rows 200000 (4,000,000 rows; the
# fill and its VACUUM ANALYZE, as check.json's phases count them), and the
# ratio. check starts its own throwaway server; pgbench -i runs on one made
# the same way (initdb --no-sync, C locale, the server's default settings),
# from the same binaries. Prints figures; asserts nothing.
#
#   scripts/bench-check.sh                  # one round of each
#   ROUNDS=3 scripts/bench-check.sh         # three, alternating
#   ROWS=100000 scripts/bench-check.sh      # check's --rows
#   BIN=/path/to/stallbench scripts/...     # measure that build instead of building this tree
#
# A build without check.json's phases (before they existed) is measured by
# its "schema and rows: ... filled in N s" line, which also counts the
# earlier migrations (about a second here).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-1}
ROWS=${ROWS:-200000}
SCALE=10
TABLES=20
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/${CARGO_TARGET_DIR:-target}/release/stallbench
fi
PG_BIN=${STALLBENCH_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}

work=$(mktemp -d /tmp/sbcheck-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$work"
  as_pg=(runuser -u postgres --)
fi
"${as_pg[@]}" "$PG_BIN/initdb" -D "$work/data" -U postgres --auth=trust --no-sync -E UTF8 \
  --locale=C >/dev/null
"${as_pg[@]}" "$PG_BIN/postgres" -D "$work/data" -k "$work" -c listen_addresses= \
  >"$work/server.log" 2>&1 &
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

# The folder: table k references table k/2 (NOT NULL) and k/3 (nullable),
# so the fill order has five steps; the last migration is the new one.
folder=$work/migrations
mkdir -p "$folder"
for t in $(seq 1 "$TABLES"); do
  n=$(printf %02d "$t")
  {
    echo "CREATE TABLE t$n ("
    echo "    id bigserial PRIMARY KEY,"
    if [ "$t" -gt 1 ]; then echo "    parent_id bigint NOT NULL REFERENCES t$(printf %02d $((t / 2))),"; fi
    if [ "$t" -gt 2 ]; then echo "    other_id bigint REFERENCES t$(printf %02d $((t / 3))),"; fi
    echo "    code varchar(40) NOT NULL UNIQUE,"
    echo "    name text NOT NULL,"
    echo "    amount numeric(12, 2) NOT NULL CHECK (amount > 0),"
    echo "    status text NOT NULL CHECK (status IN ('new', 'paid', 'gone')),"
    echo "    created_at timestamptz NOT NULL DEFAULT now(),"
    echo "    updated_at timestamptz"
    echo ");"
    echo "CREATE INDEX t${n}_created_at ON t$n (created_at);"
    if [ "$t" -gt 1 ]; then echo "CREATE INDEX t${n}_parent_id ON t$n (parent_id);"; fi
  } >"$folder/00${n}_create_t$n.sql"
done
echo "ALTER TABLE t$TABLES ADD COLUMN note text;" >"$folder/00$((TABLES + 1))_add_note.sql"

pgbench_rate() {
  local line seconds
  line=$("$PG_BIN/pgbench" -h "$work" -U postgres -i -s "$SCALE" -q postgres 2>&1 | grep '^done in')
  seconds=$(echo "$line" | sed -E 's/^done in ([0-9.]+) s.*/\1/')
  echo "pgbench -i -s $SCALE: $line" >&2
  awk -v rows=$((SCALE * 100000 + SCALE * 10 + SCALE)) -v s="$seconds" 'BEGIN { printf "%.0f", rows / s }'
}

check_rate() {
  local out=$work/check-$1 rate seconds fill=()
  # Every table, as the rate is per table filled (a build from before
  # --fill filled every one anyway).
  if "$BIN" check --help | grep -q -- '--fill'; then fill=(--fill all); fi
  "$BIN" check "$folder" --rows "$ROWS" --trace-only "${fill[@]}" --out "$out" >/dev/null 2>"$work/check.err" || true
  rate=$(grep -o '"fill_rows_per_s": [0-9.]*' "$out/check.json" 2>/dev/null | grep -o '[0-9.]*$' || true)
  if [ -z "$rate" ]; then
    seconds=$(grep -o 'tables filled in [0-9.]* s' "$work/check.err" | grep -o '[0-9.]*' | tail -n 1)
    [ -n "$seconds" ] || { cat "$work/check.err" >&2; exit 1; }
    rate=$(awk -v rows=$((ROWS * TABLES)) -v s="$seconds" 'BEGIN { printf "%.0f", rows / s }')
  fi
  grep -h -e '^time' -e '^schema and rows' "$work/check.err" >&2 || true
  printf '%.0f' "$rate"
}

echo "check: $BIN; PostgreSQL: $PG_BIN; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  pgbench=$(pgbench_rate)
  check=$(check_rate "$round")
  ratio=$(awk -v c="$check" -v p="$pgbench" 'BEGIN { printf "%.2f", c / p }')
  echo "round $round: pgbench -i $pgbench rows/s; check's fill $check rows/s ($((ROWS * TABLES)) rows in $TABLES tables); ratio $ratio"
done
