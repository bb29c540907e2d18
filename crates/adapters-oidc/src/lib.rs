//! Identity from an OpenID Connect provider: a bearer JWT verified against the keys the
//! provider publishes, read as the person it names.
//!
//! ```text
//! issuer ─► /.well-known/openid-configuration ─► jwks_uri ─► keys (cached, refreshed)
//! Bearer JWT ─► header: alg on the allow-list, key by kid ─► signature ─► iss, aud, exp, nbf
//!            ─► user claim, groups claim ─► Principal
//! ```
//!
//! Only asymmetric algorithms are ever accepted (the allow-list refuses `HS*` when it is
//! configured), so neither an unsigned token nor one MACed with the provider's public key as
//! the secret can pass. A key ID the cache does not know makes it fetch the provider's keys
//! again, at most once per refresh interval (rotation without a restart; no amplification
//! from made-up IDs). The keys are also fetched again when older than their maximum age, so a
//! key the provider withdrew stops verifying within that age.

mod claims;
mod error;
mod keys;

use std::sync::Mutex;
use std::time::Duration;

use jsonwebtoken::{Algorithm, Validation, errors::ErrorKind};
use serde_json::Value;
use zhiku_domain::ports::{BrowserSignIn, Identity, IdentityError, IdentityVerifier};

use error::{refused, unavailable};
use keys::KeyCache;

/// Longest credential read at all (a JWT with a few hundred groups is a few KiB).
pub const MAX_CREDENTIAL_BYTES: usize = 16 * 1024;

/// The asymmetric algorithms accepted unless configured otherwise.
pub const DEFAULT_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// How to trust one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct OidcSettings {
    /// The issuer, exactly as the provider's tokens and discovery document state it.
    pub issuer: String,
    /// Audiences this server answers to (the token's `aud` must hold one of them).
    pub audiences: Vec<String>,
    /// Accepted signature algorithms (asymmetric only), e.g. `RS256`, `ES256`, `EdDSA`.
    pub algorithms: Vec<String>,
    /// The claim naming the person: `sub`, `email`, `preferred_username`, or a path.
    pub user_claim: String,
    /// The claim listing the person's groups, as a path (`groups`, `realm_access.roles`); a
    /// claim name containing dots (`https://corp.example/groups`) is looked up whole first.
    pub groups_claim: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// How long fetched keys are trusted before they are fetched again.
    pub keys_max_age: Duration,
    /// Least time between two fetches of the keys (unknown key IDs, stale keys).
    pub refresh_interval: Duration,
    /// Timeout of one request to the provider.
    pub timeout: Duration,
    /// Where the keys are, when not from discovery.
    pub jwks_uri: Option<String>,
}

impl OidcSettings {
    /// Settings for `issuer` and `audience` with the defaults: `sub` names the person,
    /// `groups` lists the groups, 60 s skew, keys kept an hour and refreshed at most every 30 s.
    pub fn new(issuer: &str, audience: &str) -> Self {
        Self {
            issuer: issuer.to_string(),
            audiences: vec![audience.to_string()],
            algorithms: DEFAULT_ALGORITHMS.iter().map(|a| a.to_string()).collect(),
            user_claim: "sub".into(),
            groups_claim: Some("groups".into()),
            leeway: Duration::from_secs(60),
            keys_max_age: Duration::from_secs(3600),
            refresh_interval: Duration::from_secs(30),
            timeout: Duration::from_secs(5),
            jwks_uri: None,
        }
    }
}

/// What discovery says of the provider, for the web page's sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The issuer.
    pub issuer: String,
    /// Where the keys are.
    pub jwks_uri: String,
    /// Where a browser signs in (authorization code flow).
    pub authorization_endpoint: Option<String>,
    /// Where a code is exchanged for tokens.
    pub token_endpoint: Option<String>,
    /// Where a browser signs out.
    pub end_session_endpoint: Option<String>,
}

/// Verifies one provider's JWTs.
#[derive(Debug)]
pub struct OidcVerifier {
    name: String,
    settings: OidcSettings,
    algorithms: Vec<Algorithm>,
    agent: ureq::Agent,
    endpoints: Mutex<Option<Endpoints>>,
    keys: KeyCache,
}

impl OidcVerifier {
    /// A verifier for `settings`; checks them, contacts no one (keys are fetched on first use).
    pub fn new(settings: OidcSettings) -> Result<Self, String> {
        let issuer = settings.issuer.trim();
        if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
            return Err(format!("issuer {issuer:?} is not an http(s) URL"));
        }
        if settings.audiences.iter().all(|a| a.trim().is_empty()) {
            return Err("give the audience this server answers to (audience = \"…\")".into());
        }
        if settings.user_claim.trim().is_empty() {
            return Err("user_claim is empty".into());
        }
        if settings.algorithms.is_empty() {
            return Err("algorithms is empty".into());
        }
        let algorithms = settings
            .algorithms
            .iter()
            .map(|a| parse_algorithm(a))
            .collect::<Result<Vec<_>, _>>()?;
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(settings.timeout.min(Duration::from_secs(5)))
            .timeout(settings.timeout)
            .redirects(0)
            .build();
        Ok(Self {
            name: format!("oidc:{issuer}"),
            keys: KeyCache::new(settings.keys_max_age, settings.refresh_interval),
            settings,
            algorithms,
            agent,
            endpoints: Mutex::new(None),
        })
    }

    /// The provider's endpoints, from its discovery document (fetched once, then kept).
    pub fn endpoints(&self) -> Result<Endpoints, IdentityError> {
        let mut cached = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = cached.as_ref() {
            return Ok(e.clone());
        }
        let found = match &self.settings.jwks_uri {
            Some(jwks_uri) => Endpoints {
                issuer: self.settings.issuer.clone(),
                jwks_uri: jwks_uri.clone(),
                authorization_endpoint: None,
                token_endpoint: None,
                end_session_endpoint: None,
            },
            None => self.discover()?,
        };
        *cached = Some(found.clone());
        Ok(found)
    }

    fn discover(&self) -> Result<Endpoints, IdentityError> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.settings.issuer.trim_end_matches('/')
        );
        let doc = keys::get_json(&self.agent, &url).map_err(unavailable)?;
        let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
        let issuer = text("issuer").unwrap_or_default();
        if issuer != self.settings.issuer {
            return Err(unavailable(format!(
                "{url} names the issuer {issuer:?}, not {:?} as configured",
                self.settings.issuer
            )));
        }
        let jwks_uri = text("jwks_uri")
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
            .ok_or_else(|| unavailable(format!("{url} gives no http(s) jwks_uri")))?;
        Ok(Endpoints {
            issuer,
            jwks_uri,
            authorization_endpoint: text("authorization_endpoint"),
            token_endpoint: text("token_endpoint"),
            end_session_endpoint: text("end_session_endpoint"),
        })
    }

    /// Fetches the keys now unless fetched within the refresh interval; true when fetched.
    pub fn refresh_keys(&self) -> Result<bool, IdentityError> {
        let jwks_uri = self.endpoints()?.jwks_uri;
        self.keys.refresh(&self.agent, &jwks_uri)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut v = Validation::new(alg);
        v.leeway = self.settings.leeway.as_secs();
        v.validate_nbf = true;
        v.set_issuer(&[&self.settings.issuer]);
        v.set_audience(&self.settings.audiences);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v
    }
}

impl IdentityVerifier for OidcVerifier {
    fn name(&self) -> &str {
        &self.name
    }

    fn verify(&self, credential: &str) -> Result<Identity, IdentityError> {
        if credential.len() > MAX_CREDENTIAL_BYTES {
            return Err(refused(format!("longer than {MAX_CREDENTIAL_BYTES} bytes")));
        }
        match credential.split('.').count() {
            3 => {}
            5 => return Err(refused("an encrypted token (JWE); send a signed one")),
            _ => return Err(refused("not a JWT")),
        }
        let header = jsonwebtoken::decode_header(credential).map_err(|_| {
            refused("unreadable header or an unknown algorithm (alg none is never accepted)")
        })?;
        if !self.algorithms.contains(&header.alg) {
            return Err(refused(format!(
                "algorithm {:?} is not accepted here",
                header.alg
            )));
        }
        let jwks_uri = self.endpoints()?.jwks_uri;
        let key = self
            .keys
            .key_for(&self.agent, &jwks_uri, header.kid.as_deref(), header.alg)?;
        let data = jsonwebtoken::decode::<Value>(credential, &key, &self.validation(header.alg))
            .map_err(|e| refused(why(e.kind())))?;
        claims::identity(
            &data.claims,
            &self.settings.user_claim,
            self.settings.groups_claim.as_deref(),
        )
    }

    fn browser_sign_in(&self) -> Result<Option<BrowserSignIn>, IdentityError> {
        let e = self.endpoints()?;
        Ok(match (e.authorization_endpoint, e.token_endpoint) {
            (Some(authorization_endpoint), Some(token_endpoint)) => Some(BrowserSignIn {
                authorization_endpoint,
                token_endpoint,
                end_session_endpoint: e.end_session_endpoint,
            }),
            _ => None,
        })
    }
}

/// An algorithm name from the configuration; HMAC ones are refused.
fn parse_algorithm(name: &str) -> Result<Algorithm, String> {
    let alg: Algorithm = name
        .trim()
        .parse()
        .map_err(|_| format!("unknown algorithm {name:?}"))?;
    match alg {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => Err(format!(
            "{name}: shared-secret algorithms are never accepted from an identity provider"
        )),
        _ => Ok(alg),
    }
}

fn why(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "expired".into(),
        ErrorKind::ImmatureSignature => "not valid yet (nbf)".into(),
        ErrorKind::InvalidAudience => "issued for another audience".into(),
        ErrorKind::InvalidIssuer => "issued by another issuer".into(),
        ErrorKind::InvalidSignature => "the signature does not verify".into(),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            "the algorithm does not fit the key".into()
        }
        ErrorKind::MissingRequiredClaim(c) => format!("no {c:?} claim"),
        _ => "malformed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> OidcVerifier {
        OidcVerifier::new(OidcSettings {
            jwks_uri: Some("http://127.0.0.1:9/keys".into()),
            ..OidcSettings::new("http://127.0.0.1:9", "zhiku")
        })
        .unwrap()
    }

    #[test]
    fn shared_secret_algorithms_cannot_be_configured() {
        for alg in ["HS256", "HS384", "HS512", "none", "RS1", ""] {
            let s = OidcSettings {
                algorithms: vec![alg.into()],
                ..OidcSettings::new("https://id.example", "zhiku")
            };
            assert!(OidcVerifier::new(s).is_err(), "{alg}");
        }
        assert!(OidcVerifier::new(OidcSettings::new("id.example", "zhiku")).is_err());
        assert!(OidcVerifier::new(OidcSettings::new("https://id.example", " ")).is_err());
    }

    #[test]
    fn tokens_that_are_not_signed_jwts_are_refused_before_any_key_is_fetched() {
        let v = verifier();
        // Header {"alg":"none","typ":"JWT"}; payload {"sub":"x"}.
        let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ4In0.";
        // Header {"alg":"HS256","typ":"JWT"}.
        let hs = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ4In0.c2ln";
        for bad in [
            "",
            "opaque-token",
            "a.b",
            "a.b.c.d.e",
            none,
            hs,
            "!!!.???.###",
            &"x".repeat(MAX_CREDENTIAL_BYTES + 1),
        ] {
            match v.verify(bad) {
                Err(IdentityError::Refused(reason)) => {
                    assert!(!reason.contains(bad) || bad.is_empty())
                }
                other => panic!("{bad:.40}: {other:?}"),
            }
        }
    }
}
