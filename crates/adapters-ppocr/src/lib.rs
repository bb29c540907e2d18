//! [`PpOcr`]: the [`Ocr`] port over PP-OCR, PaddleOCR's three small models, run by ONNX
//! Runtime.
//!
//! A page is read in four steps (see `pipeline` for how its orientation is found):
//!
//! 1. **detection** (DB): a text-probability map of the page, its regions turned into rotated
//!    line boxes; the page is bounded to 2,000 px on its long side first, and the model input
//!    has its short side grown to 736 px, in multiples of 32;
//! 2. **line direction**: each line cut out (a perspective cut, so a skewed line comes out
//!    level), the classifier telling which are upside down;
//! 3. **recognition** (SVTR, CTC): each line at height 48, in batches of six lines of about
//!    the same aspect ratio, read with the dictionary the recogniser carries in its ONNX
//!    metadata; lines read with a confidence under [`PpOcrConfig::min_confidence`] are dropped;
//! 4. **reading order**: an XY-cut over the boxes on the upright page, so two columns are read
//!    one after the other.
//!
//! The pre-processing follows what the models were trained with (OpenCV's conventions): BGR
//! channels, `(x / 255 − 0.5) / 0.5`, bilinear resizing without anti-aliasing.
//!
//! The models are PP-OCRv6 small (detection and recognition, Chinese, Traditional included,
//! and English) and the PP-OCR mobile v2.0 direction classifier, as the `rapidocr` 3.10.0
//! wheel ships them (Apache-2.0); the runtime is the shared library of the `onnxruntime`
//! wheel (1.32.0; any from 1.23 on works, 1.22 aborts), loaded at run time by `ort`, so
//! nothing is downloaded or compiled at build time. `scripts/fetch-ocr-models.sh` puts both
//! in one folder, [`PpOcrConfig::in_folder`]. The runtime's environment is process-wide: the
//! first library loaded stays (see `runtime`).
//!
//! The models load on the first page read, under a lock that one page at a time holds (each
//! engine runs its models with [`PpOcrConfig::threads`] threads; read pages in parallel with
//! one engine per worker). Missing files make every read fail fast with
//! [`OcrError::Unavailable`], saying what is missing and how to get it; so does a library or a
//! model that does not load.

mod det;
mod geometry;
mod onnx_meta;
mod order;
mod pipeline;
mod raster;
mod rec;
mod runtime;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use zhiku_domain::ports::{Ocr, OcrError, OcrImage, OcrLine, OcrPage, PixelBox};

use crate::pipeline::{Files, Pipeline};
use crate::raster::Raster;
use crate::runtime::RuntimeError;

/// The adapter's name in errors.
const ADAPTER: &str = "ppocr";

/// The detection model's file name.
pub const DET_MODEL: &str = "PP-OCRv6_det_small.onnx";
/// The recognition model's file name (its dictionary is in its metadata).
pub const REC_MODEL: &str = "PP-OCRv6_rec_small.onnx";
/// The line direction classifier's file name.
pub const CLS_MODEL: &str = "ch_ppocr_mobile_v2.0_cls_mobile.onnx";
/// The ONNX Runtime library's file name in the models' folder.
pub const RUNTIME_LIBRARY: &str = "libonnxruntime.so.1.32.0";

/// How to get what is missing.
const FIX: &str = "run scripts/fetch-ocr-models.sh (it puts the models and ONNX Runtime in ~/.cache/zhiku/models/ppocr), or set ocr_models and ocr_runtime";

/// Which files the engine reads and how it runs them.
#[derive(Debug, Clone, PartialEq)]
pub struct PpOcrConfig {
    /// The folder of the three models ([`DET_MODEL`], [`REC_MODEL`], [`CLS_MODEL`]).
    pub models: PathBuf,
    /// The ONNX Runtime shared library (`libonnxruntime.so.*`).
    pub runtime: PathBuf,
    /// Threads each model runs with (intra-op); 1 keeps a page on one core.
    pub threads: usize,
    /// Lines read with a lower confidence (0 to 1) are dropped.
    pub min_confidence: f32,
}

impl PpOcrConfig {
    /// The models and the runtime library ([`RUNTIME_LIBRARY`]) in one folder, as
    /// `scripts/fetch-ocr-models.sh` leaves them; one thread, lines under 0.5 dropped.
    pub fn in_folder(models: impl Into<PathBuf>) -> Self {
        let models = models.into();
        Self {
            runtime: models.join(RUNTIME_LIBRARY),
            models,
            threads: 1,
            min_confidence: DEFAULT_MIN_CONFIDENCE,
        }
    }
}

/// PaddleOCR's and RapidOCR's default: lines read less surely are mostly noise.
const DEFAULT_MIN_CONFIDENCE: f32 = 0.5;

/// The models' state: not loaded yet, loaded, or failed to load (and why).
#[derive(Debug)]
enum State {
    NotLoaded,
    Loaded(Box<Pipeline>),
    Failed(String),
}

/// PP-OCR as an [`Ocr`] engine.
#[derive(Debug)]
pub struct PpOcr {
    config: PpOcrConfig,
    name: String,
    /// Why the engine cannot run, when the files are missing.
    unavailable: Option<String>,
    state: Mutex<State>,
}

impl PpOcr {
    /// An engine of `config`. The files are looked for now and loaded on the first read;
    /// what is missing is told by every read (see the crate docs).
    pub fn new(config: PpOcrConfig) -> Self {
        let name = name_of(&config);
        let unavailable = missing(&config);
        Self {
            config,
            name,
            unavailable,
            state: Mutex::new(State::NotLoaded),
        }
    }

    /// Why the engine cannot run, if a file it needs is missing.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Loads the models now rather than on the first read; what a read would say when they
    /// do not load.
    pub fn load(&self) -> Result<(), OcrError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.loaded(&mut state).map(|_| ())
    }

    fn loaded<'s>(&self, state: &'s mut State) -> Result<&'s mut Pipeline, OcrError> {
        let unavailable = |message: String| OcrError::Unavailable {
            adapter: ADAPTER,
            message,
        };
        if let Some(why) = &self.unavailable {
            return Err(unavailable(why.clone()));
        }
        if matches!(state, State::NotLoaded) {
            let models = &self.config.models;
            let files = Files {
                runtime: &self.config.runtime,
                det: &models.join(DET_MODEL),
                cls: &models.join(CLS_MODEL),
                rec: &models.join(REC_MODEL),
            };
            *state = match Pipeline::load(files, self.config.threads, self.config.min_confidence) {
                Ok(pipeline) => State::Loaded(Box::new(pipeline)),
                Err(RuntimeError::Unavailable(why) | RuntimeError::Run(why)) => {
                    State::Failed(format!("{why}: {FIX}"))
                }
            };
        }
        match state {
            State::Loaded(pipeline) => Ok(pipeline),
            State::Failed(why) => Err(unavailable(why.clone())),
            State::NotLoaded => Err(unavailable("the models were not loaded".into())),
        }
    }
}

impl Ocr for PpOcr {
    fn name(&self) -> &str {
        &self.name
    }

    fn read(&self, image: &OcrImage<'_>) -> Result<OcrPage, OcrError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let pipeline = self.loaded(&mut state)?;
        let reading = pipeline.read(&Raster::of(image)).map_err(|e| match e {
            RuntimeError::Unavailable(message) => OcrError::Unavailable {
                adapter: ADAPTER,
                message,
            },
            RuntimeError::Run(message) => OcrError::Backend {
                adapter: ADAPTER,
                source: message.into(),
                temporary: false,
            },
        })?;
        Ok(OcrPage {
            rotation: reading.rotation,
            width: reading.width,
            height: reading.height,
            lines: reading
                .lines
                .into_iter()
                .map(|l| OcrLine {
                    text: l.text,
                    bbox: PixelBox {
                        left: l.bounds[0],
                        top: l.bounds[1],
                        right: l.bounds[2],
                        bottom: l.bounds[3],
                    },
                    confidence: l.confidence,
                })
                .collect(),
        })
    }
}

/// The engine's name: models, runtime version (from the library's file name), and the
/// confidence floor when it is not the default.
fn name_of(config: &PpOcrConfig) -> String {
    let version = runtime_version(&config.runtime).unwrap_or_else(|| "unknown".into());
    let mut name = format!("ppocr-v6-small:ort-{version}");
    if config.min_confidence != DEFAULT_MIN_CONFIDENCE {
        name.push_str(&format!(":min-confidence-{}", config.min_confidence));
    }
    name
}

/// The version in the library's file name (`libonnxruntime.so.1.32.0`), after symbolic links.
fn runtime_version(library: &Path) -> Option<String> {
    let real = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_path_buf());
    let file = real.file_name()?.to_str()?;
    let version = file.split_once(".so.")?.1;
    (!version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .then(|| version.to_string())
}

/// What the engine lacks among its files, with the fix; `None` when all are there.
fn missing(config: &PpOcrConfig) -> Option<String> {
    let mut lacking: Vec<String> = [DET_MODEL, REC_MODEL, CLS_MODEL]
        .iter()
        .map(|f| config.models.join(f))
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if !config.runtime.is_file() {
        lacking.push(format!("{} (ONNX Runtime)", config.runtime.display()));
    }
    (!lacking.is_empty()).then(|| format!("PP-OCR lacks {}: {FIX}", lacking.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_make_reads_unavailable_with_the_fix() {
        let engine = PpOcr::new(PpOcrConfig::in_folder("/nonexistent/ppocr"));
        let why = engine.unavailable().unwrap();
        assert!(
            why.contains(DET_MODEL) && why.contains("libonnxruntime"),
            "{why}"
        );
        assert_eq!(engine.name(), "ppocr-v6-small:ort-1.32.0");
        let rgb = [255u8; 3 * 4];
        let image = OcrImage::new(2, 2, &rgb).unwrap();
        match engine.read(&image) {
            Err(OcrError::Unavailable { message, .. }) => {
                assert!(message.contains("scripts/fetch-ocr-models.sh"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(engine.load().is_err());
    }

    #[test]
    fn the_name_tells_the_runtime_version_and_a_changed_floor() {
        let mut config = PpOcrConfig::in_folder("/m");
        config.runtime = "/opt/libonnxruntime.so.1.23.2".into();
        config.min_confidence = 0.3;
        assert_eq!(
            name_of(&config),
            "ppocr-v6-small:ort-1.23.2:min-confidence-0.3"
        );
        config.runtime = "/opt/libonnxruntime.so".into();
        assert_eq!(runtime_version(&config.runtime), None);
    }

    #[test]
    fn a_file_that_is_no_runtime_library_is_unavailable_not_a_panic() {
        // Every file exists, but none is what it claims to be.
        let dir = std::env::temp_dir().join(format!("zhiku-ppocr-fake-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in [DET_MODEL, REC_MODEL, CLS_MODEL, RUNTIME_LIBRARY] {
            std::fs::write(dir.join(f), b"not a model").unwrap();
        }
        let engine = PpOcr::new(PpOcrConfig::in_folder(&dir));
        assert_eq!(engine.unavailable(), None);
        let rgb = [255u8; 3 * 4];
        let image = OcrImage::new(2, 2, &rgb).unwrap();
        let result = engine.read(&image);
        std::fs::remove_dir_all(&dir).unwrap();
        match result {
            Err(OcrError::Unavailable { message, .. }) => {
                assert!(message.contains("fetch-ocr-models"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
