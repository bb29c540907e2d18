//! The contract suite over the reference in-memory adapters.

use zhiku_adapters_memory::{HashingEmbedder, MemoryLexicalIndex, MemoryVectorIndex};
use zhiku_domain::EmbeddingSpace;
use zhiku_domain::ports::{Embedder, LexicalIndex, VectorIndex};

mod memory_vector {
    use super::*;
    zhiku_tests::vector_index_contract!(|space: EmbeddingSpace| -> Option<Box<dyn VectorIndex>> {
        Some(Box::new(MemoryVectorIndex::new(space)))
    });
}

mod memory_records {
    use super::*;
    use std::sync::Arc;
    use zhiku_tests::contract::records::RecordsUnderTest;
    zhiku_tests::chunk_records_contract!(
        |space: EmbeddingSpace| -> Option<Box<RecordsUnderTest>> {
            Some(Box::new(RecordsUnderTest::of(Arc::new(
                MemoryVectorIndex::new(space),
            ))))
        }
    );
}

mod memory_lexical {
    use super::*;
    zhiku_tests::lexical_index_contract!(|()| -> Option<Box<dyn LexicalIndex>> {
        Some(Box::new(MemoryLexicalIndex::new()))
    });
}

mod memory_catalog {
    use zhiku_adapters_memory::MemoryCatalogStore;
    use zhiku_tests::contract::catalog::OpenCatalogStore;

    zhiku_tests::catalog_store_contract!(|()| -> Option<Box<OpenCatalogStore>> {
        let place = MemoryCatalogStore::new();
        Some(Box::new(move || Box::new(place.clone())))
    });
}

mod hashing_embedder {
    use super::*;
    zhiku_tests::embedder_contract!(
        |()| -> Option<Box<dyn Embedder>> { Some(Box::new(HashingEmbedder::new(384).unwrap())) },
        0.0
    );
}

mod memory_trace {
    use zhiku_adapters_memory::MemoryTraceSink;
    use zhiku_domain::ports::TraceStore;

    zhiku_tests::trace_store_contract!(|()| -> Option<Box<dyn TraceStore>> {
        Some(Box::new(MemoryTraceSink::new()))
    });
}

mod memory_document_source {
    use zhiku_adapters_memory::MemoryDocumentSource;
    use zhiku_domain::ports::DocumentSource;
    use zhiku_tests::contract::source::SourceUnderTest;

    struct Memory(MemoryDocumentSource);

    impl SourceUnderTest for Memory {
        fn source(&self) -> &dyn DocumentSource {
            &self.0
        }
        fn put(&self, path: &str, bytes: &[u8]) {
            self.0.put(path, bytes);
        }
        fn delete(&self, path: &str) {
            self.0.delete(path);
        }
        fn publish(&self) {}
        fn cut(&self) {
            self.0.set_cut(true);
        }
    }

    zhiku_tests::document_source_contract!(|()| -> Option<Box<dyn SourceUnderTest>> {
        Some(Box::new(Memory(MemoryDocumentSource::new())))
    });
}
