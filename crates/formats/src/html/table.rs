//! Tables: a data table read as one paragraph of one line per row (cells joined by ` | `),
//! and the layout tables (holding headings or tables) that are read as blocks instead.

use super::arena::Arena;

/// A data table being collected: its rows so far and the cells of the row being read.
#[derive(Default)]
pub(super) struct Table {
    rows: Vec<String>,
    cells: Vec<String>,
}

impl Table {
    /// Adds a cell to the row being read.
    pub(super) fn push_cell(&mut self, cell: String) {
        self.cells.push(cell);
    }

    /// Adds the caption as a line of its own, when it has text.
    pub(super) fn push_caption(&mut self, caption: String) {
        if !caption.is_empty() {
            self.rows.push(caption);
        }
    }

    /// Ends the row being read, with the text left outside its cells (`leftover`) as a last
    /// cell; a row of empty cells is no line.
    pub(super) fn end_row(&mut self, leftover: String) {
        if !leftover.is_empty() {
            self.cells.push(leftover);
        }
        if self.cells.iter().any(|c| !c.is_empty()) {
            self.rows.push(self.cells.join(" | "));
        }
        self.cells.clear();
    }

    /// The table's lines, one per row.
    pub(super) fn into_lines(self) -> String {
        self.rows.join("\n")
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
