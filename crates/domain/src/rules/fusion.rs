//! Reciprocal rank fusion.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::contracts::ChunkId;

/// A retrieval route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// Dense vectors.
    Dense,
    /// BM25 over text.
    Lexical,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Dense => "dense",
            Self::Lexical => "lexical",
        })
    }
}

/// Parameters of reciprocal rank fusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FusionConfig {
    /// The RRF constant; 60 by default.
    pub k: f64,
    /// Per-route weights; routes not listed weigh 1.
    pub weights: BTreeMap<Route, f64>,
}

impl Default for FusionConfig {
    fn default() -> Self {
        Self {
            k: 60.0,
            weights: BTreeMap::new(),
        }
    }
}

impl FusionConfig {
    /// The weight of `route`.
    pub fn weight(&self, route: Route) -> f64 {
        self.weights.get(&route).copied().unwrap_or(1.0)
    }
}

/// One route's contribution to a fused item.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RouteRank {
    /// The route.
    pub route: Route,
    /// 1-based rank within the route.
    pub rank: usize,
}

/// A fused result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fused {
    /// The item.
    pub chunk_id: ChunkId,
    /// Σ weight(route) / (k + rank).
    pub score: f64,
    /// Which routes found it, and at which rank.
    pub routes: Vec<RouteRank>,
}

/// Fuses ranked lists with reciprocal rank fusion: `score(d) = Σ_r w_r / (k + rank_r(d))`, with
/// 1-based ranks. Within one list only an item's first (best) position counts. Results are
/// ordered by descending score, ties broken by ascending chunk ID, so fusion is deterministic.
pub fn reciprocal_rank_fusion(
    lists: &[(Route, Vec<ChunkId>)],
    config: &FusionConfig,
) -> Vec<Fused> {
    let mut fused: BTreeMap<ChunkId, Fused> = BTreeMap::new();
    for (route, ids) in lists {
        let weight = config.weight(*route);
        let mut seen = std::collections::HashSet::new();
        let mut rank = 0;
        for id in ids {
            if !seen.insert(id) {
                continue;
            }
            rank += 1;
            let contribution = weight / (config.k + rank as f64);
            match fused.entry(id.clone()) {
                Entry::Occupied(mut e) => {
                    let f = e.get_mut();
                    f.score += contribution;
                    f.routes.push(RouteRank {
                        route: *route,
                        rank,
                    });
                }
                Entry::Vacant(e) => {
                    e.insert(Fused {
                        chunk_id: id.clone(),
                        score: contribution,
                        routes: vec![RouteRank {
                            route: *route,
                            rank,
                        }],
                    });
                }
            }
        }
    }
    let mut out: Vec<Fused> = fused.into_values().collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk_id.cmp(&b.chunk_id))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> ChunkId {
        ChunkId::derive(&crate::DocId::new(s).unwrap(), 0, &crate::sha256_hex(s))
    }

    #[test]
    fn items_found_by_both_routes_rise() {
        let (a, b, c) = (id("a"), id("b"), id("c"));
        let lists = vec![
            (Route::Dense, vec![a.clone(), b.clone()]),
            (Route::Lexical, vec![b.clone(), c.clone()]),
        ];
        let fused = reciprocal_rank_fusion(&lists, &FusionConfig::default());
        assert_eq!(fused[0].chunk_id, b);
        assert_eq!(fused[0].routes.len(), 2);
        assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
    }

    #[test]
    fn ties_break_by_chunk_id_and_weights_apply() {
        let (a, b) = (id("a"), id("b"));
        let lists = vec![
            (Route::Dense, vec![b.clone()]),
            (Route::Lexical, vec![a.clone()]),
        ];
        let fused = reciprocal_rank_fusion(&lists, &FusionConfig::default());
        assert_eq!(fused[0].chunk_id, a.min(b.clone()));
        let mut config = FusionConfig::default();
        config.weights.insert(Route::Dense, 2.0);
        let fused = reciprocal_rank_fusion(&lists, &config);
        assert_eq!(fused[0].chunk_id, b);
        assert!((fused[0].score - 2.0 / 61.0).abs() < 1e-12);
    }

    #[test]
    fn repeated_ids_count_once_per_list() {
        let a = id("a");
        let lists = vec![(Route::Dense, vec![a.clone(), a.clone()])];
        let fused = reciprocal_rank_fusion(&lists, &FusionConfig::default());
        assert_eq!(fused.len(), 1);
        assert!((fused[0].score - 1.0 / 61.0).abs() < 1e-12);
    }
}
