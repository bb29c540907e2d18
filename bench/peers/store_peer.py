#!/usr/bin/env python3
"""LanceDB peer of zhiku's embedded-store bench (crates/bench-store, issue 15).

Run by the bench itself, on the same chunk records it writes to its candidates:

    python store_peer.py DB_DIR BULK.jsonl INGEST.jsonl READ_IDS.txt BATCH

1. bulk load: BULK.jsonl in tables.add() calls of BATCH rows, then a BTREE scalar index on
   chunk_id (timed apart, in the note);
2. one-row inserts: the first 1,000 rows of INGEST.jsonl, one tables.add() each, p50/p99;
3. a fresh process (this script again, with --read) connects, opens the table and runs one
   point query per id of READ_IDS.txt (where chunk_id = ...), p50/p99, open and first query;
4. bytes on disk (allocated blocks) after the bulk load and at the end.

The last line of stdout is one JSON object with the bench's field names.
Set it up with scripts/setup-store-peer.sh.
"""

import json
import os
import subprocess
import sys
import time
import warnings


def pct(samples, q):
    s = sorted(samples)
    return s[round((len(s) - 1) * q)] * 1e3


def lat(samples):
    return {"p50_ms": pct(samples, 0.5), "p99_ms": pct(samples, 0.99)}


def disk_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def rows_of(path):
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            item = json.loads(line)
            rec = json.loads(item["value"])
            yield {
                "chunk_id": item["key"],
                "doc_id": rec["doc_id"],
                "scope": rec["scope"],
                "content": rec["content"],
                "record": item["value"],
            }


def read_mode(db_dir, ids_file):
    ids = [line.strip() for line in open(ids_file, encoding="utf-8") if line.strip()]
    t0 = time.perf_counter()
    import lancedb

    t_import = time.perf_counter() - t0
    t = time.perf_counter()
    db = lancedb.connect(db_dir)
    table = db.open_table("chunks")
    open_s = time.perf_counter() - t
    samples = []
    found = 0
    for cid in ids:
        t = time.perf_counter()
        hits = table.search().where(f"chunk_id = '{cid}'").limit(1).to_list()
        samples.append(time.perf_counter() - t)
        found += len(hits)
    print(
        json.dumps(
            {
                "open_ms": open_s * 1e3,
                "import_ms": t_import * 1e3,
                "first_read_ms": samples[0] * 1e3,
                "reads": lat(samples),
                "found": found,
            }
        )
    )


def main():
    if sys.argv[1] == "--read":
        read_mode(sys.argv[2], sys.argv[3])
        return
    db_dir, bulk, ingest, ids_file, batch = sys.argv[1:6]
    batch = int(batch)
    import lancedb
    import pyarrow as pa

    schema = pa.schema(
        [
            ("chunk_id", pa.string()),
            ("doc_id", pa.string()),
            ("scope", pa.string()),
            ("content", pa.string()),
            ("record", pa.string()),
        ]
    )
    db = lancedb.connect(db_dir)
    table = db.create_table("chunks", schema=schema)

    t0 = time.perf_counter()
    buf = []
    for row in rows_of(bulk):
        buf.append(row)
        if len(buf) >= batch:
            table.add(pa.Table.from_pylist(buf, schema=schema))
            buf = []
    if buf:
        table.add(pa.Table.from_pylist(buf, schema=schema))
    bulk_s = time.perf_counter() - t0
    t = time.perf_counter()
    with warnings.catch_warnings():
        # deprecated in favour of create_index(config=BTree()), still the documented scalar call
        warnings.simplefilter("ignore")
        table.create_scalar_index("chunk_id", index_type="BTREE")
    index_s = time.perf_counter() - t
    disk_bulk = disk_bytes(db_dir)

    samples = []
    for i, row in enumerate(rows_of(ingest)):
        if i >= 1000:
            break
        one = pa.Table.from_pylist([row], schema=schema)
        t = time.perf_counter()
        table.add(one)
        samples.append(time.perf_counter() - t)

    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--read", db_dir, ids_file],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t
    child = json.loads(out.stdout.strip().splitlines()[-1])
    if child["found"] != len(open(ids_file, encoding="utf-8").read().split()):
        raise SystemExit(f"peer child found {child['found']} records")

    print(
        json.dumps(
            {
                "name": "lancedb",
                "bulk_s": bulk_s,
                "disk_bulk_mb": disk_bulk / 1e6,
                "ingest": lat(samples),
                "raw_scan_ms": None,
                "scan_ms": None,
                "open_ms": child["open_ms"],
                "first_read_ms": child["first_read_ms"],
                "reads": child["reads"],
                "child_wall_ms": wall * 1e3,
                "disk_closed_mb": disk_bytes(db_dir) / 1e6,
                "note": (
                    f"lancedb {lancedb.__version__}; bulk excludes the BTREE index on chunk_id "
                    f"({index_s:.2f} s); ingest = one one-row table.add() (a new version each); "
                    f"reads = where(chunk_id = ...) through that index plus the unindexed "
                    f"one-row fragments; the fresh process's wall includes the Python start and "
                    f"`import lancedb` ({child['import_ms']:.0f} ms); no catalog table, so no scan"
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
