//! Replacing a file atomically, the one way every file of a store is rewritten (the manifest,
//! the vector file).

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
        let file = std::fs::File::create(&tmp)
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
