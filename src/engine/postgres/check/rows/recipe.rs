//! How one table is filled: what each column gets, and how many rows fit,
//! as plain data that `rows` (the client's rows) and a `COPY` statement
//! follow.
//!
//! - A generated column and a column with a default are left to the
//!   server (the default), unless a unique key needs the column's values
//!   to differ; a serial or identity integer column gets 1, 2, ... from the
//!   client, as its fresh sequence would give them, and a `setval` after
//!   the rows moves the sequence past them (no `nextval` per row); a
//!   nullable column of a type the generator does not know stays NULL, a
//!   NOT NULL one skips the table.
//! - A foreign key takes existing rows of its parent, by their number in
//!   key order (a draw picks the row; the parent's keys are read once); a
//!   key left NULL to break a cycle, or whose nullable parent has no rows,
//!   stays NULL.
//! - A unique key (primary keys included) is made distinct by a mixed radix
//!   over its columns: a column whose type has room for every row counts the
//!   rows alone; otherwise its values and its parents' rows are combined
//!   (`(order_id, line)`, `(user_id, group_id)`), and the rows are capped at
//!   the number of combinations (a unique boolean allows two rows).
//! - A reference to the table itself points at the row whose number is half
//!   its own (a tree of depth log2(rows)); the first row points at none (at
//!   itself when NOT NULL). When the generator makes the referenced key
//!   (a serial or identity key among them), each row's reference is that
//!   row's key; else a nullable one is set by an UPDATE after the rows, and
//!   a NOT NULL one cannot be filled.

use super::binary::{self, Encoding};
use super::catalog::{Catalog, CatalogColumn, CatalogTable, ForeignKey};
use super::checks::{at_most_one_value, check_bounds, check_choices, exactly_one_value};
use super::order::is_nullable;
use super::sql_text::{quote_ident, self_reference_update, setval_sql};
use super::text::Source;
use super::values::{self, ResolvedType, ValueKind};

/// What one table's fill runs: a COPY of generated rows, then the
/// statements after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TableRecipe {
    pub rows: u64,
    /// `COPY table (columns) FROM STDIN`, the columns in [`Self::columns`]'
    /// order; when no column is sent (all left to their defaults), an
    /// `INSERT` of `rows` rows of defaults instead.
    pub sql: String,
    /// What each column the COPY sends gets.
    pub columns: Vec<Column>,
    /// Each sent column's encoding in COPY's binary format; `None` when a
    /// column has none (`binary::encoding`), and the rows go as text.
    pub binary: Option<Vec<Encoding>>,
    /// The parents' rows the foreign keys pick from.
    pub parents: Vec<ParentPick>,
    /// Statements after the rows: UPDATEs of self-references, `setval`s.
    pub after_sql: Vec<String>,
    /// Why fewer rows than asked for fit, if so.
    pub note: Option<String>,
}

/// What one sent column holds in each row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Column {
    /// A generated value, distinct over the rows when `distinct` gives its index.
    Value {
        kind: ValueKind,
        source: Source,
        distinct: Option<Index>,
    },
    /// Column `column` of the key of the parent row [`TableRecipe::parents`]'s `parent` picks.
    Parent { parent: usize, column: usize },
    /// NULL (a CHECK wants only one of several columns set).
    Null,
    /// The value sent column `column` has in the row whose number is half
    /// this one's (a reference to the table itself); the first row's is
    /// NULL when `nullable`, else its own.
    Earlier { column: usize, nullable: bool },
}

/// Which parent row a foreign key takes in each row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParentPick {
    /// The foreign key's place among the table's.
    pub key: usize,
    /// The parent's rows whose key is set.
    pub rows: u64,
    /// The parent row's number (from 1, in key order) for a unique key;
    /// `None`: a draw seeded `seed` picks it.
    pub pick: Option<Index>,
    pub seed: i64,
    /// Every column of the key takes the picked parent row's value (or
    /// NULL), and has the parent column's own type: the rows meet the key
    /// by construction, with no query to check them.
    pub proven: bool,
}

/// A row's index (from 1) for a distinct value or a parent row: the row
/// number, or a digit of a unique key's mixed radix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Index {
    Row,
    /// `size` values, each `divisor` rows long, shifted by the first digit
    /// (of `first_size` values) so that early rows spread over it too.
    Radix {
        divisor: u64,
        first_size: u64,
        size: u64,
    },
}

impl Index {
    /// The index at row `row` (from 1).
    pub fn at(self, row: u64) -> u64 {
        match self {
            Index::Row => row,
            Index::Radix {
                divisor: 1, size, ..
            } => 1 + (row - 1) % size,
            Index::Radix {
                divisor,
                first_size,
                size,
            } => 1 + ((row - 1) / divisor + (row - 1) % first_size) % size,
        }
    }
}

/// What the plan of one table starts from.
pub(super) struct RecipeInput<'a> {
    pub catalog: &'a Catalog,
    pub table: &'a CatalogTable,
    /// Per foreign key: whether it is left NULL to break a cycle.
    pub nulled: Vec<bool>,
    /// Per foreign key: the parent's rows whose key is set (ignored for a self-reference).
    pub parent_rows: Vec<u64>,
    pub rows: u64,
    pub seed: u64,
}

/// What a column gets.
#[derive(Debug, Clone)]
enum Fill {
    /// Nothing: its default, or NULL.
    Server,
    /// A generated value; `distinct_index` is the row's index for it when distinct.
    Value {
        value_type: ValueKind,
        distinct_index: Option<Index>,
    },
    /// A column of a parent's row (join, the column's place in the key).
    Parent(usize, usize),
    /// NULL.
    Null,
    /// A self-reference: the value of the column at `place` in an earlier row.
    Earlier { place: usize, nullable: bool },
}

struct ColumnPlan<'a> {
    column: &'a CatalogColumn,
    fill: Fill,
    /// A value type for a column left to its default, should a key need it.
    spare: Option<ValueKind>,
    /// It has a default (else the server leaves it NULL).
    has_default: bool,
    /// Its default (or identity) gives every row its own value.
    distinct_default: bool,
}

/// A join to a parent's rows for a foreign key.
struct Join {
    /// The foreign key's place among the table's.
    key: usize,
    parent_rows: u64,
    /// For a unique key: the rows one step of this parent's row spans (1:
    /// each row its own parent row).
    divisor: Option<u64>,
    /// The parent row's number for a unique key; `None`: a draw picks it.
    pick: Option<Index>,
    seed: i64,
}

/// A digit of a unique key's mixed radix: a generated column's values, or a parent's rows.
#[derive(Debug, Clone, Copy)]
enum Dimension {
    Column(usize),
    Parent(usize),
}

/// A table's columns as the plan fills them.
struct Planner<'a> {
    input: &'a RecipeInput<'a>,
    columns: Vec<ColumnPlan<'a>>,
    joins: Vec<Join>,
    rows: u64,
    note: Option<String>,
}

/// The plan for a table, or why it cannot be filled.
pub(super) fn table_recipe(input: &RecipeInput<'_>) -> Result<TableRecipe, String> {
    let mut planner = Planner {
        input,
        columns: Vec::new(),
        joins: Vec::new(),
        rows: input.rows,
        note: None,
    };
    for column in &input.table.columns {
        let plan = planner.column_plan(column)?;
        planner.columns.push(plan);
    }
    let sequences = planner.take_over_sequences();
    planner.join_parents()?;
    for key in &input.table.unique_keys {
        planner.make_distinct(&key.name, &key.columns);
    }
    planner.null_combinations();
    let mut after_sql = planner.self_references()?;
    // A numbered column's largest value is the last row's number.
    after_sql.extend((sequences.iter()).map(|sequence| setval_sql(sequence, planner.rows)));
    let (sql, columns, binary) = planner.copy_columns();
    Ok(TableRecipe {
        rows: planner.rows,
        sql,
        columns,
        binary,
        parents: (planner.joins.iter().enumerate())
            .map(|(at, join)| ParentPick {
                key: join.key,
                rows: join.parent_rows,
                pick: join.pick,
                seed: join.seed,
                proven: planner.proven(at),
            })
            .collect(),
        after_sql,
        note: planner.note,
    })
}

impl<'a> Planner<'a> {
    fn column_plan(&self, column: &'a CatalogColumn) -> Result<ColumnPlan<'a>, String> {
        let catalog = self.input.catalog;
        let ResolvedType {
            value,
            base_name,
            domain_not_null,
            domain_default,
            ..
        } = values::resolve(catalog, column);
        let value = self.checked_value(column, value);
        let has_default = column.default.is_some() || domain_default;
        let distinct_default = column.identity
            || column.default.as_deref().is_some_and(|default| {
                ["nextval(", "gen_random_uuid(", "uuid_generate_v"]
                    .iter()
                    .any(|function| default.contains(function))
            });
        let server = |spare| ColumnPlan {
            column,
            fill: Fill::Server,
            spare,
            has_default,
            distinct_default,
        };
        if column.generated || column.identity {
            return Ok(server(None));
        }
        if has_default {
            return Ok(server(value));
        }
        match value {
            Some(value_type) => Ok(ColumnPlan {
                column,
                fill: Fill::Value {
                    value_type,
                    distinct_index: None,
                },
                spare: None,
                has_default,
                distinct_default,
            }),
            None if column.not_null || domain_not_null => Err(format!(
                "column {} is of type {base_name}, which the generator does not know",
                column.name
            )),
            None => Ok(server(None)),
        }
    }

    /// The values the CHECKs on this column alone allow, when the generator
    /// can read them (see `checks`), else `value`.
    fn checked_value(&self, column: &CatalogColumn, value: Option<ValueKind>) -> Option<ValueKind> {
        let checks = || {
            self.input
                .table
                .checks
                .iter()
                .filter(|check| check.columns == [column.attnum])
        };
        if let Some(choices) = checks().find_map(|check| check_choices(&check.definition)) {
            return Some(ValueKind::OneOf(choices));
        }
        let Some((lowest, highest)) = value.as_ref().and_then(ValueKind::whole_range) else {
            return value;
        };
        let Some((low, high)) =
            checks().find_map(|check| check_bounds(&check.definition, &column.name))
        else {
            return value;
        };
        // An open side: a million numbers from the closed one.
        let (low, high) = match (low, high) {
            (Some(low), Some(high)) => (low, high),
            (Some(low), None) => (low, low.saturating_add(999_999)),
            (None, Some(high)) => (high.saturating_sub(999_999), high),
            (None, None) => return value,
        };
        let (low, high) = (low.max(lowest), high.min(highest));
        // No number fits: the server will name the CHECK.
        (low <= high)
            .then_some(ValueKind::IntRange { low, high })
            .or(value)
    }

    /// Meets the CHECKs that say exactly one, or at most one, of several
    /// columns holds a value (`num_nonnulls(post_id, comment_id) = 1`, `(a
    /// IS NULL) <> (b IS NULL)`, `NOT ((a IS NOT NULL) AND (b IS NOT
    /// NULL))`): the first of its columns that gets a value keeps it, the
    /// other nullable ones are NULL.
    fn null_combinations(&mut self) {
        for check in &self.input.table.checks {
            let one_value =
                exactly_one_value(&check.definition) || at_most_one_value(&check.definition);
            if check.columns.len() < 2 || !one_value {
                continue;
            }
            let mut attnums = check.columns.clone();
            attnums.sort_unstable();
            let places: Vec<usize> = (attnums.iter())
                .filter_map(|attnum| self.position(*attnum))
                .collect();
            let valued = |plan: &ColumnPlan| !matches!(plan.fill, Fill::Server) || plan.has_default;
            let Some(&kept) = places.iter().find(|&&place| valued(&self.columns[place])) else {
                continue;
            };
            for &place in places.iter().filter(|&&place| place != kept) {
                let plan = &mut self.columns[place];
                if !plan.column.not_null {
                    plan.fill = Fill::Null;
                    plan.spare = None;
                }
            }
        }
    }

    /// Whether join `join` gives each column of its key the parent row's
    /// value (or NULL) and each such column has the parent column's type.
    fn proven(&self, join: usize) -> bool {
        let key = &self.input.table.foreign_keys[self.joins[join].key];
        let Some(parent) = (self.input.catalog.tables.iter()).find(|t| t.oid == key.parent_oid)
        else {
            return false;
        };
        key.columns
            .iter()
            .zip(&key.parent_columns)
            .all(|(&attnum, name)| {
                let Some(place) = self.position(attnum) else {
                    return false;
                };
                let plan = &self.columns[place];
                let same_type = (parent.columns.iter()).any(|column| {
                    &column.name == name
                        && column.type_oid == plan.column.type_oid
                        && column.typmod == plan.column.typmod
                });
                match plan.fill {
                    Fill::Parent(from, _) => from == join && same_type,
                    Fill::Null => true,
                    _ => false,
                }
            })
    }

    fn position(&self, attnum: i16) -> Option<usize> {
        self.columns
            .iter()
            .position(|plan| plan.column.attnum == attnum)
    }

    /// Joins each foreign key's parent rows, widest keys first (a column in
    /// two keys takes the first's value).
    fn join_parents(&mut self) -> Result<(), String> {
        let table = self.input.table;
        let mut keys: Vec<usize> = (0..table.foreign_keys.len()).collect();
        keys.sort_by_key(|&at| std::cmp::Reverse(table.foreign_keys[at].columns.len()));
        for at in keys {
            let key = &table.foreign_keys[at];
            let places: Vec<usize> = key
                .columns
                .iter()
                .filter_map(|&attnum| self.position(attnum))
                .collect();
            let parent_rows = self.input.parent_rows[at];
            let nullable = is_nullable(table, &key.columns);
            let self_reference = key.parent_oid == table.oid;
            if self_reference || self.input.nulled[at] || (parent_rows == 0 && nullable) {
                for &place in &places {
                    self.columns[place].fill = Fill::Server;
                }
                continue;
            }
            if parent_rows == 0 {
                return Err(format!(
                    "its foreign key {} needs rows of {}, which has none",
                    key.name, key.parent_sql
                ));
            }
            if places
                .iter()
                .any(|&place| matches!(self.columns[place].fill, Fill::Parent(..)))
            {
                continue;
            }
            let join = self.joins.len();
            for (column, &place) in places.iter().enumerate() {
                self.columns[place].fill = Fill::Parent(join, column);
            }
            self.joins.push(Join {
                key: at,
                parent_rows,
                divisor: None,
                pick: None,
                seed: seed_for(self.input.seed, 1000 + at as i64),
            });
        }
        Ok(())
    }

    /// Makes the unique key `columns` distinct (see the module comment).
    fn make_distinct(&mut self, name: &str, columns: &[i16]) {
        let places: Vec<usize> = columns
            .iter()
            .filter_map(|&attnum| self.position(attnum))
            .collect();
        let already = places.iter().any(|&place| {
            let plan = &self.columns[place];
            match &plan.fill {
                // NULLs never collide.
                Fill::Server => {
                    plan.distinct_default || !(plan.has_default || plan.column.generated)
                }
                Fill::Value { distinct_index, .. } => *distinct_index == Some(Index::Row),
                Fill::Parent(join, _) => self.joins[*join].divisor == Some(1),
                Fill::Null | Fill::Earlier { .. } => false,
            }
        });
        if already {
            return;
        }
        let mut values: Vec<usize> = places
            .iter()
            .copied()
            .filter(|&place| matches!(self.columns[place].fill, Fill::Value { .. }))
            .collect();
        let mut joins: Vec<usize> = places
            .iter()
            .filter_map(|&place| match self.columns[place].fill {
                Fill::Parent(join, _) => Some(join),
                _ => None,
            })
            .collect();
        joins.sort_unstable();
        joins.dedup();
        if values.is_empty() && joins.is_empty() {
            match self.generate_spare(&places) {
                Some(place) => values.push(place),
                None => return,
            }
        }
        values.sort_by_key(|&place| std::cmp::Reverse(self.room(place)));
        if let Some(&roomiest) = values.first()
            && self.room(roomiest) >= self.rows
        {
            self.set_distinct(roomiest, Index::Row);
            return;
        }
        // A mixed radix over the key's values and parents: the first counts
        // the rows, each next one advances every so many rows, shifted by the
        // first so that early rows spread over it too (still one row per
        // combination).
        let mut dimensions: Vec<(Dimension, u64)> = values
            .into_iter()
            .map(|place| (Dimension::Column(place), self.room(place)))
            .collect();
        dimensions.extend(
            joins
                .into_iter()
                .filter(|&join| self.joins[join].pick.is_none())
                .map(|join| (Dimension::Parent(join), self.joins[join].parent_rows)),
        );
        let Some(&(_, first_size)) = dimensions.first() else {
            return;
        };
        let mut combinations: u64 = 1;
        for (dimension, size) in dimensions {
            let index = Index::Radix {
                divisor: combinations,
                first_size,
                size,
            };
            match dimension {
                Dimension::Column(place) => self.set_distinct(place, index),
                Dimension::Parent(join) => {
                    self.joins[join].divisor = Some(combinations);
                    self.joins[join].pick = Some(index);
                }
            }
            combinations = combinations.saturating_mul(size);
        }
        if combinations < self.rows {
            self.rows = combinations;
            self.note = Some(format!(
                "unique key {name} allows {combinations} distinct rows with the values \
                 its columns' types and parents have"
            ));
        }
    }

    /// For a key of columns left to their default only: generates the
    /// roomiest instead, and returns its place.
    fn generate_spare(&mut self, places: &[usize]) -> Option<usize> {
        let place = places
            .iter()
            .copied()
            .filter(|&place| self.columns[place].spare.is_some())
            .max_by_key(|&place| {
                self.columns[place]
                    .spare
                    .as_ref()
                    .map(ValueKind::distinct_values)
            })?;
        let value_type = self.columns[place].spare.take()?;
        self.columns[place].fill = Fill::Value {
            value_type,
            distinct_index: None,
        };
        Some(place)
    }

    /// How many distinct values a generated column can take.
    fn room(&self, place: usize) -> u64 {
        match &self.columns[place].fill {
            Fill::Value { value_type, .. } => value_type.distinct_values(),
            _ => 0,
        }
    }

    fn set_distinct(&mut self, place: usize, index: Index) {
        if let Fill::Value { distinct_index, .. } = &mut self.columns[place].fill
            && distinct_index.is_none()
        {
            *distinct_index = Some(index);
        }
    }

    /// Points each row's self-references at an earlier row: the referenced
    /// key's value in that row when the generator makes the key (taking over
    /// a serial or identity key, whose sequence is set past the rows after);
    /// else an UPDATE after the rows for a nullable one.
    fn self_references(&mut self) -> Result<Vec<String>, String> {
        let table = self.input.table;
        let mut after = Vec::new();
        for key in table
            .foreign_keys
            .iter()
            .filter(|key| key.parent_oid == table.oid)
        {
            let nullable = is_nullable(table, &key.columns);
            match self.referenced_places(key) {
                Some(referenced) => {
                    for (&attnum, place) in key.columns.iter().zip(referenced) {
                        let Some(at) = self.position(attnum) else {
                            continue;
                        };
                        self.columns[at].fill = Fill::Earlier { place, nullable };
                    }
                }
                None if nullable => after.push(self_reference_update(table, key)),
                None => {
                    return Err(format!(
                        "its NOT NULL foreign key {} points at the table itself through \
                         columns the generator does not make, so no row can point at \
                         another before it exists",
                        key.name
                    ));
                }
            }
        }
        Ok(after)
    }

    /// Makes the values of each serial or identity integer column the
    /// server would number itself (1, 2, ... as a fresh sequence gives
    /// them) on the client instead, when its type has room for every row:
    /// the server then parses a number per row instead of calling
    /// `nextval` (a twelfth of a COPY's time, profiled); returns the
    /// sequences to move past the rows after them.
    fn take_over_sequences(&mut self) -> Vec<String> {
        let mut after = Vec::new();
        for place in 0..self.columns.len() {
            let column = self.columns[place].column;
            let Some(sequence) = column.sequence.as_deref() else {
                continue;
            };
            let numbered = column.identity
                || (column.default.as_deref()).is_some_and(|default| default.contains("nextval("));
            if !matches!(self.columns[place].fill, Fill::Server) || column.generated || !numbered {
                continue;
            }
            let resolved = values::resolve(self.input.catalog, column).value;
            let Some(value_type) = self.checked_value(column, resolved) else {
                continue;
            };
            if !matches!(value_type, ValueKind::Int { .. })
                || value_type.distinct_values() < self.rows
            {
                continue;
            }
            self.columns[place].fill = Fill::Value {
                value_type,
                distinct_index: Some(Index::Row),
            };
            self.columns[place].spare = None;
            after.push(sequence.to_string());
        }
        after
    }

    /// The places of the referenced columns, when the generator makes each
    /// of them from the row number alone.
    fn referenced_places(&self, key: &ForeignKey) -> Option<Vec<usize>> {
        key.parent_columns
            .iter()
            .map(|referenced| {
                let place = self
                    .columns
                    .iter()
                    .position(|plan| &plan.column.name == referenced)?;
                match &self.columns[place].fill {
                    Fill::Value {
                        distinct_index: Some(Index::Row),
                        ..
                    } => Some(place),
                    _ => None,
                }
            })
            .collect()
    }

    fn source(&self, place: usize, value_type: &ValueKind) -> Source {
        let column = self.columns[place].column;
        let time_place = self.columns[..place]
            .iter()
            .filter(|plan| {
                matches!(
                    &plan.fill,
                    Fill::Value {
                        value_type: ValueKind::Date | ValueKind::Timestamp,
                        ..
                    }
                )
            })
            .count() as u32;
        let max_chars = match value_type {
            ValueKind::Text { max_chars } => *max_chars,
            _ => None,
        };
        Source::new(
            seed_for(self.input.seed, i64::from(column.attnum)),
            seed_for(self.input.seed, 0),
            time_place,
            &column.name,
            self.rows,
        )
        .fitted(max_chars)
    }

    /// The COPY statement, what each column it names gets, and their
    /// binary encodings when every one has one.
    fn copy_columns(&self) -> (String, Vec<Column>, Option<Vec<Encoding>>) {
        let sent: Vec<usize> = (0..self.columns.len())
            .filter(|&place| !matches!(self.columns[place].fill, Fill::Server))
            .collect();
        let columns = sent
            .iter()
            .map(|&place| match &self.columns[place].fill {
                Fill::Value {
                    value_type,
                    distinct_index,
                } => Column::Value {
                    kind: value_type.clone(),
                    source: self.source(place, value_type),
                    distinct: *distinct_index,
                },
                Fill::Parent(join, column) => Column::Parent {
                    parent: *join,
                    column: *column,
                },
                Fill::Earlier { place, nullable } => Column::Earlier {
                    column: sent.iter().position(|at| at == place).unwrap_or(0),
                    nullable: *nullable,
                },
                Fill::Null | Fill::Server => Column::Null,
            })
            .collect();
        let names: Vec<String> = (sent.iter())
            .map(|&place| quote_ident(&self.columns[place].column.name))
            .collect();
        let table = &self.input.table.sql_name;
        let sql = match names.is_empty() {
            true => format!(
                "INSERT INTO {table} SELECT FROM generate_series(1, {})",
                self.rows
            ),
            false => format!("COPY {table} ({}) FROM STDIN", names.join(", ")),
        };
        let binary = sent.iter().map(|&place| self.encoding(place)).collect();
        (sql, columns, binary)
    }

    /// The binary encoding of the column at `place`, if it has one: a
    /// foreign key's only when the key is proven (the parent's key has the
    /// column's own type), a self-reference's only when it has the
    /// referenced column's type.
    fn encoding(&self, place: usize) -> Option<Encoding> {
        let catalog = self.input.catalog;
        let column = self.columns[place].column;
        let base = catalog
            .types
            .get(&values::resolve(catalog, column).base_oid)?;
        match &self.columns[place].fill {
            Fill::Value { value_type, .. } => binary::encoding(value_type, base),
            Fill::Parent(join, _) => match self.proven(*join) {
                true => binary::key_encoding(base),
                false => None,
            },
            Fill::Earlier {
                place: referenced, ..
            } => {
                let other = self.columns[*referenced].column;
                let same = (other.type_oid, other.typmod) == (column.type_oid, column.typmod);
                if same {
                    self.encoding(*referenced)
                } else {
                    None
                }
            }
            Fill::Null | Fill::Server => Some(Encoding::Null),
        }
    }
}

/// A seed of its own for each column (by number) and draw, from the fill's seed.
fn seed_for(seed: u64, salt: i64) -> i64 {
    (seed as i64).wrapping_mul(1_000_003).wrapping_add(salt)
}

#[cfg(test)]
#[path = "recipe_tests.rs"]
mod tests;
