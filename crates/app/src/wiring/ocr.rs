//! The OCR engine that reads scans and pictures, built where the extractors run: in each
//! extraction worker process (from the arguments [`worker_args`] gives it, taken back by
//! [`take_worker_args`]), or in this process for a library user that parses in process.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use zhiku_adapters_fs::worker::OcrFactory;
use zhiku_adapters_ppocr::{PpOcr, PpOcrConfig};
use zhiku_adapters_tesseract::{Tesseract, TesseractConfig};
use zhiku_domain::ports::Ocr;

use crate::config::{OcrKind, OcrSettings};

/// The engine of `settings`, or `None` when OCR is off. An engine that cannot run (program
/// or languages missing) is still returned: each file it would read is reported with why.
pub fn engine(settings: &OcrSettings) -> Option<Arc<dyn Ocr>> {
    match settings.kind {
        OcrKind::Off => None,
        OcrKind::Tesseract => Some(Arc::new(Tesseract::new(TesseractConfig {
            program: resolve(&settings.program),
            languages: settings.languages.clone(),
            timeout: Duration::from_secs(settings.page_seconds),
        }))),
        OcrKind::Ppocr => Some(Arc::new(PpOcr::new(ppocr_config(settings)))),
    }
}

/// The PP-OCR engine's files: the models' folder and the runtime library, absolute (the
/// extraction workers may not share this process's working folder's meaning).
fn ppocr_config(settings: &OcrSettings) -> PpOcrConfig {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut config = PpOcrConfig::in_folder(absolute(&settings.models));
    if let Some(runtime) = &settings.runtime {
        config.runtime = absolute(runtime);
    }
    config
}

/// The arguments that tell an extraction worker its engine (the worker's environment is
/// cleared, so the program is looked up on this process's `PATH` here).
pub fn worker_args(settings: &OcrSettings) -> Vec<OsString> {
    let mut args = engine_args(settings);
    if let Some(pdfium) = &settings.pdfium {
        let absolute = std::path::absolute(pdfium).unwrap_or_else(|_| pdfium.clone());
        args.extend(["--pdfium".into(), absolute.into_os_string()]);
    }
    args
}

/// Names the PDFium library of `settings` for this process's drawings of PDF pages.
pub fn use_pdfium(settings: &OcrSettings) {
    if let Some(pdfium) = &settings.pdfium {
        let absolute = std::path::absolute(pdfium).unwrap_or_else(|_| pdfium.clone());
        zhiku_adapters_fs::worker::use_pdfium(absolute);
    }
}

fn engine_args(settings: &OcrSettings) -> Vec<OsString> {
    match settings.kind {
        OcrKind::Off => Vec::new(),
        OcrKind::Tesseract => vec![
            "--ocr".into(),
            "tesseract".into(),
            "--ocr-program".into(),
            resolve(&settings.program).into_os_string(),
            "--ocr-languages".into(),
            settings.languages.clone().into(),
            "--ocr-page-seconds".into(),
            settings.page_seconds.to_string().into(),
        ],
        OcrKind::Ppocr => {
            let config = ppocr_config(settings);
            vec![
                "--ocr".into(),
                "ppocr".into(),
                "--ocr-models".into(),
                config.models.into_os_string(),
                "--ocr-runtime".into(),
                config.runtime.into_os_string(),
            ]
        }
    }
}

/// Takes the OCR arguments of [`worker_args`] out of a worker's arguments: the factory of
/// its engine (built on its first scan), and the arguments left for the worker loop.
pub fn take_worker_args(args: Vec<String>) -> Result<(Option<OcrFactory>, Vec<String>)> {
    let mut rest = Vec::new();
    let mut settings = OcrSettings {
        kind: OcrKind::Off,
        languages: String::new(),
        program: String::new(),
        page_seconds: 60,
        models: PathBuf::new(),
        runtime: None,
        pdfium: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| anyhow!("the worker argument {arg} needs a value"))
        };
        match arg.as_str() {
            "--ocr" => match value()?.as_str() {
                "tesseract" => settings.kind = OcrKind::Tesseract,
                "ppocr" => settings.kind = OcrKind::Ppocr,
                other => bail!("unknown OCR engine {other:?}"),
            },
            "--ocr-program" => settings.program = value()?,
            "--ocr-languages" => settings.languages = value()?,
            "--ocr-models" => settings.models = value()?.into(),
            "--ocr-runtime" => settings.runtime = Some(value()?.into()),
            "--pdfium" => zhiku_adapters_fs::worker::use_pdfium(value()?.into()),
            "--ocr-page-seconds" => {
                settings.page_seconds = value()?
                    .parse()
                    .map_err(|_| anyhow!("--ocr-page-seconds needs a number"))?
            }
            _ => rest.push(arg),
        }
    }
    let factory: Option<OcrFactory> = match settings.kind {
        OcrKind::Off => None,
        OcrKind::Tesseract | OcrKind::Ppocr => Some(Box::new(move || {
            engine(&settings).ok_or_else(|| anyhow!("OCR is off"))
        })),
    };
    Ok((factory, rest))
}

/// `program` as a path: a name without a slash is looked up on `PATH`; what is not found is
/// left as given (the engine then says it cannot run it).
fn resolve(program: &str) -> PathBuf {
    if program.contains('/') {
        return PathBuf::from(program);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
        .unwrap_or_else(|| PathBuf::from(program))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workers_ocr_arguments_read_back() {
        let settings = OcrSettings {
            kind: OcrKind::Tesseract,
            languages: "chi_sim+eng".into(),
            program: "/opt/t/tesseract".into(),
            page_seconds: 7,
            models: PathBuf::new(),
            runtime: None,
            pdfium: None,
        };
        let mut args: Vec<String> = worker_args(&settings)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        args.extend(["--memory-bytes".to_string(), "5".to_string()]);
        let (factory, rest) = take_worker_args(args).unwrap();
        assert!(factory.is_some());
        assert_eq!(rest, ["--memory-bytes", "5"]);
        let off = OcrSettings {
            kind: OcrKind::Off,
            ..settings
        };
        assert!(worker_args(&off).is_empty());
        assert!(take_worker_args(vec!["--ocr".into()]).is_err());
    }

    #[test]
    fn the_workers_ppocr_arguments_are_absolute_paths() {
        let settings = OcrSettings {
            kind: OcrKind::Ppocr,
            languages: String::new(),
            program: String::new(),
            page_seconds: 60,
            models: "/m/ppocr".into(),
            runtime: None,
            pdfium: None,
        };
        let args: Vec<String> = worker_args(&settings)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "--ocr",
                "ppocr",
                "--ocr-models",
                "/m/ppocr",
                "--ocr-runtime",
                "/m/ppocr/libonnxruntime.so.1.32.0"
            ]
        );
        let (factory, rest) = take_worker_args(args).unwrap();
        assert!(factory.is_some() && rest.is_empty());
        let relative = OcrSettings {
            models: "models".into(),
            runtime: Some("lib/libonnxruntime.so".into()),
            ..settings
        };
        let args = worker_args(&relative);
        assert!(Path::new(&args[3]).is_absolute() && Path::new(&args[5]).is_absolute());
        assert!(args[5].to_string_lossy().ends_with("lib/libonnxruntime.so"));
    }
}
