//! Every stored value reads back: round-trip properties over the contract types.
//!
//! A store writes these values (the catalog's entries, every chunk record, the audit log) and
//! reads them back on every start, so a value a constructor accepts but the reader refuses
//! bricks the store (issue 35: a far-future expiry written with a five-digit year). For every
//! value a constructor accepts, its text form parses back to it (`parse(to_string(v)) == v`,
//! where the type has a text form) and its serde JSON form deserialises back to it. Inputs mix
//! arbitrary strings with hostile characters (controls, bidi overrides, line separators) and
//! near-valid shapes, so that both the refusals and the acceptances are exercised.

use std::sync::Arc;

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    Access, AccessRule, Chunk, ChunkId, ChunkRecord, ChunkingPolicy, DocAttributes, DocId,
    EmbeddingSpace, Locale, Metadata, Normalization, PageSpan, Pooling, Reader, Revision, Scope,
    SectionId, Source, TimeToLive, Timestamp, Title, sha256_hex,
};
use crate::contracts::{CatalogEntry, DocAbout};
use crate::ports::AuditEntry;
use crate::rules::retention::{EXPIRES_AT, Retention, TTL};

/// `v` survives serde JSON, and the JSON reads back to the same JSON.
fn json_round_trips<T>(v: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(v).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: T = serde_json::from_str(&json)
        .map_err(|e| TestCaseError::fail(format!("{json} does not read back: {e}")))?;
    prop_assert_eq!(&back, v, "{}", json);
    let again = serde_json::to_string(&back).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(again, json);
    Ok(())
}

/// Characters an attacker writes to break a line, a terminal or a parser.
const HOSTILE: &[char] = &[
    'a',
    'Z',
    '0',
    '9',
    '文',
    'é',
    ' ',
    ':',
    '-',
    '_',
    '.',
    '/',
    '\\',
    '"',
    '\'',
    '\n',
    '\r',
    '\t',
    '\u{0}',
    '\u{7}',
    '\u{1b}',
    '\u{7f}',
    '\u{85}',
    '\u{9b}',
    '\u{200b}',
    '\u{202e}',
    '\u{2028}',
    '\u{2066}',
    '\u{feff}',
    '\u{1f600}',
];

/// Arbitrary text: any Unicode, printable text, or a mix of hostile characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\PC{0,24}",
        vec(proptest::sample::select(HOSTILE), 0..24).prop_map(|c| c.into_iter().collect()),
    ]
}

/// Text that is often a valid document ID (and sometimes not).
fn doc_id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        text(),
        "[a-z0-9_./:-]{1,16}(\\.md)?",
        "[\\PC&&[^\\s]]{1,8}( [\\PC&&[^\\s]]{1,8})?",
    ]
}

fn doc_id() -> impl Strategy<Value = DocId> {
    doc_id_text().prop_filter_map("a valid document ID", |s| DocId::new(s).ok())
}

fn scope() -> impl Strategy<Value = Scope> {
    "[A-Za-z0-9_.:/-]{1,12}".prop_map(|s| Scope::new(s).expect("scope"))
}

/// Any access: everyone by no rule, or hostile reader names by any rule.
fn access() -> impl Strategy<Value = Access> {
    let reader = prop_oneof![
        Just("*".to_string()),
        text().prop_map(|n| format!("user:{n}")),
        text().prop_map(|n| format!("group:{n}")),
    ]
    .prop_filter_map("a valid reader", |r| Reader::new(r).ok());
    let rule = prop_oneof![
        Just(AccessRule::Open),
        Just(AccessRule::ScopeDefault),
        Just(AccessRule::Document),
        Just(AccessRule::Api),
        text().prop_map(|pattern| AccessRule::Folder { pattern }),
    ];
    prop_oneof![
        Just(Access::everyone()),
        (vec(reader, 0..6), rule).prop_map(|(r, rule)| Access::new(r, rule).expect("few readers")),
    ]
}

fn locale() -> impl Strategy<Value = Locale> {
    "[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,2}".prop_map(|s| Locale::new(s).expect("locale"))
}

fn title() -> impl Strategy<Value = Title> {
    text().prop_filter_map("a valid title", |s| Title::new(s).ok())
}

fn source() -> impl Strategy<Value = Source> {
    doc_id_text().prop_filter_map("a valid source", |s| Source::new(s).ok())
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        any::<i64>().prop_map(Timestamp::from_unix),
        (Timestamp::MIN.unix()..=Timestamp::MAX.unix()).prop_map(Timestamp::from_unix),
        (-4_000_000_000i64..=4_000_000_000).prop_map(Timestamp::from_unix),
        Just(Timestamp::MIN),
        Just(Timestamp::MAX),
    ]
}

fn ttl() -> impl Strategy<Value = TimeToLive> {
    prop_oneof![
        any::<u64>(),
        1..=TimeToLive::MAX_SECS,
        Just(TimeToLive::MAX_SECS)
    ]
    .prop_filter_map("a valid ttl", |s| TimeToLive::from_secs(s).ok())
}

fn metadata_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_.-]{1,12}".boxed(),
        text().boxed(),
        Just(TTL.to_string()).boxed(),
        Just(EXPIRES_AT.to_string()).boxed(),
    ]
}

/// Any JSON value: scalars (every number kind, hostile strings), arrays, nested objects.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn metadata() -> impl Strategy<Value = Metadata> {
    btree_map(metadata_key(), json_value(), 0..5).prop_map(|m| {
        let mut out = Metadata::new();
        for (k, v) in m {
            // An invalid key is refused; the rest is kept.
            let _ = out.insert(k, v);
        }
        out
    })
}

fn page_span() -> impl Strategy<Value = PageSpan> {
    (any::<u32>(), any::<u32>()).prop_filter_map("a valid page span", |(a, b)| {
        PageSpan::new(a.min(b), a.max(b)).ok()
    })
}

fn attributes() -> impl Strategy<Value = DocAttributes> {
    (
        text(),
        scope(),
        locale(),
        title(),
        source(),
        metadata(),
        proptest::option::of(any::<u32>()),
        proptest::option::of(timestamp()),
        access(),
    )
        .prop_map(
            |(content, scope, locale, title, source, metadata, page_count, expires_at, access)| {
                DocAttributes {
                    revision: Revision::of_content(&content),
                    scope,
                    locale,
                    title,
                    source,
                    metadata,
                    page_count,
                    expires_at,
                    access,
                }
            },
        )
}

fn chunk() -> impl Strategy<Value = Chunk> {
    (
        doc_id(),
        0usize..1_000_000_000,
        text(),
        vec(text(), 0..4),
        any::<u32>(),
        attributes(),
        proptest::option::of(page_span()),
    )
        .prop_map(|(doc, start, content, headings, ordinal, attrs, pages)| {
            let chunk = Chunk::new(doc, start, content, headings, ordinal, Arc::new(attrs));
            match pages {
                Some(p) => chunk.with_pages(p),
                None => chunk,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_timestamp_writes_a_four_digit_year_and_reads_back(t in timestamp()) {
        let text = t.to_string();
        prop_assert_eq!(text.len(), "0000-01-01T00:00:00Z".len(), "{}", text);
        prop_assert_eq!(Timestamp::parse(&text), Ok(t));
        json_round_trips(&t)?;
    }

    #[test]
    fn every_accepted_timestamp_text_reads_back(
        y in 0i64..=9999,
        mo in 1i64..=12,
        d in 1i64..=31,
        h in 0i64..=23,
        mi in 0i64..=59,
        s in 0i64..=60,
        frac in proptest::option::of("[0-9]{1,9}"),
        zone in prop_oneof![
            Just("Z".to_string()),
            Just("z".to_string()),
            (proptest::bool::ANY, 0i64..=23, 0i64..=59)
                .prop_map(|(neg, h, m)| format!("{}{h:02}:{m:02}", if neg { '-' } else { '+' })),
        ],
        bare in proptest::bool::weighted(0.1),
    ) {
        let text = if bare {
            format!("{y:04}-{mo:02}-{d:02}")
        } else {
            let frac = frac.map(|f| format!(".{f}")).unwrap_or_default();
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{zone}")
        };
        if let Ok(t) = Timestamp::parse(&text) {
            prop_assert!((Timestamp::MIN..=Timestamp::MAX).contains(&t));
            prop_assert_eq!(Timestamp::parse(&t.to_string()), Ok(t));
            json_round_trips(&t)?;
        }
    }

    #[test]
    fn any_text_a_timestamp_accepts_reads_back(text in text()) {
        if let Ok(t) = Timestamp::parse(&text) {
            prop_assert_eq!(Timestamp::parse(&t.to_string()), Ok(t));
        }
    }

    #[test]
    fn every_ttl_reads_back(ttl in ttl()) {
        prop_assert_eq!(TimeToLive::parse(&ttl.to_string()), Ok(ttl));
        prop_assert!(ttl.secs() >= 1 && ttl.secs() <= TimeToLive::MAX_SECS);
    }

    #[test]
    fn any_ttl_text_accepted_reads_back(
        text in prop_oneof![
            text(),
            "([0-9]{1,12}[wdhmsWDHMS]){1,4}",
        ]
    ) {
        if let Ok(ttl) = TimeToLive::parse(&text) {
            prop_assert!(ttl.secs() <= TimeToLive::MAX_SECS);
            prop_assert_eq!(TimeToLive::parse(&ttl.to_string()), Ok(ttl));
        }
    }

    #[test]
    fn every_expiry_a_document_can_state_is_a_readable_instant(
        indexed_at in timestamp(),
        ttl in prop_oneof!["[0-9]{1,12}[wdhms]", Just("10000000d".to_string())],
        expires_at in prop_oneof![
            text(),
            "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T[0-2][0-9]:[0-5][0-9]:[0-5][0-9][+-](0[0-9]|1[0-9]|2[0-3]):[0-5][0-9]",
            Just("9999-12-31T23:59:59-23:59".to_string()),
        ],
    ) {
        let mut m = Metadata::new();
        m.insert(TTL, Value::String(ttl)).expect("key");
        m.insert(EXPIRES_AT, Value::String(expires_at)).expect("key");
        if let Ok(r) = Retention::of_metadata("doc", &m)
            && let Some(at) = r.expiry(Some(indexed_at))
        {
            prop_assert_eq!(Timestamp::parse(&at.to_string()), Ok(at));
        }
    }

    #[test]
    fn string_values_read_back(s in doc_id_text(), any_s in text()) {
        for s in [&s, &any_s] {
            if let Ok(v) = DocId::new(s) {
                let shown = v.to_string();
                prop_assert_eq!(DocId::new(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
            if let Ok(v) = Title::new(s) {
                let shown = v.to_string();
                prop_assert_eq!(Title::new(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
            if let Ok(v) = Source::new(s) {
                let shown = v.to_string();
                prop_assert_eq!(Source::new(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
            if let Ok(v) = Scope::new(s) {
                let shown = v.to_string();
                prop_assert_eq!(Scope::new(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
            if let Ok(v) = Locale::new(s) {
                let shown = v.to_string();
                prop_assert_eq!(Locale::new(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
            if let Ok(v) = Revision::new(s) {
                let shown = v.to_string();
                prop_assert_eq!(Revision::new(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
            if let Ok(v) = SectionId::parse(s) {
                let shown = v.to_string();
                prop_assert_eq!(SectionId::parse(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
            if let Ok(v) = ChunkId::parse(s) {
                let shown = v.to_string();
                prop_assert_eq!(ChunkId::parse(&shown), Ok(v.clone()));
                json_round_trips(&v)?;
            }
        }
    }

    #[test]
    fn near_valid_ids_read_back(
        scope_text in "[A-Za-z0-9_.:/ -]{0,12}",
        locale_text in "[a-zA-Z]{1,4}(-[a-zA-Z0-9]{0,9}){0,3}",
        hex in "[0-9a-fA-F]{15,17}",
        revision in "[0-9a-fA-F]{63,65}",
    ) {
        if let Ok(v) = Scope::new(&scope_text) {
            json_round_trips(&v)?;
            prop_assert_eq!(Scope::new(v.as_str()), Ok(v));
        }
        if let Ok(v) = Locale::new(&locale_text) {
            json_round_trips(&v)?;
            prop_assert_eq!(Locale::new(v.as_str()), Ok(v));
        }
        if let Ok(v) = SectionId::parse(&hex) {
            json_round_trips(&v)?;
            prop_assert_eq!(SectionId::parse(v.as_str()), Ok(v));
        }
        if let Ok(v) = Revision::new(&revision) {
            json_round_trips(&v)?;
            prop_assert_eq!(Revision::new(v.as_str()), Ok(v));
        }
    }

    #[test]
    fn derived_ids_read_back(
        doc in doc_id(),
        start in any::<usize>(),
        content in text(),
        path in vec(text(), 0..4),
    ) {
        let id = ChunkId::derive(&doc, start, &sha256_hex(&content));
        prop_assert_eq!(ChunkId::parse(id.as_str()), Ok(id.clone()));
        prop_assert_eq!(id.doc_part(), doc.as_str());
        prop_assert_eq!(id.start(), start);
        json_round_trips(&id)?;
        let section = SectionId::derive(&doc, &path);
        prop_assert_eq!(SectionId::parse(section.as_str()), Ok(section.clone()));
        json_round_trips(&section)?;
    }

    #[test]
    fn metadata_and_page_spans_read_back(m in metadata(), pages in page_span()) {
        json_round_trips(&m)?;
        json_round_trips(&pages)?;
    }

    #[test]
    fn chunks_read_back_through_their_records(chunk in chunk()) {
        json_round_trips(&chunk)?;
        let record: ChunkRecord = chunk.to_record();
        let json = serde_json::to_string(&record).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: ChunkRecord = serde_json::from_str(&json)
            .map_err(|e| TestCaseError::fail(format!("{json}: {e}")))?;
        prop_assert_eq!(Chunk::from_record(back), Ok(chunk));
    }

    #[test]
    fn policies_and_spaces_read_back(
        max in 0usize..200_000,
        overlap in 0usize..100_000,
        model in "[A-Za-z0-9/._@: -]{0,16}",
        revision in "[A-Za-z0-9]{0,8}",
        dims in 0usize..70_000,
        pooling in prop_oneof![Just(Pooling::Cls), Just(Pooling::Mean), Just(Pooling::None)],
        normalization in prop_oneof![Just(Normalization::L2), Just(Normalization::None)],
    ) {
        if let Ok(p) = ChunkingPolicy::with_sizes(max, overlap) {
            json_round_trips(&p)?;
        }
        if let Ok(s) = EmbeddingSpace::new(model, revision, dims, pooling, normalization) {
            json_round_trips(&s)?;
        }
    }

    #[test]
    fn catalog_entries_and_audit_entries_read_back(
        doc in doc_id(),
        content in text(),
        starts in vec(any::<usize>(), 0..4),
        about in proptest::option::of((text(), text(), scope(), access())),
        indexed_at in proptest::option::of(timestamp()),
        ttl in proptest::option::of(ttl()),
        expires_at in proptest::option::of(timestamp()),
        strings in vec(text(), 7),
        at in timestamp(),
    ) {
        let revision = Revision::of_content(&content);
        let entry = CatalogEntry {
            revision: revision.clone(),
            fingerprint: sha256_hex(&content)[..32].to_string(),
            chunk_ids: starts
                .iter()
                .map(|s| ChunkId::derive(&doc, *s, revision.as_str()))
                .collect(),
            about: about.map(|(title, source, scope, access)| DocAbout {
                title,
                source,
                scope,
                access,
            }),
            indexed_at,
            // What the indexer stores: the expiry resolved from the document's retention.
            expires_at: Retention { expires_at, ttl }.expiry(indexed_at),
        };
        json_round_trips(&entry)?;
        let entry = AuditEntry {
            at,
            who: strings[0].clone(),
            doc_id: strings[1].clone(),
            scope: strings[2].clone(),
            decision: strings[3].clone(),
            reason: strings[4].clone(),
            detail: strings[5].clone(),
            duplicate_of: Some(strings[6].clone()),
            content_hash: revision.to_string(),
        };
        json_round_trips(&entry)?;
    }
}

/// Issue 35, High 1: a far-future expiry, as a writer sends it, is refused where it is read,
/// with a reason, instead of being stored as an instant no reader can parse.
#[test]
fn a_far_future_expiry_is_refused_at_parse_time_with_a_clear_reason() {
    let of = |key: &str, value: &str| {
        let mut m = Metadata::new();
        m.insert(key, Value::String(value.into())).expect("key");
        Retention::of_metadata("notes/far.md", &m)
    };
    let err = of(TTL, "10000000d").unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("notes/far.md")
            && shown.contains("ttl")
            && shown.contains("10000000d")
            && shown.contains("at most 100 years"),
        "{shown}"
    );
    let err = of(EXPIRES_AT, "9999-12-31T23:59:59-23:59").unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("notes/far.md")
            && shown.contains("expires_at")
            && shown.contains("9999-12-31T23:59:59Z")
            && shown.contains("four-digit year"),
        "{shown}"
    );
    // The largest accepted values: the latest expires_at and the longest ttl, counted from the
    // latest indexing time, give an instant written with four digits that parses back.
    let latest = of(EXPIRES_AT, "9999-12-31T23:59:59Z").unwrap();
    let longest = of(TTL, "36525d").unwrap();
    for r in [latest, longest] {
        let at = r.expiry(Some(Timestamp::MAX)).expect("an expiry");
        let text = at.to_string();
        assert_eq!(text, "9999-12-31T23:59:59Z");
        assert_eq!(Timestamp::parse(&text).unwrap(), at);
        let json = serde_json::to_string(&at).unwrap();
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), at);
    }
    let now = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
    let at = longest.expiry(Some(now)).unwrap();
    // 36,525 days: a century of Julian years (2100 is no leap year, so one day more).
    assert_eq!(at.to_string(), "2126-01-02T00:00:00Z");
}

/// Found by the properties above: without serde_json's exact float parsing, a metadata number
/// read back one unit in the last place off.
#[test]
fn metadata_floats_read_back_exactly() {
    for x in [
        1.249_582_454_536_882e224,
        1.119_841_367_643_558_7e-277,
        0.1,
        -0.0,
        5e-324,
    ] {
        let mut m = Metadata::new();
        m.insert("x", Value::from(x)).expect("key");
        let back: Metadata = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m, "{x:e}");
    }
}
