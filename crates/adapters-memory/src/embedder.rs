//! The hashing embedder: a deterministic test double with no semantics.

use zhiku_domain::ports::{EmbedError, Embedder};
use zhiku_domain::{Embedding, EmbeddingSpace, Normalization, Pooling};

use crate::analyzer::simple_tokens;

/// Feature hashing of [`simple_tokens`] into `dims` buckets with a hashed sign, L2-normalised.
///
/// Two texts are similar only in as much as they share tokens: it has no notion of meaning and
/// exists so that tests and the `dev` profile can exercise the dense route without a model.
/// Its space is `hashing-v1@fnv1a:<dims>:none:l2`.
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    space: EmbeddingSpace,
}

impl HashingEmbedder {
    /// An embedder producing `dims`-dimensional vectors (1 to 65 536).
    pub fn new(dims: usize) -> Result<Self, zhiku_domain::InvalidValue> {
        Ok(Self {
            space: EmbeddingSpace::new(
                "hashing-v1",
                "fnv1a",
                dims,
                Pooling::None,
                Normalization::L2,
            )?,
        })
    }

    fn embed(&self, text: &str) -> Result<Embedding, EmbedError> {
        let dims = self.space.dims();
        let mut values = vec![0f32; dims];
        let mut tokens = simple_tokens(text);
        if tokens.is_empty() {
            // Every text needs a direction, so empty text gets a fixed one.
            tokens.push("\u{0}empty".to_string());
        }
        for token in tokens {
            let h = fnv1a(token.as_bytes());
            let bucket = (h % dims as u64) as usize;
            let sign = if (h >> 63) & 1 == 0 { 1.0 } else { -1.0 };
            values[bucket] += sign;
        }
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm == 0.0 {
            // Hash collisions with opposite signs cancelled out; fall back to a fixed direction.
            values[0] = 1.0;
        } else {
            for v in &mut values {
                *v /= norm;
            }
        }
        self.space
            .embedding(values, false)
            .map_err(|e| EmbedError::InvalidInput(e.to_string()))
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

impl Embedder for HashingEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        texts.iter().map(|t| self.embed(t)).collect()
    }

    fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError> {
        self.embed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_tokens_mean_similarity() {
        let e = HashingEmbedder::new(256).unwrap();
        let a = e.embed_query("向量索引").unwrap();
        let b = e.embed_query("向量检索").unwrap();
        let c = e.embed_query("weather today").unwrap();
        let cos = |x: &Embedding, y: &Embedding| zhiku_domain::cosine(x.values(), y.values());
        assert!(cos(&a, &b) > cos(&a, &c));
        assert_eq!(e.space().identity(), "hashing-v1@fnv1a:256:none:l2");
    }
}
