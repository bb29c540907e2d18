//! The tunable parts of an [`AnnVectorIndex`](crate::AnnVectorIndex): quantisation of the graph,
//! search breadth, exact rescoring, the exact-scan threshold and the snapshot policy.
//!
//! None of them is recorded in the store: they change how the graph is built and searched, not
//! what is stored, so they can change between opens. A snapshot built with another quantisation
//! is not loaded; the graph is rebuilt from SQLite instead (and snapshotted again by a writer).

use serde::{Deserialize, Serialize};

/// How the graph stores its copy of each vector. The f32 vectors in SQLite are always exact;
/// this is only the graph's working copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantization {
    /// 4 bytes per component: the graph's distances are exact.
    F32,
    /// 2 bytes per component (IEEE half).
    F16,
    /// 1 byte per component: a quarter of f32's memory; distances are approximate, so results
    /// are rescored on the f32 vectors by default.
    I8,
    /// 1 bit per component (its sign): a 32nd of f32's memory. The graph is walked by Hamming
    /// distance, which is no similarity, so results are always rescored on the f32 vectors,
    /// from a wider shortlist (see [`AnnOptions::new`]).
    B1,
}

impl Quantization {
    pub(crate) fn scalar_kind(self) -> usearch::ScalarKind {
        match self {
            Self::F32 => usearch::ScalarKind::F32,
            Self::F16 => usearch::ScalarKind::F16,
            Self::I8 => usearch::ScalarKind::I8,
            Self::B1 => usearch::ScalarKind::B1,
        }
    }

    /// The name used in messages (`f32`, `f16`, `i8`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::I8 => "i8",
            Self::B1 => "b1",
        }
    }

    /// The graph's metric: cosine, or Hamming over the sign bits of a binary graph.
    pub(crate) fn metric(self) -> usearch::MetricKind {
        match self {
            Self::B1 => usearch::MetricKind::Hamming,
            _ => usearch::MetricKind::Cos,
        }
    }

    /// True when the graph's own distances cannot serve as scores.
    pub(crate) fn needs_rescoring(self) -> bool {
        self == Self::B1
    }
}

/// Options of an [`AnnVectorIndex`](crate::AnnVectorIndex). Start from
/// [`AnnOptions::default`] (i8 with rescoring) or [`AnnOptions::new`] and change fields.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnOptions {
    /// The graph's scalar type. Default [`Quantization::I8`].
    pub quantization: Quantization,
    /// Breadth of the graph walk of a search (usearch's `expansion_search`, HNSW's `ef`). The
    /// walk is never narrower than the number of results it is asked for. Default 128: with
    /// rescoring it gives recall@10 ≥ 0.95 on the contract suite's random vectors and on the
    /// bench's text-like ones (where 64 sufficed at 20k).
    pub expansion_search: usize,
    /// Re-rank a shortlist of the graph's candidates by the exact cosine of their f32 vectors
    /// (read from SQLite). With it, scores are exact and ordering is exact within the
    /// shortlist; without it, the score is `1 - distance` of the graph's (possibly quantised)
    /// copy. Default: on for i8, off for f32 and f16; b1 always rescores.
    pub rescore: bool,
    /// The shortlist is `max(rescore_factor × k, rescore_min)` candidates. Defaults 4 and 40
    /// (b1: RESCORE_FACTOR_B1 and RESCORE_MIN_B1, its sign bits being a coarse copy).
    pub rescore_factor: usize,
    /// See [`rescore_factor`](Self::rescore_factor).
    pub rescore_min: usize,
    /// When a filter allows at most this many chunks (an upper bound from per-scope and
    /// per-document counts), the search scans exactly those chunks instead of walking the
    /// graph: faster for tiny sets and exact. 0 turns the shortcut off. Default 256: the scan
    /// reads each vector from SQLite (~6 µs a row measured at 10k × 384 dims, release build
    /// on a loaded 2-core machine), so 1,000 rows already cost more than the filtered walk.
    pub exact_scan_below: usize,
    /// A commit writes a new graph snapshot when the rows changed since the last one reach
    /// this fraction of the stored rows... Default 0.10.
    pub snapshot_fraction: f64,
    /// ...or this many rows, whichever comes first. Default 50 000.
    pub snapshot_changes: usize,
    /// Searches that may run at once inside usearch (each needs a context reserved in the
    /// graph); more wait for a free one. Default: the machine's parallelism, at least 4.
    pub search_threads: usize,
}

/// The b1 shortlist per result and its floor. Sign bits keep little of a vector: on the
/// contract suite's 2,000 random unit vectors of 384 dims, recall@10 after rescoring was 0.58
/// with a shortlist of 100, 0.76 with 200, 0.90 with 400 and 0.96 with 600 (and needed as much
/// at 64 dims). Embeddings of real text cluster, so a narrower list may do there; not measured
/// yet. The price is the rescoring: 600 f32 vectors read from SQLite per search.
pub(crate) const RESCORE_FACTOR_B1: usize = 60;
/// See [`RESCORE_FACTOR_B1`].
pub(crate) const RESCORE_MIN_B1: usize = 600;

/// Links per graph node (HNSW's `M`), as in the bench.
pub(crate) const CONNECTIVITY: usize = 16;
/// Breadth of the graph walk when a vector is inserted (`ef_construction`), as in the bench.
pub(crate) const EXPANSION_ADD: usize = 200;

impl AnnOptions {
    /// The defaults for `quantization`: rescoring on for i8 and b1, a wider shortlist for b1.
    pub fn new(quantization: Quantization) -> Self {
        let binary = quantization == Quantization::B1;
        Self {
            quantization,
            expansion_search: 128,
            rescore: matches!(quantization, Quantization::I8 | Quantization::B1),
            rescore_factor: if binary { RESCORE_FACTOR_B1 } else { 4 },
            rescore_min: if binary { RESCORE_MIN_B1 } else { 40 },
            exact_scan_below: 256,
            snapshot_fraction: 0.10,
            snapshot_changes: 50_000,
            search_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .max(4),
        }
    }

    /// True when a search rescores its shortlist: when asked to, and always for b1.
    pub(crate) fn rescores(&self) -> bool {
        self.rescore || self.quantization.needs_rescoring()
    }

    /// The shortlist a search of `k` results asks the graph for.
    pub(crate) fn shortlist(&self, k: usize) -> usize {
        if self.rescores() {
            k.saturating_mul(self.rescore_factor.max(1))
                .max(self.rescore_min)
        } else {
            k
        }
    }

    /// True when `changed` rows since the last snapshot of a store of `rows` rows call for a
    /// new one.
    pub(crate) fn wants_snapshot(&self, changed: usize, rows: usize) -> bool {
        changed > 0
            && (changed >= self.snapshot_changes
                || changed as f64 >= self.snapshot_fraction * rows as f64)
    }
}

impl Default for AnnOptions {
    fn default() -> Self {
        Self::new(Quantization::I8)
    }
}

/// The `[ann]` section of a configuration: what a user may tune of the embedded vector index.
/// Keys left out keep [`AnnOptions::default`]'s values; unknown keys are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AnnSettings {
    /// The graph's scalar type: `i8` (default), `f16`, `f32` or `b1`.
    pub quantization: Quantization,
    /// Breadth of the graph walk of a search (HNSW's `ef`); higher is slower and finds more.
    pub ef: usize,
    /// Rescore the graph's shortlist exactly on the f32 vectors; unset: on for `i8` and `b1`
    /// (which cannot do without).
    pub rescore: Option<bool>,
    /// Filters allowing at most this many chunks are answered by an exact scan.
    pub exact_scan_below: usize,
}

impl Default for AnnSettings {
    fn default() -> Self {
        let options = AnnOptions::default();
        Self {
            quantization: options.quantization,
            ef: options.expansion_search,
            rescore: None,
            exact_scan_below: options.exact_scan_below,
        }
    }
}

impl AnnSettings {
    /// Why these settings cannot be used, if they cannot: an `ef` of 0 or above 4,096, or a
    /// binary graph without rescoring.
    pub fn check(&self) -> Result<(), String> {
        if self.ef == 0 || self.ef > 4096 {
            return Err(format!("ann ef must be 1 to 4096, not {}", self.ef));
        }
        if self.quantization.needs_rescoring() && self.rescore == Some(false) {
            return Err(
                "ann quantization b1 needs rescore: the graph's Hamming distances over sign bits are no similarity scores"
                    .into(),
            );
        }
        Ok(())
    }

    /// The index options these settings give.
    pub fn options(&self) -> AnnOptions {
        let mut options = AnnOptions::new(self.quantization);
        options.expansion_search = self.ef;
        if let Some(rescore) = self.rescore {
            options.rescore = rescore;
        }
        options.exact_scan_below = self.exact_scan_below;
        options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_fill_defaults_and_refuse_unknown_keys() {
        let s: AnnSettings = serde_json::from_str(r#"{"quantization": "f16"}"#).unwrap();
        assert_eq!(s.quantization, Quantization::F16);
        let o = s.options();
        assert_eq!(o.expansion_search, AnnOptions::default().expansion_search);
        assert!(!o.rescore, "rescoring defaults to off for f16");
        let s: AnnSettings = serde_json::from_str(r#"{"rescore": true, "ef": 64}"#).unwrap();
        assert!(s.options().rescore);
        assert_eq!(s.options().expansion_search, 64);
        assert!(serde_json::from_str::<AnnSettings>(r#"{"eff": 64}"#).is_err());
        assert!(serde_json::from_str::<AnnSettings>(r#"{"quantization": "i4"}"#).is_err());
        let b1: AnnSettings = serde_json::from_str(r#"{"quantization": "b1"}"#).unwrap();
        assert!(b1.check().is_ok() && b1.options().rescores());
        assert!(b1.options().shortlist(10) >= 600);
        let unscored: AnnSettings =
            serde_json::from_str(r#"{"quantization": "b1", "rescore": false}"#).unwrap();
        assert!(unscored.check().unwrap_err().contains("rescore"));
        assert!(
            AnnSettings {
                ef: 0,
                ..AnnSettings::default()
            }
            .check()
            .is_err()
        );
    }
}
