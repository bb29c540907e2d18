//! Zip packages (Office files, EPUB) read part by part within the unpacking bound.

use std::io::Read;

use anyhow::{Result, bail};

use crate::limits::Limits;

/// A zip package read within [`Limits::max_unpacked_bytes`] for all its parts together.
#[derive(Debug)]
pub struct Package<'a> {
    archive: zip::ZipArchive<std::io::Cursor<&'a [u8]>>,
    budget: u64,
    limit: u64,
}

impl<'a> Package<'a> {
    /// Opens a package.
    pub fn open(bytes: &'a [u8], limits: &Limits) -> Result<Self> {
        let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| anyhow::anyhow!("damaged zip package: {e}"))?;
        Ok(Self {
            archive,
            budget: limits.max_unpacked_bytes,
            limit: limits.max_unpacked_bytes,
        })
    }

    /// The part names, in archive order.
    pub fn names(&self) -> Vec<String> {
        self.archive
            .file_names()
            .filter_map(|n| n.ok().map(|n| n.into_owned()))
            .collect()
    }

    /// Part `name` (case-insensitive) as a stream, `None` when there is no such part: nothing
    /// of it is held in memory but what the reader keeps. Reading fails, with an error, once
    /// the package has given out its unpacking budget.
    pub fn read_stream(&mut self, name: &str) -> Result<Option<PartReader<'_, 'a>>> {
        let Some(part) = open_part(&mut self.archive, name)? else {
            return Ok(None);
        };
        Ok(Some(PartReader {
            part,
            budget: &mut self.budget,
            limit: self.limit,
            name: name.to_string(),
        }))
    }
}

/// A part of a [`Package`] read as a stream ([`Package::read_stream`]). Its read errors say
/// what went wrong (a damaged package, or the unpacking budget spent) in their message.
pub struct PartReader<'p, 'a> {
    part: zip::read::ZipFile<'p, std::io::Cursor<&'a [u8]>>,
    budget: &'p mut u64,
    limit: u64,
    name: String,
}

impl PartReader<'_, '_> {
    /// The size the package declares for the part once unpacked (a hint: it may lie).
    pub fn declared_size(&self) -> u64 {
        self.part.size()
    }
}

impl Read for PartReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.part.read(buf).map_err(|e| {
            std::io::Error::other(format!("damaged zip package: part {}: {e}", self.name))
        })?;
        if read as u64 > *self.budget {
            return Err(std::io::Error::other(format!(
                "unpacks to more than {} bytes (loader.max_unpacked_bytes): refused as a possible zip bomb",
                self.limit
            )));
        }
        *self.budget -= read as u64;
        Ok(read)
    }
}

impl std::fmt::Debug for PartReader<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartReader")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Part `name` (case-insensitive) of `archive`, opened for reading and not encrypted; `None`
/// when there is no such part.
fn open_part<'z, 'a>(
    archive: &'z mut zip::ZipArchive<std::io::Cursor<&'a [u8]>>,
    name: &str,
) -> Result<Option<zip::read::ZipFile<'z, std::io::Cursor<&'a [u8]>>>> {
    let Some(index) = (0..archive.len()).find(|&i| {
        archive
            .name_for_index(i)
            .is_some_and(|n| n.is_ok_and(|n| n.eq_ignore_ascii_case(name)))
    }) else {
        return Ok(None);
    };
    let part = archive
        .by_index(index)
        .map_err(|e| anyhow::anyhow!("damaged zip package: part {name}: {e}"))?;
    if part.encrypted() {
        bail!("encrypted zip package: part {name} cannot be read");
    }
    Ok(Some(part))
}
