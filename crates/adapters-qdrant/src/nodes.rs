//! The nodes of a Qdrant deployment the adapter may talk to: one client per URL of the
//! configuration (`url` takes several, comma-separated: the nodes of a cluster), and which one
//! requests go to now. Any node of a cluster serves every collection (it forwards to the
//! shards' holders), so when the current node cannot be reached the next one takes over; the
//! choice is shared by every request of the index and stays where it moved.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use qdrant_client::Qdrant;
use tokio::runtime::Runtime;
use zhiku_domain::ports::IndexError;

use crate::config::QdrantConfig;
use crate::error::permanent;

/// One client per node, and the node requests go to now.
pub(crate) struct Nodes {
    clients: Vec<(String, Qdrant)>,
    at: AtomicUsize,
}

impl Nodes {
    /// A client for every URL of `config.url` (comma-separated; blanks ignored), in order; the
    /// first is used first.
    pub(crate) fn connect(config: &QdrantConfig, runtime: &Runtime) -> Result<Self, IndexError> {
        let urls: Vec<&str> = config
            .url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return Err(permanent(
                "no Qdrant URL configured (expected a gRPC URL such as http://127.0.0.1:6334)"
                    .to_string(),
            ));
        }
        let clients = urls
            .into_iter()
            .map(|url| Ok((url.to_string(), client(config, url, runtime)?)))
            .collect::<Result<_, IndexError>>()?;
        Ok(Self {
            clients,
            at: AtomicUsize::new(0),
        })
    }

    /// Which node requests go to now.
    pub(crate) fn position(&self) -> usize {
        self.at.load(Ordering::Relaxed) % self.clients.len()
    }

    /// The client of the node requests go to now.
    pub(crate) fn current(&self) -> &Qdrant {
        &self.clients[self.position()].1
    }

    /// The URL of node `at`.
    pub(crate) fn url(&self, at: usize) -> &str {
        &self.clients[at % self.clients.len()].0
    }

    /// How many nodes there are.
    pub(crate) fn len(&self) -> usize {
        self.clients.len()
    }

    /// Moves requests from node `from` (which could not be reached) to the next node, unless
    /// another request already moved them.
    pub(crate) fn fail_over(&self, from: usize) {
        let next = (from + 1) % self.clients.len();
        let _ = self
            .at
            .compare_exchange(from, next, Ordering::Relaxed, Ordering::Relaxed);
    }
}

fn client(config: &QdrantConfig, url: &str, runtime: &Runtime) -> Result<Qdrant, IndexError> {
    let _guard = runtime.enter();
    let mut builder = Qdrant::from_url(url)
        .timeout(config.timeout)
        .connect_timeout(config.timeout.min(Duration::from_secs(5)))
        // The client's own check prints to stdout; the adapter reports problems as errors.
        .skip_compatibility_check();
    if let Some(key) = &config.api_key {
        builder = builder.api_key(key.clone());
    }
    builder.build().map_err(|e| {
        permanent(format!(
            "cannot create a Qdrant client for {url}: {e} (expected a gRPC URL such as http://127.0.0.1:6334)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_url_is_a_node_and_failing_over_moves_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = QdrantConfig::with_url(" http://127.0.0.1:1 , ,http://127.0.0.1:2");
        let nodes = Nodes::connect(&config, &runtime).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!((nodes.position(), nodes.url(0)), (0, "http://127.0.0.1:1"));
        nodes.fail_over(0);
        // A second request that saw node 0 fail too does not move it back.
        nodes.fail_over(0);
        assert_eq!((nodes.position(), nodes.url(1)), (1, "http://127.0.0.1:2"));
        nodes.fail_over(1);
        assert_eq!(nodes.position(), 0);
        assert!(Nodes::connect(&QdrantConfig::with_url(" , "), &runtime).is_err());
    }
}
