//! Qdrant errors mapped into [`IndexError`], and which of them a retry can fix.

use std::time::Duration;

use qdrant_client::QdrantError;
use tonic::Code;
use zhiku_domain::ports::IndexError;

pub(crate) const ADAPTER: &str = "qdrant";

/// How a failed request should be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The server cannot be reached or did not answer in time: retry, then `Unavailable`.
    Unreachable,
    /// The server is overloaded: retry (after the delay it asks for, if any).
    Overloaded(Option<Duration>),
    /// Retrying the same request cannot help.
    Permanent,
}

impl Kind {
    pub(crate) fn temporary(self) -> bool {
        !matches!(self, Self::Permanent)
    }
}

/// True for a transport failure that tonic reports without a dedicated status code (a
/// connection reset while a response was streaming, a broken pipe).
fn transport_failure(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "transport error",
        "connection reset",
        "connection refused",
        "broken pipe",
        "error trying to connect",
        "failed to connect",
        "connection closed",
        "h2 protocol error",
        "operation was canceled",
        "timeout expired",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

pub(crate) fn classify(error: &QdrantError) -> Kind {
    match error {
        QdrantError::ResourceExhaustedError {
            retry_after_seconds,
            ..
        } => Kind::Overloaded(Some(Duration::from_secs(*retry_after_seconds))),
        QdrantError::ResponseError { status } => match status.code() {
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Aborted => {
                Kind::Unreachable
            }
            Code::ResourceExhausted => Kind::Overloaded(None),
            // A node that answers with another node's failure (a replica it could not reach)
            // is reachable itself: retry it after a pause rather than move to another node.
            Code::Internal if status.message().starts_with("Service internal error") => {
                Kind::Overloaded(None)
            }
            Code::Unknown | Code::Internal if transport_failure(status.message()) => {
                Kind::Unreachable
            }
            _ => Kind::Permanent,
        },
        QdrantError::Io(_) => Kind::Unreachable,
        _ => Kind::Permanent,
    }
}

/// The server's own words, without tonic's metadata dump.
fn describe(error: &QdrantError) -> String {
    match error {
        QdrantError::ResponseError { status }
        | QdrantError::ResourceExhaustedError { status, .. } => {
            format!("{:?}: {}", status.code(), status.message())
        }
        other => other.to_string(),
    }
}

/// A simple boxed error with a message, for [`IndexError::Backend`] sources.
#[derive(Debug)]
pub(crate) struct Message(pub(crate) String);

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}

/// Where a request went, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) url: &'a str,
    pub(crate) collection: &'a str,
}

/// Maps a failed request into the port's error, naming what was attempted and where.
pub(crate) fn to_index_error(
    error: &QdrantError,
    what: &str,
    target: Target<'_>,
    attempts: u32,
) -> IndexError {
    let Target { url, collection } = target;
    let detail = describe(error);
    match classify(error) {
        Kind::Unreachable => IndexError::Unavailable {
            adapter: ADAPTER,
            message: format!(
                "{what} on {url} (collection {collection}) failed after {attempts} attempt(s): {detail}"
            ),
        },
        Kind::Overloaded(_) => IndexError::Backend {
            adapter: ADAPTER,
            source: Box::new(Message(format!(
                "{what} on {url} (collection {collection}): the server is overloaded after {attempts} attempt(s): {detail}"
            ))),
            temporary: true,
        },
        Kind::Permanent => {
            let hint = match error {
                QdrantError::ResponseError { status } => match status.code() {
                    Code::Unauthenticated | Code::PermissionDenied => {
                        " (check the API key: ZHIKU_QDRANT_API_KEY or [qdrant] api_key)"
                    }
                    Code::NotFound => {
                        " (the collection is gone from the server; rebuild with zhiku index --rebuild)"
                    }
                    _ => "",
                },
                QdrantError::InvalidUri(_) => {
                    " (expected a gRPC URL such as http://127.0.0.1:6334)"
                }
                _ => "",
            };
            IndexError::Backend {
                adapter: ADAPTER,
                source: Box::new(Message(format!(
                    "{what} on {url} (collection {collection}): {detail}{hint}"
                ))),
                temporary: false,
            }
        }
    }
}

/// A permanent backend error with a message.
pub(crate) fn permanent(message: impl Into<String>) -> IndexError {
    IndexError::Backend {
        adapter: ADAPTER,
        source: Box::new(Message(message.into())),
        temporary: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: Code, message: &str) -> QdrantError {
        QdrantError::ResponseError {
            status: tonic::Status::new(code, message),
        }
    }

    const T: Target<'static> = Target {
        url: "http://q:6334",
        collection: "c",
    };

    #[test]
    fn unavailable_and_timeouts_are_temporary() {
        for code in [Code::Unavailable, Code::DeadlineExceeded, Code::Cancelled] {
            let e = to_index_error(&status(code, "down"), "search", T, 4);
            assert!(matches!(e, IndexError::Unavailable { .. }), "{e}");
            assert!(e.is_temporary());
            assert!(e.to_string().contains("http://q:6334"), "{e}");
        }
        let e = to_index_error(&status(Code::ResourceExhausted, "busy"), "upsert", T, 4);
        assert!(e.is_temporary(), "{e}");
        let e = to_index_error(
            &status(Code::Unknown, "transport error: connection reset"),
            "upsert",
            T,
            1,
        );
        assert!(e.is_temporary(), "{e}");
    }

    #[test]
    fn other_errors_are_permanent_and_say_why() {
        let e = to_index_error(&status(Code::Unauthenticated, "no key"), "search", T, 1);
        assert!(!e.is_temporary());
        assert!(e.to_string().contains("API key"), "{e}");
        let e = to_index_error(
            &status(Code::NotFound, "Collection c not found"),
            "search",
            T,
            1,
        );
        assert!(!e.is_temporary());
        assert!(e.to_string().contains("--rebuild"), "{e}");
        let e = to_index_error(&status(Code::InvalidArgument, "bad"), "search", T, 1);
        assert!(!e.is_temporary());
        // Another node's failure reported by a node that answers: retried on that node.
        let relayed = status(
            Code::Internal,
            "Service internal error: 1 of 2 read operations failed: Failed to connect to http://n2:6335/",
        );
        assert_eq!(classify(&relayed), Kind::Overloaded(None));
        let e = to_index_error(&status(Code::InvalidArgument, "bad"), "search", T, 1);
        assert!(!e.is_temporary());
    }
}
