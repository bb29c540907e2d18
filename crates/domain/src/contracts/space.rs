//! Embedding spaces and the vectors that live in them.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::values::InvalidValue;

/// How token vectors are pooled into one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// The first (`[CLS]`) token's hidden state.
    Cls,
    /// The mean over non-padding tokens.
    Mean,
    /// Not a transformer pooling (e.g. feature hashing).
    None,
}

/// How sentence vectors are normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Normalization {
    /// Unit Euclidean length.
    L2,
    /// Left as the model produced them.
    None,
}

impl fmt::Display for Pooling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cls => "cls",
            Self::Mean => "mean",
            Self::None => "none",
        })
    }
}

impl fmt::Display for Normalization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::L2 => "l2",
            Self::None => "none",
        })
    }
}

/// The identity of a vector space: model id, model revision, dimensions, pooling and
/// normalisation. Vectors of two different spaces are never compared or stored together.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "SpaceRecord", into = "SpaceRecord")]
pub struct EmbeddingSpace {
    model_id: String,
    revision: String,
    dims: usize,
    pooling: Pooling,
    normalization: Normalization,
    identity: Arc<str>,
}

#[derive(Serialize, Deserialize)]
struct SpaceRecord {
    model_id: String,
    revision: String,
    dims: usize,
    pooling: Pooling,
    normalization: Normalization,
}

impl EmbeddingSpace {
    /// Validates and builds a space. The model id and revision are non-empty and contain no
    /// whitespace, `@` or `:` (they are separators of the identity); dims is 1 to 65 536.
    pub fn new(
        model_id: impl Into<String>,
        revision: impl Into<String>,
        dims: usize,
        pooling: Pooling,
        normalization: Normalization,
    ) -> Result<Self, InvalidValue> {
        let model_id = model_id.into();
        let revision = revision.into();
        for (what, value) in [("model id", &model_id), ("model revision", &revision)] {
            if value.is_empty()
                || value
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '@' || c == ':')
            {
                return Err(InvalidValue::new(
                    "embedding space",
                    value,
                    format!("{what} must be non-empty without whitespace, '@' or ':'"),
                ));
            }
        }
        if !(1..=65_536).contains(&dims) {
            return Err(InvalidValue::new(
                "embedding space",
                &dims.to_string(),
                "dims must be between 1 and 65536",
            ));
        }
        let identity = Arc::from(format!(
            "{model_id}@{revision}:{dims}:{pooling}:{normalization}"
        ));
        Ok(Self {
            model_id,
            revision,
            dims,
            pooling,
            normalization,
            identity,
        })
    }

    /// `model@revision:dims:pooling:normalisation`, e.g.
    /// `BAAI/bge-small-zh-v1.5@7999e1d:512:cls:l2`.
    pub fn identity(&self) -> &str {
        &self.identity
    }
    /// The model id.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }
    /// The model revision or weights hash.
    pub fn revision(&self) -> &str {
        &self.revision
    }
    /// Vector length.
    pub fn dims(&self) -> usize {
        self.dims
    }
    /// Pooling.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }
    /// Normalisation.
    pub fn normalization(&self) -> Normalization {
        self.normalization
    }

    /// Wraps `values` as a vector of this space, checking length and finiteness.
    pub fn embedding(&self, values: Vec<f32>, truncated: bool) -> Result<Embedding, InvalidValue> {
        if values.len() != self.dims {
            return Err(InvalidValue::new(
                "embedding",
                self.identity(),
                format!(
                    "has {} values, the space has {} dims",
                    values.len(),
                    self.dims
                ),
            ));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(InvalidValue::new(
                "embedding",
                self.identity(),
                "contains NaN or infinity",
            ));
        }
        Ok(Embedding {
            space: self.identity.clone(),
            values,
            truncated,
        })
    }
}

impl fmt::Display for EmbeddingSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.identity)
    }
}

impl TryFrom<SpaceRecord> for EmbeddingSpace {
    type Error = InvalidValue;
    fn try_from(r: SpaceRecord) -> Result<Self, Self::Error> {
        Self::new(r.model_id, r.revision, r.dims, r.pooling, r.normalization)
    }
}

impl From<EmbeddingSpace> for SpaceRecord {
    fn from(s: EmbeddingSpace) -> Self {
        Self {
            model_id: s.model_id,
            revision: s.revision,
            dims: s.dims,
            pooling: s.pooling,
            normalization: s.normalization,
        }
    }
}

/// A vector tagged with the identity of the space it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    space: Arc<str>,
    values: Vec<f32>,
    truncated: bool,
}

impl Embedding {
    /// The identity of the space (see [`EmbeddingSpace::identity`]).
    pub fn space(&self) -> &str {
        &self.space
    }
    /// The components.
    pub fn values(&self) -> &[f32] {
        &self.values
    }
    /// True when the input was longer than the model's maximum sequence and was truncated.
    pub fn truncated(&self) -> bool {
        self.truncated
    }
    /// Euclidean length.
    pub fn norm(&self) -> f32 {
        self.values.iter().map(|v| v * v).sum::<f32>().sqrt()
    }
}

/// Cosine similarity of two equally long slices (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_names_every_part() {
        let s = EmbeddingSpace::new(
            "BAAI/bge-small-zh-v1.5",
            "7999e1d",
            512,
            Pooling::Cls,
            Normalization::L2,
        )
        .unwrap();
        assert_eq!(s.identity(), "BAAI/bge-small-zh-v1.5@7999e1d:512:cls:l2");
        assert!(EmbeddingSpace::new("m", "r:1", 3, Pooling::Mean, Normalization::L2).is_err());
        assert!(EmbeddingSpace::new("m", "r", 0, Pooling::Mean, Normalization::L2).is_err());
        assert!(s.embedding(vec![0.0; 3], false).is_err());
        assert!(s.embedding(vec![f32::NAN; 512], false).is_err());
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<EmbeddingSpace>(&json).unwrap(), s);
    }
}
