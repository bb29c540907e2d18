//! The store lock: one writing process per store, taken with an advisory file lock that the
//! operating system releases when the process dies (also after `kill -9`).

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Result, anyhow};

use crate::atomic::{open_store_file, open_store_file_to_read};

/// The name of the store lock file inside the store directory.
pub const LOCK_FILE: &str = "writer.lock";

/// The store cannot be opened for writing.
#[derive(Debug, thiserror::Error)]
pub enum StoreLocked {
    /// Another process holds the store lock.
    #[error(
        "the store at {store} is being written by another process (pid {pid}); wait for it to finish, or use a read-only command (status, verify --read-only, search --no-refresh)"
    )]
    Busy {
        /// The store folder, as the message shows it.
        store: String,
        /// The holder's pid as it recorded it (`unknown` when unreadable).
        pid: String,
    },
    /// The store folder cannot be written.
    #[error(
        "the store at {store} is read-only ({reason}): it cannot be written; read-only commands (status, verify, search --no-refresh) still work"
    )]
    ReadOnly {
        /// The store folder, as the message shows it.
        store: String,
        /// What refused the write.
        reason: String,
    },
}

fn is_read_only_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// The exclusive store lock, released when dropped (or when the process dies).
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Takes the lock of the store in `dir` (creating the folder and the lock file), without
    /// waiting: a held lock is [`StoreLocked::Busy`], a folder that cannot be written
    /// [`StoreLocked::ReadOnly`].
    pub fn acquire(dir: &Path) -> Result<Self> {
        let store = dir.display().to_string();
        let read_only = |what: String, e: &std::io::Error| StoreLocked::ReadOnly {
            store: store.clone(),
            reason: format!("{what}: {e}"),
        };
        if let Err(e) = std::fs::create_dir_all(dir) {
            if is_read_only_error(&e) {
                return Err(read_only(format!("cannot create {}", dir.display()), &e).into());
            }
            return Err(anyhow!(e).context(format!("cannot create store {}", dir.display())));
        }
        let path = dir.join(LOCK_FILE);
        // Never through a link: a `writer.lock` linking elsewhere would have every writer
        // truncate the link's target and write its pid there.
        let file = match open_store_file(
            &path,
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        ) {
            Ok(f) => f,
            Err(e) if is_read_only_error(&e) => {
                return Err(read_only(format!("cannot open {}", path.display()), &e).into());
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => return Err(anyhow!(e)),
            Err(e) => return Err(anyhow!(e).context(format!("cannot open {}", path.display()))),
        };
        // A reader asking who holds the lock (`holder`) takes a shared lock for an instant:
        // a writer starting then must not take that for another writer, so it looks again
        // for a short while before it gives up.
        let mut attempt = file.try_lock();
        let patience = std::time::Instant::now() + std::time::Duration::from_millis(250);
        while matches!(attempt, Err(std::fs::TryLockError::WouldBlock))
            && std::time::Instant::now() < patience
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
            attempt = file.try_lock();
        }
        match attempt {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreLocked::Busy {
                    store,
                    pid: read_pid(&path),
                }
                .into());
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(anyhow!(e).context(format!("cannot lock {}", path.display())));
            }
        }
        // The pid is only for the message another process prints; the lock is the flock.
        let mut f = &file;
        let _ = file
            .set_len(0)
            .and_then(|()| writeln!(f, "{}", std::process::id()));
        Ok(Self { _file: file })
    }

    /// The pid of the process holding the lock of the store in `dir`, if one does.
    pub fn holder(dir: &Path) -> Option<String> {
        let path = dir.join(LOCK_FILE);
        let file = open_store_file_to_read(&path).ok()?;
        match file.try_lock_shared() {
            Ok(()) => None,
            Err(std::fs::TryLockError::WouldBlock) => Some(read_pid(&path)),
            Err(std::fs::TryLockError::Error(_)) => None,
        }
    }
}

fn read_pid(path: &Path) -> String {
    let mut text = String::new();
    open_store_file_to_read(path)
        .and_then(|f| f.take(64).read_to_string(&mut text))
        .ok()
        .map(|_| text)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Refuses a store folder holding a symbolic link anywhere inside it (its files, the lexical
/// index's folder and files, rotated traces): every store file is opened by path, some by
/// libraries (SQLite, tantivy, usearch) that would follow a link, so a link planted in the
/// store is refused before anything is opened. The folder itself may be a link (an operator
/// may keep the store on another disk); a missing folder has nothing to refuse.
pub fn refuse_linked_entries(dir: &Path) -> Result<()> {
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(anyhow!(e).context(format!("cannot read {}", folder.display()))),
        };
        for entry in entries {
            let entry = entry
                .map_err(|e| anyhow!(e).context(format!("cannot read {}", folder.display())))?;
            let kind = entry.file_type().map_err(|e| {
                anyhow!(e).context(format!("cannot read {}", entry.path().display()))
            })?;
            if kind.is_symlink() {
                return Err(anyhow!(
                    "the store at {} holds a symbolic link, {}: a store is never read or written through links; remove the link and retry (`zhiku index --rebuild` rebuilds what it stood for)",
                    dir.display(),
                    entry.path().display()
                ));
            }
            if kind.is_dir() {
                folders.push(entry.path());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_with_the_holders_pid_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let first = StoreLock::acquire(&store).unwrap();
        let err = StoreLock::acquire(&store).unwrap_err();
        assert!(
            matches!(
                err.downcast_ref::<StoreLocked>(),
                Some(StoreLocked::Busy { .. })
            ),
            "{err}"
        );
        let pid = std::process::id().to_string();
        assert!(
            err.to_string()
                .contains(&format!("is being written by another process (pid {pid})")),
            "{err}"
        );
        assert_eq!(StoreLock::holder(&store), Some(pid));
        drop(first);
        assert_eq!(StoreLock::holder(&store), None);
        let _again = StoreLock::acquire(&store).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_file_linking_elsewhere_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("precious.txt");
        std::fs::write(&outside, "do not truncate me\n").unwrap();
        let store = dir.path().join("store");
        std::fs::create_dir(&store).unwrap();
        std::os::unix::fs::symlink(&outside, store.join(LOCK_FILE)).unwrap();

        let err = StoreLock::acquire(&store).unwrap_err().to_string();
        assert!(err.contains("writer.lock is a symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "do not truncate me\n"
        );
        assert_eq!(StoreLock::holder(&store), None);
        let err = refuse_linked_entries(&store).unwrap_err().to_string();
        assert!(err.contains("holds a symbolic link"), "{err}");

        // A link deeper in the store (the lexical index's folder) is refused as well; a store
        // without links, or none at all, passes.
        std::fs::remove_file(store.join(LOCK_FILE)).unwrap();
        refuse_linked_entries(&store).unwrap();
        refuse_linked_entries(&dir.path().join("missing")).unwrap();
        std::fs::create_dir_all(store.join("lexical")).unwrap();
        std::os::unix::fs::symlink(&outside, store.join("lexical/meta.json")).unwrap();
        assert!(refuse_linked_entries(&store).is_err());
        assert!(StoreLock::acquire(&store).is_ok());
    }
}
