//! The lexical step of an open: the index the configuration asks for, tantivy in RAM or in the
//! store folder, or sparse vectors in the knowledge base's lexical collection on Qdrant.

use std::sync::Arc;

use anyhow::Result;
use zhiku_adapters_qdrant::{Bm25, QdrantLexicalIndex};
use zhiku_adapters_tantivy::{LexicalConfig, TantivyLexicalIndex};
use zhiku_domain::ports::{ChunkRecords, LexicalIndex};
use zhiku_service::{Reanalysis, StrayFiles};

use super::request::Request;
use crate::config::LexicalKind;

/// The store of chunk records a lexical index may read instead of keeping its own.
pub(super) type Records = Option<Arc<dyn ChunkRecords>>;

/// An opened lexical index, with what the open did and how `status` names it.
pub(super) struct Lexical {
    /// The index.
    pub(super) index: Arc<dyn LexicalIndex>,
    /// The adapter as `status` shows it.
    pub(super) described: String,
    /// The unreferenced files a writing open removed before its first write.
    pub(super) swept: Vec<String>,
    /// Lists the unreferenced files now, for an index kept in a folder.
    pub(super) stray_files: Option<StrayFiles>,
    /// The chunks a changed user dictionary affected, analysed again by a writing open.
    pub(super) reanalysed: Option<Reanalysis>,
}

/// The lexical index the configuration asks for. On disk it keeps chunk IDs and reads the
/// records from the store `records` returns when there is one (the vector index the same
/// process writes, so the text lives once), and keeps them itself otherwise; `records` is
/// called only for an index on disk, after it opened.
pub(super) fn open(
    request: &Request<'_>,
    records: impl FnOnce() -> Result<Records>,
) -> Result<Lexical> {
    let config = LexicalConfig {
        analyzer: request.config.analyzer.clone(),
        ..LexicalConfig::default()
    };
    let mut reanalysed = None;
    let lexical = match request.config.lexical {
        LexicalKind::Qdrant => return on_qdrant(request),
        LexicalKind::Ram => TantivyLexicalIndex::in_ram(config)?,
        LexicalKind::Disk => {
            let path = request.dir.join("lexical");
            let opened = if request.access.is_read_only() {
                TantivyLexicalIndex::open_read_only(&path, config)
            } else {
                TantivyLexicalIndex::open_or_create(&path, config)
            };
            let lexical = opened.map_err(|e| request.rebuild_or(e))?;
            let lexical = match records()? {
                Some(records) => lexical.with_records_in(records),
                None => lexical,
            };
            let words = lexical.changed_words().len();
            if words > 0 && !lexical.is_read_only() {
                let done = lexical.reanalyse()?;
                reanalysed = Some(Reanalysis {
                    words,
                    chunks: done.chunks,
                    of: done.of,
                });
            }
            lexical
        }
    };
    Ok(Lexical {
        described: describe(&lexical, request.config.lexical),
        swept: lexical.swept_files().to_vec(),
        stray_files: stray_files(request),
        reanalysed,
        index: Arc::new(lexical),
    })
}

/// The knowledge base's lexical collection on the Qdrant deployment of `[qdrant]`. A server
/// that cannot be reached fails the open: there is no other copy of the lexical route.
fn on_qdrant(request: &Request<'_>) -> Result<Lexical> {
    if !request.config.analyzer.dictionary().is_empty() {
        anyhow::bail!(
            "a user dictionary (`dictionary`, `dictionary_file`) applies to the embedded lexical \
             index; the lexical collection on Qdrant analyses with jieba's default dictionary \
             alone: leave the dictionary out with lexical = \"qdrant\""
        );
    }
    let settings = &request.config.qdrant;
    let kb = crate::wiring::qdrant::kb_name_of(settings, request.dir)?;
    let index = QdrantLexicalIndex::open(settings, &kb, Bm25::default())
        .map_err(|e| request.rebuild_or(e))?;
    Ok(Lexical {
        described: format!(
            "qdrant sparse vectors, collection {} on {} ({})",
            index.collection(),
            index.url(),
            index.analyzer()
        ),
        swept: Vec::new(),
        stray_files: None,
        reanalysed: None,
        index: Arc::new(index),
    })
}

/// How `status` names the lexical index.
fn describe(lexical: &TantivyLexicalIndex, kind: LexicalKind) -> String {
    format!(
        "tantivy {} ({}{})",
        if kind == LexicalKind::Disk {
            "on disk"
        } else {
            "in RAM"
        },
        lexical.analyzer_identity(),
        if lexical.records_elsewhere() {
            "; records in the vector store"
        } else {
            ""
        }
    )
}

/// The listing of the unreferenced files of an index on disk.
fn stray_files(request: &Request<'_>) -> Option<StrayFiles> {
    if request.config.lexical != LexicalKind::Disk {
        return None;
    }
    let folder = request.dir.join("lexical");
    Some(Box::new(move || {
        Ok(TantivyLexicalIndex::stray_files(&folder)?)
    }))
}
