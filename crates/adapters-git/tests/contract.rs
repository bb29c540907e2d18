//! The source contract over a real git repository (the git program, a work tree the test
//! commits to, fetched through `file://`), and what only git has: branches and tags, force
//! pushes, a deleted branch, permalinks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use zhiku_adapters_git::{GitSettings, GitSource};
use zhiku_domain::ports::{DocumentSource, ScanError};
use zhiku_tests::contract::source::{SourceUnderTest, page, scan};
use zhiku_tests::sources::git;

struct Repo {
    _dir: tempfile::TempDir,
    work: PathBuf,
    source: GitSource,
}

fn settings(work: &Path, cache: &Path, reference: &str) -> GitSettings {
    GitSettings {
        url: work.display().to_string(),
        reference: reference.into(),
        paths: Vec::new(),
        permalink: Some("https://git.example/team/handbook/blob/{commit}/{path}".into()),
        cache: cache.to_path_buf(),
        timeout: Duration::from_secs(60),
        program: "git".into(),
        wanted: Arc::new(|p: &str| !p.ends_with(".bin")),
    }
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "--quiet"]);
        git(
            &work,
            &["commit", "--quiet", "--allow-empty", "-m", "start"],
        );
        let source = GitSource::new(settings(&work, &dir.path().join("cache.git"), "main"));
        Self {
            _dir: dir,
            work,
            source,
        }
    }
}

impl SourceUnderTest for Repo {
    fn source(&self) -> &dyn DocumentSource {
        &self.source
    }
    fn put(&self, path: &str, bytes: &[u8]) {
        let file = self.work.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
    fn delete(&self, path: &str) {
        std::fs::remove_file(self.work.join(path)).unwrap();
    }
    fn publish(&self) {
        git(&self.work, &["add", "--all"]);
        git(
            &self.work,
            &["commit", "--quiet", "--allow-empty", "-m", "change"],
        );
    }
    fn cut(&self) {
        std::fs::rename(&self.work, self.work.with_extension("moved")).unwrap();
    }
}

zhiku_tests::document_source_contract!(|()| -> Option<Box<dyn SourceUnderTest>> {
    Some(Box::new(Repo::new()))
});

#[test]
fn references_are_path_at_commit_with_a_permalink_and_hidden_or_unwanted_files_are_no_items() {
    let repo = Repo::new();
    repo.put("docs/出差 规定.html", &page(1, 0));
    repo.put(".github/workflow.html", &page(2, 0));
    repo.put("data.bin", b"\x00\x01");
    repo.publish();
    let commit = git(&repo.work, &["rev-parse", "HEAD"]);
    let mut items = Vec::new();
    let request = zhiku_domain::ports::ScanRequest {
        known: &BTreeMap::new(),
        cursor: None,
        max_item_bytes: 1 << 20,
    };
    let scanned = repo
        .source
        .scan(&request, &mut |e| {
            if let zhiku_domain::ports::ScanEvent::Changed { item, .. } = e {
                items.push(item);
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        items[0].reference,
        format!("docs/出差 规定.html@{}", &commit[..12])
    );
    assert_eq!(
        items[0].link.as_deref(),
        Some(
            format!(
                "https://git.example/team/handbook/blob/{commit}/docs/%E5%87%BA%E5%B7%AE%20%E8%A7%84%E5%AE%9A.html"
            )
            .as_str()
        )
    );
    assert_eq!(scanned.cursor.as_deref(), Some(commit.as_str()));
}

#[test]
fn a_force_push_is_the_new_tip_and_a_deleted_branch_fails_without_removing_anything() {
    let repo = Repo::new();
    git(&repo.work, &["checkout", "--quiet", "-b", "release"]);
    repo.put("a.html", &page(1, 0));
    repo.put("b.html", &page(2, 0));
    repo.publish();
    let dir = repo.work.parent().unwrap().to_path_buf();
    let release = GitSource::new(settings(&repo.work, &dir.join("release.git"), "release"));
    let first = scan(&release, &BTreeMap::new(), None, 1 << 20).unwrap();
    assert_eq!(first.changed.len(), 2);
    let known: BTreeMap<String, String> = first.known();

    // History rewritten: the branch now holds another b.html and no a.html.
    git(&repo.work, &["reset", "--quiet", "--hard", "main"]);
    repo.put("b.html", &page(2, 1));
    repo.publish();
    let after = scan(&release, &known, first.scanned.cursor.as_deref(), 1 << 20).unwrap();
    assert_eq!(after.gone.iter().collect::<Vec<_>>(), ["a.html"]);
    assert_eq!(after.changed["b.html"].0, page(2, 1));

    // The branch deleted: refused, nothing reported gone.
    git(&repo.work, &["checkout", "--quiet", "main"]);
    git(&repo.work, &["branch", "--quiet", "-D", "release"]);
    let mut gone = 0;
    let request = zhiku_domain::ports::ScanRequest {
        known: &known,
        cursor: None,
        max_item_bytes: 1 << 20,
    };
    let err = release
        .scan(&request, &mut |e| {
            gone += usize::from(matches!(e, zhiku_domain::ports::ScanEvent::Gone { .. }));
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, ScanError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("release"), "{err}");
    assert_eq!(gone, 0);
}

#[test]
fn a_tag_is_read_as_it_was_tagged() {
    let repo = Repo::new();
    repo.put("a.html", &page(1, 0));
    repo.publish();
    git(&repo.work, &["tag", "v1"]);
    repo.put("a.html", &page(1, 1));
    repo.publish();
    let dir = repo.work.parent().unwrap().to_path_buf();
    let tagged = GitSource::new(settings(&repo.work, &dir.join("v1.git"), "v1"));
    let r = scan(&tagged, &BTreeMap::new(), None, 1 << 20).unwrap();
    assert_eq!(r.changed["a.html"].0, page(1, 0));
}
