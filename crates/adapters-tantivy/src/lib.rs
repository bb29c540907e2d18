//! A [`LexicalIndex`] on tantivy: BM25 over chunk content and title (title weighted), Chinese
//! segmented with jieba.
//!
//! - On disk in a directory ([`TantivyLexicalIndex::open_or_create`]) for the embedded store, or
//!   in RAM ([`TantivyLexicalIndex::in_ram`]) for tests.
//! - Filters (scope, document ids, locale, metadata) are clauses of the query itself, scored 0,
//!   so they apply before ranking.
//! - Writes become visible on [`commit`](LexicalIndex::commit); tantivy replaces its `meta.json`
//!   atomically, so a crash mid-write leaves the previous commit readable.
//! - The analyzer identity is stored in the commit payload; opening an index built with another
//!   analyzer is [`IndexError::ConfigMismatch`].
//! - A writer killed mid-commit leaves segment files that the committed `meta.json` does not
//!   reference. Their names are deterministic (`<segment>.<opstamp>.del`), so the next writer,
//!   replaying the same operations, would collide with them (`FileAlreadyExists`). Tantivy's own
//!   garbage collection runs only after a successful commit, which that collision prevents; so
//!   [`TantivyLexicalIndex::open_or_create`] removes every unreferenced segment file before the
//!   first write ([`TantivyLexicalIndex::swept_files`] lists them).
//! - [`TantivyLexicalIndex::open_read_only`] opens the last committed state without a writer:
//!   it works beside another process that writes, and on a folder that cannot be written.
//! - Each chunk's record (content, title, attributes) is stored with it, unless the index was
//!   given another store of the same records ([`TantivyLexicalIndex::with_records_in`], the
//!   embedded store's vector index): then a chunk is indexed with only its ID stored, and a
//!   hit's record is read from that store, so the text lives once. A document written before
//!   (with its record) is still read from its own record, so a store upgraded in place keeps
//!   working and sheds the copies as its documents are written again. A hit the other store
//!   does not hold (its commit is not visible yet, or it lost the chunk in a crash the next
//!   consistency check repairs) is left out; a hit whose record no longer passes the filter
//!   is too.

mod analyzer;
mod top;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use tantivy::collector::{Count, DocSetCollector};
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, META_LOCK, MmapDirectory, WatchCallback,
    WatchHandle, WritePtr,
};
use tantivy::index::SegmentId;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, EnableScoring, Occur, Query, TermQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{
    DocAddress, DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    Term,
};
use zhiku_domain::ports::{ChunkRecords, IndexCapabilities, IndexError, LexicalIndex, ScoredChunk};
use zhiku_domain::{Chunk, ChunkId, ChunkRecord, Filter, RESTRICTED_TERM};

use top::{FilterSets, FilteredTop};

pub use analyzer::{JiebaTokenizer, PAIRS_TOKENIZER_NAME, PairsTokenizer, TOKENIZER_NAME};
pub use zhiku_analyzer::{
    ANALYZER_IDENTITY, Analyzer, STOP_WORDS_ZH, UserDictionary, analyze, jieba, pairs, terms,
};

const ADAPTER: &str = "tantivy";

/// Chunks read at a time when a changed user dictionary is applied.
const REANALYSE_BATCH: usize = 1_000;

/// What [`TantivyLexicalIndex::reanalyse`] did: `chunks` analysed again, of the `of` the index
/// holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reanalysed {
    /// Chunks analysed again.
    pub chunks: usize,
    /// Chunks in the index.
    pub of: usize,
}

/// Tuning of the BM25 query, and the analyzer.
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalConfig {
    /// Weight of title matches relative to content matches. The title is its own BM25 field,
    /// so its short length already lifts title matches; 1.0 was best on CMRC 2018 dev
    /// (hit@1 0.969 at 0, 0.986 at 1, 0.973 at 2, 0.958 at 3).
    pub title_boost: f32,
    /// Writer memory budget in bytes.
    pub writer_memory: usize,
    /// Writer threads.
    pub writer_threads: usize,
    /// Parsed chunk records kept in memory, so a popular hit is not fetched and validated
    /// again on every query (0 disables the cache).
    pub record_cache: usize,
    /// The analyzer of the words' fields: jieba, with the team's user dictionary if any.
    pub analyzer: Analyzer,
}

impl Default for LexicalConfig {
    fn default() -> Self {
        Self {
            title_boost: 1.0,
            writer_memory: 16 * 1024 * 1024,
            writer_threads: 1,
            record_cache: 16_384,
            analyzer: Analyzer::default(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    chunk_id: Field,
    doc_id: Field,
    scope: Field,
    locale: Field,
    meta: Field,
    title: Field,
    content: Field,
    /// The Han pairs (zhiku_analyzer::pairs) of the title and content read together:
    /// dictionary-free terms, a field of their own so that the words' length normalisation
    /// stays the words'.
    pairs: Field,
    record: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let pairs = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(PAIRS_TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        chunk_id: builder.add_text_field("chunk_id", STRING | STORED),
        doc_id: builder.add_text_field("doc_id", STRING),
        scope: builder.add_text_field("scope", STRING),
        locale: builder.add_text_field("locale", STRING),
        meta: builder.add_text_field("meta", STRING),
        title: builder.add_text_field("title", text.clone()),
        content: builder.add_text_field("content", text),
        pairs: builder.add_text_field("pairs", pairs),
        record: builder.add_text_field("record", STORED),
    };
    (builder.build(), fields)
}

/// Stored chunk records are fetched for every hit, so the document store is kept uncompressed
/// in small blocks: a hit costs a copy, not the decompression of a 16 KiB block.
fn index_settings() -> tantivy::IndexSettings {
    tantivy::IndexSettings {
        docstore_compression: tantivy::store::Compressor::None,
        docstore_blocksize: 4096,
        ..tantivy::IndexSettings::default()
    }
}

fn backend(e: impl std::error::Error + Send + Sync + 'static) -> IndexError {
    IndexError::backend(ADAPTER, e)
}

/// The tantivy lexical index.
pub struct TantivyLexicalIndex {
    index: Index,
    reader: IndexReader,
    /// `None` when opened read-only.
    writer: Option<Mutex<IndexWriter>>,
    /// Unreferenced segment files removed before the writer was created.
    swept: Vec<String>,
    fields: Fields,
    config: LexicalConfig,
    persistent: bool,
    /// Parsed records by (segment, document): segments are immutable, so an entry never goes
    /// stale; entries of merged-away segments are simply never asked for again.
    records: RwLock<HashMap<(SegmentId, DocId), Arc<Chunk>>>,
    /// Allowed documents per (segment, filter), for filtered top-k.
    filter_sets: FilterSets,
    /// Where the records live when this index keeps only chunk IDs.
    records_elsewhere: Option<Arc<dyn ChunkRecords>>,
    /// The words whose segmentation the user dictionary changed since the last commit: the
    /// chunks holding one are analysed again by [`reanalyse`](Self::reanalyse).
    changed_words: Mutex<BTreeSet<String>>,
}

impl std::fmt::Debug for TantivyLexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TantivyLexicalIndex")
            .field("persistent", &self.persistent)
            .field("config", &self.config)
            .field("records_elsewhere", &self.records_elsewhere.is_some())
            .finish()
    }
}

impl TantivyLexicalIndex {
    /// A fresh index in RAM.
    pub fn in_ram(config: LexicalConfig) -> Result<Self, IndexError> {
        let (schema, fields) = schema();
        let index = Index::builder()
            .schema(schema)
            .settings(index_settings())
            .create_in_ram()
            .map_err(backend)?;
        let this = Self::wrap(index, fields, config, false, true)?;
        this.commit_payload()?;
        Ok(this)
    }

    /// Opens the index in `dir` for writing, creating it when the directory is empty or missing.
    /// An index recorded with another analyzer is refused with [`IndexError::ConfigMismatch`].
    /// Segment files the committed `meta.json` does not reference (left by a writer that was
    /// killed mid-commit) are removed before anything is written.
    pub fn open_or_create(dir: &Path, config: LexicalConfig) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        let (schema, fields) = schema();
        let directory = MmapDirectory::open(dir).map_err(backend)?;
        let exists = Index::exists(&directory).map_err(backend)?;
        if exists {
            let index = Index::open(directory).map_err(|e| locked_or_backend(e, dir))?;
            let changed = check_recorded(&index, &schema, &config.analyzer)?;
            let unstamped = index.load_metas().map_err(backend)?.payload.is_none();
            let mut this = Self::wrap(index, fields, config, true, true)?;
            this.changed_words = Mutex::new(changed);
            this.swept = sweep_stray_files(&this.index, dir, true)?;
            if unstamped {
                // Created by a process killed before its first commit: stamp it now.
                this.commit_payload()?;
            }
            Ok(this)
        } else {
            let index = Index::create(directory, schema, index_settings()).map_err(backend)?;
            let this = Self::wrap(index, fields, config, true, true)?;
            this.commit_payload()?;
            Ok(this)
        }
    }

    /// Opens the last committed state of the index in `dir` for reading only: no writer, no
    /// lock held between calls, nothing written, so it works beside a process that writes and on
    /// a folder that cannot be written. Without an index there, an empty one (in RAM) is read.
    pub fn open_read_only(dir: &Path, config: LexicalConfig) -> Result<Self, IndexError> {
        let (schema, fields) = schema();
        let exists = dir.is_dir()
            && MmapDirectory::open(dir)
                .ok()
                .map(|d| Index::exists(&d))
                .transpose()
                .map_err(backend)?
                .unwrap_or(false);
        if !exists {
            return Self::in_ram(config);
        }
        let directory = ReadOnlyDirectory {
            inner: MmapDirectory::open(dir).map_err(backend)?,
        };
        let index = Index::open(directory).map_err(|e| locked_or_backend(e, dir))?;
        // A reader of an index whose user dictionary changed searches it as it is until a
        // writer analyses the affected chunks again.
        check_recorded(&index, &schema, &config.analyzer)?;
        Self::wrap(index, fields, config, true, false)
    }

    /// The unreferenced segment files in `dir` (left by a writer killed mid-commit), without
    /// touching them.
    pub fn stray_files(dir: &Path) -> Result<Vec<String>, IndexError> {
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        let directory = ReadOnlyDirectory {
            inner: MmapDirectory::open(dir).map_err(backend)?,
        };
        if !Index::exists(&directory).map_err(backend)? {
            return Ok(Vec::new());
        }
        let index = Index::open(directory).map_err(|e| locked_or_backend(e, dir))?;
        sweep_stray_files(&index, dir, false)
    }

    /// The unreferenced segment files this open removed before writing (empty for a read-only
    /// open).
    pub fn swept_files(&self) -> &[String] {
        &self.swept
    }

    /// True when opened without a writer.
    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
    }

    fn wrap(
        index: Index,
        fields: Fields,
        config: LexicalConfig,
        persistent: bool,
        writable: bool,
    ) -> Result<Self, IndexError> {
        index
            .tokenizers()
            .register(TOKENIZER_NAME, JiebaTokenizer::new(config.analyzer.clone()));
        index
            .tokenizers()
            .register(PAIRS_TOKENIZER_NAME, PairsTokenizer);
        let writer = if writable {
            let writer = index
                .writer_with_num_threads(config.writer_threads.max(1), config.writer_memory)
                .map_err(|e| match e {
                    tantivy::TantivyError::LockFailure(..) => IndexError::Unavailable {
                        adapter: ADAPTER,
                        message: "the index is locked by another writer".into(),
                    },
                    other => backend(other),
                })?;
            Some(Mutex::new(writer))
        } else {
            None
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(backend)?;
        Ok(Self {
            index,
            reader,
            writer,
            swept: Vec::new(),
            fields,
            config,
            persistent,
            records: RwLock::new(HashMap::new()),
            filter_sets: FilterSets::default(),
            records_elsewhere: None,
            changed_words: Mutex::default(),
        })
    }

    /// From now on this index stores only each chunk's ID and reads a hit's record from
    /// `records`, which the caller keeps with the same chunks (the embedded store's vector
    /// index: the indexer writes both). Documents that carry their own record are still read
    /// from it (see the [crate documentation](crate)).
    pub fn with_records_in(mut self, records: Arc<dyn ChunkRecords>) -> Self {
        self.records_elsewhere = Some(records);
        self
    }

    /// True when chunk records are read from another store.
    pub fn records_elsewhere(&self) -> bool {
        self.records_elsewhere.is_some()
    }

    fn writer(&self) -> Result<std::sync::MutexGuard<'_, IndexWriter>, IndexError> {
        match &self.writer {
            Some(w) => Ok(w.lock().unwrap_or_else(|e| e.into_inner())),
            None => Err(IndexError::Unavailable {
                adapter: ADAPTER,
                message: "the index was opened read-only".into(),
            }),
        }
    }

    fn commit_payload(&self) -> Result<(), IndexError> {
        LexicalIndex::commit(self)
    }

    fn filter_query(&self, filter: &Filter) -> Vec<(Occur, Box<dyn Query>)> {
        let f = self.fields;
        let term = |field: Field, text: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, text),
                IndexRecordOption::Basic,
            ))
        };
        let any_of = |queries: Vec<Box<dyn Query>>| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                queries.into_iter().map(|q| (Occur::Should, q)).collect(),
            ))
        };
        let mut clauses: Vec<Box<dyn Query>> = Vec::new();
        clauses.push(any_of(
            filter
                .scopes()
                .iter()
                .map(|s| term(f.scope, s.as_str()))
                .collect(),
        ));
        if let Some(ids) = filter.doc_ids() {
            clauses.push(any_of(
                ids.iter().map(|d| term(f.doc_id, d.as_str())).collect(),
            ));
        }
        if let Some(locale) = filter.locale_term() {
            clauses.push(term(f.locale, &locale));
        }
        for meta in filter.metadata_terms() {
            clauses.push(term(f.meta, &meta));
        }
        if let Some(readers) = filter.reader_index_terms() {
            // Open chunks (no restricted mark) or one of the principal's reader terms; access
            // terms share the metadata field, where `@` never starts a metadata term.
            let open: Box<dyn Query> = Box::new(BooleanQuery::new(vec![
                (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                (Occur::MustNot, term(f.meta, RESTRICTED_TERM)),
            ]));
            let mut any = vec![open];
            any.extend(readers.iter().map(|r| term(f.meta, r)));
            clauses.push(any_of(any));
        }
        clauses
            .into_iter()
            .map(|q| {
                (
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(q, 0.0)) as Box<dyn Query>,
                )
            })
            .collect()
    }

    /// The record a stored document carries, `None` when it keeps only its ID.
    fn own_record(&self, doc: &TantivyDocument) -> Result<Option<Chunk>, IndexError> {
        let Some(text) = doc.get_first(self.fields.record).and_then(|v| v.as_str()) else {
            return Ok(None);
        };
        let record: ChunkRecord = serde_json::from_str(text).map_err(backend)?;
        Chunk::from_record(record).map(Some).map_err(backend)
    }

    fn stored_id(&self, doc: &TantivyDocument) -> Result<ChunkId, IndexError> {
        let id = doc
            .get_first(self.fields.chunk_id)
            .and_then(|v| v.as_str())
            .ok_or_else(|| IndexError::backend(ADAPTER, "stored document has no chunk id"))?;
        ChunkId::parse(id).map_err(backend)
    }

    /// The chunks of the top documents with their scores: a document's own record (parsed once
    /// per segment and document, then cached: segments are immutable), or, for one that keeps
    /// only its ID, the record of the other store. Hits without a record there, or whose
    /// record no longer passes `filter`, are left out.
    fn hydrate(
        &self,
        searcher: &Searcher,
        top: Vec<(f32, DocAddress)>,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        Ok(self
            .load(searcher, top)?
            .into_iter()
            .filter_map(|(score, chunk)| {
                let chunk = chunk?;
                filter
                    .matches(&chunk)
                    .then_some(ScoredChunk { chunk, score })
            })
            .collect())
    }

    /// The chunks of `top`'s documents (see [`hydrate`](Self::hydrate)), `None` where the
    /// other store has no record.
    fn load(
        &self,
        searcher: &Searcher,
        top: Vec<(f32, DocAddress)>,
    ) -> Result<Vec<(f32, Option<Chunk>)>, IndexError> {
        let mut found: Vec<(f32, Option<Chunk>)> = Vec::with_capacity(top.len());
        let mut elsewhere: Vec<(usize, ChunkId)> = Vec::new();
        for (score, address) in top {
            let key = (
                searcher.segment_reader(address.segment_ord).segment_id(),
                address.doc_id,
            );
            let cached = self
                .records
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned();
            if let Some(chunk) = cached {
                found.push((score, Some(Chunk::clone(&chunk))));
                continue;
            }
            let doc: TantivyDocument = searcher.doc(address).map_err(backend)?;
            match self.own_record(&doc)? {
                Some(chunk) => {
                    self.cache(key, &chunk);
                    found.push((score, Some(chunk)));
                }
                None => {
                    elsewhere.push((found.len(), self.stored_id(&doc)?));
                    found.push((score, None));
                }
            }
        }
        if !elsewhere.is_empty() {
            let Some(records) = &self.records_elsewhere else {
                return Err(IndexError::backend(
                    ADAPTER,
                    format!(
                        "chunk {} keeps its record in the store's vector index, which was not \
                         given to this lexical index",
                        elsewhere[0].1
                    ),
                ));
            };
            let ids: Vec<ChunkId> = elsewhere.iter().map(|(_, id)| id.clone()).collect();
            // Not cached: the other store's record of an ID can change (new document
            // attributes) while this index's document for it stays the same until its commit.
            for ((at, _), chunk) in elsewhere.iter().zip(records.records(&ids)?) {
                found[*at].1 = chunk;
            }
        }
        Ok(found)
    }

    /// The analyzer's identity with its user dictionary's fingerprint (what `status` shows;
    /// [`LexicalIndex::analyzer`] is the identity without it, which the catalog records).
    pub fn analyzer_identity(&self) -> String {
        self.config.analyzer.identity()
    }

    /// The words whose segmentation the user dictionary changed since the index was last
    /// analysed (added, removed or re-weighted words): empty when nothing is pending.
    pub fn changed_words(&self) -> BTreeSet<String> {
        self.changed_words
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Analyses again, and commits, the chunks whose title or text holds one of the
    /// [`changed_words`](Self::changed_words) (compared in their Simplified, lower-case form,
    /// as the analyzer reads them): a changed user dictionary costs the chunks it affects, not
    /// a rebuild. Nothing is embedded. Returns how many chunks were analysed again, of how
    /// many the index holds. Call it after [`with_records_in`](Self::with_records_in).
    pub fn reanalyse(&self) -> Result<Reanalysed, IndexError> {
        let words = self.changed_words();
        let searcher = self.reader.searcher();
        let total = searcher.search(&AllQuery, &Count).map_err(backend)?;
        if words.is_empty() {
            return Ok(Reanalysed {
                chunks: 0,
                of: total,
            });
        }
        let mut addresses: Vec<DocAddress> = searcher
            .search(&AllQuery, &DocSetCollector)
            .map_err(backend)?
            .into_iter()
            .collect();
        addresses.sort();
        let holds = |chunk: &Chunk| {
            let text = format!("{}\n{}", chunk.doc().title.as_str(), chunk.indexed_text());
            let text = zhiku_text::to_simplified(&text).to_lowercase();
            words.iter().any(|w| text.contains(w.as_str()))
        };
        let mut chunks = 0;
        for batch in addresses.chunks(REANALYSE_BATCH) {
            let affected: Vec<Chunk> = self
                .load(&searcher, batch.iter().map(|a| (0.0, *a)).collect())?
                .into_iter()
                .filter_map(|(_, chunk)| chunk.filter(|c| holds(c)))
                .collect();
            chunks += affected.len();
            self.upsert(&affected)?;
        }
        self.changed_words
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        LexicalIndex::commit(self)?;
        Ok(Reanalysed { chunks, of: total })
    }

    fn cache(&self, key: (SegmentId, DocId), chunk: &Chunk) {
        if self.config.record_cache == 0 {
            return;
        }
        let mut records = self.records.write().unwrap_or_else(|e| e.into_inner());
        if records.len() >= self.config.record_cache {
            records.clear();
        }
        records.insert(key, Arc::new(chunk.clone()));
    }

    fn delete_terms(
        &self,
        writer: &IndexWriter,
        field: Field,
        values: impl IntoIterator<Item = String>,
    ) {
        for v in values {
            writer.delete_term(Term::from_field_text(field, &v));
        }
    }
}

fn locked_or_backend(e: tantivy::TantivyError, dir: &Path) -> IndexError {
    match e {
        tantivy::TantivyError::LockFailure(..) => IndexError::Unavailable {
            adapter: ADAPTER,
            message: format!("{} is locked by another process", dir.display()),
        },
        other => backend(other),
    }
}

/// The commit payload of an index analysed by `analyzer`: its identity, then its user
/// dictionary (what a later open compares its own dictionary with).
fn payload(analyzer: &Analyzer) -> String {
    let dictionary = analyzer.dictionary();
    if dictionary.is_empty() {
        analyzer.identity()
    } else {
        format!("{}\n{}", analyzer.identity(), dictionary.to_text())
    }
}

/// Refuses an index recorded with another analyzer or schema; an index recorded with the same
/// analyzer and another user dictionary is accepted, and the words whose segmentation changed
/// are returned. An index without a recorded analyzer and without segments is one whose creator
/// was killed before its first commit: it holds nothing, so it is accepted (a writer stamps it).
fn check_recorded(
    index: &Index,
    schema: &Schema,
    analyzer: &Analyzer,
) -> Result<BTreeSet<String>, IndexError> {
    let metas = index.load_metas().map_err(backend)?;
    let never_committed = metas.payload.is_none() && metas.segments.is_empty();
    let recorded = metas.payload.unwrap_or_default();
    let (identity, dictionary) = recorded.split_once('\n').unwrap_or((&recorded, ""));
    let recorded_dictionary = UserDictionary::parse(dictionary);
    let changed = match recorded_dictionary {
        Ok(d) if zhiku_analyzer::base_identity(identity) == ANALYZER_IDENTITY => {
            d.changed_words(analyzer.dictionary())
        }
        _ if never_committed => BTreeSet::new(),
        _ => {
            return Err(IndexError::ConfigMismatch {
                what: "lexical analyzer",
                expected: if identity.is_empty() {
                    "(none recorded)".into()
                } else {
                    identity.to_string()
                },
                found: analyzer.identity(),
            });
        }
    };
    if index.schema() != *schema {
        return Err(IndexError::ConfigMismatch {
            what: "lexical schema",
            expected: "the schema on disk".into(),
            found: "this build's schema".into(),
        });
    }
    Ok(changed)
}

/// `<32 hex digits of a segment id>.<component>`: the only files tantivy writes besides
/// `meta.json`, `.managed.json`, its lock files and the `.tmp*` files of its atomic writes.
fn is_segment_file(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 33 && b[32] == b'.' && b[..32].iter().all(u8::is_ascii_hexdigit)
}

/// The files in `dir` that the committed `meta.json` does not reference: segment files and
/// temporary files of a writer that died before its commit. With `delete`, they are removed.
/// `meta.json`, `.managed.json`, lock files and every file of a committed segment (with the
/// committed delete bitset) are never touched.
fn sweep_stray_files(index: &Index, dir: &Path, delete: bool) -> Result<Vec<String>, IndexError> {
    // Tantivy's own garbage collection holds the meta lock while it lists live files, so that a
    // reader opening the segments of the meta it just read is not raced; so does this.
    let _meta_lock = index
        .directory()
        .acquire_lock(&META_LOCK)
        .map_err(backend)?;
    let living: HashSet<PathBuf> = index.load_metas().map_err(backend)?.list_segment_files();
    let mut strays = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(backend)? {
        let entry = entry.map_err(backend)?;
        if !entry.file_type().map_err(backend)?.is_file() {
            continue;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let ours = is_segment_file(name) || name.starts_with(".tmp");
        if !ours || living.contains(Path::new(name)) {
            continue;
        }
        if delete {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(backend(e)),
            }
        }
        strays.push(name.to_string());
    }
    if delete && !strays.is_empty() {
        index.directory().sync_directory().map_err(backend)?;
    }
    strays.sort();
    Ok(strays)
}

fn read_only_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "the index was opened read-only",
    )
}

/// A directory that reads through [`MmapDirectory`] and refuses every write. Tantivy's reader
/// takes its meta lock (a file it creates) while opening segments; where that file cannot be
/// created (a read-only folder), no writer can be changing the index either, so reading goes on
/// without it.
#[derive(Debug, Clone)]
struct ReadOnlyDirectory {
    inner: MmapDirectory,
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only_error()),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError {
            io_error: Arc::new(read_only_error()),
            filepath: path.to_path_buf(),
        })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> std::io::Result<()> {
        Err(read_only_error())
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        match self.inner.acquire_lock(lock) {
            Err(LockError::IoError(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                Ok(DirectoryLock::from(Box::new(())))
            }
            other => other,
        }
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// How many candidates the pruned walk over the query's words keeps when the query holds Han
/// pairs (single characters and two adjacent ones), whose scores are then added to those
/// candidates only.
///
/// As clauses of the walk, the pairs made it slow: a character is in most chunks' text, and
/// some forty pairs per question lengthen it (84,800 chunks: p50 1.6 → 8.7 ms; 1M chunks:
/// lexical p99 about 30 → 45–75 ms). A chunk that shares no word with the query is not a
/// candidate; ranking quality was unchanged on every set measured. docs/measurements.md
/// ("The Han pairs as a second stage").
const CANDIDATES: usize = 64;

impl LexicalIndex for TantivyLexicalIndex {
    fn capabilities(&self) -> IndexCapabilities {
        IndexCapabilities {
            adapter: ADAPTER,
            persistent: self.persistent,
            max_k: 10_000,
            upsert_max_batch: None,
            filter_doc_ids: true,
            filter_locale: true,
            filter_metadata: true,
        }
    }

    fn analyzer(&self) -> String {
        // A changed user dictionary is applied to the chunks it affects (`reanalyse`), not a
        // rebuild: the catalog records the analyzer without it.
        ANALYZER_IDENTITY.to_string()
    }

    fn upsert(&self, chunks: &[Chunk]) -> Result<(), IndexError> {
        let f = self.fields;
        let mut docs = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let record = match self.records_elsewhere {
                Some(_) => None,
                None => Some(serde_json::to_string(&chunk.to_record()).map_err(backend)?),
            };
            let attrs = chunk.doc();
            let mut doc = TantivyDocument::default();
            doc.add_text(f.chunk_id, chunk.chunk_id().as_str());
            doc.add_text(f.doc_id, chunk.doc_id().as_str());
            doc.add_text(f.scope, attrs.scope.as_str());
            for l in attrs.locale.match_terms() {
                doc.add_text(f.locale, &l);
            }
            for m in attrs.metadata.filter_terms() {
                doc.add_text(f.meta, &m);
            }
            for a in attrs.access.index_terms() {
                doc.add_text(f.meta, &a);
            }
            doc.add_text(f.title, attrs.title.as_str());
            let text = chunk.indexed_text();
            doc.add_text(f.content, text.as_ref());
            doc.add_text(f.pairs, zhiku_analyzer::titled(attrs.title.as_str(), &text));
            if let Some(record) = &record {
                doc.add_text(f.record, record);
            }
            docs.push(doc);
        }
        let writer = self.writer()?;
        self.delete_terms(
            &writer,
            f.chunk_id,
            chunks.iter().map(|c| c.chunk_id().to_string()),
        );
        for doc in docs {
            writer.add_document(doc).map_err(backend)?;
        }
        Ok(())
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        // A tantivy document is replaced whole: the stored ones are indexed again (their text
        // analysed again, nothing embedded).
        if chunks.is_empty() {
            return Ok(0);
        }
        let wanted = BooleanQuery::new(
            chunks
                .iter()
                .map(|c| {
                    let id = Term::from_field_text(self.fields.chunk_id, c.chunk_id().as_str());
                    let q: Box<dyn Query> = Box::new(TermQuery::new(id, IndexRecordOption::Basic));
                    (Occur::Should, q)
                })
                .collect(),
        );
        let alive: std::collections::HashSet<ChunkId> =
            self.ids_matching(&wanted)?.into_iter().collect();
        let stored: Vec<Chunk> = chunks
            .iter()
            .filter(|c| alive.contains(c.chunk_id()))
            .cloned()
            .collect();
        self.upsert(&stored)?;
        Ok(stored.len())
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        let writer = self.writer()?;
        self.delete_terms(
            &writer,
            self.fields.chunk_id,
            ids.iter().map(ToString::to_string),
        );
        Ok(())
    }

    fn delete_document(&self, doc: &zhiku_domain::DocId) -> Result<(), IndexError> {
        let writer = self.writer()?;
        self.delete_terms(&writer, self.fields.doc_id, [doc.to_string()]);
        Ok(())
    }

    fn search(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.capabilities().check_search(k, filter)?;
        let f = self.fields;
        let words = self.config.analyzer.terms(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let mut text: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in &words {
            text.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.content, word),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            let title = TermQuery::new(
                Term::from_field_text(f.title, word),
                IndexRecordOption::WithFreqs,
            );
            text.push((
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(title), self.config.title_boost)),
            ));
        }
        let searcher = self.reader.searcher();
        // The Han pairs only add to the scores of the candidates the words' walk found (see
        // `CANDIDATES`), one weight per pair: a union of them would score every chunk of a
        // window around each candidate, where a term's own postings seek to the candidate alone.
        let han_pairs = pairs(query)
            .into_iter()
            .map(|(pair, _, _)| {
                let q = TermQuery::new(
                    Term::from_field_text(f.pairs, &pair),
                    IndexRecordOption::WithFreqs,
                );
                BoostQuery::new(Box::new(q), zhiku_analyzer::PAIRS_WEIGHT)
                    .weight(EnableScoring::enabled_from_searcher(&searcher))
            })
            .collect::<tantivy::Result<Vec<_>>>()
            .map_err(backend)?;
        // The text query alone keeps block-max pruning; the filter is applied as a set of
        // allowed documents inside the pruned walk (see `top`), before the top-k is taken.
        let query = BooleanQuery::new(text);
        let filter_weight = BooleanQuery::new(self.filter_query(filter))
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .map_err(backend)?;
        let key = serde_json::to_string(filter).map_err(backend)?;
        // Fetch past k while scores tie with the k-th, so ties can be ordered by chunk ID.
        let mut limit = (k + 1).max(if han_pairs.is_empty() { 0 } else { CANDIDATES });
        let top = loop {
            let collector = FilteredTop {
                limit,
                filter: filter_weight.as_ref(),
                key: &key,
                sets: &self.filter_sets,
            };
            let mut top = searcher.search(&query, &collector).map_err(backend)?;
            let exhausted = top.len() < limit;
            if !han_pairs.is_empty() {
                top::add_scores(&searcher, &han_pairs, &mut top).map_err(backend)?;
            }
            let tied =
                top.len() > k && top.last().map(|(s, _)| *s) == top.get(k - 1).map(|(s, _)| *s);
            if exhausted || !tied {
                // The k best and what ties with the k-th: only those are read from the store.
                if let Some(&(kth, _)) = top.get(k - 1) {
                    let keep = k + top[k..].iter().take_while(|(s, _)| *s == kth).count();
                    top.truncate(keep);
                }
                break top;
            }
            limit *= 2;
        };
        let mut hits = self.hydrate(&searcher, top, filter)?;
        zhiku_domain::ports::rank_and_truncate(&mut hits, k);
        Ok(hits)
    }

    fn chunk_ids(&self, doc: &zhiku_domain::DocId) -> Result<Vec<ChunkId>, IndexError> {
        let query = TermQuery::new(
            Term::from_field_text(self.fields.doc_id, doc.as_str()),
            IndexRecordOption::Basic,
        );
        self.ids_matching(&query)
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        self.ids_matching(&AllQuery)
    }

    fn count(&self) -> Result<usize, IndexError> {
        let searcher = self.reader.searcher();
        searcher.search(&AllQuery, &Count).map_err(backend)
    }

    fn commit(&self) -> Result<(), IndexError> {
        let mut writer = self.writer()?;
        let mut prepared = writer.prepare_commit().map_err(backend)?;
        // Until the chunks a changed user dictionary affects are analysed again, the index
        // keeps recording the dictionary they were analysed with.
        let pending = !self
            .changed_words
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty();
        let recorded = pending
            .then(|| self.index.load_metas().ok()?.payload)
            .flatten();
        prepared.set_payload(&recorded.unwrap_or_else(|| payload(&self.config.analyzer)));
        prepared.commit().map_err(backend)?;
        drop(writer);
        self.reader.reload().map_err(backend)
    }

    /// The opstamp of the last commit, read from the index's `meta.json` (one small file; a
    /// commit replaces it atomically). An index in RAM keeps none.
    fn generation(&self) -> Result<Option<u64>, IndexError> {
        if !self.persistent {
            return Ok(None);
        }
        Ok(Some(self.index.load_metas().map_err(backend)?.opstamp))
    }
}

impl TantivyLexicalIndex {
    /// The sorted chunk IDs of the documents matching `query`.
    fn ids_matching(&self, query: &dyn Query) -> Result<Vec<ChunkId>, IndexError> {
        let searcher = self.reader.searcher();
        let addresses = searcher.search(query, &DocSetCollector).map_err(backend)?;
        let mut ids = Vec::with_capacity(addresses.len());
        for address in addresses {
            let stored: TantivyDocument = searcher.doc(address).map_err(backend)?;
            ids.push(self.stored_id(&stored)?);
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// Merges every committed segment into one and waits for it. After a bulk build this turns
    /// dozens of small segments into one, so a query visits one term dictionary instead of many.
    pub fn merge_segments(&self) -> Result<(), IndexError> {
        // A background merge may retire some of the listed segments first; list them again.
        let mut attempts = 0;
        loop {
            let ids = self.index.searchable_segment_ids().map_err(backend)?;
            if ids.len() <= 1 {
                break;
            }
            let result = self.writer()?.merge(&ids).wait();
            match result {
                Ok(_) => break,
                Err(_) if attempts < 10 => {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(e) => return Err(backend(e)),
            }
        }
        self.reader.reload().map_err(backend)
    }

    /// Number of searchable segments.
    pub fn segment_count(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }
}
