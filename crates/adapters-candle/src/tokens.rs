//! Counting tokens with a model's own `tokenizer.json`, so that budgets in tokens are the
//! generator's tokens, not an estimate.

use std::path::{Path, PathBuf};

use tokenizers::Tokenizer;
use zhiku_domain::ports::TokenCounter;

use crate::LoadError;

/// The largest `tokenizer.json` read (Qwen2.5's is 11 MB).
const MAX_TOKENIZER_BYTES: u64 = 64 << 20;

/// A token counter over a Hugging Face `tokenizer.json` (any model family the `tokenizers`
/// library reads: byte-level BPE, WordPiece, Unigram). Counts leave out the special tokens a
/// model adds around a whole input; truncation and padding in the file are switched off.
pub struct TokenizerFile {
    tokenizer: Tokenizer,
    identity: String,
}

impl std::fmt::Debug for TokenizerFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenizerFile")
            .field("identity", &self.identity)
            .finish()
    }
}

impl TokenizerFile {
    /// Loads `path` (a `tokenizer.json`, or a folder holding one).
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let file: PathBuf = if path.is_dir() {
            path.join("tokenizer.json")
        } else {
            path.to_path_buf()
        };
        let invalid = |reason: String| LoadError::Invalid {
            path: file.clone(),
            reason,
        };
        let size = std::fs::metadata(&file)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => LoadError::Missing {
                    path: file.clone(),
                    hint: "generator_tokenizer names a tokenizer.json (or a folder holding one)"
                        .into(),
                },
                _ => invalid(e.to_string()),
            })?
            .len();
        if size > MAX_TOKENIZER_BYTES {
            return Err(invalid(format!(
                "{size} bytes: larger than any tokenizer.json ({MAX_TOKENIZER_BYTES} at most)"
            )));
        }
        let bytes = std::fs::read(&file).map_err(|e| invalid(e.to_string()))?;
        let mut tokenizer = Tokenizer::from_bytes(&bytes).map_err(|e| invalid(e.to_string()))?;
        tokenizer
            .with_truncation(None)
            .map_err(|e| invalid(e.to_string()))?;
        tokenizer.with_padding(None);
        // Text that spells a special token (`<|im_end|>` in a document) is counted as the text
        // it is, as a server tokenising user content without special tokens does.
        tokenizer.set_encode_special_tokens(true);
        let name = file.parent().and_then(|p| p.file_name()).map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let digest = crate::short_hash(&bytes);
        Ok(Self {
            tokenizer,
            identity: format!("tokenizer.json:{name}@{digest}"),
        })
    }
}

impl TokenCounter for TokenizerFile {
    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn exact(&self) -> bool {
        true
    }

    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        // The library returns an error rather than panicking on the inputs we know of; a
        // panic in a vocabulary we have not met costs this count, not the run: the text's
        // bytes bound any byte-level tokenizer's count.
        std::panic::catch_unwind(|| self.tokenizer.encode_fast(text, false))
            .ok()
            .and_then(Result::ok)
            .map_or(text.len(), |e| e.len())
    }
}
