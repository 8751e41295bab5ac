//! A table's rows as `COPY ... FROM STDIN` text, made on the client from
//! its [`TableRecipe`]: each row's fields in the recipe's column order,
//! tab-separated, escaped, `\N` for NULL. Plain data in, bytes out: the
//! server only parses and writes them (`send` streams them).

use std::ops::Range;

use super::binary::{self, Encoding};
use super::recipe::{Column, TableRecipe};
use super::text::{NULL, Value, draw, push_field, value, write_value};

/// The keys of a parent's rows a foreign key picks from, in key order:
/// `columns` fields per row in COPY's text form, each followed by a tab or
/// a newline, end to end in one buffer (as `COPY ... TO STDOUT` sends
/// them: a parent's 100,000 keys are one allocation, not 100,000).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ParentKeys {
    columns: usize,
    text: Vec<u8>,
    /// Where each field ends in `text` (at its tab or newline).
    ends: Vec<usize>,
}

impl ParentKeys {
    /// Keys of `columns` columns from `COPY ... TO STDOUT`'s text output.
    pub fn from_copy(columns: usize, text: Vec<u8>) -> Self {
        let ends = (text.iter().enumerate())
            .filter(|(_, byte)| matches!(byte, b'\t' | b'\n'))
            .map(|(at, _)| at)
            .collect();
        ParentKeys {
            columns,
            text,
            ends,
        }
    }

    /// Keys of `columns` columns from their text values (as the server's
    /// `::text` gives them), escaped for COPY here.
    #[cfg(test)]
    pub fn new<'a>(columns: usize, values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut text = Vec::new();
        for (at, value) in values.into_iter().enumerate() {
            push_field(value, &mut text);
            text.push(if (at + 1).is_multiple_of(columns) {
                b'\n'
            } else {
                b'\t'
            });
        }
        Self::from_copy(columns, text)
    }

    /// How many rows' keys it holds.
    pub fn rows(&self) -> u64 {
        self.ends.len().checked_div(self.columns).unwrap_or(0) as u64
    }

    /// Column `column` of the key of row `row` (from 1).
    fn field(&self, row: u64, column: usize) -> &[u8] {
        let at = (row as usize - 1) * self.columns + column;
        let start = at.checked_sub(1).map_or(0, |before| self.ends[before] + 1);
        &self.text[start..self.ends[at]]
    }
}

/// Appends rows `rows` (numbers from 1) of `recipe` to `out`, in COPY's
/// binary format when the recipe has its encodings (the header and trailer
/// are the sender's), else one text line each; `parents` holds the keys of
/// each of [`TableRecipe::parents`].
pub(super) fn write_rows(
    recipe: &TableRecipe,
    parents: &[&ParentKeys],
    rows: Range<u64>,
    out: &mut Vec<u8>,
) {
    let mut scratch = String::new();
    for row in rows {
        let row = Row {
            recipe,
            parents,
            row,
        };
        match &recipe.binary {
            Some(encodings) => {
                out.extend_from_slice(&(recipe.columns.len() as i16).to_be_bytes());
                for (column, &encoding) in recipe.columns.iter().zip(encodings) {
                    row.write_binary(column, encoding, &mut scratch, out);
                }
            }
            None => {
                for (place, column) in recipe.columns.iter().enumerate() {
                    if place > 0 {
                        out.push(b'\t');
                    }
                    row.write_text(column, &mut scratch, out);
                }
                out.push(b'\n');
            }
        }
    }
}

/// One row of a recipe being written.
#[derive(Clone, Copy)]
struct Row<'a> {
    recipe: &'a TableRecipe,
    parents: &'a [&'a ParentKeys],
    row: u64,
}

impl Row<'_> {
    /// The parent key field column `column` of parent `parent` gives this row.
    fn parent_key(&self, parent: usize, column: usize) -> &[u8] {
        let pick = &self.recipe.parents[parent];
        let at = match pick.pick {
            Some(index) => index.at(self.row),
            None => 1 + draw(self.row, pick.seed) % pick.rows,
        };
        self.parents[parent].field(at, column)
    }

    /// The row a self-reference points at (`None`: NULL).
    fn earlier(&self, nullable: bool) -> Option<Self> {
        let earlier = self.row / 2;
        if earlier == 0 && nullable {
            return None;
        }
        Some(Row {
            row: earlier.max(1),
            ..*self
        })
    }

    fn write_text(&self, column: &Column, scratch: &mut String, out: &mut Vec<u8>) {
        match column {
            Column::Value {
                kind,
                source,
                distinct,
            } => {
                scratch.clear();
                let distinct = distinct.map(|index| index.at(self.row));
                write_value(kind, source, self.row, distinct, scratch);
                push_field(scratch, out);
            }
            Column::Parent { parent, column } => {
                out.extend_from_slice(self.parent_key(*parent, *column))
            }
            Column::Null => out.extend_from_slice(NULL.as_bytes()),
            Column::Earlier { column, nullable } => match self.earlier(*nullable) {
                Some(earlier) => earlier.write_text(&self.recipe.columns[*column], scratch, out),
                None => out.extend_from_slice(NULL.as_bytes()),
            },
        }
    }

    fn write_binary(
        &self,
        column: &Column,
        encoding: Encoding,
        scratch: &mut String,
        out: &mut Vec<u8>,
    ) {
        match column {
            Column::Value {
                kind,
                source,
                distinct,
            } => {
                scratch.clear();
                let distinct = distinct.map(|index| index.at(self.row));
                let value = value(kind, source, self.row, distinct, scratch);
                binary::write_field(value, scratch, encoding, out);
            }
            Column::Parent { parent, column } => {
                binary::write_key(self.parent_key(*parent, *column), encoding, out)
            }
            Column::Null => binary::write_field(Value::Text, "", Encoding::Null, out),
            Column::Earlier { column, nullable } => match self.earlier(*nullable) {
                Some(earlier) => {
                    earlier.write_binary(&self.recipe.columns[*column], encoding, scratch, out)
                }
                None => binary::write_field(Value::Text, "", Encoding::Null, out),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::engine::postgres::check::rows::recipe::{Index, ParentPick};
    use crate::engine::postgres::check::rows::text::Source;
    use crate::engine::postgres::check::rows::values::ValueKind;

    fn recipe(columns: Vec<Column>, parents: Vec<ParentPick>) -> TableRecipe {
        TableRecipe {
            rows: 0,
            sql: String::new(),
            columns,
            binary: None,
            parents,
            after_sql: Vec::new(),
            note: None,
        }
    }

    fn lines(recipe: &TableRecipe, parents: &[&ParentKeys], rows: Range<u64>) -> Vec<String> {
        let mut out = Vec::new();
        write_rows(recipe, parents, rows, &mut out);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn rows_are_tab_separated_lines_with_nulls_and_self_references() {
        let id = Column::Value {
            kind: ValueKind::Int { bits: 64 },
            source: Source::new(1, 2, 0, "id", 10),
            distinct: Some(Index::Row),
        };
        let label = Column::Value {
            kind: ValueKind::OneOf(vec!["a\tb".into()]),
            source: Source::new(3, 2, 0, "label", 10),
            distinct: None,
        };
        let parent = Column::Earlier {
            column: 0,
            nullable: true,
        };
        let table = recipe(vec![id, label, Column::Null, parent], Vec::new());
        assert_eq!(
            lines(&table, &[], 1..4),
            ["1\ta\\tb\t\\N\t\\N", "2\ta\\tb\t\\N\t1", "3\ta\\tb\t\\N\t1"]
        );
    }

    #[test]
    fn foreign_keys_take_existing_parent_keys() {
        let values: Vec<String> = (1..=5)
            .flat_map(|n| [format!("org\\{n}"), n.to_string()])
            .collect();
        let keys = ParentKeys::new(2, values.iter().map(String::as_str));
        assert_eq!(keys.rows(), 5);
        let drawn = ParentPick {
            key: 0,
            rows: 5,
            pick: None,
            seed: 11,
            proven: true,
        };
        let table = recipe(
            vec![
                Column::Parent {
                    parent: 0,
                    column: 0,
                },
                Column::Parent {
                    parent: 0,
                    column: 1,
                },
            ],
            vec![drawn],
        );
        let rows = lines(&table, &[&keys], 1..200);
        let parents: HashSet<&str> = rows.iter().map(String::as_str).collect();
        // Every row is one of the five parents, both columns from the same row.
        let existing: HashSet<String> = (1..=5).map(|n| format!("org\\\\{n}\t{n}")).collect();
        assert!(
            parents.iter().all(|row| existing.contains(*row)),
            "{parents:?}"
        );
        assert_eq!(parents.len(), 5);
        // A unique key's pick: each parent row once.
        let mut unique = table.clone();
        unique.parents[0].pick = Some(Index::Radix {
            divisor: 1,
            first_size: 5,
            size: 5,
        });
        let rows = lines(&unique, &[&keys], 1..6);
        assert_eq!(rows.iter().collect::<HashSet<_>>().len(), 5);
    }

    #[test]
    fn a_unique_key_over_a_value_and_a_parent_gives_distinct_pairs() {
        let values: Vec<String> = (1..=4).map(|n| n.to_string()).collect();
        let keys = ParentKeys::new(1, values.iter().map(String::as_str));
        let line = Column::Value {
            kind: ValueKind::Int { bits: 16 },
            source: Source::new(5, 2, 0, "line", 12),
            distinct: Some(Index::Radix {
                divisor: 1,
                first_size: 3,
                size: 3,
            }),
        };
        let order = Column::Parent {
            parent: 0,
            column: 0,
        };
        let pick = ParentPick {
            key: 0,
            rows: 4,
            pick: Some(Index::Radix {
                divisor: 3,
                first_size: 3,
                size: 4,
            }),
            seed: 0,
            proven: true,
        };
        let table = recipe(vec![order, line], vec![pick]);
        let rows = lines(&table, &[&keys], 1..13);
        assert_eq!(rows.iter().collect::<HashSet<_>>().len(), 12, "{rows:?}");
    }
}
