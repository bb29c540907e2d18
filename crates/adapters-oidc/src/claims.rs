//! The person a verified token's claims name.

use serde_json::Value;
use zhiku_domain::contracts::Principal;
use zhiku_domain::ports::{Identity, IdentityError};

use crate::error::refused;

/// Most groups read from one token; more are dropped (a dropped group only narrows).
const MAX_GROUPS: usize = 1024;

/// The identity in verified `claims`.
pub(crate) fn identity(
    claims: &Value,
    user_claim: &str,
    groups_claim: Option<&str>,
) -> Result<Identity, IdentityError> {
    let user = at(claims, user_claim)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| refused(format!("no {user_claim:?} claim naming the user")))?;
    let mut groups: Vec<&str> = match groups_claim.and_then(|path| at(claims, path)) {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(one)) => vec![one.as_str()],
        _ => Vec::new(),
    };
    if groups.len() > MAX_GROUPS {
        tracing::warn!(target: "zhiku::access", user, groups = groups.len(), kept = MAX_GROUPS, "a token lists more groups than are read");
        groups.truncate(MAX_GROUPS);
    }
    // A group no document could name (empty, padded, control characters) is dropped.
    groups.retain(|g| Principal::new("x", [*g]).is_ok());
    let principal = Principal::new(user, &groups)
        .map_err(|_| refused(format!("the {user_claim:?} claim is not a user name")))?;
    Ok(Identity {
        principal,
        issuer: claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        expires_at: claims.get("exp").and_then(Value::as_u64).unwrap_or(0),
    })
}

/// The claim at `path`: the whole path as one name first (namespaced claims such as
/// `https://corp.example/groups` hold dots), then as dot-separated steps.
fn at<'a>(claims: &'a Value, path: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(path) {
        return Some(v);
    }
    path.split('.').try_fold(claims, |v, step| v.get(step))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_and_groups_come_from_the_configured_claims() {
        let claims = json!({
            "iss": "https://id", "exp": 10, "sub": "u-1", "email": "li.lei@corp",
            "groups": ["hr", "", " padded", "ctl\u{7}", "Domain Users", 7, "eng"],
            "realm_access": {"roles": ["finance"]},
            "https://corp.example/groups": "legal",
        });
        let id = identity(&claims, "email", Some("groups")).unwrap();
        assert_eq!(id.principal.user(), "li.lei@corp");
        let groups: Vec<_> = id.principal.groups().iter().cloned().collect();
        assert_eq!(groups, ["Domain Users", "eng", "hr"]);
        assert_eq!(id.expires_at, 10);
        let id = identity(&claims, "sub", Some("realm_access.roles")).unwrap();
        assert_eq!(id.principal.user(), "u-1");
        assert!(id.principal.groups().contains("finance"));
        let id = identity(&claims, "sub", Some("https://corp.example/groups")).unwrap();
        assert!(id.principal.groups().contains("legal"));
        assert!(
            identity(&claims, "sub", None)
                .unwrap()
                .principal
                .groups()
                .is_empty()
        );
        for missing in ["preferred_username", "realm_access", "groups"] {
            assert!(identity(&claims, missing, None).is_err(), "{missing}");
        }
    }
}
