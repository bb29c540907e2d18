//! A query as every transport hands it to the service, and the bounds they all apply.

use anyhow::Result;
use zhiku_domain::usecases::RetrievalMode;
use zhiku_domain::{Filter, Principal, Scope};

use crate::KbError;
use crate::error::{Field, Invalid};

/// The bounds of a query every transport applies (`[serve]` `max_query_chars`, `max_k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    /// Most characters in a query or question.
    pub max_query_chars: usize,
    /// Largest `k` a caller may ask for.
    pub max_k: usize,
}

/// A search as the service takes it.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    /// The query text.
    pub query: String,
    /// Evidence wanted (default: the configured `k`).
    pub k: Option<usize>,
    /// Which routes.
    pub mode: RetrievalMode,
    /// `key=value` metadata terms, all required.
    pub metadata: Vec<(String, String)>,
    /// Locale prefix.
    pub locale: Option<String>,
    /// The transport's request ID, recorded in an answer's trace.
    pub request_id: Option<String>,
}

impl SearchQuery {
    /// A hybrid query without narrowing, after the bounds every transport applies: `text` (the
    /// `what` of the message) must not be blank nor longer than `max_query_chars` characters,
    /// and `k`, when given, lies in `1..=max_k`.
    pub fn checked(
        text: &str,
        what: &str,
        k: Option<usize>,
        limits: &QueryLimits,
    ) -> Result<Self, KbError> {
        if text.trim().is_empty() {
            return Err(Invalid::Empty {
                what: what.to_string(),
            }
            .into());
        }
        let chars = text.chars().count();
        if chars > limits.max_query_chars {
            return Err(Invalid::TooLong {
                what: what.to_string(),
                chars,
                limit: limits.max_query_chars,
            }
            .into());
        }
        if let Some(k) = k
            && (k == 0 || k > limits.max_k)
        {
            return Err(Invalid::K { max: limits.max_k }.into());
        }
        Ok(Self {
            query: text.to_string(),
            k,
            mode: RetrievalMode::Hybrid,
            metadata: Vec::new(),
            locale: None,
            request_id: None,
        })
    }
}

/// The filter `caller` searches within: its scopes, the person it acts for, and `metadata` and
/// `locale` from the request.
pub(crate) fn caller_filter(
    caller: &crate::Caller,
    metadata: &[(String, String)],
    locale: Option<&str>,
) -> std::result::Result<Filter, KbError> {
    filter_for(
        caller.scopes.clone(),
        caller.principal.as_ref(),
        metadata,
        locale,
    )
    .map_err(|e| KbError::invalid(Field::Filter, e))
}

/// A filter over `scopes` (and, for a caller acting for a person, that person's readers) with
/// `key=value` metadata terms and an optional locale prefix.
pub fn filter_for(
    scopes: Vec<Scope>,
    principal: Option<&Principal>,
    metadata: &[(String, String)],
    locale: Option<&str>,
) -> Result<Filter> {
    let mut filter = Filter::for_scopes(scopes)?;
    if let Some(principal) = principal {
        filter = filter.for_principal(principal);
    }
    for (k, v) in metadata {
        filter = filter.with_metadata(k.trim(), v.trim())?;
    }
    if let Some(locale) = locale {
        filter = filter.with_locale(zhiku_domain::Locale::new(locale)?);
    }
    Ok(filter)
}
