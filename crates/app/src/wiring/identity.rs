//! The identity provider `[serve.oidc]` names, as the `IdentityVerifier` port.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use zhiku_adapters_oidc::{OidcSettings, OidcVerifier};
use zhiku_domain::ports::IdentityVerifier;
use zhiku_http::settings::OidcTable;

/// The verifier of `table`'s provider, and whether its keys could be fetched now (the error
/// says why not: the server still starts, and its people are refused with 503 until they can).
pub fn oidc_verifier(table: &OidcTable) -> Result<(Arc<dyn IdentityVerifier>, Option<String>)> {
    let mut s = OidcSettings::new(&table.issuer, &table.audience);
    if let Some(c) = &table.user_claim {
        s.user_claim = c.clone();
    }
    if let Some(c) = &table.groups_claim {
        s.groups_claim = Some(c.clone()).filter(|c| !c.is_empty());
    }
    if let Some(a) = &table.algorithms {
        s.algorithms = a.clone();
    }
    if let Some(l) = table.leeway_s {
        s.leeway = Duration::from_secs(l);
    }
    if let Some(m) = table.keys_max_age_s {
        s.keys_max_age = Duration::from_secs(m.max(1));
    }
    s.jwks_uri = table.jwks_uri.clone();
    let verifier = OidcVerifier::new(s).map_err(|e| anyhow::anyhow!("[serve.oidc] {e}"))?;
    let unreachable = verifier.refresh_keys().err().map(|e| e.to_string());
    Ok((Arc::new(verifier), unreachable))
}
