//! The extractive generator's behaviour, through `compose` and the `Generator` port.

use zhiku_domain::contracts::{Embedding, EmbeddingSpace, Normalization, Pooling};
use zhiku_domain::ports::{EmbedError, SourceBlock};
use zhiku_domain::rules::citation::resolve;
use zhiku_domain::rules::context::{NO_MATERIAL_EN, NO_MATERIAL_ZH, build_request};
use zhiku_domain::{ChunkId, DocId, sha256_hex};

use super::*;

fn block(marker: u32, text: &str) -> SourceBlock {
    SourceBlock {
        marker,
        chunk_id: ChunkId::derive(
            &DocId::new("d").unwrap(),
            marker as usize,
            &sha256_hex(text),
        ),
        title: "t".into(),
        source: "d.md".into(),
        heading_path: vec![],
        pages: None,
        text: text.into(),
    }
}

fn answer(question: &str, sources: Vec<SourceBlock>) -> String {
    let req = build_request(question, sources, None, 1);
    ExtractiveGenerator::default().compose(&req)
}

#[test]
fn answers_with_cited_sentences_from_the_evidence() {
    let sources = vec![
        block(
            1,
            "知库把文档切成块。每个块的 ID 由文档 ID、起始位置和内容哈希组成。",
        ),
        block(2, "混合检索用倒数排名融合合并两路结果。"),
    ];
    let ids: Vec<ChunkId> = sources.iter().map(|s| s.chunk_id.clone()).collect();
    let req = build_request("块的 ID 是怎么组成的？", sources, None, 1);
    let answer = ExtractiveGenerator::default().compose(&req);
    assert!(answer.contains("内容哈希组成[1]"), "{answer}");
    assert!(!answer.contains("倒数排名"), "{answer}");
    let r = resolve(&answer, &ids);
    assert!(r.check().is_ok());
    // Deterministic.
    assert_eq!(answer, ExtractiveGenerator::default().compose(&req));
}

#[test]
fn english_answers_cite_each_sentence() {
    let sources = vec![
        block(1, "The lexical route uses BM25 over titles and content."),
        block(
            2,
            "Scope filters apply before ranking. BM25 weights rare terms more.",
        ),
    ];
    let a = answer("How does the lexical route rank with BM25?", sources);
    assert!(
        a.starts_with("The lexical route uses BM25 over titles and content[1]."),
        "{a}"
    );
}

#[test]
fn says_no_material_when_nothing_covers_the_question() {
    let sources = vec![block(1, "知库把文档切成块。")];
    assert_eq!(
        answer("明天北京天气怎么样？", sources.clone()),
        NO_MATERIAL_ZH
    );
    assert_eq!(
        answer("Does it support audio search?", sources),
        NO_MATERIAL_EN
    );
    assert_eq!(answer("什么？", vec![]), NO_MATERIAL_ZH);
}

#[test]
fn a_lone_character_of_the_question_is_found_inside_the_evidences_words() {
    // "融合是怎么做的？": "做" stands alone between function characters; the evidence
    // writes it inside "时做". Counted as found nowhere, it would weigh as the rarest term
    // and the question would go unanswered.
    let filler: String = (1..=30)
        .map(|i| format!("第{i}项配置与索引的存储位置有关。"))
        .collect();
    let sources = vec![
        block(
            1,
            "两条路线的结果用倒数排名融合合并。得分相同时按片段 ID 排序。",
        ),
        block(2, "融合之后，知库会回到源头查找文档。"),
        block(3, &filler),
        block(4, "查询时做混合检索，之后再用倒数排名融合合并结果。"),
    ];
    let fused = answer("融合是怎么做的？", sources.clone());
    assert!(fused.contains("之后再用倒数排名融合合并结果[4]"), "{fused}");
    // Where the character is nowhere in the evidence, it still weighs: an unknown task
    // stays unanswered.
    assert_eq!(answer("融合是怎么训练的？", sources), NO_MATERIAL_ZH);
}

#[test]
fn headings_labels_and_questions_are_never_the_answer() {
    // A heading that repeats the question is context, not an answer.
    let a = answer(
        "标题权重为什么是 1.0？",
        vec![block(
            1,
            "## 标题权重\n\n标题字段的权重是 1.0，这是在评测集上测出来的。",
        )],
    );
    assert_eq!(a, "标题字段的权重是 1.0，这是在评测集上测出来的[1]。");
    // An FAQ's question is not echoed: its answer is quoted, without the label.
    let a = answer(
        "一台机器放不下了怎么办？",
        vec![block(
            1,
            "问：一台机器放不下了怎么办？\n答：可以改用 Qdrant 适配器，把向量放到服务器上。",
        )],
    );
    assert_eq!(a, "可以改用 Qdrant 适配器，把向量放到服务器上[1]。");
    // A glossary's bold label is the term the definition defines.
    let a = answer(
        "What is a golden set?",
        vec![block(
            1,
            "**Golden set.** Evaluation questions with their relevant documents.\n\n**Chunk.** A window of text.",
        )],
    );
    assert_eq!(a, "Evaluation questions with their relevant documents[1].");
}

#[test]
fn inline_markup_is_taken_off_and_the_words_kept() {
    let a = answer(
        "What does the hashing embedder do?",
        vec![block(
            1,
            "- The **hashing embedder** maps `text` to [feature hashes](https://example.org/h) for *tests*.",
        )],
    );
    assert_eq!(
        a,
        "The hashing embedder maps text to feature hashes for tests[1]."
    );
}

#[test]
fn a_sentence_ending_in_a_colon_is_quoted_with_its_list() {
    let a = answer(
        "索引报告包含哪些内容？",
        vec![block(
            1,
            "每次索引结束都会给出一份报告，包含这些内容：\n\n- 新增和变更的文档数；\n- 复用和新嵌入的片段数。\n",
        )],
    );
    assert_eq!(
        a,
        "每次索引结束都会给出一份报告，包含这些内容：新增和变更的文档数；复用和新嵌入的片段数[1]。"
    );
    // Without its list, such a sentence is not an answer.
    let a = answer(
        "索引报告包含哪些内容？",
        vec![block(1, "每次索引结束都会给出一份报告，包含这些内容：\n")],
    );
    assert_eq!(a, NO_MATERIAL_ZH);
}

#[test]
fn table_rows_are_quoted_under_the_sentence_introducing_them() {
    let text = "## 延迟\n\n在 4 核机器上测得的查询延迟如下：\n\n| 模式 | p50 | p99 |\n|:--|--:|--:|\n| 词法 | 2.1 ms | 6.0 ms |\n| 混合 | 9.8 ms | 21 ms |\n\n以上为热缓存。\n";
    // The row that answers, read with its header.
    let a = answer("混合模式的查询延迟是多少？", vec![block(1, text)]);
    assert_eq!(a, "混合：p50 9.8 ms，p99 21 ms[1]。");
    // A question about the whole table gets it whole, under its introducing sentence.
    let a = answer("4 核机器上测得的查询延迟如何？", vec![block(1, text)]);
    assert_eq!(
        a,
        "在 4 核机器上测得的查询延迟如下：词法：p50 2.1 ms，p99 6.0 ms；混合：p50 9.8 ms，p99 21 ms[1]。"
    );
    // The numbers quoted are the table's, so the support check's numbers rule holds.
    let checks = zhiku_domain::rules::support::check(&a, "混合", &[(1, text)]);
    assert!(checks.iter().all(|c| c.verdict.passes()), "{checks:?}");
    // Two columns read "key: value"; an English table reads in English.
    let a = answer(
        "What is the default port?",
        vec![block(
            1,
            "## Defaults\n\n| Setting | Value |\n|---|---|\n| default port | 7070 |\n| default host | 127.0.0.1 |\n",
        )],
    );
    assert!(a.contains("default port: 7070"), "{a}");
}

#[test]
fn a_question_for_a_kind_of_thing_is_answered_by_its_instances() {
    // Neither "包括" nor "颜色" is written in the answer: they frame the question.
    let sources = vec![
        block(
            1,
            "## 信号灯\n\n路口的信号灯有三种状态：\n\n- 红灯；\n- 黄灯；\n- 绿灯。\n",
        ),
        block(2, "这种颜色搭配包括很多种，本页不讨论。"),
    ];
    let a = answer("信号灯的状态包括哪些颜色？", sources.clone());
    assert_eq!(a, "路口的信号灯有三种状态：红灯；黄灯；绿灯[1]。");
    let a = answer(
        "Which colours make up the signal states?",
        vec![block(
            1,
            "## Signals\n\nA signal has three states:\n\n- red;\n- amber;\n- green.\n",
        )],
    );
    assert!(
        a.starts_with("A signal has three states: red; amber; green"),
        "{a}"
    );
    // The subject must still be there: a frame alone answers nothing.
    assert_eq!(answer("天气包括哪些颜色？", sources), NO_MATERIAL_ZH);
}

#[test]
fn a_list_too_long_to_quote_whole_names_every_item_by_its_first_clause() {
    let long = "它负责很多事情，包括读取配置、检查权限、记录日志、处理错误、汇报指标、清理临时文件、维护缓存、调度后台任务、轮换密钥、压缩归档、校验签名和通知值班人员";
    let text = format!(
        "## 组件\n\n系统由这些组件构成：\n\n- 网关，{long}；\n- 调度器，{long}；\n- 存储层，{long}；\n- 队列，{long}；\n- 缓存，{long}；\n- 监控面板，{long}。\n"
    );
    let a = answer("系统由哪些组件构成？", vec![block(1, &text)]);
    assert_eq!(
        a,
        "系统由这些组件构成：网关，它负责很多事情；调度器，它负责很多事情；存储层，它负责很多事情；队列，它负责很多事情；缓存，它负责很多事情；监控面板，它负责很多事情[1]。"
    );
}

#[test]
fn a_documents_opening_sentence_is_context_for_its_other_chunks() {
    let lead = SourceBlock {
        chunk_id: ChunkId::derive(&DocId::new("pump").unwrap(), 0, &sha256_hex("lead")),
        source: "pump.md".into(),
        ..block(
            2,
            "# Pump\n\nThe P-40 is a centrifugal water pump for small farms.\n",
        )
    };
    let later = SourceBlock {
        chunk_id: ChunkId::derive(&DocId::new("pump").unwrap(), 900, &sha256_hex("later")),
        source: "pump.md".into(),
        ..block(
            1,
            "## Maintenance\n\nReplace the seal every 500 hours of running.\n",
        )
    };
    let other = block(
        3,
        "A diesel generator needs its oil replaced every 250 hours.",
    );
    let question = "How often is the P-40 centrifugal pump seal replaced?";
    let a = answer(question, vec![later.clone(), lead, other.clone()]);
    assert_eq!(a, "Replace the seal every 500 hours of running[1].");
    // Without the document's opening, nothing says which machine the seal belongs to.
    assert_eq!(answer(question, vec![later, other]), NO_MATERIAL_EN);
}

#[test]
fn traditional_questions_match_simplified_evidence() {
    let a = answer(
        "塊的編號由哪些部分組成？",
        vec![block(1, "块的编号由文档编号、起始位置和内容哈希组成。")],
    );
    assert_eq!(a, "块的编号由文档编号、起始位置和内容哈希组成[1]。");
}

/// A test double with a little meaning: texts about one of two topics map to that topic's
/// axis, whatever their words.
struct Topics(EmbeddingSpace);

impl Topics {
    fn new() -> Self {
        Self(EmbeddingSpace::new("topics", "1", 2, Pooling::Mean, Normalization::L2).unwrap())
    }
    fn vector(&self, text: &str) -> Embedding {
        let ids = ["编号", "ID", "标识"].iter().any(|w| text.contains(w));
        let values = if ids { vec![1.0, 0.0] } else { vec![0.0, 1.0] };
        self.0.embedding(values, false).unwrap()
    }
}

impl Embedder for Topics {
    fn space(&self) -> &EmbeddingSpace {
        &self.0
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
    fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError> {
        Ok(self.vector(text))
    }
}

#[test]
fn an_embedder_lets_a_paraphrase_find_the_sentence_that_stands_out() {
    let sources = vec![block(
        1,
        "切分在标题处分节。片段 ID 的格式是文档、起始位置和哈希。重叠部分按字符计算，默认八十个字符。索引报告列出新增和删除的片段。",
    )];
    let question = "文本块的编号是怎么生成的？";
    // Lexically the paraphrase shares no word with the evidence.
    assert_eq!(answer(question, sources.clone()), NO_MATERIAL_ZH);
    let generator = ExtractiveGenerator::default().with_embedder(Arc::new(Topics::new()));
    let req = build_request(question, sources, None, 1);
    assert_eq!(
        generator.compose(&req),
        "片段 ID 的格式是文档、起始位置和哈希[1]。"
    );
    assert!(generator.identity().contains("semantic=topics"));
}

#[test]
fn similarity_alone_answers_nothing_unless_one_sentence_stands_out() {
    let generator = ExtractiveGenerator::default().with_embedder(Arc::new(Topics::new()));
    let question = "文本块的编号是怎么生成的？";
    for text in [
        // Two sentences are equally about identifiers: neither stands out.
        "切分在标题处分节。片段 ID 的格式是文档、起始位置和哈希。文档 ID 来自 front matter 或路径。重叠部分按字符计算，默认八十个字符。索引报告列出新增和删除的片段。",
        // Too few sentences for any to stand out.
        "切分在标题处分节。片段 ID 的格式是文档、起始位置和哈希。",
    ] {
        let req = build_request(question, vec![block(1, text)], None, 1);
        assert_eq!(generator.compose(&req), NO_MATERIAL_ZH, "{text}");
    }
}

#[test]
fn a_sentence_about_the_subject_alone_answers_nothing_asked() {
    // Support is not relevance: the lodging limit is the subject's and well cited, but the
    // question asks of the subject's train seats.
    let sources = vec![
        block(
            1,
            "## 朱雀项目\n\n朱雀项目成员出差，住宿报销上限为每晚 800 元，不分城市。乘坐高铁可以选择一等座。",
        ),
        block(2, "## 交通\n\n城际出行优先乘坐高铁，座位为二等座。"),
    ];
    let seats = answer("朱雀项目的高铁座位是什么？", sources);
    assert!(seats.contains("一等座"), "{seats}");
    assert!(!seats.contains("800"), "{seats}");
    // A question without a subject apart from what it asks keeps every covering sentence.
    let sources = vec![block(
        1,
        "年假可以分开休，但每次不少于半天。年假每年 5 天。",
    )];
    let split = answer("年假可以分开休吗？", sources);
    assert!(split.contains("半天"), "{split}");
}

#[test]
fn a_sentence_about_another_of_the_subjects_kind_answers_nothing() {
    let no_material = |q: &str, sources| answer(q, sources) == NO_MATERIAL_ZH;
    // Another language, another city, another person: the sentence shares every other word of
    // the question and answers another one.
    assert!(no_material(
        "日文文档怎么切词？",
        vec![block(1, "英文文档按空格切词，再统一转成小写。")]
    ));
    assert!(no_material(
        "成都的住宿上限是多少？",
        vec![block(1, "杭州的住宿上限为每晚 500 元。")]
    ));
    assert!(no_material(
        "李白出生在哪一年？",
        vec![block(1, "杜甫出生于公元 712 年，河南巩县人。")]
    ));
    // Named by the heading the sentence is read under: the right city's figure, not the other's.
    let sources = vec![
        block(1, "## 杭州\n\n住宿上限为每晚 500 元，超出自理。"),
        block(2, "## 成都\n\n住宿上限为每晚 450 元，超出自理。"),
    ];
    let chengdu = answer("成都的住宿上限是多少？", sources);
    assert!(chengdu.contains("450"), "{chengdu}");
    assert!(!chengdu.contains("500"), "{chengdu}");
    // Of two kinds side by side, the one asked about; a sibling the question names is no
    // other subject, and a sentence naming its subject among others stays.
    let sources = || {
        vec![
            block(1, "英文文档按空格切词。"),
            block(2, "日文文档按词典切词，不看空格。"),
        ]
    };
    let japanese = answer("日文文档怎么切词？", sources());
    assert!(
        japanese.contains("词典") && !japanese.contains("按空格"),
        "{japanese}"
    );
    let both = answer("英文和日文文档各怎么切词？", sources());
    assert!(both.contains("英文") || both.contains("日文"), "{both}");
    let sources = vec![block(1, "杭州和成都的住宿上限都是每晚 500 元。")];
    let shared = answer("成都的住宿上限是多少？", sources);
    assert!(shared.contains("500"), "{shared}");
}
