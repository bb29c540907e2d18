//! `[serve]` in `zhiku.toml`: where the server listens, its limits, and the bearer tokens that
//! decide each caller's scopes.
//!
//! ```toml
//! [serve]
//! bind = "127.0.0.1:7878"
//! timeout_ms = 30000
//! allowed_hosts = ["kb.example.com"]   # names clients use to reach the server (Host check)
//! header_timeout_ms = 10000            # connection limits, see `conn`
//! max_connections = 512
//! traces_max_bytes = 16777216          # trace rotation of the store's trace log
//! mcp_max_sessions = 256               # MCP sessions open at once, in all (503 beyond)
//! mcp_max_sessions_per_token = 16      # … per token (or for anonymous callers; 429 beyond)
//! mcp_session_idle_ms = 300000         # an MCP session idle this long is closed
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
//! People signed in at the company's OpenID Connect provider are admitted by the JWT it
//! issues, each held to the readers of every document:
//!
//! ```toml
//! [serve.oidc]
//! issuer = "https://login.corp.example/realms/corp"  # exactly as the tokens' `iss`
//! audience = "urn:zhiku"          # the tokens' `aud` must name it
//! scopes = ["default", "hr"]      # what a signed-in person reads (held to documents' readers)
//! user_claim = "email"            # default "sub"
//! groups_claim = "groups"         # a path: "realm_access.roles", "https://corp.example/groups"
//! write_groups = ["kb-editors"]   # may add and remove documents in those scopes
//! operator_groups = ["kb-ops"]    # see every run's trace, not only their own
//! client_id = "zhiku-web"         # the web page signs in with it (code + PKCE, public client)
//! ```
//!
//! `/metrics` has its own token (`metrics_token_sha256 = "…"` or `metrics_token_env = "VAR"`);
//! without one it answers loopback requests only.
//!
//! Tokens never sit in the file in clear. Without any token the server admits anonymous
//! callers, read-only, with the configuration's trusted scopes, and only on a loopback address.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;

use zhiku_domain::ports::{IdentityError, IdentityVerifier};
use zhiku_domain::{Principal, Scope};

use zhiku_service::Caller;

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
    /// The person the token acts for (`sub` or e-mail as documents name them in `user:…`):
    /// every read is held to the readers of each document. Without it (and without `groups`)
    /// the token reads its scopes whole, as a service does.
    #[serde(default)]
    pub user: Option<String>,
    /// The person's groups (`group:…` in documents' readers).
    #[serde(default)]
    pub groups: Vec<String>,
    /// The person runs the service: sees every run's trace in the token's scopes.
    #[serde(default)]
    pub operator: bool,
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
    header_timeout_ms: Option<u64>,
    body_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    max_connections: Option<usize>,
    shutdown_timeout_ms: Option<u64>,
    traces_max_bytes: Option<u64>,
    traces_keep_files: Option<usize>,
    traces_max_age_days: Option<u64>,
    mcp_max_sessions: Option<usize>,
    mcp_max_sessions_per_token: Option<usize>,
    mcp_session_idle_ms: Option<u64>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    tokens: Vec<TokenRule>,
    oidc: Option<OidcTable>,
    metrics_token_sha256: Option<String>,
    metrics_token_env: Option<String>,
}

/// `[serve.oidc]`: people signed in at an OpenID Connect provider.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OidcTable {
    /// The provider's issuer, exactly as its tokens state it.
    pub issuer: String,
    /// The audience this server answers to.
    pub audience: String,
    /// Scopes a signed-in person reads, held to each document's readers.
    pub scopes: Vec<String>,
    /// The claim naming the person (default `sub`).
    pub user_claim: Option<String>,
    /// The claim listing their groups, as a path (default `groups`).
    pub groups_claim: Option<String>,
    /// Groups whose people may add and remove documents in `scopes`.
    #[serde(default)]
    pub write_groups: Vec<String>,
    /// Groups whose people see every run's trace in `scopes`.
    #[serde(default)]
    pub operator_groups: Vec<String>,
    /// Accepted signature algorithms (asymmetric only; default RS, PS, ES and EdDSA).
    pub algorithms: Option<Vec<String>>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds (default 60).
    pub leeway_s: Option<u64>,
    /// How long the provider's keys are kept before they are fetched again (default 3600).
    pub keys_max_age_s: Option<u64>,
    /// The keys' URL, when not from the issuer's discovery document.
    pub jwks_uri: Option<String>,
    /// The web page's client at the provider (a public client: code + PKCE, no secret);
    /// without it the page has no sign-in button.
    pub client_id: Option<String>,
    /// The OAuth scopes the page asks for at sign-in (default `openid email groups`; name
    /// them as the provider does, e.g. `openid email profile` where groups come by default).
    pub sign_in_scope: Option<String>,
}

/// The resolved server settings.
#[derive(Debug, Clone, Serialize)]
pub struct ServeSettings {
    /// Where the server listens (`host:port`; `--bind` overrides it).
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
    /// Time a connection has to send a whole request head, from its first byte (or, for a new
    /// connection, from its acceptance); closed beyond.
    pub header_timeout_ms: u64,
    /// Time a request has to send its whole body; 408 beyond.
    pub body_timeout_ms: u64,
    /// Time a connection may stay open with no request in progress (keep-alive); closed beyond.
    pub idle_timeout_ms: u64,
    /// Connections open at once; a new one beyond is answered 503 and closed at once.
    pub max_connections: usize,
    /// On SIGTERM/SIGINT: how long in-flight requests (and an ingest) may take to finish.
    pub shutdown_timeout_ms: u64,
    /// Answer traces: the current file `traces.jsonl` is rotated beyond this size.
    pub traces_max_bytes: u64,
    /// Rotated trace files kept (the oldest are removed beyond).
    pub traces_keep_files: usize,
    /// Rotated trace files older than this are removed (0: no age limit).
    pub traces_max_age_days: u64,
    /// MCP sessions (`/mcp`) open at once in all; a new one beyond is refused with 503 and
    /// `Retry-After`. Each holds a session worker and its buffers (about 50 KiB) until it is
    /// closed or idles out.
    pub mcp_max_sessions: usize,
    /// MCP sessions one token (or the anonymous caller) may hold open at once; a new one
    /// beyond is refused with 429 and `Retry-After`, so one client cannot take them all.
    pub mcp_max_sessions_per_token: usize,
    /// An MCP session with no request for this long is closed (and its slot freed).
    pub mcp_session_idle_ms: u64,
    /// Host names (or `host:port`) accepted in `Host` besides IP addresses and `localhost`:
    /// DNS-rebinding protection for a server reached by name.
    pub allowed_hosts: Vec<String>,
    /// The bearer tokens and the caller each one makes.
    #[serde(skip)]
    pub tokens: Vec<TokenRule>,
    /// People from an OpenID Connect provider.
    #[serde(skip)]
    pub oidc: Option<OidcTable>,
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
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
            max_connections: 512,
            shutdown_timeout_ms: 30_000,
            traces_max_bytes: 16 * 1024 * 1024,
            traces_keep_files: 8,
            traces_max_age_days: 30,
            mcp_max_sessions: 256,
            mcp_max_sessions_per_token: 16,
            mcp_session_idle_ms: 300_000,
            allowed_hosts: Vec::new(),
            tokens: Vec::new(),
            oidc: None,
            metrics_token_sha256: None,
            metrics_token_env: None,
        }
    }
}

impl ServeSettings {
    /// The bounds every transport applies to a query.
    pub fn query_limits(&self) -> zhiku_service::QueryLimits {
        zhiku_service::QueryLimits {
            max_query_chars: self.max_query_chars,
            max_k: self.max_k,
        }
    }
}

impl ServeSettings {
    /// The settings `table` (the merged `[serve]` of every configuration layer) asks for, over
    /// the defaults, checked.
    pub fn from_table(table: ServeTable) -> Result<Self> {
        let d = Self::default();
        let t = table;
        let s = Self {
            bind: t.bind.unwrap_or(d.bind),
            max_body_bytes: t.max_body_bytes.unwrap_or(d.max_body_bytes),
            max_k: t.max_k.unwrap_or(d.max_k),
            max_query_chars: t.max_query_chars.unwrap_or(d.max_query_chars),
            timeout_ms: t.timeout_ms.unwrap_or(d.timeout_ms),
            max_concurrent: t.max_concurrent.unwrap_or(d.max_concurrent),
            header_timeout_ms: t.header_timeout_ms.unwrap_or(d.header_timeout_ms),
            body_timeout_ms: t.body_timeout_ms.unwrap_or(d.body_timeout_ms),
            idle_timeout_ms: t.idle_timeout_ms.unwrap_or(d.idle_timeout_ms),
            max_connections: t.max_connections.unwrap_or(d.max_connections),
            shutdown_timeout_ms: t.shutdown_timeout_ms.unwrap_or(d.shutdown_timeout_ms),
            traces_max_bytes: t.traces_max_bytes.unwrap_or(d.traces_max_bytes),
            traces_keep_files: t.traces_keep_files.unwrap_or(d.traces_keep_files),
            traces_max_age_days: t.traces_max_age_days.unwrap_or(d.traces_max_age_days),
            mcp_max_sessions: t.mcp_max_sessions.unwrap_or(d.mcp_max_sessions),
            mcp_max_sessions_per_token: t
                .mcp_max_sessions_per_token
                .unwrap_or(d.mcp_max_sessions_per_token),
            mcp_session_idle_ms: t.mcp_session_idle_ms.unwrap_or(d.mcp_session_idle_ms),
            allowed_hosts: t.allowed_hosts,
            tokens: t.tokens,
            oidc: t.oidc,
            metrics_token_sha256: t.metrics_token_sha256,
            metrics_token_env: t.metrics_token_env,
        };
        if s.max_k == 0
            || s.max_query_chars == 0
            || s.max_concurrent == 0
            || s.timeout_ms == 0
            || s.header_timeout_ms == 0
            || s.body_timeout_ms == 0
            || s.idle_timeout_ms == 0
            || s.max_connections == 0
            || s.traces_max_bytes == 0
        {
            bail!(
                "[serve] max_k, max_query_chars, max_concurrent, timeout_ms, header_timeout_ms, body_timeout_ms, idle_timeout_ms, max_connections and traces_max_bytes must be at least 1"
            );
        }
        if s.mcp_max_sessions == 0
            || s.mcp_max_sessions_per_token == 0
            || s.mcp_session_idle_ms == 0
        {
            bail!(
                "[serve] mcp_max_sessions, mcp_max_sessions_per_token and mcp_session_idle_ms must be at least 1"
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
        if let Some(o) = &s.oidc {
            if o.scopes.is_empty() {
                bail!("[serve.oidc] scopes must not be empty");
            }
            for s in &o.scopes {
                Scope::new(s).map_err(|e| anyhow::anyhow!("[serve.oidc] scopes: {e}"))?;
            }
        }
        Ok(s)
    }
}

impl ServeSettings {
    /// Whether a request's `Host` header names this server: DNS-rebinding protection.
    ///
    /// A rebinding page reaches the server under the attacker's *name*, so any IP literal is
    /// accepted (it can only come from a client that chose the address), as is `localhost`;
    /// other names only when listed in `allowed_hosts` (`name` for any port, `name:port` for
    /// one). The port is otherwise not compared: rebinding swaps the address behind a name,
    /// never the name, and port mappings (containers, proxies) legitimately change it.
    pub fn host_allowed(&self, host: Option<&str>) -> bool {
        let Some(authority) = host.and_then(|h| h.parse::<axum::http::uri::Authority>().ok())
        else {
            return false;
        };
        // A Host is `name[:port]`: no user information (`evil@127.0.0.1` names evil's
        // credentials at 127.0.0.1 to a parser, and something else to a proxy), and a port, if
        // any, of digits only (`localhost:evil` parses, its port does not).
        let port_ok = match authority.as_str().strip_prefix(authority.host()) {
            Some("") => true,
            Some(rest) => rest
                .strip_prefix(':')
                .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())),
            None => false, // user information before the host
        };
        if !port_ok {
            return false;
        }
        let name = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let name = name.trim_end_matches('.');
        if name.parse::<std::net::IpAddr>().is_ok() || name == "localhost" {
            return true;
        }
        self.allowed_hosts.iter().any(|allowed| {
            let allowed = allowed.trim().to_ascii_lowercase();
            match allowed.parse::<axum::http::uri::Authority>() {
                Ok(a) => {
                    a.host().trim_end_matches('.') == name
                        && a.port_u16().is_none_or(|p| Some(p) == authority.port_u16())
                }
                Err(_) => allowed == name,
            }
        })
    }
}

/// Hex SHA-256 of a token, as `sha256 = …` expects.
pub fn token_digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Maps bearer tokens to callers: the configured tokens, then people's JWTs.
#[derive(Debug, Clone)]
pub struct Tokens {
    by_digest: Vec<(String, Caller)>,
    anonymous: Option<Caller>,
    people: Option<People>,
}

/// People admitted by their identity provider's tokens, and what a signed-in person may do.
#[derive(Clone)]
pub struct People {
    verifier: Arc<dyn IdentityVerifier>,
    scopes: Vec<Scope>,
    write_groups: Vec<String>,
    operator_groups: Vec<String>,
    /// The web page's client at the provider and what it asks for.
    pub(crate) sign_in: Option<(String, String)>,
}

impl std::fmt::Debug for People {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("People")
            .field("verifier", &self.verifier.name())
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl People {
    /// People `verifier` vouches for, with what `table` grants them.
    pub fn new(verifier: Arc<dyn IdentityVerifier>, table: &OidcTable) -> Result<Self> {
        Ok(Self {
            verifier,
            scopes: table
                .scopes
                .iter()
                .map(|s| Ok(Scope::new(s)?))
                .collect::<Result<_>>()?,
            write_groups: table.write_groups.clone(),
            operator_groups: table.operator_groups.clone(),
            sign_in: table.client_id.clone().map(|id| {
                let scope = table
                    .sign_in_scope
                    .clone()
                    .unwrap_or_else(|| "openid email groups".into());
                (id, scope)
            }),
        })
    }

    /// The verifier.
    pub(crate) fn verifier(&self) -> &Arc<dyn IdentityVerifier> {
        &self.verifier
    }

    /// The caller a verified `credential` makes (this may ask the provider for its keys: call
    /// it off the async executor).
    pub fn admit(&self, credential: &str) -> Result<Caller, Denied> {
        let id = self.verifier.verify(credential).map_err(|e| match e {
            IdentityError::Refused(reason) => Denied::Refused(reason),
            IdentityError::Unavailable { message, .. } => Denied::ProviderUnavailable(message),
        })?;
        let in_any = |groups: &[String]| groups.iter().any(|g| id.principal.groups().contains(g));
        Ok(Caller {
            name: format!("user:{}", id.principal.user()),
            scopes: self.scopes.clone(),
            write: in_any(&self.write_groups),
            operator: in_any(&self.operator_groups),
            principal: Some(id.principal),
        })
    }
}

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// No token where one is required.
    Missing,
    /// A token that matches no rule.
    Unknown,
    /// A JWT the identity provider's keys and rules refuse (why, never the token).
    Refused(String),
    /// The identity provider cannot be reached and no cached key decides.
    ProviderUnavailable(String),
}

/// What [`Tokens::admit`] decided without asking anyone.
#[derive(Debug)]
pub enum Admission {
    /// A configured token, or the anonymous caller.
    Caller(Caller),
    /// Not a configured token, but a JWT for the identity provider to verify.
    Person(People, String),
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
            let principal = match (&rule.user, rule.groups.is_empty()) {
                (None, true) => None,
                (None, false) => bail!(
                    "[[serve.tokens]] {:?}: groups need the user they belong to (user = \"…\")",
                    rule.name
                ),
                (Some(user), _) => Some(
                    Principal::new(user, &rule.groups)
                        .map_err(|e| anyhow::anyhow!("[[serve.tokens]] {:?}: {e}", rule.name))?,
                ),
            };
            by_digest.push((
                digest,
                Caller {
                    name: rule.name.clone(),
                    scopes,
                    write: rule.write,
                    principal,
                    operator: rule.operator,
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
            people: None,
        })
    }

    /// These tokens, and people `people` admits (no anonymous caller then).
    pub fn with_people(mut self, people: People) -> Self {
        self.anonymous = None;
        self.people = Some(people);
        self
    }

    /// The people admitted by their provider's tokens, when configured.
    pub fn people(&self) -> Option<&People> {
        self.people.as_ref()
    }

    /// True when requests need a token.
    pub fn required(&self) -> bool {
        self.anonymous.is_none()
    }

    /// The caller for an `Authorization` header value (or its absence), or the person's JWT to
    /// verify (see [`People::admit`]).
    pub fn admission(&self, authorization: Option<&str>) -> Result<Admission, Denied> {
        match (
            self.admit(authorization),
            &self.people,
            bearer(authorization),
        ) {
            (Err(Denied::Unknown), Some(people), Some(token)) if token.split('.').count() >= 3 => {
                Ok(Admission::Person(people.clone(), token.to_string()))
            }
            (result, _, _) => result.map(Admission::Caller),
        }
    }

    /// The caller a configured token (or its absence) makes; people's JWTs are `Unknown` here.
    pub fn admit(&self, authorization: Option<&str>) -> Result<Caller, Denied> {
        match (bearer(authorization), &self.anonymous) {
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

/// The token of an `Authorization: Bearer …` header value.
fn bearer(authorization: Option<&str>) -> Option<&str> {
    authorization.and_then(|h| {
        let (scheme, rest) = h.trim().split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| rest.trim())
            .filter(|t| !t.is_empty())
    })
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
            user: None,
            groups: Vec::new(),
            operator: false,
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
    fn a_token_with_a_user_acts_for_that_person() {
        let person = TokenRule {
            user: Some("li.lei@corp".into()),
            groups: vec!["hr".into()],
            ..rule("li", "tok-li", &["a"], false)
        };
        let tokens =
            Tokens::from_rules(&[person, rule("svc", "tok-svc", &["a"], false)], None).unwrap();
        let li = tokens.admit(Some("Bearer tok-li")).unwrap();
        let p = li.principal.expect("a person");
        assert_eq!(p.user(), "li.lei@corp");
        assert!(p.groups().contains("hr"));
        assert!(
            tokens
                .admit(Some("Bearer tok-svc"))
                .unwrap()
                .principal
                .is_none()
        );
        let orphan = TokenRule {
            groups: vec!["hr".into()],
            ..rule("x", "tok-x", &["a"], false)
        };
        assert!(Tokens::from_rules(&[orphan], None).is_err());
        let bad = TokenRule {
            user: Some(" spaced ".into()),
            ..rule("y", "tok-y", &["a"], false)
        };
        assert!(Tokens::from_rules(&[bad], None).is_err());
    }

    #[test]
    fn anonymous_only_without_tokens() {
        let anon = Caller {
            name: "anonymous".into(),
            scopes: vec![Scope::new("public").unwrap()],
            write: false,
            principal: None,
            operator: false,
        };
        let open = Tokens::from_rules(&[], Some(anon.clone())).unwrap();
        assert_eq!(open.admit(None).unwrap(), anon);
        let closed = Tokens::from_rules(&[rule("a", "t", &["a"], false)], Some(anon)).unwrap();
        assert_eq!(closed.admit(None), Err(Denied::Missing));
    }

    #[test]
    fn only_addresses_localhost_and_listed_names_are_accepted_hosts() {
        let s = ServeSettings {
            allowed_hosts: vec!["kb.example.com".into(), "Other.example:8443".into()],
            ..ServeSettings::default()
        };
        for ok in [
            "127.0.0.1:7878",
            "localhost",
            "LOCALHOST:7878",
            "localhost.:1",
            "[::1]:7878",
            "10.1.2.3",
            "kb.example.com",
            "kb.example.com:443",
            "other.example:8443",
        ] {
            assert!(s.host_allowed(Some(ok)), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7878",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "other.example",
            "other.example:80",
            "kb.example.com.evil",
            "",
            "a b",
            "evil@127.0.0.1",
            "evil@localhost:7878",
            "localhost:evil",
            "127.0.0.1:",
        ] {
            assert!(!s.host_allowed(Some(bad)), "{bad}");
        }
        assert!(!s.host_allowed(None));
    }

    #[test]
    fn rules_need_exactly_one_secret_and_scopes() {
        let table: ServeTable =
            toml::from_str("[[tokens]]\nname = \"x\"\nscopes = [\"a\"]\n").unwrap();
        assert!(ServeSettings::from_table(table).is_err());
        let table: ServeTable = toml::from_str(&format!(
            "[[tokens]]\nname = \"x\"\nsha256 = \"{}\"\nscopes = []\n",
            token_digest("t")
        ))
        .unwrap();
        assert!(ServeSettings::from_table(table).is_err());
    }
}
