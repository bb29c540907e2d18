//! The commands of the `zhiku` binary: one module per command, the clap types in [`args`], the
//! shared context and the opening of the store in [`ctx`] and [`open`], and everything printed in
//! [`render`].

// Standard output may close early (`zhiku search … | head -1`). Rust ignores SIGPIPE, so a
// write then fails with `BrokenPipe`, and std's `println!` panics on it with a backtrace.
// Every line of this binary goes through this `println!` instead: on a closed pipe it stops the
// process quietly with exit code 0, as a Unix tool does; the store is consistent at every point
// where a process can stop (it survives `kill -9`), so stopping here loses nothing.
macro_rules! println {
    () => {
        $crate::cli::stdout_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::stdout_line(format_args!($($arg)*))
    };
}

pub(crate) mod access;
pub(crate) mod args;
pub(crate) mod ask;
pub(crate) mod chain;
pub(crate) mod ctx;
pub(crate) mod error;
pub(crate) mod eval;
pub(crate) mod exit;
pub(crate) mod index;
pub(crate) mod mcp;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod render;
pub(crate) mod retention;
pub(crate) mod search;
pub(crate) mod serve;
pub(crate) mod status;
pub(crate) mod sync;
pub(crate) mod token;
pub(crate) mod verify;

use std::io::Write;

/// Writes one line to standard output; on failure see [`output_failed`].
pub(crate) fn stdout_line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        output_failed(&e)
    }
}

/// A closed pipe ends the process quietly (exit 0: the reader has what it wanted); any other
/// output error ends it with a message and exit 1.
fn output_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0)
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(1)
}
