//! Who is calling.

use zhiku_domain::Scope;

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
}

impl Caller {
    /// The local user: the configuration's trusted scopes, with write rights.
    pub fn local(trusted_scopes: Vec<Scope>) -> Self {
        Self {
            name: "local".into(),
            scopes: trusted_scopes,
            write: true,
        }
    }

    /// True when the caller may read `scope`.
    pub fn sees(&self, scope: &Scope) -> bool {
        self.scopes.contains(scope)
    }
}
