//! Opening a store file without following a symbolic link.

use std::fs::{File, OpenOptions};
use std::path::Path;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
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
        crate::replace_atomically(&link, &store.join("manifest.tmp"), |tmp| {
            std::io::Write::write_all(&mut crate::create_temporary(tmp)?, b"new")
        })
        .unwrap();
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
