//! What the adapter's own tests share.

use zhiku_domain::ports::LexicalIndex;
use zhiku_domain::{Filter, Scope};

/// The documents of a search's top 10 in scope "s", best first.
pub(crate) fn ranked(index: &dyn LexicalIndex, query: &str) -> Vec<String> {
    index
        .search(query, 10, &Filter::for_scope(Scope::new("s").unwrap()))
        .unwrap()
        .iter()
        .map(|h| h.chunk.doc_id().to_string())
        .collect()
}
