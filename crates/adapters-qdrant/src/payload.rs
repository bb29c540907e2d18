//! Chunks as Qdrant points: deterministic point IDs, the payload layout, and the domain
//! [`Filter`] as a Qdrant filter.
//!
//! Payload of a point (one chunk):
//!
//! | key | value | payload index |
//! |---|---|---|
//! | `chunk_id` | the full chunk ID | – |
//! | `doc_id` | document ID | keyword |
//! | `scope` | access scope | keyword, tenant key (`is_tenant`) |
//! | `locale_terms` | every lower-cased prefix of the locale (`zh`, `zh-cn`) | keyword |
//! | `metadata_terms` | `key=value` for every filterable metadata value | keyword |
//! | `access_terms` | the document's [access index terms](zhiku_domain::Access::index_terms): none when everyone in the scope may read it | keyword |
//! | `revision`, `locale`, `title`, `source`, `metadata` | the document's attributes | – |
//! | `content`, `sha256`, `start`, `end`, `heading_path`, `ordinal` | the chunk itself | – |
//! | `norm` | Euclidean length of the vector as given (Qdrant stores it normalised) | – |

use std::collections::HashMap;

use qdrant_client::Payload;
use qdrant_client::qdrant::{self, Condition, PointStruct};
use sha2::{Digest, Sha256};
use zhiku_domain::ports::EmbeddedChunk;
use zhiku_domain::{Chunk, ChunkId, ChunkRecord, Filter, RESTRICTED_TERM};

use crate::error::permanent;

pub(crate) const CHUNK_ID: &str = "chunk_id";
pub(crate) const DOC_ID: &str = "doc_id";
pub(crate) const SCOPE: &str = "scope";
pub(crate) const LOCALE_TERMS: &str = "locale_terms";
pub(crate) const METADATA_TERMS: &str = "metadata_terms";
pub(crate) const ACCESS_TERMS: &str = "access_terms";
pub(crate) const NORM: &str = "norm";

/// The point ID of a chunk: a UUID made of the first 16 bytes of sha256(chunk ID), with the
/// RFC 9562 version 8 ("custom") and variant bits set. The same chunk always lands on the same
/// point, so re-upserting replaces instead of duplicating; the full chunk ID rides in the payload
/// and is checked on every read.
pub fn point_id(chunk: &ChunkId) -> String {
    uuid_of(chunk.as_str())
}

/// A UUID made of the first 16 bytes of sha256(`text`), with the RFC 9562 version 8
/// ("custom") and variant bits set: the point ID of whatever `text` names (a chunk, a catalog
/// row, a document), the same every time.
pub(crate) fn uuid_of(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The text of a point ID as the server returns it.
pub(crate) fn point_id_text(id: &qdrant::PointId) -> Option<String> {
    use qdrant::point_id::PointIdOptions;
    match id.point_id_options.as_ref()? {
        PointIdOptions::Uuid(u) => Some(u.to_ascii_lowercase()),
        PointIdOptions::Num(n) => Some(n.to_string()),
    }
}

fn norm(values: &[f32]) -> f64 {
    values
        .iter()
        .map(|v| f64::from(*v) * f64::from(*v))
        .sum::<f64>()
        .sqrt()
}

/// The payload of a chunk's point: its record and the terms its filters match.
pub(crate) fn chunk_payload(chunk: &Chunk) -> Result<Payload, zhiku_domain::ports::IndexError> {
    let record = serde_json::to_value(chunk.to_record())
        .map_err(|e| permanent(format!("cannot serialise chunk {}: {e}", chunk.chunk_id())))?;
    let serde_json::Value::Object(mut map) = record else {
        return Err(permanent(format!(
            "chunk {} did not serialise to an object",
            chunk.chunk_id()
        )));
    };
    map.insert(
        LOCALE_TERMS.into(),
        serde_json::json!(chunk.doc().locale.match_terms()),
    );
    map.insert(
        METADATA_TERMS.into(),
        serde_json::json!(chunk.doc().metadata.filter_terms()),
    );
    map.insert(
        ACCESS_TERMS.into(),
        serde_json::json!(chunk.doc().access.index_terms()),
    );
    Ok(Payload::from(map))
}

/// The point of an embedded chunk.
pub(crate) fn to_point(
    item: &EmbeddedChunk,
) -> Result<PointStruct, zhiku_domain::ports::IndexError> {
    let chunk = &item.chunk;
    let mut payload = chunk_payload(chunk)?;
    let values = item.embedding.values();
    payload.insert(NORM, norm(values));
    Ok(PointStruct::new(
        point_id(chunk.chunk_id()),
        values.to_vec(),
        payload,
    ))
}

/// Rebuilds the chunk stored in a point's payload, checking every invariant of the chunk.
pub(crate) fn to_chunk(payload: HashMap<String, qdrant::Value>) -> Result<Chunk, String> {
    let json = serde_json::Value::from(Payload::from(payload));
    let record: ChunkRecord =
        serde_json::from_value(json).map_err(|e| format!("unreadable chunk payload: {e}"))?;
    let id = record.chunk_id.clone();
    Chunk::from_record(record).map_err(|e| format!("stored chunk {id} is corrupt: {e}"))
}

/// A string payload field.
pub(crate) fn string_field(payload: &HashMap<String, qdrant::Value>, key: &str) -> Option<String> {
    match payload.get(key)?.kind.as_ref()? {
        qdrant::value::Kind::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

/// A numeric payload field.
pub(crate) fn number_field(payload: &HashMap<String, qdrant::Value>, key: &str) -> Option<f64> {
    match payload.get(key)?.kind.as_ref()? {
        qdrant::value::Kind::DoubleValue(d) => Some(*d),
        qdrant::value::Kind::IntegerValue(i) => Some(*i as f64),
        _ => None,
    }
}

/// An integer payload field, exactly (a number read as `f64` loses digits past 2^53).
pub(crate) fn integer_field(payload: &HashMap<String, qdrant::Value>, key: &str) -> Option<i64> {
    match payload.get(key)?.kind.as_ref()? {
        qdrant::value::Kind::IntegerValue(i) => Some(*i),
        _ => None,
    }
}

/// The domain filter as Qdrant conditions, every one of which must hold. Returns `None` when
/// the filter can match nothing (an empty document list), so no request is needed.
///
/// - scopes: `scope` is any of them (keyword "any" match on the tenant key);
/// - document IDs: `doc_id` is any of them;
/// - locale: `locale_terms` contains the lower-cased tag (prefix semantics of
///   [`Locale::match_terms`](zhiku_domain::Locale::match_terms));
/// - metadata: `metadata_terms` contains `key=value`, one condition per pair;
/// - readers: `access_terms` lacks the restricted mark or holds one of the principal's terms.
pub fn to_qdrant_filter(filter: &Filter) -> Option<qdrant::Filter> {
    let mut must = vec![Condition::matches(
        SCOPE,
        filter
            .scopes()
            .iter()
            .map(|s| s.as_str().to_string())
            .collect::<Vec<_>>(),
    )];
    if let Some(ids) = filter.doc_ids() {
        if ids.is_empty() {
            return None;
        }
        must.push(Condition::matches(
            DOC_ID,
            ids.iter()
                .map(|d| d.as_str().to_string())
                .collect::<Vec<_>>(),
        ));
    }
    if let Some(term) = filter.locale_term() {
        must.push(Condition::matches(LOCALE_TERMS, term));
    }
    for term in filter.metadata_terms() {
        must.push(Condition::matches(METADATA_TERMS, term));
    }
    if let Some(readers) = filter.reader_index_terms() {
        // Open (not marked restricted: also every point written before access existed) or
        // listing one of the principal's reader terms.
        let mut any = vec![Condition::from(qdrant::Filter::must_not([
            Condition::matches(ACCESS_TERMS, RESTRICTED_TERM.to_string()),
        ]))];
        if !readers.is_empty() {
            any.push(Condition::matches(ACCESS_TERMS, readers));
        }
        must.push(Condition::from(qdrant::Filter::should(any)));
    }
    Some(qdrant::Filter::must(must))
}

/// Only the points of one document.
pub(crate) fn document_filter(doc: &zhiku_domain::DocId) -> qdrant::Filter {
    qdrant::Filter::must([Condition::matches(DOC_ID, doc.as_str().to_string())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdrant::condition::ConditionOneOf;
    use qdrant::r#match::MatchValue;
    use std::sync::Arc;
    use zhiku_domain::{
        DocId, Document, EmbeddingSpace, Locale, Metadata, Normalization, Pooling, Scope, Source,
        Title,
    };

    fn chunk() -> Chunk {
        let metadata: Metadata = serde_json::from_value(
            serde_json::json!({"tags": ["a", "b"], "n": 1.5, "year": 2024, "ok": true, "nested": {"x": 1}}),
        )
        .unwrap();
        let d = Document::builder(
            DocId::new("guides/切分.md").unwrap(),
            Source::new("guides/切分.md").unwrap(),
            "切分策略 chunking 🚀\r\n",
        )
        .scope(Scope::new("team-a").unwrap())
        .locale(Locale::new("zh-CN").unwrap())
        .title(Title::new("切分").unwrap())
        .metadata(metadata)
        .build();
        Chunk::new(
            d.id().clone(),
            3,
            "切分策略 chunking 🚀\r\n".into(),
            vec!["H1".into(), "H2".into()],
            2,
            Arc::clone(d.attributes()),
        )
    }

    #[test]
    fn point_ids_are_deterministic_uuids() {
        let c = chunk();
        let a = point_id(c.chunk_id());
        assert_eq!(a, point_id(c.chunk_id()));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8", "version 8: {a}");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "variant: {a}");
        let other = ChunkId::parse("x:0:0000000000000000").unwrap();
        assert_ne!(a, point_id(&other));
    }

    #[test]
    fn payload_round_trips_the_chunk() {
        let space = EmbeddingSpace::new("m", "v", 3, Pooling::None, Normalization::None).unwrap();
        let c = chunk();
        let item = EmbeddedChunk {
            chunk: c.clone(),
            embedding: space.embedding(vec![3.0, 4.0, 0.0], false).unwrap(),
        };
        let point = to_point(&item).unwrap();
        assert_eq!(
            string_field(&point.payload, CHUNK_ID).unwrap(),
            c.chunk_id().as_str()
        );
        assert_eq!(string_field(&point.payload, SCOPE).unwrap(), "team-a");
        assert_eq!(number_field(&point.payload, NORM).unwrap(), 5.0);
        let terms = serde_json::Value::from(Payload::from(point.payload.clone()));
        assert_eq!(terms[LOCALE_TERMS], serde_json::json!(["zh", "zh-cn"]));
        assert!(
            terms[METADATA_TERMS]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!("tags=b"))
        );
        assert_eq!(to_chunk(point.payload).unwrap(), c);
    }

    fn keywords(cond: &Condition) -> (String, Vec<String>) {
        let Some(ConditionOneOf::Field(field)) = &cond.condition_one_of else {
            panic!("field condition expected")
        };
        let values = match field
            .r#match
            .as_ref()
            .unwrap()
            .match_value
            .as_ref()
            .unwrap()
        {
            MatchValue::Keyword(k) => vec![k.clone()],
            MatchValue::Keywords(k) => k.strings.clone(),
            other => panic!("unexpected match {other:?}"),
        };
        (field.key.clone(), values)
    }

    #[test]
    fn every_filter_field_becomes_a_condition() {
        let f = Filter::for_scopes([Scope::new("b").unwrap(), Scope::new("a").unwrap()])
            .unwrap()
            .with_doc_ids([DocId::new("d1").unwrap(), DocId::new("d2").unwrap()])
            .with_locale(Locale::new("zh-CN").unwrap())
            .with_metadata("tags", "x")
            .unwrap()
            .with_metadata("year", "2024")
            .unwrap();
        let q = to_qdrant_filter(&f).unwrap();
        let got: Vec<_> = q.must.iter().map(keywords).collect();
        assert_eq!(
            got,
            vec![
                (SCOPE.to_string(), vec!["a".to_string(), "b".to_string()]),
                (DOC_ID.to_string(), vec!["d1".to_string(), "d2".to_string()]),
                (LOCALE_TERMS.to_string(), vec!["zh-cn".to_string()]),
                (METADATA_TERMS.to_string(), vec!["tags=x".to_string()]),
                (METADATA_TERMS.to_string(), vec!["year=2024".to_string()]),
            ]
        );
        assert!(q.should.is_empty() && q.must_not.is_empty());
        let nothing = Filter::for_scope(Scope::new("a").unwrap()).with_doc_ids([]);
        assert!(to_qdrant_filter(&nothing).is_none());
    }
}
