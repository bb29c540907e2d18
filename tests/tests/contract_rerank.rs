//! The reranker contract over the rerankers that need no model or server.

use zhiku_adapters_offline::RuleReranker;
use zhiku_domain::ports::Reranker;

mod rule_reranker {
    use super::*;
    zhiku_tests::reranker_contract!(|()| -> Option<Box<dyn Reranker>> {
        Some(Box::new(RuleReranker::default()))
    });
}
