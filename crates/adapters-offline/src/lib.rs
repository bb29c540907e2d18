//! Everything zhiku does with no model and no server, each behind a domain port, so that a
//! knowledge base answers, ranks and reads conversations on a machine with nothing else:
//!
//! - [`ExtractiveGenerator`] — the offline [`Generator`](zhiku_domain::ports::Generator):
//!   deterministic, it picks the evidence sentences that cover the question best and cites each
//!   with its `[n]` marker, or answers with the no-material sentence.
//! - [`FallbackGenerator`] — a chain of generators: when one is unreachable or times out, the
//!   next answers (a backup server, then the extractive generator), with a notice and the name
//!   of the generator that answered.
//! - [`RuleReranker`] — the offline [`Reranker`](zhiku_domain::ports::Reranker): coverage,
//!   heading match, fused-rank prior and metadata boosts.
//! - [`RulesPlanner`] — the offline [`Planner`](zhiku_domain::ports::Planner): small talk,
//!   several-part questions and follow-up rewrites by phrase rules (Chinese, Simplified and
//!   Traditional, and English); composed as the fallback of a model's planner.
//!
//! Citation validation and support checks happen in the domain, never here.

mod extractive;
mod fallback;
pub mod planner;
mod rerank;
mod tokens;

pub use extractive::{ExtractiveConfig, ExtractiveGenerator};
pub use fallback::FallbackGenerator;
pub use planner::{RULES_PLANNER, RulesPlanner};
pub use rerank::{MetadataBoost, RuleConfig, RuleReranker};
pub use tokens::{EstimatedTokens, TOKEN_ESTIMATE};
