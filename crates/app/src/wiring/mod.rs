//! The composition root: the only code that names adapter crates. Each function turns the
//! resolved configuration into ports (embedder, vector index, lexical index, catalog store,
//! document store, generator, trace log) and hands them to the service.

pub mod corpus;
pub mod embed_server;
pub mod generator;
pub mod identity;
pub mod imported;
pub mod judge;
pub mod ocr;
pub mod planner;
pub mod qdrant;
pub mod rerank;
pub mod sources;
pub mod store;

use std::sync::Arc;

use anyhow::{Result, bail};
use zhiku_adapters_fs::audit_log::JsonlAuditLog;
use zhiku_adapters_fs::folder::FolderDocuments;
use zhiku_adapters_fs::loader::LoaderConfig;
use zhiku_adapters_fs::trace_log::{JsonlTraceSink, Retention};
use zhiku_adapters_fs::worker::{Parsers, WORKER_ARG, WorkerLimits};
use zhiku_adapters_qdrant::{QdrantAuditLog, QdrantDocuments};
use zhiku_domain::ports::{AuditLog, DocumentStore, Origin};
use zhiku_domain::usecases::Progress;
use zhiku_eval::corpus_documents::CorpusDocuments;
use zhiku_service::{KnowledgeBase, Refreshed};

use crate::config::Config;
use store::Store;

/// Loader settings from the configuration, for the folder of `store`.
pub fn loader_config(store: &Store) -> Result<LoaderConfig> {
    loader_config_for(&store.config, &store.dir)
}

fn loader_config_for(config: &Config, store_dir: &std::path::Path) -> Result<LoaderConfig> {
    Ok(LoaderConfig {
        max_file_bytes: config.max_file_bytes,
        max_document_bytes: config.max_document_bytes,
        max_unpacked_bytes: config.max_unpacked_bytes,
        max_pages: config.max_pages,
        max_image_pixels: config.max_image_pixels,
        max_extract_time: std::time::Duration::from_secs(config.max_extract_seconds),
        default_scope: config.default_scope.clone(),
        follow_links_inside: config.follow_links_inside,
        // A store kept inside the folder (`--store kb/store`) is never read as documents.
        store_dir: store_dir.canonicalize().ok(),
        parsers: extraction_workers(config)?,
        ocr_cache: ocr_cache(config),
        ..LoaderConfig::default()
    })
}

/// Where this user's OCR results are kept (`$XDG_CACHE_HOME/zhiku/ocr`, else
/// `~/.cache/zhiku/ocr`), keyed by the engine's settings; none with OCR off or no home.
fn ocr_cache(config: &Config) -> Option<zhiku_adapters_fs::ocr_cache::OcrCache> {
    if config.ocr.kind == crate::config::OcrKind::Off {
        return None;
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".cache"))
        })?;
    Some(zhiku_adapters_fs::ocr_cache::OcrCache {
        dir: base.join("zhiku").join("ocr"),
        // What decides the text read: the engine, its languages, models and runtime (not
        // Tesseract's path, nor the deadline).
        engine: format!(
            "{:?}:{}:{}:{:?}",
            config.ocr.kind,
            config.ocr.languages,
            config.ocr.models.display(),
            config.ocr.runtime
        ),
    })
}

/// The executable extraction workers run: set by the `zhiku` binary's `main` to itself.
static WORKER_PROGRAM: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Makes this executable (the `zhiku` binary) the program of the extraction workers; `main`
/// calls it first.
pub fn run_extractors_in_this_executable() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = WORKER_PROGRAM.set(exe);
    }
}

/// The program extraction workers run: the `zhiku` binary itself, or, for the crate's tests and
/// benches (which link this library into executables of their own), the `zhiku` executable
/// cargo built beside them (`target/<profile>/zhiku`, next to their `deps/`).
fn worker_program() -> Option<std::path::PathBuf> {
    if let Some(program) = WORKER_PROGRAM.get() {
        return Some(program.clone());
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        Some(dir.join("zhiku")),
        dir.parent().map(|d| d.join("zhiku")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

/// The format parsers of this binary: worker processes of its own executable (started with
/// [`WORKER_ARG`], which `main` hands to [`run_extraction_worker`]), so that a parser's crash,
/// overflow or blow-up costs one file and never the process that holds the store. Only an
/// executable that is neither `zhiku` nor built beside it (a library user's) parses in process.
fn extraction_workers(config: &Config) -> Result<Parsers> {
    let Some(program) = worker_program() else {
        ocr::use_pdfium(&config.ocr);
        return Ok(Parsers::InProcess(
            ocr::engine(&config.ocr).map(zhiku_adapters_fs::worker::OcrEngine),
        ));
    };
    Ok(Parsers::workers(
        program,
        ocr::worker_args(&config.ocr),
        WorkerLimits {
            memory_bytes: config.max_extract_memory,
        },
    ))
}

/// True when the command line asks for an extraction worker (the binary's hidden mode).
pub fn is_extraction_worker(args: &[std::ffi::OsString]) -> bool {
    args.get(1).is_some_and(|a| a == WORKER_ARG)
}

/// Serves extraction jobs on stdin/stdout until stdin closes (the worker side of
/// [`extraction_workers`]).
pub fn run_extraction_worker(args: Vec<std::ffi::OsString>) -> Result<()> {
    let args = args
        .into_iter()
        .skip(2)
        .map(|a| {
            a.into_string()
                .map_err(|_| anyhow::anyhow!("a worker argument is not UTF-8"))
        })
        .collect::<Result<Vec<_>>>()?;
    let (ocr, args) = ocr::take_worker_args(args)?;
    zhiku_adapters_fs::worker::serve(args.into_iter(), ocr)
}

/// The document store of `origin`: the folder (writable), the BEIR corpus (read-only), or the
/// knowledge base's documents collection on its cluster (writable). The one place that tells
/// origins apart.
pub fn documents_for(store: &Store, origin: &Origin) -> Result<Box<dyn DocumentStore>> {
    Ok(match origin {
        Origin::Folder { root } => {
            Box::new(FolderDocuments::new(root.clone(), loader_config(store)?))
        }
        Origin::Beir { dir } => Box::new(CorpusDocuments::new(
            dir.clone(),
            store.config.default_scope.clone(),
        )),
        Origin::Cluster => Box::new(cluster_documents(store)?),
    })
}

/// The documents collection of the store's knowledge base on its cluster.
fn cluster_documents(store: &Store) -> Result<QdrantDocuments> {
    let settings = &store.config.qdrant;
    let kb = qdrant::kb_name_of(settings, &store.dir)?;
    Ok(QdrantDocuments::open(settings, &kb)?)
}

/// What indexing `origin` into `store` reads, and the origin the catalog then records: the
/// origin's own store, except that a folder indexed into a knowledge base kept on a cluster is
/// brought into its documents collection ([`imported::Imported`]), which the catalog records,
/// so that every replica reads the documents from there.
pub fn indexed_from(store: &Store, origin: Origin) -> Result<(Box<dyn DocumentStore>, Origin)> {
    match origin {
        Origin::Folder { root } if store.config.on_cluster() => Ok((
            Box::new(imported::Imported {
                folder: FolderDocuments::new(root, loader_config(store)?),
                cluster: cluster_documents(store)?,
            }),
            Origin::Cluster,
        )),
        origin => Ok((documents_for(store, &origin)?, origin)),
    }
}

/// The document store of the origin `store` recorded, if it recorded one.
pub fn recorded_documents(store: &Store) -> Result<Option<Box<dyn DocumentStore>>> {
    store
        .recorded
        .origin
        .as_ref()
        .map(|origin| documents_for(store, origin))
        .transpose()
}

/// The document store hits of `store` are re-checked against (its `source_store` over the
/// recorded paths); an error when nothing was indexed yet.
pub fn source_for(store: &Store) -> Result<Box<dyn DocumentStore>> {
    match recorded_documents(store)? {
        Some(documents) => Ok(documents),
        None => bail!("the store is empty: run zhiku index first"),
    }
}

/// Loads `origin` and indexes it incrementally; the manifest is saved after both indexes
/// committed. Files that cannot be read keep their previously indexed documents.
pub fn refresh(
    store: &mut Store,
    origin: Origin,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Refreshed> {
    let (documents, origin) = indexed_from(store, origin)?;
    zhiku_service::refresh(store, documents.as_ref(), origin, on_progress)
}

/// The store's trace log: `traces.jsonl` with the retention of `[serve]` `traces_*`.
pub fn trace_log(store: &Store) -> JsonlTraceSink {
    let serve = &store.config.serve;
    JsonlTraceSink::in_store(
        &store.dir,
        Retention::new(
            serve.traces_max_bytes,
            serve.traces_keep_files,
            serve.traces_max_age_days,
        ),
    )
}

/// Every event the trace log at `path` holds (a store's `traces.jsonl`, or a copy of one), its
/// rotated files first, and the number of lines that were no event.
pub fn recorded_events(
    path: &std::path::Path,
) -> Result<(Vec<zhiku_domain::ports::StoredTraceEvent>, usize)> {
    zhiku_adapters_fs::trace_log::read_all_traces(path)
}

/// The store's write-back audit trail: a collection on the Qdrant deployment for the cluster
/// profile (every replica appends to one trail), else `audit.jsonl` in the store folder.
pub fn audit_log(store: &Store) -> Result<Arc<dyn AuditLog>> {
    if store.config.on_cluster() {
        let settings = &store.config.qdrant;
        let kb = qdrant::kb_name_of(settings, &store.dir)?;
        return Ok(Arc::new(QdrantAuditLog::open(settings, &kb)?));
    }
    Ok(Arc::new(JsonlAuditLog::in_store(&store.dir)))
}

/// `store` as a long-lived service, first brought up to date with `refresh_from` when given.
/// Backend and generator errors are counted for `/metrics` wherever they surface.
pub fn open_service(
    store: Store,
    refresh_from: Option<Origin>,
) -> Result<(KnowledgeBase, Option<Refreshed>)> {
    let (documents, refresh_from) = match refresh_from {
        Some(origin) => {
            let (documents, origin) = indexed_from(&store, origin)?;
            (Some(documents), Some(origin))
        }
        None => (recorded_documents(&store)?, None),
    };
    let generator = zhiku_http::metrics::count_generator_errors(generator::generator_for(
        &store.config,
        store.dense_embedder(),
    )?);
    let traces = Arc::new(trace_log(&store));
    let store_config = store.config.clone();
    let audit = audit_log(&store)?;
    let mut core = store.into_service();
    zhiku_http::metrics::count_backend_errors(&mut core.dense);
    let planners = planner::planners_for(&store_config);
    let judge = judge::judge_for(&store_config);
    let tokens = generator::token_counter_for(&store_config)?;
    KnowledgeBase::new(core, documents, refresh_from, generator, traces).map(|(kb, refreshed)| {
        (
            kb.with_planners(planners)
                .with_judge(judge)
                .with_token_counter(tokens)
                .with_prompt_log(store_config.prompt_log)
                .with_audit(audit),
            refreshed,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration's built-in loader bounds are the loader's own defaults.
    #[test]
    fn the_default_configuration_gives_the_loaders_default_bounds() {
        let config = Config::resolve(None, None, &|_| None).unwrap();
        let ours = loader_config_for(&config, std::path::Path::new("/nonexistent")).unwrap();
        let theirs = LoaderConfig::default();
        assert_eq!(ours.max_file_bytes, theirs.max_file_bytes);
        assert_eq!(ours.max_document_bytes, theirs.max_document_bytes);
        assert_eq!(ours.max_unpacked_bytes, theirs.max_unpacked_bytes);
        assert_eq!(ours.max_pages, theirs.max_pages);
        assert_eq!(ours.max_extract_time, theirs.max_extract_time);
    }

    /// The binary never parses a file in its own process: its loader hands every format
    /// extractor and the front-matter parser to worker processes.
    #[test]
    fn the_binarys_loader_runs_parsers_in_worker_processes() {
        // What `main` does first (here the program is this test executable; nothing runs it).
        run_extractors_in_this_executable();
        let config = Config::resolve(None, None, &|_| None).unwrap();
        let ours = loader_config_for(&config, std::path::Path::new("/nonexistent")).unwrap();
        assert!(
            matches!(ours.parsers, Parsers::Workers(_)),
            "{:?}",
            ours.parsers
        );
        assert_eq!(config.max_extract_memory, 4 << 30);
    }
}
