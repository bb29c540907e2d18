//! What an offline evaluation runs its cases through: the retriever and the answerer as the
//! service configures them, and what grades the answers.
//!
//! The answers of an evaluation are the service's answers with one difference: the judge is
//! left out of answering (the answerer keeps the offline rules) and handed to the evaluation as
//! a grader instead, so the grade is an independent reading of what the rules let through.
//! Retrieval and answers run over one knowledge base ([`KnowledgeBase::evaluate`]) or over an
//! index built for the evaluation from a corpus ([`evaluate_corpus`]).

use zhiku_domain::Filter;
use zhiku_domain::ports::{DocumentChunks, Generator, Judge, NullTraceSink, Reranker, TraceSink};
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::usecases::{AnswerPolicy, Answerer, DocumentReader, RetrievalMode, Retriever};

use crate::query::caller_filter;
use crate::{Caller, KbError, KnowledgeBase, MonotonicClock, Settings};

/// How an evaluation's answers are asked.
#[derive(Debug, Clone, Copy)]
pub struct Answering {
    /// The retrieval mode of every question.
    pub mode: RetrievalMode,
    /// What of the documents around the evidence a context holds, when not the configured
    /// policy.
    pub context: Option<ContextPolicy>,
}

impl Answering {
    /// The answer policy of `settings` for these answers: the configured `k`, budget and
    /// attempts.
    fn policy(&self, settings: &Settings) -> AnswerPolicy {
        let mut policy = settings.answer_policy(self.mode, settings.k);
        if let Some(context) = self.context {
            policy.context = context;
        }
        policy
    }
}

/// The use cases one evaluation runs its cases through, and what grades the answers.
pub struct Evaluation<'a> {
    retriever: &'a Retriever<'a>,
    answerer: &'a Answerer<'a>,
    filter: &'a Filter,
    generator: &'a dyn Generator,
    judge: Option<&'a dyn Judge>,
    chunks: &'a dyn DocumentChunks,
}

impl std::fmt::Debug for Evaluation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluation")
            .field("generator", &self.generator.identity())
            .field("judge", &self.judge.map(|j| j.identity()))
            .finish_non_exhaustive()
    }
}

impl<'a> Evaluation<'a> {
    /// The retriever a case is retrieved with: the configured routes, fusion, locale
    /// preference and reranker.
    pub fn retriever(&self) -> &'a Retriever<'a> {
        self.retriever
    }

    /// The answerer a case is answered with: the configured planners, generator and answer
    /// policy, and no judge.
    pub fn answerer(&self) -> &'a Answerer<'a> {
        self.answerer
    }

    /// What the cases may retrieve: the local user's scopes, or the corpus's.
    pub fn filter(&self) -> &'a Filter {
        self.filter
    }

    /// The name of the generator that writes the answers.
    pub fn generator(&self) -> String {
        self.generator.identity()
    }

    /// The judge that grades the answers (never consulted while answering), when one is
    /// configured.
    pub fn judge(&self) -> Option<&'a dyn Judge> {
        self.judge
    }

    /// The chunks of a cited document at the revision its citation names, for the grader.
    pub fn chunks(&self) -> &'a dyn DocumentChunks {
        self.chunks
    }
}

impl KnowledgeBase {
    /// Runs `run` over an evaluation of this knowledge base as `caller` sees it: retrieval as
    /// every search runs it, answers as every question is answered (planners, generator, answer
    /// policy, the document reader, the trace log) but with the judge left out of answering and
    /// handed to the evaluation as its grader. The store is read-locked meanwhile.
    pub fn evaluate<R>(
        &self,
        caller: &Caller,
        answering: Answering,
        run: impl FnOnce(&Evaluation<'_>) -> R,
    ) -> Result<R, KbError> {
        let filter = caller_filter(caller, &[], None)?;
        let inner = self.read();
        let store = &inner.store;
        let documents = self.recorded_documents()?;
        let source = documents.source_store(store.source_paths());
        let retriever = store.retriever(source.as_ref()).with_clock(&self.clock);
        let reader = DocumentReader::new(documents, store.source_paths(), store.settings.policy);
        let sink: &dyn TraceSink = self.traces.as_ref();
        let answerer = self.as_configured(
            Answerer::new(
                &retriever,
                self.generator.as_ref(),
                sink,
                &self.clock,
                answering.policy(&store.settings),
            )
            .with_document_chunks(&reader),
        );
        Ok(run(&Evaluation {
            retriever: &retriever,
            answerer: &answerer,
            filter: &filter,
            generator: self.generator.as_ref(),
            judge: self.judge.as_deref(),
            chunks: &reader,
        }))
    }
}

/// An index built for one evaluation from a corpus, held in memory: its routes, the corpus
/// its hits are checked against and its context is read from, and what answers over it.
pub struct CorpusEvaluation<'a> {
    /// A retriever over the index's routes, as the composition root built it.
    pub routes: Retriever<'a>,
    /// The reranker the configuration names, when it names one.
    pub reranker: Option<&'a dyn Reranker>,
    /// Writes the answers.
    pub generator: &'a dyn Generator,
    /// The corpus's documents, chunked with the index's policy.
    pub chunks: &'a dyn DocumentChunks,
    /// The corpus's scope.
    pub filter: Filter,
}

impl std::fmt::Debug for CorpusEvaluation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorpusEvaluation")
            .field("generator", &self.generator.identity())
            .finish_non_exhaustive()
    }
}

/// Runs `run` over an evaluation of `corpus`: its routes ranked as `settings` configure a
/// store's (candidates, fusion, locale preference, reranker), answers by its generator under
/// the configured answer policy, read as asked (no planner), traced nowhere and graded by no
/// judge.
pub fn evaluate_corpus<R>(
    corpus: CorpusEvaluation<'_>,
    settings: &Settings,
    answering: Answering,
    run: impl FnOnce(&Evaluation<'_>) -> R,
) -> R {
    let retriever = settings.rank(corpus.routes, corpus.reranker);
    let clock = MonotonicClock::default();
    let answerer = Answerer::new(
        &retriever,
        corpus.generator,
        &NullTraceSink,
        &clock,
        answering.policy(settings),
    )
    .with_document_chunks(corpus.chunks);
    run(&Evaluation {
        retriever: &retriever,
        answerer: &answerer,
        filter: &corpus.filter,
        generator: corpus.generator,
        judge: None,
        chunks: corpus.chunks,
    })
}
