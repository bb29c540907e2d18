#!/usr/bin/env python3
"""The embedded store at scale (issue 15): what each `zhiku` command costs on a large folder.

Runs a release `zhiku` binary (and, with --baseline, a second binary — e.g. the build before a
change — on a copy of the same store, so both are measured in the same window) against a scale
corpus made by `scripts/make-scale-corpus.py`, with the hashing embedder (384 dims: only the
store is measured, not a model), store on disk (profile `local`). For each binary it reports:

- `index` from scratch, `index` with nothing changed, `status`, a fresh-process
  `search --no-refresh` (median of 3): wall time and peak RSS of the process;
- `serve --no-refresh`: top-10 search latency p50/p99 over HTTP (one keep-alive client) for the
  dense, hybrid and lexical modes, all scopes, on the corpus' query file; the server's RSS;
- one-document ingests over HTTP (`POST /v1/documents`, each committed before it answers):
  p50/p99, and lexical searches while they run (p50/p99 against idle).

Python standard library only. The load average at start and end is printed with the figures.

    python3 scripts/make-scale-corpus.py /tmp/scale-100k --chunks 100000 \\
        --queries /tmp/scale-100k.queries.jsonl
    cargo build --release -p zhiku
    python3 scripts/bench-scale.py --kb /tmp/scale-100k --queries /tmp/scale-100k.queries.jsonl \\
        --bin $CARGO_TARGET_DIR/release/zhiku [--baseline /path/to/older/zhiku]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TOKEN = "scale-bench-token"
SCOPES = [f"scope-{i}" for i in range(10)]


def load() -> str:
    return " ".join(os.getloadavg().__repr__().strip("()").split(", "))


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and the command's peak RSS (MiB), through a wrapper process whose only
    child is the command (so the children's ru_maxrss is the command's own)."""
    wrapper = (
        "import resource,subprocess,sys,time;"
        "t=time.perf_counter();p=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.PIPE);"
        "w=time.perf_counter()-t;"
        "r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024.0;"
        "sys.stderr.write(p.stderr.decode()[-2000:]) if p.returncode else None;"
        "print(f'{w} {r} {p.returncode}')"
    )
    out = subprocess.run(
        [sys.executable, "-c", wrapper, *cmd], env=env, capture_output=True, text=True
    )
    wall, rss, code = out.stdout.split()
    if code != "0":
        sys.exit(f"{' '.join(cmd)} failed ({code}):\n{out.stderr}")
    return float(wall), float(rss)


class Server:
    def __init__(self, bin_: str, kb: Path, store: Path, env: dict[str, str]):
        # A free port picked here, so nothing depends on the server's log lines or level.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.host, self.port = "127.0.0.1", str(probe.getsockname()[1])
        self.proc = subprocess.Popen(
            [bin_, "--kb", str(kb), "--store", str(store), "serve", "--bind",
             f"{self.host}:{self.port}", "--no-refresh"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        started = time.perf_counter()
        while True:
            if self.proc.poll() is not None:
                sys.exit("zhiku serve exited before serving")
            try:
                socket.create_connection((self.host, int(self.port)), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        self.start_s = time.perf_counter() - started

    def conn(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, int(self.port), timeout=120)

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def post(conn: http.client.HTTPConnection, path: str, body: dict) -> tuple[float, int]:
    data = json.dumps(body, ensure_ascii=False).encode()
    t = time.perf_counter()
    conn.request("POST", path, body=data, headers={
        "content-type": "application/json", "authorization": f"Bearer {TOKEN}"})
    r = conn.getresponse()
    r.read()
    return (time.perf_counter() - t) * 1000.0, r.status


def measure(name: str, bin_: str, kb: Path, store: Path, queries: list[dict], args) -> dict:
    env = dict(os.environ)
    env.update({"ZHIKU_EMBEDDER": "hashing", "ZHIKU_BENCH_TOKEN": TOKEN, "ZHIKU_LOG": "warn"})
    base = [bin_, "--kb", str(kb), "--store", str(store), "-q"]
    row: dict = {"name": name}
    if not args.skip_build:
        shutil.rmtree(store, ignore_errors=True)
        row["index (scratch)"] = timed(base + ["index"], env)
        print(f"  {name}: index from scratch {row['index (scratch)'][0]:.1f} s", flush=True)
    row["index (unchanged)"] = timed(base + ["index"], env)
    row["status"] = timed(base + ["status"], env)
    runs = [timed(base + ["search", queries[i]["text"], "--no-refresh"], env) for i in range(3)]
    row["search --no-refresh"] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs))
    print(f"  {name}: unchanged {row['index (unchanged)'][0]:.2f} s, status "
          f"{row['status'][0]:.2f} s, search {row['search --no-refresh'][0]:.2f} s", flush=True)

    server = Server(bin_, kb, store, env)
    try:
        conn = server.conn()
        qs = queries[: args.queries_n]
        for q in qs[:20]:  # warm-up
            post(conn, "/v1/search", {"query": q["text"], "k": 10})
        for mode in ["dense", "hybrid", "lexical"]:
            ms = [post(conn, "/v1/search", {"query": q["text"], "k": 10, "mode": mode})[0]
                  for q in qs]
            row[f"serve {mode}"] = (percentile(ms, 50), percentile(ms, 99))
        row["serve RSS MiB"] = server.rss_mib()
        row["serve start s"] = server.start_s
        # Ingests, with a lexical searcher beside them.
        stop = threading.Event()
        during: list[float] = []

        def searcher():
            c = server.conn()
            i = 0
            while not stop.is_set():
                during.append(post(c, "/v1/search", {"query": qs[i % len(qs)]["text"], "k": 10,
                                                     "mode": "lexical"})[0])
                i += 1

        t = threading.Thread(target=searcher)
        t.start()
        ingest = []
        for i in range(args.ingests):
            ms, status = post(conn, "/v1/documents", {
                "id": f"bench-ingest-{name}-{i}",
                "text": f"# 基准文档 {i}\n\n这是第 {i} 篇用于测量写入延迟的小文档。",
                "scope": "scope-0",
            })
            if status not in (200, 201):
                sys.exit(f"ingest answered {status}")
            ingest.append(ms)
        stop.set()
        t.join()
        row["ingest"] = (percentile(ingest, 50), percentile(ingest, 99))
        row["lexical during ingests"] = (percentile(during, 50), percentile(during, 99))
    finally:
        server.stop()
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kb", required=True, type=Path, help="a scale corpus folder")
    p.add_argument("--queries", required=True, type=Path, help="its query JSONL")
    p.add_argument("--bin", required=True, help="the zhiku binary to measure (release)")
    p.add_argument("--baseline", help="a second zhiku binary measured in the same run")
    p.add_argument("--store-root", type=Path, default=None,
                   help="where the stores go (default: a temporary folder)")
    p.add_argument("--queries-n", type=int, default=300, help="queries per serve mode")
    p.add_argument("--ingests", type=int, default=50, help="one-document ingests")
    p.add_argument("--skip-build", action="store_true",
                   help="reuse the stores of an earlier run (no index from scratch)")
    args = p.parse_args()

    queries = [json.loads(l) for l in args.queries.read_text(encoding="utf-8").splitlines() if l]
    meta = json.loads((args.kb / ".scale-corpus.json").read_text()) \
        if (args.kb / ".scale-corpus.json").exists() else {}
    # The serve bench ingests with a token: a config beside the corpus names it.
    (args.kb / "zhiku.toml").write_text(
        '[[serve.tokens]]\nname = "bench"\nenv = "ZHIKU_BENCH_TOKEN"\n'
        f"scopes = {json.dumps(SCOPES + ['default'])}\nwrite = true\n",
        encoding="utf-8",
    )
    root = args.store_root or Path(tempfile.mkdtemp(prefix="zhiku-scale-"))
    print(f"corpus {args.kb}: {meta.get('docs', '?')} files, {meta.get('chunks', '?')} chunks")
    print(f"load at start: {load()}")
    rows = []
    for name, bin_ in [("zhiku", args.bin)] + ([("baseline", args.baseline)] if args.baseline else []):
        rows.append(measure(name, bin_, args.kb, root / name, queries, args))
    print(f"load at end: {load()}\n")

    keys = [k for k in rows[0] if k != "name"]
    head = "| measure | " + " | ".join(r["name"] for r in rows)
    if len(rows) == 2:
        head += " | zhiku / baseline"
    print(head + " |")
    print("|---" * (len(rows) + 1 + (len(rows) == 2)) + "|")
    for k in keys:
        cells = []
        for r in rows:
            v = r.get(k)
            if isinstance(v, tuple) and k.startswith(("index", "status", "search")):
                cells.append(f"{v[0]:.2f} s, {v[1]:.0f} MiB")
            elif isinstance(v, tuple):
                cells.append(f"{v[0]:.2f} / {v[1]:.2f} ms")
            elif isinstance(v, float):
                cells.append(f"{v:.2f}" if v < 100 else f"{v:.0f}")
            else:
                cells.append("-")
        line = f"| {k} | " + " | ".join(cells)
        if len(rows) == 2:
            a, b = rows[0].get(k), rows[1].get(k)
            if isinstance(a, tuple) and isinstance(b, tuple) and b[0]:
                line += f" | {a[0] / b[0]:.2f}x"
            elif isinstance(a, float) and isinstance(b, float) and b:
                line += f" | {a / b:.2f}x"
            else:
                line += " | -"
        print(line + " |")
    print("\n(index/status/search: wall s, peak RSS MiB; serve and ingest: p50 / p99 ms)")


if __name__ == "__main__":
    main()
