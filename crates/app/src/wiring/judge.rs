//! The judge the configuration names: the chat model of `llm_url` / `llm_model` for
//! `judge = "llm"`, none (the rules alone) for `judge = "lexical"`.

use zhiku_adapters_openai::LlmJudge;
use zhiku_domain::ports::Judge;

use super::generator::chat_config;
use crate::config::{Config, JudgeKind};

/// The judge for `config`: `None` leaves the offline rules to decide.
pub fn judge_for(config: &Config) -> Option<Box<dyn Judge>> {
    match config.judge {
        JudgeKind::Llm => Some(Box::new(LlmJudge::new(&chat_config(config)))),
        JudgeKind::Lexical => None,
    }
}
