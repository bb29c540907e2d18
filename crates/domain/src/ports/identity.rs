//! The identity port: who a bearer credential names.

use crate::contracts::Principal;

/// A person a credential was verified to name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The person and their groups, as documents' readers name them (`user:…`, `group:…`).
    pub principal: Principal,
    /// Who vouched for them (the provider's issuer).
    pub issuer: String,
    /// When the credential stops being valid, in seconds since the Unix epoch.
    pub expires_at: u64,
}

/// Where a browser signs a person in at the provider (authorization code with PKCE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserSignIn {
    /// Where the browser is sent to sign in.
    pub authorization_endpoint: String,
    /// Where the browser exchanges the code for tokens.
    pub token_endpoint: String,
    /// Where the browser signs out, when the provider says.
    pub end_session_endpoint: Option<String>,
}

/// Why a credential was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The credential is not one this verifier accepts: malformed, unsigned, signed with an
    /// algorithm or key the provider does not publish, for another audience or issuer, expired
    /// or not yet valid, or naming no user. Permanent; the reason names the check, never the
    /// credential.
    #[error("credential refused: {0}")]
    Refused(String),
    /// The provider's keys cannot be had now and none cached apply. Temporary.
    #[error("identity provider {adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name.
        adapter: &'static str,
        /// What happened.
        message: String,
    },
}

impl IdentityError {
    /// True when retrying later may succeed.
    pub fn is_temporary(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }
}

/// Verifies bearer credentials issued by an identity provider and says whom they name.
///
/// # Contract
///
/// - [`verify`](Self::verify) MUST return `Ok` only for a credential whose signature verifies
///   with a key the provider publishes (fetched from it, cached at most as long as the provider
///   allows), under an algorithm on the verifier's allow-list, whose issuer and audience are
///   the configured ones and which is valid now (expiry and not-before, within the configured
///   clock skew).
/// - The allow-list MUST hold asymmetric algorithms only: an unsigned credential (`alg: none`)
///   and one MACed with an HMAC algorithm (whatever its key, notably the provider's public key)
///   MUST be refused, as MUST a credential whose key's type does not fit its algorithm.
/// - A key ID the verifier does not know MUST make it fetch the provider's keys again (key
///   rotation), at most once per refresh interval, so unknown IDs cannot make it hammer the
///   provider.
/// - The principal is read from the configured claims (a user claim such as `sub` or `email`,
///   a groups claim by path); a credential without a user MUST be refused. Groups that cannot
///   be readers' names are dropped (they can only narrow what the person reads).
/// - Refusals are [`IdentityError::Refused`], with a reason that never quotes the credential;
///   a provider that cannot be reached while no cached key decides is
///   [`IdentityError::Unavailable`], never a refusal and never an acceptance.
/// - No byte string makes `verify` panic or allocate without bound: a credential longer than
///   the verifier's limit is refused before it is decoded.
pub trait IdentityVerifier: Send + Sync {
    /// What verifies, e.g. `oidc:https://login.example.com/realms/corp`.
    fn name(&self) -> &str;

    /// Verifies `credential` (the bearer token, without the scheme).
    fn verify(&self, credential: &str) -> Result<Identity, IdentityError>;

    /// Where a browser signs in, for a provider that offers it; `None` for one that does not.
    fn browser_sign_in(&self) -> Result<Option<BrowserSignIn>, IdentityError> {
        Ok(None)
    }
}
