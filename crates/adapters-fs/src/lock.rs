//! The store lock: one writing process per store, taken with an advisory file lock that the
//! operating system releases when the process dies (also after `kill -9`).

use std::fs::File;
use std::io::Write;
use std::path::Path;

use anyhow::{Result, anyhow};

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
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if is_read_only_error(&e) => {
                return Err(read_only(format!("cannot open {}", path.display()), &e).into());
            }
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
        let file = File::open(&path).ok()?;
        match file.try_lock_shared() {
            Ok(()) => None,
            Err(std::fs::TryLockError::WouldBlock) => Some(read_pid(&path)),
            Err(std::fs::TryLockError::Error(_)) => None,
        }
    }
}

fn read_pid(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
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
}
