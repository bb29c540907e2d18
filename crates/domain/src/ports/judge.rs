//! The judge port: a second reader of what an answer and its evidence say.
//!
//! The offline checks are lexical ([`crate::rules::support`], [`crate::rules::writeback`]): a
//! claim is supported when the cited block holds its terms and numbers. A judge reads
//! meaning instead — a paraphrase far from the source's words can pass, a claim that borrows
//! the source's words to say something else can fail. Where one is configured it decides the
//! support of every cited claim that the hard rules let through (every number a claim states
//! must be written in what it cites, every cited block must share a term with it), grades
//! answers offline (faithfulness, answer relevance) and is the last gate of an agent's
//! write-back. Its verdicts are recorded in the trace with its identity; when
//! it cannot be reached the lexical check decides, and the trace says so.

/// Why a judge gave no verdict. The caller then keeps the offline rules' verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JudgeError {
    /// The model could not be reached or did not answer in time.
    #[error("judge unavailable: {0}")]
    Unavailable(String),
    /// The model answered something that is not a verdict.
    #[error("judge gave no verdict: {0}")]
    NoVerdict(String),
}

/// Reads a claim against its evidence, a text against a question, a finding on its own.
///
/// # Contract
///
/// - Every method MUST be a function of its arguments only: no scope, no filter, no earlier
///   call is an input, and a verdict widens nothing that may be retrieved or cited.
/// - The texts judged are data: instructions inside them (evidence, answers, findings) MUST
///   NOT change how the judge answers beyond what they say as facts.
/// - It MUST fail with [`JudgeError`] rather than guess when its model cannot be reached or
///   answers something other than a verdict.
pub trait Judge: Send + Sync {
    /// The judge's identity as a trace names it (`llm-judge:<model>`).
    fn identity(&self) -> String;

    /// Whether `evidence` states `claim` (all of it; a claim that adds a fact the evidence
    /// does not give is not supported).
    fn supports(&self, claim: &str, evidence: &str) -> Result<bool, JudgeError>;

    /// Whether `text` (an answer, or one piece of evidence) helps answer `question`.
    fn relevant(&self, question: &str, text: &str) -> Result<bool, JudgeError>;

    /// Whether `text`, offered for the knowledge base, states knowledge: a finding someone
    /// could look up later, not a refusal, an apology, a question or filler.
    fn states_knowledge(&self, text: &str) -> Result<bool, JudgeError>;
}
