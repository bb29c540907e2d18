//! [`Tesseract`]: the [`Ocr`] port over the Tesseract 5 command-line program.
//!
//! Each page costs two runs of the program, each fed the image on its standard input as a
//! binary PPM (which Tesseract's image library reads without any other format support):
//!
//! 1. orientation and script detection (`--psm 0`), which says how far to turn the page; a
//!    page with too little text for it to tell is taken as upright;
//! 2. the text of the upright page as TSV (`--psm 3`, automatic page segmentation), whose word
//!    rows are grouped into lines by block, paragraph and line number.
//!
//! Words of a line are joined with a space only between two words of a spaced script (Latin
//! letters, digits): Tesseract cuts Chinese into one "word" per character or short run, and
//! those are joined without one. A line's confidence is the mean of its words' (0–100 in the
//! TSV, 0–1 here).
//!
//! The program runs with `OMP_THREAD_LIMIT=1` (one core per page, so pages in parallel
//! workers do not oversubscribe the machine) and is killed past the page deadline. Missing
//! program or language data make every read fail fast with
//! [`OcrError::Unavailable`], saying which Debian packages to install.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zhiku_domain::ports::{Ocr, OcrError, OcrImage, OcrLine, OcrPage, PixelBox, turn_clockwise};

/// The adapter's name in errors.
const ADAPTER: &str = "tesseract";

/// How the program is run.
#[derive(Debug, Clone)]
pub struct TesseractConfig {
    /// The program: a path, or a name looked up on `PATH`.
    pub program: PathBuf,
    /// Tesseract's language list, e.g. `chi_sim+eng`.
    pub languages: String,
    /// How long one run of the program may take before it is killed.
    pub timeout: Duration,
}

impl Default for TesseractConfig {
    fn default() -> Self {
        Self {
            program: PathBuf::from("tesseract"),
            languages: "chi_sim+eng".into(),
            timeout: Duration::from_secs(60),
        }
    }
}

/// Tesseract as an [`Ocr`] engine.
#[derive(Debug)]
pub struct Tesseract {
    config: TesseractConfig,
    name: String,
    /// Why the engine cannot run, when the probe found out.
    unavailable: Option<String>,
}

impl Tesseract {
    /// An engine of `config`; the program's version and languages are checked now, and what
    /// is missing is told by every read (see the crate docs).
    pub fn new(config: TesseractConfig) -> Self {
        let (version, unavailable) = match probe(&config) {
            Ok(version) => (version, None),
            Err(why) => ("unknown".to_string(), Some(why)),
        };
        let name = format!("tesseract-{version}:{}", config.languages);
        Self {
            config,
            name,
            unavailable,
        }
    }

    /// Why the engine cannot run, if it cannot.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    fn run(&self, image: &[u8], args: &[&str]) -> Result<String, OcrError> {
        run(&self.config.program, args, image, self.config.timeout)
    }
}

impl Ocr for Tesseract {
    fn name(&self) -> &str {
        &self.name
    }

    fn read(&self, image: &OcrImage<'_>) -> Result<OcrPage, OcrError> {
        if let Some(why) = &self.unavailable {
            return Err(OcrError::Unavailable {
                adapter: ADAPTER,
                message: why.clone(),
            });
        }
        // The orientation pass is a hint: it fails on a page with too little text, and is
        // unsure on a short page. An unsure hint is checked by reading the page both ways.
        let hint = self
            .run(&ppm(image.width(), image.height(), image.rgb()), &OSD_ARGS)
            .map(|osd| orientation_of(&osd))
            .unwrap_or((0, 0.0));
        let candidates: Vec<u16> = match hint {
            (0, c) if c >= SURE_ORIENTATION => vec![0],
            (0, _) => vec![0, 180],
            (r, c) if c >= SURE_ORIENTATION => vec![r],
            (r, _) => vec![r, 0],
        };
        let mut best: Option<(f32, OcrPage)> = None;
        let mut tried = Vec::new();
        let mut pending = candidates;
        while let Some(rotation) = (!pending.is_empty()).then(|| pending.remove(0)) {
            tried.push(rotation);
            let page = self.read_turned(image, rotation)?;
            let score = score(&page);
            // The hint (first) keeps its place unless another reading is clearly better.
            if best.as_ref().is_none_or(|(b, _)| score > b * 1.25) {
                best = Some((score, page));
            }
            // Lines standing on end: Chinese on a page turned a quarter reads as vertical
            // writing, which the engine takes as it is; the other quarter turns are tried.
            if pending.is_empty() && best.as_ref().is_some_and(|(_, p)| mostly_vertical(p)) {
                pending = [90, 270, 0, 180]
                    .into_iter()
                    .filter(|r| !tried.contains(r))
                    .take(2)
                    .collect();
            }
        }
        Ok(best.map(|(_, page)| page).unwrap_or_default())
    }
}

impl Tesseract {
    /// Reads `image` turned clockwise by `rotation`.
    fn read_turned(&self, image: &OcrImage<'_>, rotation: u16) -> Result<OcrPage, OcrError> {
        let (width, height, upright) = turn_clockwise(image, rotation);
        let tsv = self.run(
            &ppm(width, height, &upright),
            &[
                "stdin",
                "stdout",
                "--psm",
                "3",
                "-l",
                &self.config.languages,
                "tsv",
            ],
        )?;
        Ok(OcrPage {
            rotation,
            width,
            height,
            lines: lines_of_tsv(&tsv, width, height),
        })
    }
}

/// How much sure text a reading holds: characters weighted by their line's confidence,
/// halved when the lines stand on end (see [`mostly_vertical`]).
fn score(page: &OcrPage) -> f32 {
    let sure: f32 = page
        .lines
        .iter()
        .map(|l| l.confidence * l.text.chars().filter(|c| !c.is_whitespace()).count() as f32)
        .sum();
    if mostly_vertical(page) {
        sure / 2.0
    } else {
        sure
    }
}

/// True when most of the text is in lines taller than they are wide: vertical writing, or a
/// page turned a quarter.
fn mostly_vertical(page: &OcrPage) -> bool {
    let chars = |l: &OcrLine| l.text.chars().count();
    let vertical: usize = page
        .lines
        .iter()
        .filter(|l| chars(l) > 1 && l.bbox.height() > 1.5 * l.bbox.width())
        .map(chars)
        .sum();
    let all: usize = page.lines.iter().map(chars).sum();
    all > 0 && 2 * vertical > all
}

/// The orientation pass's arguments.
const OSD_ARGS: [&str; 6] = ["stdin", "stdout", "--psm", "0", "-l", "osd"];

/// Orientation confidence from which the orientation pass is believed without a check.
const SURE_ORIENTATION: f32 = 1.5;

/// The clockwise turn the orientation pass asks for and its confidence; (0, 0) when it said
/// nothing usable.
fn orientation_of(osd: &str) -> (u16, f32) {
    let field = |name: &str| {
        osd.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let rotate = field("Rotate:").and_then(|v| v.parse::<u16>().ok());
    let confidence = field("Orientation confidence:").and_then(|v| v.parse::<f32>().ok());
    match (rotate, confidence) {
        (Some(r @ (0 | 90 | 180 | 270)), Some(c)) if c.is_finite() => (r, c),
        _ => (0, 0.0),
    }
}

/// The version the program says it is, after checking that it runs and has the languages of
/// `config` and the orientation data; otherwise what is missing and how to get it.
fn probe(config: &TesseractConfig) -> Result<String, String> {
    let install = "install Debian's tesseract-ocr with the language packages (tesseract-ocr-chi-sim, tesseract-ocr-chi-tra, tesseract-ocr-eng, tesseract-ocr-osd), or set the program's path";
    let version = run(
        &config.program,
        &["--version"],
        &[],
        Duration::from_secs(10),
    )
    .map_err(|e| {
        format!(
            "{} cannot be run ({e}): {install}",
            config.program.display()
        )
    })?;
    let version = version
        .lines()
        .find_map(|l| l.trim().strip_prefix("tesseract "))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| format!("{} does not say it is tesseract", config.program.display()))?;
    let listed = run(
        &config.program,
        &["--list-langs"],
        &[],
        Duration::from_secs(10),
    )
    .map_err(|e| format!("tesseract cannot list its languages ({e}): {install}"))?;
    let have: Vec<&str> = listed.lines().map(str::trim).collect();
    let missing: Vec<&str> = config
        .languages
        .split('+')
        .chain(["osd"])
        .filter(|l| !l.is_empty() && !have.contains(l))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "tesseract {version} lacks the language data {}: {install}",
            missing.join(", ")
        ));
    }
    Ok(version)
}

/// Runs `program` with `args`, `input` on its standard input, and returns what it wrote to
/// its standard output (standard error on failure); killed past `timeout`.
fn run(
    program: &std::path::Path,
    args: &[&str],
    input: &[u8],
    timeout: Duration,
) -> Result<String, OcrError> {
    let backend = |message: String, temporary: bool| OcrError::Backend {
        adapter: ADAPTER,
        source: message.into(),
        temporary,
    };
    let mut child = Command::new(program)
        .args(args)
        .env("OMP_THREAD_LIMIT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| OcrError::Unavailable {
            adapter: ADAPTER,
            message: format!("cannot start {}: {e}", program.display()),
        })?;
    let (mut stdin, mut stdout, stderr) = (
        child.stdin.take().expect("piped"),
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    // Feed and drain on threads, so that neither pipe fills while the other waits.
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.take(64 * 1024).read_to_end(&mut buf);
        buf
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = feeder.join();
                return Err(backend(
                    format!("stopped after {} s", timeout.as_secs_f32()),
                    false,
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(backend(format!("cannot wait for it: {e}"), true)),
        }
    };
    let _ = feeder.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        let said = String::from_utf8_lossy(&stderr);
        let said = said.lines().last().unwrap_or("").trim();
        return Err(backend(format!("exited with {status}: {said}"), false));
    }
    String::from_utf8(stdout).map_err(|_| backend("wrote output that is not UTF-8".into(), false))
}

/// `rgb` as a binary PPM (P6).
fn ppm(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let mut out = format!("P6\n{width} {height}\n255\n").into_bytes();
    out.extend_from_slice(rgb);
    out
}

/// One word row of the TSV.
struct Word<'a> {
    line: (u32, u32, u32),
    left: f32,
    top: f32,
    right: f32,
    bottom: f32,
    confidence: f32,
    text: &'a str,
}

/// The lines of Tesseract's TSV output, in its order, on a page of `width` × `height`.
fn lines_of_tsv(tsv: &str, width: u32, height: u32) -> Vec<OcrLine> {
    let words = tsv.lines().skip(1).filter_map(|row| {
        let f: Vec<&str> = row.split('\t').collect();
        if f.len() < 12 || f[0] != "5" {
            return None;
        }
        let n = |i: usize| f[i].trim().parse::<f32>().ok();
        let text = f[11].trim();
        if text.is_empty() {
            return None;
        }
        let (left, top, w, h, conf) = (n(6)?, n(7)?, n(8)?, n(9)?, n(10)?);
        Some(Word {
            line: (f[2].parse().ok()?, f[3].parse().ok()?, f[4].parse().ok()?),
            left,
            top,
            right: left + w,
            bottom: top + h,
            confidence: (conf / 100.0).clamp(0.0, 1.0),
            text,
        })
    });
    let mut lines: Vec<(Vec<Word<'_>>, (u32, u32, u32))> = Vec::new();
    for word in words {
        match lines.last_mut() {
            Some((group, key)) if *key == word.line => group.push(word),
            _ => {
                let key = word.line;
                lines.push((vec![word], key));
            }
        }
    }
    lines
        .into_iter()
        .filter_map(|(words, _)| line_of(&words, width as f32, height as f32))
        .collect()
}

/// One line from its words: the text joined as the crate docs say, the union of the boxes
/// (clamped to the page), the mean confidence. `None` when nothing printable is left.
fn line_of(words: &[Word<'_>], width: f32, height: f32) -> Option<OcrLine> {
    let mut text = String::new();
    for word in words {
        let clean: String = word.text.chars().filter(|c| !c.is_control()).collect();
        if clean.is_empty() {
            continue;
        }
        let spaced = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        if spaced(text.chars().last()) && spaced(clean.chars().next()) {
            text.push(' ');
        }
        text.push_str(&clean);
    }
    if text.trim().is_empty() {
        return None;
    }
    let left = words
        .iter()
        .map(|w| w.left)
        .fold(f32::MAX, f32::min)
        .max(0.0);
    let top = words
        .iter()
        .map(|w| w.top)
        .fold(f32::MAX, f32::min)
        .max(0.0);
    let right = words.iter().map(|w| w.right).fold(0.0, f32::max).min(width);
    let bottom = words
        .iter()
        .map(|w| w.bottom)
        .fold(0.0, f32::max)
        .min(height);
    if !(left < right && top < bottom) {
        return None;
    }
    let confidence = words.iter().map(|w| w.confidence).sum::<f32>() / words.len() as f32;
    Some(OcrLine {
        text: text.trim().to_string(),
        bbox: PixelBox {
            left,
            top,
            right,
            bottom,
        },
        confidence: if confidence.is_finite() {
            confidence
        } else {
            0.0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TSV: &str = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext
1\t1\t0\t0\t0\t0\t0\t0\t800\t600\t-1\t
5\t1\t1\t1\t1\t1\t10\t20\t30\t25\t96.5\t合同
5\t1\t1\t1\t1\t2\t42\t21\t20\t24\t90\t的
5\t1\t1\t1\t1\t3\t70\t20\t40\t25\t80\tABC
5\t1\t1\t1\t1\t4\t115\t20\t30\t25\t70\t123
5\t1\t1\t1\t2\t1\t10\t60\t30\t25\t50\t保修
5\t1\t2\t1\t1\t1\t400\t20\t30\t25\t-1\t \n";

    #[test]
    fn words_are_grouped_into_lines_and_joined_by_script() {
        let lines = lines_of_tsv(TSV, 800, 600);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].text, "合同的ABC 123");
        assert_eq!(
            lines[0].bbox,
            PixelBox {
                left: 10.0,
                top: 20.0,
                right: 145.0,
                bottom: 45.0
            }
        );
        assert!((lines[0].confidence - 0.84125).abs() < 1e-4);
        assert_eq!(lines[1].text, "保修");
    }

    #[test]
    fn boxes_are_clamped_to_the_page() {
        let tsv = "h\n5\t1\t1\t1\t1\t1\t-5\t590\t30\t25\t90\tx\n";
        let lines = lines_of_tsv(tsv, 20, 600);
        assert_eq!(lines[0].bbox.left, 0.0);
        assert_eq!(lines[0].bbox.right, 20.0);
        assert_eq!(lines[0].bbox.bottom, 600.0);
    }

    #[test]
    fn the_orientation_pass_is_read_with_its_confidence() {
        let sure = "Page number: 0\nOrientation in degrees: 270\nRotate: 90\nOrientation confidence: 5.2\n";
        assert_eq!(orientation_of(sure), (90, 5.2));
        assert_eq!(
            orientation_of("Rotate: 45\nOrientation confidence: 3\n"),
            (0, 0.0)
        );
        assert_eq!(orientation_of(""), (0, 0.0));
    }

    #[test]
    fn a_missing_program_makes_reads_unavailable() {
        let engine = Tesseract::new(TesseractConfig {
            program: "/nonexistent/tesseract".into(),
            ..TesseractConfig::default()
        });
        assert!(engine.unavailable().is_some());
        let rgb = [255u8; 3 * 4];
        let image = OcrImage::new(2, 2, &rgb).unwrap();
        match engine.read(&image) {
            Err(OcrError::Unavailable { message, .. }) => {
                assert!(message.contains("tesseract-ocr"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
