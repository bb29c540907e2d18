//! `zhiku sync` and `serve`'s scheduled syncs end to end: a git repository (the git program),
//! a web site (Python's own `http.server`, a real server that answers `If-Modified-Since`
//! with 304, serving a page, a documentation page with navigation and a linked PDF) and a WebDAV
//! share (wsgidav, when `ZHIKU_WEBDAV_PYTHON` names it) synced into one knowledge base; their
//! documents answer with their references, deletions leave within one sync, a failing source
//! stops no other.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{assert_succeeded, json_lines, write, zhiku};
use zhiku_tests::sources::{Wsgidav, free_port, git, wait_listening, webdav_python};

/// A child process stopped when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A web site served by `python3 -m http.server` from `dir`.
fn web_site(dir: &Path) -> (Running, String) {
    let port = free_port();
    let child = Command::new("python3")
        .args(["-m", "http.server", "--bind", "127.0.0.1"])
        .arg(port.to_string())
        .arg("--directory")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m http.server starts");
    wait_listening(port);
    (Running(child), format!("http://127.0.0.1:{port}"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/formats")
        .join(name)
}

struct World {
    _dir: tempfile::TempDir,
    kb: PathBuf,
    repo: PathBuf,
    site: PathBuf,
    share: Option<PathBuf>,
    _web: Running,
    _share: Option<Wsgidav>,
}

fn world(every: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    write(&kb, "local.md", "# 本地\n\n本地文件夹里的文档照常索引。\n");
    let repo = dir.path().join("handbook");
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    git(&repo, &["init", "--quiet"]);
    write(
        &repo,
        "docs/出差.md",
        "# 出差\n\n出差住宿标准是每晚四百八十元，凭发票报销。\n",
    );
    write(
        &repo,
        "docs/假期.md",
        "# 假期\n\n年假天数按工龄计算，满十年后每年十五天。\n",
    );
    write(
        &repo,
        "README.txt",
        "This handbook repository keeps the staff handbook.\n",
    );
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "handbook"]);
    let site = dir.path().join("site");
    write(
        &site,
        "index.html",
        "<html><head><title>知识站</title></head><body><nav><a href=\"docs-site.html\">Profiles</a> \
         <a href=\"wifi.html\">无线网络</a> <a href=\"files/en-guide.pdf\">Guide (PDF)</a></nav>\
         <main><h1>知识站</h1><p>知识站首页列出全部文章。</p></main></body></html>",
    );
    write(
        &site,
        "wifi.html",
        "<html><head><title>无线网络</title></head><body><main><h1>无线网络</h1>\
         <p>访客无线网络的密码每周一更换，向前台索取。</p></main></body></html>",
    );
    std::fs::copy(fixture("docs-site.html"), site.join("docs-site.html")).unwrap();
    std::fs::create_dir_all(site.join("files")).unwrap();
    std::fs::copy(fixture("en-guide.pdf"), site.join("files/en-guide.pdf")).unwrap();
    let (web, web_url) = web_site(&site);
    let share_dir = dir.path().join("share");
    std::fs::create_dir_all(share_dir.join("制度")).unwrap();
    write(
        &share_dir,
        "制度/门禁.md",
        "# 门禁\n\n门禁卡丢失后须在二十四小时内到行政部挂失。\n",
    );
    std::fs::copy(
        fixture("zh-policy.docx"),
        share_dir.join("制度/policy.docx"),
    )
    .unwrap();
    let share =
        webdav_python("the WebDAV share of this test").map(|p| Wsgidav::start(&p, &share_dir));
    let mut config = format!(
        "scopes = [\"default\", \"hr\"]\n\n\
         [[sources]]\nname = \"handbook\"\nkind = \"git\"\nurl = {repo:?}\nbranch = \"main\"\n\
         permalink = \"https://git.example/hr/handbook/blob/{{commit}}/{{path}}\"\nevery = \"{every}\"\n\n\
         [[sources]]\nname = \"site\"\nkind = \"web\"\nstart = [\"{web_url}/\"]\ngone_after = \"0\"\n\
         rate_ms = 0\nevery = \"{every}\"\n"
    );
    let has_share = share.is_some();
    if let Some(server) = &share {
        let url = &server.url;
        config.push_str(&format!(
            "\n[[sources]]\nname = \"share\"\nkind = \"webdav\"\nurl = \"{url}\"\nuser = \"li\"\n\
             password_env = \"SHARE_PASSWORD\"\nscope = \"hr\"\nevery = \"{every}\"\n"
        ));
    }
    write(&kb, "zhiku.toml", &config);
    World {
        share: has_share.then(|| share_dir.clone()),
        _share: share,
        _dir: dir,
        kb,
        repo,
        site,
        _web: web,
    }
}

fn sync(w: &World) -> (Vec<Value>, std::process::Output) {
    let out = zhiku(&w.kb)
        .env("SHARE_PASSWORD", "s3cret")
        .args(["sync", "--json"])
        .output()
        .unwrap();
    (json_lines(&out.stdout), out)
}

fn search(w: &World, query: &str) -> Vec<Value> {
    search_in(&w.kb, query, &["--scope", "default", "--scope", "hr"])
}

fn outcome<'a>(lines: &'a [Value], source: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["source"] == source)
        .unwrap_or_else(|| panic!("no line for {source}: {lines:?}"))
}

#[test]
fn sources_sync_into_answers_with_their_references_and_deletions_leave_within_one_sync() {
    let w = world("1h");
    let (lines, out) = sync(&w);
    assert_succeeded(&out);
    let commit = git(&w.repo, &["rev-parse", "HEAD"]);
    let git_first = &outcome(&lines, "handbook")["outcome"];
    assert_eq!(git_first["added"], 3, "{git_first}");
    let web_first = &outcome(&lines, "site")["outcome"];
    assert_eq!(
        web_first["added"], 4,
        "index, two pages and the linked PDF: {web_first}"
    );

    let hits = search(&w, "出差住宿标准");
    let top = &hits[0];
    assert_eq!(top["doc_id"], "sources/handbook/docs/出差.md");
    assert_eq!(top["source"], format!("docs/出差.md@{}", &commit[..12]));
    assert_eq!(
        top["url"],
        format!("https://git.example/hr/handbook/blob/{commit}/docs/%E5%87%BA%E5%B7%AE.md")
    );
    let wifi = search(&w, "访客无线网络密码");
    assert_eq!(wifi[0]["doc_id"], "sources/site/wifi.html");
    assert!(wifi[0]["source"].as_str().unwrap().ends_with("/wifi.html"));
    let guide = search(&w, "Lumen Hub wireless sensors gateway");
    assert_eq!(guide[0]["doc_id"], "sources/site/files/en-guide.pdf");
    let profiles = search(&w, "named set of connection settings profile");
    assert_eq!(profiles[0]["doc_id"], "sources/site/docs-site.html");
    if w.share.is_some() {
        let door = search(&w, "门禁卡丢失挂失");
        assert_eq!(door[0]["doc_id"], "sources/share/制度/门禁.md");
        // The share's pinned scope: hidden from a caller of the default scope alone.
        assert!(
            search_in(&w.kb, "门禁卡丢失挂失", &["--scope", "default"])
                .iter()
                .all(|h| h["doc_id"] != "sources/share/制度/门禁.md")
        );
    }

    // Nothing changed: nothing copied, nothing extracted, one conditional request a page.
    let (lines, out) = sync(&w);
    assert_succeeded(&out);
    let git_again = &outcome(&lines, "handbook")["outcome"];
    assert_eq!(
        (git_again["unchanged"].as_u64(), git_again["bytes"].as_u64()),
        (Some(3), Some(0))
    );
    let web_again = &outcome(&lines, "site")["outcome"];
    assert_eq!(
        (web_again["unchanged"].as_u64(), web_again["bytes"].as_u64()),
        (Some(4), Some(0))
    );
    let index = lines.last().unwrap();
    assert_eq!(index["docs_changed"], 0, "{index}");
    assert_eq!(index["chunks_embedded"], 0, "{index}");

    // Deleted at the sources: gone from answers after one sync.
    std::fs::remove_file(w.repo.join("docs/出差.md")).unwrap();
    git(&w.repo, &["commit", "--quiet", "--all", "-m", "drop"]);
    std::fs::remove_file(w.site.join("wifi.html")).unwrap();
    if let Some(share) = &w.share {
        std::fs::remove_file(share.join("制度/门禁.md")).unwrap();
    }
    let (lines, out) = sync(&w);
    assert_succeeded(&out);
    assert_eq!(outcome(&lines, "handbook")["outcome"]["removed"], 1);
    assert_eq!(outcome(&lines, "site")["outcome"]["removed"], 1);
    let gone = |query: &str, doc: &str| {
        assert!(
            search(&w, query).iter().all(|h| h["doc_id"] != doc),
            "{doc} still answers"
        );
    };
    gone("出差住宿标准", "sources/handbook/docs/出差.md");
    gone("访客无线网络密码", "sources/site/wifi.html");
    if w.share.is_some() {
        gone("门禁卡丢失挂失", "sources/share/制度/门禁.md");
    }

    // Status names every source and its last sync.
    let out = zhiku(&w.kb).args(["status", "--json"]).output().unwrap();
    assert_succeeded(&out);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = status["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"handbook") && names.contains(&"site"),
        "{names:?}"
    );
}

#[test]
fn a_failing_source_stops_no_other_and_keeps_its_documents() {
    let w = world("1h");
    let (_, out) = sync(&w);
    assert_succeeded(&out);
    // The repository moves away: its sync fails, the site's goes on, nothing is removed.
    std::fs::rename(&w.repo, w.repo.with_extension("moved")).unwrap();
    write(
        &w.site,
        "new.html",
        "<html><body><main><h1>新页面</h1><p>茶水间的咖啡机每天下午五点清洗。</p></main></body></html>",
    );
    write(
        &w.site,
        "index.html",
        "<html><body><a href=\"docs-site.html\">p</a> <a href=\"wifi.html\">w</a> \
         <a href=\"files/en-guide.pdf\">g</a> <a href=\"new.html\">n</a><main><p>首页</p></main></body></html>",
    );
    let (lines, out) = sync(&w);
    assert_eq!(
        out.status.code(),
        Some(8),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(outcome(&lines, "handbook")["ok"], false);
    assert_eq!(outcome(&lines, "site")["ok"], true);
    assert_eq!(
        search(&w, "咖啡机清洗")[0]["doc_id"],
        "sources/site/new.html"
    );
    assert_eq!(
        search(&w, "出差住宿标准")[0]["doc_id"],
        "sources/handbook/docs/出差.md",
        "an unreachable repository removes nothing"
    );
}

#[test]
fn serve_syncs_on_its_schedule_and_reports_each_source_in_metrics() {
    let w = world("2s");
    let server = support::Server::start(&w.kb, &[]);
    let found = |query: &str, doc: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = support::call(
                "POST",
                &server.url("/v1/search"),
                None,
                Some(&serde_json::json!({"query": query, "k": 10, "mode": "lexical"})),
            );
            if r.body["hits"]
                .as_array()
                .is_some_and(|h| h.iter().any(|h| h["doc_id"] == doc))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{doc} never answered: {}",
                r.text
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    found("出差住宿标准", "sources/handbook/docs/出差.md");
    write(
        &w.repo,
        "docs/报销.md",
        "# 报销\n\n报销单须在费用发生后三十天内提交。\n",
    );
    git(&w.repo, &["add", "--all"]);
    git(&w.repo, &["commit", "--quiet", "-m", "add"]);
    found("报销单三十天内提交", "sources/handbook/docs/报销.md");
    let metrics = support::call("GET", &server.url("/metrics"), None, None);
    let text = metrics.text;
    assert!(
        text.contains("zhiku_source_items{source=\"handbook\"} 4"),
        "{text}"
    );
    assert!(
        text.contains("zhiku_source_up{source=\"site\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("zhiku_source_syncs_total{source=\"handbook\",result=\"ok\"}"),
        "{text}"
    );
}

#[test]
fn a_file_that_becomes_a_folder_is_synced_in_one_go() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "--quiet"]);
    write(&repo, "guide.md", "# 指南\n\n旧版指南只有一页。\n");
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "one page"]);
    write(
        &kb,
        "zhiku.toml",
        &format!("[[sources]]\nname = \"r\"\nkind = \"git\"\nurl = {repo:?}\n"),
    );
    let out = zhiku(&kb).args(["sync", "--json"]).output().unwrap();
    assert_succeeded(&out);
    git(&repo, &["rm", "--quiet", "guide.md"]);
    write(
        &repo,
        "guide.md/intro.md",
        "# 入门\n\n新版指南拆成了多页，这是入门篇。\n",
    );
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "a folder now"]);
    let out = zhiku(&kb).args(["sync", "--json"]).output().unwrap();
    assert_succeeded(&out);
    let lines = json_lines(&out.stdout);
    let o = &outcome(&lines, "r")["outcome"];
    assert_eq!(
        (o["added"].as_u64(), o["removed"].as_u64()),
        (Some(1), Some(1)),
        "{o}"
    );
    assert!(o["failed"].as_array().unwrap().is_empty(), "{o}");
    assert_eq!(
        search_in(&kb, "新版指南拆成多页", &[])[0]["doc_id"],
        "sources/r/guide.md/intro.md"
    );
}

fn search_in(kb: &Path, query: &str, scopes: &[&str]) -> Vec<Value> {
    let out = zhiku(kb)
        .args(["search", query, "--json", "--no-refresh"])
        .args(scopes)
        .output()
        .unwrap();
    assert_succeeded(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["evidence"].as_array().cloned().unwrap_or_default()
}
