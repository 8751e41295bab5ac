//! What the workload's tables look like in the catalogs: their columns (with
//! type and nullability), constraints (with validity) and indexes (with
//! validity). `compare` takes one before the first strategy and one after
//! each later strategy's reset: the reset is checked, not trusted, because a
//! reset that leaves the first strategy's column behind makes the next
//! strategy's DDL fail for a reason that has nothing to do with locks.

use std::collections::BTreeMap;

/// The catalog query: one row per column, constraint and index of the tables
/// in schema `$1` or named in `$2` (text, resolved with `to_regclass`).
pub const FINGERPRINT_SQL: &str = "\
    WITH rel AS (
        SELECT c.oid, c.oid::regclass::text AS name
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'm')
          AND (n.nspname = $1 OR c.oid IN (SELECT to_regclass(t) FROM unnest($2::text[]) t))
    )
    SELECT rel.name, 'column', a.attname::text,
           format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
    FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid
    WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT rel.name, 'constraint', con.conname::text, pg_get_constraintdef(con.oid)
    FROM rel JOIN pg_constraint con ON con.conrelid = rel.oid
    UNION ALL
    SELECT rel.name, 'index', ic.relname::text,
           pg_get_indexdef(i.indexrelid) || CASE WHEN i.indisvalid THEN '' ELSE ' INVALID' END
    FROM rel JOIN pg_index i ON i.indrelid = rel.oid JOIN pg_class ic ON ic.oid = i.indexrelid";

/// The kind of a catalog object of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectKind {
    Column,
    Constraint,
    Index,
}

impl ObjectKind {
    /// The kind as [`FINGERPRINT_SQL`] names it; `None` for any other text.
    pub fn from_name(name: &str) -> Option<ObjectKind> {
        match name {
            "column" => Some(ObjectKind::Column),
            "constraint" => Some(ObjectKind::Constraint),
            "index" => Some(ObjectKind::Index),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Column => "column",
            ObjectKind::Constraint => "constraint",
            ObjectKind::Index => "index",
        }
    }

    /// The statement that removes an object of this kind the reset left behind.
    fn drop_sql(self, table: &str, name: &str) -> String {
        match self {
            ObjectKind::Column => format!("ALTER TABLE {table} DROP COLUMN IF EXISTS {name}"),
            ObjectKind::Constraint => {
                format!("ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
            }
            ObjectKind::Index => format!("DROP INDEX IF EXISTS {name}"),
        }
    }
}

/// The workload's tables as the catalogs describe them: for each (table,
/// kind, name), its definition (`text not null`, `CHECK ((qty > 0)) NOT
/// VALID`, `CREATE INDEX ... INVALID`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint {
    pub objects: BTreeMap<(String, ObjectKind, String), String>,
}

/// One way a later fingerprint differs from the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// An object the first fingerprint did not have (the reset left it behind).
    Added {
        table: String,
        kind: ObjectKind,
        name: String,
        definition: String,
    },
    /// An object of the first fingerprint that is gone.
    Missing {
        table: String,
        kind: ObjectKind,
        name: String,
        definition: String,
    },
    /// An object whose definition changed (a type, NOT NULL, validity).
    Changed {
        table: String,
        kind: ObjectKind,
        name: String,
        first: String,
        now: String,
    },
}

impl Difference {
    /// What the reset left behind and how to fix it, e.g. `orders has a column
    /// the first strategy did not see: note text; add it to reset (ALTER TABLE
    /// orders DROP COLUMN IF EXISTS note)`.
    pub fn describe(&self) -> String {
        match self {
            Difference::Added {
                table,
                kind,
                name,
                definition,
            } => format!(
                "{table} has a{} {} the first strategy did not see: {name} {definition}; \
                 add it to reset ({})",
                if *kind == ObjectKind::Index { "n" } else { "" },
                kind.as_str(),
                kind.drop_sql(table, name)
            ),
            Difference::Missing {
                table,
                kind,
                name,
                definition,
            } => format!(
                "{table} lacks the {} {name} {definition} the first strategy saw; \
                 make reset create it again",
                kind.as_str()
            ),
            Difference::Changed {
                table,
                kind,
                name,
                first,
                now,
            } => format!(
                "{table}: the {} {name} is {now} where the first strategy saw {first}; \
                 make reset restore it",
                kind.as_str()
            ),
        }
    }
}

/// How `now` differs from `first`, in the order of table, kind and name.
pub fn diff(first: &Fingerprint, now: &Fingerprint) -> Vec<Difference> {
    let mut differences = Vec::new();
    for ((table, kind, name), definition) in &now.objects {
        let (table, kind, name) = (table.clone(), *kind, name.clone());
        match first.objects.get(&(table.clone(), kind, name.clone())) {
            None => differences.push(Difference::Added {
                table,
                kind,
                name,
                definition: definition.clone(),
            }),
            Some(seen) if seen != definition => differences.push(Difference::Changed {
                table,
                kind,
                name,
                first: seen.clone(),
                now: definition.clone(),
            }),
            Some(_) => {}
        }
    }
    for ((table, kind, name), definition) in &first.objects {
        if !now
            .objects
            .contains_key(&(table.clone(), *kind, name.clone()))
        {
            differences.push(Difference::Missing {
                table: table.clone(),
                kind: *kind,
                name: name.clone(),
                definition: definition.clone(),
            });
        }
    }
    differences
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(objects: &[(&str, ObjectKind, &str, &str)]) -> Fingerprint {
        Fingerprint {
            objects: objects
                .iter()
                .map(|(table, kind, name, definition)| {
                    (
                        (table.to_string(), *kind, name.to_string()),
                        definition.to_string(),
                    )
                })
                .collect(),
        }
    }

    fn orders() -> Vec<(&'static str, ObjectKind, &'static str, &'static str)> {
        vec![
            ("orders", ObjectKind::Column, "id", "integer not null"),
            ("orders", ObjectKind::Column, "qty", "integer"),
            (
                "orders",
                ObjectKind::Constraint,
                "orders_pkey",
                "PRIMARY KEY (id)",
            ),
            (
                "orders",
                ObjectKind::Index,
                "orders_pkey",
                "CREATE UNIQUE INDEX orders_pkey ON orders USING btree (id)",
            ),
        ]
    }

    #[test]
    fn the_same_tables_have_no_difference() {
        assert!(diff(&fingerprint(&orders()), &fingerprint(&orders())).is_empty());
    }

    #[test]
    fn a_column_left_behind_is_named_with_the_statement_that_drops_it() {
        let mut after = orders();
        after.push(("orders", ObjectKind::Column, "note", "text"));
        let differences = diff(&fingerprint(&orders()), &fingerprint(&after));
        assert_eq!(differences.len(), 1);
        assert_eq!(
            differences[0].describe(),
            "orders has a column the first strategy did not see: note text; \
             add it to reset (ALTER TABLE orders DROP COLUMN IF EXISTS note)"
        );
    }

    #[test]
    fn an_index_or_constraint_left_behind_gets_its_drop_statement() {
        let mut after = orders();
        after.push((
            "orders",
            ObjectKind::Index,
            "orders_note_idx",
            "CREATE INDEX orders_note_idx ON orders USING btree (note) INVALID",
        ));
        after.push((
            "orders",
            ObjectKind::Constraint,
            "qty_positive",
            "CHECK ((qty > 0)) NOT VALID",
        ));
        let described: Vec<String> = diff(&fingerprint(&orders()), &fingerprint(&after))
            .iter()
            .map(Difference::describe)
            .collect();
        assert_eq!(described.len(), 2);
        assert!(described[0].contains("ALTER TABLE orders DROP CONSTRAINT IF EXISTS qty_positive"));
        assert!(described[1].starts_with("orders has an index"));
        assert!(described[1].contains("DROP INDEX IF EXISTS orders_note_idx"));
    }

    #[test]
    fn a_changed_type_and_a_dropped_column_are_named() {
        let mut after = orders();
        after[1] = ("orders", ObjectKind::Column, "qty", "bigint");
        after.remove(0);
        let differences = diff(&fingerprint(&orders()), &fingerprint(&after));
        assert_eq!(
            differences,
            vec![
                Difference::Changed {
                    table: "orders".into(),
                    kind: ObjectKind::Column,
                    name: "qty".into(),
                    first: "integer".into(),
                    now: "bigint".into(),
                },
                Difference::Missing {
                    table: "orders".into(),
                    kind: ObjectKind::Column,
                    name: "id".into(),
                    definition: "integer not null".into(),
                },
            ]
        );
        assert_eq!(
            differences[0].describe(),
            "orders: the column qty is bigint where the first strategy saw integer; make reset restore it"
        );
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in [
            ObjectKind::Column,
            ObjectKind::Constraint,
            ObjectKind::Index,
        ] {
            assert_eq!(ObjectKind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(ObjectKind::from_name("table"), None);
    }
}
