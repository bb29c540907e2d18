//! File stamps: recognising an unchanged file from its metadata, without reading it.
//!
//! A stamp names everything a document is derived from, as the filesystem reports it: the
//! file's device, inode, size, modification and change times (to the nanosecond), the same for
//! its sidecar `<name>.metadata.yaml` (or that there is none) and of its own sidecar
//! `<name>.<ext>.metadata.yaml` when it has one, the link itself where the path is
//! a symbolic link, and a tag of the loader settings that shape a document (size, page, unpacking and time
//! limits, default scope, link rule, loader version). Any edit, replacement (a new inode), `touch`, `chmod`,
//! rename onto the path or settings change gives another stamp, so the file is read again.
//!
//! A file modified within [`RACY_WINDOW`] (the default of
//! [`LoaderConfig::racy_window`]) before the scan gets no stamp: a second write in the
//! same timestamp tick could leave every field equal (git's "racily clean" entries), so such a
//! file is read again next time instead of being trusted.

use std::fs::Metadata;
use std::path::Path;
use std::time::SystemTime;

use crate::config::LoaderConfig;
pub use crate::config::RACY_WINDOW;

/// Bumped whenever the loader turns the same bytes into a different document.
const LOADER_VERSION: u32 = 1;

/// Stamps the files of one scan.
#[derive(Debug, Clone)]
pub struct Stamper {
    settings: String,
    racy_after: SystemTime,
}

impl Stamper {
    /// A stamper for a scan starting now under `config`.
    pub fn new(config: &LoaderConfig) -> Self {
        Self::at(config, SystemTime::now())
    }

    /// A stamper for a scan that started at `now`.
    pub fn at(config: &LoaderConfig, now: SystemTime) -> Self {
        let settings = zhiku_domain::sha256_hex(format!(
            "loader/{LOADER_VERSION}\n{}\n{}\n{}\n{}/{}/{}/{:?}",
            config.max_file_bytes,
            config.default_scope.as_str(),
            config.follow_links_inside,
            config.max_document_bytes,
            config.max_unpacked_bytes,
            config.max_pages,
            config.max_extract_time,
        ))[..16]
            .to_string();
        Self {
            settings,
            racy_after: now
                .checked_sub(config.racy_window)
                .unwrap_or(SystemTime::UNIX_EPOCH),
        }
    }

    /// The stamp of the document file at `path`, or `None` when it cannot be stamped reliably
    /// (metadata unreadable, or modified within the racy window).
    pub fn stamp(&self, path: &Path) -> Option<String> {
        let file = self.part(path)?;
        let sidecar = path.with_extension("metadata.yaml");
        let sidecar = match std::fs::symlink_metadata(&sidecar) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "-".to_string(),
            Err(_) => return None,
            Ok(_) => self.part(&sidecar)?,
        };
        let mut own = path.as_os_str().to_owned();
        own.push(crate::paths::SIDECAR_SUFFIX);
        let own = match std::fs::symlink_metadata(&own) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(_) => return None,
            Ok(_) => format!(";{}", self.part(Path::new(&own))?),
        };
        Some(format!("{};{file};{sidecar}{own}", self.settings))
    }

    /// One path's fields: the link's own when it is a symbolic link, then its target's.
    fn part(&self, path: &Path) -> Option<String> {
        let own = std::fs::symlink_metadata(path).ok()?;
        let mut part = self.fields(&own)?;
        if own.file_type().is_symlink() {
            let target = std::fs::metadata(path).ok()?;
            part.push('>');
            part.push_str(&self.fields(&target)?);
        }
        Some(part)
    }

    fn fields(&self, meta: &Metadata) -> Option<String> {
        let modified = meta.modified().ok()?;
        if modified >= self.racy_after {
            return None;
        }
        let since_epoch = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let changed = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
            if changed >= since_epoch(self.racy_after) as i128 {
                return None;
            }
            Some(format!(
                "{}.{}.{}.{}.{changed}",
                meta.dev(),
                meta.ino(),
                meta.len(),
                since_epoch(modified)
            ))
        }
        #[cfg(not(unix))]
        {
            Some(format!("{}.{}", meta.len(), since_epoch(modified)))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::FileTimes;
    use std::time::Duration;

    use super::*;

    fn age(path: &Path, secs: u64) {
        let t = SystemTime::now() - Duration::from_secs(secs);
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_times(FileTimes::new().set_modified(t).set_accessed(t))
            .unwrap();
    }

    /// A stamper whose scan starts `ahead` seconds from now, so files written now (whose
    /// change time cannot be set back) are outside its racy window.
    fn later(config: &LoaderConfig, ahead: u64) -> Stamper {
        Stamper::at(config, SystemTime::now() + Duration::from_secs(ahead))
    }

    #[test]
    fn same_file_same_stamp_and_any_change_changes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(&path, "# A\n\none\n").unwrap();
        age(&path, 60);
        let config = LoaderConfig::default();
        let stamp = later(&config, 10).stamp(&path).expect("stamped");
        assert_eq!(later(&config, 10).stamp(&path), Some(stamp.clone()));

        // Same size, same modification time, new bytes (an editor that restores the mtime):
        // the change time still differs.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&path, "# A\n\ntwo\n").unwrap();
        age(&path, 60);
        let edited = later(&config, 10).stamp(&path).expect("stamped");
        assert_ne!(edited, stamp);

        // A sidecar appearing changes the stamp, and so does another default scope.
        std::fs::write(dir.path().join("a.metadata.yaml"), "scope: beta\n").unwrap();
        let with_sidecar = later(&config, 10).stamp(&path).expect("stamped");
        assert_ne!(with_sidecar, edited);
        let other = LoaderConfig {
            default_scope: zhiku_domain::Scope::new("other").unwrap(),
            ..LoaderConfig::default()
        };
        assert_ne!(later(&other, 10).stamp(&path), Some(with_sidecar));
    }

    #[test]
    fn a_file_written_within_the_racy_window_is_not_stamped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(&path, "# A\n").unwrap();
        assert_eq!(Stamper::new(&LoaderConfig::default()).stamp(&path), None);
        assert_eq!(
            Stamper::new(&LoaderConfig::default()).stamp(&dir.path().join("missing.md")),
            None
        );
    }
}
