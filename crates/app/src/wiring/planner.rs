//! The planners the configuration implies: the chat model's when answers come from one (it is
//! "the LLM when configured"), reading intent and parts with the offline rules, and the rules
//! standing in whenever it fails; the rules alone otherwise.

use std::sync::Arc;

use zhiku_adapters_offline::RulesPlanner;
use zhiku_adapters_openai::LlmPlanner;
use zhiku_domain::ports::Planner;
use zhiku_service::Planners;

use super::generator::chat_config;
use crate::config::{Config, GeneratorKind};

/// The offline rules planner: how retrieval evaluation makes a follow-up standalone, whatever
/// the configuration (so retrieval figures do not depend on a model).
pub fn rules_planner() -> Box<dyn Planner> {
    Box::new(RulesPlanner)
}

/// The planners for `config`.
pub fn planners_for(config: &Config) -> Planners {
    let primary: Box<dyn Planner> = match config.generator {
        GeneratorKind::Openai => Box::new(LlmPlanner::new(
            &chat_config(config),
            Arc::new(RulesPlanner),
        )),
        _ => Box::new(RulesPlanner),
    };
    Planners {
        primary: Some(primary),
        fallback: Some(Box::new(RulesPlanner)),
    }
}
