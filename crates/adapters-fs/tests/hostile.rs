//! Hostile files (issue 35) through the format extractors: each one is refused with its
//! reason, in bounded time and memory, and never takes the process down.
//!
//! The files are those `scripts/make-hostile-fixtures.py` writes; the tests here build the
//! same shapes in code. One file is measured (peak memory, time) with the `extract` example:
//!
//! ```text
//! python3 scripts/make-hostile-fixtures.py /tmp/hostile
//! /usr/bin/time -v cargo run --release -p zhiku-adapters-fs --example extract -- /tmp/hostile/bomb.docx
//! ```
//!
//! The inputs the fuzzers found (`fuzz/regressions/<target>/`) are replayed here too, so that
//! every test run keeps them fixed without a fuzzing build.

use std::time::{Duration, Instant};

use zhiku_formats::{self as formats, Announced, Format, Limits};

/// The loader's default bounds.
fn limits() -> Limits {
    Limits {
        max_unpacked_bytes: 512 << 20,
        max_text_bytes: 10 << 20,
        max_pages: 10_000,
        max_image_pixels: 50_000_000,
        deadline: Instant::now() + Duration::from_secs(60),
    }
}

fn extract(name: &str, bytes: &[u8]) -> anyhow::Result<formats::Extracted> {
    let extension = name.rsplit('.').next().unwrap_or_default();
    let announced = Format::announced(extension).unwrap_or(Announced::Known(Format::Text));
    let format = formats::detect(announced, bytes)?;
    formats::extract(format, bytes, &limits())
}

/// Every input a fuzzer once found (`fuzz/regressions/<target>/`, the target named after the
/// format) extracts or is refused with a reason: no panic escapes, nothing hangs.
#[test]
fn the_fuzzers_findings_stay_fixed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut replayed = 0;
    for target in std::fs::read_dir(&root).unwrap() {
        let target = target.unwrap().path();
        let format = match target.file_name().and_then(|n| n.to_str()) {
            Some("pdf") => Format::Pdf,
            Some("docx") => Format::Docx,
            Some("pptx") => Format::Pptx,
            Some("epub") => Format::Epub,
            Some("html") => Format::Html,
            Some("sheet_csv") => Format::Csv,
            Some("sheet_xlsx") => Format::Xlsx,
            _ => continue,
        };
        for input in std::fs::read_dir(&target).unwrap() {
            let input = input.unwrap().path();
            let bytes = std::fs::read(&input).unwrap();
            let started = Instant::now();
            let result = formats::extract(format, &bytes, &limits());
            assert!(started.elapsed() < Duration::from_secs(60), "{input:?}");
            if let Err(e) = result {
                assert!(!format!("{e:#}").is_empty(), "{input:?}");
            }
            replayed += 1;
        }
    }
    assert!(
        replayed >= 2,
        "the saved findings are replayed ({replayed})"
    );
}

// ---------------------------------------------------------------------------------------------
// PDF: nesting where the parser reads objects and content (issue 35, High 2)

/// The page every test PDF shows.
const CONTENT: &[u8] = b"BT /F1 24 Tf 72 700 Td (Hello from a packed catalog) Tj ET\n";

fn page(contents: &str, xobjects: &str) -> Vec<u8> {
    format!(
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {contents} \
         /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> \
         /XObject << {xobjects} >> >> >>"
    )
    .into_bytes()
}

fn nested(depth: usize) -> Vec<u8> {
    let mut out = b"[".repeat(depth);
    out.extend(b"]".repeat(depth));
    out
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

fn hex(data: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = data
        .iter()
        .flat_map(|b| format!("{b:02X}").into_bytes())
        .collect();
    out.push(b'>');
    out
}

/// How an object stream's data is written: its bytes and the `/Filter` entry.
type Pack = fn(&[u8]) -> (Vec<u8>, &'static str);

const FLATE: Pack = |d| (zlib(d), "/Filter /FlateDecode");
const PLAIN: Pack = |d| (d.to_vec(), "");
const HEX: Pack = |d| (hex(d), "/Filter /ASCIIHexDecode");
const HEX_FLATE: Pack = |d| (hex(&zlib(d)), "/Filter [/ASCIIHexDecode /FlateDecode]");
/// A zlib stream whose header is broken: the parser recovers it as raw deflate.
const BROKEN_HEADER: Pack = |d| {
    let mut z = zlib(d);
    z[0] = 0x00;
    (z, "/Filter /FlateDecode")
};

/// A PDF 1.5 file as producers write them: the catalog, page tree and page packed in an object
/// stream found through a cross-reference stream; the catalog carries `/Junk` nested `depth`
/// deep. The page shows [`CONTENT`].
fn packed_pdf(depth: usize, pack: Pack) -> Vec<u8> {
    packed_pdf_with(depth, pack, None)
}

/// Encryption with the empty user password (RC4, 128 bits: a key per object number).
struct Crypt {
    writer: pdf_oxide::encryption::EncryptionWriteHandler,
    dict: Vec<u8>,
    /// The object number the object stream's own header gives (the cross-reference says 5).
    header_number: u32,
}

const FILE_ID: &[u8; 16] = b"0123456789abcdef";

fn rc4(header_number: u32) -> Crypt {
    use pdf_oxide::encryption::{Algorithm, EncryptDictBuilder, EncryptionWriteHandler};
    let dict = EncryptDictBuilder::new(Algorithm::Rc4_128)
        .user_password(b"")
        .owner_password(b"owner")
        .build(FILE_ID)
        .unwrap();
    let writer = EncryptionWriteHandler::new(
        b"",
        &dict.owner_password,
        dict.permissions,
        FILE_ID,
        Algorithm::Rc4_128,
        true,
    )
    .unwrap();
    let dict = pdf_oxide::writer::ObjectSerializer::new().serialize(&dict.to_object());
    Crypt {
        writer,
        dict,
        header_number,
    }
}

/// [`packed_pdf`], encrypted when `crypt` is given.
fn packed_pdf_with(depth: usize, pack: Pack, crypt: Option<&Crypt>) -> Vec<u8> {
    let mut catalog = b"<< /Type /Catalog /Pages 2 0 R /Junk ".to_vec();
    catalog.extend(nested(depth));
    catalog.extend(b" >>");
    let packed: Vec<(u32, Vec<u8>)> = vec![
        (1, catalog),
        (2, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec()),
        (3, page("4 0 R", "")),
    ];
    let (mut pairs, mut body) = (Vec::new(), Vec::new());
    for (num, obj) in &packed {
        pairs.push(format!("{num} {}", body.len()));
        body.extend(obj);
        body.push(b'\n');
    }
    let header = format!("{}\n", pairs.join(" ")).into_bytes();
    let (data, filter) = pack(&[header.clone(), body].concat());

    let encrypt = |data: &[u8], number: u32| match crypt {
        Some(c) => c.writer.encrypt_stream(data, number, 0),
        None => data.to_vec(),
    };
    let content = encrypt(CONTENT, 4);
    let data = encrypt(&data, 5);
    let mut out = b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = std::collections::BTreeMap::new();
    offsets.insert(4, out.len());
    out.extend(format!("4 0 obj\n<< /Length {} >>\nstream\n", content.len()).as_bytes());
    out.extend(&content);
    out.extend(b"\nendstream\nendobj\n");
    offsets.insert(5, out.len());
    let number = crypt.map_or(5, |c| c.header_number);
    out.extend(
        format!(
            "{number} 0 obj\n<< /Type /ObjStm /N {} /First {} {filter} /Length {} >>\nstream\n",
            packed.len(),
            header.len(),
            data.len()
        )
        .as_bytes(),
    );
    out.extend(&data);
    out.extend(b"\nendstream\nendobj\n");
    let mut trailer = String::new();
    if let Some(c) = crypt {
        offsets.insert(7, out.len());
        out.extend(b"7 0 obj\n");
        out.extend(&c.dict);
        out.extend(b"\nendobj\n");
        let id: String = FILE_ID.iter().map(|b| format!("{b:02X}")).collect();
        trailer = format!("/Encrypt 7 0 R /ID [<{id}> <{id}>]");
    }
    offsets.insert(6, out.len());
    let mut rows = vec![0u8, 0, 0, 0, 0, 0xFF, 0xFF];
    for index in 0..packed.len() as u16 {
        rows.push(2);
        rows.extend(5u32.to_be_bytes());
        rows.extend(index.to_be_bytes());
    }
    for num in offsets.keys() {
        rows.push(1);
        rows.extend((offsets[num] as u32).to_be_bytes());
        rows.extend([0, 0]);
    }
    let xref = zlib(&rows);
    out.extend(
        format!(
            "6 0 obj\n<< /Type /XRef /Size {} /W [1 4 2] /Root 1 0 R {trailer} \
             /Filter /FlateDecode /Length {} >>\nstream\n",
            offsets.len() + 4,
            xref.len()
        )
        .as_bytes(),
    );
    out.extend(&xref);
    out.extend(format!("\nendstream\nendobj\nstartxref\n{}\n%%EOF\n", offsets[&6]).as_bytes());
    out
}

/// A classic PDF of `objects` (numbered from 1, the first the catalog).
fn classic_pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    classic_pdf_hiding(objects, false)
}

/// [`classic_pdf`], the first object written on one line after a `%` when `hide_first` (its
/// cross-reference entry points past the `%`).
fn classic_pdf_hiding(objects: &[Vec<u8>], hide_first: bool) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, obj) in objects.iter().enumerate() {
        if hide_first && i == 0 {
            out.push(b'%');
        }
        offsets.push(out.len());
        out.extend(format!("{} 0 obj ", i + 1).as_bytes());
        out.extend(obj);
        out.extend(b"\nendobj\n");
    }
    let start = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{start}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend(data);
    out.extend(b"\nendstream");
    out
}

/// A one-page PDF whose page content is `content` (compressed) and which draws a form
/// XObject whose content is `form` (compressed).
fn content_pdf(content: &[u8], form: &[u8]) -> Vec<u8> {
    classic_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        page("4 0 R", "/Fm1 5 0 R"),
        stream("/Filter /FlateDecode", &zlib(content)),
        stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Filter /FlateDecode",
            &zlib(form),
        ),
    ])
}

fn refusal(name: &str, bytes: &[u8]) -> String {
    match extract(name, bytes) {
        Ok(e) => panic!("{name} was extracted: {:?}", e.text),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn nesting_in_an_object_stream_is_refused_before_the_parser_reads_it() {
    for (pack, name) in [
        (FLATE, "flate"),
        (PLAIN, "plain"),
        (HEX, "hex"),
        (HEX_FLATE, "hex+flate"),
        (BROKEN_HEADER, "broken zlib header"),
    ] {
        // Shallow, the file reads.
        let text = extract("packed.pdf", &packed_pdf(5, pack))
            .unwrap_or_else(|e| panic!("{name}: {e:#}"))
            .text;
        assert!(
            text.contains("Hello from a packed catalog"),
            "{name}: {text}"
        );
        // 1,000,000 levels deep (2.5 KB compressed) aborted the process: now refused.
        let hostile = packed_pdf(1_000_000, pack);
        let err = refusal("deep-objstm.pdf", &hostile);
        assert!(err.contains("nested deeper"), "{name}: {err}");
    }
    assert!(packed_pdf(1_000_000, FLATE).len() < 3000);
}

#[test]
fn nesting_in_an_encrypted_object_stream_is_refused() {
    // Encrypted with the empty user password (the file opens without one): the object stream
    // is decrypted, then checked.
    let crypt = rc4(5);
    let text = extract("e.pdf", &packed_pdf_with(5, FLATE, Some(&crypt)))
        .unwrap()
        .text;
    assert!(text.contains("Hello from a packed catalog"), "{text}");
    let err = refusal("e.pdf", &packed_pdf_with(1_000_000, FLATE, Some(&crypt)));
    assert!(
        err.contains("nested deeper") && err.contains("object stream"),
        "{err}"
    );
    // The stream's own header names another object than the cross-reference (whose number
    // the parser decrypts with): no decryption the check makes decodes cleanly, so the file
    // is refused rather than read unchecked. Uncompressed, a wrong key cannot be told.
    for pack in [FLATE, PLAIN] {
        let err = refusal("e.pdf", &packed_pdf_with(1_000_000, pack, Some(&rc4(9))));
        assert!(err.contains("encrypted PDF"), "{err}");
    }
}

#[test]
fn an_object_stream_unpacks_only_within_the_unpacking_bound() {
    // 64 MiB of spaces in a 64 KB object stream, against a 16 MiB bound.
    let bomb: Pack = |d| {
        let mut padded = d.to_vec();
        padded.resize(64 << 20, b' ');
        (zlib(&padded), "/Filter /FlateDecode")
    };
    let pdf = packed_pdf(5, bomb);
    let mut limits = limits();
    limits.max_unpacked_bytes = 16 << 20;
    let err = formats::extract(Format::Pdf, &pdf, &limits).unwrap_err();
    assert!(format!("{err:#}").contains("max_unpacked_bytes"), "{err:#}");
}

#[test]
fn nesting_in_page_content_and_forms_is_refused_before_the_page_is_read() {
    let deep_tj = [
        b"BT /F1 24 Tf 72 700 Td ".to_vec(),
        nested(1_000_000),
        b" TJ ET".to_vec(),
    ]
    .concat();
    let plain = b"BT /F1 12 Tf 72 600 Td (in a form) Tj ET".to_vec();
    let text = extract("c.pdf", &content_pdf(CONTENT, &plain))
        .unwrap()
        .text;
    assert!(text.contains("Hello"), "{text}");
    let err = refusal("c.pdf", &content_pdf(&deep_tj, &plain));
    assert!(err.contains("content of page 1"), "{err}");
    let err = refusal("c.pdf", &content_pdf(CONTENT, &deep_tj));
    assert!(err.contains("form drawn on page 1"), "{err}");
}

#[test]
fn nesting_hidden_from_a_front_to_back_reading_is_refused() {
    // The catalog written after a `%` on its line: the cross-reference offset points past the
    // `%`, where the parser reads an object a front-to-back reading takes for a comment.
    let mut catalog = b"<< /Type /Catalog /Pages 2 0 R /Junk ".to_vec();
    catalog.extend(nested(1_000_000));
    catalog.extend(b" >>");
    let objects = [
        catalog,
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        page("4 0 R", ""),
        stream("", CONTENT),
    ];
    let err = refusal("hidden.pdf", &classic_pdf_hiding(&objects, true));
    assert!(err.contains("nested deeper"), "{err}");
}

#[test]
fn real_pdfs_still_extract() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "pdf") {
            let name = path.to_string_lossy().to_string();
            let bytes = std::fs::read(&path).unwrap();
            match extract(&name, &bytes) {
                Ok(e) => assert!(!e.text.trim().is_empty(), "{name}"),
                Err(e) => assert!(
                    name.ends_with("encrypted.pdf") && format!("{e:#}").contains("encrypted"),
                    "{name}: {e:#}"
                ),
            }
            seen += 1;
        }
    }
    assert!(seen >= 4);
}

// ---------------------------------------------------------------------------------------------
// HTML and Office: bounds applied before the expensive step (issue 35, Medium)

#[test]
fn a_tag_of_200000_attributes_is_refused_before_the_tokenizer_sees_it() {
    // The tokenizer checks each attribute against the tag's earlier ones: 35 s for this.
    let attrs: Vec<String> = (0..200_000).map(|i| format!("a{i}=\"\"")).collect();
    let page = format!(
        "<!DOCTYPE html><html><head><title>t</title></head><body><p {}>text</p></body></html>",
        attrs.join(" ")
    );
    let err = format!(
        "{:#}",
        extract("many-attributes.html", page.as_bytes()).unwrap_err()
    );
    assert!(err.contains("more than 1024 attributes"), "{err}");
}

/// A docx whose `word/document.xml` is `mib` MiB of paragraphs of text runs.
fn text_run_docx(mib: usize) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(9));
    zip.start_file("word/document.xml", options).unwrap();
    zip.write_all(
        b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><w:document \
          xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>",
    )
    .unwrap();
    let run = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "a".repeat(65_000)).repeat(16);
    for _ in 0..mib {
        zip.write_all(run.as_bytes()).unwrap();
    }
    zip.write_all(b"</w:body></w:document>").unwrap();
    zip.finish().unwrap().into_inner()
}

#[test]
fn a_docx_deflate_bomb_stops_at_the_bound_of_its_tree() {
    // 64 MiB of text runs in some 80 KB: read as a stream, the part is refused once its tree
    // holds 4 × max_text_bytes of text, not after it is unpacked (and copied) whole.
    let bomb = text_run_docx(64);
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    let err = format!("{:#}", extract("bomb.docx", &bomb).unwrap_err());
    assert!(
        err.contains("word/document.xml holds more than 41943040 bytes of text"),
        "{err}"
    );
}
