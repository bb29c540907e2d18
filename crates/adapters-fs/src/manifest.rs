//! The catalog kept as `manifest.json` in the store folder: a [`CatalogStore`] replaced
//! atomically on every save.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zhiku_domain::ports::{CatalogError, CatalogStore, StoredCatalog};

use crate::atomic::write_atomically;

/// The manifest's format tag.
pub const MANIFEST_FORMAT: &str = "zhiku-store/1";

/// The manifest's file name inside the store folder.
pub const MANIFEST_FILE: &str = "manifest.json";

/// `manifest.json` as written: the format tag, then the stored catalog's fields.
#[derive(Serialize)]
struct Written<'a> {
    format: &'static str,
    #[serde(flatten)]
    stored: &'a StoredCatalog,
}

#[derive(Deserialize)]
struct Read {
    format: String,
    #[serde(flatten)]
    stored: StoredCatalog,
}

/// The manifest of the store in one folder.
#[derive(Debug, Clone)]
pub struct ManifestFile {
    path: PathBuf,
    read_only: bool,
}

impl ManifestFile {
    /// The manifest in the store folder `dir`.
    pub fn in_store(dir: &Path) -> Self {
        Self {
            path: dir.join(MANIFEST_FILE),
            read_only: false,
        }
    }

    /// The manifest in the store folder `dir`, to read: the handle refuses to save.
    pub fn read_only_in_store(dir: &Path) -> Self {
        Self {
            path: dir.join(MANIFEST_FILE),
            read_only: true,
        }
    }

    /// The manifest's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl CatalogStore for ManifestFile {
    fn load(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        let location = self.path.display().to_string();
        let text = match crate::atomic::open_store_file_to_read(&self.path).and_then(|mut f| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text).map(|_| text)
        }) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(CatalogError::Unavailable {
                    adapter: "file",
                    message: format!("cannot read {location}: {e}"),
                });
            }
        };
        // The format tag first, so a manifest of another format says so rather than failing
        // on a field it does not know.
        #[derive(Deserialize)]
        struct Tag {
            format: String,
        }
        let tag: Tag = serde_json::from_str(&text).map_err(|e| CatalogError::Unreadable {
            location: location.clone(),
            source: e.into(),
        })?;
        if tag.format != MANIFEST_FORMAT {
            return Err(CatalogError::FormatMismatch {
                location,
                expected: MANIFEST_FORMAT.into(),
                found: tag.format,
            });
        }
        let read: Read = serde_json::from_str(&text).map_err(|e| CatalogError::Unreadable {
            location: location.clone(),
            source: e.into(),
        })?;
        debug_assert_eq!(read.format, MANIFEST_FORMAT);
        Ok(Some(read.stored))
    }

    fn save(&self, stored: &StoredCatalog) -> Result<(), CatalogError> {
        if self.read_only {
            return Err(CatalogError::ReadOnly {
                adapter: "file",
                location: self.path.display().to_string(),
            });
        }
        let json = serde_json::to_vec_pretty(&Written {
            format: MANIFEST_FORMAT,
            stored,
        })
        .map_err(|e| CatalogError::Backend {
            adapter: "file",
            source: e.into(),
            temporary: false,
        })?;
        write_atomically(&self.path, &json).map_err(|e| CatalogError::Unavailable {
            adapter: "file",
            message: format!("{e:#}"),
        })
    }
}
