//! The port's errors as this adapter makes them.

use zhiku_domain::ports::IdentityError;

const ADAPTER: &str = "oidc";

/// A refusal for `reason` (the check that failed, never the token).
pub(crate) fn refused(reason: impl Into<String>) -> IdentityError {
    IdentityError::Refused(reason.into())
}

/// The provider cannot be asked now.
pub(crate) fn unavailable(message: impl Into<String>) -> IdentityError {
    IdentityError::Unavailable {
        adapter: ADAPTER,
        message: message.into(),
    }
}
