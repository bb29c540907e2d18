//! `zhiku ask` and `zhiku chat`: answer questions with citations checked against this round's
//! retrieval, one question or a conversation.
//!
//! A conversation is held here, by the caller: `ask --history FILE` reads the earlier turns
//! (a JSON array, one object, or JSON Lines — `zhiku ask --json` output appended to a file is
//! a history; of a longer conversation, its last [`MAX_HISTORY_TURNS`]), `chat` keeps them in
//! memory and can append each turn to a file with `--save`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use zhiku_app::wiring;
use zhiku_domain::ports::Turn;
use zhiku_domain::usecases::{AnswerFrame, AnswerStatus, RetrievalMode};
use zhiku_service::{Caller, KnowledgeBase, MAX_HISTORY_TURNS, SearchQuery, new_trace_id};

use super::chain::{Recorded, render_chain};

use super::args::{Output, QueryArgs, Trace};
use super::ctx::{Ctx, build_filter, metadata_terms};
use super::exit::Exit;
use super::open::open_for_query;
use super::render;

/// What every turn of one command asks with: the local user narrowed to `--scope`, and the
/// query's mode, `k`, metadata terms and locale.
struct Asking {
    caller: Caller,
    template: SearchQuery,
}

/// Opens the store (refreshing it unless told not to) as the service every transport answers
/// through — the same planner, judge, generator chain, bounds and trace log as HTTP and MCP —
/// and hands it to `body` with what the turns ask with and the recorded events; returns what
/// `body` returns and the number of files the refresh skipped.
fn with_service<R>(
    ctx: &Ctx,
    q: &QueryArgs,
    body: impl FnOnce(&KnowledgeBase, &Asking, &Recorded) -> Result<R>,
) -> Result<(R, usize)> {
    let mode = RetrievalMode::from(q.mode);
    let (store, skipped) = open_for_query(ctx, q.refresh)?;
    if let Some(notice) = &store.dense_notice
        && !matches!(mode, RetrievalMode::Lexical)
    {
        ctx.note(&format!("notice: {notice}"));
    }
    // The filter is built here first so that a bad --scope or --filter is a usage error.
    let filter = build_filter(&store, &q.scopes, &q.filters, q.locale.as_deref())?;
    let (kb, _) = wiring::open_service(store, None)?;
    let asking = Asking {
        caller: Caller {
            name: "local".into(),
            scopes: filter.scopes().iter().cloned().collect(),
            write: false,
            principal: None,
            operator: false,
        },
        template: SearchQuery {
            query: String::new(),
            k: q.k,
            mode,
            metadata: metadata_terms(&q.filters)?,
            locale: q.locale.clone(),
            request_id: None,
        },
    };
    let memory = Recorded::default();
    Ok((body(&kb, &asking, &memory)?, skipped))
}

/// One turn: answers `question` after `history`, prints the chain when asked, returns the
/// frame.
fn turn(
    kb: &KnowledgeBase,
    asking: &Asking,
    memory: &Recorded,
    history: &[Turn],
    question: &str,
    trace: Trace,
) -> Result<AnswerFrame> {
    let trace_id = new_trace_id();
    // The local user sees the service's whole message (HTTP callers get its public form).
    let checked = SearchQuery::checked(question, "the question", asking.template.k, &kb.limits())
        .map_err(|e| anyhow!("{e}"))?;
    let q = SearchQuery {
        query: checked.query,
        ..asking.template.clone()
    };
    let frame = kb
        .converse(&asking.caller, &q, history, &trace_id, Some(memory))
        .map_err(|e| anyhow!("{e}"))?;
    if trace == Trace::Print {
        // Trace values come from documents and callers: control characters are shown, not run.
        eprint!(
            "{}",
            render::escape_lines(&render_chain(&memory.events_of(&trace_id)))
        );
    }
    Ok(frame)
}

fn exit_for(status: AnswerStatus, skipped: usize) -> Exit {
    match status {
        AnswerStatus::CannotRetrieve => Exit::CannotRetrieve,
        AnswerStatus::Blocked => Exit::Blocked,
        _ => Exit::unless_skipped(skipped),
    }
}

/// Answers one question (after the turns of `history`, when given) and prints the answer (and
/// the trace).
pub(crate) fn run(
    ctx: &Ctx,
    question: &str,
    q: &QueryArgs,
    trace: Trace,
    history: Option<&Path>,
) -> Result<Exit> {
    let turns = match history {
        Some(path) => read_history(path)?,
        None => Vec::new(),
    };
    let (frame, skipped) = with_service(ctx, q, |kb, asking, memory| {
        turn(kb, asking, memory, &turns, question, trace)
    })?;
    match q.output {
        Output::Json => println!("{}", serde_json::to_string(&frame)?),
        Output::Text => render::answer(&frame),
    }
    Ok(exit_for(frame.status, skipped))
}

/// A conversation on the terminal (or over piped lines): each line is a question answered
/// after the earlier ones. `/reset` forgets the conversation, `/quit` (or end of input) ends
/// it. With `save`, every turn is appended to that file as one JSON line (a history file).
pub(crate) fn chat(
    ctx: &Ctx,
    q: &QueryArgs,
    trace: Trace,
    history: Option<&Path>,
    save: Option<&Path>,
) -> Result<Exit> {
    let mut turns = match history {
        Some(path) => read_history(path)?,
        None => Vec::new(),
    };
    let interactive = std::io::stdin().is_terminal();
    let mut saved = match save {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open {} to save the chat", path.display()))?,
        ),
        None => None,
    };
    let (last, skipped) = with_service(ctx, q, |kb, asking, memory| {
        if interactive {
            eprintln!("zhiku chat: ask a question; /reset starts over, /quit ends.");
        }
        let mut last = None;
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        loop {
            if interactive {
                eprint!("› ");
                std::io::stderr().flush().ok();
            }
            let Some(line) = lines.next() else { break };
            let line = line.context("cannot read the next question")?;
            let question = line.trim();
            match question {
                "" => continue,
                "/quit" | "/exit" => break,
                "/reset" => {
                    turns.clear();
                    if interactive {
                        eprintln!("(conversation cleared)");
                    }
                    continue;
                }
                _ => {}
            }
            let frame = turn(kb, asking, memory, &turns, question, trace)?;
            match q.output {
                Output::Json => println!("{}", serde_json::to_string(&frame)?),
                Output::Text => {
                    render::answer(&frame);
                    println!();
                }
            }
            std::io::stdout().flush().ok();
            if let Some(file) = saved.as_mut() {
                writeln!(file, "{}", serde_json::to_string(&frame)?)
                    .context("cannot save the turn")?;
            }
            turns.push(Turn {
                question: frame.question.clone(),
                answer: frame.answer.clone(),
                rewritten: frame.rewritten.clone(),
            });
            // Only the most recent turns are kept: a conversation is read from its end.
            if turns.len() > MAX_HISTORY_TURNS {
                turns.remove(0);
            }
            last = Some(frame.status);
        }
        Ok(last)
    })?;
    Ok(last.map_or(Exit::unless_skipped(skipped), |s| exit_for(s, skipped)))
}

/// The turns of a history file: a JSON array of turns (or answer frames), one such object, or
/// one per line (JSON Lines, as `zhiku ask --json` and `chat --save` write them). A conversation
/// is read from its end: of a file with more than [`MAX_HISTORY_TURNS`] turns (`chat --save`
/// appends every turn), the last [`MAX_HISTORY_TURNS`].
pub(crate) fn read_history(path: &Path) -> Result<Vec<Turn>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the history file {}", path.display()))?;
    let turns = parse_history(&text).with_context(|| {
        format!(
            "{}: not a history (a JSON array of {{question, answer}} turns or answer frames, \
             one such object, or one per line)",
            path.display()
        )
    })?;
    Ok(last_turns(turns))
}

/// The last [`MAX_HISTORY_TURNS`] of `turns`, in order.
fn last_turns(mut turns: Vec<Turn>) -> Vec<Turn> {
    let older = turns.len().saturating_sub(MAX_HISTORY_TURNS);
    turns.drain(..older);
    turns
}

fn parse_history(text: &str) -> Result<Vec<Turn>> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    if trimmed.starts_with('[') {
        return Ok(serde_json::from_str(trimmed)?);
    }
    if let Ok(one) = serde_json::from_str::<Turn>(trimmed) {
        return Ok(vec![one]);
    }
    trimmed
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str::<Turn>(l).with_context(|| format!("line {}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{MAX_HISTORY_TURNS, parse_history, read_history};

    #[test]
    fn a_history_is_an_array_an_object_or_json_lines_of_turns_or_frames() {
        let frame = r#"{"question":"上海的人口是多少？","answer":"约 2487 万[1]。","status":"answered","citations":[{"marker":1}],"rewritten":null}"#;
        let lines = format!(
            "{frame}\n{{\"question\":\"那北京呢？\",\"rewritten\":\"北京的人口是多少？\"}}\n"
        );
        let turns = parse_history(&lines).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[1].standalone(), "北京的人口是多少？");
        assert_eq!(parse_history(frame).unwrap().len(), 1);
        assert_eq!(parse_history(&format!("[{frame}]")).unwrap().len(), 1);
        assert!(parse_history("").unwrap().is_empty());
        let err = parse_history("{\"question\":1}\n").unwrap_err();
        assert!(format!("{err:#}").contains("line 1"), "{err:#}");
    }

    #[test]
    fn a_history_file_longer_than_a_request_gives_its_last_turns() {
        // What `chat --save` writes after 150 turns: one answer frame per line.
        let lines: String = (1..=150)
            .map(|i| {
                format!(
                    "{{\"question\":\"问题 {i}？\",\"answer\":\"回答 {i}\",\"status\":\"answered\",\"rewritten\":null}}\n"
                )
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conv.jsonl");
        std::fs::write(&path, &lines).unwrap();
        let turns = read_history(&path).unwrap();
        assert_eq!(turns.len(), MAX_HISTORY_TURNS);
        assert_eq!(turns[0].question, "问题 51？");
        assert_eq!(turns[MAX_HISTORY_TURNS - 1].question, "问题 150？");
        // A file within the bound is read whole.
        let short: String = lines.lines().take(3).map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, short).unwrap();
        assert_eq!(read_history(&path).unwrap().len(), 3);
    }
}
