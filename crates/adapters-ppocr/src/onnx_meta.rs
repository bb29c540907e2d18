//! Reads `metadata_props` from an ONNX file without an ONNX library.
//!
//! PaddleOCR-converted recognition models carry their dictionary as the metadata entry
//! `character` (one character per line). Reading it here keeps the dictionary independent of
//! the backend (tract does not expose model metadata).
//!
//! An ONNX file is a protobuf `ModelProto`; `metadata_props` is field 14, a repeated
//! `StringStringEntryProto { key = 1; value = 2; }`. Only the top level is walked: the graph
//! (field 7, nearly all of the file) is skipped by its length prefix.

use std::collections::HashMap;

/// Metadata key/value pairs of an ONNX model file's bytes, or `None` if it is not a
/// well-formed protobuf at the top level.
pub(crate) fn metadata_props(bytes: &[u8]) -> Option<HashMap<String, String>> {
    let mut out = HashMap::new();
    let mut r = Reader { buf: bytes, pos: 0 };
    while !r.done() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (14, 2) => {
                let entry = r.bytes()?;
                let (mut key, mut value) = (String::new(), String::new());
                let mut e = Reader { buf: entry, pos: 0 };
                while !e.done() {
                    match e.key()? {
                        (1, 2) => key = String::from_utf8_lossy(e.bytes()?).into_owned(),
                        (2, 2) => value = String::from_utf8_lossy(e.bytes()?).into_owned(),
                        (_, w) => e.skip(w)?,
                    }
                }
                out.insert(key, value);
            }
            (_, w) => r.skip(w)?,
        }
    }
    Some(out)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn key(&mut self) -> Option<(u64, u8)> {
        let k = self.varint()?;
        Some((k >> 3, (k & 7) as u8))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        let end = self.pos.checked_add(len)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn skip(&mut self, wire: u8) -> Option<()> {
        match wire {
            0 => {
                self.varint()?;
            }
            1 => self.pos += 8,
            2 => {
                self.bytes()?;
            }
            5 => self.pos += 4,
            _ => return None, // groups (3, 4) are not used by ONNX
        }
        (self.pos <= self.buf.len()).then_some(())
    }
}
