//! The OCR contract suite against every engine zhiku has: each test says SKIPPED when its
//! engine cannot run here (`scripts/setup-ocr.sh` installs them), and fails instead when
//! `ZHIKU_REQUIRE_OCR=1` (as `scripts/check` sets it).

use zhiku_domain::ports::Ocr;

fn required() -> bool {
    std::env::var("ZHIKU_REQUIRE_OCR").is_ok_and(|v| v == "1")
}

mod tesseract {
    use super::*;
    use zhiku_adapters_tesseract::{Tesseract, TesseractConfig};

    fn engine(_: ()) -> Option<Box<dyn Ocr>> {
        let engine = Tesseract::new(TesseractConfig {
            languages: "chi_sim+chi_tra+eng".into(),
            ..TesseractConfig::default()
        });
        match engine.unavailable() {
            None => Some(Box::new(engine)),
            Some(why) if required() => panic!("ZHIKU_REQUIRE_OCR=1 but {why}"),
            Some(why) => {
                zhiku_tests::contract::notice(&format!("SKIPPED tesseract OCR contract: {why}"));
                None
            }
        }
    }

    zhiku_tests::ocr_contract!(engine);
}

mod ppocr {
    use super::*;
    use zhiku_adapters_ppocr::{PpOcr, PpOcrConfig};

    /// The folder `scripts/fetch-ocr-models.sh` filled: `ZHIKU_TEST_PPOCR_DIR`, else its
    /// default, `~/.cache/zhiku/models/ppocr`.
    fn folder() -> std::path::PathBuf {
        match std::env::var_os("ZHIKU_TEST_PPOCR_DIR") {
            Some(dir) if !dir.is_empty() => dir.into(),
            _ => std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/zhiku/models/ppocr"),
        }
    }

    fn engine(_: ()) -> Option<Box<dyn Ocr>> {
        let engine = PpOcr::new(PpOcrConfig::in_folder(folder()));
        match engine.unavailable() {
            None => Some(Box::new(engine)),
            Some(why) if required() => panic!("ZHIKU_REQUIRE_OCR=1 but {why}"),
            Some(why) => {
                zhiku_tests::contract::notice(&format!(
                    "SKIPPED ppocr OCR contract: {why} (or set ZHIKU_TEST_PPOCR_DIR to the folder it filled)"
                ));
                None
            }
        }
    }

    zhiku_tests::ocr_contract!(engine);
}
