//! Untrusted bytes parsed in a child process: a parser's crash, stack overflow, memory blow-up
//! or endless loop costs one file, never the process that owns the store.
//!
//! Every format parser the loader runs on a file's bytes — the extractors of
//! [`formats`](zhiku_formats) (PDF, Office, EPUB, HTML, CSV) and the YAML of front matter and
//! sidecars ([`front_matter`](crate::front_matter)) — goes through [`Parsers`]. In the binary
//! it is [`Parsers::Workers`]: a small pool of worker processes (the program re-executed with
//! [`WORKER_ARG`], which calls [`serve`]), each reused for many files. A worker:
//!
//! - caps its own address space (`RLIMIT_AS`, [`WorkerLimits::memory_bytes`]), open files
//!   (`RLIMIT_NOFILE`), file writes (`RLIMIT_FSIZE` 0) and core dumps (`RLIMIT_CORE` 0);
//! - before each job sets its CPU-time limit (`RLIMIT_CPU`) to what it has used plus the job's
//!   seconds, so a spinning parser is killed by the kernel (`SIGXCPU`) even if it never
//!   checks its deadline;
//! - runs each job on a thread with a large stack; a panic is this job's error, an overflow
//!   aborts the worker (and only the worker);
//! - leaves the network: it moves into a network namespace of its own, with no interface but
//!   a loopback that is down, where the kernel lets it (root, or unprivileged user
//!   namespaces); [`Parsers::isolation`] says which;
//! - dies with its parent (`PR_SET_PDEATHSIG`), so a `kill -9` of the server leaves no worker.
//!
//! The parent sends a request frame over the worker's stdin and reads the reply frame from its
//! stdout on a reader thread, waiting at most the job's deadline plus a grace period. A
//! timeout (the worker is killed), a signal, an exit or a malformed reply is this file's
//! error, with the reason ("the extractor crashed: stack overflow", "… its memory limit
//! (loader.max_extract_memory) …"), and the next job gets a fresh worker.
//!
//! Frames: a little-endian `u64` length, then that many bytes. A request is two frames (a JSON
//! header, then the payload bytes); a reply is one frame of JSON, bounded by the job's text
//! limit.
//!
//! Scanned pages (image files, PDF pages without a text layer) are read by an OCR engine
//! ([`OcrEngine`], the domain's `Ocr` port) inside the same worker: the picture is decoded and
//! read where a crash costs one file. The worker builds its engine on its first scan, from the
//! factory the binary hands to [`serve`].
//!
//! [`Parsers::InProcess`] runs the same jobs in the calling process: for the library's own
//! tests, the fuzz targets and benchmarks that compare the two.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::front_matter;
use zhiku_domain::ports::{Ocr, OcrImage};

/// Names the PDFium library this process draws PDF pages with (see [`formats::pdf::use_pdfium`]).
pub use zhiku_formats::pdf::use_pdfium;
use zhiku_formats::scan::{PageImage, PageReader, ScanLine, ScanPage};
use zhiku_formats::{self as formats, Announced, Extracted, Limits};

/// The first argument that starts a program in worker mode.
pub const WORKER_ARG: &str = "__extract-worker";

/// Time a worker gets past a job's deadline before it is killed: the extractors check the
/// deadline between pages and parts, so an honest job ends within it.
const GRACE: Duration = Duration::from_secs(2);

/// Jobs one worker runs before it is replaced (a long-lived parser process fragments its heap).
const JOBS_PER_WORKER: u32 = 1_000;

/// Idle workers kept for the next job.
const IDLE_WORKERS: usize = 2;

/// Stack of the thread a worker runs a job on (parsers recurse into nested structures), at
/// most a quarter of the worker's address space.
const JOB_STACK: usize = 256 << 20;

/// Open files a worker may hold (its three standard streams and a few of its own).
const WORKER_FILES: u64 = 32;

/// What a job's reply may add to its text bound (titles, JSON quoting, metadata).
const REPLY_SLACK: u64 = 1 << 20;

/// Where the parsers run.
#[derive(Debug, Clone)]
pub enum Parsers {
    /// In the calling process (tests, fuzzing, benchmarks), with the OCR engine that reads
    /// scans, if any.
    InProcess(Option<OcrEngine>),
    /// In worker processes of a [`WorkerPool`] (each builds its own OCR engine, see
    /// [`serve`]).
    Workers(Arc<WorkerPool>),
}

impl Default for Parsers {
    fn default() -> Self {
        Self::InProcess(None)
    }
}

/// An OCR engine the extractors hand scanned pages to.
#[derive(Clone)]
pub struct OcrEngine(pub Arc<dyn Ocr>);

impl std::fmt::Debug for OcrEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OcrEngine").field(&self.0.name()).finish()
    }
}

impl PageReader for OcrEngine {
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    fn read(&self, page: &PageImage) -> Result<ScanPage> {
        let image = OcrImage::new(page.width, page.height, &page.rgb)?;
        let read = self.0.read(&image)?;
        Ok(ScanPage {
            rotation: read.rotation,
            width: read.width,
            height: read.height,
            lines: read
                .lines
                .into_iter()
                .map(|l| ScanLine {
                    text: l.text,
                    left: l.bbox.left,
                    top: l.bbox.top,
                    right: l.bbox.right,
                    bottom: l.bbox.bottom,
                    confidence: l.confidence,
                })
                .collect(),
        })
    }
}

/// Builds the OCR engine of a worker process, once, when its first scan needs it.
pub type OcrFactory = Box<dyn Fn() -> Result<Arc<dyn Ocr>> + Send + Sync>;

/// A job for a parser.
#[derive(Debug, Serialize, Deserialize)]
enum Job {
    /// Choose the format of a file's bytes (by content, then by the `announced` one) and
    /// extract it.
    Extract {
        announced: Announced,
        bounds: Bounds,
    },
    /// The picture of one page of a file (a picture's, a scanned PDF page's), as PNG.
    PagePng {
        announced: Announced,
        page: u32,
        /// Clockwise quarter turns.
        turn: u16,
        /// Most pixels of the longer side of the PNG.
        max_side: u32,
        bounds: Bounds,
    },
    /// Parse YAML metadata (front matter or a sidecar) into a mapping.
    Metadata {
        what: String,
        /// Milliseconds left until the deadline.
        millis: u64,
    },
}

/// The extraction bounds a job carries to its worker.
#[derive(Debug, Serialize, Deserialize)]
struct Bounds {
    max_unpacked_bytes: u64,
    max_text_bytes: usize,
    max_pages: usize,
    /// Most pixels of one page picture.
    max_image_pixels: u64,
    /// Milliseconds left until the deadline.
    millis: u64,
}

impl Bounds {
    fn of(limits: &Limits) -> Self {
        Self {
            max_unpacked_bytes: limits.max_unpacked_bytes,
            max_text_bytes: limits.max_text_bytes,
            max_pages: limits.max_pages,
            max_image_pixels: limits.max_image_pixels,
            millis: millis_until(limits.deadline),
        }
    }

    /// The bounds in the worker, the deadline counted from now.
    fn limits(&self) -> Limits {
        Limits {
            max_unpacked_bytes: self.max_unpacked_bytes,
            max_text_bytes: self.max_text_bytes,
            max_pages: self.max_pages,
            max_image_pixels: self.max_image_pixels,
            deadline: Instant::now() + Duration::from_millis(self.millis),
        }
    }
}

/// A parser's answer.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Extracted(Extracted),
    /// A page picture as PNG; `None`: the page has none (a PDF page with a text layer).
    Png(Option<Vec<u8>>),
    Metadata(BTreeMap<String, serde_json::Value>),
    Failed(String),
}

impl Parsers {
    /// Parsers in worker processes started as `program __extract-worker … args…`.
    pub fn workers(program: PathBuf, args: Vec<OsString>, limits: WorkerLimits) -> Self {
        Self::Workers(Arc::new(WorkerPool::new(program, args, limits)))
    }

    /// Extracts a file whose extension announces `announced` from its `bytes` (the format is
    /// chosen by content, [`formats::detect`]), within `limits`.
    pub fn extract(
        &self,
        announced: Announced,
        bytes: &[u8],
        limits: &Limits,
    ) -> Result<Extracted> {
        match self {
            Self::InProcess(ocr) => extract_here(
                announced,
                bytes,
                limits,
                ocr.as_ref().map(|o| o as &dyn PageReader),
            ),
            Self::Workers(pool) => {
                let job = Job::Extract {
                    announced,
                    bounds: Bounds::of(limits),
                };
                // The text, and the boxes of its lines.
                let reply_bound = limits.max_text_bytes as u64 * 4 + REPLY_SLACK;
                match pool.run(&job, bytes, limits.deadline, reply_bound)? {
                    Reply::Extracted(e) => Ok(e),
                    Reply::Failed(reason) => Err(anyhow!(reason)),
                    _ => bail!("the extractor answered another job"),
                }
            }
        }
    }

    /// The picture of page `page` (from 1) of a file whose extension announces `announced`,
    /// turned `turn` clockwise quarter turns, as PNG of at most `max_side` pixels a side, within
    /// `limits`: a picture file's page, a PDF page without a text layer. `None` when the page
    /// has no picture (a PDF page with a text layer).
    pub fn page_png(
        &self,
        announced: Announced,
        bytes: &[u8],
        (page, turn, max_side): (u32, u16, u32),
        limits: &Limits,
    ) -> Result<Option<Vec<u8>>> {
        match self {
            Self::InProcess(_) => page_png_here(announced, bytes, page, (turn, max_side), limits),
            Self::Workers(pool) => {
                let job = Job::PagePng {
                    announced,
                    page,
                    turn,
                    max_side,
                    bounds: Bounds::of(limits),
                };
                // A PNG of `max_side`² RGB pixels, as JSON numbers (up to four bytes each).
                let bound = u64::from(max_side).pow(2) * 3 * 4 + REPLY_SLACK;
                match pool.run(&job, bytes, limits.deadline, bound)? {
                    Reply::Png(png) => Ok(png),
                    Reply::Failed(reason) => Err(anyhow!(reason)),
                    _ => bail!("the extractor answered another job"),
                }
            }
        }
    }

    /// Parses YAML metadata (`what`: "front matter", "sidecar metadata") into a mapping, within
    /// `deadline`.
    pub fn metadata(
        &self,
        text: &str,
        what: &str,
        deadline: Instant,
    ) -> Result<BTreeMap<String, serde_json::Value>> {
        match self {
            Self::InProcess(_) => front_matter::parse_mapping(text, what),
            Self::Workers(pool) => {
                let job = Job::Metadata {
                    what: what.into(),
                    millis: millis_until(deadline),
                };
                let bound = text.len() as u64 * 4 + REPLY_SLACK;
                match pool.run(&job, text.as_bytes(), deadline, bound)? {
                    Reply::Metadata(m) => Ok(m),
                    Reply::Failed(reason) => Err(anyhow!(reason)),
                    _ => bail!("the metadata parser answered another job"),
                }
            }
        }
    }

    /// How parsers are isolated, for `status`.
    pub fn isolation(&self) -> String {
        match self {
            Self::InProcess(_) => "in process".into(),
            Self::Workers(pool) => pool.describe(),
        }
    }
}

fn millis_until(deadline: Instant) -> u64 {
    u64::try_from(
        deadline
            .saturating_duration_since(Instant::now())
            .as_millis(),
    )
    .unwrap_or(u64::MAX)
}

/// Detects and extracts in this process; scanned pages go to `ocr`, when there is one.
/// The picture of page `page` of a file, turned `turn` clockwise quarter turns, as PNG of at
/// most `max_side` pixels a side; `None` when the page has no picture.
fn page_png_here(
    announced: Announced,
    bytes: &[u8],
    page: u32,
    (turn, max_side): (u16, u32),
    limits: &Limits,
) -> Result<Option<Vec<u8>>> {
    let format = formats::detect(announced, bytes)?;
    match formats::page_picture(format, bytes, page, limits)? {
        Some(picture) => formats::scan::page_png(&picture, turn, max_side).map(Some),
        None => Ok(None),
    }
}

fn extract_here(
    announced: Announced,
    bytes: &[u8],
    limits: &Limits,
    ocr: Option<&dyn PageReader>,
) -> Result<Extracted> {
    let format = formats::detect(announced, bytes)?;
    if format.is_text() {
        bail!("{} is read as text, not extracted", format.name());
    }
    formats::extract_with(format, bytes, limits, ocr)
        .map_err(|e| anyhow!("{} file: {e:#}", format.name()))
}

/// Operating-system limits of a worker process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerLimits {
    /// Address space of a worker (`RLIMIT_AS`), in bytes.
    pub memory_bytes: u64,
}

impl Default for WorkerLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 4 << 30,
        }
    }
}

/// Worker processes, started on demand and reused.
///
/// Workers are started by one thread of the pool's own that lives as long as the pool: a
/// worker's death signal (`PR_SET_PDEATHSIG`) follows the thread that started it, and the
/// threads that ask for extractions (a server's blocking pool) come and go.
#[derive(Debug)]
pub struct WorkerPool {
    limits: WorkerLimits,
    idle: Mutex<Vec<Worker>>,
    starter: Mutex<SyncSender<SyncSender<Result<Worker>>>>,
}

impl WorkerPool {
    /// A pool that starts `program __extract-worker --memory-bytes N args…` on demand.
    pub fn new(program: PathBuf, args: Vec<OsString>, limits: WorkerLimits) -> Self {
        let (starter, requests) = sync_channel::<SyncSender<Result<Worker>>>(0);
        // If the thread cannot start, every request fails below with that reason.
        let _ = std::thread::Builder::new()
            .name("zhiku-extract-starter".into())
            .spawn(move || {
                for reply in requests {
                    let _ = reply.send(Worker::start(&program, &args, limits));
                }
            });
        Self {
            limits,
            idle: Mutex::new(Vec::new()),
            starter: Mutex::new(starter),
        }
    }

    fn start(&self) -> Result<Worker> {
        let (tx, rx) = sync_channel(1);
        let sent = self
            .starter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(tx);
        match sent {
            Ok(()) => rx
                .recv()
                .map_err(|_| anyhow!("the extraction worker starter has stopped"))?,
            Err(_) => bail!("the extraction worker starter has stopped"),
        }
    }

    fn describe(&self) -> String {
        format!(
            "worker processes ({} MiB address space, CPU time per file, no network where the kernel allows)",
            self.limits.memory_bytes >> 20
        )
    }

    fn take(&self) -> Result<Worker> {
        if let Some(w) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(w);
        }
        self.start()
    }

    fn give_back(&self, worker: Worker) {
        if worker.jobs >= JOBS_PER_WORKER {
            worker.stop();
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_WORKERS {
            idle.push(worker);
        } else {
            drop(idle);
            worker.stop();
        }
    }

    /// Runs `job` over `payload` in a worker, waiting until `deadline` plus [`GRACE`].
    fn run(&self, job: &Job, payload: &[u8], deadline: Instant, reply_bound: u64) -> Result<Reply> {
        let header = serde_json::to_vec(job)?;
        let mut worker = self.take()?;
        worker.set_reply_bound(reply_bound);
        if worker.send(&header, payload).is_err() {
            // An idle worker that died meanwhile (killed from outside) never saw this job:
            // a fresh one gets it. A fresh one that cannot take it has died of itself.
            let fresh = worker.jobs == 0;
            let dead = worker.died();
            if fresh {
                return Err(dead);
            }
            worker = self.start()?;
            worker.set_reply_bound(reply_bound);
            if worker.send(&header, payload).is_err() {
                return Err(worker.died());
            }
        }
        worker.jobs += 1;
        let wait = deadline.saturating_duration_since(Instant::now()) + GRACE;
        match worker.replies.recv_timeout(wait) {
            Ok(Ok(frame)) => match serde_json::from_slice::<Reply>(&frame) {
                Ok(reply) => {
                    self.give_back(worker);
                    Ok(reply)
                }
                Err(e) => {
                    worker.kill();
                    Err(anyhow!("the extractor sent a malformed reply: {e}"))
                }
            },
            Ok(Err(reason)) => {
                worker.kill();
                Err(anyhow!(reason))
            }
            Err(RecvTimeoutError::Timeout) => {
                worker.kill();
                Err(anyhow!(
                    "extraction took longer than the time limit (loader.max_extract_seconds): the extractor was stopped"
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(worker.died()),
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        for w in self
            .idle
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            w.stop();
        }
    }
}

/// One worker process.
#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    replies: Receiver<std::result::Result<Vec<u8>, String>>,
    /// The largest reply the reader thread accepts for the current job.
    reply_bound: Arc<std::sync::atomic::AtomicU64>,
    stderr: Arc<Mutex<Vec<u8>>>,
    jobs: u32,
}

/// What a worker may write to its stderr that the parent keeps (a panic message, the
/// runtime's "stack overflow" or "memory allocation failed" line).
const STDERR_KEPT: usize = 4096;

impl Worker {
    fn start(program: &PathBuf, args: &[OsString], limits: WorkerLimits) -> Result<Self> {
        let mut child = Command::new(program)
            .arg(WORKER_ARG)
            .arg("--memory-bytes")
            .arg(limits.memory_bytes.to_string())
            .args(args)
            .env_clear()
            .env("RUST_BACKTRACE", "0")
            // ONNX Runtime's PyPI build (the PP-OCR engine's) opens a telemetry database under
            // the home folder when its environment is created, before any setting of ours can
            // stop it; a worker may write no file (RLIMIT_FSIZE 0), so that write would kill it.
            .env("ORT_DISABLE_TELEMETRY", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                anyhow!(
                    "cannot start the extraction worker {}: {e}",
                    program.display()
                )
            })?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped stdin"));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let reply_bound = Arc::new(std::sync::atomic::AtomicU64::new(REPLY_SLACK));
        let (tx, replies) = sync_channel(1);
        let bound = reply_bound.clone();
        std::thread::Builder::new()
            .name("zhiku-extract-reader".into())
            .spawn(move || {
                loop {
                    let limit = bound.load(std::sync::atomic::Ordering::Relaxed);
                    let frame = match read_frame(&mut stdout, limit) {
                        Ok(Some(frame)) => Ok(frame),
                        Ok(None) => break, // the worker ended
                        Err(e) => Err(e),
                    };
                    let failed = frame.is_err();
                    if tx.send(frame).is_err() || failed {
                        break;
                    }
                }
            })
            .map_err(|e| anyhow!("cannot start the extraction reader thread: {e}"))?;
        let stderr: Arc<Mutex<Vec<u8>>> = Arc::default();
        let kept = stderr.clone();
        std::thread::Builder::new()
            .name("zhiku-extract-stderr".into())
            .spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n) = stderr_pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                    let room = STDERR_KEPT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            })
            .map_err(|e| anyhow!("cannot start the extraction stderr thread: {e}"))?;
        Ok(Self {
            child,
            stdin,
            replies,
            reply_bound,
            stderr,
            jobs: 0,
        })
    }

    /// Writes a request: its header frame and its payload frame.
    fn send(&mut self, header: &[u8], payload: &[u8]) -> std::io::Result<()> {
        write_frame(&mut self.stdin, header)?;
        write_frame(&mut self.stdin, payload)?;
        self.stdin.flush()
    }

    fn set_reply_bound(&self, bound: u64) {
        self.reply_bound
            .store(bound, std::sync::atomic::Ordering::Relaxed);
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Ends an idle worker: closing its stdin ends its loop.
    fn stop(self) {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        // A worker that does not leave at once is killed: its parent has no time to wait.
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Why the worker ended, as this job's error.
    fn died(mut self) -> anyhow::Error {
        // Its output pipe closed: it is gone or going; a hung half-dead one is killed.
        let deadline = Instant::now() + Duration::from_secs(1);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => {
                    let _ = self.child.kill();
                    break self.child.wait().ok();
                }
            }
        };
        // Give the stderr thread a moment to take the last words.
        std::thread::sleep(Duration::from_millis(20));
        let said = String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|p| p.into_inner()))
            .into_owned();
        anyhow!(death_reason(status, &said))
    }
}

/// A worker's end, in words: what the runtime said on stderr first, then the signal.
fn death_reason(status: Option<std::process::ExitStatus>, said: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let signal = status.and_then(|s| s.signal());
    let cause = if said.contains("has overflowed its stack") {
        "stack overflow (the file nests too deep)".to_string()
    } else if said.contains("memory allocation of") || said.contains("capacity overflow") {
        "it ran out of its memory limit (loader.max_extract_memory)".to_string()
    } else if signal == Some(24) {
        "it used up its CPU time (loader.max_extract_seconds)".to_string()
    } else if let Some(sig) = signal {
        format!("signal {sig}")
    } else if let Some(code) = status.and_then(|s| s.code()) {
        format!("exit status {code}")
    } else {
        "it ended without a reply".to_string()
    };
    format!("the extractor crashed on this file: {cause}; the file is skipped")
}

fn write_frame(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(&(bytes.len() as u64).to_le_bytes())?;
    out.write_all(bytes)
}

/// Reads one frame; `None` at a clean end of the stream; an error for a frame over `limit`.
fn read_frame(input: &mut impl Read, limit: u64) -> std::result::Result<Option<Vec<u8>>, String> {
    let mut len = [0u8; 8];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(format!("cannot read the extractor's reply: {e}")),
    }
    let len = u64::from_le_bytes(len);
    if len > limit {
        return Err(format!(
            "the extractor's reply is {len} bytes, more than the {limit} this file may give"
        ));
    }
    let mut frame = Vec::new();
    input
        .take(len)
        .read_to_end(&mut frame)
        .map_err(|e| format!("cannot read the extractor's reply: {e}"))?;
    if frame.len() as u64 != len {
        return Err("the extractor's reply was cut short".into());
    }
    Ok(Some(frame))
}

/// The worker side: applies the limits named on the command line (`--memory-bytes N`, the
/// arguments after [`WORKER_ARG`]), then answers jobs from stdin on stdout until stdin closes.
/// Scanned pages are read by the engine `ocr` builds, when given (built on the first scan,
/// and a failure to build is each such file's error).
pub fn serve(args: impl Iterator<Item = String>, ocr: Option<OcrFactory>) -> Result<()> {
    let mut limits = WorkerLimits::default();
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--memory-bytes" => {
                limits.memory_bytes = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| anyhow!("--memory-bytes needs a number"))?;
            }
            other => bail!("unknown worker argument {other:?}"),
        }
    }
    confine(limits);
    let stack = JOB_STACK.min(usize::try_from(limits.memory_bytes / 4).unwrap_or(JOB_STACK));
    let stdin = std::io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let stdout = std::io::stdout();
    let mut output = BufWriter::new(stdout.lock());
    // A request header is small; a payload is at most a document's size bound (checked by the
    // parent before it sends), which the address-space limit bounds again.
    let engine = LazyEngine::new(ocr);
    while let Some(header) = read_frame(&mut input, 1 << 20).map_err(|e| anyhow!(e))? {
        let Some(payload) = read_frame(&mut input, u64::MAX).map_err(|e| anyhow!(e))? else {
            bail!("the request ended before its payload");
        };
        let reply = match serde_json::from_slice::<Job>(&header) {
            Ok(job) => run_job(job, payload, stack, &engine),
            Err(e) => Reply::Failed(format!("malformed extraction request: {e}")),
        };
        let frame = serde_json::to_vec(&reply)?;
        write_frame(&mut output, &frame)?;
        output.flush()?;
    }
    Ok(())
}

/// A worker's OCR engine, built on first use.
struct LazyEngine {
    factory: Option<OcrFactory>,
    built: std::sync::OnceLock<std::result::Result<OcrEngine, String>>,
}

impl LazyEngine {
    fn new(factory: Option<OcrFactory>) -> Self {
        Self {
            factory,
            built: std::sync::OnceLock::new(),
        }
    }

    /// The engine, or `None` when the worker has none.
    fn get(&self) -> Option<std::result::Result<OcrEngine, String>> {
        let factory = self.factory.as_ref()?;
        Some(
            self.built
                .get_or_init(|| factory().map(OcrEngine).map_err(|e| format!("{e:#}")))
                .clone(),
        )
    }
}

/// Reads scans with the worker's engine; a failure to build it is each scan's error.
struct WorkerReader<'a>(&'a LazyEngine);

impl PageReader for WorkerReader<'_> {
    fn name(&self) -> String {
        match self.0.get() {
            Some(Ok(engine)) => PageReader::name(&engine),
            _ => "ocr (unavailable)".into(),
        }
    }

    fn read(&self, page: &PageImage) -> Result<ScanPage> {
        match self.0.get() {
            Some(Ok(engine)) => engine.read(page),
            Some(Err(why)) => Err(anyhow!("the OCR engine cannot run: {why}")),
            None => Err(anyhow!("OCR is off")),
        }
    }
}

/// Runs one job on a thread with a large stack, within its CPU time; a panic is its error.
fn run_job(job: Job, payload: Vec<u8>, stack: usize, engine: &LazyEngine) -> Reply {
    let seconds = match &job {
        Job::Extract { bounds, .. } | Job::PagePng { bounds, .. } => bounds.millis.div_ceil(1000),
        Job::Metadata { millis, .. } => millis.div_ceil(1000),
    };
    limit_cpu(seconds + GRACE.as_secs());
    let reader = WorkerReader(engine);
    let ocr = engine
        .factory
        .is_some()
        .then_some(&reader as &dyn PageReader);
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("zhiku-extract-job".into())
            .stack_size(stack)
            .spawn_scoped(scope, move || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match job {
                    Job::Extract { announced, bounds } => {
                        match extract_here(announced, &payload, &bounds.limits(), ocr) {
                            Ok(e) => Reply::Extracted(e),
                            Err(e) => Reply::Failed(name_the_memory_limit(format!("{e:#}"))),
                        }
                    }
                    Job::PagePng {
                        announced,
                        page,
                        turn,
                        max_side,
                        bounds,
                    } => {
                        let limits = bounds.limits();
                        match page_png_here(announced, &payload, page, (turn, max_side), &limits) {
                            Ok(png) => Reply::Png(png),
                            Err(e) => Reply::Failed(name_the_memory_limit(format!("{e:#}"))),
                        }
                    }
                    Job::Metadata { what, .. } => match std::str::from_utf8(&payload) {
                        Ok(text) => match front_matter::parse_mapping(text, &what) {
                            Ok(m) => Reply::Metadata(m),
                            Err(e) => Reply::Failed(format!("{e:#}")),
                        },
                        Err(_) => Reply::Failed(format!("malformed {what}: not UTF-8")),
                    },
                }))
            });
        match worker {
            Ok(handle) => match handle.join() {
                Ok(Ok(reply)) => reply,
                Ok(Err(panic)) | Err(panic) => {
                    let what = formats::panic_message(panic.as_ref());
                    Reply::Failed(format!("the extractor failed on this file: {what}"))
                }
            },
            Err(e) => Reply::Failed(format!("cannot start an extraction thread: {e}")),
        }
    })
}

/// An allocation the address-space limit refused, reported as an error rather than an abort
/// (a reader's `try_reserve`), names the setting that bounds it.
fn name_the_memory_limit(reason: String) -> String {
    if reason.contains("out of memory") {
        format!("{reason} (the extraction worker's memory limit, loader.max_extract_memory)")
    } else {
        reason
    }
}

/// The limits a worker puts on itself before it reads a byte.
fn confine(limits: WorkerLimits) {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let cap = |resource, value: u64| {
        let _ = setrlimit(
            resource,
            Rlimit {
                current: Some(value),
                maximum: Some(value),
            },
        );
    };
    cap(Resource::As, limits.memory_bytes);
    cap(Resource::Nofile, WORKER_FILES);
    cap(Resource::Fsize, 0);
    cap(Resource::Core, 0);
    // Dies with the parent: a killed server leaves no worker behind.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let _ = rustix::thread::set_no_new_privs(true);
    leave_the_network();
}

/// Moves the worker into a network namespace of its own (root may; otherwise through a user
/// namespace where the kernel allows unprivileged ones). Where neither is allowed the worker
/// keeps the host's network; the parsers open no sockets of their own either way.
#[allow(deprecated)] // `unshare` is safe for these flags: no file-descriptor table is unshared
fn leave_the_network() {
    use rustix::thread::{UnshareFlags, unshare};
    if unshare(UnshareFlags::NEWNET).is_err() {
        let _ = unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNET);
    }
}

/// Lets this process use `seconds` more CPU time from now (`RLIMIT_CPU`, soft limit: the
/// kernel sends `SIGXCPU`, which ends it).
fn limit_cpu(seconds: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let used = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let used = u64::try_from(used.tv_sec).unwrap_or(0);
    let hard = getrlimit(Resource::Cpu).maximum;
    let soft = used + seconds.max(1);
    let _ = setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(hard.map_or(soft, |h| soft.min(h))),
            maximum: hard,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use zhiku_formats::Format;

    #[test]
    fn frames_round_trip_and_are_bounded() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"hello").unwrap();
        write_frame(&mut buf, b"").unwrap();
        let mut r = buf.as_slice();
        assert_eq!(read_frame(&mut r, 10).unwrap(), Some(b"hello".to_vec()));
        assert_eq!(read_frame(&mut r, 10).unwrap(), Some(Vec::new()));
        assert_eq!(read_frame(&mut r, 10).unwrap(), None);
        let mut big = Vec::new();
        write_frame(&mut big, &[0u8; 100]).unwrap();
        assert!(read_frame(&mut big.as_slice(), 99).is_err());
        // A frame cut short is an error, not a short reply.
        let mut cut = Vec::new();
        write_frame(&mut cut, b"hello").unwrap();
        cut.truncate(10);
        assert!(read_frame(&mut cut.as_slice(), 10).is_err());
    }

    #[test]
    fn a_workers_death_is_told_in_words() {
        use std::os::unix::process::ExitStatusExt;
        let overflow = death_reason(
            Some(std::process::ExitStatus::from_raw(6)),
            "\nthread 'zhiku-extract-job' has overflowed its stack\nfatal runtime error: stack overflow\n",
        );
        assert!(overflow.contains("stack overflow"), "{overflow}");
        let memory = death_reason(
            Some(std::process::ExitStatus::from_raw(6)),
            "memory allocation of 1073741824 bytes failed\n",
        );
        assert!(memory.contains("loader.max_extract_memory"), "{memory}");
        let cpu = death_reason(Some(std::process::ExitStatus::from_raw(24)), "");
        assert!(cpu.contains("loader.max_extract_seconds"), "{cpu}");
        let killed = death_reason(Some(std::process::ExitStatus::from_raw(9)), "");
        assert!(killed.contains("signal 9"), "{killed}");
    }

    #[test]
    fn a_request_header_reads_back() {
        let bounds = Bounds {
            max_unpacked_bytes: 1,
            max_text_bytes: 2,
            max_pages: 3,
            max_image_pixels: 5,
            millis: 4,
        };
        let job = Job::PagePng {
            announced: Announced::Known(Format::Pdf),
            page: 2,
            turn: 3,
            max_side: 1600,
            bounds,
        };
        let bytes = serde_json::to_vec(&job).unwrap();
        let back: Job = serde_json::from_slice(&bytes).unwrap();
        assert!(matches!(
            back,
            Job::PagePng {
                announced: Announced::Known(Format::Pdf),
                page: 2,
                turn: 3,
                bounds: Bounds {
                    max_image_pixels: 5,
                    millis: 4,
                    ..
                },
                ..
            }
        ));
    }
}
