//! The chunking policy stored with every index.

use serde::{Deserialize, Serialize};

use super::values::{InvalidValue, sha256_hex};

/// The version of the chunking algorithm implemented by [`crate::chunker`]. Bump it whenever the
/// algorithm's output can change for the same input and parameters.
///
/// 2: pipe tables are cut by rows and a chunk that continues a table carries its header rows
/// (which its ID covers). 1: the first.
pub const CHUNKER_VERSION: u32 = 2;

/// The oldest version a policy on record may name: a store chunked by it opens and reads, and
/// asks for a rebuild before it is extended (its policy differs from this build's).
pub const OLDEST_CHUNKER_VERSION: u32 = 1;

/// How documents are cut into chunks.
///
/// The policy (and its [`fingerprint`](Self::fingerprint)) is stored with every index. Changing
/// it means a versioned rebuild: an index built with another policy refuses to be extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PolicyRecord", into = "PolicyRecord")]
pub struct ChunkingPolicy {
    version: u32,
    max_chars: usize,
    overlap_chars: usize,
}

#[derive(Serialize, Deserialize)]
struct PolicyRecord {
    version: u32,
    max_chars: usize,
    overlap_chars: usize,
}

impl ChunkingPolicy {
    /// The default: windows of at most 480 characters with 64 characters of overlap. 480 keeps
    /// a window of Chinese text inside the 512-token limit of BERT-family embedders.
    pub const DEFAULT_MAX_CHARS: usize = 480;
    /// See [`Self::DEFAULT_MAX_CHARS`].
    pub const DEFAULT_OVERLAP_CHARS: usize = 64;

    /// Validates a policy. `version` must be one this build knows (from
    /// [`OLDEST_CHUNKER_VERSION`] to [`CHUNKER_VERSION`]; it chunks with the latter only);
    /// `max_chars` is 16 to 100 000; `overlap_chars` is less than half of `max_chars`.
    pub fn new(version: u32, max_chars: usize, overlap_chars: usize) -> Result<Self, InvalidValue> {
        let shown = format!("v{version}/{max_chars}/{overlap_chars}");
        if !(OLDEST_CHUNKER_VERSION..=CHUNKER_VERSION).contains(&version) {
            return Err(InvalidValue::new(
                "chunking policy",
                &shown,
                format!(
                    "this build knows chunker versions {OLDEST_CHUNKER_VERSION} to {CHUNKER_VERSION}"
                ),
            ));
        }
        if !(16..=100_000).contains(&max_chars) {
            return Err(InvalidValue::new(
                "chunking policy",
                &shown,
                "max_chars must be between 16 and 100000",
            ));
        }
        if overlap_chars * 2 >= max_chars {
            return Err(InvalidValue::new(
                "chunking policy",
                &shown,
                "overlap_chars must be less than half of max_chars",
            ));
        }
        Ok(Self {
            version,
            max_chars,
            overlap_chars,
        })
    }

    /// A policy of the current chunker version.
    pub fn with_sizes(max_chars: usize, overlap_chars: usize) -> Result<Self, InvalidValue> {
        Self::new(CHUNKER_VERSION, max_chars, overlap_chars)
    }

    /// Algorithm version.
    pub fn version(&self) -> u32 {
        self.version
    }
    /// Largest chunk, in characters.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }
    /// Characters of the previous window repeated at the start of the next one.
    pub fn overlap_chars(&self) -> usize {
        self.overlap_chars
    }

    /// Human-readable form, e.g. `chunker-v2 max=480 overlap=64`.
    pub fn describe(&self) -> String {
        format!(
            "chunker-v{} max={} overlap={}",
            self.version, self.max_chars, self.overlap_chars
        )
    }

    /// 16 hex digits identifying the policy; equal fingerprints mean identical chunking.
    pub fn fingerprint(&self) -> String {
        sha256_hex(self.describe())[..16].to_string()
    }
}

impl Default for ChunkingPolicy {
    fn default() -> Self {
        Self {
            version: CHUNKER_VERSION,
            max_chars: Self::DEFAULT_MAX_CHARS,
            overlap_chars: Self::DEFAULT_OVERLAP_CHARS,
        }
    }
}

impl TryFrom<PolicyRecord> for ChunkingPolicy {
    type Error = InvalidValue;
    fn try_from(r: PolicyRecord) -> Result<Self, Self::Error> {
        Self::new(r.version, r.max_chars, r.overlap_chars)
    }
}

impl From<ChunkingPolicy> for PolicyRecord {
    fn from(p: ChunkingPolicy) -> Self {
        Self {
            version: p.version,
            max_chars: p.max_chars,
            overlap_chars: p.overlap_chars,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_validate_and_fingerprint() {
        assert!(ChunkingPolicy::new(99, 480, 64).is_err());
        assert!(ChunkingPolicy::with_sizes(8, 0).is_err());
        assert!(ChunkingPolicy::with_sizes(100, 50).is_err());
        let a = ChunkingPolicy::with_sizes(480, 64).unwrap();
        assert_eq!(a, ChunkingPolicy::default());
        assert_ne!(
            a.fingerprint(),
            ChunkingPolicy::with_sizes(480, 32).unwrap().fingerprint()
        );
        assert_eq!(a.fingerprint().len(), 16);
        let bad: Result<ChunkingPolicy, _> =
            serde_json::from_str(r#"{"version":1,"max_chars":10,"overlap_chars":9}"#);
        assert!(bad.is_err());
        // A store chunked by the first version reads, and asks for a rebuild to be extended.
        let first = ChunkingPolicy::new(1, 480, 64).unwrap();
        assert_ne!(first, ChunkingPolicy::default());
        assert!(ChunkingPolicy::new(0, 480, 64).is_err());
    }
}
