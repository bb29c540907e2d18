//! Configuration: `zhiku.toml` (optional), profiles, and `ZHIKU_*` environment overrides.
//!
//! Precedence, highest first: command-line flags, `ZHIKU_*` variables, the selected profile's
//! table in `zhiku.toml`, the file's top-level tables, built-in profile defaults.
//!
//! Profiles pick adapters:
//! - `dev`: vectors in memory, hashing embedder, tantivy in RAM (nothing persists).
//! - `local` (default): the embedded store on disk (tantivy + vector file), the candle embedder
//!   when a model is available, otherwise lexical retrieval with a notice.
//! - `prod`: vectors on a Qdrant server (`[qdrant]`, `ZHIKU_QDRANT_*`, see [`crate::qdrant`]),
//!   manifest and tantivy on disk, candle.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use zhiku_domain::{ChunkingPolicy, Scope};

/// Where vectors live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorsKind {
    /// In memory, gone when the process ends.
    Memory,
    /// The embedded store's vector file.
    File,
    /// A Qdrant server.
    Qdrant,
}

/// Which embedder produces vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// No embedder: lexical retrieval only.
    None,
    /// The hashing test double (no semantics).
    Hashing,
    /// A BERT-family model run by candle.
    Candle,
}

/// Where the lexical index lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LexicalKind {
    /// tantivy in RAM.
    Ram,
    /// tantivy in the store directory.
    Disk,
}

/// What writes answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GeneratorKind {
    /// The offline extractive strategy (no model).
    Extractive,
    /// An OpenAI-compatible chat-completions server (`llm_url`, `llm_model`).
    Openai,
}

/// The resolved configuration of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// The profile name.
    pub profile: String,
    /// Vector backend.
    pub vectors: VectorsKind,
    /// Embedder.
    pub embedder: EmbedderKind,
    /// Lexical backend.
    pub lexical: LexicalKind,
    /// Model id or local folder for the candle embedder.
    pub model: String,
    /// Chunking.
    pub max_chars: usize,
    /// Chunk overlap.
    pub overlap_chars: usize,
    /// The scopes the local user may read (the CLI's trusted identity).
    pub scopes: Vec<String>,
    /// Scope of documents that do not declare one.
    pub default_scope: String,
    /// Loader file size limit.
    pub max_file_bytes: u64,
    /// Follow symbolic links whose target is inside the knowledge-base folder (links to outside
    /// it are never followed).
    pub follow_links_inside: bool,
    /// Evidence per search.
    pub k: usize,
    /// Candidates per route before fusion.
    pub candidates: usize,
    /// Texts per embedder forward pass.
    pub embed_batch: usize,
    /// What writes answers.
    pub generator: GeneratorKind,
    /// Base URL of the OpenAI-compatible API (up to `/v1`).
    pub llm_url: String,
    /// Model name sent to the server.
    pub llm_model: String,
    /// The environment variable holding the API key (the key itself never sits in a file).
    pub llm_api_key_env: String,
    /// Generation deadline in milliseconds.
    pub llm_timeout_ms: u64,
    /// Most tokens generated per answer.
    pub llm_max_tokens: u32,
    /// Generation attempts before an answer run ends `blocked`.
    pub ask_attempts: u32,
    /// Most chunks in an answer's context.
    pub context_chunks: usize,
    /// Most characters of evidence in an answer's context.
    pub context_chars: usize,
    /// The Qdrant server (`[qdrant]`, `ZHIKU_QDRANT_*`), used when `vectors = "qdrant"`.
    pub qdrant: crate::qdrant::QdrantSettings,
    /// The HTTP server (`[serve]`, `ZHIKU_SERVE_*`).
    pub serve: zhiku_http::settings::ServeSettings,
    /// Where each value came from, for `zhiku status`.
    pub origins: Vec<(String, String)>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Layer {
    vectors: Option<VectorsKind>,
    embedder: Option<EmbedderKind>,
    lexical: Option<LexicalKind>,
    model: Option<String>,
    max_chars: Option<usize>,
    overlap_chars: Option<usize>,
    scopes: Option<Vec<String>>,
    default_scope: Option<String>,
    max_file_bytes: Option<u64>,
    follow_links_inside: Option<bool>,
    k: Option<usize>,
    candidates: Option<usize>,
    embed_batch: Option<usize>,
    generator: Option<GeneratorKind>,
    llm_url: Option<String>,
    llm_model: Option<String>,
    llm_api_key_env: Option<String>,
    llm_timeout_ms: Option<u64>,
    llm_max_tokens: Option<u32>,
    ask_attempts: Option<u32>,
    context_chunks: Option<usize>,
    context_chars: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    profile: Option<String>,
    #[serde(flatten)]
    base: Layer,
    #[serde(default)]
    profiles: std::collections::BTreeMap<String, Layer>,
    qdrant: Option<crate::qdrant::QdrantTable>,
    serve: Option<zhiku_http::settings::ServeTable>,
}

/// The default model of the candle embedder.
pub const DEFAULT_MODEL: &str = "BAAI/bge-small-zh-v1.5";

fn builtin(profile: &str) -> Result<Layer> {
    let (vectors, embedder, lexical) = match profile {
        "dev" => (VectorsKind::Memory, EmbedderKind::Hashing, LexicalKind::Ram),
        "local" => (VectorsKind::File, EmbedderKind::Candle, LexicalKind::Disk),
        "prod" => (VectorsKind::Qdrant, EmbedderKind::Candle, LexicalKind::Disk),
        other => bail!(
            "unknown profile {other:?}: use dev, local or prod, or define [profiles.{other}] in zhiku.toml"
        ),
    };
    Ok(Layer {
        vectors: Some(vectors),
        embedder: Some(embedder),
        lexical: Some(lexical),
        ..Layer::default()
    })
}

fn env_layer(env: &dyn Fn(&str) -> Option<String>) -> Result<Layer> {
    fn parse<T: for<'de> Deserialize<'de>>(name: &str, value: String) -> Result<T> {
        serde_json::from_value(serde_json::Value::String(value.clone()))
            .or_else(|_| serde_json::from_str(&value))
            .with_context(|| format!("{name}={value:?} is not a valid value"))
    }
    let get = |k: &str| env(&format!("ZHIKU_{k}")).filter(|v| !v.is_empty());
    Ok(Layer {
        vectors: get("VECTORS")
            .map(|v| parse("ZHIKU_VECTORS", v))
            .transpose()?,
        embedder: get("EMBEDDER")
            .map(|v| parse("ZHIKU_EMBEDDER", v))
            .transpose()?,
        lexical: get("LEXICAL")
            .map(|v| parse("ZHIKU_LEXICAL", v))
            .transpose()?,
        model: get("MODEL"),
        max_chars: get("MAX_CHARS")
            .map(|v| parse("ZHIKU_MAX_CHARS", v))
            .transpose()?,
        overlap_chars: get("OVERLAP_CHARS")
            .map(|v| parse("ZHIKU_OVERLAP_CHARS", v))
            .transpose()?,
        scopes: get("SCOPES").map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        }),
        default_scope: get("DEFAULT_SCOPE"),
        max_file_bytes: get("MAX_FILE_BYTES")
            .map(|v| parse("ZHIKU_MAX_FILE_BYTES", v))
            .transpose()?,
        follow_links_inside: get("FOLLOW_LINKS_INSIDE")
            .map(|v| parse("ZHIKU_FOLLOW_LINKS_INSIDE", v))
            .transpose()?,
        k: get("K").map(|v| parse("ZHIKU_K", v)).transpose()?,
        candidates: get("CANDIDATES")
            .map(|v| parse("ZHIKU_CANDIDATES", v))
            .transpose()?,
        embed_batch: get("EMBED_BATCH")
            .map(|v| parse("ZHIKU_EMBED_BATCH", v))
            .transpose()?,
        generator: get("GENERATOR")
            .map(|v| parse("ZHIKU_GENERATOR", v))
            .transpose()?,
        llm_url: get("LLM_URL"),
        llm_model: get("LLM_MODEL"),
        llm_api_key_env: get("LLM_API_KEY_ENV"),
        llm_timeout_ms: get("LLM_TIMEOUT_MS")
            .map(|v| parse("ZHIKU_LLM_TIMEOUT_MS", v))
            .transpose()?,
        llm_max_tokens: get("LLM_MAX_TOKENS")
            .map(|v| parse("ZHIKU_LLM_MAX_TOKENS", v))
            .transpose()?,
        ask_attempts: get("ASK_ATTEMPTS")
            .map(|v| parse("ZHIKU_ASK_ATTEMPTS", v))
            .transpose()?,
        context_chunks: get("CONTEXT_CHUNKS")
            .map(|v| parse("ZHIKU_CONTEXT_CHUNKS", v))
            .transpose()?,
        context_chars: get("CONTEXT_CHARS")
            .map(|v| parse("ZHIKU_CONTEXT_CHARS", v))
            .transpose()?,
    })
}

impl Config {
    /// Resolves the configuration from an optional file, a profile and the environment.
    pub fn resolve(
        file: Option<&Path>,
        profile: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let parsed: File = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read config {}", path.display()))?;
                toml::from_str(&text)
                    .with_context(|| format!("invalid config {}", path.display()))?
            }
            None => File::default(),
        };
        let (profile, profile_origin) = match (profile, env("ZHIKU_PROFILE"), &parsed.profile) {
            (Some(p), _, _) => (p.to_string(), "--profile"),
            (None, Some(p), _) if !p.is_empty() => (p, "ZHIKU_PROFILE"),
            (None, _, Some(p)) => (p.clone(), "zhiku.toml"),
            _ => ("local".to_string(), "default"),
        };
        let from_file = parsed.profiles.get(&profile);
        let base = if from_file.is_some() && !matches!(profile.as_str(), "dev" | "local" | "prod") {
            builtin("local")?
        } else {
            builtin(&profile)?
        };
        let env_layer = env_layer(env)?;
        let mut origins = vec![(
            "profile".to_string(),
            format!("{profile} ({profile_origin})"),
        )];
        macro_rules! pick {
            ($field:ident, $default:expr) => {{
                let (value, origin) = if let Some(v) = env_layer.$field.clone() {
                    (v, concat!("ZHIKU_", stringify!($field)).to_uppercase())
                } else if let Some(v) = from_file.and_then(|l| l.$field.clone()) {
                    (v, format!("zhiku.toml [profiles.{profile}]"))
                } else if let Some(v) = parsed.base.$field.clone() {
                    (v, "zhiku.toml".to_string())
                } else if let Some(v) = base.$field.clone() {
                    (v, format!("profile {profile}"))
                } else {
                    ($default, "built-in default".to_string())
                };
                origins.push((stringify!($field).to_string(), origin));
                value
            }};
        }
        let policy = ChunkingPolicy::default();
        let qdrant =
            crate::qdrant::QdrantSettings::resolve(parsed.qdrant.as_ref(), env, &mut origins)?;
        let serve =
            zhiku_http::settings::ServeSettings::resolve(parsed.serve.as_ref(), env, &mut origins)?;
        let config = Config {
            vectors: pick!(vectors, VectorsKind::File),
            embedder: pick!(embedder, EmbedderKind::Candle),
            lexical: pick!(lexical, LexicalKind::Disk),
            model: pick!(model, DEFAULT_MODEL.to_string()),
            max_chars: pick!(max_chars, policy.max_chars()),
            overlap_chars: pick!(overlap_chars, policy.overlap_chars()),
            scopes: pick!(scopes, vec!["default".to_string(), "public".to_string()]),
            default_scope: pick!(default_scope, "default".to_string()),
            max_file_bytes: pick!(max_file_bytes, 10 * 1024 * 1024),
            follow_links_inside: pick!(follow_links_inside, false),
            k: pick!(k, 8),
            candidates: pick!(candidates, 50),
            embed_batch: pick!(embed_batch, 32),
            generator: pick!(generator, GeneratorKind::Extractive),
            llm_url: pick!(llm_url, "http://127.0.0.1:8088/v1".to_string()),
            llm_model: pick!(llm_model, "local".to_string()),
            llm_api_key_env: pick!(llm_api_key_env, "ZHIKU_LLM_API_KEY".to_string()),
            llm_timeout_ms: pick!(llm_timeout_ms, 60_000),
            llm_max_tokens: pick!(llm_max_tokens, 512),
            ask_attempts: pick!(ask_attempts, 3),
            context_chunks: pick!(context_chunks, 6),
            context_chars: pick!(context_chars, 4000),
            qdrant,
            serve,
            profile,
            origins,
        };
        config.policy()?;
        config.trusted_scopes()?;
        Scope::new(&config.default_scope)?;
        if config.k == 0 {
            bail!("k must be at least 1");
        }
        if config.ask_attempts == 0 || config.context_chunks == 0 || config.context_chars == 0 {
            bail!("ask_attempts, context_chunks and context_chars must be at least 1");
        }
        Ok(config)
    }

    /// The chunking policy.
    pub fn policy(&self) -> Result<ChunkingPolicy> {
        Ok(ChunkingPolicy::with_sizes(
            self.max_chars,
            self.overlap_chars,
        )?)
    }

    /// The scopes the local user may read.
    pub fn trusted_scopes(&self) -> Result<Vec<Scope>> {
        if self.scopes.is_empty() {
            bail!("no scopes configured: set `scopes` in zhiku.toml or ZHIKU_SCOPES");
        }
        self.scopes.iter().map(|s| Ok(Scope::new(s)?)).collect()
    }

    /// True when the store lives on disk (a lexical index or vector file there).
    pub fn is_persistent(&self) -> bool {
        self.lexical == LexicalKind::Disk || self.vectors == VectorsKind::File
    }

    /// What the service needs of this configuration, parsed once.
    pub fn service_settings(&self) -> Result<zhiku_service::Settings> {
        Ok(zhiku_service::Settings {
            profile: self.profile.clone(),
            policy: self.policy()?,
            trusted_scopes: self.trusted_scopes()?,
            k: self.k,
            candidates: self.candidates,
            context: zhiku_domain::rules::budget::RetrievalBudget::new(
                self.context_chunks,
                self.context_chars,
            )?,
            ask_attempts: self.ask_attempts,
            limits: self.serve.query_limits(),
        })
    }

    /// How much trace history the store keeps (`[serve]` `traces_*`).
    pub fn trace_retention(&self) -> zhiku_adapters_fs::trace_log::Retention {
        zhiku_adapters_fs::trace_log::Retention::new(
            self.serve.traces_max_bytes,
            self.serve.traces_keep_files,
            self.serve.traces_max_age_days,
        )
    }

    /// Where `zhiku.toml` is looked for when `--config` is not given: the knowledge base root.
    pub fn default_file(kb: &Path) -> Option<PathBuf> {
        let candidate = kb.join("zhiku.toml");
        candidate.is_file().then_some(candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn profiles_pick_adapters_and_env_overrides_win() {
        let local = Config::resolve(None, None, &no_env).unwrap();
        assert_eq!(
            (local.vectors, local.embedder, local.lexical),
            (VectorsKind::File, EmbedderKind::Candle, LexicalKind::Disk)
        );
        let dev = Config::resolve(None, Some("dev"), &no_env).unwrap();
        assert_eq!(dev.embedder, EmbedderKind::Hashing);
        let env = |k: &str| match k {
            "ZHIKU_EMBEDDER" => Some("hashing".to_string()),
            "ZHIKU_MAX_CHARS" => Some("300".to_string()),
            "ZHIKU_SCOPES" => Some("a, b".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Hashing);
        assert_eq!(c.max_chars, 300);
        assert_eq!(c.scopes, vec!["a", "b"]);
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "embedder" && o == "ZHIKU_EMBEDDER")
        );
        assert!(Config::resolve(None, Some("nope"), &no_env).is_err());
        let bad = |k: &str| (k == "ZHIKU_EMBEDDER").then(|| "gpt".to_string());
        assert!(Config::resolve(None, None, &bad).is_err());
    }

    #[test]
    fn the_file_and_its_profiles_apply() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(&path, "profile = \"team\"\nmax_chars = 400\n[profiles.team]\nembedder = \"none\"\nscopes = [\"team-a\"]\n").unwrap();
        let c = Config::resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!(c.profile, "team");
        assert_eq!(c.embedder, EmbedderKind::None);
        assert_eq!(c.max_chars, 400);
        assert_eq!(c.scopes, vec!["team-a"]);
        std::fs::write(&path, "unknown_key = 1\n").unwrap();
        assert!(Config::resolve(Some(&path), None, &no_env).is_err());
    }
}
