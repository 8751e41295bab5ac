//! The order tables are filled in: parents before their children (a
//! topological order of the foreign keys between the schema's tables).
//! Where the keys form a cycle, a nullable foreign key on it is left NULL to
//! break it; a cycle of NOT NULL keys cannot be filled, and its tables are
//! named. A table's reference to itself is no edge (it is filled after its
//! own rows, see `plan`).

use std::collections::{BTreeSet, HashSet};

use super::catalog::{Catalog, CatalogTable};

/// The fill order, the foreign keys left NULL, and the tables no order can fill.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct FillOrder {
    /// Indexes into the catalog's tables, parents first.
    pub tables: Vec<usize>,
    /// The step of each entry of `tables` (0, 1, ...): a table's parents are
    /// all in earlier steps, so the tables of one step can be filled at once.
    pub steps: Vec<usize>,
    /// (table, foreign key) pairs left NULL to break a cycle.
    pub nulled: HashSet<(usize, usize)>,
    /// Tables on a cycle of NOT NULL foreign keys, with the cycle's tables.
    pub cycles: Vec<(usize, String)>,
}

/// An edge from a child to a parent in the same schema.
struct Edge {
    child: usize,
    key: usize,
    parent: usize,
    nullable: bool,
}

pub(super) fn fill_order(catalog: &Catalog) -> FillOrder {
    let tables = &catalog.tables;
    let mut edges = Vec::new();
    for (child, table) in tables.iter().enumerate() {
        for (key, foreign_key) in table.foreign_keys.iter().enumerate() {
            let Some(parent) = tables.iter().position(|t| t.oid == foreign_key.parent_oid) else {
                continue;
            };
            if parent != child {
                edges.push(Edge {
                    child,
                    key,
                    parent,
                    nullable: is_nullable(table, &foreign_key.columns),
                });
            }
        }
    }
    let mut order = FillOrder::default();
    let mut remaining: BTreeSet<usize> = (0..tables.len()).collect();
    let mut dropped: HashSet<usize> = HashSet::new();
    while !remaining.is_empty() {
        // The edges between tables still to place, not dropped to break a cycle.
        let active: Vec<&Edge> = edges
            .iter()
            .enumerate()
            .filter(|(at, edge)| {
                !dropped.contains(at)
                    && remaining.contains(&edge.child)
                    && remaining.contains(&edge.parent)
            })
            .map(|(_, edge)| edge)
            .collect();
        let ready: Vec<usize> = remaining
            .iter()
            .copied()
            .filter(|&table| !active.iter().any(|edge| edge.child == table))
            .collect();
        let step = order.steps.last().map_or(0, |last| last + 1);
        if !ready.is_empty() {
            for table in ready {
                remaining.remove(&table);
                order.tables.push(table);
                order.steps.push(step);
            }
            continue;
        }
        // Stuck: every remaining table waits for another. Break the cycles at
        // their nullable keys, else give up on the tables on a cycle.
        let breakable: Vec<&Edge> = active
            .iter()
            .copied()
            .filter(|edge| edge.nullable && reaches(&active, edge.parent, edge.child))
            .collect();
        if !breakable.is_empty() {
            for edge in breakable {
                order.nulled.insert((edge.child, edge.key));
                let at = edges
                    .iter()
                    .position(|e| (e.child, e.key) == (edge.child, edge.key))
                    .expect("an edge of the list");
                dropped.insert(at);
            }
            continue;
        }
        let cyclic: Vec<usize> = remaining
            .iter()
            .copied()
            .filter(|&table| {
                active
                    .iter()
                    .any(|edge| edge.child == table && reaches(&active, edge.parent, table))
            })
            .collect();
        let names: Vec<&str> = cyclic.iter().map(|&at| tables[at].name.as_str()).collect();
        for &table in &cyclic {
            remaining.remove(&table);
            order.tables.push(table);
            order.steps.push(step);
            order.cycles.push((table, names.join(", ")));
        }
    }
    order
}

/// Whether every column of a key may be NULL.
pub(super) fn is_nullable(table: &CatalogTable, columns: &[i16]) -> bool {
    columns.iter().all(|attnum| {
        table
            .columns
            .iter()
            .find(|column| column.attnum == *attnum)
            .is_none_or(|column| !column.not_null)
    })
}

/// Whether `to` can be reached from `from` along the child-to-parent edges.
fn reaches(edges: &[&Edge], from: usize, to: usize) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![from];
    while let Some(table) = stack.pop() {
        if table == to {
            return true;
        }
        if seen.insert(table) {
            stack.extend(
                edges
                    .iter()
                    .filter(|edge| edge.child == table)
                    .map(|edge| edge.parent),
            );
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::catalog::{CatalogColumn, ForeignKey};
    use super::*;

    fn table(oid: u32, name: &str, keys: &[(u32, bool)]) -> CatalogTable {
        let columns = keys
            .iter()
            .enumerate()
            .map(|(at, &(_, not_null))| CatalogColumn {
                attnum: at as i16 + 1,
                name: format!("c{at}"),
                type_oid: 23,
                typmod: -1,
                not_null,
                default: None,
                identity: false,
                generated: false,
                sequence: None,
            })
            .collect();
        let foreign_keys = keys
            .iter()
            .enumerate()
            .map(|(at, &(parent, _))| ForeignKey {
                name: format!("{name}_fk{at}"),
                columns: vec![at as i16 + 1],
                parent_oid: parent,
                parent_sql: format!("p{parent}"),
                parent_columns: vec!["id".into()],
            })
            .collect();
        CatalogTable {
            oid,
            name: name.into(),
            sql_name: name.into(),
            columns,
            unique_keys: Vec::new(),
            foreign_keys,
            checks: Vec::new(),
        }
    }

    fn names(catalog: &Catalog, order: &FillOrder) -> Vec<String> {
        order
            .tables
            .iter()
            .map(|&at| catalog.tables[at].name.clone())
            .collect()
    }

    #[test]
    fn parents_come_first_and_a_self_reference_is_no_edge() {
        let catalog = Catalog {
            tables: vec![
                table(1, "items", &[(2, true)]),
                table(2, "orders", &[(3, true)]),
                table(3, "customers", &[(3, false)]),
            ],
            ..Catalog::default()
        };
        let order = fill_order(&catalog);
        assert_eq!(names(&catalog, &order), ["customers", "orders", "items"]);
        assert_eq!(order.steps, [0, 1, 2]);
        assert!(order.nulled.is_empty() && order.cycles.is_empty());
    }

    #[test]
    fn siblings_share_a_step_after_their_parent() {
        let catalog = Catalog {
            tables: vec![
                table(1, "items", &[(2, true)]),
                table(2, "orders", &[(4, true)]),
                table(3, "payments", &[(4, true)]),
                table(4, "customers", &[]),
                table(5, "tags", &[]),
            ],
            ..Catalog::default()
        };
        let order = fill_order(&catalog);
        assert_eq!(
            names(&catalog, &order),
            ["customers", "tags", "orders", "payments", "items"]
        );
        assert_eq!(order.steps, [0, 0, 1, 1, 2]);
    }

    #[test]
    fn a_cycle_breaks_at_its_nullable_key_and_a_not_null_cycle_is_named() {
        let catalog = Catalog {
            tables: vec![
                table(1, "a", &[(2, true)]),
                table(2, "b", &[(1, false)]),
                table(3, "c", &[(4, true)]),
                table(4, "d", &[(3, true)]),
                table(5, "e", &[(3, true)]),
            ],
            ..Catalog::default()
        };
        let order = fill_order(&catalog);
        assert_eq!(order.nulled, HashSet::from([(1, 0)]));
        assert_eq!(
            order.cycles,
            [(2, "c, d".to_string()), (3, "c, d".to_string())]
        );
        assert_eq!(names(&catalog, &order), ["b", "a", "c", "d", "e"]);
    }
}
