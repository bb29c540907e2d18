//! The provider's published keys, fetched, cached and fetched again.

use std::io::Read;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use zhiku_domain::ports::IdentityError;

use crate::error::{refused, unavailable};

/// Largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: u64 = 1 << 20;
/// Most keys kept from one key set.
const MAX_KEYS: usize = 64;
/// How long past their maximum age stale keys still decide while the provider cannot be
/// reached (a provider outage should not lock everyone out at once).
const STALE_GRACE: Duration = Duration::from_secs(6 * 3600);

#[derive(Debug)]
struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    key: DecodingKey,
}

#[derive(Debug)]
struct KeySet {
    keys: Vec<Key>,
    fetched: Instant,
}

/// The keys, with the times they were fetched and last asked for.
#[derive(Debug)]
pub(crate) struct KeyCache {
    set: RwLock<Option<KeySet>>,
    /// When a fetch was last tried; held while fetching, so concurrent misses wait for one.
    last_try: Mutex<Option<Instant>>,
    max_age: Duration,
    refresh_interval: Duration,
}

impl KeyCache {
    pub(crate) fn new(max_age: Duration, refresh_interval: Duration) -> Self {
        Self {
            set: RwLock::new(None),
            last_try: Mutex::new(None),
            max_age,
            refresh_interval,
        }
    }

    /// The key that verifies a token of `alg` with key ID `kid`, fetching the keys when none
    /// are held, when they are older than their maximum age, or when `kid` is unknown.
    pub(crate) fn key_for(
        &self,
        agent: &ureq::Agent,
        jwks_uri: &str,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<DecodingKey, IdentityError> {
        let age = self.age();
        if age.is_none_or(|a| a > self.max_age) {
            match self.refresh(agent, jwks_uri) {
                Ok(_) => {}
                Err(e) if age.is_some_and(|a| a <= self.max_age + STALE_GRACE) => {
                    tracing::warn!(target: "zhiku::access", error = %e, "identity provider keys are stale and could not be fetched; using the last ones");
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(found) = self.find(kid, alg)? {
            return Ok(found);
        }
        // An unknown key ID: the provider may have rotated its keys.
        if self.refresh(agent, jwks_uri)?
            && let Some(found) = self.find(kid, alg)?
        {
            return Ok(found);
        }
        Err(refused(match kid {
            Some(kid) => format!(
                "no key {:?} is published by the provider",
                kid.chars().take(64).collect::<String>()
            ),
            None => "no key ID, and the provider publishes no single key for its algorithm".into(),
        }))
    }

    fn age(&self) -> Option<Duration> {
        let set = self.set.read().unwrap_or_else(|e| e.into_inner());
        set.as_ref().map(|s| s.fetched.elapsed())
    }

    fn find(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Option<DecodingKey>, IdentityError> {
        let set = self.set.read().unwrap_or_else(|e| e.into_inner());
        let Some(set) = set.as_ref() else {
            return Ok(None);
        };
        let fits = |k: &&Key| k.key.family() == alg.family() && k.alg.is_none_or(|a| a == alg);
        let key = match kid {
            Some(kid) => {
                let Some(key) = set.keys.iter().find(|k| k.kid.as_deref() == Some(kid)) else {
                    return Ok(None);
                };
                if !fits(&key) {
                    return Err(refused("the algorithm does not fit the published key"));
                }
                key
            }
            None => {
                let mut fitting = set.keys.iter().filter(fits);
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => only,
                    _ => return Ok(None),
                }
            }
        };
        Ok(Some(key.key.clone()))
    }

    /// Fetches the keys unless a fetch was tried within the refresh interval; true when it
    /// fetched. A failed fetch keeps the keys held.
    pub(crate) fn refresh(
        &self,
        agent: &ureq::Agent,
        jwks_uri: &str,
    ) -> Result<bool, IdentityError> {
        let mut last = self.last_try.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < self.refresh_interval) {
            return Ok(false);
        }
        *last = Some(Instant::now());
        let doc = get_json(agent, jwks_uri).map_err(unavailable)?;
        let keys = parse_key_set(&doc).map_err(|e| unavailable(format!("{jwks_uri}: {e}")))?;
        tracing::info!(target: "zhiku::access", jwks_uri, keys = keys.len(), "identity provider keys fetched");
        *self.set.write().unwrap_or_else(|e| e.into_inner()) = Some(KeySet {
            keys,
            fetched: Instant::now(),
        });
        Ok(true)
    }
}

/// The signing keys of a JWK set: keys for encryption, symmetric keys and keys of unknown
/// types are left out (a symmetric key in the set must never verify anything).
fn parse_key_set(doc: &Value) -> Result<Vec<Key>, String> {
    let Some(entries) = doc.get("keys").and_then(Value::as_array) else {
        return Err("not a JWK set (no keys array)".into());
    };
    let mut keys = Vec::new();
    for entry in entries.iter().take(MAX_KEYS) {
        let Ok(jwk) = serde_json::from_value::<Jwk>(entry.clone()) else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        if key.family() == jsonwebtoken::AlgorithmFamily::Hmac {
            continue;
        }
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(a) => match a.to_string().parse::<Algorithm>() {
                Ok(alg) => Some(alg),
                Err(_) => continue,
            },
        };
        keys.push(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            key,
        });
    }
    if keys.is_empty() {
        return Err("no signing key in the set".into());
    }
    Ok(keys)
}

/// GETs a JSON document of at most [`MAX_DOCUMENT_BYTES`].
pub(crate) fn get_json(agent: &ureq::Agent, url: &str) -> Result<Value, String> {
    let response = agent
        .get(url)
        .set("Accept", "application/json")
        .call()
        .map_err(|e| format!("{url}: {e}"))?;
    let mut body = Vec::new();
    response
        .into_reader()
        .take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|e| format!("{url}: {e}"))?;
    if body.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(format!("{url}: longer than {MAX_DOCUMENT_BYTES} bytes"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))
}
