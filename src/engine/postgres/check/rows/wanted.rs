//! Which of the catalog's tables a fill's scope asks for
//! ([`crate::engine::postgres::check::scope`] finds the scope): the tables
//! found, those `--rows TABLE=N` names, then, repeatedly, the parents their
//! foreign keys need (their values are the parents' keys) and, where the
//! scope says so, the children whose foreign keys point at them.

use crate::config::RowCounts;
use crate::engine::postgres::check::scope::FillScope;
use crate::engine::postgres::check_verdict::sizes::same_table;

use super::catalog::Catalog;

/// Per table of `catalog` (in its order), whether `scope` fills it.
pub(super) fn wanted_tables(catalog: &Catalog, scope: &FillScope, counts: &RowCounts) -> Vec<bool> {
    let tables = &catalog.tables;
    let (oids, with_children) = match scope {
        FillScope::Every(_) => return vec![true; tables.len()],
        FillScope::Tables {
            oids,
            with_children,
        } => (oids, *with_children),
    };
    let mut wanted: Vec<bool> = (tables.iter())
        .map(|table| {
            let name = table.sql_name.replace('"', "");
            oids.contains(&table.oid)
                || (counts.tables.iter()).any(|(given, rows)| *rows > 0 && same_table(given, &name))
        })
        .collect();
    let index_of = |oid: u32| tables.iter().position(|table| table.oid == oid);
    loop {
        let mut more = false;
        for (at, table) in tables.iter().enumerate() {
            for key in &table.foreign_keys {
                let Some(parent) = index_of(key.parent_oid) else {
                    continue;
                };
                if wanted[at] && !wanted[parent] {
                    wanted[parent] = true;
                    more = true;
                }
                if with_children && wanted[parent] && !wanted[at] {
                    wanted[at] = true;
                    more = true;
                }
            }
        }
        if !more {
            return wanted;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::engine::postgres::check::rows::catalog::{CatalogTable, ForeignKey};

    /// `name` (oid `oid`) with a foreign key to each of `parents`.
    fn table(oid: u32, name: &str, parents: &[u32]) -> CatalogTable {
        CatalogTable {
            oid,
            name: name.to_string(),
            sql_name: format!("\"public\".\"{name}\""),
            columns: Vec::new(),
            unique_keys: Vec::new(),
            foreign_keys: (parents.iter())
                .map(|&parent_oid| ForeignKey {
                    name: format!("{name}_fk_{parent_oid}"),
                    columns: vec![1],
                    parent_oid,
                    parent_sql: String::new(),
                    parent_columns: vec!["id".to_string()],
                })
                .collect(),
            checks: Vec::new(),
        }
    }

    /// customers <- orders <- order_lines, orders -> products; audit alone.
    fn shop() -> Catalog {
        Catalog {
            tables: vec![
                table(1, "customers", &[]),
                table(2, "products", &[]),
                table(3, "orders", &[1, 2]),
                table(4, "order_lines", &[3]),
                table(5, "audit", &[]),
            ],
            ..Catalog::default()
        }
    }

    fn found(oids: &[u32], with_children: bool) -> FillScope {
        FillScope::Tables {
            oids: oids.iter().copied().collect::<BTreeSet<u32>>(),
            with_children,
        }
    }

    fn counts(tables: &[(&str, u64)]) -> RowCounts {
        RowCounts {
            every_table: 100,
            tables: (tables.iter())
                .map(|(name, rows)| (name.to_string(), *rows))
                .collect(),
        }
    }

    #[test]
    fn a_found_table_brings_its_parents_and_their_parents() {
        let wanted = wanted_tables(&shop(), &found(&[4], false), &counts(&[]));
        assert_eq!(wanted, [true, true, true, true, false]);
        let wanted = wanted_tables(&shop(), &found(&[3], false), &counts(&[]));
        assert_eq!(wanted, [true, true, true, false, false]);
    }

    #[test]
    fn children_come_only_when_a_migration_changes_rows() {
        let wanted = wanted_tables(&shop(), &found(&[1], true), &counts(&[]));
        // order_lines needs orders, which needs products: all but audit.
        assert_eq!(wanted, [true, true, true, true, false]);
        let wanted = wanted_tables(&shop(), &found(&[1], false), &counts(&[]));
        assert_eq!(wanted, [true, false, false, false, false]);
    }

    #[test]
    fn a_table_rows_names_is_filled_and_every_means_every() {
        let wanted = wanted_tables(&shop(), &found(&[], false), &counts(&[("audit", 10)]));
        assert_eq!(wanted, [false, false, false, false, true]);
        let wanted = wanted_tables(&shop(), &found(&[], false), &counts(&[("audit", 0)]));
        assert_eq!(wanted, [false; 5]);
        let every = FillScope::Every("--fill all".to_string());
        assert_eq!(wanted_tables(&shop(), &every, &counts(&[])), [true; 5]);
    }
}
