//! The HTTP/1.1 connections of `zhiku serve`: a cap on open connections, a deadline for each
//! request head and for idle keep-alive time, and a graceful shutdown with a deadline.
//!
//! `axum::serve` keeps every connection for as long as the client likes, so idle or
//! slow-header sockets pile up until the process runs out of file descriptors and nothing —
//! `/healthz` included — is accepted any more. Here each connection is in one of three phases:
//! receiving a request head (at most `header_timeout_ms`, from its acceptance or the first byte
//! of the next request), working on requests (bounded by `body_timeout_ms` for the body and
//! `timeout_ms` for the work, see the router) or idle between requests (at most
//! `idle_timeout_ms`). Beyond `max_connections` open connections (clamped below the process's
//! file limit) a new one is answered 503 and closed at once, so the slots are always freed
//! within a deadline and a new client gets one.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tower_service::Service;

use crate::settings::ServeSettings;

/// The connection limits of one server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time to receive a request head.
    pub header: Duration,
    /// Time a connection may stay idle between requests.
    pub idle: Duration,
    /// Time a connection working on a request may go without reading or writing a byte
    /// (`timeout_ms` + `idle_timeout_ms`: the work has its own deadline, event streams send
    /// keep-alives): a client that stops reading its response is let go.
    pub stall: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// Time in-flight requests get to finish once shutdown starts.
    pub shutdown: Duration,
}

impl Limits {
    /// The limits of `[serve]`, with `max_connections` kept below the process's open-file limit
    /// (a quarter of it, at least 32, stays for the store's own files); the note says when it
    /// was lowered.
    pub fn of(settings: &ServeSettings) -> (Self, Option<String>) {
        // Semaphores count at most u32::MAX at once here.
        let mut max_connections = settings.max_connections.min(u32::MAX as usize);
        let mut note = None;
        if let Some(files) = open_file_limit() {
            let room = files.saturating_sub((files / 4).max(32)).max(1);
            if room < max_connections {
                note = Some(format!(
                    "max_connections lowered from {max_connections} to {room}: the process may open {files} files"
                ));
                max_connections = room;
            }
        }
        (
            Self {
                header: Duration::from_millis(settings.header_timeout_ms),
                idle: Duration::from_millis(settings.idle_timeout_ms),
                stall: Duration::from_millis(
                    settings.timeout_ms.saturating_add(settings.idle_timeout_ms),
                ),
                max_connections,
                shutdown: Duration::from_millis(settings.shutdown_timeout_ms),
            },
            note,
        )
    }
}

/// This process's soft limit on open files (Linux: `/proc/self/limits`).
pub fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How a shutdown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Every connection finished its requests within the deadline.
    Drained,
    /// Some were still open at the deadline (and are dropped).
    DeadlinePassed {
        /// Connections still open.
        open: usize,
    },
}

/// What a connection is doing.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Receiving a request head since then.
    Head(Instant),
    /// Working on this many requests (their responses are not fully sent), with the last
    /// byte read or written then.
    Busy(usize, Instant),
    /// Waiting for the next request since then.
    Idle(Instant),
}

type Shared = Arc<Mutex<Phase>>;

fn lock(phase: &Shared) -> std::sync::MutexGuard<'_, Phase> {
    phase.lock().unwrap_or_else(|e| e.into_inner())
}

/// The socket, noting the first byte of a request that arrives on an idle connection.
struct Watched {
    inner: TcpStream,
    phase: Shared,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let mut phase = lock(&self.phase);
            *phase = match *phase {
                Phase::Idle(_) => Phase::Head(Instant::now()),
                Phase::Busy(n, _) => Phase::Busy(n, Instant::now()),
                head => head,
            };
        }
        result
    }
}

impl Watched {
    fn wrote(&self, result: &Poll<io::Result<usize>>) {
        if matches!(result, Poll::Ready(Ok(n)) if *n > 0) {
            let mut phase = lock(&self.phase);
            if let Phase::Busy(n, _) = *phase {
                *phase = Phase::Busy(n, Instant::now());
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(&result);
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(&result);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// One request in progress on a connection, until its response body is dropped.
struct InFlight(Shared);

impl InFlight {
    fn enter(phase: &Shared) -> Self {
        let mut p = lock(phase);
        *p = match *p {
            Phase::Busy(n, _) => Phase::Busy(n + 1, Instant::now()),
            _ => Phase::Busy(1, Instant::now()),
        };
        Self(phase.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut p = lock(&self.0);
        *p = match *p {
            Phase::Busy(n, last) if n > 1 => Phase::Busy(n - 1, last),
            _ => Phase::Idle(Instant::now()),
        };
    }
}

/// A response body that keeps its request in flight until it is sent (or dropped).
struct Tracked {
    inner: Body,
    _in_flight: InFlight,
}

impl HttpBody for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// When the connection's current phase runs out.
fn deadline(phase: Phase, limits: &Limits) -> Instant {
    match phase {
        // At most u64::MAX ms past now: far, but within what an Instant holds.
        Phase::Head(since) => since + limits.header,
        Phase::Idle(since) => since + limits.idle,
        Phase::Busy(_, last_io) => last_io + limits.stall,
    }
}

/// The answer to a connection beyond `max_connections`, before it is closed.
fn refused() -> Vec<u8> {
    let body = r#"{"error":{"code":"busy","message":"too many open connections; retry shortly"}}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, calls
/// `on_shutdown` (so long-lived streams can end), lets in-flight requests finish (idle
/// connections close at once) and then `work_done` resolve (work that outlived its request),
/// all within `limits.shutdown`, and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send,
    on_shutdown: impl FnOnce(),
    work_done: impl Future<Output = ()>,
) -> Stopped {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusal = refused();
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(_) => {
                // Out of file descriptors or a connection reset before acceptance: try again
                // shortly rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // The socket buffer of a fresh connection is empty: this never blocks.
            let _ = stream.try_write(&refusal);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            connection(stream, peer, app, limits, stop).await;
            drop(slot);
        });
    }
    drop(listener);
    on_shutdown();
    let _ = stop_tx.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let drained = async {
        let _ = slots.acquire_many(all).await;
        work_done.await;
    };
    match tokio::time::timeout(limits.shutdown, drained).await {
        Ok(()) => Stopped::Drained,
        Err(_) => Stopped::DeadlinePassed {
            open: limits.max_connections - slots.available_permits(),
        },
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let phase: Shared = Arc::new(Mutex::new(Phase::Head(Instant::now())));
    let io = TokioIo::new(Watched {
        inner: stream,
        phase: phase.clone(),
    });
    let service_phase = phase.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let in_flight = InFlight::enter(&service_phase);
        let mut app = app.clone();
        async move {
            std::future::poll_fn(|cx| <Router as Service<Request>>::poll_ready(&mut app, cx))
                .await?;
            // The peer address, as axum's `ConnectInfo` (`/metrics` without a token serves
            // loopback callers only).
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            let response: Response = app.call(request).await?;
            Ok::<_, Infallible>(response.map(|inner| Tracked {
                inner,
                _in_flight: in_flight,
            }))
        }
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        // Phases change while the connection runs (a response ends, a byte arrives): wake at
        // the current deadline or soon enough to notice a shorter one.
        let wake =
            deadline(*lock(&phase), &limits).min(Instant::now() + limits.header.min(limits.idle));
        tokio::select! {
            _ = conn.as_mut() => return,
            () = tokio::time::sleep_until(wake) => {
                let now = Instant::now();
                if deadline(*lock(&phase), &limits) <= now {
                    // Too slow a head, too long idle or stalled: dropping the connection
                    // closes it.
                    return;
                }
            }
            changed = stop.changed(), if !stopping => {
                stopping = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_settings_do_not_panic() {
        let settings = ServeSettings {
            header_timeout_ms: u64::MAX,
            idle_timeout_ms: u64::MAX,
            timeout_ms: u64::MAX,
            max_connections: usize::MAX,
            ..ServeSettings::default()
        };
        let (limits, _) = Limits::of(&settings);
        assert!(limits.max_connections <= u32::MAX as usize);
        let now = Instant::now();
        for phase in [Phase::Head(now), Phase::Idle(now), Phase::Busy(1, now)] {
            assert!(deadline(phase, &limits) > now);
        }
        // Semaphore::new panics beyond its maximum: the gate caps the count first.
        let gate = crate::admission::Gate::new(usize::MAX, u64::MAX);
        assert!(gate.admit().is_ok());
    }
}
