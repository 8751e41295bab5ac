//! The parameter scanner on normalised statement texts, as pg_stat_statements shows them.

use super::*;

fn named(tables: &[&str], column: &str) -> ParameterTarget {
    ParameterTarget::KnownColumn {
        tables: tables.iter().map(|t| t.to_string()).collect(),
        column: ColumnName::Named(column.to_string()),
    }
}

fn targets(query: &str) -> Vec<ParameterTarget> {
    resolve(query)
        .parameters
        .into_iter()
        .map(|(_, t)| t)
        .collect()
}

#[test]
fn a_comparison_names_the_column_on_either_side() {
    assert_eq!(
        targets("SELECT name FROM customers WHERE id = $1"),
        vec![named(&["customers"], "id")]
    );
    assert_eq!(
        targets("SELECT * FROM orders o WHERE $1 <= o.total AND o.created_at > $2"),
        vec![
            named(&["orders"], "total"),
            named(&["orders"], "created_at")
        ]
    );
    assert_eq!(
        targets("SELECT * FROM t WHERE name LIKE $1"),
        vec![named(&["t"], "name")]
    );
}

#[test]
fn aliases_and_joins_pick_the_table_of_the_qualifier() {
    let query = "SELECT c.name, sum(o.total) FROM customers AS c \
                 JOIN app.orders o ON o.customer_id = c.id \
                 WHERE o.customer_id = $1 AND c.city = $2 GROUP BY c.name";
    let resolved = resolve(query);
    assert_eq!(
        resolved.tables,
        vec![
            TableRef {
                name: "customers".into(),
                alias: Some("c".into())
            },
            TableRef {
                name: "app.orders".into(),
                alias: Some("o".into())
            },
        ]
    );
    assert_eq!(
        targets(query),
        vec![
            named(&["app.orders"], "customer_id"),
            named(&["customers"], "city")
        ]
    );
}

#[test]
fn an_unqualified_column_of_a_join_has_every_table_as_candidate() {
    assert_eq!(
        targets("SELECT * FROM a, b WHERE a.id = b.a_id AND kind = $1"),
        vec![named(&["a", "b"], "kind")]
    );
}

#[test]
fn in_lists_any_and_between() {
    assert_eq!(
        targets("SELECT * FROM t WHERE id IN ($1, $2, $3)"),
        vec![named(&["t"], "id"); 3]
    );
    assert_eq!(
        targets("SELECT * FROM t WHERE id NOT IN ($1)"),
        vec![named(&["t"], "id")]
    );
    assert!(matches!(
        targets("SELECT * FROM t WHERE id = ANY ($1)")[..],
        [ParameterTarget::Unknown(_)]
    ));
    assert_eq!(
        targets("SELECT * FROM t WHERE k BETWEEN $1 AND $2"),
        vec![named(&["t"], "k"); 2]
    );
}

#[test]
fn limit_and_offset() {
    assert_eq!(
        targets("SELECT * FROM t WHERE k = $1 ORDER BY k LIMIT $2 OFFSET $3"),
        vec![
            named(&["t"], "k"),
            ParameterTarget::Limit,
            ParameterTarget::Offset
        ]
    );
}

#[test]
fn update_set_and_where() {
    // pgbench's tpcb-like update, as pg_stat_statements shows it.
    assert_eq!(
        targets("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"),
        vec![
            ParameterTarget::Unknown("= abalance + $1 WHERE aid =".into()),
            named(&["pgbench_accounts"], "aid")
        ]
    );
    assert_eq!(
        targets("UPDATE t SET a = $1, b = $2 WHERE id = $3"),
        vec![named(&["t"], "a"), named(&["t"], "b"), named(&["t"], "id")]
    );
}

#[test]
fn insert_values_match_the_column_list_or_the_positions() {
    assert_eq!(
        targets(
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
             VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
        ),
        vec![
            named(&["pgbench_history"], "tid"),
            named(&["pgbench_history"], "bid"),
            named(&["pgbench_history"], "aid"),
            named(&["pgbench_history"], "delta"),
        ]
    );
    assert_eq!(
        targets("INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"),
        vec![
            named(&["t"], "a"),
            named(&["t"], "b"),
            named(&["t"], "a"),
            named(&["t"], "b")
        ]
    );
    assert_eq!(
        targets("INSERT INTO app.t VALUES ($1, $2)"),
        vec![
            ParameterTarget::KnownColumn {
                tables: vec!["app.t".into()],
                column: ColumnName::Position(1)
            },
            ParameterTarget::KnownColumn {
                tables: vec!["app.t".into()],
                column: ColumnName::Position(2)
            },
        ]
    );
}

#[test]
fn delete_and_quoted_names() {
    assert_eq!(
        targets(r#"DELETE FROM "Events" e WHERE e."createdAt" < $1"#),
        vec![named(&["Events"], "createdAt")]
    );
}

#[test]
fn a_parameter_in_a_function_is_unknown_with_its_context() {
    assert_eq!(
        targets("SELECT pg_sleep($1)"),
        vec![ParameterTarget::Unknown("SELECT pg_sleep($1)".into())]
    );
}

#[test]
fn for_update_names_no_table_and_functions_in_from_are_not_tables() {
    let resolved = resolve("SELECT * FROM t WHERE id = $1 FOR UPDATE");
    assert_eq!(resolved.tables.len(), 1);
    let resolved = resolve("SELECT * FROM generate_series($1, $2) g");
    assert!(resolved.tables.is_empty(), "{resolved:?}");
}

#[test]
fn statements_as_orms_send_them() {
    assert_eq!(
        targets(
            r#"SELECT "users"."id", "users"."email" FROM "users" WHERE "users"."id" = $1 LIMIT $2"#
        ),
        vec![named(&["users"], "id"), ParameterTarget::Limit]
    );
    assert_eq!(
        targets(
            r#"UPDATE "accounts" SET "balance" = $1, "updated_at" = $2 WHERE "accounts"."id" = $3"#
        ),
        vec![
            named(&["accounts"], "balance"),
            named(&["accounts"], "updated_at"),
            named(&["accounts"], "id")
        ]
    );
    assert_eq!(
        targets(r#"INSERT INTO "events" ("kind", "created_at") VALUES ($1, $2) RETURNING "id""#),
        vec![named(&["events"], "kind"), named(&["events"], "created_at")]
    );
    assert_eq!(
        targets(
            "SELECT * FROM orders WHERE customer_id IN \
             (SELECT id FROM customers WHERE city = $1) ORDER BY id LIMIT $2 OFFSET $3"
        ),
        vec![
            named(&["orders", "customers"], "city"),
            ParameterTarget::Limit,
            ParameterTarget::Offset
        ]
    );
}

#[test]
fn parameters_become_variables_outside_quotes() {
    assert_eq!(
        with_variables("SELECT '$1', $1::int, $10 FROM t WHERE a = $2 -- $3"),
        "SELECT '$1', :p1::int, :p10 FROM t WHERE a = :p2 -- $3"
    );
}
