//! `[serve]` in `zhiku.toml`: where the server listens, its limits, and the bearer tokens that
//! decide each caller's scopes.
//!
//! ```toml
//! [serve]
//! bind = "127.0.0.1:7878"
//! timeout_ms = 30000
//! allowed_hosts = ["kb.example.com"]   # names MCP clients use to reach the server
//!
//! [[serve.tokens]]
//! name = "support-team"
//! sha256 = "…"            # hex SHA-256 of the token (`zhiku token` prints one)
//! scopes = ["support", "public"]
//!
//! [[serve.tokens]]
//! name = "ingest-bot"
//! env = "ZHIKU_TOKEN_INGEST"  # or the token itself in an environment variable
//! scopes = ["support"]
//! write = true
//! ```
//!
//! `/metrics` has its own token (`metrics_token_sha256 = "…"` or `metrics_token_env = "VAR"`);
//! without one it answers loopback requests only.
//!
//! Tokens never sit in the file in clear. Without any token the server admits anonymous
//! callers, read-only, with the configuration's trusted scopes, and only on a loopback address.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zhiku_domain::Scope;

use crate::kb::Caller;

/// One `[[serve.tokens]]` entry.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRule {
    /// A name for logs.
    pub name: String,
    /// Hex SHA-256 of the token.
    pub sha256: Option<String>,
    /// The environment variable holding the token.
    pub env: Option<String>,
    /// Scopes the token may read.
    pub scopes: Vec<String>,
    /// May add and remove documents (in its scopes).
    #[serde(default)]
    pub write: bool,
}

/// `[serve]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeTable {
    bind: Option<String>,
    max_body_bytes: Option<usize>,
    max_k: Option<usize>,
    max_query_chars: Option<usize>,
    timeout_ms: Option<u64>,
    max_concurrent: Option<usize>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    tokens: Vec<TokenRule>,
    metrics_token_sha256: Option<String>,
    metrics_token_env: Option<String>,
}

/// The resolved server settings.
#[derive(Debug, Clone, Serialize)]
pub struct ServeSettings {
    /// Listen address.
    pub bind: String,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Largest `k`.
    pub max_k: usize,
    /// Longest query or question, in characters.
    pub max_query_chars: usize,
    /// Deadline of one request's work.
    pub timeout_ms: u64,
    /// Requests worked on at once; more are refused with 503.
    pub max_concurrent: usize,
    /// Host names (or `host:port`) the MCP endpoint accepts in `Host`, besides loopback and
    /// the bind address: DNS-rebinding protection for a server reached by name.
    pub allowed_hosts: Vec<String>,
    /// Bearer tokens.
    #[serde(skip)]
    pub tokens: Vec<TokenRule>,
    /// Hex SHA-256 of the bearer token of `/metrics` (none: loopback only).
    #[serde(skip)]
    pub metrics_token_sha256: Option<String>,
    /// The environment variable holding the bearer token of `/metrics`.
    #[serde(skip)]
    pub metrics_token_env: Option<String>,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:7878".into(),
            max_body_bytes: 2 * 1024 * 1024,
            max_k: 50,
            max_query_chars: 2000,
            timeout_ms: 60_000,
            max_concurrent: 16,
            allowed_hosts: Vec::new(),
            tokens: Vec::new(),
            metrics_token_sha256: None,
            metrics_token_env: None,
        }
    }
}

impl ServeSettings {
    /// File values over defaults, `ZHIKU_SERVE_BIND` and `ZHIKU_SERVE_TIMEOUT_MS` over both.
    pub fn resolve(
        table: Option<&ServeTable>,
        env: &dyn Fn(&str) -> Option<String>,
        origins: &mut Vec<(String, String)>,
    ) -> Result<Self> {
        let d = Self::default();
        let t = table.cloned().unwrap_or_default();
        let mut s = Self {
            bind: t.bind.unwrap_or(d.bind),
            max_body_bytes: t.max_body_bytes.unwrap_or(d.max_body_bytes),
            max_k: t.max_k.unwrap_or(d.max_k),
            max_query_chars: t.max_query_chars.unwrap_or(d.max_query_chars),
            timeout_ms: t.timeout_ms.unwrap_or(d.timeout_ms),
            max_concurrent: t.max_concurrent.unwrap_or(d.max_concurrent),
            allowed_hosts: t.allowed_hosts,
            tokens: t.tokens,
            metrics_token_sha256: t.metrics_token_sha256,
            metrics_token_env: t.metrics_token_env,
        };
        if let Some(v) = env("ZHIKU_SERVE_BIND").filter(|v| !v.is_empty()) {
            s.bind = v;
            origins.push(("serve.bind".into(), "ZHIKU_SERVE_BIND".into()));
        }
        if let Some(v) = env("ZHIKU_SERVE_TIMEOUT_MS").filter(|v| !v.is_empty()) {
            s.timeout_ms = v
                .parse()
                .with_context(|| format!("ZHIKU_SERVE_TIMEOUT_MS={v:?} is not a number"))?;
            origins.push(("serve.timeout_ms".into(), "ZHIKU_SERVE_TIMEOUT_MS".into()));
        }
        if s.max_k == 0 || s.max_query_chars == 0 || s.max_concurrent == 0 || s.timeout_ms == 0 {
            bail!(
                "[serve] max_k, max_query_chars, max_concurrent and timeout_ms must be at least 1"
            );
        }
        for rule in &s.tokens {
            if rule.sha256.is_some() == rule.env.is_some() {
                bail!(
                    "[[serve.tokens]] {:?}: give exactly one of sha256 or env",
                    rule.name
                );
            }
            if rule.scopes.is_empty() {
                bail!("[[serve.tokens]] {:?}: scopes must not be empty", rule.name);
            }
        }
        Ok(s)
    }
}

/// Hex SHA-256 of a token, as `sha256 = …` expects.
pub fn token_digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Maps bearer tokens to callers.
#[derive(Debug, Clone)]
pub struct Tokens {
    by_digest: Vec<(String, Caller)>,
    anonymous: Option<Caller>,
}

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// No token where one is required.
    Missing,
    /// A token that matches no rule.
    Unknown,
}

impl Tokens {
    /// Reads every rule (tokens from the environment now, so a missing variable fails at start).
    /// Without rules, `anonymous` (if any) is who every request is.
    pub fn from_rules(rules: &[TokenRule], anonymous: Option<Caller>) -> Result<Self> {
        let mut by_digest = Vec::new();
        for rule in rules {
            let digest = match (&rule.sha256, &rule.env) {
                (Some(hex), None) => {
                    let hex = hex.trim().to_ascii_lowercase();
                    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                        bail!(
                            "[[serve.tokens]] {:?}: sha256 must be 64 hex digits",
                            rule.name
                        );
                    }
                    hex
                }
                (None, Some(var)) => {
                    let token = std::env::var(var).ok().filter(|t| !t.is_empty());
                    let Some(token) = token else {
                        bail!(
                            "[[serve.tokens]] {:?}: the environment variable {var} is not set",
                            rule.name
                        );
                    };
                    token_digest(&token)
                }
                _ => bail!("[[serve.tokens]] {:?}: give sha256 or env", rule.name),
            };
            let scopes = rule
                .scopes
                .iter()
                .map(|s| Ok(Scope::new(s)?))
                .collect::<Result<Vec<_>>>()?;
            by_digest.push((
                digest,
                Caller {
                    name: rule.name.clone(),
                    scopes,
                    write: rule.write,
                },
            ));
        }
        Ok(Self {
            anonymous: if by_digest.is_empty() {
                anonymous
            } else {
                None
            },
            by_digest,
        })
    }

    /// True when requests need a token.
    pub fn required(&self) -> bool {
        self.anonymous.is_none()
    }

    /// The caller for an `Authorization` header value (or its absence).
    pub fn admit(&self, authorization: Option<&str>) -> Result<Caller, Denied> {
        let token = authorization.and_then(|h| {
            let (scheme, rest) = h.trim().split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| rest.trim())
                .filter(|t| !t.is_empty())
        });
        match (token, &self.anonymous) {
            (None, Some(anonymous)) => Ok(anonymous.clone()),
            (None, None) => Err(Denied::Missing),
            (Some(token), _) => {
                let digest = token_digest(token);
                // Compare every entry in full so timing says nothing about which one matched.
                let mut found = None;
                for (d, caller) in &self.by_digest {
                    let same = d
                        .bytes()
                        .zip(digest.bytes())
                        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                        == 0;
                    if same && found.is_none() {
                        found = Some(caller.clone());
                    }
                }
                found.ok_or(Denied::Unknown)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, token: &str, scopes: &[&str], write: bool) -> TokenRule {
        TokenRule {
            name: name.into(),
            sha256: Some(token_digest(token)),
            env: None,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            write,
        }
    }

    #[test]
    fn tokens_map_to_their_scopes_and_nothing_else() {
        let tokens = Tokens::from_rules(
            &[
                rule("a", "tok-a", &["a"], false),
                rule("b", "tok-b", &["b"], true),
            ],
            None,
        )
        .unwrap();
        assert!(tokens.required());
        let a = tokens.admit(Some("Bearer tok-a")).unwrap();
        assert_eq!(a.scopes, vec![Scope::new("a").unwrap()]);
        assert!(!a.write);
        assert!(tokens.admit(Some("bearer  tok-b ")).unwrap().write);
        assert_eq!(tokens.admit(None), Err(Denied::Missing));
        assert_eq!(tokens.admit(Some("Bearer nope")), Err(Denied::Unknown));
        assert_eq!(tokens.admit(Some("Basic tok-a")), Err(Denied::Missing));
    }

    #[test]
    fn anonymous_only_without_tokens() {
        let anon = Caller {
            name: "anonymous".into(),
            scopes: vec![Scope::new("public").unwrap()],
            write: false,
        };
        let open = Tokens::from_rules(&[], Some(anon.clone())).unwrap();
        assert_eq!(open.admit(None).unwrap(), anon);
        let closed = Tokens::from_rules(&[rule("a", "t", &["a"], false)], Some(anon)).unwrap();
        assert_eq!(closed.admit(None), Err(Denied::Missing));
    }

    #[test]
    fn rules_need_exactly_one_secret_and_scopes() {
        let mut origins = Vec::new();
        let table: ServeTable =
            toml::from_str("[[tokens]]\nname = \"x\"\nscopes = [\"a\"]\n").unwrap();
        assert!(ServeSettings::resolve(Some(&table), &|_| None, &mut origins).is_err());
        let table: ServeTable = toml::from_str(&format!(
            "[[tokens]]\nname = \"x\"\nsha256 = \"{}\"\nscopes = []\n",
            token_digest("t")
        ))
        .unwrap();
        assert!(ServeSettings::resolve(Some(&table), &|_| None, &mut origins).is_err());
    }
}
