//! The atomic replace: temporary file, fsync, rename, fsync of the folder.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// Which step of a replacement failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaceStep {
    /// Removing a temporary file a crash (or an intruder) left behind.
    RemoveLeftover,
    /// Creating or filling the temporary file.
    Write,
    /// Syncing the temporary file to disk.
    Sync,
    /// Renaming it over the file it replaces.
    Rename,
}

/// A replacement that did not happen: the file it would replace is untouched and no temporary
/// file is left behind.
#[derive(Debug, thiserror::Error)]
#[error("cannot {} {}: {source}", self.verb(), self.path.display())]
pub struct ReplaceError {
    /// The step that failed.
    pub step: ReplaceStep,
    /// The file that step was working on (the temporary file, or the target for the rename).
    pub path: PathBuf,
    /// What the system said.
    #[source]
    pub source: std::io::Error,
}

impl ReplaceError {
    fn verb(&self) -> &'static str {
        match self.step {
            ReplaceStep::RemoveLeftover => "remove",
            ReplaceStep::Write => "write",
            ReplaceStep::Sync => "sync",
            ReplaceStep::Rename => "replace",
        }
    }
}

/// Replaces `path` with what `fill` writes to `tmp`, atomically.
///
/// `tmp` (a name beside `path`, in the same folder) is removed first if a crash left it (or a
/// link was put there: it is removed, never followed); `fill` then creates and writes it — with
/// [`create_temporary`], or by name through a library that saves to a path. The temporary file
/// is synced, renamed over `path`, and the folder is synced. On any error the temporary file is
/// removed and `path` is untouched.
pub fn replace_atomically<E>(
    path: &Path,
    tmp: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), ReplaceFailure<E>> {
    let written = (|| {
        match std::fs::remove_file(tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_failure(ReplaceStep::RemoveLeftover, tmp, e));
            }
            _ => {}
        }
        fill(tmp).map_err(ReplaceFailure::Fill)?;
        File::open(tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_failure(ReplaceStep::Sync, tmp, e))?;
        std::fs::rename(tmp, path).map_err(|e| io_failure(ReplaceStep::Rename, path, e))
    })();
    if written.is_err() {
        // Never leave the temporary file behind.
        let _ = std::fs::remove_file(tmp);
    }
    written?;
    sync_folder_of(path);
    Ok(())
}

/// Why [`replace_atomically`] failed: a step of the replacement, or the caller's `fill`.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceFailure<E> {
    /// A file-system step failed.
    #[error(transparent)]
    Io(ReplaceError),
    /// Writing the content failed.
    #[error("{0}")]
    Fill(E),
}

fn io_failure<E>(step: ReplaceStep, path: &Path, source: std::io::Error) -> ReplaceFailure<E> {
    ReplaceFailure::Io(ReplaceError {
        step,
        path: path.to_path_buf(),
        source,
    })
}

/// Creates the temporary file `tmp` afresh for writing: `create_new` never reuses an existing
/// file, and with `O_NOFOLLOW` a link in its place is refused.
pub fn create_temporary(tmp: &Path) -> std::io::Result<File> {
    crate::open_store_file(tmp, OpenOptions::new().write(true).create_new(true))
}

/// Syncs the folder holding `path`, so that a rename or creation in it is durable. Best effort:
/// a folder that cannot be opened (some file systems) is left as it is.
pub fn sync_folder_of(path: &Path) {
    if let Some(parent) = path.parent()
        && let Ok(dir) = File::open(parent)
    {
        let _ = dir.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        let tmp = dir.path().join("a.tmp");
        std::fs::write(&path, "old").unwrap();
        let failed = replace_atomically(&path, &tmp, |tmp| {
            create_temporary(tmp)?.write_all(b"half")?;
            Err::<(), _>(std::io::Error::other("disk full"))
        });
        assert!(matches!(failed, Err(ReplaceFailure::Fill(_))));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert!(!tmp.exists());

        replace_atomically(&path, &tmp, |tmp| create_temporary(tmp)?.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(!tmp.exists());
    }
}
