//! How zhiku's stores touch files, the one copy of each rule: every store adapter that keeps
//! files (the folder store, the embedded ANN index) replaces and opens them through here.
//!
//! - [`replace_atomically`]: a file is never rewritten in place; a temporary file beside it is
//!   filled, synced, renamed over it, and the folder is synced so the rename itself survives a
//!   power loss. A crash at any point leaves the old file or the new one, never a mixture.
//! - [`open_store_file`]: a store file is opened with `O_NOFOLLOW`, so a symbolic link planted
//!   under a store file's name is refused ([`StoreFileIsLink`]), never read or written through.

mod nofollow;
mod replace;

pub use nofollow::{StoreFileIsLink, no_follow, open_store_file, open_store_file_to_read};
pub use replace::{
    ReplaceError, ReplaceFailure, ReplaceStep, create_temporary, replace_atomically, sync_folder_of,
};
