//! Fusing the routes' ranked lists into one ranking.
//!
//! Two methods, chosen by measurement (docs/measurements.md, "Fusion"):
//!
//! - **Reciprocal rank fusion** (`rrf`): `score(d) = Σ_r w_r / (k + rank_r(d))`. Ranks only, so
//!   it needs no calibration, but it is flat: a route that is weak for the corpus's language
//!   moves items up as much as a strong one does.
//! - **Convex combination** (`convex`): each route's scores are normalised within the query
//!   (min-max or z-score), then `score(d) = Σ_r w_r · norm_r(d)`, an item a route did not return
//!   taking that route's lowest normalised score. Scores carry how far ahead a hit is, so a
//!   confident route outweighs a flat one.
//!
//! Either can scale each route's weight by its per-query **confidence** (how far the route's
//! top score stands above the rest of its list, in standard deviations), and the dense route
//! can be cut by a **floor** relative to its top hit, and by an absolute minimum similarity.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashSet};
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

/// How the routes' lists are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FusionMethod {
    /// Reciprocal rank fusion over ranks.
    Rrf,
    /// A weighted sum of per-query normalised scores.
    Convex,
}

/// How a route's scores are normalised within one query, for [`FusionMethod::Convex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalisation {
    /// `(s − min) / (max − min)`: the top hit 1, the last 0.
    MinMax,
    /// `(s − mean) / std`.
    ZScore,
}

/// Parameters of fusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FusionConfig {
    /// The combination.
    pub method: FusionMethod,
    /// The RRF constant; 60 by default.
    pub k: f64,
    /// Per-route weights; routes not listed weigh 1.
    pub weights: BTreeMap<Route, f64>,
    /// Score normalisation of the convex combination.
    pub normalisation: Normalisation,
    /// Scale each route's weight by its confidence in this query ([`route_confidence`]).
    pub confidence: bool,
    /// Keep only dense hits scoring at least this fraction of the top dense hit's score
    /// (`None`: no relative floor).
    pub dense_floor: Option<f64>,
    /// Keep only dense hits with at least this similarity (`None`: none). Model-specific: a
    /// similarity of 0.8 means little for some models and much for others.
    pub dense_min_score: Option<f64>,
}

impl Default for FusionConfig {
    fn default() -> Self {
        Self {
            method: FusionMethod::Rrf,
            k: 60.0,
            weights: BTreeMap::new(),
            normalisation: Normalisation::MinMax,
            confidence: false,
            dense_floor: None,
            dense_min_score: None,
        }
    }
}

impl FusionConfig {
    /// Reciprocal rank fusion with the default constant and equal weights.
    pub fn rrf() -> Self {
        Self::default()
    }

    /// The weight of `route`.
    pub fn weight(&self, route: Route) -> f64 {
        self.weights.get(&route).copied().unwrap_or(1.0)
    }

    /// Sets the weight of `route`.
    pub fn with_weight(mut self, route: Route, weight: f64) -> Self {
        self.weights.insert(route, weight);
        self
    }

    /// The method's name in traces: `reciprocal_rank_fusion`, `convex_min_max` or
    /// `convex_z_score`, with `+confidence` when weights follow route confidence.
    pub fn method_name(&self) -> String {
        let base = match (self.method, self.normalisation) {
            (FusionMethod::Rrf, _) => "reciprocal_rank_fusion",
            (FusionMethod::Convex, Normalisation::MinMax) => "convex_min_max",
            (FusionMethod::Convex, Normalisation::ZScore) => "convex_z_score",
        };
        if self.confidence {
            format!("{base}+confidence")
        } else {
            base.to_string()
        }
    }

    /// Checks that every parameter is usable.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.k.is_finite() && self.k >= 0.0) {
            return Err(format!("fusion k must be a number ≥ 0, not {}", self.k));
        }
        for (route, w) in &self.weights {
            if !(w.is_finite() && *w >= 0.0) {
                return Err(format!("the {route} weight must be a number ≥ 0, not {w}"));
            }
        }
        if let Some(f) = self.dense_floor
            && !(f.is_finite() && (0.0..=1.0).contains(&f))
        {
            return Err(format!("the dense floor must lie in [0, 1], not {f}"));
        }
        if let Some(m) = self.dense_min_score
            && !m.is_finite()
        {
            return Err(format!("the dense minimum score must be a number, not {m}"));
        }
        Ok(())
    }

    /// How many of a dense route's hits (best first) pass the floor and the minimum score.
    pub fn dense_kept(&self, scores: &[f32]) -> usize {
        let Some(top) = scores.first().map(|s| f64::from(*s)) else {
            return 0;
        };
        let relative = match self.dense_floor {
            Some(f) if top > 0.0 => top * f,
            _ => f64::NEG_INFINITY,
        };
        let floor = relative.max(self.dense_min_score.unwrap_or(f64::NEG_INFINITY));
        scores
            .iter()
            .take_while(|s| f64::from(**s) >= floor)
            .count()
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
    /// The fused score; comparable within one fusion only.
    pub score: f64,
    /// Which routes found it, and at which rank.
    pub routes: Vec<RouteRank>,
}

/// One route's ranked list: chunk IDs with the route's own scores, best first.
pub type RouteList = (Route, Vec<(ChunkId, f32)>);

/// How far a route's top score stands above the rest of its list: the top score's z-score
/// within the list, at least 0; 1 for a list of one, 0 for an empty list or equal scores.
pub fn route_confidence(scores: &[f32]) -> f64 {
    match scores.len() {
        0 => 0.0,
        1 => 1.0,
        n => {
            let xs: Vec<f64> = scores.iter().map(|s| f64::from(*s)).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            let std = var.sqrt();
            if std <= f64::EPSILON * mean.abs().max(1.0) {
                return 0.0;
            }
            ((xs[0] - mean) / std).max(0.0)
        }
    }
}

/// Fuses the routes' lists with `config`: the dense list is first cut at its floor
/// ([`FusionConfig::dense_kept`]), then combined by the method. Within one list only an item's
/// first (best) position counts. Results are ordered by descending score, ties broken by
/// ascending chunk ID, so fusion is deterministic.
pub fn fuse(lists: &[RouteList], config: &FusionConfig) -> Vec<Fused> {
    let lists: Vec<(Route, Vec<(ChunkId, f32)>)> = lists
        .iter()
        .map(|(route, items)| {
            let kept = match route {
                Route::Dense => {
                    config.dense_kept(&items.iter().map(|(_, s)| *s).collect::<Vec<_>>())
                }
                Route::Lexical => items.len(),
            };
            let mut seen = HashSet::new();
            let items = items[..kept]
                .iter()
                .filter(|(id, _)| seen.insert(id))
                .cloned()
                .collect();
            (*route, items)
        })
        .collect();
    let weights = effective_weights(&lists, config);
    let mut fused: BTreeMap<ChunkId, Fused> = BTreeMap::new();
    for ((route, items), weight) in lists.iter().zip(&weights) {
        let contributions = match config.method {
            FusionMethod::Rrf => items
                .iter()
                .enumerate()
                .map(|(i, _)| weight / (config.k + (i + 1) as f64))
                .collect::<Vec<_>>(),
            FusionMethod::Convex => normalised(items, config.normalisation)
                .into_iter()
                .map(|n| weight * n)
                .collect(),
        };
        for (i, ((id, _), contribution)) in items.iter().zip(contributions).enumerate() {
            let rank = RouteRank {
                route: *route,
                rank: i + 1,
            };
            match fused.entry(id.clone()) {
                Entry::Occupied(mut e) => {
                    let f = e.get_mut();
                    f.score += contribution;
                    f.routes.push(rank);
                }
                Entry::Vacant(e) => {
                    e.insert(Fused {
                        chunk_id: id.clone(),
                        score: contribution,
                        routes: vec![rank],
                    });
                }
            }
        }
    }
    if config.method == FusionMethod::Convex {
        // An item a route did not return takes that route's lowest normalised score.
        for ((route, items), weight) in lists.iter().zip(&weights) {
            let floor = weight * lowest_normalised(items, config.normalisation);
            if floor == 0.0 {
                continue;
            }
            for f in fused.values_mut() {
                if !f.routes.iter().any(|r| r.route == *route) {
                    f.score += floor;
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

/// Reciprocal rank fusion of ranked lists (scores unused, so no floor): `fuse` with
/// [`FusionMethod::Rrf`] and `config`'s constant and weights.
pub fn reciprocal_rank_fusion(
    lists: &[(Route, Vec<ChunkId>)],
    config: &FusionConfig,
) -> Vec<Fused> {
    let lists: Vec<RouteList> = lists
        .iter()
        .map(|(route, ids)| (*route, ids.iter().map(|id| (id.clone(), 0.0)).collect()))
        .collect();
    let config = FusionConfig {
        method: FusionMethod::Rrf,
        confidence: false,
        dense_floor: None,
        dense_min_score: None,
        ..config.clone()
    };
    fuse(&lists, &config)
}

/// The weight of each list in this query: the configured weight, scaled by the route's
/// confidence relative to the mean confidence of the lists when `config.confidence` is set.
fn effective_weights(lists: &[RouteList], config: &FusionConfig) -> Vec<f64> {
    let base: Vec<f64> = lists.iter().map(|(r, _)| config.weight(*r)).collect();
    if !config.confidence || lists.len() < 2 {
        return base;
    }
    let conf: Vec<f64> = lists
        .iter()
        .map(|(_, items)| route_confidence(&items.iter().map(|(_, s)| *s).collect::<Vec<_>>()))
        .collect();
    let mean = conf.iter().sum::<f64>() / conf.len() as f64;
    if mean <= 0.0 {
        return base;
    }
    base.iter().zip(conf).map(|(w, c)| w * c / mean).collect()
}

fn stats(items: &[(ChunkId, f32)]) -> (f64, f64, f64, f64) {
    let xs = items.iter().map(|(_, s)| f64::from(*s));
    let (mut min, mut max, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
    for x in xs.clone() {
        min = min.min(x);
        max = max.max(x);
        sum += x;
    }
    let n = items.len().max(1) as f64;
    let mean = sum / n;
    let std = (xs.map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    (min, max, mean, std)
}

fn normalised(items: &[(ChunkId, f32)], how: Normalisation) -> Vec<f64> {
    let (min, max, mean, std) = stats(items);
    items
        .iter()
        .map(|(_, s)| {
            let s = f64::from(*s);
            match how {
                Normalisation::MinMax if max > min => (s - min) / (max - min),
                Normalisation::MinMax => 1.0,
                Normalisation::ZScore if std > 0.0 => (s - mean) / std,
                Normalisation::ZScore => 0.0,
            }
        })
        .collect()
}

fn lowest_normalised(items: &[(ChunkId, f32)], how: Normalisation) -> f64 {
    if items.is_empty() {
        return 0.0;
    }
    normalised(items, how)
        .into_iter()
        .fold(f64::INFINITY, f64::min)
        .min(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> ChunkId {
        ChunkId::derive(&crate::DocId::new(s).unwrap(), 0, &crate::sha256_hex(s))
    }

    fn scored(route: Route, items: &[(&ChunkId, f32)]) -> RouteList {
        (
            route,
            items.iter().map(|(id, s)| ((*id).clone(), *s)).collect(),
        )
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
        assert_eq!(fused[0].chunk_id, a.clone().min(b.clone()));
        let config = FusionConfig::default().with_weight(Route::Dense, 2.0);
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
        let fused = fuse(
            &[scored(Route::Dense, &[(&a, 0.9), (&a, 0.1)])],
            &FusionConfig {
                method: FusionMethod::Convex,
                ..FusionConfig::default()
            },
        );
        assert_eq!(fused.len(), 1);
        assert_eq!(
            fused[0].routes,
            vec![RouteRank {
                route: Route::Dense,
                rank: 1
            }]
        );
    }

    #[test]
    fn a_convex_combination_follows_how_far_ahead_a_hit_is() {
        // Lexical is sure of `a` (far ahead); dense barely prefers `b` over `a`.
        let (a, b, c) = (id("a"), id("b"), id("c"));
        let lists = vec![
            scored(Route::Lexical, &[(&a, 30.0), (&c, 5.0), (&b, 4.0)]),
            scored(Route::Dense, &[(&b, 0.81), (&a, 0.80), (&c, 0.60)]),
        ];
        let convex = FusionConfig {
            method: FusionMethod::Convex,
            ..FusionConfig::default()
        };
        assert_eq!(fuse(&lists, &convex)[0].chunk_id, a);
        // Min-max: a = 1 + (0.80-0.60)/0.21, b = (4-4)/26 + 1.
        let fused = fuse(&lists, &convex);
        let score = |x: &ChunkId| fused.iter().find(|f| &f.chunk_id == x).unwrap().score;
        assert!((score(&a) - (1.0 + 0.2 / 0.21)).abs() < 1e-6);
        assert!((score(&b) - 1.0).abs() < 1e-6);
        // A missing item takes the route's lowest normalised score (0 under min-max).
        let lists = vec![
            scored(Route::Lexical, &[(&a, 2.0), (&b, 1.0)]),
            scored(Route::Dense, &[(&c, 0.9), (&b, 0.5)]),
        ];
        let fused = fuse(&lists, &convex);
        let score = |x: &ChunkId| fused.iter().find(|f| &f.chunk_id == x).unwrap().score;
        assert!((score(&a) - 1.0).abs() < 1e-9 && (score(&c) - 1.0).abs() < 1e-9);
        assert!(score(&b).abs() < 1e-9);
        // Under z-scores a missing item is pulled down by the route's lowest z.
        let z = FusionConfig {
            method: FusionMethod::Convex,
            normalisation: Normalisation::ZScore,
            ..FusionConfig::default()
        };
        let fused = fuse(&lists, &z);
        let score = |x: &ChunkId| fused.iter().find(|f| &f.chunk_id == x).unwrap().score;
        assert!((score(&a) - 0.0).abs() < 1e-9, "{}", score(&a));
        assert!((score(&b) - (-2.0)).abs() < 1e-9, "{}", score(&b));
    }

    #[test]
    fn confidence_lets_a_peaked_route_outweigh_a_flat_one() {
        let ids: Vec<ChunkId> = (0..10).map(|i| id(&format!("d{i}"))).collect();
        // Lexical: one clear winner (ids[3]); dense: flat at the top, ids[0] first.
        let lexical: Vec<(ChunkId, f32)> = ids
            .iter()
            .enumerate()
            .map(|(i, x)| (x.clone(), if i == 3 { 20.0 } else { 5.0 - i as f32 * 0.1 }))
            .collect();
        let mut lexical_sorted = lexical.clone();
        lexical_sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
        let dense: Vec<(ChunkId, f32)> = ids
            .iter()
            .enumerate()
            .map(|(i, x)| (x.clone(), if i == 9 { 0.1 } else { 0.5 - i as f32 * 1e-4 }))
            .collect();
        let lists = vec![(Route::Lexical, lexical_sorted), (Route::Dense, dense)];
        let plain = FusionConfig::default();
        let with = FusionConfig {
            confidence: true,
            ..FusionConfig::default()
        };
        // RRF alone: ids[0] (dense 1st, lexical 2nd) beats ids[3] (lexical 1st, dense 4th).
        assert_eq!(fuse(&lists, &plain)[0].chunk_id, ids[0]);
        assert_eq!(fuse(&lists, &with)[0].chunk_id, ids[3]);
        assert!(with.method_name().ends_with("+confidence"));
        assert!(route_confidence(&[20.0, 5.0, 4.9, 4.8]) > route_confidence(&[0.5, 0.499, 0.498]));
        assert_eq!(route_confidence(&[]), 0.0);
        assert_eq!(route_confidence(&[0.3]), 1.0);
        assert_eq!(route_confidence(&[0.3, 0.3, 0.3]), 0.0);
    }

    #[test]
    fn the_dense_floor_cuts_relative_to_the_top_hit_and_by_similarity() {
        let scores = [0.9, 0.85, 0.7, 0.5, 0.2];
        assert_eq!(FusionConfig::default().dense_kept(&scores), 5);
        let relative = FusionConfig {
            dense_floor: Some(0.9),
            ..FusionConfig::default()
        };
        assert_eq!(relative.dense_kept(&scores), 2);
        let absolute = FusionConfig {
            dense_min_score: Some(0.6),
            ..FusionConfig::default()
        };
        assert_eq!(absolute.dense_kept(&scores), 3);
        assert_eq!(absolute.dense_kept(&[0.5, 0.4]), 0);
        assert_eq!(absolute.dense_kept(&[]), 0);
        let both = FusionConfig {
            dense_floor: Some(0.5),
            dense_min_score: Some(0.6),
            ..FusionConfig::default()
        };
        assert_eq!(both.dense_kept(&scores), 3);
        // Fusion applies it: a weak dense hit does not reach the fused list; lexical is uncut.
        let (a, b, c) = (id("a"), id("b"), id("c"));
        let lists = vec![
            scored(Route::Dense, &[(&a, 0.8), (&b, 0.3)]),
            scored(Route::Lexical, &[(&c, 1.0), (&b, 0.1)]),
        ];
        let fused: Vec<ChunkId> = fuse(&lists, &relative)
            .into_iter()
            .map(|f| f.chunk_id)
            .collect();
        assert_eq!(fused.len(), 3);
        let b_routes = fuse(&lists, &relative)
            .into_iter()
            .find(|f| f.chunk_id == b)
            .unwrap()
            .routes;
        assert_eq!(
            b_routes,
            vec![RouteRank {
                route: Route::Lexical,
                rank: 2
            }]
        );
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(FusionConfig::default().validate().is_ok());
        let bad = [
            FusionConfig {
                k: f64::NAN,
                ..FusionConfig::default()
            },
            FusionConfig::default().with_weight(Route::Dense, -1.0),
            FusionConfig {
                dense_floor: Some(1.5),
                ..FusionConfig::default()
            },
            FusionConfig {
                dense_min_score: Some(f64::INFINITY),
                ..FusionConfig::default()
            },
        ];
        for config in bad {
            assert!(config.validate().is_err(), "{config:?}");
        }
    }

    #[test]
    fn a_config_round_trips_and_defaults_missing_fields() {
        let config: FusionConfig =
            serde_json::from_str(r#"{"method":"convex","weights":{"dense":0.3}}"#).unwrap();
        assert_eq!(config.method, FusionMethod::Convex);
        assert_eq!(config.weight(Route::Dense), 0.3);
        assert_eq!(config.weight(Route::Lexical), 1.0);
        assert_eq!(config.k, 60.0);
        let back: FusionConfig =
            serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(back, config);
    }
}
