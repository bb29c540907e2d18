//! Replacing a file atomically, the one way every file of a store is rewritten (the manifest,
//! the vector file); and opening a store file without following a symbolic link.
//!
//! A store file is only ever opened with [`no_follow`] (`O_NOFOLLOW`): a link planted in the
//! store folder under a store file's name (`writer.lock` pointing at a file elsewhere) is
//! refused with [`StoreFileIsLink`]'s message instead of being truncated, written or read
//! through.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `contents` to `path` atomically: temporary file, fsync, rename, fsync of the folder.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    write_atomically_with(path, &mut |out| out.write_all(contents))
}

/// Writes what `write` produces to `path` atomically, through a buffer: a temporary file beside
/// it (`<name>.tmp`), fsync, rename over `path`, fsync of the folder. On any error the
/// temporary file is removed and `path` is untouched.
pub fn write_atomically_with(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let written = (|| {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        // A temporary file left by a crash (or a link put there) is removed, never written
        // through: the new one is created afresh, and a link in its place refuses to open.
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(anyhow::Error::from(e))
                    .with_context(|| format!("cannot remove {}", tmp.display()));
            }
            _ => {}
        }
        let file = open_store_file(&tmp, OpenOptions::new().write(true).create_new(true))
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut out = BufWriter::new(file);
        write(&mut out).with_context(|| format!("cannot write {}", tmp.display()))?;
        let file = out
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        file.sync_all()?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
    })();
    if written.is_err() {
        // Never leave the temporary file behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if let Some(parent) = path.parent()
        && let Ok(dir) = std::fs::File::open(parent)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// `options` made to refuse a symbolic link as the last component of the path (`O_NOFOLLOW`):
/// the open fails instead of reaching the link's target.
pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options
}

/// A store file is a symbolic link: it is never followed.
#[derive(Debug, thiserror::Error)]
#[error(
    "{path} is a symbolic link; a store file is never opened through a link (remove the link and retry)"
)]
pub struct StoreFileIsLink {
    /// The store file, as the message shows it.
    pub path: String,
}

/// Opens the store file at `path` with `options` and [`no_follow`]; a link there is an error
/// of kind `InvalidInput` whose message says so ([`StoreFileIsLink`]), not the system's
/// "too many levels of symbolic links".
pub fn open_store_file(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    match no_follow(options).open(path) {
        Err(e) if is_link_refusal(&e, path) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            StoreFileIsLink {
                path: path.display().to_string(),
            },
        )),
        other => other,
    }
}

/// Opens the store file at `path` for reading, refusing a link ([`open_store_file`]).
pub fn open_store_file_to_read(path: &Path) -> std::io::Result<File> {
    open_store_file(path, OpenOptions::new().read(true))
}

fn is_link_refusal(e: &std::io::Error, path: &Path) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return true;
    }
    // Elsewhere (or a system answering otherwise), look at the path itself.
    e.kind() != std::io::ErrorKind::NotFound
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_link_in_place_of_a_store_file_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        let store = dir.path().join("store");
        std::fs::create_dir(&store).unwrap();
        let link = store.join("manifest.json");
        std::os::unix::fs::symlink(&outside, &link).unwrap();

        let err =
            open_store_file(&link, OpenOptions::new().write(true).truncate(true)).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert!(open_store_file_to_read(&link).is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");

        // A replacement renames over the link itself, never writing through it; a link in
        // place of its temporary file is removed, not followed.
        let tmp_target = dir.path().join("other.txt");
        std::fs::write(&tmp_target, "also precious").unwrap();
        std::os::unix::fs::symlink(&tmp_target, store.join("manifest.tmp")).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert_eq!(
            std::fs::read_to_string(&tmp_target).unwrap(),
            "also precious"
        );
        assert!(
            !std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
    }
}
