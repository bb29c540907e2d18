//! Whether one generation attempt's answer passes: its citations against this round's chunks,
//! then each of its sentences against the blocks it cites. Pure: the answerer records what
//! these decide.

use std::collections::BTreeSet;

use crate::contracts::ChunkId;
use crate::ports::SourceBlock;
use crate::rules::citation::{self, CitationViolation};
use crate::rules::context::{self, feedback_for};
use crate::rules::support::{self, ClaimCheck, ClaimVerdict};

/// This round's citable chunks, in marker order.
pub(super) struct Round {
    pub(super) ids: Vec<ChunkId>,
    set: BTreeSet<ChunkId>,
}

impl Round {
    pub(super) fn new(sources: &[SourceBlock]) -> Self {
        let ids: Vec<ChunkId> = sources.iter().map(|s| s.chunk_id.clone()).collect();
        Self {
            set: ids.iter().cloned().collect(),
            ids,
        }
    }

    /// Each block's marker and what it says (title, headings, text) for the support check.
    pub(super) fn blocks(&self, sources: &[SourceBlock]) -> Vec<(u32, String)> {
        sources
            .iter()
            .map(|s| {
                (
                    s.marker,
                    format!("{}\n{}\n{}", s.title, s.heading_path.join("\n"), s.text),
                )
            })
            .collect()
    }
}

/// How an attempt's answer fared.
pub(super) enum Verdict {
    /// The answer is the no-material sentence, citing nothing.
    NoMaterial,
    /// The answer is rejected; the next attempt gets the feedback.
    Rejected(Rejection),
    /// Every citation names this round's evidence and every sentence is supported by what it
    /// cites.
    Accepted {
        /// The chunks cited, each with the marker that first cited it.
        cited: Vec<(u32, ChunkId)>,
        /// Sentences that state something.
        claims: usize,
        /// The check that passed the answer.
        method: String,
    },
}

/// Why an attempt's answer was rejected, as the trace records it and the next attempt is told.
pub(super) struct Rejection {
    /// The rule broken (`answer_has_no_citation`, `claim_not_supported`, …).
    pub(super) code: String,
    /// The citations at fault, as written.
    pub(super) bad: Vec<String>,
    /// What the next attempt is told.
    pub(super) feedback: String,
}

/// The chunks `text` cites when its citations pass this round's rules (defence in depth: every
/// resolved ID must be in this round's set); otherwise the no-material verdict or the
/// rejection.
pub(super) fn read_citations(text: &str, round: &Round) -> Result<Vec<(u32, ChunkId)>, Verdict> {
    let resolved = citation::resolve(text, &round.ids);
    if resolved.written == 0 && context::is_no_material(text) {
        return Err(Verdict::NoMaterial);
    }
    let verdict = resolved.check().and_then(|()| {
        let cited: Vec<ChunkId> = resolved.cited.iter().map(|(_, id)| id.clone()).collect();
        citation::validate(&cited, &round.set)
    });
    match verdict {
        Ok(()) => Ok(resolved.cited),
        Err(violation) => Err(Verdict::Rejected(citation_rejection(
            &violation,
            round.ids.len(),
        ))),
    }
}

fn citation_rejection(violation: &CitationViolation, sources: usize) -> Rejection {
    let bad = match violation {
        CitationViolation::AnswerHasNoCitation => Vec::new(),
        CitationViolation::CitationNotInThisRound { ids } => ids.clone(),
    };
    Rejection {
        code: violation.code().to_string(),
        bad,
        feedback: feedback_for(violation, sources),
    }
}

/// The rejection the support check's `claims` call for, if any: an answer must state something
/// (markers alone, "[1] [2] [3]", say nothing), and each sentence that does must be cited and
/// supported by what it cites.
pub(super) fn support_rejection(claims: &[ClaimCheck]) -> Option<Rejection> {
    let all_pass = claims.iter().all(|c| c.verdict.passes());
    if all_pass && claims.iter().any(|c| c.verdict == ClaimVerdict::Supported) {
        return None;
    }
    if all_pass {
        return Some(Rejection {
            code: "answer_states_nothing".to_string(),
            bad: Vec::new(),
            feedback: "Your previous answer stated nothing: answer the question in sentences, \
                       each followed by the number of the source that states it, or reply with \
                       the no-material sentence."
                .to_string(),
        });
    }
    let uncited = claims.iter().any(|c| c.verdict == ClaimVerdict::Uncited);
    let unsupported = claims
        .iter()
        .any(|c| c.verdict == ClaimVerdict::NotSupported);
    let bad: BTreeSet<String> = claims
        .iter()
        .filter(|c| c.verdict == ClaimVerdict::NotSupported)
        .flat_map(|c| c.cited.iter().map(|m| format!("[{m}]")))
        .collect();
    Some(Rejection {
        code: if unsupported || !uncited {
            "claim_not_supported"
        } else {
            "uncited_claim"
        }
        .to_string(),
        bad: bad.into_iter().collect(),
        feedback: support::feedback(claims),
    })
}

/// The sentences of an accepted answer that state something.
pub(super) fn stated(claims: &[ClaimCheck]) -> usize {
    claims
        .iter()
        .filter(|c| c.verdict != ClaimVerdict::NotAClaim)
        .count()
}
