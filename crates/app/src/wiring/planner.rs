//! The planners the configuration implies: the chat model's when `planner` names it (or, by
//! default, when answers come from one), replying to small talk with the offline rules, and the
//! rules standing in whenever it fails or is late; the rules alone otherwise.

use std::sync::Arc;
use std::time::Duration;

use zhiku_adapters_offline::RulesPlanner;
use zhiku_adapters_openai::LlmPlanner;
use zhiku_domain::ports::Planner;
use zhiku_service::Planners;

use super::generator::chat_config;
use crate::config::{Config, GeneratorKind, PlannerKind};

/// The offline rules planner: how retrieval evaluation makes a follow-up standalone, whatever
/// the configuration (so retrieval figures do not depend on a model).
pub fn rules_planner() -> Box<dyn Planner> {
    Box::new(RulesPlanner)
}

/// The planners for `config`: the chat model's (`planner = "llm"`, or `"auto"` with answers
/// from a chat model) within `planner_timeout_ms`, the rules otherwise.
pub fn planners_for(config: &Config) -> Planners {
    let model = match config.planner {
        PlannerKind::Llm => true,
        PlannerKind::Rules => false,
        PlannerKind::Auto => config.generator == GeneratorKind::Openai,
    };
    let primary: Box<dyn Planner> = if model {
        let mut chat = chat_config(config);
        chat.timeout = Duration::from_millis(config.planner_timeout_ms.max(1));
        Box::new(LlmPlanner::new(&chat, Arc::new(RulesPlanner)))
    } else {
        Box::new(RulesPlanner)
    };
    Planners {
        primary: Some(primary),
        fallback: Some(Box::new(RulesPlanner)),
        synonyms: config.synonyms.clone(),
    }
}
