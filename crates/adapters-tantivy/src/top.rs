//! Top-k BM25 under a filter, with tantivy's block-max pruning kept.
//!
//! A filter written as `Must` clauses of the query (the obvious form) turns the query into an
//! intersection that tantivy cannot prune: every chunk of the allowed scopes that shares one
//! query term is scored, and the union of the scope postings is walked on every query. At
//! 137,000 chunks that was most of a lexical search's time. Here the text query runs alone, so
//! a union of term queries keeps Block-WAND, and the filter is a per-segment bit set of the
//! allowed documents, consulted for each document the pruned walk still offers: the top-k is
//! taken over allowed documents only, so the threshold that prunes never comes from a document
//! the filter excludes, and the result is exactly the top-k of the filtered set.
//!
//! The bit sets are kept per (segment, filter): segments are immutable, so a set never goes
//! stale (deletes are checked against the segment's own alive set at each query).
//!
//! [`add_scores`] is the second stage of a query with Han pairs: their scores are added to the
//! candidates the pruned walk over the words found, rather than making them clauses of the walk.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, RwLock};

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::index::SegmentId;
use tantivy::query::Weight;
use tantivy::{
    BitSet, COLLECT_BLOCK_BUFFER_LEN, DocAddress, DocId, DocSet, Score, Searcher, SegmentReader,
};

/// Filter bit sets kept at most (each is one bit per document of its segment).
const CACHED_SETS: usize = 64;

/// The allowed documents of each (segment, filter), built once.
#[derive(Debug, Default)]
pub(crate) struct FilterSets {
    sets: RwLock<HashMap<(SegmentId, String), Arc<BitSet>>>,
}

impl FilterSets {
    fn get_or_build(
        &self,
        key: &str,
        filter: &dyn Weight,
        reader: &SegmentReader,
    ) -> tantivy::Result<Arc<BitSet>> {
        let id = (reader.segment_id(), key.to_string());
        if let Some(set) = self.sets.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
            return Ok(Arc::clone(set));
        }
        let mut set = BitSet::with_max_value(reader.max_doc());
        let mut docs = filter.scorer(reader, 1.0)?;
        let mut buffer = [0 as DocId; COLLECT_BLOCK_BUFFER_LEN];
        loop {
            let n = docs.fill_buffer(&mut buffer);
            for &doc in &buffer[..n] {
                set.insert(doc);
            }
            if n < buffer.len() {
                break;
            }
        }
        let set = Arc::new(set);
        let mut sets = self.sets.write().unwrap_or_else(|e| e.into_inner());
        if sets.len() >= CACHED_SETS {
            sets.clear();
        }
        sets.insert(id, Arc::clone(&set));
        Ok(set)
    }
}

/// The `limit` best-scoring documents the filter allows, best first (ties by address).
pub(crate) struct FilteredTop<'a> {
    pub limit: usize,
    /// The filter, as a weight built with scoring disabled.
    pub filter: &'a dyn Weight,
    /// What identifies the filter in the cache.
    pub key: &'a str,
    pub sets: &'a FilterSets,
}

#[derive(Debug, Clone, Copy)]
struct Hit {
    score: Score,
    doc: DocId,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit {
    /// The "greatest" hit is the worst one, so the heap's top is the one to evict: the lower
    /// score, then the later document.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.doc.cmp(&other.doc))
    }
}

impl Collector for FilteredTop<'_> {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = Unpruned;

    fn for_segment(&self, _ord: u32, _reader: &SegmentReader) -> tantivy::Result<Unpruned> {
        // Never used: `collect_segment` below does the whole segment.
        Ok(Unpruned)
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<(Score, DocAddress)>>) -> tantivy::Result<Self::Fruit> {
        let mut all: Vec<(Score, DocAddress)> = fruits.into_iter().flatten().collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all.truncate(self.limit);
        Ok(all)
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment_ord: u32,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<(Score, DocAddress)>> {
        if self.limit == 0 {
            return Ok(Vec::new());
        }
        let allowed = self.sets.get_or_build(self.key, self.filter, reader)?;
        let alive = reader.alive_bitset();
        let mut heap: BinaryHeap<Hit> = BinaryHeap::with_capacity(self.limit + 1);
        let mut threshold = Score::MIN;
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            let passes = allowed.contains(doc) && alive.is_none_or(|a| a.is_alive(doc));
            if passes {
                heap.push(Hit { score, doc });
                if heap.len() > self.limit {
                    heap.pop();
                }
                if heap.len() == self.limit {
                    threshold = heap.peek().map_or(Score::MIN, |h| h.score);
                }
            }
            threshold
        })?;
        Ok(heap
            .into_iter()
            .map(|h| (h.score, DocAddress::new(segment_ord, h.doc)))
            .collect())
    }
}

/// The segment collector the trait asks for; [`FilteredTop::collect_segment`] never uses it.
pub(crate) struct Unpruned;

impl SegmentCollector for Unpruned {
    type Fruit = Vec<(Score, DocAddress)>;

    fn collect(&mut self, _doc: DocId, _score: Score) {}

    fn harvest(self) -> Self::Fruit {
        Vec::new()
    }
}

/// Adds to each hit the scores `weights` give its document (nothing from one it does not
/// match), then orders the hits again, best first (ties by address). Each segment's scorer of
/// each weight is moved forward once over that segment's hits in document order, so only the
/// postings blocks holding a hit are read; the sum is always made in the order of `weights`.
pub(crate) fn add_scores(
    searcher: &Searcher,
    weights: &[Box<dyn Weight>],
    hits: &mut [(Score, DocAddress)],
) -> tantivy::Result<()> {
    hits.sort_by_key(|h| h.1);
    for group in hits.chunk_by_mut(|a, b| a.1.segment_ord == b.1.segment_ord) {
        let reader = searcher.segment_reader(group[0].1.segment_ord);
        let mut added = vec![0.0 as Score; group.len()];
        for weight in weights {
            let mut scorer = weight.scorer(reader, 1.0)?;
            for ((_, address), sum) in group.iter().zip(added.iter_mut()) {
                let target = address.doc_id;
                // A scorer starts on its first document; `seek` only moves forward.
                let at = if scorer.doc() < target {
                    scorer.seek(target)
                } else {
                    scorer.doc()
                };
                if at == target {
                    *sum += scorer.score();
                }
            }
        }
        for ((score, _), sum) in group.iter_mut().zip(added) {
            *score += sum;
        }
    }
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(())
}
