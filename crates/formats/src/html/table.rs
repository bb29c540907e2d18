//! Tables: a data table read as a Markdown pipe table (its first row with text the header),
//! and the layout tables (holding headings or tables) that are read as blocks instead.

use super::arena::Arena;
use crate::text_builder::pipe_table;

/// A data table being collected: its caption, its rows so far and the cells of the row being
/// read.
#[derive(Default)]
pub(super) struct Table {
    caption: Option<String>,
    rows: Vec<Vec<String>>,
    cells: Vec<String>,
}

impl Table {
    /// Adds a cell to the row being read.
    pub(super) fn push_cell(&mut self, cell: String) {
        self.cells.push(cell);
    }

    /// Keeps the caption, written as a line above the table, when it has text.
    pub(super) fn push_caption(&mut self, caption: String) {
        if !caption.is_empty() {
            self.caption = Some(caption);
        }
    }

    /// Ends the row being read, with the text left outside its cells (`leftover`) as a last
    /// cell.
    pub(super) fn end_row(&mut self, leftover: String) {
        if !leftover.is_empty() {
            self.cells.push(leftover);
        }
        self.rows.push(std::mem::take(&mut self.cells));
    }

    /// The table's lines: its caption, then the pipe table.
    pub(super) fn into_lines(self) -> String {
        let table = pipe_table(&self.rows);
        match (self.caption, table) {
            (Some(caption), Some(table)) => format!("{caption}\n\n{table}"),
            (caption, table) => caption.or(table).unwrap_or_default(),
        }
    }
}

impl Arena<'_> {
    /// Whether `i` lies in a table, and the nearest one lays out the page.
    pub(super) fn inside_layout_table(&self, mut i: usize) -> bool {
        while i != usize::MAX {
            if self.is(i, "table") {
                return self.is_layout_table(i);
            }
            i = self.nodes[i].parent;
        }
        false
    }

    /// Whether table `t` lays out a page rather than holding data: it holds headings or tables.
    pub(super) fn is_layout_table(&self, t: usize) -> bool {
        (t + 1..self.nodes[t].end).any(|i| {
            matches!(
                self.name(i),
                "table" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "article" | "section"
            )
        })
    }
}
