//! The planner the configuration implies: the chat model's when answers come from one (it is
//! "the LLM when configured"), the rules otherwise.

use zhiku_adapters_generate::LlmPlanner;
use zhiku_domain::ports::Planner;

use super::generator::chat_config;
use crate::config::{Config, GeneratorKind};

/// The planner for `config`: `None` keeps the answerer's rules planner.
pub fn planner_for(config: &Config) -> Option<Box<dyn Planner>> {
    match config.generator {
        GeneratorKind::Openai => Some(Box::new(LlmPlanner::new(&chat_config(config)))),
        _ => None,
    }
}
