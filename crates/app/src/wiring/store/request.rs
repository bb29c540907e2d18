//! What an open of a store is asked for, as every step of every opener reads it.

use std::path::Path;

use zhiku_domain::ports::IndexError;

use super::access::Access;
use super::compatible::{NeedsRebuild, rebuild_or};
use crate::config::Config;

/// What an open is asked for: the store folder, the configuration, how the store is used, and
/// the knowledge base the rebuild command of an error names.
pub(super) struct Request<'a> {
    pub(super) dir: &'a Path,
    pub(super) config: Config,
    pub(super) access: Access,
    pub(super) kb_hint: Option<&'a Path>,
}

impl Request<'_> {
    /// An index adapter's refusal to open, as "rebuild the store" when the store was built
    /// otherwise.
    pub(super) fn rebuild_or(&self, e: IndexError) -> anyhow::Error {
        rebuild_or(e, self.dir, self.kb_hint)
    }

    /// The rebuild a mismatch of `what` calls for.
    pub(super) fn needs_rebuild(
        &self,
        what: &str,
        recorded: String,
        requested: String,
    ) -> NeedsRebuild {
        NeedsRebuild::of(self.dir, self.kb_hint, what, recorded, requested)
    }
}
