//! The store whose vectors live on a Qdrant server (`vectors = "qdrant"`), in one collection
//! per knowledge base and embedding space ([`crate::wiring::qdrant`]). With profile `prod` the
//! catalog and the lexical index stay in the store folder (in memory with `lexical = "ram"`);
//! with profile `cluster` (`lexical = "qdrant"`) they are collections too, and no lock file is
//! taken (the catalog and lexical steps pick them).

use std::sync::Arc;

use anyhow::Result;
use zhiku_adapters_qdrant::QdrantVectorIndex;
use zhiku_domain::EmbeddingSpace;

use super::access::{Access, Purpose};
use super::catalog;
use super::lexical;
use super::opened::Store;
use super::request::Request;
use super::steps::{self, Opening, Vectors};
use crate::wiring::qdrant::{VectorsUnavailable, drop_before_rebuild, kb_name_of};

/// Opens the Qdrant store the request names. A rebuild drops the store's collections before
/// any local file is deleted, so a server that cannot be reached leaves the store whole.
pub(super) fn open(request: Request<'_>) -> Result<Store> {
    let lock = steps::lock(&request)?;
    if request.access == Access::Rebuilding {
        drop_before_rebuild(&request.config.qdrant, request.dir)?;
        steps::discard_for_rebuild(request.dir)?;
    }
    steps::remove_discarded(&request)?;
    let mut opening = Opening::start(request, lock, catalog::open)?;
    opening.open_dense(open_collection)?;
    let lexical = lexical::open(&opening.request, || Ok(None))?;
    opening.finish(lexical)
}

/// Opens the collection of the store for `space`. When the server cannot be reached, an open
/// for reading goes on without it and says why in the notice (retrieval goes lexical), and one
/// for writing fails with [`VectorsUnavailable`] before anything is touched.
fn open_collection(opening: &mut Opening<'_>, space: &EmbeddingSpace) -> Result<Option<Vectors>> {
    let request = &opening.request;
    let settings = &request.config.qdrant;
    let kb = kb_name_of(settings, request.dir)?;
    let fingerprint = request.config.policy.fingerprint();
    let index = match QdrantVectorIndex::open(settings, &kb, space.clone(), Some(&fingerprint)) {
        Ok(index) => index,
        Err(e) if e.is_temporary() && request.access.purpose() == Purpose::Read => {
            opening
                .picked
                .push(("qdrant".into(), format!("unreachable at {}", settings.url)));
            opening.notice = Some(format!(
                "Qdrant is unreachable, retrieval is lexical only: {e}"
            ));
            return Ok(None);
        }
        Err(e) if e.is_temporary() => {
            return Err(VectorsUnavailable {
                reason: e.to_string(),
            }
            .into());
        }
        // A collection of another space or chunking policy: the store was built otherwise.
        Err(e) => return Err(request.rebuild_or(e)),
    };
    opening.picked.push((
        "qdrant".into(),
        format!("collection {} on {}", index.collection(), index.url()),
    ));
    Ok(Some(Vectors {
        index: Arc::new(index),
        records: None,
    }))
}
