//! Builders for the chunks and vectors the properties use.

use std::sync::Arc;

use serde_json::json;
use zhiku_domain::ports::{EmbeddedChunk, IndexCapabilities, IndexError, ScoredChunk};
use zhiku_domain::{
    Access, AccessRule, Chunk, DocId, Document, Embedding, EmbeddingSpace, Filter, Locale,
    Metadata, Normalization, Pooling, Scope, Source, Title,
};

/// Dimensions of the suite's vector space.
pub const DIMS: usize = 8;

/// The space vector-index properties run in.
pub fn space() -> EmbeddingSpace {
    EmbeddingSpace::new(
        "contract-suite",
        "v1",
        DIMS,
        Pooling::None,
        Normalization::L2,
    )
    .expect("valid space")
}

/// Another space with the same dimensions.
pub fn other_space() -> EmbeddingSpace {
    EmbeddingSpace::new(
        "another-model",
        "v1",
        DIMS,
        Pooling::None,
        Normalization::L2,
    )
    .expect("valid space")
}

/// A chunk's attributes.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Document id.
    pub doc: String,
    /// Chunk start.
    pub start: usize,
    /// Content.
    pub content: String,
    /// Scope.
    pub scope: &'static str,
    /// Locale.
    pub locale: &'static str,
    /// Title.
    pub title: &'static str,
    /// Metadata as JSON.
    pub metadata: serde_json::Value,
    /// Readers (`user:NAME`, `group:NAME`, `*`); `None`: everyone, by no rule.
    pub readers: Option<Vec<String>>,
}

impl Spec {
    /// A chunk of `doc` in scope `scope` with `content`.
    pub fn new(doc: impl Into<String>, scope: &'static str, content: impl Into<String>) -> Self {
        Self {
            doc: doc.into(),
            start: 0,
            content: content.into(),
            scope,
            locale: "en",
            title: "",
            metadata: json!({}),
            readers: None,
        }
    }

    /// Sets who may read the chunk's document.
    pub fn readers(mut self, readers: &[&str]) -> Self {
        self.readers = Some(readers.iter().map(|r| r.to_string()).collect());
        self
    }

    /// Sets the start offset (distinct chunks of one document need distinct starts).
    pub fn at(mut self, start: usize) -> Self {
        self.start = start;
        self
    }

    /// Sets the locale.
    pub fn locale(mut self, locale: &'static str) -> Self {
        self.locale = locale;
        self
    }

    /// Sets the title.
    pub fn title(mut self, title: &'static str) -> Self {
        self.title = title;
        self
    }

    /// Sets the metadata.
    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// Builds the chunk. Its document's revision is computed from the chunk content.
    pub fn chunk(&self) -> Chunk {
        let metadata: Metadata = serde_json::from_value(self.metadata.clone()).expect("metadata");
        let doc = Document::builder(
            DocId::new(&self.doc).expect("doc id"),
            Source::new(format!("contract/{}", self.doc)).expect("source"),
            self.content.clone(),
        )
        .scope(Scope::new(self.scope).expect("scope"))
        .locale(Locale::new(self.locale).expect("locale"))
        .title(Title::new(self.title).expect("title"))
        .metadata(metadata)
        .access(match &self.readers {
            None => Access::everyone(),
            Some(r) => Access::parse(r, AccessRule::Document).expect("readers"),
        })
        .build();
        Chunk::new(
            doc.id().clone(),
            self.start,
            self.content.clone(),
            vec!["Contract".to_string()],
            0,
            Arc::clone(doc.attributes()),
        )
    }
}

/// A unit vector of the suite's space pointing mostly along `axis`, tilted by `tilt` towards the
/// next axis (so different tilts give different cosines to [`axis`]).
pub fn vector(axis: usize, tilt: f32) -> Embedding {
    vector_in(&space(), axis, tilt)
}

/// Like [`vector`] in another space.
pub fn vector_in(space: &EmbeddingSpace, axis: usize, tilt: f32) -> Embedding {
    let dims = space.dims();
    let mut values = vec![0f32; dims];
    values[axis % dims] = 1.0;
    values[(axis + 1) % dims] += tilt;
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    for v in &mut values {
        *v /= norm;
    }
    space.embedding(values, false).expect("valid vector")
}

/// The unit vector along `axis`.
pub fn axis(axis: usize) -> Embedding {
    vector(axis, 0.0)
}

/// A chunk with a vector.
pub fn embedded(spec: &Spec, embedding: Embedding) -> EmbeddedChunk {
    EmbeddedChunk {
        chunk: spec.chunk(),
        embedding,
    }
}

/// Runs the document, locale and metadata filter cases shared by both index suites. `zh` is a
/// `zh-CN` chunk tagged `x, y` from 2024, `en` an `en` chunk tagged `y` from 2023, both in scope
/// `s` and both matching the query `search` runs. A filter the adapter supports must select
/// exactly the expected chunks; one it does not support must be refused as `Unsupported`.
pub fn check_filter_cases(
    caps: &IndexCapabilities,
    zh: &Spec,
    en: &Spec,
    search: &dyn Fn(&Filter) -> Result<Vec<ScoredChunk>, IndexError>,
) {
    let scope = || Filter::for_scope(Scope::new("s").expect("scope"));
    let meta = |pairs: &[(&str, &str)]| {
        pairs.iter().fold(scope(), |f, (k, v)| {
            f.with_metadata(*k, *v).expect("metadata")
        })
    };
    let cases: Vec<(Filter, bool, Vec<&Spec>)> = vec![
        (
            scope().with_doc_ids([DocId::new(&zh.doc).expect("doc")]),
            caps.filter_doc_ids,
            vec![zh],
        ),
        (
            scope().with_locale(Locale::new("zh").expect("locale")),
            caps.filter_locale,
            vec![zh],
        ),
        (
            scope().with_locale(Locale::new("en").expect("locale")),
            caps.filter_locale,
            vec![en],
        ),
        (meta(&[("tags", "x")]), caps.filter_metadata, vec![zh]),
        (meta(&[("tags", "y")]), caps.filter_metadata, vec![zh, en]),
        (meta(&[("year", "2023")]), caps.filter_metadata, vec![en]),
        (
            meta(&[("year", "2023"), ("tags", "x")]),
            caps.filter_metadata,
            vec![],
        ),
    ];
    for (filter, supported, expected) in cases {
        match search(&filter) {
            Ok(hits) => {
                assert!(
                    supported,
                    "{} accepted a filter it says it does not support",
                    caps.adapter
                );
                let mut got: Vec<String> = hits
                    .iter()
                    .map(|h| h.chunk.chunk_id().to_string())
                    .collect();
                got.sort();
                let mut want: Vec<String> = expected
                    .iter()
                    .map(|s| s.chunk().chunk_id().to_string())
                    .collect();
                want.sort();
                assert_eq!(got, want, "filter {filter:?}");
            }
            Err(IndexError::Unsupported { .. }) => assert!(!supported),
            Err(e) => panic!("unexpected error {e}"),
        }
    }
}

/// The two chunks [`check_filter_cases`] expects, with the given contents.
pub fn filter_case_specs(zh_content: &str, en_content: &str) -> (Spec, Spec) {
    (
        Spec::new("zh", "s", zh_content)
            .locale("zh-CN")
            .metadata(json!({"tags": ["x", "y"], "year": 2024})),
        Spec::new("en", "s", en_content)
            .locale("en")
            .metadata(json!({"tags": "y", "year": 2023})),
    )
}

/// Dimensions of the approximate-index properties' space.
pub const ANN_DIMS: usize = 64;

/// The space approximate-index properties run in ([`ANN_DIMS`] dimensions).
pub fn ann_space() -> EmbeddingSpace {
    EmbeddingSpace::new(
        "contract-suite-ann",
        "v1",
        ANN_DIMS,
        Pooling::None,
        Normalization::L2,
    )
    .expect("valid space")
}

/// A small seeded generator (splitmix64), so the random corpora are the same on every run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A standard normal sample (Box–Muller).
    pub fn gaussian(&mut self) -> f64 {
        let u = self.unit_f64().max(f64::MIN_POSITIVE);
        let v = self.unit_f64();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// A random unit vector of `space`, uniform on the sphere.
pub fn random_unit(rng: &mut Rng, space: &EmbeddingSpace) -> Embedding {
    let mut values: Vec<f32> = (0..space.dims()).map(|_| rng.gaussian() as f32).collect();
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    for v in &mut values {
        *v /= norm;
    }
    space.embedding(values, false).expect("valid vector")
}

/// The scopes of [`ann_corpus`].
pub const ANN_SCOPES: [&str; 10] = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"];

/// `docs × per_doc` chunks with random unit vectors of [`ann_space`]: document `dNNN` holds
/// chunks `dNNN` 0, 100, 200, … and is in scope `s{N % 10}`.
pub fn ann_corpus(seed: u64, docs: usize, per_doc: usize) -> Vec<EmbeddedChunk> {
    ann_corpus_in(&ann_space(), seed, docs, per_doc)
}

/// [`ann_space`] with `dims` dimensions: for an index whose quantisation needs more of them
/// than [`ANN_DIMS`] (one sign bit per component).
pub fn ann_space_of(dims: usize) -> EmbeddingSpace {
    EmbeddingSpace::new(
        "contract-suite-ann",
        "v1",
        dims,
        Pooling::None,
        Normalization::L2,
    )
    .expect("valid space")
}

/// [`ann_corpus`] in `space`.
pub fn ann_corpus_in(
    space: &EmbeddingSpace,
    seed: u64,
    docs: usize,
    per_doc: usize,
) -> Vec<EmbeddedChunk> {
    let space = space.clone();
    let mut rng = Rng::new(seed);
    let mut items = Vec::with_capacity(docs * per_doc);
    for d in 0..docs {
        for c in 0..per_doc {
            let spec =
                Spec::new(format!("d{d:04}"), ANN_SCOPES[d % 10], format!("d{d}c{c}")).at(c * 100);
            items.push(embedded(&spec, random_unit(&mut rng, &space)));
        }
    }
    items
}
