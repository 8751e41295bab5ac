//! The rows a run wrote to the user's tables (`--in-place --allow-writes`):
//! the difference of the server's per-table counters (`pg_stat_user_tables`)
//! read before and after one strategy's run. The counters count every
//! session's rows, an aborted transaction's included, so other traffic on the
//! server in that time shows too.

use std::collections::BTreeMap;

/// Rows inserted, updated and deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteCounts {
    pub inserted: i64,
    pub updated: i64,
    pub deleted: i64,
}

/// The server's cumulative row counters, by table (`schema.table`).
pub type RowCounters = BTreeMap<String, WriteCounts>;

/// What a run wrote to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableWrites {
    /// `schema.table`.
    pub table: String,
    pub rows: WriteCounts,
}

/// The tables whose counters grew from `before` to `after`, with by how much
/// (a table new since `before` from zero; a counter that went back, reset, as zero).
pub fn rows_written(before: &RowCounters, after: &RowCounters) -> Vec<TableWrites> {
    after
        .iter()
        .filter_map(|(table, now)| {
            let was = before.get(table).copied().unwrap_or_default();
            let rows = WriteCounts {
                inserted: (now.inserted - was.inserted).max(0),
                updated: (now.updated - was.updated).max(0),
                deleted: (now.deleted - was.deleted).max(0),
            };
            (rows != WriteCounts::default()).then(|| TableWrites {
                table: table.clone(),
                rows,
            })
        })
        .collect()
}

/// The `rows_written` cell of `summary.*`: empty when the rows were not
/// counted, `none` when nothing was written, else each table, e.g.
/// `public.events: 86330 inserted, 0 updated, 0 deleted; public.audit: ...`.
pub fn rows_written_cell(written: Option<&[TableWrites]>) -> String {
    match written {
        None => String::new(),
        Some([]) => "none".to_string(),
        Some(tables) => tables
            .iter()
            .map(|table| {
                format!(
                    "{} {} inserted, {} updated, {} deleted",
                    table.table, table.rows.inserted, table.rows.updated, table.rows.deleted
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(inserted: i64, updated: i64, deleted: i64) -> WriteCounts {
        WriteCounts {
            inserted,
            updated,
            deleted,
        }
    }

    #[test]
    fn the_rows_written_are_what_the_counters_grew_by() {
        let before = RowCounters::from([
            ("public.events".to_string(), counts(100, 5, 1)),
            ("public.accounts".to_string(), counts(10_000, 0, 0)),
            ("public.gone".to_string(), counts(1, 1, 1)),
        ]);
        let after = RowCounters::from([
            ("public.events".to_string(), counts(86_430, 5, 3)),
            ("public.accounts".to_string(), counts(10_000, 0, 0)),
            ("public.new".to_string(), counts(2, 0, 0)),
        ]);
        let written = rows_written(&before, &after);
        assert_eq!(
            written,
            [
                TableWrites {
                    table: "public.events".to_string(),
                    rows: counts(86_330, 0, 2)
                },
                TableWrites {
                    table: "public.new".to_string(),
                    rows: counts(2, 0, 0)
                },
            ]
        );
        assert_eq!(
            rows_written_cell(Some(&written)),
            "public.events 86330 inserted, 0 updated, 2 deleted; \
             public.new 2 inserted, 0 updated, 0 deleted"
        );
        assert_eq!(rows_written_cell(Some(&[])), "none");
        assert_eq!(rows_written_cell(None), "");
        // A counter that went back (the statistics were reset) counts as nothing written.
        let reset = RowCounters::from([("public.events".to_string(), counts(3, 0, 0))]);
        assert!(rows_written(&after, &reset).is_empty());
    }
}
