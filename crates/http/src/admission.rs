//! One admission gate for every transport: the HTTP API and the MCP tools take their worker
//! from the same `max_concurrent` permits and run within the same `timeout_ms` deadline.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use zhiku_service::KbError;

/// Why a piece of work did not produce its result.
#[derive(Debug)]
pub enum Refused {
    /// Every worker is busy (`max_concurrent`): retry shortly.
    Busy {
        /// The configured number of workers.
        max_concurrent: usize,
    },
    /// The work took longer than `timeout_ms` (it goes on in the background, holding its
    /// worker, until it ends).
    Timeout {
        /// The configured deadline.
        timeout_ms: u64,
    },
    /// The worker failed (panicked).
    Failed(String),
    /// The use case's own error.
    Kb(KbError),
}

/// The workers of one server.
#[derive(Debug, Clone)]
pub struct Gate {
    permits: Arc<Semaphore>,
    max_concurrent: usize,
    timeout_ms: u64,
}

impl Gate {
    /// `max_concurrent` workers, each piece of work within `timeout_ms`.
    pub fn new(max_concurrent: usize, timeout_ms: u64) -> Self {
        let max_concurrent = max_concurrent.min(u32::MAX as usize);
        Self {
            permits: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            timeout_ms,
        }
    }

    /// A worker, or [`Refused::Busy`] at once when none is free (never queued).
    pub fn admit(&self) -> Result<OwnedSemaphorePermit, Refused> {
        self.permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refused::Busy {
                max_concurrent: self.max_concurrent,
            })
    }

    /// Resolves once no work is running (work past its deadline included): at shutdown, an
    /// ingest whose request already ended still gets to finish.
    pub async fn drained(&self) {
        let all = u32::try_from(self.max_concurrent).unwrap_or(u32::MAX);
        let _ = self.permits.acquire_many(all).await;
    }

    /// Runs `work` on the blocking pool with a worker and within the deadline.
    pub async fn run<T, F>(&self, work: F) -> Result<T, Refused>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, KbError> + Send + 'static,
    {
        let permit = self.admit()?;
        self.run_admitted(permit, work).await
    }

    /// Runs `work` with a worker taken earlier by [`Gate::admit`].
    pub async fn run_admitted<T, F>(
        &self,
        permit: OwnedSemaphorePermit,
        work: F,
    ) -> Result<T, Refused>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, KbError> + Send + 'static,
    {
        // The request's span (its request ID) goes with the work, so what the service logs
        // (a denied read) names the request.
        let span = tracing::Span::current();
        let task = tokio::task::spawn_blocking(move || {
            // The worker stays taken until the work really ends, deadline or not.
            let _permit = permit;
            span.in_scope(work)
        });
        match tokio::time::timeout(Duration::from_millis(self.timeout_ms), task).await {
            Ok(Ok(result)) => result.map_err(Refused::Kb),
            Ok(Err(join)) => Err(Refused::Failed(join.to_string())),
            Err(_) => Err(Refused::Timeout {
                timeout_ms: self.timeout_ms,
            }),
        }
    }
}
