//! The one HTTP client of both sources: every reply's body read within a bound, no redirect
//! followed by the client itself, every request counted.

use std::io::Read;
use std::time::{Duration, Instant};

/// One reply, its body read within the bound it was asked with.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The server's `Date`: when it made the reply.
    pub date: Option<String>,
    pub content_type: Option<String>,
    pub location: Option<String>,
    /// `None` when the body was longer than the bound (the rest is not read).
    pub body: Option<Vec<u8>>,
}

/// A client with a rate limit between requests.
pub(crate) struct Client {
    agent: ureq::Agent,
    min_interval: Duration,
    last: Option<Instant>,
    /// Requests sent.
    pub requests: u64,
}

impl Client {
    pub(crate) fn new(timeout: Duration, user_agent: &str, min_interval: Duration) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout(timeout)
            .redirects(0)
            .user_agent(user_agent)
            .build();
        Self {
            agent,
            min_interval,
            last: None,
            requests: 0,
        }
    }

    /// Waits at least `interval` between requests from now on (a robots.txt `Crawl-delay`
    /// longer than the configured one).
    pub(crate) fn slow_to(&mut self, interval: Duration) {
        self.min_interval = self.min_interval.max(interval);
    }

    /// Sends `method` to `url` with `headers` (and `body`); a transport failure (no connection,
    /// a timeout) is `Err` with what happened.
    pub(crate) fn send(
        &mut self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        max_bytes: u64,
    ) -> Result<Reply, String> {
        if let Some(last) = self.last {
            let due = last + self.min_interval;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        self.last = Some(Instant::now());
        // Every request here only reads (GET, PROPFIND): one that fails in transport is sent
        // once more, on a new connection if need be (a kept-alive one the server closed
        // meanwhile fails the first write).
        let mut attempt = 0;
        let response = loop {
            attempt += 1;
            self.requests += 1;
            let mut request = self.agent.request(method, url);
            for (k, v) in headers {
                request = request.set(k, v);
            }
            let sent = match body {
                Some(b) => request.send_bytes(b),
                None => request.call(),
            };
            match sent {
                Ok(r) => break r,
                Err(ureq::Error::Status(_, r)) => break r,
                Err(ureq::Error::Transport(_)) if attempt < 2 => continue,
                Err(ureq::Error::Transport(t)) => return Err(t.to_string()),
            }
        };
        let header = |name: &str| response.header(name).map(str::to_string);
        let mut reply = Reply {
            status: response.status(),
            etag: header("etag"),
            last_modified: header("last-modified"),
            date: header("date"),
            content_type: header("content-type"),
            location: header("location"),
            body: None,
        };
        let declared: Option<u64> = response
            .header("content-length")
            .and_then(|l| l.trim().parse().ok());
        if declared.is_some_and(|n| n > max_bytes) {
            return Ok(reply);
        }
        let mut bytes = Vec::new();
        response
            .into_reader()
            .take(max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("reading the reply: {e}"))?;
        if bytes.len() as u64 <= max_bytes {
            reply.body = Some(bytes);
        }
        Ok(reply)
    }
}
