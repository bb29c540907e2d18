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
}

impl Quantization {
    pub(crate) fn scalar_kind(self) -> usearch::ScalarKind {
        match self {
            Self::F32 => usearch::ScalarKind::F32,
            Self::F16 => usearch::ScalarKind::F16,
            Self::I8 => usearch::ScalarKind::I8,
        }
    }

    /// The name used in messages (`f32`, `f16`, `i8`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::I8 => "i8",
        }
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
    /// copy. Default: on for i8, off for f32 and f16.
    pub rescore: bool,
    /// The shortlist is `max(rescore_factor × k, rescore_min)` candidates. Defaults 4 and 40.
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

/// Links per graph node (HNSW's `M`), as in the bench.
pub(crate) const CONNECTIVITY: usize = 16;
/// Breadth of the graph walk when a vector is inserted (`ef_construction`), as in the bench.
pub(crate) const EXPANSION_ADD: usize = 200;

impl AnnOptions {
    /// The defaults for `quantization`: rescoring on for i8 only.
    pub fn new(quantization: Quantization) -> Self {
        Self {
            quantization,
            expansion_search: 128,
            rescore: quantization == Quantization::I8,
            rescore_factor: 4,
            rescore_min: 40,
            exact_scan_below: 256,
            snapshot_fraction: 0.10,
            snapshot_changes: 50_000,
            search_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .max(4),
        }
    }

    /// The shortlist a search of `k` results asks the graph for.
    pub(crate) fn shortlist(&self, k: usize) -> usize {
        if self.rescore {
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
    /// The graph's scalar type: `i8` (default), `f16` or `f32`.
    pub quantization: Quantization,
    /// Breadth of the graph walk of a search (HNSW's `ef`); higher is slower and finds more.
    pub ef: usize,
    /// Rescore the graph's shortlist exactly on the f32 vectors; unset: on for `i8` only.
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
    /// Why these settings cannot be used, if they cannot: an `ef` of 0 or above 4,096.
    pub fn check(&self) -> Result<(), String> {
        if self.ef == 0 || self.ef > 4096 {
            return Err(format!("ann ef must be 1 to 4096, not {}", self.ef));
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
