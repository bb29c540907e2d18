//! Configuration: `zhiku.toml` (optional), profiles, and `ZHIKU_*` environment overrides,
//! resolved once by one precedence rule ([`resolver`]) into parsed values.
//!
//! Precedence, lowest first: built-in defaults, the profile's adapters, the file's top-level
//! keys and tables, the file's `[profiles.NAME]` table, `ZHIKU_*` variables; command-line flags
//! are applied last by the command that takes them.
//!
//! Every top-level key is declared once, in [`settings`]: its type, default, variable and doc.
//! The layers are stacked in [`layers`], the resolved keys checked and built in [`assemble`].
//!
//! Profiles pick adapters:
//! - `dev`: vectors in memory, hashing embedder, tantivy in RAM (nothing persists).
//! - `local` (default): the embedded store on disk (tantivy + the ANN vector index, `[ann]`,
//!   the adapter's [`AnnSettings`]), the candle embedder when a model is available, otherwise
//!   lexical retrieval with a notice.
//! - `prod`: vectors on a Qdrant server (`[qdrant]`, `ZHIKU_QDRANT_*`, the adapter's
//!   [`QdrantConfig`]), manifest and tantivy on disk, candle.
//! - `cluster`: the whole store on a Qdrant server or cluster (vectors, the lexical route as
//!   sparse vectors of the same analyzer's terms, catalog, documents, audit), candle; writers
//!   on any machine take turns through the catalog's lease, no lock file.
//!
//! Each section's type is owned by the crate it configures: `[qdrant]` by the Qdrant adapter,
//! `[ann]` by the embedded vector index, `[serve]` by the HTTP transport.

mod assemble;
mod kinds;
mod layers;
mod model;
mod resolver;
mod settings;
mod sources;

use std::path::Path;

use anyhow::Result;
use toml::Table;
use zhiku_adapters_qdrant::QdrantConfig;
use zhiku_adapters_usearch::AnnSettings;
use zhiku_http::settings::ServeSettings;

pub use kinds::{
    DEFAULT_MODEL, EMBED_INPUTS, EmbedServer, EmbedderKind, FallbackStep, GeneratorKind, JudgeKind,
    LexicalKind, OcrKind, PlannerKind, RerankerKind, VectorsKind,
};
pub use model::{Config, OcrSettings};
pub use settings::{SETTINGS, Setting, markdown_table};
pub use sources::{SourceKind, SourceTable};

use assemble::Sections;
use settings::Values;

/// The largest dictionary file read (16 MiB: far more than `UserDictionary::MAX_ENTRIES` lines).
const MAX_DICTIONARY_FILE: u64 = 16 * 1024 * 1024;

impl Config {
    /// Adds the words of `dictionary_file` (a relative path read from `file_dir`, the
    /// configuration file's folder, when there is one) to the analyzer's user dictionary.
    fn read_dictionary_file(&mut self, file_dir: Option<&Path>) -> Result<()> {
        let Some(path) = &self.dictionary_file else {
            return Ok(());
        };
        let path = match file_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.clone(),
        };
        self.dictionary_file = Some(path.clone());
        let size = std::fs::metadata(&path)
            .map_err(|e| anyhow::anyhow!("dictionary_file {}: {e}", path.display()))?
            .len();
        if size > MAX_DICTIONARY_FILE {
            anyhow::bail!(
                "dictionary_file {}: {size} bytes, more than the {MAX_DICTIONARY_FILE} a dictionary may take",
                path.display()
            );
        }
        let text = std::fs::read(&path)
            .map_err(|e| anyhow::anyhow!("dictionary_file {}: {e}", path.display()))?;
        let text = String::from_utf8(text)
            .map_err(|_| anyhow::anyhow!("dictionary_file {}: not UTF-8 text", path.display()))?;
        let mut dictionary = self.analyzer.dictionary().clone();
        let from_file = zhiku_analyzer::UserDictionary::parse(&text)
            .map_err(|e| anyhow::anyhow!("dictionary_file {}: {e}", path.display()))?;
        dictionary
            .merge(from_file)
            .map_err(|e| anyhow::anyhow!("dictionary_file {}: {e}", path.display()))?;
        self.analyzer = zhiku_analyzer::Analyzer::with_dictionary(dictionary);
        Ok(())
    }

    /// Resolves the configuration from an optional file, a profile and the environment.
    pub fn resolve(
        file: Option<&Path>,
        profile: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let raw = match file {
            Some(path) => layers::read_file(path)?,
            None => Table::new(),
        };
        let (profile, picked_by) = layers::pick_profile(profile, env, &raw);
        let mut r = layers::stack(&raw, &profile, picked_by, env)?;
        let values: Values = r.resolve(None, &settings::keys())?;
        let qdrant: QdrantConfig = r.resolve(Some("qdrant"), &layers::QDRANT_KEYS)?;
        qdrant.check().map_err(anyhow::Error::msg)?;
        let ann: AnnSettings = r.resolve(Some("ann"), &layers::ANN_KEYS)?;
        ann.check().map_err(anyhow::Error::msg)?;
        let serve = ServeSettings::from_table(r.resolve(Some("serve"), &[])?)?;
        let sections = Sections { qdrant, ann, serve };
        let mut config = Config::from_values(values, profile, sections)?;
        config.origins = r.origins;
        config.read_dictionary_file(file.and_then(Path::parent))?;
        // Sources are the file's alone (no profile or variable layers): checked with it.
        if let Some(sources) = raw.get("sources") {
            config.sources = sources
                .clone()
                .try_into()
                .map_err(|e| anyhow::anyhow!("[[sources]]: {e}"))?;
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use zhiku_domain::Scope;
    use zhiku_domain::rules::fusion::Route;

    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn synonym_groups_come_from_the_file_or_the_variable() {
        let env = |k: &str| (k == "ZHIKU_SYNONYMS").then(|| "报销|报账,VPN | 远程接入".to_string());
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(
            c.synonyms.expand("怎么报账？").as_deref(),
            Some("怎么报账？（报销）")
        );
        assert_eq!(
            c.synonyms.expand("远程接入").as_deref(),
            Some("远程接入（VPN）")
        );
        let one = |k: &str| (k == "ZHIKU_SYNONYMS").then(|| "报销,报账".to_string());
        let err = Config::resolve(None, None, &one).unwrap_err();
        assert!(format!("{err:#}").contains("synonyms"), "{err:#}");
        assert!(
            Config::resolve(None, None, &|_| None)
                .unwrap()
                .synonyms
                .is_empty()
        );
    }

    #[test]
    fn the_generator_fallback_chain_parses_and_ends_with_extractive_by_default() {
        let c = Config::resolve(None, None, &|_| None).unwrap();
        assert_eq!(c.generator_fallback, vec![FallbackStep::Extractive]);
        let env = |k: &str| {
            (k == "ZHIKU_GENERATOR_FALLBACK")
                .then(|| "http://10.0.0.2:8088/v1 backup,http://10.0.0.3/v1,extractive".to_string())
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(
            c.generator_fallback,
            vec![
                FallbackStep::Chat {
                    url: "http://10.0.0.2:8088/v1".into(),
                    model: "backup".into()
                },
                FallbackStep::Chat {
                    url: "http://10.0.0.3/v1".into(),
                    model: "local".into()
                },
                FallbackStep::Extractive,
            ]
        );
        let none = |k: &str| (k == "ZHIKU_GENERATOR_FALLBACK").then(|| "none".to_string());
        assert!(
            Config::resolve(None, None, &none)
                .unwrap()
                .generator_fallback
                .is_empty()
        );
        for bad in ["extractive,http://x/v1", "ftp://x", "http://x/v1 a b"] {
            let env = |k: &str| (k == "ZHIKU_GENERATOR_FALLBACK").then(|| bad.to_string());
            assert!(Config::resolve(None, None, &env).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_user_dictionary_is_read_inline_and_from_a_file_beside_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("words.txt"), "玄武湖计划 nz\n# comment\n").unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(
            &path,
            "dictionary = [\"青龙项目\", \"年假 20 n\"]\ndictionary_file = \"words.txt\"\n",
        )
        .unwrap();
        let c = Config::resolve(Some(&path), None, &no_env).unwrap();
        let words: Vec<&str> = c.analyzer.dictionary().words().collect();
        assert_eq!(words, ["年假", "玄武湖计划", "青龙项目"]);
        assert!(c.analyzer.identity().contains("user dictionary"));
        // A bad entry names the file and line; a missing file is an error, not silence.
        std::fs::write(dir.path().join("words.txt"), "好\n词 1 2 3\n").unwrap();
        let err = format!(
            "{:#}",
            Config::resolve(Some(&path), None, &no_env).unwrap_err()
        );
        assert!(err.contains("words.txt") && err.contains("line 2"), "{err}");
        std::fs::remove_file(dir.path().join("words.txt")).unwrap();
        assert!(Config::resolve(Some(&path), None, &no_env).is_err());
        let env = |k: &str| (k == "ZHIKU_DICTIONARY").then(|| "，，".to_string());
        assert!(Config::resolve(None, None, &env).is_err());
        // None configured: jieba's default dictionary alone.
        let plain = Config::resolve(None, None, &no_env).unwrap();
        assert!(plain.analyzer.dictionary().is_empty());
    }

    #[test]
    fn profiles_pick_adapters_and_env_overrides_win() {
        let local = Config::resolve(None, None, &no_env).unwrap();
        assert_eq!(
            (local.vectors, local.embedder, local.lexical),
            (VectorsKind::Ann, EmbedderKind::Candle, LexicalKind::Disk)
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
        assert_eq!(c.policy.max_chars(), 300);
        assert_eq!(
            c.scopes,
            vec![Scope::new("a").unwrap(), Scope::new("b").unwrap()]
        );
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
        assert_eq!(c.policy.max_chars(), 400);
        assert_eq!(c.scopes, vec![Scope::new("team-a").unwrap()]);
        std::fs::write(&path, "unknown_key = 1\n").unwrap();
        assert!(Config::resolve(Some(&path), None, &no_env).is_err());
    }

    #[test]
    fn qdrant_variables_win_over_the_table_and_bad_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(
            &path,
            "[qdrant]\nurl = \"http://q:6334\"\nshards = 3\nbatch = 64\n",
        )
        .unwrap();
        let env = |k: &str| match k {
            "ZHIKU_QDRANT_SHARDS" => Some("6".to_string()),
            "ZHIKU_QDRANT_API_KEY" => Some("k".to_string()),
            _ => None,
        };
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        let q = &c.qdrant;
        assert_eq!(q.url, "http://q:6334");
        assert_eq!((q.shard_number, q.batch_size), (6, 64));
        assert_eq!(q.replication_factor, 1);
        assert_eq!(q.api_key.as_deref(), Some("k"));
        assert!(!format!("{q:?}").contains("\"k\""));
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "qdrant.shards" && o == "ZHIKU_QDRANT_SHARDS")
        );
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "qdrant.url" && o == "zhiku.toml")
        );
        for (var, value) in [
            ("ZHIKU_QDRANT_TIMEOUT_MS", "soon"),
            ("ZHIKU_QDRANT_BATCH", "0"),
            ("ZHIKU_QDRANT_URL", "127.0.0.1:6334"),
        ] {
            let bad = |k: &str| (k == var).then(|| value.to_string());
            assert!(Config::resolve(None, None, &bad).is_err(), "{var}={value}");
        }
        std::fs::write(&path, "[qdrant]\nnope = 1\n").unwrap();
        assert!(Config::resolve(Some(&path), None, &no_env).is_err());
    }

    #[test]
    fn fusion_and_reranking_are_configured_and_checked() {
        let c = Config::resolve(None, None, &no_env).unwrap();
        // Measured (docs/measurements.md, "Fusion"): a convex combination, the dense route at 0.2.
        assert_eq!(c.fusion.method_name(), "convex_min_max");
        assert_eq!(c.fusion.weight(Route::Dense), 0.2);
        assert_eq!(c.reranker, RerankerKind::None);
        assert_eq!(c.fusion.dense_floor, None);
        assert_eq!(c.fusion.dense_min_score, None);
        let env = |k: &str| match k {
            "ZHIKU_FUSION" => Some("convex".to_string()),
            "ZHIKU_FUSION_NORMALISATION" => Some("z_score".to_string()),
            "ZHIKU_FUSION_DENSE_WEIGHT" => Some("0.3".to_string()),
            "ZHIKU_DENSE_FLOOR" => Some("0.9".to_string()),
            "ZHIKU_DENSE_MIN_SCORE" => Some("0.5".to_string()),
            "ZHIKU_RERANKER" => Some("rules".to_string()),
            "ZHIKU_RERANK_DEPTH" => Some("30".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.fusion.method_name(), "convex_z_score");
        assert_eq!(c.fusion.weight(Route::Dense), 0.3);
        assert_eq!(c.fusion.dense_floor, Some(0.9));
        assert_eq!(c.fusion.dense_min_score, Some(0.5));
        assert_eq!((c.reranker, c.rerank_depth), (RerankerKind::Rules, 30));
        let env = |k: &str| match k {
            "ZHIKU_RERANKER" => Some("cross-encoder".to_string()),
            "ZHIKU_RERANK_MODEL" => Some("/models/bge-reranker-base".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.reranker, RerankerKind::CrossEncoder);
        assert_eq!(c.rerank_model, "/models/bge-reranker-base");
        assert_eq!(c.service_settings().fusion, c.fusion);
        for (key, bad) in [
            ("ZHIKU_DENSE_FLOOR", "1.5"),
            ("ZHIKU_FUSION_DENSE_WEIGHT", "-1"),
            ("ZHIKU_RERANK_DEPTH", "0"),
            ("ZHIKU_RERANK_TIMEOUT_MS", "0"),
            ("ZHIKU_RERANK_CHARS", "1"),
            ("ZHIKU_RERANKER", "cohere"),
            ("ZHIKU_LOCALE_BOOST", "-0.1"),
            ("ZHIKU_FUSION", "average"),
        ] {
            let env = |k: &str| (k == key).then(|| bad.to_string());
            assert!(Config::resolve(None, None, &env).is_err(), "{key}={bad}");
        }
    }

    #[test]
    fn the_embeddings_server_is_configured_flat_or_as_a_table() {
        let env = |k: &str| match k {
            "ZHIKU_EMBEDDER" => Some("openai".to_string()),
            "ZHIKU_EMBED_URL" => Some("http://e:1/v1".to_string()),
            "ZHIKU_EMBED_INPUT" => Some("bge-zh".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Openai);
        assert_eq!(c.embed_server.url, "http://e:1/v1");
        assert_eq!(c.embed_server.input, "bge-zh");
        assert_eq!(c.embed_server.api_key_env, "ZHIKU_EMBED_API_KEY");
        assert!(c.embed_server.normalize);
        let bad = |k: &str| (k == "ZHIKU_EMBED_INPUT").then(|| "fancy".to_string());
        assert!(Config::resolve(None, None, &bad).is_err());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(
            &path,
            "[embedder]\nkind = \"openai\"\nurl = \"http://t:2/v1\"\nmodel = \"bge-m3\"\nbatch = 8\nrevision = \"r7\"\n\n[profiles.lex.embedder]\nkind = \"none\"\n",
        )
        .unwrap();
        let c = Config::resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Openai);
        assert_eq!(
            (c.embed_server.url.as_str(), c.embed_server.model.as_str()),
            ("http://t:2/v1", "bge-m3")
        );
        assert_eq!((c.embed_batch, c.embed_server.revision.as_str()), (8, "r7"));
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "embed_url" && o == "zhiku.toml")
        );
        let lex = Config::resolve(Some(&path), Some("lex"), &no_env).unwrap();
        assert_eq!(lex.embedder, EmbedderKind::None);
        // The variable still wins over the table.
        let env = |k: &str| (k == "ZHIKU_EMBED_URL").then(|| "http://v:3/v1".to_string());
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        assert_eq!(c.embed_server.url, "http://v:3/v1");
        for text in [
            "[embedder]\nkind = \"openai\"\nurl_typo = \"x\"\n",
            "embed_url = \"http://a/v1\"\n[embedder]\nurl = \"http://b/v1\"\n",
        ] {
            std::fs::write(&path, text).unwrap();
            assert!(
                Config::resolve(Some(&path), None, &no_env).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn scope_caps_come_from_the_file_or_the_variable_and_bad_ones_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("zhiku.toml");
        std::fs::write(&path, "scope_caps = [\"web=200\"]\n").unwrap();
        let c = Config::resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!(c.scope_caps.get(&Scope::new("web").unwrap()), Some(&200));
        let env = |k: &str| (k == "ZHIKU_SCOPE_CAPS").then(|| "web=5, cache=2".to_string());
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        assert_eq!(c.scope_caps.len(), 2);
        assert_eq!(
            c.service_settings().scope_caps[&Scope::new("web").unwrap()],
            5
        );
        assert!(
            Config::resolve(None, None, &no_env)
                .unwrap()
                .scope_caps
                .is_empty()
        );
        for bad in ["web", "web=0", "web=x", "bad scope=3", "web=1,web=2"] {
            let env = |k: &str| (k == "ZHIKU_SCOPE_CAPS").then(|| bad.to_string());
            let e = Config::resolve(None, None, &env).unwrap_err();
            assert!(format!("{e:#}").contains("scope_caps"), "{bad}: {e:#}");
        }
    }

    #[test]
    fn serve_variables_win_over_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(&path, "[serve]\nbind = \"127.0.0.1:1\"\nmax_k = 9\n").unwrap();
        let env = |k: &str| (k == "ZHIKU_SERVE_BIND").then(|| "127.0.0.1:2".to_string());
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        assert_eq!(c.serve.bind, "127.0.0.1:2");
        assert_eq!(c.serve.max_k, 9);
        let bad = |k: &str| (k == "ZHIKU_SERVE_TIMEOUT_MS").then(|| "later".to_string());
        assert!(Config::resolve(None, None, &bad).is_err());
    }
}
