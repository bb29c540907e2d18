//! Replacing a file atomically, the one way every file of a store is rewritten (the manifest,
//! the vector file); and opening a store file without following a symbolic link. Both rules
//! are [`zhiku_files`]'s (shared with the embedded ANN index); this module gives them the
//! folder store's error type.
//!
//! A store file is only ever opened with [`no_follow`] (`O_NOFOLLOW`): a link planted in the
//! store folder under a store file's name (`writer.lock` pointing at a file elsewhere) is
//! refused with [`StoreFileIsLink`]'s message instead of being truncated, written or read
//! through.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use zhiku_files::{ReplaceFailure, create_temporary, replace_atomically};

pub use zhiku_files::{StoreFileIsLink, no_follow, open_store_file, open_store_file_to_read};

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
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let tmp = path.with_extension("tmp");
    replace_atomically(path, &tmp, |tmp| -> Result<()> {
        let file =
            create_temporary(tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut out = BufWriter::new(file);
        write(&mut out).with_context(|| format!("cannot write {}", tmp.display()))?;
        out.into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        Ok(())
    })
    .map_err(|e| match e {
        ReplaceFailure::Io(e) => anyhow::Error::from(e),
        ReplaceFailure::Fill(e) => e,
    })
}
