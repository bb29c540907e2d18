//! Reads the OCR bench's page images (`bench/ocr/make_fixtures.py`) with zhiku's PP-OCR or
//! Tesseract adapter and writes the bench's JSONL (`bench/ocr/README.md`), for `score.py`:
//!
//! ```sh
//! cargo run --release -p zhiku --example ocr_pages -- \
//!     FIXTURES OUT.jsonl [--engine ppocr|tesseract] [--models DIR] [--runtime LIBONNXRUNTIME] \
//!     [--threads N] [--conditions clean,table] [--limit N]
//! ```
//!
//! `--models` is the folder `scripts/fetch-ocr-models.sh` filled (its default). The models
//! load before the first page is timed; a page's seconds cover decoding its image and the OCR,
//! as the peers' do; red seals are cleared before OCR as the extractors do
//! (`formats::scan::without_seals`). Engines are named `zhiku-ppocr` and `zhiku-tesseract` in the output.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};
use zhiku_adapters_ppocr::{PpOcr, PpOcrConfig};
use zhiku_adapters_tesseract::{Tesseract, TesseractConfig};
use zhiku_domain::ports::{Ocr, OcrImage};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let mut positional = Vec::new();
    let (mut engine, mut models, mut threads) = ("ppocr".to_string(), None::<PathBuf>, 1usize);
    let mut runtime = None::<PathBuf>;
    let (mut conditions, mut limit) = (None::<Vec<String>>, usize::MAX);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--engine" => engine = value()?,
            "--models" => models = Some(value()?.into()),
            "--runtime" => runtime = Some(value()?.into()),
            "--threads" => threads = value()?.parse()?,
            "--conditions" => conditions = Some(value()?.split(',').map(String::from).collect()),
            "--limit" => limit = value()?.parse()?,
            _ => positional.push(arg),
        }
    }
    let [fixtures, out] = &positional[..] else {
        return Err("usage: ocr_pages FIXTURES OUT.jsonl [--engine ppocr|tesseract] [--models DIR] [--runtime LIB] [--threads N] [--conditions a,b] [--limit N]".into());
    };
    let fixtures = Path::new(fixtures);
    let (ocr, label): (Box<dyn Ocr>, &str) = match engine.as_str() {
        "ppocr" => {
            let folder = models.unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                    .join(".cache/zhiku/models/ppocr")
            });
            let mut config = PpOcrConfig::in_folder(folder);
            config.threads = threads;
            if let Some(runtime) = runtime {
                config.runtime = runtime;
            }
            let engine = PpOcr::new(config);
            let started = Instant::now();
            engine.load()?;
            eprintln!(
                "{}: loaded in {:.2} s",
                engine.name(),
                started.elapsed().as_secs_f64()
            );
            (Box::new(engine), "zhiku-ppocr")
        }
        "tesseract" => {
            let engine = Tesseract::new(TesseractConfig {
                languages: "chi_sim+chi_tra+eng".into(),
                ..TesseractConfig::default()
            });
            if let Some(why) = engine.unavailable() {
                return Err(why.to_string().into());
            }
            (Box::new(engine), "zhiku-tesseract")
        }
        other => return Err(format!("unknown engine {other}").into()),
    };
    let truth = std::io::BufReader::new(std::fs::File::open(fixtures.join("truth.jsonl"))?);
    let mut out = std::io::BufWriter::new(std::fs::File::create(out)?);
    let mut done = 0;
    for record in truth.lines() {
        let page: Value = serde_json::from_str(&record?)?;
        let condition = page["condition"].as_str().unwrap_or_default();
        if conditions
            .as_ref()
            .is_some_and(|c| !c.iter().any(|c| c == condition))
        {
            continue;
        }
        if done == limit {
            break;
        }
        let file = page["image"]["file"]
            .as_str()
            .ok_or("a page without an image")?;
        let number = page["image"]["page"].as_u64().unwrap_or(1);
        let started = Instant::now();
        let (width, height, rgb) = decode(&fixtures.join(file), number)?;
        // As the extractors hand pages to OCR: red seals cleared first.
        let picture = zhiku_formats::scan::PageImage { width, height, rgb };
        let picture = zhiku_formats::scan::without_seals(&picture).unwrap_or(picture);
        let image = OcrImage::new(width, height, &picture.rgb)?;
        let read = ocr.read(&image)?;
        let seconds = started.elapsed().as_secs_f64();
        let lines: Vec<Value> = read
            .lines
            .iter()
            .map(|l| {
                json!({"text": l.text, "confidence": l.confidence,
                       "box": [l.bbox.left, l.bbox.top, l.bbox.right, l.bbox.bottom]})
            })
            .collect();
        eprintln!(
            "{} {file}#{number}: {seconds:.2} s, {} lines, rotation {}",
            page["id"].as_str().unwrap_or_default(),
            lines.len(),
            read.rotation
        );
        let row = json!({"engine": label, "file": file, "page": number,
                         "page_id": page["id"], "size": [read.width, read.height],
                         "rotation": read.rotation, "seconds": seconds, "lines": lines});
        writeln!(out, "{row}")?;
        done += 1;
    }
    Ok(())
}

/// Page `number` (from 1) of the image file `path` as RGB.
fn decode(path: &Path, number: u64) -> Result<(u32, u32, Vec<u8>), Error> {
    let is_tiff = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tif") || e.eq_ignore_ascii_case("tiff"));
    if !is_tiff {
        let rgb = image::open(path)?.to_rgb8();
        return Ok((rgb.width(), rgb.height(), rgb.into_raw()));
    }
    let mut decoder =
        tiff::decoder::Decoder::new(std::io::BufReader::new(std::fs::File::open(path)?))?;
    decoder.seek_to_image(usize::try_from(number - 1)?)?;
    let (width, height) = decoder.dimensions()?;
    let colour = decoder.colortype()?;
    let tiff::decoder::DecodingResult::U8(data) = decoder.read_image()? else {
        return Err(format!("{}: not 8-bit", path.display()).into());
    };
    let rgb = match colour {
        tiff::ColorType::Gray(8) => data.iter().flat_map(|&g| [g, g, g]).collect(),
        tiff::ColorType::RGB(8) => data,
        tiff::ColorType::RGBA(8) => data.chunks(4).flat_map(|p| [p[0], p[1], p[2]]).collect(),
        other => return Err(format!("{}: colour type {other:?}", path.display()).into()),
    };
    Ok((width, height, rgb))
}
