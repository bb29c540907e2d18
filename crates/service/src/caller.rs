//! Who is calling.

use zhiku_domain::{Access, Principal, Scope};

/// Who is calling, as established by the transport (a bearer token, the local user), never by
/// the request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// A name for logs and traces.
    pub name: String,
    /// The scopes this caller may read (and, with `write`, write).
    pub scopes: Vec<Scope>,
    /// May add and remove documents.
    pub write: bool,
    /// The person the caller acts for, whose readers every read is held to; `None` for a
    /// caller that reads its scopes whole (a service token, the local user).
    pub principal: Option<Principal>,
    /// A person who runs the service: sees every run's trace in their scopes, not only their
    /// own. (Documents are still held to their readers.)
    pub operator: bool,
}

impl Caller {
    /// The local user: the configuration's trusted scopes, with write rights.
    pub fn local(trusted_scopes: Vec<Scope>) -> Self {
        Self {
            name: "local".into(),
            scopes: trusted_scopes,
            write: true,
            principal: None,
            operator: false,
        }
    }

    /// True when the caller may read `scope`.
    pub fn sees(&self, scope: &Scope) -> bool {
        self.scopes.contains(scope)
    }

    /// True when the caller may read a document of `scope` readable by `access`: the scope is
    /// one of the caller's, and the caller reads whole scopes or acts for a person `access`
    /// admits.
    pub fn reads(&self, scope: &Scope, access: &Access) -> bool {
        self.sees(scope) && self.principal.as_ref().is_none_or(|p| access.admits(p))
    }
}
