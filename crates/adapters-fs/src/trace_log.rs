//! The JSONL trace log of a store: `traces.jsonl`, its byte-range index `traces.idx`, and the
//! rotated files in `traces.d/`.

use std::collections::hash_map::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde_json::Value;
use zhiku_domain::ports::{BoxError, StoredTraceEvent, TraceEvent, TraceSink, TraceStore};

use crate::atomic::{open_store_file, open_store_file_to_read};

/// The text of the store file at `path`, never read through a link.
fn read_store_text(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut open_store_file_to_read(path)?, &mut text)?;
    Ok(text)
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// How much of the trace history is kept (`[serve]` `traces_*`).
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// The current file is rotated once it holds this many bytes.
    pub max_bytes: u64,
    /// Rotated files kept; the oldest beyond are removed.
    pub keep_files: usize,
    /// Rotated files older than this are removed.
    pub max_age: Option<Duration>,
}

impl Retention {
    /// The retention of `max_bytes` per file, `keep_files` rotated files, and rotated files no
    /// older than `max_age_days` (0: no age limit).
    pub fn new(max_bytes: u64, keep_files: usize, max_age_days: u64) -> Self {
        Self {
            max_bytes,
            keep_files,
            max_age: (max_age_days > 0)
                .then(|| Duration::from_secs(max_age_days.saturating_mul(86_400))),
        }
    }
}

impl Default for Retention {
    /// 16 MiB per file, 8 rotated files, 30 days.
    fn default() -> Self {
        Self::new(16 * 1024 * 1024, 8, 30)
    }
}

/// The index beside a trace file: one line `<trace_id> <offset> <length>` per run.
fn index_of(data: &Path) -> PathBuf {
    data.with_extension("idx")
}

/// The folder of rotated trace files beside the current one.
fn rotated_dir(current: &Path) -> PathBuf {
    current.with_extension("d")
}

/// Writes answer runs to a JSONL file, one event per line:
/// `{"at_ms", "trace_id", "stage", "data"}`.
///
/// A run's events are kept until it ends (its `answer` event, [`JsonlTraceSink::finish`] or the
/// sink's drop) and then appended as one block, so a run is one contiguous byte range; its
/// offset and length go to the index beside the file (`traces.idx`), and
/// [`read_trace`] reads that range only. Beyond `max_bytes` the file and its index move to
/// `traces.d/<time>-<pid>.{jsonl,idx}`, and rotated files beyond `keep_files` or older than
/// `max_age` are removed. A write failure is reported once on stderr and never fails the run.
#[derive(Debug)]
pub struct JsonlTraceSink {
    path: PathBuf,
    retention: Retention,
    open: Mutex<Option<Open>>,
    pending: Mutex<HashMap<String, String>>,
    warned: AtomicBool,
}

#[derive(Debug)]
struct Open {
    data: File,
    index: File,
}

impl JsonlTraceSink {
    /// The sink of the store in `store_dir`: `traces.jsonl` with `retention`.
    pub fn in_store(store_dir: &Path, retention: Retention) -> Self {
        Self::new(store_dir.join("traces.jsonl")).with_retention(retention)
    }

    /// A sink appending to `path` (created with its parent folder on first write), with the
    /// default retention.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            retention: Retention::default(),
            open: Mutex::new(None),
            pending: Mutex::default(),
            warned: Default::default(),
        }
    }

    /// The same sink keeping `retention`.
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The current file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes what is pending of `trace_id` (a run that ended without its `answer` event).
    pub fn finish(&self, trace_id: &str) {
        let block = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(trace_id);
        if let Some(block) = block {
            self.report(self.append(trace_id, &block));
        }
    }

    fn report(&self, result: std::io::Result<()>) {
        if let Err(e) = result
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            eprintln!(
                "warning: cannot write the trace to {}: {e}",
                self.path.display()
            );
        }
    }

    /// True when `file` is no longer the one at `path` (another process rotated it).
    fn moved(file: &File, path: &Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (file.metadata(), std::fs::metadata(path)) {
                (Ok(a), Ok(b)) => a.ino() != b.ino() || a.dev() != b.dev(),
                _ => true,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = (file, path);
            false
        }
    }

    fn append(&self, trace_id: &str, block: &str) -> std::io::Result<()> {
        let mut guard = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(open) = guard.as_ref() {
            let full = open.data.metadata()?.len() >= self.retention.max_bytes;
            if Self::moved(&open.data, &self.path) {
                *guard = None;
            } else if full {
                *guard = None;
                self.rotate()?;
            }
        }
        if guard.is_none() {
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let append =
                |p: &Path| open_store_file(p, OpenOptions::new().create(true).append(true));
            let data = append(&self.path)?;
            let index_path = index_of(&self.path);
            let fresh_index = !index_path.exists();
            let mut index = append(&index_path)?;
            if fresh_index && data.metadata()?.len() > 0 {
                // A file from before the index: index it once.
                index.write_all(legacy_index(&self.path)?.as_bytes())?;
            }
            if data.metadata()?.len() >= self.retention.max_bytes {
                drop((data, index));
                self.rotate()?;
                *guard = Some(Open {
                    data: append(&self.path)?,
                    index: append(&index_path)?,
                });
            } else {
                *guard = Some(Open { data, index });
            }
        }
        let open = guard.as_mut().expect("opened above");
        // One write for the whole run: appenders (other processes too) never interleave
        // within it, and where it landed is where the file position now ends.
        open.data.write_all(block.as_bytes())?;
        let end = std::io::Seek::stream_position(&mut open.data)?;
        let offset = end - block.len() as u64;
        open.index
            .write_all(format!("{trace_id} {offset} {}\n", block.len()).as_bytes())
    }

    /// Moves the current file and its index to the rotated folder and applies the retention.
    fn rotate(&self) -> std::io::Result<()> {
        let dir = rotated_dir(&self.path);
        std::fs::create_dir_all(&dir)?;
        static ROTATIONS: AtomicU64 = AtomicU64::new(0);
        let stem = format!(
            "{:016}-{}-{:06}",
            unix_ms(),
            std::process::id(),
            ROTATIONS.fetch_add(1, Ordering::Relaxed)
        );
        // The index first: should the process stop in between, the data file stays current
        // and the index entries written next still point into it.
        match std::fs::rename(index_of(&self.path), dir.join(format!("{stem}.idx"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        match std::fs::rename(&self.path, dir.join(format!("{stem}.jsonl"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        self.prune(&dir)
    }

    fn prune(&self, dir: &Path) -> std::io::Result<()> {
        let mut files: Vec<PathBuf> = rotated(dir);
        // Oldest first.
        files.reverse();
        let excess = files.len().saturating_sub(self.retention.keep_files);
        let now = SystemTime::now();
        for (i, data) in files.iter().enumerate() {
            let old = self.retention.max_age.is_some_and(|age| {
                std::fs::metadata(data)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|d| d > age)
            });
            if i < excess || old {
                let _ = std::fs::remove_file(index_of(data));
                std::fs::remove_file(data)?;
            }
        }
        Ok(())
    }
}

/// The rotated trace files in `dir`, newest first.
fn rotated(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    // Names start with the zero-padded rotation time.
    files.sort();
    files.reverse();
    files
}

/// Index lines for a file written before the index existed: for each run, the byte range from
/// its first line to its last (other runs' lines inside it are filtered out on reading).
fn legacy_index(path: &Path) -> std::io::Result<String> {
    let mut ranges: Vec<(String, u64, u64)> = Vec::new();
    let mut at: HashMap<String, usize> = Default::default();
    let mut offset = 0u64;
    let mut reader = BufReader::new(open_store_file_to_read(path)?);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line)? as u64;
        if n == 0 {
            break;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && let Some(id) = v["trace_id"].as_str()
        {
            match at.get(id) {
                Some(&i) => ranges[i].2 = offset + n - ranges[i].1,
                None => {
                    at.insert(id.to_string(), ranges.len());
                    ranges.push((id.to_string(), offset, n));
                }
            }
        }
        offset += n;
    }
    Ok(ranges
        .into_iter()
        .map(|(id, offset, len)| format!("{id} {offset} {len}\n"))
        .collect())
}

impl TraceSink for JsonlTraceSink {
    fn record(&self, event: TraceEvent) {
        let done = event.stage.name() == "answer";
        let trace_id = event.trace_id.clone();
        // Through `Value`, whose keys are sorted: the line's bytes do not depend on the order
        // the event's types declare their fields in.
        let line = serde_json::to_value(StoredTraceEvent {
            at_ms: Some(unix_ms() as u64),
            event,
        })
        .map(|v| v.to_string())
        .unwrap_or_default();
        let block = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let block = pending.entry(trace_id.clone()).or_default();
            block.push_str(&line);
            block.push('\n');
            if done {
                pending.remove(&trace_id)
            } else {
                None
            }
        };
        if let Some(block) = block {
            self.report(self.append(&trace_id, &block));
        }
    }
}

impl TraceStore for JsonlTraceSink {
    fn finish(&self, trace_id: &str) {
        JsonlTraceSink::finish(self, trace_id);
    }

    fn read(&self, trace_id: &str) -> Result<Vec<StoredTraceEvent>, BoxError> {
        read_trace(&self.path, trace_id).map_err(|e| format!("{e:#}").into())
    }
}

impl Drop for JsonlTraceSink {
    fn drop(&mut self) {
        let pending = std::mem::take(self.pending.get_mut().unwrap_or_else(|e| e.into_inner()));
        for (trace_id, block) in pending {
            let result = self.append(&trace_id, &block);
            self.report(result);
        }
    }
}

/// The events of `trace_id` in the byte range `offset..offset + len` of `data`, in order.
fn read_range(data: &Path, trace_id: &str, offset: u64, len: u64) -> Result<Vec<StoredTraceEvent>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match open_store_file_to_read(data) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", data.display())),
    };
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    file.take(len).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf)
        .lines()
        .filter_map(|l| serde_json::from_str::<StoredTraceEvent>(l).ok())
        .filter(|e| e.event.trace_id == trace_id)
        .collect())
}

/// Every event of `trace_id` in `data`, reading the whole file (no index).
fn scan(data: &Path, trace_id: &str) -> Result<Vec<StoredTraceEvent>> {
    let len = match std::fs::metadata(data) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", data.display())),
    };
    read_range(data, trace_id, 0, len)
}

/// Reads the events of `trace_id` back, in order: from the current file `path` or a rotated
/// one, each looked up in its index and read as one byte range (a file without an index, from
/// before it existed, is scanned). Events come back typed; a step without a type here is kept
/// as [`Stage::Other`](zhiku_domain::ports::Stage::Other), and a line that is no event at all is
/// skipped.
pub fn read_trace(path: &Path, trace_id: &str) -> Result<Vec<StoredTraceEvent>> {
    if trace_id.is_empty() || trace_id.contains(char::is_whitespace) {
        return Ok(Vec::new());
    }
    let mut files = vec![path.to_path_buf()];
    files.extend(rotated(&rotated_dir(path)));
    for data in files {
        let index = match read_store_text(&index_of(&data)) {
            Ok(index) => index,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let found = scan(&data, trace_id)?;
                if !found.is_empty() {
                    return Ok(found);
                }
                continue;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", data.display()));
            }
        };
        let mut found = Vec::new();
        let mut indexed = false;
        for entry in index.lines() {
            let mut fields = entry.split(' ');
            if fields.next() != Some(trace_id) {
                continue;
            }
            indexed = true;
            let (Some(Ok(offset)), Some(Ok(len))) = (
                fields.next().map(str::parse::<u64>),
                fields.next().map(str::parse::<u64>),
            ) else {
                continue;
            };
            found.extend(read_range(&data, trace_id, offset, len)?);
        }
        if indexed && found.is_empty() {
            // The index points elsewhere (a rotation raced a write): read the file.
            found = scan(&data, trace_id)?;
        }
        if !found.is_empty() {
            return Ok(found);
        }
    }
    Ok(Vec::new())
}

/// Every recorded event, oldest file first (the rotated files, then the current one `path`),
/// each file in the order it was written, with how many lines were no event (a line cut by a
/// crash, bytes that are not JSON). Reads a line at a time: the trace log's retention bounds the
/// files, and no line is held longer than it takes to parse it.
pub fn read_all_traces(path: &Path) -> Result<(Vec<StoredTraceEvent>, usize)> {
    use std::io::BufRead;
    let mut files = rotated(&rotated_dir(path));
    files.reverse();
    files.push(path.to_path_buf());
    let (mut events, mut unreadable) = (Vec::new(), 0);
    for data in files {
        let file = match open_store_file_to_read(&data) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", data.display())),
        };
        for line in std::io::BufReader::new(file).split(b'\n') {
            let line = line.with_context(|| format!("cannot read {}", data.display()))?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<StoredTraceEvent>(&line) {
                Ok(e) => events.push(e),
                Err(_) => unreadable += 1,
            }
        }
    }
    Ok((events, unreadable))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use zhiku_domain::ports::Stage;

    #[test]
    fn the_jsonl_file_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/traces.jsonl");
        let sink = JsonlTraceSink::new(&path);
        for (id, stage) in [("t1", "query"), ("t2", "query"), ("t1", "answer")] {
            sink.record(TraceEvent::new(
                id,
                Stage::Other {
                    stage: stage.into(),
                    data: json!({"x": 1}),
                },
            ));
        }
        let back = read_trace(&path, "t1").unwrap();
        assert_eq!(back.len(), 2);
        // Every event written, in order (t2 never ended: nothing of it is written), a broken
        // line counted and skipped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"trace_id\": \"t3\", \xff\n"))
            .unwrap();
        let (all, unreadable) = read_all_traces(&path).unwrap();
        let ids: Vec<&str> = all.iter().map(|e| e.event.trace_id.as_str()).collect();
        assert_eq!((ids, unreadable), (vec!["t1", "t1"], 1));
        assert_eq!(back[1].event.stage.name(), "answer");
        assert!(back[0].at_ms.unwrap() > 0);
        assert!(
            read_trace(&dir.path().join("none"), "t1")
                .unwrap()
                .is_empty()
        );
    }

    fn event(id: &str, stage: &str) -> TraceEvent {
        TraceEvent::new(
            id,
            Stage::Other {
                stage: stage.into(),
                data: json!({"pad": "x".repeat(100)}),
            },
        )
    }

    #[test]
    fn runs_are_indexed_blocks_rotated_within_the_retention() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traces.jsonl");
        // A file from before the index, with two interleaved runs.
        let legacy: String = [("old1", "query"), ("old2", "query"), ("old1", "answer")]
            .iter()
            .map(|(id, stage)| {
                format!(
                    "{}\n",
                    json!({"at_ms": 1, "trace_id": id, "stage": stage, "data": {}})
                )
            })
            .collect();
        std::fs::write(&path, legacy).unwrap();
        assert_eq!(read_trace(&path, "old1").unwrap().len(), 2);
        let sink = JsonlTraceSink::new(&path).with_retention(Retention {
            max_bytes: 1000,
            keep_files: 2,
            max_age: None,
        });
        // Interleaved runs: each is written whole when it ends.
        sink.record(event("a", "query"));
        sink.record(event("b", "query"));
        sink.record(event("a", "answer"));
        sink.record(event("b", "context"));
        sink.finish("b");
        assert_eq!(read_trace(&path, "old1").unwrap().len(), 2);
        assert_eq!(read_trace(&path, "old2").unwrap().len(), 1);
        let a = read_trace(&path, "a").unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].event.stage.name(), "answer");
        assert_eq!(read_trace(&path, "b").unwrap().len(), 2);
        let index = std::fs::read_to_string(dir.path().join("traces.idx")).unwrap();
        assert!(index.lines().any(|l| l.starts_with("a ")), "{index}");
        // Many more runs: the current file stays near max_bytes, two rotated files stay.
        for i in 0..40 {
            let id = format!("r{i}");
            for stage in ["query", "context", "answer"] {
                sink.record(event(&id, stage));
            }
        }
        let rotated = rotated(&dir.path().join("traces.d"));
        assert_eq!(rotated.len(), 2, "{rotated:?}");
        assert!(std::fs::metadata(&path).unwrap().len() < 2000);
        assert_eq!(read_trace(&path, "r39").unwrap().len(), 3);
        let newest_rotated = std::fs::read_to_string(&rotated[0]).unwrap();
        let id = serde_json::from_str::<Value>(newest_rotated.lines().next().unwrap())
            .unwrap()["trace_id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(read_trace(&path, &id).unwrap().len(), 3);
        assert!(read_trace(&path, "r0").unwrap().is_empty());
        assert!(read_trace(&path, "old1").unwrap().is_empty());
        assert!(read_trace(&path, "").unwrap().is_empty());
    }
}
