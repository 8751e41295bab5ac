//! A table as plain data: the header, the rows as text, and how each column
//! is aligned. Each table is built once from the report; the console and
//! Markdown renderers only lay it out (see `console::render_table` and
//! `markdown::render_table`).

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// A table ready to render: one header cell, one alignment and one cell per row for each column.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column titles, in column order.
    pub header: Vec<String>,
    /// How each column is aligned, in column order.
    pub align: Vec<Align>,
    /// The rows, each with one cell per column, unescaped.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns, given as `(title, alignment)`.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            header: columns.iter().map(|(title, _)| title.to_string()).collect(),
            align: columns.iter().map(|(_, align)| *align).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends one row; it must have one cell per column.
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.header.len(), "one cell per column");
        self.rows.push(row);
    }
}
