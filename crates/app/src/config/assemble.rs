//! The resolved keys ([`Values`]) checked and built into the [`Config`]'s parsed values:
//! the chunking policy, scopes, the embeddings server, the fallback chain, the budget, fusion,
//! the reranker's bounds, the scope caps and the write-back policy.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow, bail};
use zhiku_adapters_qdrant::QdrantConfig;
use zhiku_adapters_usearch::AnnSettings;
use zhiku_domain::rules::budget::RetrievalBudget;
use zhiku_domain::rules::fusion::{FusionConfig, Route};
use zhiku_domain::rules::vocabulary::Synonyms;
use zhiku_domain::{ChunkingPolicy, Scope, TimeToLive};
use zhiku_http::settings::ServeSettings;

use super::kinds::{EmbedServer, FallbackStep, LexicalKind, VectorsKind};
use super::model::{Config, OcrSettings};
use super::settings::Values;

/// The least address space an extraction worker can run in (its program, a job's 256 MiB
/// stack, the PDF reader's own, and the file).
const MIN_EXTRACT_MEMORY: u64 = 1 << 30;

/// The sections, each already resolved and checked by the crate that owns its type.
pub(super) struct Sections {
    pub(super) qdrant: QdrantConfig,
    pub(super) ann: AnnSettings,
    pub(super) serve: ServeSettings,
}

/// `n` when it is at least 1.
fn at_least_one<T: PartialOrd + Default>(n: T, key: &str) -> Result<T> {
    if n > T::default() {
        Ok(n)
    } else {
        Err(anyhow!(
            "the built-in default of {key} (at least 1) is missing"
        ))
    }
}

/// `path` with a leading `~/` made the home folder (`HOME`); as given when there is none.
fn home_resolved(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if !home.is_empty() => std::path::PathBuf::from(home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// The fusion keys as one [`FusionConfig`], checked.
fn fusion_config(v: &Values) -> FusionConfig {
    let weights = BTreeMap::from([
        (Route::Dense, v.fusion_dense_weight),
        (Route::Lexical, v.fusion_lexical_weight),
    ]);
    FusionConfig {
        method: v.fusion,
        k: v.fusion_k,
        weights,
        normalisation: v.fusion_normalisation,
        confidence: v.fusion_confidence,
        // 0 is no floor; a minimum similarity of -1 lets every cosine through.
        dense_floor: (v.dense_floor > 0.0).then_some(v.dense_floor),
        dense_min_score: (v.dense_min_score > -1.0).then_some(v.dense_min_score),
    }
}

/// Parses `synonyms`: each entry one group, its words separated by commas (`,` or `，`) or by
/// `|` (the variable `ZHIKU_SYNONYMS` splits its list at commas, so there a group is written
/// `报销|报账`).
fn synonym_groups(entries: &[String]) -> Result<Synonyms> {
    let groups = entries
        .iter()
        .map(|e| {
            e.split([',', '，', '|'])
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect();
    Synonyms::new(groups).map_err(|e| anyhow!("synonyms: {e}"))
}

/// Parses `generator_fallback`: each entry `extractive` (last) or `URL [MODEL]`.
fn fallback_steps(entries: &[String], llm_model: &str) -> Result<Vec<FallbackStep>> {
    let mut steps = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let entry = entry.trim();
        if entry.is_empty() || entry == "none" {
            continue;
        }
        if steps.last() == Some(&FallbackStep::Extractive) {
            bail!("generator_fallback: {entry:?} comes after \"extractive\", which never fails");
        }
        if entry == "extractive" {
            steps.push(FallbackStep::Extractive);
            continue;
        }
        let mut parts = entry.split_whitespace();
        let url = parts.next().unwrap_or_default();
        let model = parts.next().unwrap_or(llm_model);
        if !(url.starts_with("http://") || url.starts_with("https://")) || parts.next().is_some() {
            bail!(
                "generator_fallback entry {} ({entry:?}): write \"extractive\" or \"URL [MODEL]\" with an http(s) URL",
                i + 1
            );
        }
        steps.push(FallbackStep::Chat {
            url: url.to_string(),
            model: model.to_string(),
        });
    }
    Ok(steps)
}

/// `scope_caps`: each entry `scope=N` (N ≥ 1), a scope at most once.
fn scope_caps(entries: &[String]) -> Result<BTreeMap<Scope, usize>> {
    let mut caps = BTreeMap::new();
    for entry in entries {
        let Some((scope, cap)) = entry.split_once('=') else {
            bail!("scope_caps entry {entry:?} must be scope=N, such as web=200");
        };
        let scope = Scope::new(scope.trim())
            .with_context(|| format!("scope_caps entry {entry:?} names no valid scope"))?;
        let cap: usize = match cap.trim().parse() {
            Ok(n) if n >= 1 => n,
            _ => bail!("scope_caps entry {entry:?}: the cap must be a whole number ≥ 1"),
        };
        if caps.insert(scope.clone(), cap).is_some() {
            bail!("scope_caps names scope {scope} twice");
        }
    }
    Ok(caps)
}

/// `access_rules` and `scope_readers`: entries `KEY = READER …` (readers separated by
/// spaces), as the service's access policy.
fn access_policy(rules: &[String], scopes: &[String]) -> Result<zhiku_service::AccessPolicy> {
    let split = |key: &str, entry: &String| -> Result<(String, Vec<String>)> {
        let Some((left, right)) = entry.split_once('=') else {
            bail!(
                "{key} entry {entry:?} must be `{}` = READER …",
                key_name(key)
            );
        };
        let readers: Vec<String> = right.split_whitespace().map(str::to_string).collect();
        Ok((left.trim().to_string(), readers))
    };
    fn key_name(key: &str) -> &'static str {
        if key == "access_rules" {
            "PATTERN"
        } else {
            "SCOPE"
        }
    }
    let rules = rules
        .iter()
        .map(|e| split("access_rules", e))
        .collect::<Result<Vec<_>>>()?;
    let scopes = scopes
        .iter()
        .map(|e| {
            let (scope, readers) = split("scope_readers", e)?;
            let scope = Scope::new(&scope)
                .with_context(|| format!("scope_readers entry {e:?} names no valid scope"))?;
            Ok((scope, readers))
        })
        .collect::<Result<Vec<_>>>()?;
    zhiku_service::AccessPolicy::new(&rules, &scopes)
}

/// The `embed_*` keys as the embeddings server of `embedder = "openai"`.
fn embed_server(v: &Values) -> Result<EmbedServer> {
    let timeout_ms = at_least_one(v.embed_timeout_ms, "embed_timeout_ms")?;
    let server = EmbedServer {
        url: v.embed_url.clone(),
        model: v.embed_model.clone(),
        api_key_env: v.embed_api_key_env.clone(),
        timeout_ms,
        retries: v.embed_retries,
        input: v.embed_input.clone(),
        query_prefix: v.embed_query_prefix.clone(),
        document_prefix: v.embed_document_prefix.clone(),
        revision: v.embed_revision.clone(),
        normalize: v.embed_normalize,
        max_tokens: v.embed_max_tokens,
    };
    server.check().map_err(anyhow::Error::msg)?;
    Ok(server)
}

/// The write-back keys as the service's policy.
fn write_back(v: &Values) -> Result<zhiku_service::WriteBackPolicy> {
    Ok(zhiku_service::WriteBackPolicy {
        duplicates: v.write_back_duplicates,
        near_duplicate: match v.write_back_near_duplicate {
            t if t > 0.0 && t <= 1.0 => t,
            t => bail!("write_back_near_duplicate must be above 0 and at most 1, not {t}"),
        },
        min_chars: v.write_back_min_chars,
    })
}

/// Checks the reranker's bounds: `rerank_depth`, `rerank_timeout_ms`, `rerank_chars`.
fn check_rerank_bounds(v: &Values) -> Result<()> {
    if v.rerank_depth == 0 {
        bail!("rerank_depth must be at least 1");
    }
    if v.rerank_timeout_ms == 0 {
        bail!("rerank_timeout_ms must be at least 1");
    }
    if v.rerank_chars < 2 {
        bail!("rerank_chars must be at least 2");
    }
    Ok(())
}

impl Config {
    /// Checks the resolved keys of `profile` and builds the configuration over `sections`
    /// (its origins left empty).
    pub(super) fn from_values(v: Values, profile: String, sections: Sections) -> Result<Self> {
        let fusion = fusion_config(&v);
        fusion
            .validate()
            .map_err(|e| anyhow!("invalid fusion settings: {e}"))?;
        if v.lexical == LexicalKind::Qdrant && v.vectors != VectorsKind::Qdrant {
            bail!(
                "lexical = \"qdrant\" keeps the lexical route beside the vectors on Qdrant: it needs vectors = \"qdrant\" (profile cluster)"
            );
        }
        if v.scopes.is_empty() {
            bail!("no scopes configured: set `scopes` in zhiku.toml or ZHIKU_SCOPES");
        }
        let policy = ChunkingPolicy::with_sizes(v.max_chars, v.overlap_chars)?;
        let scopes = v
            .scopes
            .iter()
            .map(|s| Ok(Scope::new(s)?))
            .collect::<Result<_>>()?;
        let default_scope = Scope::new(&v.default_scope)?;
        let max_pages = at_least_one(v.max_pages, "max_pages")?;
        let max_extract_seconds = at_least_one(v.max_extract_seconds, "max_extract_seconds")?;
        let max_image_pixels = at_least_one(v.max_image_pixels, "max_image_pixels")?;
        let ocr = OcrSettings {
            kind: v.ocr,
            languages: v.ocr_languages.clone(),
            program: v.ocr_program.clone(),
            page_seconds: at_least_one(v.ocr_page_seconds, "ocr_page_seconds")?,
            models: home_resolved(&v.ocr_models),
            runtime: (!v.ocr_runtime.trim().is_empty()).then(|| home_resolved(&v.ocr_runtime)),
            pdfium: (!v.pdfium.trim().is_empty()).then(|| home_resolved(&v.pdfium)),
        };
        if ocr.languages.trim().is_empty() || ocr.program.trim().is_empty() {
            bail!("ocr_languages and ocr_program must not be empty");
        }
        if v.ocr_models.trim().is_empty() {
            bail!("ocr_models must not be empty");
        }
        if v.max_extract_memory < MIN_EXTRACT_MEMORY {
            bail!(
                "max_extract_memory = {} is too small: an extraction worker needs at least {MIN_EXTRACT_MEMORY} bytes (1 GiB)",
                v.max_extract_memory
            );
        }
        let embed_server = embed_server(&v)?;
        let index_batch = at_least_one(v.index_batch, "index_batch")?;
        let generator_fallback = fallback_steps(&v.generator_fallback, &v.llm_model)?;
        let synonyms = synonym_groups(&v.synonyms)?;
        let mut dictionary = zhiku_analyzer::UserDictionary::default();
        for entry in &v.dictionary {
            dictionary
                .add(entry)
                .map_err(|e| anyhow!("dictionary: {e}"))?;
        }
        let sweep_every_secs = match v.sweep_every.trim() {
            "0" | "0s" | "" => None,
            span => Some(
                TimeToLive::parse(span)
                    .map_err(|e| anyhow!("sweep_every: {e}"))?
                    .secs(),
            ),
        };
        let context = RetrievalBudget::new(v.context_chunks, v.context_chars).map_err(|_| {
            anyhow!("ask_attempts, context_chunks and context_chars must be at least 1")
        })?;
        if !(v.locale_boost.is_finite() && v.locale_boost >= 0.0) {
            bail!("locale_boost must be a number ≥ 0, not {}", v.locale_boost);
        }
        check_rerank_bounds(&v)?;
        let scope_caps = scope_caps(&v.scope_caps)?;
        let access = access_policy(&v.access_rules, &v.scope_readers)?;
        let write_back = write_back(&v)?;
        if v.k == 0 {
            bail!("k must be at least 1");
        }
        if v.ask_attempts == 0 {
            bail!("ask_attempts, context_chunks and context_chars must be at least 1");
        }
        Ok(Config {
            profile,
            vectors: v.vectors,
            embedder: v.embedder,
            lexical: v.lexical,
            model: v.model,
            policy,
            scopes,
            default_scope,
            max_file_bytes: v.max_file_bytes,
            max_document_bytes: v.max_document_bytes,
            max_unpacked_bytes: v.max_unpacked_bytes,
            max_pages,
            max_extract_seconds,
            max_extract_memory: v.max_extract_memory,
            max_image_pixels,
            ocr,
            follow_links_inside: v.follow_links_inside,
            k: v.k,
            candidates: v.candidates,
            embed_batch: v.embed_batch,
            embed_server,
            index_batch,
            generator: v.generator,
            llm_url: v.llm_url,
            llm_model: v.llm_model,
            llm_api_key_env: v.llm_api_key_env,
            llm_timeout_ms: v.llm_timeout_ms,
            llm_max_tokens: v.llm_max_tokens,
            generator_fallback,
            synonyms,
            analyzer: zhiku_analyzer::Analyzer::with_dictionary(dictionary),
            dictionary_file: Some(v.dictionary_file.trim())
                .filter(|p| !p.is_empty())
                .map(home_resolved),
            sweep_every_secs,
            planner: v.planner,
            planner_timeout_ms: v.planner_timeout_ms,
            judge: v.judge,
            ask_attempts: v.ask_attempts,
            context,
            generator_tokenizer: Some(v.generator_tokenizer.trim())
                .filter(|p| !p.is_empty())
                .map(home_resolved),
            prompt_log: v.prompt_log,
            tokens: zhiku_domain::rules::budget::TokenBudget {
                context: (v.context_tokens > 0).then_some(v.context_tokens),
                history: (v.history_tokens > 0).then_some(v.history_tokens),
                answer: (v.answer_tokens > 0).then_some(v.answer_tokens),
            },
            answer_context: v.answer_context,
            fusion,
            locale_boost: v.locale_boost,
            reranker: v.reranker,
            rerank_depth: v.rerank_depth,
            rerank_model: v.rerank_model,
            rerank_url: v.rerank_url,
            rerank_api_key_env: v.rerank_api_key_env,
            rerank_timeout_ms: v.rerank_timeout_ms,
            rerank_chars: v.rerank_chars,
            scope_caps,
            access,
            write_back,
            qdrant: sections.qdrant,
            ann: sections.ann,
            serve: sections.serve,
            origins: Vec::new(),
            sources: Vec::new(),
        })
    }
}
