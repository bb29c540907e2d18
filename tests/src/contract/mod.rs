//! Properties of each port, and the macros that turn them into tests.

pub mod access;
pub mod catalog;
pub mod documents;
pub mod embedder;
pub mod fixtures;
pub mod lexical;
pub mod ocr;
pub mod records;
pub mod rerank;
pub mod source;
pub mod tokens;
pub mod trace;
pub mod vector;

/// The generation property shared by both index ports: an index keeps a generation always or
/// never, and when it does, the generation moved with each of the two commits that changed
/// something.
pub fn check_generations(
    before: Option<u64>,
    after_upsert: Option<u64>,
    after_delete: Option<u64>,
) {
    match (before, after_upsert, after_delete) {
        (None, None, None) => {}
        (Some(a), Some(b), Some(c)) => assert!(a != b && b != c, "{a} {b} {c}"),
        other => panic!("a generation must be kept always or never: {other:?}"),
    }
}

/// Checks that `got` is the top `k` of `ranking` (chunk IDs with scores, best first): the same
/// length, at each rank the same score, and each chunk where the ranking has it.
///
/// "Same score" is up to the order a pruned walk adds a chunk's per-term scores in: tantivy's
/// block-max WAND follows its walk, which the filter and `k` change, so a sum may differ in its
/// last bits (5.209705 vs 5.2097044 in a CI run). Chunks whose scores are that close may trade
/// places; a missing, extra or misplaced chunk, or another score, fails.
pub fn check_same_ranking(
    got: &[(String, f32)],
    ranking: &[(String, f32)],
    k: usize,
) -> Result<(), String> {
    let expected = &ranking[..k.min(ranking.len())];
    let close = |a: f32, b: f32| (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1.0);
    if got.len() != expected.len() {
        return Err(format!(
            "{} hits, not {}: {got:?} vs {expected:?}",
            got.len(),
            expected.len()
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, (id, score)) in got.iter().enumerate() {
        if !seen.insert(id) {
            return Err(format!("{id} twice in {got:?}"));
        }
        if !close(*score, expected[i].1) {
            return Err(format!("rank {i}: {got:?} vs {expected:?}"));
        }
        let own = ranking.iter().find(|(r, _)| r == id).map(|(_, s)| *s);
        if !own.is_some_and(|s| close(s, *score)) {
            return Err(format!(
                "{id} is not where the ranking has it: {got:?} vs {expected:?}"
            ));
        }
    }
    Ok(())
}

/// Prints the loud notice a skipped contract test shows.
pub fn skipped(adapter: &str, property: &str, why: &str) {
    notice(&format!("SKIPPED {adapter}::{property}: {why}"));
}

/// Writes a line past the test harness's capture (a skip notice must always be seen).
pub use crate::notice;

/// One test per property of the [`Ocr`](zhiku_domain::ports::Ocr) port, for the engine
/// `$make(())` returns (`None`: not available here, each test says SKIPPED).
#[macro_export]
macro_rules! ocr_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            ocr,
            $make,
            (),
            [
                reads_simplified_chinese_and_latin,
                reads_traditional_chinese,
                lines_come_in_reading_order_where_they_are,
                a_page_upside_down_is_turned_back,
                a_page_on_its_side_is_turned_back,
                a_blank_page_gives_no_lines,
                reading_is_deterministic,
            ]
        );
    };
}

/// One test per property of the [`DocumentSource`](zhiku_domain::ports::DocumentSource)
/// port. `$make` is a closure taking `()` and returning
/// `Option<Box<`[`SourceUnderTest`](crate::contract::source::SourceUnderTest)`>>` (a fresh,
/// empty source, or `None` to skip).
#[macro_export]
macro_rules! document_source_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            source,
            $make,
            (),
            [
                first_scan_reports_every_item_with_its_bytes,
                a_rescan_with_the_known_stamps_transfers_nothing,
                edits_additions_and_deletions_are_reported_each_once,
                an_item_over_the_bound_fails_alone,
                a_source_that_cannot_be_read_fails_and_reports_nothing_gone,
                refused_credentials_fail_the_scan,
                a_sync_keeps_the_mirror_equal_to_the_source,
            ]
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __contract_tests {
    ($module:ident, $make:expr, $arg:expr, [$($property:ident),* $(,)?]) => {
        $(
            #[test]
            fn $property() {
                let make = $make;
                match make($arg) {
                    Some(port) => $crate::contract::$module::$property(&*port),
                    None => $crate::contract::skipped(
                        module_path!(),
                        stringify!($property),
                        "backend not available (see the factory's message above)",
                    ),
                }
            }
        )*
    };
}

/// Generates the vector-index contract tests. `$make` is a closure taking the
/// [`EmbeddingSpace`](zhiku_domain::EmbeddingSpace) the index must hold and returning
/// `Option<Box<dyn VectorIndex>>` (an empty index, or `None` to skip).
#[macro_export]
macro_rules! vector_index_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            vector,
            $make,
            $crate::contract::fixtures::space(),
            [
                upsert_then_search_finds_it,
                reupsert_replaces_the_chunk,
                delete_document_removes_only_its_chunks,
                delete_chunks_removes_only_those,
                scope_filter_never_leaks,
                scope_filter_never_leaks_on_random_data,
                other_filters_apply_inside_the_search,
                k_is_respected,
                k_zero_is_invalid,
                empty_index_returns_nothing,
                wrong_space_is_refused,
                wrong_dimension_is_refused,
                ties_are_ordered_by_chunk_id,
                results_are_ordered_by_score,
                chunk_ids_lists_a_documents_chunks,
                all_chunk_ids_lists_exactly_the_surviving_chunks,
                embeddings_returns_stored_vectors,
                stored_chunks_round_trip,
                generation_moves_with_commits,
                reader_filter_is_the_search_over_what_the_reader_may_read,
                updating_an_absent_vector_record_stores_nothing,
            ]
        );
    };
}

/// Generates the approximate-vector-index properties: recall@10 ≥ 0.95 against the exact
/// `MemoryVectorIndex` (unfiltered and with one scope of ten), deleted chunks never returned,
/// scopes never leaking. `$make` is a closure taking the
/// [`EmbeddingSpace`](zhiku_domain::EmbeddingSpace) the index must hold
/// ([`fixtures::ann_space`](crate::contract::fixtures::ann_space)) and returning
/// `Option<Box<dyn VectorIndex>>` (an empty index, or `None` to skip); a second argument puts
/// the corpus in another space (e.g. `fixtures::ann_space_of(384)` for a binary graph, whose
/// sign bits need more than 64 dimensions). Run it beside [`vector_index_contract!`] for every
/// approximate adapter.
#[macro_export]
macro_rules! approximate_vector_index_contract {
    ($make:expr) => {
        $crate::approximate_vector_index_contract!($make, $crate::contract::fixtures::ann_space());
    };
    ($make:expr, $space:expr) => {
        $crate::__contract_tests!(
            vector,
            $make,
            $space,
            [
                approximate_recall_at_10,
                approximate_filtered_recall_one_scope_of_ten,
                approximate_deleted_chunks_never_returned,
                approximate_scope_never_leaks,
            ]
        );
    };
}

/// Generates the lexical-index contract tests. `$make` is a closure taking `()` and returning
/// `Option<Box<dyn LexicalIndex>>` (an empty index, or `None` to skip).
#[macro_export]
macro_rules! lexical_index_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            lexical,
            $make,
            (),
            [
                upsert_then_search_finds_it,
                reupsert_replaces_the_chunk,
                delete_document_removes_only_its_chunks,
                delete_chunks_removes_only_those,
                scope_filter_never_leaks,
                scope_filter_never_leaks_on_random_data,
                filtered_top_k_is_the_filtered_ranking,
                other_filters_apply_inside_the_search,
                k_is_respected,
                k_zero_is_invalid,
                empty_index_returns_nothing,
                query_without_terms_returns_nothing,
                ties_are_ordered_by_chunk_id,
                results_are_ordered_by_score,
                chunk_ids_lists_a_documents_chunks,
                all_chunk_ids_lists_exactly_the_surviving_chunks,
                stored_chunks_round_trip,
                analyzer_is_named,
                generation_moves_with_commits,
                reader_filter_is_the_ranking_over_what_the_reader_may_read,
                updating_an_absent_record_stores_nothing,
            ]
        );
    };
}

/// Generates the chunk-records contract tests. `$make` is a closure taking the
/// [`EmbeddingSpace`](zhiku_domain::EmbeddingSpace) of the vector index and returning
/// `Option<Box<`[`RecordsUnderTest`](crate::contract::records::RecordsUnderTest)`>>` (an empty
/// store, or `None` to skip).
#[macro_export]
macro_rules! chunk_records_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            records,
            $make,
            $crate::contract::fixtures::space(),
            [records_answer_each_id_in_order, records_follow_the_writes]
        );
    };
}

/// Generates the catalog-store contract tests. `$make` is a closure taking `()` and returning
/// `Option<Box<`[`OpenCatalogStore`](crate::contract::catalog::OpenCatalogStore)`>>`: for a
/// fresh, empty place, a function that opens a new handle onto it each time it is called (or
/// `None` to skip).
#[macro_export]
macro_rules! catalog_store_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            catalog,
            $make,
            (),
            [
                fresh_store_loads_nothing,
                save_then_load_round_trips,
                a_load_for_reading_is_the_catalog_but_its_stamps,
                a_header_is_the_catalog_without_its_rows,
                a_second_save_replaces_the_first,
                another_handle_sees_the_last_save,
                interleaved_small_saves_load_exactly,
                saving_what_changed_stores_exactly_the_new_catalog,
            ]
        );
    };
}

/// Generates the contract tests every document store passes. `$make` is a closure taking `()`
/// and returning `Option<Box<DocumentPlace>>` (a store holding its seed documents, or `None` to skip).
#[macro_export]
macro_rules! document_store_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            documents,
            $make,
            (),
            [
                load_all_returns_every_document,
                load_changed_agrees_with_load_all,
                read_returns_each_loaded_document,
                source_store_vouches_for_loaded_documents,
            ]
        );
    };
}

/// The document-store contract of a read-only store.
#[macro_export]
macro_rules! read_only_document_store_contract {
    ($make:expr) => {
        $crate::document_store_contract!($make);
        $crate::__contract_tests!(documents, $make, (), [read_only_refuses_writes]);
    };
}

/// The document-store contract of a writable store (its seed holds at least two documents).
#[macro_export]
macro_rules! writable_document_store_contract {
    ($make:expr) => {
        $crate::document_store_contract!($make);
        $crate::__contract_tests!(
            documents,
            $make,
            (),
            [
                a_write_loads_back_and_its_undo_leaves_nothing,
                an_undone_overwrite_restores_the_previous_document,
                remove_is_undone_or_kept,
                another_callers_path_is_not_found,
            ]
        );
    };
}

/// Generates the trace-store contract tests. `$make` is a closure taking `()` and returning
/// `Option<Box<dyn TraceStore>>` (an empty store, or `None` to skip).
#[macro_export]
macro_rules! trace_store_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            trace,
            $make,
            (),
            [
                interleaved_runs_read_back_apart_and_in_order,
                a_run_without_its_answer_is_readable_after_finish,
                unknown_and_malformed_ids_read_nothing,
            ]
        );
    };
}

/// Generates the embedder contract tests. `$make` is a closure taking `()` and returning
/// `Option<Box<dyn Embedder>>`; `$tolerance` is the largest per-component difference allowed
/// between a batch and single embeddings (0 for exact).
#[macro_export]
macro_rules! embedder_contract {
    ($make:expr, $tolerance:expr) => {
        $crate::__contract_tests!(
            embedder,
            $make,
            (),
            [
                embeddings_are_deterministic,
                embeddings_have_the_reported_dimension,
                embeddings_carry_the_space_identity,
                normalised_spaces_give_unit_vectors,
                empty_batch_gives_no_vectors,
                empty_text_is_valid,
                query_embeddings_share_the_space,
            ]
        );
        #[test]
        fn batch_equals_single_embeddings() {
            let make = $make;
            match make(()) {
                Some(port) => {
                    $crate::contract::embedder::batch_equals_single_embeddings(&*port, $tolerance)
                }
                None => $crate::contract::skipped(
                    module_path!(),
                    "batch_equals_single_embeddings",
                    "backend not available",
                ),
            }
        }
    };
}

/// The reranker contract: `$make(())` returns `Option<Box<dyn Reranker>>` (`None` skips loudly).
#[macro_export]
macro_rules! reranker_contract {
    ($make:expr) => {
        $crate::reranker_mechanics_contract!($make);
        $crate::__contract_tests!(
            rerank,
            $make,
            (),
            [the_answer_outscores_off_topic_candidates]
        );
    };
}

/// Generates the token-counter contract tests. `$make` takes `()` and returns
/// `Option<Box<dyn TokenCounter>>` (`None` to skip).
#[macro_export]
macro_rules! token_counter_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            tokens,
            $make,
            (),
            [
                empty_is_zero_and_words_count,
                counting_is_deterministic,
                counts_are_nearly_additive,
                counts_grow_with_the_text,
                a_large_text_is_counted,
                identity_is_named,
            ]
        );
    };
}

/// The reranker contract without its relevance property: for a reranker whose *model* is a
/// stand-in (e.g. an encoder with an untrained classification head, to test the loading and
/// scoring path when no trained model is available). Every real model passes
/// [`reranker_contract!`].
#[macro_export]
macro_rules! reranker_mechanics_contract {
    ($make:expr) => {
        $crate::__contract_tests!(
            rerank,
            $make,
            (),
            [
                one_finite_score_per_candidate,
                reranking_is_deterministic,
                no_candidates_give_no_scores,
                scores_follow_their_candidates,
            ]
        );
    };
}
