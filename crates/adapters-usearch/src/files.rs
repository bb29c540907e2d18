//! The files the index keeps in its folder (see the [crate documentation](crate)).

/// The SQLite database's file name inside the index folder.
pub const DATABASE_FILE: &str = "vectors.sqlite";
/// The graph snapshot's file name inside the index folder.
pub const SNAPSHOT_FILE: &str = "vectors.usearch";
/// The attribute columns written with each snapshot (see [`columns`](crate::columns)).
pub const COLUMNS_FILE: &str = "vectors.attrs";
/// Every file the index may create in its folder: the database with its journal, WAL and
/// shared-memory files, the snapshot, the attribute columns and the temporary files they are
/// written to. What a caller removes to discard the index.
pub const FILES: [&str; 8] = [
    DATABASE_FILE,
    "vectors.sqlite-journal",
    "vectors.sqlite-wal",
    "vectors.sqlite-shm",
    SNAPSHOT_FILE,
    "vectors.usearch.tmp",
    COLUMNS_FILE,
    "vectors.attrs.tmp",
];
