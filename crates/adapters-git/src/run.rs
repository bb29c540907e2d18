//! Running the git program: with a deadline, without a prompt, its output bounded.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Most bytes of git's error output kept for a message.
const MAX_STDERR: u64 = 64 * 1024;

/// What a git command left.
#[derive(Debug)]
pub(crate) struct Ran {
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub ok: bool,
}

/// Why git could not be run at all, or did not finish in time.
#[derive(Debug)]
pub(crate) enum RunError {
    Spawn(std::io::Error),
    Timeout(Duration),
    TooLong(u64),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "cannot run git: {e}"),
            RunError::Timeout(d) => write!(f, "git did not finish within {} s", d.as_secs()),
            RunError::TooLong(n) => write!(f, "git wrote more than {n} bytes"),
        }
    }
}

/// A git command in `repo` that never asks for a password and never runs a transport that
/// executes commands.
pub(crate) fn git(program: &Path, repo: &Path) -> Command {
    let mut c = Command::new(program);
    c.arg("-C")
        .arg(repo)
        .args([
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "core.quotePath=false",
        ])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "")
        .env("SSH_ASKPASS", "")
        // `ssh` fails rather than asking about an unknown host key or a passphrase.
        .env("GIT_SSH_VARIANT", "ssh")
        .env(
            "GIT_SSH_COMMAND",
            std::env::var("GIT_SSH_COMMAND").unwrap_or_else(|_| "ssh -o BatchMode=yes".into()),
        )
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `command` to its end, within `timeout`, keeping at most `max_stdout` bytes of output
/// (more is an error: the command is killed).
pub(crate) fn run(
    mut command: Command,
    timeout: Duration,
    max_stdout: u64,
) -> Result<Ran, RunError> {
    let mut child = command.spawn().map_err(RunError::Spawn)?;
    let out = read_in_thread(child.stdout.take(), max_stdout + 1);
    let err = read_in_thread(child.stderr.take(), MAX_STDERR);
    let status = wait_until(&mut child, timeout)?;
    let stdout = out.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    if stdout.len() as u64 > max_stdout {
        return Err(RunError::TooLong(max_stdout));
    }
    Ok(Ran {
        stdout,
        stderr,
        ok: status.success(),
    })
}

fn read_in_thread(
    pipe: Option<impl Read + Send + 'static>,
    limit: u64,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(pipe) = pipe {
            let mut pipe = pipe;
            let _ = (&mut pipe).take(limit).read_to_end(&mut bytes);
            // Whatever is left is drained, so the child never blocks on a full pipe.
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        }
        bytes
    })
}

/// Waits for `child` until `timeout`, killing it then.
pub(crate) fn wait_until(
    child: &mut Child,
    timeout: Duration,
) -> Result<std::process::ExitStatus, RunError> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(RunError::Spawn(e)),
        }
    }
}
