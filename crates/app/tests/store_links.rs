//! A store is never read or written through a symbolic link (issue 35): a `writer.lock` (or any
//! store file) planted as a link to a file elsewhere is refused with a clear error, and the
//! link's target is left as it was.

mod support;

use std::path::Path;

fn kb_with_a_document(dir: &Path) -> std::path::PathBuf {
    let kb = dir.join("kb");
    support::write(&kb, "notes/a.md", "# A\n\nalpha 仓库在下单后两天内发货。\n");
    support::write(
        &kb,
        "zhiku.toml",
        "embedder = \"hashing\"\nvectors = \"ann\"\nlexical = \"disk\"\n",
    );
    kb
}

#[cfg(unix)]
#[test]
fn a_store_file_that_is_a_link_is_refused_and_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let kb = kb_with_a_document(dir.path());
    let outside = dir.path().join("precious.txt");
    std::fs::write(&outside, "do not truncate me\n").unwrap();
    let store = kb.join(".zhiku");
    std::fs::create_dir_all(&store).unwrap();
    std::os::unix::fs::symlink(&outside, store.join("writer.lock")).unwrap();

    // Every writer used to truncate the link's target and write its pid there.
    for args in [vec!["index"], vec!["index", "--rebuild"]] {
        let out = support::zhiku(&kb).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
        assert!(err.contains("writer.lock"), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "do not truncate me\n"
    );

    // Without the link the store builds; a link put in place of another store file later
    // (the catalog) is refused the same way, by writers and readers alike.
    std::fs::remove_file(store.join("writer.lock")).unwrap();
    support::zhiku(&kb).arg("index").assert().success();
    std::fs::remove_file(store.join("catalog.sqlite")).unwrap();
    std::os::unix::fs::symlink(&outside, store.join("catalog.sqlite")).unwrap();
    for args in [vec!["index"], vec!["status"]] {
        let out = support::zhiku(&kb).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("catalog.sqlite"), "{args:?}: {err}");
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "do not truncate me\n"
    );
}
