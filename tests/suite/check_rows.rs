//! The row generator of `stallbench check` on a real server: a schema with
//! every common column type, an enum and a domain, a composite primary key,
//! a self-reference, a two-level chain of foreign keys, a key made only of
//! foreign keys and a CHECK it cannot satisfy is filled (that table named
//! and skipped), and the rows keep every constraint; the same seed gives the
//! same rows; cycles, unknown types and narrow unique keys are named.

use std::time::Instant;

use crate::common::{connect, start_throwaway_server};
use stallbench::config::RowCounts;
use stallbench::engine::postgres::check::rows::{TableFill, fill_tables};

const SCHEMA: &str = r#"
CREATE SCHEMA app;
CREATE TYPE app.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN app.positive AS integer NOT NULL CHECK (VALUE > 0);
CREATE TABLE app.customers (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email varchar(64) NOT NULL UNIQUE,
    name text NOT NULL,
    code char(8),
    active boolean NOT NULL DEFAULT true,
    born date,
    created_at timestamptz NOT NULL DEFAULT now(),
    seen_at timestamp,
    score real,
    balance double precision,
    credit numeric(10, 2) NOT NULL,
    small smallint,
    big bigint,
    uid uuid NOT NULL UNIQUE,
    doc jsonb,
    raw json,
    blob bytea,
    tags text[],
    mood app.mood NOT NULL,
    rank app.positive,
    address inet,
    opens time,
    wait interval,
    status text NOT NULL CHECK (status IN ('new', 'active', 'gone'))
);
CREATE TABLE app.categories (
    id serial PRIMARY KEY,
    parent_id integer REFERENCES app.categories,
    name text NOT NULL
);
CREATE TABLE app.orders (
    id bigserial PRIMARY KEY,
    customer_id bigint NOT NULL REFERENCES app.customers,
    placed date NOT NULL,
    shipped date CHECK (shipped > placed),
    total numeric(12, 2) NOT NULL CHECK (total > 0),
    rating smallint CHECK (rating BETWEEN 1 AND 5),
    discount numeric(4, 2) CHECK (discount >= 0.5 AND discount <= 50)
);
CREATE TABLE app.order_items (
    order_id bigint NOT NULL REFERENCES app.orders,
    line integer NOT NULL,
    product text NOT NULL,
    qty integer NOT NULL CHECK (qty > 0),
    PRIMARY KEY (order_id, line)
);
CREATE TABLE app.favourites (
    customer_id bigint NOT NULL REFERENCES app.customers,
    category_id integer NOT NULL REFERENCES app.categories,
    PRIMARY KEY (customer_id, category_id)
);
CREATE TABLE app.codes (
    id integer PRIMARY KEY,
    code text NOT NULL CHECK (code ~ '^[A-Z]{3}$')
);
CREATE TABLE app.reports (
    id serial PRIMARY KEY,
    order_id bigint REFERENCES app.orders,
    customer_id bigint REFERENCES app.customers,
    reason text NOT NULL,
    CHECK (num_nonnulls(order_id, customer_id) = 1)
);
CREATE TABLE app.links (
    id serial PRIMARY KEY,
    url text,
    path text,
    CHECK ((url IS NULL) <> (path IS NULL))
);
CREATE TABLE app.costs (
    id serial PRIMARY KEY,
    model text,
    model_property text,
    provider text,
    provider_property text,
    CHECK (NOT ((model IS NOT NULL) AND (model_property IS NOT NULL))),
    CHECK (provider IS NULL OR provider_property IS NULL)
);
CREATE TABLE app.statuses (id integer PRIMARY KEY, name text NOT NULL);
INSERT INTO app.statuses VALUES (1, 'open'), (2, 'closed');
"#;

/// Rows per table: enough for the keys to collide if they could; the
/// benchmark's 100,000 with `CHECK_ROWS=100000` (the fill's time is printed
/// with --nocapture).
fn rows() -> RowCounts {
    every(
        std::env::var("CHECK_ROWS")
            .ok()
            .and_then(|rows| rows.parse().ok())
            .unwrap_or(20_000),
    )
}

/// `--rows N`: the same count for every table.
fn every(rows: u64) -> RowCounts {
    RowCounts {
        every_table: rows,
        tables: Vec::new(),
    }
}

fn fill_of<'a>(fills: &'a [TableFill], table: &str) -> &'a TableFill {
    fills
        .iter()
        .find(|fill| fill.table == table)
        .unwrap_or_else(|| panic!("no fill of {table}: {fills:#?}"))
}

#[test]
fn every_table_is_filled_and_keeps_its_constraints_or_is_named_and_skipped() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_throwaway_server(&runtime);
    let url = server.connection_string();
    runtime.block_on(async {
        let client = connect(&url).await;
        client.batch_execute(SCHEMA).await.unwrap();
        let counts = rows();
        let rows = counts.every_table;
        let started = Instant::now();
        let fills = fill_tables(&[&client], &["app"], &counts, 42, &mut |_, _, _| {})
            .await
            .unwrap_or_else(|err| panic!("{err}"));
        eprintln!("filled in {:.2?}: {fills:#?}", started.elapsed());

        let filled: Vec<&str> = fills.iter().map(|fill| fill.table.as_str()).collect();
        let parent_first = |parent: &str, child: &str| {
            let at = |name| filled.iter().position(|table| *table == name).unwrap();
            assert!(at(parent) < at(child), "{parent} after {child}: {filled:?}");
        };
        parent_first("customers", "orders");
        parent_first("orders", "order_items");
        parent_first("categories", "favourites");
        let tables = ["customers", "categories", "orders", "order_items", "favourites"];
        for table in tables.into_iter().chain(["reports", "links", "costs"]) {
            let fill = fill_of(&fills, table);
            assert_eq!((fill.rows, &fill.skipped), (rows, &None), "{fill:?}");
            let counted: i64 = client
                .query_one(&format!("SELECT count(*) FROM app.{table}"), &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(counted as u64, rows, "{table}");
        }
        let codes = fill_of(&fills, "codes");
        assert_eq!(codes.rows, 0);
        let reason = codes.skipped.as_deref().unwrap();
        assert!(reason.contains("codes_code_check"), "{reason}");
        assert!(reason.ends_with("give its rows with --seed FILE (your own SQL)"), "{reason}");
        let statuses = fill_of(&fills, "statuses");
        assert_eq!((statuses.rows, statuses.kept, &statuses.skipped), (0, 2, &None));

        let one = |sql: &'static str| {
            let client = &client;
            async move { client.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) as u64 }
        };
        // Distinct keys, NOT NULL filled, defaults left to the server.
        assert_eq!(one("SELECT count(DISTINCT email) FROM app.customers").await, rows);
        assert_eq!(one("SELECT count(DISTINCT uid) FROM app.customers").await, rows);
        assert_eq!(one("SELECT count(*) FROM app.customers WHERE active").await, rows);
        assert_eq!(one("SELECT count(DISTINCT mood) FROM app.customers").await, 3);
        assert_eq!(one("SELECT count(DISTINCT status) FROM app.customers").await, 3);
        assert_eq!(one("SELECT count(*) FROM app.customers WHERE rank IS NULL OR tags IS NULL OR doc IS NULL").await, 0);
        // A self-reference points at an earlier row, the first row at none.
        assert_eq!(one("SELECT count(*) FROM app.categories WHERE parent_id IS NULL").await, 1);
        assert_eq!(
            one("SELECT count(*) FROM app.categories c JOIN app.categories p ON p.id = c.parent_id WHERE p.id < c.id").await,
            rows - 1
        );
        // The two-level chain and the key of two parents.
        assert!(one("SELECT count(DISTINCT customer_id) FROM app.orders").await > rows / 2);
        assert_eq!(
            one("SELECT count(*) FROM app.order_items i JOIN app.orders o ON o.id = i.order_id \
                 JOIN app.customers c ON c.id = o.customer_id")
            .await,
            rows
        );
        assert_eq!(one("SELECT count(*) FROM app.orders WHERE shipped <= placed").await, 0);
        assert_eq!(one("SELECT count(DISTINCT rating) FROM app.orders").await, 5);
        assert!(one("SELECT count(DISTINCT category_id) FROM app.favourites").await > rows / 2);
        // The CHECKs that say which column holds a value: one of the two does.
        assert_eq!(one("SELECT count(*) FROM app.reports WHERE order_id IS NOT NULL").await, rows);
        assert_eq!(one("SELECT count(*) FROM app.links WHERE url IS NOT NULL").await, rows);
        // At most one of two (openmeter's `features`): the first keeps its values.
        assert_eq!(
            one("SELECT count(*) FROM app.costs WHERE model IS NOT NULL AND provider IS NOT NULL")
                .await,
            rows
        );
        // Every constraint holds, checked again by the server.
        client
            .batch_execute(
                "ALTER TABLE app.orders ADD CONSTRAINT recheck CHECK (total > 0) NOT VALID;
                 ALTER TABLE app.orders VALIDATE CONSTRAINT recheck;",
            )
            .await
            .unwrap();
        // Each sequence the client numbered for is past the rows: a new row's key is new.
        assert_eq!(
            one("INSERT INTO app.categories (name) VALUES ('new') RETURNING id::bigint").await,
            rows + 1
        );
        assert_eq!(
            one("INSERT INTO app.customers (email, name, credit, uid, mood, rank, status) \
                 VALUES ('new', 'n', 1, gen_random_uuid(), 'ok', 1, 'new') RETURNING id")
            .await,
            rows + 1
        );
        // ANALYZE ran.
        assert_eq!(
            one("SELECT count(*) FROM pg_stat_user_tables WHERE schemaname = 'app' AND last_analyze IS NOT NULL").await,
            10
        );
    });
}

#[test]
fn the_same_seed_gives_the_same_rows_sent_in_binary_or_as_text() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_throwaway_server(&runtime);
    let url = server.connection_string();
    runtime.block_on(async {
        let client = connect(&url).await;
        // Every type the fill sends in binary, an integer CHECK, a
        // self-reference and keys of three types. `d` adds an array, which
        // has no binary encoding: its `t` goes as text.
        let table = "CREATE TYPE {s}.mood AS ENUM ('x', 'y');
            CREATE DOMAIN {s}.positive AS integer CHECK (VALUE > 0);
            CREATE TABLE {s}.p (id bigint PRIMARY KEY, code text NOT NULL UNIQUE,
                                uid uuid NOT NULL UNIQUE);
            CREATE TABLE {s}.t (id integer PRIMARY KEY, parent integer REFERENCES {s}.t,
                p_id bigint REFERENCES {s}.p, p_code text REFERENCES {s}.p (code),
                p_uid uuid REFERENCES {s}.p (uid), name text NOT NULL, short varchar(6),
                fixed char(5), small smallint, big bigint, rank {s}.positive,
                price numeric(8, 2), plain numeric, stars numeric CHECK (stars BETWEEN 1 AND 5),
                level integer CHECK (level BETWEEN -3 AND 3), ratio real, weight float8,
                flag boolean, born date, at timestamp, at_tz timestamptz, opens time,
                span interval, uid uuid, doc jsonb, raw json, blob bytea, address inet,
                net cidr, mood {s}.mood, status text CHECK (status IN ('a', 'b')) {tags})";
        for schema in ["a", "b", "c", "d"] {
            let tags = if schema == "d" { ", tags text[]" } else { "" };
            let sql = format!(
                "CREATE SCHEMA {schema}; {};",
                table.replace("{s}", schema).replace("{tags}", tags)
            );
            client.batch_execute(&sql).await.unwrap();
        }
        for (schema, seed) in [("a", 7), ("b", 7), ("c", 8), ("d", 7)] {
            let fills = fill_tables(&[&client], &[schema], &every(1000), seed, &mut |_, _, _| {})
                .await
                .unwrap();
            assert!(fills.iter().all(|fill| fill.rows == 1000), "{fills:?}");
        }
        let digest = |schema: &str| {
            let sql = format!(
                "SELECT md5(string_agg((to_jsonb(t) - 'tags')::text, ',' ORDER BY id)) \
                 FROM {schema}.t"
            );
            let client = &client;
            async move {
                client
                    .query_one(&sql, &[])
                    .await
                    .unwrap()
                    .get::<_, String>(0)
            }
        };
        assert_eq!(digest("a").await, digest("b").await);
        assert_ne!(digest("a").await, digest("c").await);
        assert_eq!(
            digest("a").await,
            digest("d").await,
            "binary and text rows differ"
        );
        let tags: i64 = (client.query_one("SELECT count(tags) FROM d.t", &[]).await)
            .unwrap()
            .get(0);
        assert_eq!(tags, 1000);
    });
}

#[test]
fn cycles_unknown_types_and_narrow_keys_are_named_and_the_rest_filled() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_throwaway_server(&runtime);
    let url = server.connection_string();
    runtime.block_on(async {
        let client = connect(&url).await;
        client
            .batch_execute(
                "CREATE SCHEMA s;
                 CREATE TABLE s.a (id int PRIMARY KEY, b_id int NOT NULL);
                 CREATE TABLE s.b (id int PRIMARY KEY, a_id int NOT NULL REFERENCES s.a);
                 ALTER TABLE s.a ADD FOREIGN KEY (b_id) REFERENCES s.b;
                 CREATE TABLE s.c (id int PRIMARY KEY, a_id int NOT NULL REFERENCES s.a);
                 CREATE TABLE s.d (id int PRIMARY KEY, e_id int, spot point NOT NULL);
                 CREATE TABLE s.e (id int PRIMARY KEY, d_id int REFERENCES s.d);
                 ALTER TABLE s.d ADD FOREIGN KEY (e_id) REFERENCES s.e;
                 CREATE TABLE s.f (id int PRIMARY KEY, flag boolean NOT NULL UNIQUE, spot point);
                 CREATE TABLE s.g (slug text NOT NULL DEFAULT 'x' UNIQUE, made timestamptz DEFAULT now());
                 CREATE TABLE s.h (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                   g_slug text NOT NULL UNIQUE REFERENCES s.g (slug));",
            )
            .await
            .unwrap();
        // `--rows 500 --rows s.e=40`: e gets its own count, named with its schema.
        let counts = RowCounts {
            every_table: 500,
            tables: vec![("s.e".to_string(), 40)],
        };
        let fills = fill_tables(&[&client], &["s"], &counts, 1, &mut |_, _, _| {})
            .await
            .unwrap();
        eprintln!("{fills:#?}");
        for table in ["a", "b"] {
            let reason = fill_of(&fills, table).skipped.as_deref().unwrap();
            assert!(
                reason.starts_with("its NOT NULL foreign keys form a cycle (a, b)"),
                "{reason}"
            );
        }
        let reason = fill_of(&fills, "c").skipped.as_deref().unwrap();
        assert!(
            reason.contains("needs rows of s.a, which has none"),
            "{reason}"
        );
        let reason = fill_of(&fills, "d").skipped.as_deref().unwrap();
        assert!(
            reason.starts_with("column spot is of type point, which the generator does not know"),
            "{reason}"
        );
        // e's key to d is nullable and d is empty: NULL.
        assert_eq!(fill_of(&fills, "e").rows, 40);
        let f = fill_of(&fills, "f");
        assert_eq!(f.rows, 2, "{f:?}");
        assert!(
            f.note.as_deref().unwrap().contains("f_flag_key allows 2"),
            "{f:?}"
        );
        // A unique column with a default is generated; a one-to-one key takes each parent once.
        assert_eq!((fill_of(&fills, "g").rows, fill_of(&fills, "h").rows), (500, 500));
        let distinct: i64 = client
            .query_one("SELECT count(DISTINCT g_slug) FROM s.h", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(distinct, 500);
    });
}

/// The indexes, constraints and triggers of `schema`, as the catalogs define them.
async fn schema_definition(client: &tokio_postgres::Client, schema: &str) -> Vec<String> {
    let sql = "SELECT 'index ' || pg_get_indexdef(i.indexrelid) || ' valid ' || i.indisvalid
               FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
               WHERE c.relnamespace = $1::text::regnamespace
               UNION ALL
               SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)
               FROM pg_constraint WHERE connamespace = $1::text::regnamespace
               UNION ALL
               SELECT 'trigger ' || tgrelid::regclass || ' ' || tgfoid::regproc || ' ' || tgenabled::text
               FROM pg_trigger WHERE tgrelid IN
                   (SELECT oid FROM pg_class WHERE relnamespace = $1::text::regnamespace)
               UNION ALL
               SELECT 'comment ' || description FROM pg_description d
               JOIN pg_class c ON c.oid = d.objoid WHERE c.relnamespace = $1::text::regnamespace
               ORDER BY 1";
    let rows = client.query(sql, &[&schema]).await.unwrap();
    let mut lines: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    for line in &mut lines {
        *line = line.replace(&format!("{schema}."), "");
    }
    lines
}

#[test]
fn two_connections_fill_the_same_rows_and_leave_indexes_keys_and_triggers_as_they_were() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_throwaway_server(&runtime);
    let url = server.connection_string();
    runtime.block_on(async {
        let client = connect(&url).await;
        let second = connect(&url).await;
        let tables = "
            CREATE TABLE {s}.customers (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
            CREATE TABLE {s}.orders (
                id bigserial PRIMARY KEY,
                customer_id bigint NOT NULL REFERENCES {s}.customers,
                placed timestamptz NOT NULL,
                note text);
            CREATE INDEX orders_customer ON {s}.orders (customer_id);
            CREATE INDEX orders_placed ON {s}.orders (placed DESC) WHERE note IS NOT NULL;
            CREATE INDEX orders_note ON {s}.orders (lower(note));
            COMMENT ON INDEX {s}.orders_note IS 'kept as it is';
            CREATE TABLE {s}.payments (
                id bigserial PRIMARY KEY,
                customer_id bigint REFERENCES {s}.customers ON DELETE CASCADE,
                amount numeric(10, 2) NOT NULL);
            CREATE INDEX payments_customer ON {s}.payments (customer_id);
            CREATE UNIQUE INDEX payments_amount_id ON {s}.payments (amount, id);
            CREATE TABLE {s}.flags (id serial PRIMARY KEY, name text NOT NULL);
            CREATE UNIQUE INDEX flags_one ON {s}.flags ((name IS NOT NULL));
            CREATE TABLE {s}.lines (
                order_id bigint NOT NULL REFERENCES {s}.orders,
                line integer NOT NULL,
                PRIMARY KEY (order_id, line));
            CREATE FUNCTION {s}.touch() RETURNS trigger LANGUAGE plpgsql
                AS $$ BEGIN NEW.note := 'touched'; RETURN NEW; END $$;
            CREATE TRIGGER touch BEFORE INSERT ON {s}.orders
                FOR EACH ROW EXECUTE FUNCTION {s}.touch();";
        for schema in ["one", "two"] {
            let sql = format!("CREATE SCHEMA {schema};{}", tables.replace("{s}", schema));
            client.batch_execute(&sql).await.unwrap();
        }
        let before = schema_definition(&client, "one").await;
        assert_eq!(before, schema_definition(&client, "two").await);
        fill_tables(&[&client], &["one"], &every(3000), 5, &mut |_, _, _| {})
            .await
            .unwrap();
        let fills = fill_tables(
            &[&client, &second],
            &["two"],
            &every(3000),
            5,
            &mut |_, _, _| {},
        )
        .await
        .unwrap();
        // A unique index whose duplicates the generator cannot foresee
        // refuses the rows (at its build), and the table is skipped.
        let flags = fill_of(&fills, "flags");
        let reason = flags
            .skipped
            .as_deref()
            .unwrap_or_else(|| panic!("{flags:?}"));
        assert!(reason.contains("SQLSTATE 23505"), "{reason}");
        assert!(
            fills
                .iter()
                .all(|fill| fill.table == "flags" || fill.rows == 3000),
            "{fills:#?}"
        );
        // Orders and payments share a step, each on its own connection: the same rows.
        for table in ["customers", "orders", "payments", "lines"] {
            let digest = |schema: &str| {
                let sql = format!(
                    "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {schema}.{table} t"
                );
                let client = &client;
                async move {
                    client
                        .query_one(&sql, &[])
                        .await
                        .unwrap()
                        .get::<_, String>(0)
                }
            };
            assert_eq!(digest("one").await, digest("two").await, "{table}");
        }
        // The user's trigger ran on every row; the keys' checks are on again.
        let touched: i64 = client
            .query_one(
                "SELECT count(*) FROM two.orders WHERE note = 'touched'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(touched, 3000);
        // customers and orders are parents whose children were still empty
        // at their step: their keys were set aside and they went in by
        // COPY ... FREEZE, every page all-frozen (a plain VACUUM freezes no
        // row this young).
        client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_visibility")
            .await
            .unwrap();
        for table in ["customers", "orders"] {
            let sql = format!(
                "SELECT all_frozen, (SELECT relpages FROM pg_class WHERE oid = 'two.{table}'::regclass)
                 FROM pg_visibility_map_summary('two.{table}')"
            );
            let row = client.query_one(&sql, &[]).await.unwrap();
            let (frozen, pages): (i64, i32) = (row.get(0), row.get(1));
            assert!(pages > 0 && frozen == i64::from(pages), "{table}: {frozen} of {pages} pages frozen");
        }
        assert_eq!(schema_definition(&client, "one").await, before);
        assert_eq!(schema_definition(&client, "two").await, before);
        let orphan = client
            .execute(
                "INSERT INTO two.orders (customer_id, placed) VALUES (-1, now())",
                &[],
            )
            .await
            .unwrap_err();
        assert_eq!(
            orphan.code(),
            Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION)
        );
    });
}
