//! Every top-level key of the configuration, declared once: its name, type, built-in default,
//! environment variable and one-line doc, in the [`settings!`] table below.
//!
//! From that table come the list of known keys (in the order `zhiku status -v` shows their
//! origins), the `ZHIKU_*` variables, the built-in defaults layer, the typed values the layers
//! resolve into ([`Values`]), the `[embedder]` table's keys, and the settings table of
//! `docs/configuration.md` ([`markdown_table`]; a test fails when the file's copy is stale).
//!
//! To add a key, add one entry to the table and read it from [`Values`] where the
//! [`Config`](super::Config) is built. The sections (`[qdrant]`, `[ann]`, `[serve]`) are not
//! here: their keys belong to the crates they configure.

use serde::{Deserialize, Serialize};
use toml::{Table, Value};
use zhiku_domain::ChunkingPolicy;
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::rules::fusion::{FusionMethod, Normalisation};
use zhiku_service::DuplicatePolicy;

use super::kinds::{
    DEFAULT_MODEL, EmbedderKind, GeneratorKind, JudgeKind, LexicalKind, OcrKind, PlannerKind,
    RerankerKind, VectorsKind,
};
use super::resolver::EnvKey;

/// One top-level key as the table declares it.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The key, as written in `zhiku.toml`.
    pub key: &'static str,
    /// The variable that overrides it.
    pub env: &'static str,
    /// The lines of its doc.
    pub doc: &'static [&'static str],
    /// Its built-in value (a list for a key whose variable is comma-separated).
    pub default: fn() -> Value,
}

impl Setting {
    /// The key's variable: a list key's value is split at commas.
    pub(super) fn env_key(&self) -> EnvKey {
        EnvKey {
            key: self.key,
            var: self.env,
            list: (self.default)().is_array(),
        }
    }

    /// The doc as one line.
    pub fn doc_line(&self) -> String {
        let lines: Vec<&str> = self.doc.iter().map(|l| l.trim()).collect();
        lines.join(" ")
    }
}

/// A built-in default as the TOML value a layer holds.
fn value<T: Serialize>(default: T) -> Value {
    Value::try_from(default).expect("a built-in default serialises as a TOML value")
}

/// Declares the top-level keys: for each, `/// doc`, then `name: Type = default, env: "VAR";`.
/// Generates [`Keys`] (what one layer may write, each key optional and typed), [`Values`]
/// (every key resolved, typed) and [`SETTINGS`] (the keys' names, variables, docs and defaults,
/// in table order).
macro_rules! settings {
    ($(
        $(#[doc = $doc:literal])+
        $key:ident: $ty:ty = $default:expr, env: $env:literal;
    )+) => {
        /// The top-level keys, as every layer may write them.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)] // read for its checks; the values are merged from the raw tables
        pub(super) struct Keys {
            $(pub(super) $key: Option<$ty>,)+
        }

        /// The top-level keys merged over every layer, each present (the defaults layer holds
        /// them all) and typed.
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct Values {
            $(pub(super) $key: $ty,)+
        }

        /// Every top-level key, in the order `zhiku status -v` lists them.
        pub const SETTINGS: &[Setting] = &[$(
            Setting {
                key: stringify!($key),
                env: $env,
                doc: &[$($doc),+],
                default: || value::<$ty>($default),
            },
        )+];
    };
}

settings! {
    /// Where vectors live: `memory`, `ann` (the store's ANN index, `[ann]`; `file` is read as
    /// it) or `qdrant` (`[qdrant]`); the profile picks it.
    vectors: VectorsKind = VectorsKind::Ann, env: "ZHIKU_VECTORS";
    /// What embeds: `none` (lexical retrieval only), `hashing` (a test double), `candle` or
    /// `openai` (a server, the `embed_*` keys); the profile picks it.
    embedder: EmbedderKind = EmbedderKind::Candle, env: "ZHIKU_EMBEDDER";
    /// Where the lexical index lives: `ram`, `disk` or `qdrant` (with `vectors = "qdrant"`);
    /// the profile picks it.
    lexical: LexicalKind = LexicalKind::Disk, env: "ZHIKU_LEXICAL";
    /// The candle embedder's model: a hub id or a local folder.
    model: String = DEFAULT_MODEL.to_string(), env: "ZHIKU_MODEL";
    /// Most characters of one chunk (changing it requires `--rebuild`).
    max_chars: usize = ChunkingPolicy::default().max_chars(), env: "ZHIKU_MAX_CHARS";
    /// Characters neighbouring chunks share, less than half of `max_chars`.
    overlap_chars: usize = ChunkingPolicy::default().overlap_chars(), env: "ZHIKU_OVERLAP_CHARS";
    /// The scopes the local user may read; never empty.
    scopes: Vec<String> = vec!["default".into(), "public".into()], env: "ZHIKU_SCOPES";
    /// The scope of a document that declares none.
    default_scope: String = "default".into(), env: "ZHIKU_DEFAULT_SCOPE";
    /// The loader skips text files (Markdown, text, HTML, CSV) larger than this, in bytes, and
    /// files whose extracted text is larger.
    max_file_bytes: u64 = 10 << 20, env: "ZHIKU_MAX_FILE_BYTES";
    /// The loader skips PDF, Office and EPUB files larger than this, in bytes.
    max_document_bytes: u64 = 200 << 20, env: "ZHIKU_MAX_DOCUMENT_BYTES";
    /// Most bytes unpacked from one zip package (docx, pptx, xlsx, epub).
    max_unpacked_bytes: u64 = 512 << 20, env: "ZHIKU_MAX_UNPACKED_BYTES";
    /// Most pages of one PDF (slides of a deck, chapters of a book); at least 1.
    max_pages: usize = 10_000, env: "ZHIKU_MAX_PAGES";
    /// Longest extraction of one file, in seconds; at least 1.
    max_extract_seconds: u64 = 60, env: "ZHIKU_MAX_EXTRACT_SECONDS";
    /// Address space of one extraction worker process, in bytes (4 GiB; at least 1 GiB).
    max_extract_memory: u64 = 4 << 30, env: "ZHIKU_MAX_EXTRACT_MEMORY";
    /// Most pixels of one page picture (an image file's page, a scanned PDF page), checked
    /// from the image's header before it is decoded; at least 1 (50 MP: A4 at 600 dpi is 35).
    max_image_pixels: u64 = 50_000_000, env: "ZHIKU_MAX_IMAGE_PIXELS";
    /// The OCR engine that reads scans and pictures: `ppocr` (PP-OCRv6 small, measured best:
    /// `bench/ocr/README.md`), `tesseract` or `off`.
    ocr: OcrKind = OcrKind::Ppocr, env: "ZHIKU_OCR";
    /// Tesseract's languages, `+`-separated (Debian packages tesseract-ocr-chi-sim, -chi-tra,
    /// -eng).
    ocr_languages: String = "chi_sim+chi_tra+eng".into(), env: "ZHIKU_OCR_LANGUAGES";
    /// The Tesseract program: a path, or a name looked up on `PATH`.
    ocr_program: String = "tesseract".into(), env: "ZHIKU_OCR_PROGRAM";
    /// The folder of the PP-OCR models (`ocr = "ppocr"`), as `scripts/fetch-ocr-models.sh`
    /// fills it; a leading `~/` is the home folder.
    ocr_models: String = "~/.cache/zhiku/models/ppocr".into(), env: "ZHIKU_OCR_MODELS";
    /// The ONNX Runtime shared library PP-OCR runs on; empty: `libonnxruntime.so.1.32.0` in
    /// `ocr_models`. A leading `~/` is the home folder.
    ocr_runtime: String = String::new(), env: "ZHIKU_OCR_RUNTIME";
    /// Longest OCR of one page picture, in seconds; at least 1 (a file's OCR is bounded by
    /// `max_extract_seconds` too).
    ocr_page_seconds: u64 = 60, env: "ZHIKU_OCR_PAGE_SECONDS";
    /// The PDFium library (`libpdfium.so`, fetched by `scripts/fetch-pdfium.sh`) that draws PDF
    /// pages: a text page shown with its quote highlighted, a scan whose picture no decoder
    /// here reads (JBIG2, JPX). Empty: pages are not drawn. A leading `~/` is the home folder.
    pdfium: String = "~/.cache/zhiku/pdfium/libpdfium.so".into(), env: "ZHIKU_PDFIUM";
    /// Follow symbolic links whose target is inside the knowledge-base folder (links to
    /// outside it are never followed).
    follow_links_inside: bool = false, env: "ZHIKU_FOLLOW_LINKS_INSIDE";
    /// Evidence per search when a command does not say; at least 1.
    k: usize = 8, env: "ZHIKU_K";
    /// Candidates each route returns before fusion.
    candidates: usize = 50, env: "ZHIKU_CANDIDATES";
    /// Texts per embedder forward pass (per request for `embedder = "openai"`).
    embed_batch: usize = 32, env: "ZHIKU_EMBED_BATCH";
    /// The embeddings server's API base, up to `/v1`.
    embed_url: String = "http://127.0.0.1:8089/v1".into(), env: "ZHIKU_EMBED_URL";
    /// The model name sent to the embeddings server (empty: the one model it lists).
    embed_model: String = String::new(), env: "ZHIKU_EMBED_MODEL";
    /// The variable holding the embeddings server's API key (sent as Bearer).
    embed_api_key_env: String = "ZHIKU_EMBED_API_KEY".into(), env: "ZHIKU_EMBED_API_KEY_ENV";
    /// One embeddings request's deadline in milliseconds; at least 1.
    embed_timeout_ms: u64 = 120_000, env: "ZHIKU_EMBED_TIMEOUT_MS";
    /// Retries of a temporary embeddings failure (connection, 429, 5xx), with backoff.
    embed_retries: u32 = 3, env: "ZHIKU_EMBED_RETRIES";
    /// How queries and passages are presented to the embeddings server: `auto`, `input_type`,
    /// `e5`, `bge-zh`, `bge-en`, `none` or `prefix`.
    embed_input: String = "auto".into(), env: "ZHIKU_EMBED_INPUT";
    /// Text before each query when `embed_input = "prefix"`.
    embed_query_prefix: String = String::new(), env: "ZHIKU_EMBED_QUERY_PREFIX";
    /// Text before each passage when `embed_input = "prefix"`.
    embed_document_prefix: String = String::new(), env: "ZHIKU_EMBED_DOCUMENT_PREFIX";
    /// The served model's declared revision, part of the embedding space (a server cannot
    /// tell it).
    embed_revision: String = "unversioned".into(), env: "ZHIKU_EMBED_REVISION";
    /// L2-normalise the server's vectors (and declare the space L2).
    embed_normalize: bool = true, env: "ZHIKU_EMBED_NORMALIZE";
    /// The served model's input limit in tokens, to report truncation (0: unknown).
    embed_max_tokens: usize = 0, env: "ZHIKU_EMBED_MAX_TOKENS";
    /// Documents per step of `index` (chunked, embedded, committed and recorded together); at
    /// least 1.
    index_batch: usize = 4096, env: "ZHIKU_INDEX_BATCH";
    /// What writes answers: `extractive` (no model) or `openai` (a chat server, `llm_*`).
    generator: GeneratorKind = GeneratorKind::Extractive, env: "ZHIKU_GENERATOR";
    /// The chat server's API base, up to `/v1`.
    llm_url: String = "http://127.0.0.1:8088/v1".into(), env: "ZHIKU_LLM_URL";
    /// The model name sent to the chat server.
    llm_model: String = "local".into(), env: "ZHIKU_LLM_MODEL";
    /// The variable holding the chat server's API key.
    llm_api_key_env: String = "ZHIKU_LLM_API_KEY".into(), env: "ZHIKU_LLM_API_KEY_ENV";
    /// One generation's deadline in milliseconds.
    llm_timeout_ms: u64 = 60_000, env: "ZHIKU_LLM_TIMEOUT_MS";
    /// Most tokens generated per answer.
    llm_max_tokens: u32 = 512, env: "ZHIKU_LLM_MAX_TOKENS";
    /// What answers when the chat server is unreachable or times out, in order: `URL [MODEL]`
    /// entries, `extractive` last (`none`: the error is the run's).
    generator_fallback: Vec<String> = vec!["extractive".into()], env: "ZHIKU_GENERATOR_FALLBACK";
    /// How often `serve` runs the retention sweep (expired documents, the oldest beyond a
    /// scope's cap): a span such as `"10m"` or `"1h"`; `"0"` never.
    sweep_every: String = "1h".into(), env: "ZHIKU_SWEEP_EVERY";
    /// The team's synonym groups, each one string of words separated by commas or `|`
    /// (`"报销, 报账"`, `"VPN | 远程接入 | 内网"`; in the variable, `报销|报账,VPN|远程接入`): a
    /// question naming one word is retrieved and answered with the others beside it.
    synonyms: Vec<String> = Vec::new(), env: "ZHIKU_SYNONYMS";
    /// The team's own words that segmentation must keep whole (product names, project code
    /// names), each `word [frequency] [tag]` as in jieba's dictionary format (`"朱雀项目"`,
    /// `"年假 nz"`). A change analyses again only the chunks holding a changed word.
    dictionary: Vec<String> = Vec::new(), env: "ZHIKU_DICTIONARY";
    /// A file of more such words, one entry per line (`#` comments), relative to the folder of
    /// `zhiku.toml`; empty: none.
    dictionary_file: String = String::new(), env: "ZHIKU_DICTIONARY_FILE";
    /// Who reads a question in its conversation (intent, standalone rewrite, parts): `auto`
    /// (the chat server when `generator = "openai"`, else the rules), `rules`, or `llm` (the
    /// chat server of `llm_*`, the rules standing in on error or timeout).
    planner: PlannerKind = PlannerKind::Auto, env: "ZHIKU_PLANNER";
    /// The model planner's deadline in milliseconds; past it the rules plan.
    planner_timeout_ms: u64 = 15_000, env: "ZHIKU_PLANNER_TIMEOUT_MS";
    /// Who judges claims, answers and write-backs beside the rules: `lexical` or `llm` (the
    /// chat server).
    judge: JudgeKind = JudgeKind::Lexical, env: "ZHIKU_JUDGE";
    /// Generation attempts before an answer ends `blocked`; at least 1.
    ask_attempts: u32 = 3, env: "ZHIKU_ASK_ATTEMPTS";
    /// Most chunks in an answer's context; at least 1.
    context_chunks: usize = 6, env: "ZHIKU_CONTEXT_CHUNKS";
    /// Most characters in an answer's context; at least 1.
    context_chars: usize = 4000, env: "ZHIKU_CONTEXT_CHARS";
    /// What the context holds around the evidence: `chunks`, `section` or `neighbours`.
    answer_context: ContextPolicy = ContextPolicy::Chunks, env: "ZHIKU_ANSWER_CONTEXT";
    /// The generator's `tokenizer.json` (or a folder holding one): tokens are counted exactly;
    /// empty: by an estimate that leans high (`docs/answers.md`, token budgets).
    generator_tokenizer: String = String::new(), env: "ZHIKU_GENERATOR_TOKENIZER";
    /// Most tokens of the source blocks in an answer's prompt; 0: no limit in tokens (the
    /// character and chunk limits still apply).
    context_tokens: usize = 0, env: "ZHIKU_CONTEXT_TOKENS";
    /// Most tokens of the earlier turns a question's planner reads (the most recent whole
    /// turns); 0: no limit.
    history_tokens: usize = 2000, env: "ZHIKU_HISTORY_TOKENS";
    /// Most tokens an answer may take, whatever the generator; 0: the generator's own limit
    /// (`llm_max_tokens`).
    answer_tokens: u32 = 0, env: "ZHIKU_ANSWER_TOKENS";
    /// Keep the exact prompt of every answer attempt in the run's trace (`prompt` steps, shown
    /// by `--trace`, `GET /v1/traces/{id}` and the page to whoever may see the trace, and swept
    /// with it). Off by default: a prompt holds the evidence's text.
    prompt_log: bool = false, env: "ZHIKU_PROMPT_LOG";
    /// How the routes are fused: `convex` (per-query normalised scores) or `rrf`.
    fusion: FusionMethod = FusionMethod::Convex, env: "ZHIKU_FUSION";
    /// The reciprocal-rank-fusion constant.
    fusion_k: f64 = 60.0, env: "ZHIKU_FUSION_K";
    /// The dense route's weight in fusion.
    fusion_dense_weight: f64 = 0.2, env: "ZHIKU_FUSION_DENSE_WEIGHT";
    /// The lexical route's weight in fusion.
    fusion_lexical_weight: f64 = 1.0, env: "ZHIKU_FUSION_LEXICAL_WEIGHT";
    /// How `convex` normalises a route's scores: `min_max` or `z_score`.
    fusion_normalisation: Normalisation = Normalisation::MinMax, env: "ZHIKU_FUSION_NORMALISATION";
    /// Scale each route's weight by its confidence in the query.
    fusion_confidence: bool = false, env: "ZHIKU_FUSION_CONFIDENCE";
    /// Keep dense hits scoring at least this share of the top one (0: off).
    dense_floor: f64 = 0.0, env: "ZHIKU_DENSE_FLOOR";
    /// The least cosine a dense hit needs (model-specific; -1: none).
    dense_min_score: f64 = -1.0, env: "ZHIKU_DENSE_MIN_SCORE";
    /// How much evidence in the question's language is preferred (0: off).
    locale_boost: f64 = 0.1, env: "ZHIKU_LOCALE_BOOST";
    /// What reorders the fused candidates: `none`, `rules`, `cross-encoder`, `http` or `llm`.
    reranker: RerankerKind = RerankerKind::None, env: "ZHIKU_RERANKER";
    /// Candidates the reranker scores, before `k`; at least 1.
    rerank_depth: usize = 20, env: "ZHIKU_RERANK_DEPTH";
    /// The cross-encoder's folder or hub id (empty: `BAAI/bge-reranker-base`), or the model a
    /// reranking server is asked for (empty: the server's own).
    rerank_model: String = String::new(), env: "ZHIKU_RERANK_MODEL";
    /// The reranking server's root, with `/v1/rerank` or `/rerank` under it.
    rerank_url: String = "http://127.0.0.1:8090".into(), env: "ZHIKU_RERANK_URL";
    /// The variable holding the reranking server's API key.
    rerank_api_key_env: String = "ZHIKU_RERANK_API_KEY".into(), env: "ZHIKU_RERANK_API_KEY_ENV";
    /// One reranking request's deadline in milliseconds; at least 1.
    rerank_timeout_ms: u64 = 30_000, env: "ZHIKU_RERANK_TIMEOUT_MS";
    /// Most characters of one (question, passage) pair sent to a reranking server, the
    /// question up to half; at least 2.
    rerank_chars: usize = 480, env: "ZHIKU_RERANK_CHARS";
    /// The most documents a scope keeps, as `scope=N` entries: every index run (and `zhiku
    /// sweep`) evicts a capped scope's oldest documents beyond it.
    scope_caps: Vec<String> = Vec::new(), env: "ZHIKU_SCOPE_CAPS";
    /// Folder rules of who may read a document that names no readers itself, first match
    /// wins: `PATTERN = READER …` (gitignore-style glob on the path in the knowledge base;
    /// readers `group:NAME`, `user:NAME` or `*`, separated by spaces), such as
    /// `"hr/** = group:hr"`.
    access_rules: Vec<String> = Vec::new(), env: "ZHIKU_ACCESS_RULES";
    /// The readers of a scope's documents that name none and match no folder rule:
    /// `SCOPE = READER …`, such as `"finance = group:finance"` (absent: everyone who may read
    /// the scope).
    scope_readers: Vec<String> = Vec::new(), env: "ZHIKU_SCOPE_READERS";
    /// What a write-back does with a duplicate of a document in its scope: `refuse` or `merge`.
    write_back_duplicates: DuplicatePolicy = DuplicatePolicy::Refuse, env: "ZHIKU_WRITE_BACK_DUPLICATES";
    /// The similarity (Jaccard of 5-character shingles, above 0, at most 1) from which a
    /// write-back is a near duplicate.
    write_back_near_duplicate: f64 = 0.6, env: "ZHIKU_WRITE_BACK_NEAR_DUPLICATE";
    /// The fewest letters and digits a write-back's text may have.
    write_back_min_chars: usize = 20, env: "ZHIKU_WRITE_BACK_MIN_CHARS";
}

/// The known top-level keys, in table order.
pub(super) fn keys() -> Vec<&'static str> {
    SETTINGS.iter().map(|s| s.key).collect()
}

/// The variables of the top-level keys.
pub(super) fn env_keys() -> Vec<EnvKey> {
    SETTINGS.iter().map(Setting::env_key).collect()
}

/// The built-in value of every top-level key: the lowest layer.
pub(super) fn defaults() -> Table {
    SETTINGS
        .iter()
        .map(|s| (s.key.to_string(), (s.default)()))
        .collect()
}

/// The keys of the `[embedder]` table form and the flat keys they stand for: `kind` is
/// `embedder`, every other key an `embed_*` key without its prefix.
pub(super) fn embedder_table() -> Vec<(&'static str, &'static str)> {
    let prefixed = SETTINGS
        .iter()
        .filter_map(|s| Some((s.key.strip_prefix("embed_")?, s.key)));
    std::iter::once(("kind", "embedder"))
        .chain(prefixed)
        .collect()
}

/// The settings table of `docs/configuration.md`: one row per key, in table order.
pub fn markdown_table() -> String {
    let cell = |text: &str| text.replace('|', "\\|");
    let mut out = String::from("| key | variable | default | what it sets |\n|---|---|---|---|\n");
    for s in SETTINGS {
        out += &format!(
            "| `{}` | `{}` | `{}` | {} |\n",
            s.key,
            s.env,
            cell(&(s.default)().to_string()),
            cell(&s.doc_line())
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The line before the generated table in `docs/configuration.md`.
    const DOCS_TABLE_START: &str = "<!-- settings table: generated from crates/app/src/config/settings.rs; \
     `ZHIKU_BLESS=1 cargo test -p zhiku --lib config::settings` rewrites it -->";

    /// The line after it.
    const DOCS_TABLE_END: &str = "<!-- end of the generated settings table -->";

    #[test]
    fn each_variable_is_zhiku_and_its_key_and_each_key_is_declared_once() {
        let mut seen = std::collections::BTreeSet::new();
        for s in SETTINGS {
            assert!(seen.insert(s.key), "{} declared twice", s.key);
            assert_eq!(
                s.env,
                format!("ZHIKU_{}", s.key.to_uppercase()),
                "{}",
                s.key
            );
            assert!(!s.doc_line().is_empty(), "{} has no doc", s.key);
        }
        let lists: Vec<&str> = env_keys()
            .iter()
            .filter(|e| e.list)
            .map(|e| e.key)
            .collect();
        assert_eq!(
            lists,
            [
                "scopes",
                "generator_fallback",
                "synonyms",
                "dictionary",
                "scope_caps",
                "access_rules",
                "scope_readers"
            ]
        );
        // The defaults layer resolves into every key, typed.
        let values: Values = Value::Table(defaults()).try_into().unwrap();
        assert_eq!(values.model, DEFAULT_MODEL);
        let table: Vec<&str> = embedder_table().iter().map(|(k, _)| *k).collect();
        assert_eq!(
            table.join(","),
            "kind,batch,url,model,api_key_env,timeout_ms,retries,input,query_prefix,\
             document_prefix,revision,normalize,max_tokens"
        );
    }

    /// The copy of [`markdown_table`] in `docs/configuration.md` is current; with
    /// `ZHIKU_BLESS=1` this test rewrites it instead of failing.
    #[test]
    fn the_settings_table_of_docs_configuration_md_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let (before, rest) = text
            .split_once(DOCS_TABLE_START)
            .expect("docs/configuration.md holds the settings table's start marker");
        let (_, after) = rest
            .split_once(DOCS_TABLE_END)
            .expect("docs/configuration.md holds the settings table's end marker");
        let fresh = format!(
            "{before}{DOCS_TABLE_START}\n\n{}\n{DOCS_TABLE_END}{after}",
            markdown_table()
        );
        if fresh == text {
            return;
        }
        if std::env::var("ZHIKU_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, fresh).unwrap();
            return;
        }
        panic!(
            "the settings table of docs/configuration.md is stale: \
             `ZHIKU_BLESS=1 cargo test -p zhiku --lib config::settings` rewrites it"
        );
    }
}
