//! The nesting check run before, and beside, the PDF parser.
//!
//! The parser reads arrays and dictionaries recursively, so nesting deep enough overflows the
//! stack of the thread it runs on, and an overflow aborts the process. Nesting can hide in four
//! places, each checked before the parser reads it:
//!
//! - **the file's bytes**, checked before the parser opens the file;
//! - **object streams** (`/Type /ObjStm`: objects packed in a compressed stream), decoded within
//!   [`Limits::max_unpacked_bytes`] and checked before the parser opens the file (it reads the
//!   catalog and page tree from them as it opens);
//! - **page content streams** (the operands of `TJ`, `BDC`, inline images), checked page by page
//!   before the page's text is read, on the bytes the parser decoded;
//! - **form XObjects** the pages draw (their content is read like a page's), found from the page
//!   resources and decoded within the same bound.
//!
//! The measure is what a parse *starting anywhere* could reach ([`Depth`]): the parser is sent
//! to byte offsets the file chooses (cross-reference entries, offsets inside an object stream,
//! text regions found by a byte search in a content stream), and an offset may point inside
//! what a front-to-back reading takes for a string, a comment or a stream's data. So every
//! position is a possible start; `[` and `<` count one level, `]` and `>` close one (a
//! dictionary's `<<` counts two), and strings and comments are followed for every start at
//! once, at linear cost. Real files stay below a few dozen levels; the bound, [`MAX_NESTING`],
//! is far below what the parser's stack holds (it parses 200,000 levels on its 256 MiB stack).
//! Data of binary streams is counted too (a parse may be sent into it): compressed data
//! reaches a few hundred levels at most in a 200 MB file; only raw image data with thousands of
//! `[` or `<` bytes in a row could pass the bound (a file refused with the reason).
//!
//! Object streams are decoded the way the parser decodes them: its filters (FlateDecode with
//! its recovery of damaged data, which the check follows by checking every output a recovery
//! could give; ASCIIHex, ASCII85, LZW, RunLength through the parser's own decoders; its
//! predictors), after decryption with the empty user password when the file is encrypted. An
//! object stream the check cannot decode where the parser might (an image filter on an object
//! stream, an LZW stream whose output could pass the bound) is refused. In an encrypted file
//! the key depends on the object number, which the check reads from the header before the
//! stream and the parser from the cross-reference: a decryption is taken only when
//! FlateDecode's checksum vouches for it, and an object stream with none is refused.

use std::collections::{HashMap, HashSet, VecDeque};

use anyhow::{Result, anyhow, bail};
use pdf_oxide::PdfDocument;
use pdf_oxide::decoders::{
    Ascii85Decoder, AsciiHexDecoder, DecodeParams, LzwDecoder, RunLengthDecoder, StreamDecoder,
};
use pdf_oxide::encryption::EncryptionHandler;
use pdf_oxide::object::{Object, ObjectRef};
use pdf_oxide::parser::parse_object;

use crate::limits::Limits;

/// Deepest nesting a parse may reach, in levels of [`Depth`] (an array counts one, a
/// dictionary two). About 1.3 KB of the parser's stack per level: a few MiB of its 256 MiB.
pub(super) const MAX_NESTING: usize = 4096;

/// Most strings-inside-strings followed at once by [`Depth`] (each costs a word).
const MAX_STRING_LEVELS: usize = 1 << 16;

/// Object streams inside object streams followed at most.
const MAX_CONTAINER_LEVEL: usize = 2;

/// Form XObjects checked at most in one file.
const MAX_FORMS: usize = 100_000;

/// Parsing work (bytes parsed while looking for object streams) allowed per byte of input.
const WORK_PER_BYTE: usize = 16;

/// Flate recovery tries the parser makes: raw deflate from each of these first offsets.
const FLATE_RECOVERY_OFFSETS: usize = 20;

/// Largest output per input byte of the decoders run through the parser's own code (an LZW
/// code of 9 bits can stand for a string of up to 4,096 bytes; a RunLength pair for 128).
const LZW_RATIO: u64 = 4096;
const RUN_LENGTH_RATIO: u64 = 64;

/// The deepest nesting any parse starting anywhere in the bytes fed could reach.
///
/// A parse starting at a byte is in code there; from then on it is in code, in a comment, or
/// in a string `n` parentheses deep. Two parses in the same state at the same byte read on
/// alike, except that the deeper one stays deeper, so one depth per state is kept: one for
/// code (where a new parse may start at any byte, at depth 0), one for a comment, one per
/// string level. In code `[` and `<` open a level and `]` and `>` close one (so `<<` opens
/// two and a hex string `<…>` nets zero; a parser that reads a bracket inside a hex string
/// fails there); strings nest by balanced parentheses with backslash escapes; a comment runs
/// to the end of its line.
#[derive(Debug, Default)]
pub(super) struct Depth {
    code: usize,
    comment: Option<usize>,
    /// The depth of the parses inside a string, outermost string level first.
    strings: VecDeque<usize>,
    escape: bool,
    deepest: usize,
}

impl Depth {
    /// Reads more bytes; fails once a parse could be nested deeper than [`MAX_NESTING`].
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Result<()> {
        for &b in bytes {
            let mut joined = 0usize;
            // The parses inside strings read the byte (all alike: an escape applies to all).
            if self.escape {
                self.escape = false;
            } else if !self.strings.is_empty() {
                match b {
                    b'\\' => self.escape = true,
                    // One level deeper each; the new outermost level is filled below.
                    b'(' => self.strings.push_front(0),
                    b')' => joined = self.strings.pop_front().unwrap_or(0),
                    _ => {}
                }
            }
            // The parse in a comment.
            if let Some(depth) = self.comment
                && (b == b'\n' || b == b'\r')
            {
                joined = joined.max(depth);
                self.comment = None;
            }
            // The parse in code; a new one starts at every byte (depth 0: the least).
            match b {
                b'[' | b'<' => self.code += 1,
                b']' | b'>' => self.code = self.code.saturating_sub(1),
                b'(' => {
                    match self.strings.front_mut() {
                        Some(outermost) => *outermost = (*outermost).max(self.code),
                        None => self.strings.push_front(self.code),
                    }
                    if self.strings.len() > MAX_STRING_LEVELS {
                        bail!("strings nested more than {MAX_STRING_LEVELS} parentheses deep");
                    }
                    self.code = 0;
                }
                b'%' => {
                    self.comment = Some(self.comment.unwrap_or(0).max(self.code));
                    self.code = 0;
                }
                _ => {}
            }
            self.code = self.code.max(joined);
            self.deepest = self.deepest.max(self.code);
            if self.deepest > MAX_NESTING {
                bail!("objects nested deeper than {MAX_NESTING} levels");
            }
        }
        Ok(())
    }
}

/// Checks `bytes` with [`Depth`] (`what` names where they come from, for the message),
/// minding the deadline.
pub(super) fn check_depth(bytes: &[u8], what: &str, limits: &Limits) -> Result<()> {
    let mut depth = Depth::default();
    for chunk in bytes.chunks(1 << 20) {
        limits.check_time()?;
        depth
            .feed(chunk)
            .map_err(|e| anyhow!("damaged PDF: {e}{what}"))?;
    }
    Ok(())
}

/// The checks of one file: what was checked before parsing, and what is left to check while
/// the pages are read.
pub(super) struct Checker<'l> {
    limits: &'l Limits,
    /// Bytes the check may still decode.
    budget: u64,
    /// Decrypts streams, when the file is encrypted and opens with the empty password.
    crypt: Option<EncryptionHandler>,
    /// True when the file is encrypted (whether or not it opens).
    encrypted: bool,
    forms: HashSet<ObjectRef>,
}

impl<'l> Checker<'l> {
    /// Checks the file's bytes and its object streams: after this the parser may open it.
    pub(super) fn before_parsing(bytes: &[u8], limits: &'l Limits) -> Result<Self> {
        check_depth(bytes, "", limits)?;
        let mut checker = Self {
            limits,
            budget: limits.max_unpacked_bytes,
            crypt: None,
            encrypted: false,
            forms: HashSet::new(),
        };
        let found = streams_and_trailers(bytes, limits)?;
        checker.crypt = encryption(bytes, &found, &mut checker.encrypted);
        for f in &found {
            if let Object::Stream { dict, data } = &f.object
                && is_object_stream(dict)
            {
                checker.object_stream(dict, data, header_ref(bytes, f.at), 0)?;
            }
        }
        Ok(checker)
    }

    /// Takes the decryption of the opened document (the parser's own trailer and keys), for
    /// the form XObjects read while its pages are.
    pub(super) fn opened(&mut self, doc: &PdfDocument) {
        if !doc.is_encrypted() {
            return;
        }
        self.encrypted = true;
        let trailer = doc.trailer();
        let Some(dict) = trailer.as_dict() else {
            return;
        };
        let encrypt = match dict.get("Encrypt") {
            Some(Object::Reference(r)) => doc.load_object(*r).ok(),
            Some(other) => Some(other.clone()),
            None => None,
        };
        if let Some(encrypt) = encrypt {
            self.crypt = handler(&encrypt, dict.get("ID"));
        }
    }

    /// Checks page `index` before its text is read: its content, and the form XObjects its
    /// resources hold (and theirs).
    pub(super) fn page(&mut self, doc: &PdfDocument, index: usize) -> Result<()> {
        let what = format!(" in the content of page {}", index + 1);
        if let Ok(content) = doc.get_page_content_data(index) {
            check_depth(&content, &what, self.limits)?;
        }
        // The resources the text extraction reads: the page dictionary's (inherited ones
        // included).
        let mut resources: Vec<Object> = doc
            .get_page(index)
            .ok()
            .and_then(|p| p.as_dict().and_then(|d| d.get("Resources").cloned()))
            .into_iter()
            .collect();
        let mut seen = HashSet::new();
        while let Some(res) = resources.pop() {
            self.limits.check_time()?;
            // A resource dictionary met again (forms share their page's) is read once.
            if let Object::Reference(r) = &res
                && !seen.insert(*r)
            {
                continue;
            }
            let Some(res) = resolve(doc, res) else {
                continue;
            };
            let Some(xobjects) = res
                .as_dict()
                .and_then(|d| d.get("XObject").cloned())
                .and_then(|x| resolve(doc, x))
            else {
                continue;
            };
            let Some(xobjects) = xobjects.as_dict() else {
                continue;
            };
            for value in xobjects.values() {
                let (obj, reference) = match value {
                    Object::Reference(r) => {
                        if !self.forms.insert(*r) {
                            continue;
                        }
                        if self.forms.len() > MAX_FORMS {
                            bail!("PDF with more than {MAX_FORMS} form XObjects: refused");
                        }
                        match doc.load_object(*r) {
                            Ok(obj) => (obj, Some(*r)),
                            Err(_) => continue,
                        }
                    }
                    Object::Stream { .. } => (value.clone(), None),
                    _ => continue,
                };
                let Object::Stream { dict, data } = &obj else {
                    continue;
                };
                if dict.get("Subtype").and_then(Object::as_name) != Some("Form") {
                    continue;
                }
                let what = format!(" in a form drawn on page {}", index + 1);
                let any = |_: &[u8]| true;
                let outputs =
                    match self.decode(dict, data, reference, "a form XObject", &any, false)? {
                        Decoded::Unreadable => continue,
                        Decoded::Undecryptable => {
                            return self
                                .undecryptable(&format!("a form XObject on page {}", index + 1));
                        }
                        Decoded::Outputs(outputs) => outputs,
                    };
                for out in outputs {
                    check_depth(&out, &what, self.limits)?;
                }
                if let Some(res) = dict.get("Resources") {
                    resources.push(res.clone());
                }
            }
        }
        Ok(())
    }

    /// Checks an object stream: every decoding the parser may make of it, and the object
    /// streams inside it.
    fn object_stream(
        &mut self,
        dict: &HashMap<String, Object>,
        data: &[u8],
        reference: Option<ObjectRef>,
        level: usize,
    ) -> Result<()> {
        if level > MAX_CONTAINER_LEVEL {
            bail!("damaged PDF: object streams nested more than {MAX_CONTAINER_LEVEL} deep");
        }
        // The parser reads an object stream only when its header of object numbers and
        // offsets parses: a decryption under the wrong key gives none.
        let first = dict
            .get("First")
            .and_then(Object::as_integer)
            .and_then(|f| usize::try_from(f).ok())
            .unwrap_or(0);
        let count = dict
            .get("N")
            .and_then(Object::as_integer)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        let header = |out: &[u8]| out.get(..first).is_some_and(|h| pairs_parse(h, count));
        // Its object number comes from the header before it, which the file may not write as
        // the cross-reference has it: in an encrypted file only a decoding that a checksum
        // vouches for (FlateDecode's) is taken as the one the parser makes.
        let outputs = match self.decode(dict, data, reference, "an object stream", &header, true)? {
            Decoded::Unreadable => return Ok(()),
            Decoded::Undecryptable => return self.undecryptable("an object stream"),
            Decoded::Outputs(outputs) => outputs,
        };
        for out in outputs {
            check_depth(&out, " in an object stream", self.limits)?;
            for f in streams_and_trailers(&out, self.limits)? {
                if let Object::Stream { dict, data } = &f.object
                    && is_object_stream(dict)
                {
                    self.object_stream(dict, data, None, level + 1)?;
                }
            }
        }
        Ok(())
    }

    /// Refuses an encrypted stream this check could not decode: the parser may hold a key
    /// the check has not (or the stream is damaged).
    fn undecryptable(&self, what: &str) -> Result<()> {
        if self.crypt.is_none() {
            bail!("encrypted PDF (password-protected): cannot be read");
        }
        bail!("encrypted PDF: {what} cannot be decrypted to be checked")
    }

    /// Every decoding the parser may make of a stream.
    ///
    /// Decrypted first when the file is encrypted (under `reference`), else (or when that
    /// gives no clean decoding) as it is. A decoding is clean when every filter read its data
    /// to a proper end and `valid` accepts the result; when there is one, it is the one the
    /// parser makes. Otherwise, in a file that is not encrypted, every output the parser's
    /// recoveries of damaged data could give is returned; in an encrypted file the stream is
    /// [`Decoded::Undecryptable`] (the parser may hold a key this check has not). With
    /// `integrity`, a decryption counts as clean only through FlateDecode (whose checksum a
    /// wrong key does not pass).
    fn decode(
        &mut self,
        dict: &HashMap<String, Object>,
        data: &[u8],
        reference: Option<ObjectRef>,
        what: &str,
        valid: &dyn Fn(&[u8]) -> bool,
        integrity: bool,
    ) -> Result<Decoded> {
        let Some(filters) = filters(dict, what)? else {
            return Ok(Decoded::Unreadable);
        };
        let params = predictor(dict, what)?;
        let vouched = !integrity || filters.contains(&Filter::Flate);
        let mut outputs = Vec::new();
        if let (Some(crypt), Some(r)) = (&self.crypt, reference)
            && let Ok(plain) = crypt.decrypt_stream(data, r.id, u32::from(r.r#gen))
        {
            let (decrypted, clean) = self.run(plain, &filters, params.as_ref(), what)?;
            if clean && vouched && decrypted.iter().all(|o| valid(o)) {
                return Ok(Decoded::Outputs(decrypted));
            }
            outputs.extend(decrypted);
        }
        let (plain, clean) = self.run(data.to_vec(), &filters, params.as_ref(), what)?;
        if clean && (vouched || !self.encrypted) && plain.iter().all(|o| valid(o)) {
            return Ok(Decoded::Outputs(plain));
        }
        if self.encrypted {
            return Ok(Decoded::Undecryptable);
        }
        outputs.extend(plain);
        Ok(Decoded::Outputs(outputs))
    }

    /// Runs `data` through `filters`, then the predictor: every output (charged to the
    /// budget), and whether the decoding was clean (one output, every filter to its end).
    fn run(
        &mut self,
        data: Vec<u8>,
        filters: &[Filter],
        params: Option<&DecodeParams>,
        what: &str,
    ) -> Result<(Vec<Vec<u8>>, bool)> {
        let mut current = vec![data];
        let mut clean = true;
        for &filter in filters {
            let mut next = Vec::new();
            for input in &current {
                self.limits.check_time()?;
                if filter == Filter::Flate {
                    let (outputs, complete) = self.inflate_all(input, what)?;
                    clean &= complete;
                    next.extend(outputs);
                    continue;
                }
                let ratio = match filter {
                    Filter::Lzw => LZW_RATIO,
                    Filter::RunLength => RUN_LENGTH_RATIO,
                    _ => 1,
                };
                if (input.len() as u64).saturating_mul(ratio) > self.budget {
                    bail!(
                        "unsupported PDF: {what} ({} bytes through {filter:?}) could unpack to \
                         more than loader.max_unpacked_bytes: it cannot be checked",
                        input.len()
                    );
                }
                let decoded = match filter {
                    Filter::AsciiHex => AsciiHexDecoder.decode(input),
                    Filter::Ascii85 => Ascii85Decoder.decode(input),
                    Filter::Lzw => LzwDecoder.decode(input),
                    Filter::RunLength | Filter::Flate => RunLengthDecoder.decode(input),
                };
                match decoded {
                    Ok(out) => {
                        self.charge(out.len(), what)?;
                        next.push(out);
                    }
                    Err(_) => clean = false,
                }
            }
            current = next;
        }
        if let Some(params) = params {
            let before = current.len();
            current = current
                .iter()
                .filter_map(|c| pdf_oxide::decoders::decode_predictor(c, params).ok())
                .collect();
            clean &= current.len() == before;
        }
        clean &= current.len() == 1;
        Ok((current, clean))
    }

    fn charge(&mut self, bytes: usize, what: &str) -> Result<()> {
        let bytes = bytes as u64;
        if bytes > self.budget {
            bail!(
                "PDF whose streams ({what}) unpack to more than {} bytes \
                 (loader.max_unpacked_bytes): refused",
                self.limits.max_unpacked_bytes
            );
        }
        self.budget -= bytes;
        Ok(())
    }

    /// Every output the parser's FlateDecode may give for `input`: the zlib stream's, or, when
    /// it is damaged, also what each of the parser's recoveries would give (raw deflate from
    /// each of the first bytes, the header mended).
    fn inflate_all(&mut self, input: &[u8], what: &str) -> Result<(Vec<Vec<u8>>, bool)> {
        if input.is_empty() {
            return Ok((vec![Vec::new()], true));
        }
        let (out, complete) = self.inflate(input, true, what)?;
        if complete {
            return Ok((vec![out], true));
        }
        let mut outputs = vec![out];
        for offset in 0..FLATE_RECOVERY_OFFSETS.min(input.len()) {
            outputs.push(self.inflate(&input[offset..], false, what)?.0);
        }
        if input.len() >= 2 && input[0] & 0x0F != 8 {
            let mut mended = input.to_vec();
            mended[0] = (input[0] & 0xF0) | 0x08;
            outputs.push(self.inflate(&mended, true, what)?.0);
        }
        outputs.retain(|o| !o.is_empty());
        Ok((outputs, false))
    }

    /// Inflates `input` within the budget: what it gives, and whether the stream ended
    /// properly (a damaged or cut stream gives what came before the damage).
    fn inflate(&mut self, input: &[u8], zlib: bool, what: &str) -> Result<(Vec<u8>, bool)> {
        let mut inflater = flate2::Decompress::new(zlib);
        let mut out: Vec<u8> = Vec::new();
        let mut since_check = 0usize;
        loop {
            if out.len() == out.capacity() {
                out.reserve(64 << 10);
            }
            let (read, written) = (inflater.total_in(), inflater.total_out());
            let at = usize::try_from(read).map_or(input.len(), |r| r.min(input.len()));
            let status =
                inflater.decompress_vec(&input[at..], &mut out, flate2::FlushDecompress::None);
            let grown = usize::try_from(inflater.total_out() - written).unwrap_or(usize::MAX);
            self.charge(grown, what)?;
            since_check += grown;
            if since_check > 16 << 20 {
                since_check = 0;
                self.limits.check_time()?;
            }
            match status {
                Ok(flate2::Status::StreamEnd) => return Ok((out, true)),
                Ok(_) if inflater.total_in() == read && grown == 0 => return Ok((out, false)),
                Ok(_) => {}
                Err(_) => return Ok((out, false)),
            }
        }
    }
}

/// What [`Checker::decode`] makes of a stream.
enum Decoded {
    /// The parser cannot decode it either (an unknown filter): it never reads it.
    Unreadable,
    /// Encrypted, and no decryption this check can make decodes cleanly.
    Undecryptable,
    /// Every decoding the parser may make.
    Outputs(Vec<Vec<u8>>),
}

/// True when `header` (an object stream's data before `/First`) holds `count` pairs of
/// integers, as the parser reads them (object number, offset).
fn pairs_parse(header: &[u8], count: usize) -> bool {
    let mut rest = header;
    let integer = |rest: &mut &[u8]| -> bool {
        let skip = rest
            .iter()
            .take_while(|b| matches!(b, 0 | 9 | 10 | 12 | 13 | 32))
            .count();
        *rest = &rest[skip..];
        // A negative number does not parse as the parser reads these.
        let sign = usize::from(rest.first() == Some(&b'+'));
        let digits = rest[sign..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        *rest = &rest[sign + digits..];
        digits > 0
    };
    (0..count).all(|_| integer(&mut rest) && integer(&mut rest))
}

/// A stream filter the check decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    Flate,
    AsciiHex,
    Ascii85,
    Lzw,
    RunLength,
}

/// The filters of a stream dictionary, as the parser reads them: `None` when one is unknown
/// (the parser cannot decode the stream: it never reads it). Image filters cannot be undone
/// here; on a stream read as objects or content they are refused.
fn filters(dict: &HashMap<String, Object>, what: &str) -> Result<Option<Vec<Filter>>> {
    let names: Vec<&str> = match dict.get("Filter") {
        Some(Object::Name(n)) => vec![n.as_str()],
        Some(Object::Array(a)) => a.iter().filter_map(Object::as_name).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for name in names {
        out.push(match name.to_ascii_lowercase().as_str() {
            "flatedecode" | "fl" => Filter::Flate,
            "asciihexdecode" | "ahx" => Filter::AsciiHex,
            "ascii85decode" | "a85" => Filter::Ascii85,
            "lzwdecode" | "lzw" => Filter::Lzw,
            "runlengthdecode" | "rl" => Filter::RunLength,
            "dctdecode" | "dct" | "ccittfaxdecode" | "ccf" | "jbig2decode" | "jpxdecode"
            | "brotlidecode" => {
                bail!("unsupported PDF: {what} with the {name} filter cannot be checked")
            }
            _ => return Ok(None),
        });
    }
    Ok(Some(out))
}

/// The predictor of a stream dictionary, as the parser reads it (the first dictionary of
/// `/DecodeParms`), when there is one; absurd row sizes cannot be checked.
fn predictor(dict: &HashMap<String, Object>, what: &str) -> Result<Option<DecodeParams>> {
    let params = match dict.get("DecodeParms") {
        Some(Object::Dictionary(d)) => d,
        Some(Object::Array(a)) => match a.iter().find_map(Object::as_dict) {
            Some(d) => d,
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    let int = |key: &str, default: i64| {
        params
            .get(key)
            .and_then(Object::as_integer)
            .unwrap_or(default)
    };
    let predictor = int("Predictor", 1);
    if predictor == 1 {
        return Ok(None);
    }
    let (columns, colors, bits) = (
        int("Columns", 1),
        int("Colors", 1),
        int("BitsPerComponent", 8),
    );
    let sane = |v: i64, most: i64| (0..=most).contains(&v);
    if !(sane(columns, 1 << 24) && sane(colors, 64) && sane(bits, 32)) {
        bail!("unsupported PDF: {what} with a predictor of {columns} columns cannot be checked");
    }
    // The ranges above make the conversions exact.
    let size = |v: i64| usize::try_from(v).unwrap_or(0);
    Ok(Some(DecodeParams {
        predictor,
        columns: size(columns),
        colors: size(colors),
        bits_per_component: size(bits),
    }))
}

/// True for the dictionary of a stream the parser would read as an object stream: `/N` and
/// `/First` in its ranges, and no `/Type` other than `/ObjStm`.
fn is_object_stream(dict: &HashMap<String, Object>) -> bool {
    let int = |key: &str| dict.get(key).and_then(Object::as_integer);
    let n = int("N").is_some_and(|n| (0..=1_000_000).contains(&n));
    let first = int("First").is_some_and(|f| (0..=10_000_000).contains(&f));
    let typed = match dict.get("Type").and_then(Object::as_name) {
        Some(t) => t == "ObjStm",
        None => true,
    };
    n && first && typed
}

/// An object parsed at a byte offset.
struct Found {
    at: usize,
    object: Object,
    /// True when the bytes before it are the keyword `trailer`.
    trailer: bool,
}

/// The streams (and the dictionaries after a `trailer` keyword) the parser could read in
/// `bytes`: an object parsed at every `<<`, wherever it is (the parser may be sent to any
/// offset). Safe once [`check_depth`] has passed on `bytes`; the parsing work is bounded.
fn streams_and_trailers(bytes: &[u8], limits: &Limits) -> Result<Vec<Found>> {
    let most = bytes
        .len()
        .saturating_mul(WORK_PER_BYTE)
        .saturating_add(1 << 20);
    // A stream without a valid `/Length` is read up to the next `endstream`: past the last
    // one, a failed parse may have searched to the end of the bytes.
    let last_end = rfind(bytes, b"endstream").unwrap_or(0);
    let mut work = 0usize;
    let mut found = Vec::new();
    let mut at = 0usize;
    while let Some(off) = find(&bytes[at..], b"<<") {
        let start = at + off;
        at = start + 1;
        limits.check_time()?;
        let input = &bytes[start..];
        let left = match parse_object(input) {
            Ok((rest, object)) => {
                let trailer = trimmed_end(&bytes[..start]).ends_with(b"trailer");
                let keep = matches!(object, Object::Stream { .. })
                    || (trailer && matches!(object, Object::Dictionary(_)));
                if keep {
                    found.push(Found {
                        at: start,
                        object,
                        trailer,
                    });
                }
                rest.len()
            }
            Err(_) if start > last_end => 0,
            Err(e) => {
                let mut left = 0;
                let _ = e.map(|inner| left = inner.input.len());
                left
            }
        };
        work += input.len().saturating_sub(left);
        if work > most {
            bail!("damaged PDF: too many overlapping objects to check");
        }
    }
    Ok(found)
}

/// The object number of the object starting at `at`: from the `N G obj` before it.
fn header_ref(bytes: &[u8], at: usize) -> Option<ObjectRef> {
    let before = trimmed_end(&bytes[..at]);
    let before = trimmed_end(before.strip_suffix(b"obj")?);
    let (generation, before) = last_number(before)?;
    let (num, _) = last_number(trimmed_end(before))?;
    Some(ObjectRef::new(
        u32::try_from(num).ok()?,
        u16::try_from(generation).ok()?,
    ))
}

fn last_number(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let digits = bytes
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || digits > 10 {
        return None;
    }
    let (rest, number) = bytes.split_at(bytes.len() - digits);
    let number = std::str::from_utf8(number).ok()?.parse().ok()?;
    Some((number, rest))
}

fn trimmed_end(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0 | 0x0C))
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// The decryption the parser will use, from the last trailer (or cross-reference stream)
/// that names an `/Encrypt` dictionary; `encrypted` tells whether there is one at all.
fn encryption(bytes: &[u8], found: &[Found], encrypted: &mut bool) -> Option<EncryptionHandler> {
    let trailer = found.iter().rev().find_map(|f| {
        let dict = f.object.as_dict()?;
        let xref = dict.get("Type").and_then(Object::as_name) == Some("XRef");
        (f.trailer || xref)
            .then_some(dict)?
            .get("Encrypt")
            .map(|e| (dict, e))
    });
    let (trailer, encrypt) = trailer?;
    *encrypted = true;
    let encrypt = match encrypt {
        Object::Reference(r) => object_at_header(bytes, *r)?,
        other => other.clone(),
    };
    handler(&encrypt, trailer.get("ID"))
}

/// The object `r` as written at its last `N G obj` header.
fn object_at_header(bytes: &[u8], r: ObjectRef) -> Option<Object> {
    let header = format!("{} {} obj", r.id, r.r#gen);
    let mut at = None;
    let mut from = 0;
    while let Some(off) = find(&bytes[from..], header.as_bytes()) {
        let start = from + off;
        if start == 0 || !bytes[start - 1].is_ascii_digit() {
            at = Some(start + header.len());
        }
        from = start + 1;
    }
    parse_object(&bytes[at?..]).ok().map(|(_, o)| o)
}

/// A decryption handler opened with the empty user password.
fn handler(encrypt: &Object, id: Option<&Object>) -> Option<EncryptionHandler> {
    let file_id = id
        .and_then(Object::as_array)
        .and_then(|a| a.first())
        .and_then(Object::as_string)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let mut handler = EncryptionHandler::new(encrypt, file_id).ok()?;
    handler.authenticate(b"").ok()?.then_some(handler)
}

/// `obj` with a reference followed.
fn resolve(doc: &PdfDocument, obj: Object) -> Option<Object> {
    match obj {
        Object::Reference(r) => doc.load_object(r).ok(),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// How deep a parser reading from `start` gets: brackets in code, strings with nested
    /// parentheses and escapes, comments to the end of the line (`<<` counts two).
    fn parse_depth(bytes: &[u8], start: usize) -> usize {
        let (mut depth, mut deepest, mut i) = (0usize, 0usize, start);
        while i < bytes.len() {
            match bytes[i] {
                b'[' | b'<' => depth += 1,
                b']' | b'>' => depth = depth.saturating_sub(1),
                b'%' => {
                    while i < bytes.len() && !matches!(bytes[i], b'\n' | b'\r') {
                        i += 1;
                    }
                }
                b'(' => {
                    let mut open = 0usize;
                    while i < bytes.len() {
                        match bytes[i] {
                            b'\\' => i += 1,
                            b'(' => open += 1,
                            b')' => {
                                open -= 1;
                                if open == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                }
                _ => {}
            }
            deepest = deepest.max(depth);
            i += 1;
        }
        deepest
    }

    fn depth_of(bytes: &[u8]) -> usize {
        let mut d = Depth::default();
        d.feed(bytes).unwrap();
        d.deepest
    }

    #[test]
    fn depth_counts_what_a_parse_from_inside_a_string_or_comment_sees() {
        assert_eq!(depth_of(b"<< /A [1 [2]] >>"), 4);
        // A hex string opens a level while it lasts.
        assert_eq!(depth_of(b"[ (a) <4142> ]"), 2);
        // Inside a string or a comment: a parse may start there.
        assert_eq!(depth_of(b"( [[[ )"), 3);
        assert_eq!(depth_of(b"% [[[\n"), 3);
        // A string that a front-to-back reading closes early hides nothing from a parse
        // starting inside it: `[ (]]]]) [ (]]]]) …` nests one level per group from offset 1 of
        // `( [ (]]]]) [ (]]]]) )`.
        let mut tricky = b"(".to_vec();
        for _ in 0..100 {
            tricky.extend(b" [ (]]]])");
        }
        tricky.extend(b")");
        assert!(depth_of(&tricky) >= 100, "{}", depth_of(&tricky));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// No parse, from any offset, gets deeper than [`Depth`] says.
        #[test]
        fn depth_bounds_a_parse_from_every_offset(
            bytes in proptest::collection::vec(
                prop::sample::select(b"[]<>()%\\\n a".to_vec()), 0..200)
        ) {
            let bound = depth_of(&bytes);
            for start in 0..bytes.len() {
                prop_assert!(parse_depth(&bytes, start) <= bound, "start {start}");
            }
        }
    }
}
