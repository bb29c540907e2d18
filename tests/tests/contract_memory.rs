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

mod file_vector {
    use super::*;
    use std::sync::Mutex;
    use zhiku_adapters_memory::FileVectorIndex;

    /// Keeps each test's directory alive for the whole test process.
    static DIRS: Mutex<Vec<tempfile::TempDir>> = Mutex::new(Vec::new());

    zhiku_tests::vector_index_contract!(|space: EmbeddingSpace| -> Option<Box<dyn VectorIndex>> {
        let dir = tempfile::tempdir().unwrap();
        let index = FileVectorIndex::open(&dir.path().join("vectors.bin"), space).unwrap();
        DIRS.lock().unwrap().push(dir);
        Some(Box::new(index))
    });
}

mod file_vector_persistence {
    use zhiku_adapters_memory::FileVectorIndex;
    use zhiku_domain::ports::{IndexError, VectorIndex};
    use zhiku_domain::{Filter, Scope};
    use zhiku_tests::contract::fixtures::{Spec, axis, embedded, other_space, space};

    #[test]
    fn committed_vectors_survive_a_reopen_and_uncommitted_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.bin");
        {
            let index = FileVectorIndex::open(&path, space()).unwrap();
            index
                .upsert(&[embedded(&Spec::new("a", "s", "kept"), axis(1))])
                .unwrap();
            index.commit().unwrap();
            index
                .upsert(&[embedded(&Spec::new("b", "s", "lost"), axis(1))])
                .unwrap();
        }
        let index = FileVectorIndex::open(&path, space()).unwrap();
        let hits = index
            .search(&axis(1), 10, &Filter::for_scope(Scope::new("s").unwrap()))
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].chunk.content(), "kept");
        let err = FileVectorIndex::open(&path, other_space()).unwrap_err();
        assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
    }
}
