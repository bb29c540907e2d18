//! The token-counting port: how many tokens a text takes in the generator's vocabulary, so
//! that context, history and answer budgets can be held in the unit a model's window is
//! measured in.

/// Counts tokens as a generator's tokenizer does.
///
/// # Contract
///
/// - [`identity`](Self::identity) names the tokenizer (`tokenizer.json:<file>` or the estimate's
///   name); it is recorded in traces and frames beside every count.
/// - [`exact`](Self::exact) is true only when the counts are the generator's own tokenizer's,
///   false for an estimate.
/// - [`count`](Self::count) is total and deterministic: every string, however hostile
///   (control characters, lone combining marks, a megabyte of one character), gets a count, the
///   same one every time, without panicking; the empty string counts 0 and a text holding a
///   letter or digit counts at least 1. Special tokens a model adds around a whole prompt are
///   not counted.
/// - Counts are nearly additive: two texts joined by a space count at most the sum of their
///   counts plus 2, so summing the counts of a prompt's parts bounds the prompt.
/// - Cost is linear in the text's length; no network call.
pub trait TokenCounter: Send + Sync {
    /// The tokenizer's identity.
    fn identity(&self) -> String;

    /// True when the counts are the generator's own tokenizer's, not an estimate.
    fn exact(&self) -> bool;

    /// The tokens `text` takes.
    fn count(&self, text: &str) -> usize;
}
