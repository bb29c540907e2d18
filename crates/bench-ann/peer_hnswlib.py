"""Peer side of the ANN comparison bench (crates/bench-ann, benches/ann.rs).

Reads the vectors the bench wrote (raw little-endian files in DIR), builds hnswlib (and faiss's
HNSW when faiss is installed) with the bench's parameters, and prints one JSON line per row:
build time, memory/disk bytes, and, at the search breadth reaching the target recall@10 (and for
hnswlib also at ef 64), recall@10 against the bench's exact ground truth with single-threaded
top-k latency percentiles, unfiltered and restricted to the query's one allowed scope.

Progress goes to stderr; stdout carries only the JSON lines.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from importlib.metadata import version

import numpy as np


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def load(d, dim):
    base = np.fromfile(os.path.join(d, "base.f32"), dtype="<f4").reshape(-1, dim)
    queries = np.fromfile(os.path.join(d, "queries.f32"), dtype="<f4").reshape(-1, dim)
    scope_of = np.fromfile(os.path.join(d, "scope_of.u8"), dtype=np.uint8)
    query_scope = np.fromfile(os.path.join(d, "query_scope.u8"), dtype=np.uint8)
    truth = np.fromfile(os.path.join(d, "truth.i64"), dtype="<i8").reshape(len(queries), -1)
    truth_f = np.fromfile(os.path.join(d, "truth_f.i64"), dtype="<i8").reshape(len(queries), -1)
    return base, queries, scope_of, query_scope, truth, truth_f


def run_pass(search, queries, query_scope, truth, filtered):
    """One timed pass over every query (after 20 warm-up queries): (recall, p50 us, p99 us)."""
    for i in range(min(20, len(queries))):
        search(queries[i : i + 1], int(query_scope[i]) if filtered else None)
    times = []
    hits = 0
    expected = 0
    for i in range(len(queries)):
        t = time.perf_counter_ns()
        found = search(queries[i : i + 1], int(query_scope[i]) if filtered else None)
        times.append((time.perf_counter_ns() - t) / 1000.0)
        want = [k for k in truth[i] if k >= 0]
        expected += len(want)
        hits += len(set(want) & set(int(x) for x in found))
    times.sort()

    def pct(p):
        return times[max(0, int(np.ceil(len(times) * p)) - 1)]

    return hits / max(expected, 1), pct(0.5), pct(0.99)


def tune(name, set_ef, search, queries, query_scope, truth, filtered, efs, target):
    last = None
    sweep = []
    for ef in efs:
        set_ef(ef)
        r = run_pass(search, queries, query_scope, truth, filtered)
        sweep.append(f"ef={ef}:{r[0]:.3f}/{r[1]:.0f}us")
        last = (ef, r)
        if r[0] >= target:
            break
    log(f"[peer] {name}{' filtered' if filtered else ''} sweep (breadth:recall/p50): {' '.join(sweep)}")
    ef, r = last
    return (f"ef={ef}" if r[0] >= target else f"ef={ef} (max)"), r


def row(name, build_s, mem, disk, ef, r, f_ef, fr, note):
    return {
        "name": name,
        "build_s": build_s,
        "mem_bytes": mem,
        "disk_bytes": disk,
        "ef": ef,
        "recall": r[0],
        "p50_us": r[1],
        "p99_us": r[2],
        "f_ef": f_ef,
        "f_recall": None if fr is None else fr[0],
        "f_p50_us": None if fr is None else fr[1],
        "f_p99_us": None if fr is None else fr[2],
        "note": note,
    }


def run_hnswlib(args, base, queries, scope_of, query_scope, truth, truth_f, efs):
    import hnswlib

    n, dim = base.shape
    before = rss_bytes()
    t = time.perf_counter()
    index = hnswlib.Index(space="ip", dim=dim)
    index.init_index(max_elements=n, M=args.m, ef_construction=args.ef_construction, random_seed=100)
    index.set_num_threads(args.threads)
    index.add_items(base, np.arange(n))
    build_s = time.perf_counter() - t
    mem = rss_bytes() - before
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "index.bin")
        index.save_index(path)
        disk = os.path.getsize(path)
    index.set_num_threads(1)
    # hnswlib's filter is a Python callable per visited element, checked inside the graph walk.
    scope_of_list = scope_of.tolist()
    keep = [(lambda label, s=s: scope_of_list[label] == s) for s in range(10)]

    def search(q, scope):
        if scope is None:
            labels, _ = index.knn_query(q, k=args.k, num_threads=1)
        else:
            labels, _ = index.knn_query(q, k=args.k, num_threads=1, filter=keep[scope])
        return labels[0]

    note = (
        f"hnswlib {version('hnswlib')} space=ip; "
        "filter = Python callable inside the walk; mem = RSS growth of the build, disk = save_index; "
        "latency includes the Python call (~µs)"
    )
    rows = []
    ef, r = tune("hnswlib", index.set_ef, search, queries, query_scope, truth, False, efs, args.target)
    f_ef, fr = tune("hnswlib", index.set_ef, search, queries, query_scope, truth_f, True, efs, args.target)
    rows.append(row("hnswlib (tuned)", build_s, mem, disk, ef, r, f_ef, fr, note))
    index.set_ef(64)
    r64 = run_pass(search, queries, query_scope, truth, False)
    fr64 = run_pass(search, queries, query_scope, truth_f, True)
    rows.append(row("hnswlib ef=64", build_s, mem, disk, "ef=64", r64, "ef=64", fr64, note))
    return rows


def run_faiss(args, base, queries, scope_of, query_scope, truth, truth_f, efs):
    import faiss

    n, dim = base.shape
    faiss.omp_set_num_threads(args.threads)
    before = rss_bytes()
    t = time.perf_counter()
    index = faiss.IndexHNSWFlat(dim, args.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = args.ef_construction
    index.add(base)
    build_s = time.perf_counter() - t
    mem = rss_bytes() - before
    faiss.omp_set_num_threads(1)
    selectors = [faiss.IDSelectorBatch(np.flatnonzero(scope_of == s).astype("int64")) for s in range(10)]
    state = {"ef": 64}

    def set_ef(ef):
        state["ef"] = ef

    def search(q, scope):
        if scope is None:
            params = faiss.SearchParametersHNSW(efSearch=state["ef"])
        else:
            params = faiss.SearchParametersHNSW(efSearch=state["ef"], sel=selectors[scope])
        _, labels = index.search(q, args.k, params=params)
        return labels[0]

    ef, r = tune("faiss-hnsw", set_ef, search, queries, query_scope, truth, False, efs, args.target)
    f_ef, fr = tune("faiss-hnsw", set_ef, search, queries, query_scope, truth_f, True, efs, args.target)
    note = f"faiss {faiss.__version__} IndexHNSWFlat IP; filter = IDSelectorBatch in SearchParametersHNSW; mem = RSS growth"
    return [row("faiss hnsw", build_s, mem, None, ef, r, f_ef, fr, note)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--target", type=float, default=0.95)
    p.add_argument("--efs", default="16,32,64,128,256,512")
    p.add_argument("--only", default="")
    args = p.parse_args()
    efs = [int(e) for e in args.efs.split(",")]
    only = [o for o in args.only.split(",") if o]

    def wants(name):
        return not only or any(name.startswith(o) for o in only)

    data = load(args.dir, args.dim)
    if wants("hnswlib"):
        for r in run_hnswlib(args, *data, efs):
            print(json.dumps(r), flush=True)
    if wants("faiss"):
        try:
            import faiss  # noqa: F401
        except ImportError:
            log("[peer] faiss: SKIPPED (not installed; scripts/setup-bench-peers.sh installs faiss-cpu)")
        else:
            for r in run_faiss(args, *data, efs):
                print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
