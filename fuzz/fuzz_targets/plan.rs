//! The rules planner (`zhiku_adapters_offline::planner::plan`, the body of `RulesPlanner`) over
//! a conversation:
//! the input's lines are the history, one turn per line (`question<TAB>answer<TAB>rewritten`,
//! the last two optional), and its last line is the new question. `reformulate`,
//! `small_talk_reply`, `split` and `topic` are run on the question too.
//!
//! Properties: no panic (the rules slice Chinese and English text by characters and patterns),
//! no hang or blow-up (output stays linear in the input: every part and the standalone
//! question are bounded by a multiple of the input); at most `MAX_PARTS` parts; a multi-part plan's
//! parts are its standalone question's pieces.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_domain::ports::{Intent, Turn};
use zhiku_adapters_offline::planner as plan;
use zhiku_domain::rules::plan::MAX_PARTS;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines: Vec<&str> = text.split('\n').collect();
    let question = lines.pop().unwrap_or_default();
    let history: Vec<Turn> = lines
        .iter()
        .map(|line| {
            let mut fields = line.split('\t');
            Turn {
                question: fields.next().unwrap_or_default().to_string(),
                answer: fields.next().unwrap_or_default().to_string(),
                rewritten: fields.next().map(str::to_string),
            }
        })
        .collect();

    let planned = plan::plan(&history, question);
    // Output stays linear in the input: a part is an item with the shared predicate ("A 和 B
    // 分别是什么" gives "A是什么", "B是什么") plus at most a topic carried from the part or the
    // turn before, and there are at most MAX_PARTS parts; anything super-linear (a rewrite
    // applied to its own output, a topic repeated per word) breaks this bound.
    let part_bound = (MAX_PARTS + 1) * (text.len() + 64);
    let bound = MAX_PARTS * (part_bound + 1);
    assert!(
        planned.standalone.len() <= bound,
        "standalone question of {} bytes from {} bytes of input",
        planned.standalone.len(),
        text.len()
    );
    assert!(
        planned.parts.len() <= MAX_PARTS,
        "{} parts",
        planned.parts.len()
    );
    match planned.intent {
        Intent::MultiPart => assert!(planned.parts.len() >= 2),
        Intent::SmallTalk => assert!(planned.reply.is_some()),
        _ => {}
    }
    for part in &planned.parts {
        assert!(part.len() <= part_bound, "part of {} bytes", part.len());
    }

    let _ = plan::reformulate(question);
    let _ = plan::small_talk_reply(question);
    let _ = plan::without_greeting(question);
    assert!(plan::split(question).len() <= MAX_PARTS);
    let _ = plan::topic(question);
});
