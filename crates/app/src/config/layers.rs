//! The layers of one run, lowest first: the built-in defaults, the profile's adapters,
//! `zhiku.toml` (checked whole first), its `[profiles.NAME]` table and the `ZHIKU_*`
//! variables, of the top-level keys and of each section.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use toml::{Table, Value};
use zhiku_adapters_qdrant::QdrantConfig;
use zhiku_adapters_usearch::AnnSettings;
use zhiku_http::settings::ServeTable;

use super::resolver::{EnvKey, Resolver, var};
use super::settings::{self, Keys};

/// `zhiku.toml` as written: checked whole before any layer is used, so a mistyped key is
/// reported with the file's name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read for its checks; the values are merged from the raw table
struct File {
    profile: Option<String>,
    #[serde(flatten)]
    base: Keys,
    #[serde(default)]
    profiles: std::collections::BTreeMap<String, Keys>,
    qdrant: Option<QdrantConfig>,
    ann: Option<AnnSettings>,
    serve: Option<ServeTable>,
    sources: Option<Vec<super::sources::SourceTable>>,
}

/// The variables of `[qdrant]`.
const QDRANT_ENV: [EnvKey; 10] = [
    var("url", "ZHIKU_QDRANT_URL"),
    var("knowledge_base", "ZHIKU_QDRANT_KNOWLEDGE_BASE"),
    var("api_key", "ZHIKU_QDRANT_API_KEY"),
    var("collection_prefix", "ZHIKU_QDRANT_COLLECTION_PREFIX"),
    var("timeout_ms", "ZHIKU_QDRANT_TIMEOUT_MS"),
    var("shards", "ZHIKU_QDRANT_SHARDS"),
    var("replication", "ZHIKU_QDRANT_REPLICATION"),
    var("batch", "ZHIKU_QDRANT_BATCH"),
    var("hnsw_ef", "ZHIKU_QDRANT_HNSW_EF"),
    var("exact", "ZHIKU_QDRANT_EXACT"),
];

/// The variables of `[ann]`.
const ANN_ENV: [EnvKey; 4] = [
    var("quantization", "ZHIKU_ANN_QUANTIZATION"),
    var("ef", "ZHIKU_ANN_EF"),
    var("rescore", "ZHIKU_ANN_RESCORE"),
    var("exact_scan_below", "ZHIKU_ANN_EXACT_SCAN_BELOW"),
];

/// The keys of `[ann]` whose origin `status` shows.
pub(super) const ANN_KEYS: [&str; 4] = ["quantization", "ef", "rescore", "exact_scan_below"];

/// The keys of `[qdrant]` whose origin `status` shows (the API key's value never is).
pub(super) const QDRANT_KEYS: [&str; 9] = [
    "url",
    "knowledge_base",
    "collection_prefix",
    "timeout_ms",
    "shards",
    "replication",
    "batch",
    "hnsw_ef",
    "exact",
];

/// The variables of `[serve]`.
const SERVE_ENV: [EnvKey; 7] = [
    var("bind", "ZHIKU_SERVE_BIND"),
    var("timeout_ms", "ZHIKU_SERVE_TIMEOUT_MS"),
    var("header_timeout_ms", "ZHIKU_SERVE_HEADER_TIMEOUT_MS"),
    var("body_timeout_ms", "ZHIKU_SERVE_BODY_TIMEOUT_MS"),
    var("idle_timeout_ms", "ZHIKU_SERVE_IDLE_TIMEOUT_MS"),
    var("shutdown_timeout_ms", "ZHIKU_SERVE_SHUTDOWN_TIMEOUT_MS"),
    var("max_connections", "ZHIKU_SERVE_MAX_CONNECTIONS"),
];

/// Rewrites an `[embedder]` table (`kind = "openai"`, `url = ...`) of `table` into the flat
/// keys it stands for. Returns whether there was one.
fn flatten_embedder_table(table: &mut Table, place: &str) -> Result<bool> {
    let Some(Value::Table(inner)) = table.get("embedder").cloned() else {
        return Ok(false);
    };
    table.remove("embedder");
    let known = settings::embedder_table();
    for (key, value) in inner {
        let Some((_, flat)) = known.iter().find(|(k, _)| *k == key) else {
            let names: Vec<&str> = known.iter().map(|(k, _)| *k).collect();
            bail!(
                "unknown key {key:?} in {place}[embedder] (known: {})",
                names.join(", ")
            );
        };
        if table.contains_key(*flat) {
            bail!("{place}[embedder] {key} and the key {flat} both set the same value: keep one");
        }
        table.insert((*flat).to_string(), value);
    }
    Ok(true)
}

/// Reads `zhiku.toml` at `path` as a raw table, its `[embedder]` tables flattened, after
/// checking it whole: every key known and typed, every section valid.
pub(super) fn read_file(path: &Path) -> Result<Table> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    let invalid = || format!("invalid config {}", path.display());
    let mut raw: Table = toml::from_str(&text).with_context(invalid)?;
    // `[embedder]` as a table is the flat `embed_*` keys written another way.
    let mut tables = flatten_embedder_table(&mut raw, "").with_context(invalid)?;
    if let Some(Value::Table(profiles)) = raw.get_mut("profiles") {
        for (name, p) in profiles.iter_mut() {
            if let Value::Table(p) = p {
                tables |= flatten_embedder_table(p, &format!("[profiles.{name}] "))
                    .with_context(invalid)?;
            }
        }
    }
    let checked: File = if tables {
        Value::Table(raw.clone()).try_into().with_context(invalid)?
    } else {
        toml::from_str(&text).with_context(invalid)?
    };
    if let Some(q) = &checked.qdrant {
        q.check()
            .map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))?;
    }
    let mut names = std::collections::BTreeSet::new();
    for source in checked.sources.iter().flatten() {
        source
            .check()
            .map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))?;
        if !names.insert(source.name.as_str()) {
            bail!(
                "invalid config {}: two [[sources]] are named {:?}",
                path.display(),
                source.name
            );
        }
    }
    if let Some(a) = &checked.ann {
        a.check()
            .map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))?;
    }
    Ok(raw)
}

/// The adapters a built-in profile picks.
fn builtin(profile: &str) -> Result<Table> {
    let (vectors, embedder, lexical) = match profile {
        "dev" => ("memory", "hashing", "ram"),
        "local" => ("ann", "candle", "disk"),
        "prod" => ("qdrant", "candle", "disk"),
        "cluster" => ("qdrant", "candle", "qdrant"),
        other => bail!(
            "unknown profile {other:?}: use dev, local, prod or cluster, or define [profiles.{other}] in zhiku.toml"
        ),
    };
    Ok(Table::from_iter(
        [
            ("vectors", vectors),
            ("embedder", embedder),
            ("lexical", lexical),
        ]
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string()))),
    ))
}

/// The profile of this run and where it was picked: `--profile`, `ZHIKU_PROFILE`, the file's
/// `profile`, else `local`.
pub(super) fn pick_profile(
    flag: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    raw: &Table,
) -> (String, &'static str) {
    let from_file = raw.get("profile").and_then(|p| p.as_str());
    match (flag, env("ZHIKU_PROFILE"), from_file) {
        (Some(p), _, _) => (p.to_string(), "--profile"),
        (None, Some(p), _) if !p.is_empty() => (p, "ZHIKU_PROFILE"),
        (None, _, Some(p)) => (p.to_string(), "zhiku.toml"),
        _ => ("local".to_string(), "default"),
    }
}

/// Every layer of the run of `profile` over the file's `raw` table, lowest first.
pub(super) fn stack(
    raw: &Table,
    profile: &str,
    picked_by: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolver> {
    let profile_table = raw
        .get("profiles")
        .and_then(|p| p.get(profile))
        .and_then(|t| t.as_table())
        .cloned();
    // A profile the file defines (not a built-in name) starts from `local`'s adapters.
    let base =
        if profile_table.is_some() && !matches!(profile, "dev" | "local" | "prod" | "cluster") {
            builtin("local")?
        } else {
            builtin(profile)?
        };
    let mut r = Resolver::default();
    r.origins
        .push(("profile".to_string(), format!("{profile} ({picked_by})")));
    r.push("built-in default", settings::defaults());
    r.push(format!("profile {profile}"), base);
    let mut top = raw.clone();
    top.remove("profile");
    top.remove("profiles");
    // `[[sources]]` is read from the file alone (`Config::resolve`).
    top.remove("sources");
    r.push("zhiku.toml", top);
    if let Some(t) = profile_table {
        r.push(format!("zhiku.toml [profiles.{profile}]"), t);
    }
    r.push_env::<Keys>(None, &settings::env_keys(), env)?;
    r.push_env::<QdrantConfig>(Some("qdrant"), &QDRANT_ENV, env)?;
    r.push_env::<AnnSettings>(Some("ann"), &ANN_ENV, env)?;
    r.push_env::<ServeTable>(Some("serve"), &SERVE_ENV, env)?;
    Ok(r)
}
