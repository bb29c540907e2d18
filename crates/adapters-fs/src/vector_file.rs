//! The vector file of stores written before the embedded ANN index (`vectors.bin`), kept as a
//! format to read so such a store is migrated without embedding anything again.
//!
//! Format (version 1): a first line of JSON `{"format": "zhiku-vectors/1", "space": …, "count": n}`,
//! then `n` records, each `u32` little-endian length, that many bytes of chunk-record JSON, and
//! `dims` little-endian `f32`s. Earlier versions replaced the whole file on every commit
//! (temporary file, fsync, rename), so a file that exists is whole.
//!
//! [`write`] produces the same layout; the binary never writes it any more, but the migration
//! is tested against files in exactly the layout earlier versions wrote.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};
use zhiku_domain::ports::{EmbeddedChunk, IndexError};
use zhiku_domain::{Chunk, ChunkRecord, EmbeddingSpace};

use crate::atomic::write_atomically_with;

/// The vector file's name inside a store folder.
pub const FILE_NAME: &str = "vectors.bin";
/// The temporary file a killed commit of an earlier version may have left beside it.
pub const TEMP_NAME: &str = "vectors.tmp";

const FORMAT: &str = "zhiku-vectors/1";
const ADAPTER: &str = "vector-file";

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    space: EmbeddingSpace,
    count: usize,
}

fn backend(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::backend(ADAPTER, format!("{}: {e}", path.display()))
}

/// Every chunk and vector in the file at `path`, or `None` when there is no file. A file of
/// another format is refused with [`IndexError::ConfigMismatch`], one written for another space
/// with [`IndexError::SpaceMismatch`], a damaged one with the offset where reading failed.
pub fn read(path: &Path, space: &EmbeddingSpace) -> Result<Option<Vec<EmbeddedChunk>>, IndexError> {
    let file = match crate::atomic::open_store_file_to_read(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(backend(path, e)),
    };
    let mut reader = BufReader::new(file);
    let mut first = String::new();
    reader.read_line(&mut first).map_err(|e| backend(path, e))?;
    let header: Header =
        serde_json::from_str(&first).map_err(|e| backend(path, format!("bad header: {e}")))?;
    if header.format != FORMAT {
        return Err(IndexError::ConfigMismatch {
            what: "vector file format",
            expected: header.format,
            found: FORMAT.into(),
        });
    }
    if &header.space != space {
        return Err(IndexError::SpaceMismatch {
            expected: header.space.identity().to_string(),
            found: space.identity().to_string(),
        });
    }
    let mut items = Vec::with_capacity(header.count.min(1 << 20));
    let mut len = [0u8; 4];
    let mut values = vec![0u8; space.dims() * 4];
    for n in 0..header.count {
        let damaged = |e: &dyn std::fmt::Display| backend(path, format!("record {n}: {e}"));
        reader.read_exact(&mut len).map_err(|e| damaged(&e))?;
        let mut json = vec![0u8; u32::from_le_bytes(len) as usize];
        reader.read_exact(&mut json).map_err(|e| damaged(&e))?;
        reader.read_exact(&mut values).map_err(|e| damaged(&e))?;
        let record: ChunkRecord = serde_json::from_slice(&json).map_err(|e| damaged(&e))?;
        let chunk = Chunk::from_record(record).map_err(|e| damaged(&e))?;
        let floats = values
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let embedding = space.embedding(floats, false).map_err(|e| damaged(&e))?;
        items.push(EmbeddedChunk { chunk, embedding });
    }
    Ok(Some(items))
}

/// Writes `items` to `path` in the version-1 layout (temporary file, fsync, rename).
pub fn write(
    path: &Path,
    space: &EmbeddingSpace,
    items: &[EmbeddedChunk],
) -> Result<(), IndexError> {
    let header = Header {
        format: FORMAT.into(),
        space: space.clone(),
        count: items.len(),
    };
    write_atomically_with(path, &mut |out| {
        serde_json::to_writer(&mut *out, &header)?;
        out.write_all(b"\n")?;
        for item in items {
            let json = serde_json::to_vec(&item.chunk.to_record())?;
            let len = u32::try_from(json.len()).map_err(std::io::Error::other)?;
            out.write_all(&len.to_le_bytes())?;
            out.write_all(&json)?;
            for v in item.embedding.values() {
                out.write_all(&v.to_le_bytes())?;
            }
        }
        Ok(())
    })
    .map_err(|e| backend(path, format!("{e:#}")))
}
