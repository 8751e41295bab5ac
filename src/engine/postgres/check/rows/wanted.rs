//! Which of the catalog's tables a fill's scope asks for
//! ([`crate::engine::postgres::check::scope`] finds the scope), and how
//! many rows each gets: the tables found, those `--rows TABLE=N` names,
//! then, repeatedly, the parents their foreign keys need (their values are
//! the parents' keys) and, where the scope says so, the children whose
//! foreign keys point at them.
//!
//! A parent only its children's keys need (no new migration locks or
//! names it, and none deletes rows) gets [`KEY_ROWS`], not the rows
//! asked for: the migrations never read it, and the children's rows only
//! refer to its keys, so its size shows in nothing measured, while on a
//! project whose migrations lock 8 tables with 24 such parents it was
//! three quarters of the rows, their copies and their ANALYZE. A child
//! whose unique key takes its values from the parent's rows (one line per
//! order) needs a parent row for each of its own rows: that parent gets as
//! many.

use crate::config::RowCounts;
use crate::engine::postgres::check::scope::FillScope;
use crate::engine::postgres::check_verdict::sizes::same_table;

use super::catalog::Catalog;

/// The rows of a parent only its children's keys need (at most the rows asked).
pub(super) const KEY_ROWS: u64 = 1_000;

/// Whether and how a fill fills a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// Outside the scope: left empty.
    Empty,
    /// The rows asked for.
    Rows,
    /// Only its children's foreign keys need it: enough keys to refer to.
    Keys,
}

/// Per table of `catalog` (in its order), whether and how `scope` fills it.
pub(super) fn wanted_tables(catalog: &Catalog, scope: &FillScope, counts: &RowCounts) -> Vec<Want> {
    let tables = &catalog.tables;
    let (oids, with_children) = match scope {
        FillScope::Every(_) => return vec![Want::Rows; tables.len()],
        FillScope::Tables {
            oids,
            with_children,
        } => (oids, *with_children),
    };
    let mut wanted: Vec<Want> = (tables.iter())
        .map(|table| {
            let name = table.sql_name.replace('"', "");
            let named = oids.contains(&table.oid)
                || (counts.tables.iter())
                    .any(|(given, rows)| *rows > 0 && same_table(given, &name));
            match named {
                true => Want::Rows,
                false => Want::Empty,
            }
        })
        .collect();
    // Rows a migration deletes cascade down: every table here may matter.
    let parent_want = match with_children {
        true => Want::Rows,
        false => Want::Keys,
    };
    let index_of = |oid: u32| tables.iter().position(|table| table.oid == oid);
    loop {
        let mut more = false;
        for (at, table) in tables.iter().enumerate() {
            for key in &table.foreign_keys {
                let Some(parent) = index_of(key.parent_oid) else {
                    continue;
                };
                if wanted[at] != Want::Empty && wanted[parent] == Want::Empty {
                    wanted[parent] = parent_want;
                    more = true;
                }
                if with_children && wanted[parent] != Want::Empty && wanted[at] == Want::Empty {
                    wanted[at] = Want::Rows;
                    more = true;
                }
            }
        }
        if !more {
            return wanted;
        }
    }
}

/// Per table of `catalog`, the rows the fill asks of it: `asked` gives a
/// table's own count; a [`Want::Keys`] parent gets [`KEY_ROWS`] of them,
/// unless a child's unique key holds the foreign key's columns and has too
/// few values without more parent rows (`order_lines (order_id)` unique:
/// one order per line): then as many as the child has, in as few of its
/// parents as will do. `rows_fitting(table, rows)` says how many rows
/// `table` can get when each table gets `rows` (the recipe's count).
pub(super) fn planned_rows(
    catalog: &Catalog,
    wanted: &[Want],
    asked: &[u64],
    rows_fitting: impl Fn(usize, &[u64]) -> u64,
) -> Vec<u64> {
    let tables = &catalog.tables;
    let mut rows: Vec<u64> = (wanted.iter().zip(asked))
        .map(|(want, &asked)| match want {
            Want::Empty => 0,
            Want::Rows => asked,
            Want::Keys => asked.min(KEY_ROWS),
        })
        .collect();
    let index_of = |oid: u32| tables.iter().position(|table| table.oid == oid);
    // Rows only grow, up to what is asked: the loop ends, cycles too.
    loop {
        let mut more = false;
        for (at, table) in tables.iter().enumerate() {
            if wanted[at] == Want::Empty {
                continue;
            }
            // The parents a unique key of this table takes values from, and their rows raised.
            let raisable: Vec<(usize, u64)> = (table.foreign_keys.iter())
                .filter(|key| {
                    (table.unique_keys.iter())
                        .any(|unique| unique.columns.iter().any(|c| key.columns.contains(c)))
                })
                .filter_map(|key| index_of(key.parent_oid))
                .filter(|&parent| parent != at && wanted[parent] == Want::Keys)
                .map(|parent| (parent, rows[at].min(asked[parent])))
                .filter(|&(parent, raised)| rows[parent] < raised)
                .collect();
            if raisable.is_empty() {
                continue;
            }
            let fits = rows_fitting(at, &rows);
            if fits >= rows[at] {
                continue;
            }
            // One parent at a time, then all of them: as few rows as will do.
            let (mut best, mut best_fits) = (rows.clone(), fits);
            for &(parent, raised) in &raisable {
                let mut trial = best.clone();
                trial[parent] = raised;
                let trial_fits = rows_fitting(at, &trial);
                if trial_fits > best_fits {
                    (best, best_fits) = (trial, trial_fits);
                }
            }
            if best_fits < rows[at] {
                let mut trial = best.clone();
                for &(parent, raised) in &raisable {
                    trial[parent] = raised;
                }
                if rows_fitting(at, &trial) > best_fits {
                    best = trial;
                }
            }
            if best != rows {
                rows = best;
                more = true;
            }
        }
        if !more {
            return rows;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::engine::postgres::check::rows::catalog::{CatalogTable, ForeignKey, UniqueKey};

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

    /// Whether each table gets rows.
    fn filled(wanted: Vec<Want>) -> Vec<bool> {
        wanted.into_iter().map(|want| want != Want::Empty).collect()
    }

    #[test]
    fn a_found_table_brings_its_parents_and_their_parents() {
        let wanted = filled(wanted_tables(&shop(), &found(&[4], false), &counts(&[])));
        assert_eq!(wanted, [true, true, true, true, false]);
        let wanted = filled(wanted_tables(&shop(), &found(&[3], false), &counts(&[])));
        assert_eq!(wanted, [true, true, true, false, false]);
    }

    #[test]
    fn children_come_only_when_a_migration_changes_rows() {
        let wanted = wanted_tables(&shop(), &found(&[1], true), &counts(&[]));
        let wanted = filled(wanted);
        // order_lines needs orders, which needs products: all but audit.
        assert_eq!(wanted, [true, true, true, true, false]);
        let wanted = filled(wanted_tables(&shop(), &found(&[1], false), &counts(&[])));
        assert_eq!(wanted, [true, false, false, false, false]);
    }

    #[test]
    fn a_table_rows_names_is_filled_and_every_means_every() {
        let rows = counts(&[("audit", 10)]);
        let wanted = filled(wanted_tables(&shop(), &found(&[], false), &rows));
        assert_eq!(wanted, [false, false, false, false, true]);
        let rows = counts(&[("audit", 0)]);
        let wanted = filled(wanted_tables(&shop(), &found(&[], false), &rows));
        assert_eq!(wanted, [false; 5]);
        let every = FillScope::Every("--fill all".to_string());
        assert_eq!(
            wanted_tables(&shop(), &every, &counts(&[])),
            [Want::Rows; 5]
        );
    }

    #[test]
    fn a_parent_only_the_keys_need_gets_key_rows_unless_deletes_cascade() {
        use Want::{Empty, Keys, Rows};
        let wanted = wanted_tables(&shop(), &found(&[4], false), &counts(&[]));
        assert_eq!(wanted, [Keys, Keys, Keys, Rows, Empty]);
        // Named by --rows: its own count, as a found table.
        let rows = counts(&[("orders", 50)]);
        let wanted = wanted_tables(&shop(), &found(&[4], false), &rows);
        assert_eq!(wanted, [Keys, Keys, Rows, Rows, Empty]);
        let wanted = wanted_tables(&shop(), &found(&[1], true), &counts(&[]));
        assert_eq!(wanted, [Rows, Rows, Rows, Rows, Empty]);
    }

    #[test]
    fn a_parent_gets_a_row_per_child_row_when_the_childs_unique_key_needs_them() {
        use Want::{Empty, Keys, Rows};
        let wanted = [Keys, Keys, Keys, Rows, Empty];
        let asked = [5_000_000, 100, 5_000_000, 1_000_000, 1_000_000];
        // Each table gets its rows whatever its parents have.
        let all = |at: usize, rows: &[u64]| rows[at];
        let planned = planned_rows(&shop(), &wanted, &asked, all);
        assert_eq!(planned, [KEY_ROWS, 100, KEY_ROWS, 1_000_000, 0]);
        // order_lines (order_id) unique, its only values: a line per
        // order. Its other parents keep their few rows.
        let mut catalog = shop();
        catalog.tables[3].unique_keys.push(UniqueKey {
            name: "order_lines_order_key".to_string(),
            columns: vec![1],
        });
        let per_order = |at: usize, rows: &[u64]| match at {
            3 => rows[3].min(rows[2]),
            _ => rows[at],
        };
        let planned = planned_rows(&catalog, &wanted, &asked, per_order);
        assert_eq!(planned, [KEY_ROWS, 100, 1_000_000, 1_000_000, 0]);
        // The same key, with values of its own (a text column in it): no more.
        let planned = planned_rows(&catalog, &wanted, &asked, all);
        assert_eq!(planned, [KEY_ROWS, 100, KEY_ROWS, 1_000_000, 0]);
        // orders (customer_id, product_id) unique too: as many customers,
        // and products' 100 are all asked.
        catalog.tables[2].unique_keys.push(UniqueKey {
            name: "orders_customer_key".to_string(),
            columns: vec![1],
        });
        let per_pair = |at: usize, rows: &[u64]| match at {
            3 => rows[3].min(rows[2]),
            2 => rows[2].min(rows[0] * rows[1]),
            _ => rows[at],
        };
        let planned = planned_rows(&catalog, &wanted, &asked, per_pair);
        assert_eq!(planned, [1_000_000, 100, 1_000_000, 1_000_000, 0]);
        // Of two parents in the key, only the one whose rows it needs grows.
        let asked = [5_000_000, 5_000_000, 5_000_000, 1_000_000, 1_000_000];
        let per_customer = |at: usize, rows: &[u64]| match at {
            3 => rows[3].min(rows[2]),
            2 => rows[2].min(rows[0]),
            _ => rows[at],
        };
        let planned = planned_rows(&catalog, &wanted, &asked, per_customer);
        assert_eq!(planned, [1_000_000, KEY_ROWS, 1_000_000, 1_000_000, 0]);
    }
}
