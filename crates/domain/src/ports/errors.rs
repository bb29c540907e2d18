//! One semantic error type per port.

use std::error::Error as StdError;

/// A boxed source error from an adapter.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Errors of [`VectorIndex`](super::VectorIndex) and [`LexicalIndex`](super::LexicalIndex).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The backend cannot be reached now (server down, timeout, lock held). Temporary.
    #[error("{adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name, e.g. `qdrant`.
        adapter: &'static str,
        /// What happened.
        message: String,
    },
    /// The request itself is wrong (empty query where one is required, `k == 0`, bad record).
    /// Permanent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A vector from another embedding space, or of the wrong dimension. Permanent.
    #[error("embedding space mismatch: index holds {expected}, got {found}")]
    SpaceMismatch {
        /// The index's space identity.
        expected: String,
        /// The offered space identity (or dimension).
        found: String,
    },
    /// The index was built with another configuration (chunking policy, tokenizer, space) and
    /// must be rebuilt. Permanent.
    #[error(
        "index configuration mismatch: {what} is {found}, the index was built with {expected}; rebuild the index"
    )]
    ConfigMismatch {
        /// What differs, e.g. `tokenizer`.
        what: &'static str,
        /// Recorded with the index.
        expected: String,
        /// Requested now.
        found: String,
    },
    /// The adapter does not support the operation (see its capabilities). Permanent.
    #[error("{adapter} does not support {operation}")]
    Unsupported {
        /// Adapter name.
        adapter: &'static str,
        /// Operation name.
        operation: &'static str,
    },
    /// Any other backend failure.
    #[error("{adapter} failed: {source}")]
    Backend {
        /// Adapter name.
        adapter: &'static str,
        /// The adapter's own error.
        #[source]
        source: BoxError,
        /// Whether a retry may succeed.
        temporary: bool,
    },
}

impl IndexError {
    /// True when retrying the same call later may succeed.
    pub fn is_temporary(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Backend { temporary, .. } => *temporary,
            _ => false,
        }
    }

    /// A permanent backend error.
    pub fn backend(adapter: &'static str, source: impl Into<BoxError>) -> Self {
        Self::Backend {
            adapter,
            source: source.into(),
            temporary: false,
        }
    }
}

/// Errors of [`Embedder`](super::Embedder).
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model cannot be loaded or reached now (not downloaded, hub unreachable). Temporary.
    #[error("embedder {adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name.
        adapter: &'static str,
        /// What happened, including the fix when known.
        message: String,
    },
    /// The input cannot be embedded. Permanent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The operation is not supported. Permanent.
    #[error("{adapter} does not support {operation}")]
    Unsupported {
        /// Adapter name.
        adapter: &'static str,
        /// Operation name.
        operation: &'static str,
    },
    /// Any other failure (bad weights, numerical error).
    #[error("embedder {adapter} failed: {source}")]
    Backend {
        /// Adapter name.
        adapter: &'static str,
        /// The adapter's own error.
        #[source]
        source: BoxError,
        /// Whether a retry may succeed.
        temporary: bool,
    },
}

impl EmbedError {
    /// True when retrying later may succeed.
    pub fn is_temporary(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Backend { temporary, .. } => *temporary,
            _ => false,
        }
    }
}

/// Errors of [`Ocr`](super::Ocr).
#[derive(Debug, thiserror::Error)]
pub enum OcrError {
    /// The engine cannot run here (models or program missing, runtime library not found).
    /// Temporary: it runs once what is missing is installed.
    #[error("OCR engine {adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name.
        adapter: &'static str,
        /// What is missing, and how to get it.
        message: String,
    },
    /// The image cannot be read as given (empty, inconsistent size). Permanent.
    #[error("invalid image: {0}")]
    InvalidInput(String),
    /// Any other failure of the engine on this image.
    #[error("OCR engine {adapter} failed: {source}")]
    Backend {
        /// Adapter name.
        adapter: &'static str,
        /// The adapter's own error.
        #[source]
        source: BoxError,
        /// Whether a retry may succeed.
        temporary: bool,
    },
}

impl OcrError {
    /// True when retrying later may succeed.
    pub fn is_temporary(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Backend { temporary, .. } => *temporary,
            Self::InvalidInput(_) => false,
        }
    }
}

/// Errors of [`SourceStore`](super::SourceStore).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source cannot be read now. Temporary.
    #[error("source store {adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name.
        adapter: &'static str,
        /// What happened.
        message: String,
    },
    /// Any other failure.
    #[error("source store {adapter} failed: {source}")]
    Backend {
        /// Adapter name.
        adapter: &'static str,
        /// The adapter's own error.
        #[source]
        source: BoxError,
        /// Whether a retry may succeed.
        temporary: bool,
    },
}

impl SourceError {
    /// True when retrying later may succeed.
    pub fn is_temporary(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Backend { temporary, .. } => *temporary,
        }
    }
}

/// Errors of [`Generator`](super::Generator).
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The model server cannot be reached or timed out. Temporary.
    #[error("generator {adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name.
        adapter: &'static str,
        /// What happened.
        message: String,
    },
    /// The request was refused as malformed (prompt too long, bad parameters). Permanent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Any other failure.
    #[error("generator {adapter} failed: {source}")]
    Backend {
        /// Adapter name.
        adapter: &'static str,
        /// The adapter's own error.
        #[source]
        source: BoxError,
        /// Whether a retry may succeed.
        temporary: bool,
    },
}

impl GenerateError {
    /// True when retrying later may succeed.
    pub fn is_temporary(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Backend { temporary, .. } => *temporary,
            Self::InvalidInput(_) => false,
        }
    }
}

/// Errors of [`Reranker`](super::Reranker).
#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    /// The model cannot be loaded or its server reached, or it timed out. Temporary.
    #[error("reranker {adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name.
        adapter: &'static str,
        /// What happened.
        message: String,
    },
    /// The request was refused as malformed. Permanent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Any other failure, including an answer that does not score every candidate.
    #[error("reranker {adapter} failed: {source}")]
    Backend {
        /// Adapter name.
        adapter: &'static str,
        /// The adapter's own error.
        #[source]
        source: BoxError,
        /// Whether a retry may succeed.
        temporary: bool,
    },
}

impl RerankError {
    /// True when retrying later may succeed.
    pub fn is_temporary(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Backend { temporary, .. } => *temporary,
            Self::InvalidInput(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_and_permanent_errors() {
        let down = IndexError::Unavailable {
            adapter: "x",
            message: "down".into(),
        };
        assert!(down.is_temporary());
        assert!(!IndexError::InvalidInput("k".into()).is_temporary());
        assert!(!IndexError::backend("x", "boom").is_temporary());
        let e = EmbedError::Unavailable {
            adapter: "candle",
            message: "no model".into(),
        };
        assert!(e.is_temporary());
        assert!(e.to_string().contains("no model"));
    }
}
