#!/usr/bin/env python3
"""The store at scale (issue 15): what each `zhiku` command costs on a large folder.

Runs a release `zhiku` binary (and, with --baseline, a second binary — e.g. the build before a
change — on a copy of the same store, so both are measured in the same window) against a scale
corpus made by `scripts/make-scale-corpus.py`, with the hashing embedder (384 dims: only the
store is measured, not a model). `--profile local` (the default) puts the store on disk;
`--profile cluster` puts the whole store on the Qdrant node `--qdrant-url` names, in the
knowledge base `--knowledge-base`. For each binary it reports:

- `index` from scratch, `index` with nothing changed, `status`, a fresh-process
  `search --no-refresh` (median of 3): wall time and peak RSS of the process;
- `serve --no-refresh`: top-10 search latency p50/p99 over HTTP (one keep-alive client) for the
  dense, hybrid and lexical modes, all scopes, on the corpus' query file; the server's RSS;
- one-document ingests over HTTP (`POST /v1/documents`, each committed before it answers):
  p50/p99, and lexical searches while they run (p50/p99 against idle); the median of each
  step of those writes as the server logged it (`zhiku::put` at debug level: taking the turn,
  planning, waiting for searches, writing the document, the indexes and the catalog).

With `--profile cluster` also (the Qdrant node must be local: its process is found by its
port):

- the index from scratch is `index --rebuild` (the knowledge base's collections dropped
  first), followed by the time the node then takes to optimise them (HNSW graphs built: every
  collection green twice, 0.5 s apart) before anything is served;
- the Qdrant process's RSS (and peak, VmHWM) and the size on disk of the knowledge base's
  collections, after that optimisation and at the end;
- `--beams`: recall@10 of the served dense route at each search beam (`hnsw_ef`; `default`
  is zhiku's, 256) against the same store served with `exact` search, over all scopes and over
  one scope (a token of `scope-0` only), with p50/p99 per beam;
- `--replicas N`: throughput of hybrid search with 1 and with N `zhiku serve` processes on the
  knowledge base, clients spread round-robin over them: client threads are stepped (`--threads`,
  each step `--step-s` seconds); the highest requests/s whose p99 stays within `--p99-ms` is
  reported. The clients, the replicas and Qdrant share this machine's cores.

The beam sweep and the throughput start once the node has optimised what the ingests wrote.

With `--access` (a corpus made with `make-scale-corpus.py --access`, whose documents name
readers), after the phases above, on `serve --no-refresh` of the same store (first binary only):

- the reader filter's latency cost per route: the same requests, in the same run, as a service
  token that reads scope-0..9 whole and as a person token (`user = "u1@corp"`, `groups =
  ["g1", "g5"]`, the same scopes: every read filtered by the documents' readers inside each
  index), the two tokens alternating request by request (which goes first alternates too) so
  load drift hits both alike: `POST /v1/search` dense, hybrid and lexical (k=10), `POST
  /v1/ask` (not streamed), `GET /v1/documents?limit=100` (offsets within the person's
  documents, so both get full pages) and `GET /v1/documents/{id}` (documents the person may
  read; and, apart, ones they may not: 404 for the person). p50/p99 per token and the ratio
  person / service; also the hits each got, whether every hit of the person's is one they may
  read (from the corpus' front matter), and what share of the service's hits the person may read;
- the propagation of an access change: a probe document (`access-probe-…`, scope-0, a marker
  word only it holds) is written once, then `--access-changes` times rewritten through `POST
  /v1/documents` with the same id, text and title and only `"metadata": {"access": [...]}`
  alternating between `["group:g1"]` and `["group:g2"]`. Two persons (in g1, in g2) search
  the marker lexically in a loop from the moment each change is sent; the time from sending
  the change to the end of the first search of each that reflects it (it appears for the new
  reader, disappears for the former one): p50/p99/max per side and for both, the POST's own
  duration, and the `chunks_embedded` of every rewrite (0: readers alone re-embed nothing);
  searches started after the POST answered that still showed the old readers are counted
  (`stale after ack`, expected 0). The issue's goal: p99 <= 1 s.

Python standard library only. The load average is printed at the start and end of each phase.

    python3 scripts/make-scale-corpus.py /tmp/scale-100k --chunks 100000 \\
        --queries /tmp/scale-100k.queries.jsonl
    cargo build --release -p zhiku
    python3 scripts/bench-scale.py --kb /tmp/scale-100k --queries /tmp/scale-100k.queries.jsonl \\
        --bin $CARGO_TARGET_DIR/release/zhiku [--baseline /path/to/older/zhiku]
    ZHIKU_QDRANT_HOME=/tmp/zq ZHIKU_QDRANT_HTTP_PORT=6383 ZHIKU_QDRANT_GRPC_PORT=6384 \\
        bash scripts/qdrant-server.sh start
    python3 scripts/bench-scale.py --kb /tmp/scale-100k --queries /tmp/scale-100k.queries.jsonl \\
        --bin $CARGO_TARGET_DIR/release/zhiku --profile cluster \\
        --qdrant-url http://127.0.0.1:6384 --knowledge-base scale --replicas 2
    python3 scripts/make-scale-corpus.py /tmp/scale-100k-access --chunks 100000 --access \\
        --queries /tmp/scale-100k-access.queries.jsonl
    python3 scripts/bench-scale.py --kb /tmp/scale-100k-access \\
        --queries /tmp/scale-100k-access.queries.jsonl --bin $CARGO_TARGET_DIR/release/zhiku \\
        --access [--access-n 300] [--access-changes 200] [--queries-n 50 --ingests 0]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

TOKEN = "scale-bench-token"
TOKEN_ONE = "scale-bench-token-one-scope"  # reads scope-0 only
SCOPES = [f"scope-{i}" for i in range(10)]
# `--access`: a service token reading scope-0..9 whole, and persons reading the same scopes
# through the documents' readers (name, token, user, groups). PERSON is the one of the latency
# comparison; PERSON and PERSON_B (in g1 and in g2) probe the propagation of access changes.
TOKEN_SERVICE = "scale-bench-token-service"
PERSON = ("person-a", "scale-bench-token-person-a", "u1@corp", ["g1", "g5"])
PERSON_B = ("person-b", "scale-bench-token-person-b", "u2@corp", ["g2", "g6"])


def load() -> str:
    return " ".join(f"{a:.2f}" for a in os.getloadavg())


def phase(label: str, log: list[str]) -> None:
    """Prints (and keeps) the time and load average at a phase boundary."""
    line = f"[{time.strftime('%H:%M:%S')}] {label}: load {load()}"
    log.append(line)
    print("  " + line, flush=True)


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


def status_kib(pid: int, key: str) -> float:
    """A `/proc/PID/status` field (VmRSS, VmHWM) in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class Server:
    def __init__(self, bin_: str, kb: Path, store: Path, env: dict[str, str],
                 log: Path | None = None):
        # A free port picked here, so nothing depends on the server's log lines or level.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.host, self.port = "127.0.0.1", str(probe.getsockname()[1])
        # With `log`, the server's log lines go there (for the ingests' steps, below).
        self.log = open(log, "wb") if log else None
        self.proc = subprocess.Popen(
            [bin_, "--kb", str(kb), "--store", str(store), "serve", "--bind",
             f"{self.host}:{self.port}", "--no-refresh"],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log or subprocess.DEVNULL,
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
        return status_kib(self.proc.pid, "VmRSS")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self.log:
            self.log.close()


def write_steps(log: Path) -> dict[str, float]:
    """The median of each step of the writes a server logged (`zhiku::put` at debug level:
    `turn_ms=… plan_ms=… save_catalog_ms=…`), in ms."""
    steps: dict[str, list[float]] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if "documents written" not in line:
            continue
        for key, value in re.findall(r"(\w+)_ms=([0-9.]+)", line):
            steps.setdefault(key, []).append(float(value))
    return {k: statistics.median(v) for k, v in steps.items()}


def post(conn: http.client.HTTPConnection, path: str, body: dict,
         token: str = TOKEN) -> tuple[float, int, bytes]:
    """Latency (ms), status and body of one request."""
    data = json.dumps(body, ensure_ascii=False).encode()
    t = time.perf_counter()
    conn.request("POST", path, body=data, headers={
        "content-type": "application/json", "authorization": f"Bearer {token}"})
    r = conn.getresponse()
    answer = r.read()
    return (time.perf_counter() - t) * 1000.0, r.status, answer


def get(conn: http.client.HTTPConnection, path: str, token: str) -> tuple[float, int, bytes]:
    """Latency (ms), status and body of one GET."""
    t = time.perf_counter()
    conn.request("GET", path, headers={"authorization": f"Bearer {token}"})
    r = conn.getresponse()
    answer = r.read()
    return (time.perf_counter() - t) * 1000.0, r.status, answer


def searches(conn, qs: list[dict], mode: str | None, token: str = TOKEN,
             ids: bool = False) -> tuple[list[float], list[list[str]]]:
    """Top-10 searches of `qs` (`mode` None: the server's default): latencies, and (with
    `ids`) each answer's chunk IDs. A search that does not answer 200 stops the bench."""
    ms, hits = [], []
    for q in qs:
        body = {"query": q["text"], "k": 10} | ({"mode": mode} if mode else {})
        t, status, answer = post(conn, "/v1/search", body, token)
        if status != 200:
            sys.exit(f"search ({mode}) answered {status}: {answer[:500]!r}")
        ms.append(t)
        if ids:
            hits.append([h["chunk_id"] for h in json.loads(answer)["hits"]])
    return ms, hits


class Qdrant:
    """The local Qdrant node of `--profile cluster`: its process, its REST API, and the
    collections of one knowledge base."""

    def __init__(self, grpc_url: str, http_url: str | None, knowledge_base: str):
        grpc = urllib.parse.urlsplit(grpc_url.split(",")[0])
        # By convention (and in scripts/qdrant-server.sh) the REST port is the gRPC port − 1.
        self.http = (http_url or f"http://{grpc.hostname}:{grpc.port - 1}").rstrip("/")
        self.prefix = f"zhiku_{knowledge_base}_"
        self.pid = self.pid_listening(grpc.port)
        if self.pid is None:
            sys.exit(f"no local process of this user listens on port {grpc.port} (the Qdrant node)")
        env = Path(f"/proc/{self.pid}/environ").read_bytes().split(b"\0")
        given = [e.split(b"=", 1)[1].decode() for e in env
                 if e.startswith(b"QDRANT__STORAGE__STORAGE_PATH=")]
        self.storage = Path(given[0]) if given else Path(os.readlink(f"/proc/{self.pid}/cwd")) / "storage"

    @staticmethod
    def pid_listening(port: int) -> int | None:
        """The pid of the process listening on TCP `port` (its socket's inode among the
        process's open files)."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                f = line.split()
                if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{f[9]}]")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                        return int(pid)
            except OSError:
                continue
        return None

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.http + path, timeout=30) as r:
            return json.loads(r.read())["result"]

    def collections(self) -> list[str]:
        return sorted(c["name"] for c in self.get("/collections")["collections"]
                      if c["name"].startswith(self.prefix))

    def points(self) -> dict[str, int]:
        return {c: self.get(f"/collections/{c}").get("points_count", 0) for c in self.collections()}

    def wait_optimized(self, limit_s: float = 7200) -> float:
        """Seconds until every collection of the knowledge base is green twice in a row, 0.5 s
        apart (as the adapter's `wait_until_optimized`)."""
        start = time.perf_counter()
        green_before = False
        while time.perf_counter() - start < limit_s:
            green = all(self.get(f"/collections/{c}")["status"] == "green"
                        for c in self.collections())
            if green and green_before:
                break
            green_before = green
            time.sleep(0.5)
        return time.perf_counter() - start

    def rss_mib(self) -> tuple[float, float]:
        return status_kib(self.pid, "VmRSS"), status_kib(self.pid, "VmHWM")

    def disk_mib(self) -> float:
        """Allocated size of the knowledge base's collections in the node's storage."""
        total = 0
        for c in self.collections():
            for root, _, files in os.walk(self.storage / "collections" / c):
                for name in files:
                    try:
                        total += os.lstat(os.path.join(root, name)).st_blocks * 512
                    except OSError:
                        pass
        return total / 2**20


def measure(name: str, bin_: str, kb: Path, store: Path, queries: list[dict], args,
            env: dict[str, str], qdrant: Qdrant | None, loads: list[str]) -> dict:
    base = [bin_, "--kb", str(kb), "--store", str(store), "-q"]
    row: dict = {"name": name}
    if not args.skip_build:
        shutil.rmtree(store, ignore_errors=True)
        phase(f"{name}: index from scratch", loads)
        row["index (scratch)"] = timed(base + ["index"] + (["--rebuild"] if qdrant else []), env)
        print(f"  {name}: index from scratch {row['index (scratch)'][0]:.1f} s", flush=True)
        if qdrant:
            row["Qdrant optimising after index s"] = qdrant.wait_optimized()
            print(f"  {name}: Qdrant optimised after {row['Qdrant optimising after index s']:.1f} s"
                  f"; points {qdrant.points()}", flush=True)
        phase(f"{name}: index from scratch done", loads)
    if qdrant:
        row["Qdrant RSS MiB (after index)"], row["Qdrant peak RSS MiB (index)"] = qdrant.rss_mib()
        row["Qdrant storage MiB"] = qdrant.disk_mib()
    phase(f"{name}: fresh processes", loads)
    row["index (unchanged)"] = timed(base + ["index"], env)
    row["status"] = timed(base + ["status"], env)
    runs = [timed(base + ["search", queries[i]["text"], "--no-refresh"], env) for i in range(3)]
    row["search --no-refresh"] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs))
    print(f"  {name}: unchanged {row['index (unchanged)'][0]:.2f} s, status "
          f"{row['status'][0]:.2f} s, search {row['search --no-refresh'][0]:.2f} s", flush=True)

    phase(f"{name}: serve", loads)
    # The ingests' steps are read from the server's log (each write logs them at debug level).
    log = store.parent / f"{store.name}-serve.log"
    logged = dict(env, ZHIKU_LOG=f"{env.get('ZHIKU_LOG', 'warn')},zhiku::put=debug")
    server = Server(bin_, kb, store, logged, log)
    try:
        conn = server.conn()
        qs = queries[: args.queries_n]
        searches(conn, qs[:20], None)  # warm-up
        for mode in ["dense", "hybrid", "lexical"]:
            ms, _ = searches(conn, qs, mode)
            row[f"serve {mode}"] = (percentile(ms, 50), percentile(ms, 99))
        row["serve RSS MiB"] = server.rss_mib()
        row["serve start s"] = server.start_s
        # Ingests, with a lexical searcher beside them.
        phase(f"{name}: ingests", loads)
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
        # New documents every run (a run with --skip-build after another adds, never repeats).
        run = time.strftime("%Y%m%d%H%M%S")
        for i in range(args.ingests):
            ms, status, answer = post(conn, "/v1/documents", {
                "id": f"bench-ingest-{name}-{run}-{i}",
                "text": f"# 基准文档 {i}\n\n这是第 {i} 篇用于测量写入延迟的小文档。",
                "scope": "scope-0",
            })
            if status not in (200, 201):
                stop.set()
                sys.exit(f"ingest answered {status}: {answer[:500]!r}")
            ingest.append(ms)
        stop.set()
        t.join()
        row["ingest"] = (percentile(ingest, 50), percentile(ingest, 99))
        row["lexical during ingests"] = (percentile(during, 50), percentile(during, 99))
    finally:
        server.stop()
    steps = write_steps(log)
    for step, ms in steps.items():
        row[f"ingest step {step} p50 ms"] = ms
    print(f"{name}: ingest steps (p50 ms): "
          + ", ".join(f"{k} {v:.1f}" for k, v in steps.items()), flush=True)
    phase(f"{name}: serve and ingests done", loads)
    return row


def beam_sweep(bin_: str, kb: Path, store: Path, queries: list[dict], args,
               env: dict[str, str], loads: list[str]) -> list[dict]:
    """Served dense search at each beam against the same store served with exact search."""
    qs = queries[: args.queries_n]

    def serve_dense(extra: dict[str, str]) -> dict:
        e = {k: v for k, v in env.items() if k not in ("ZHIKU_QDRANT_HNSW_EF", "ZHIKU_QDRANT_EXACT")}
        e.update(extra)
        server = Server(bin_, kb, store, e)
        try:
            conn = server.conn()
            searches(conn, qs[:20], "dense")  # warm-up
            all_ms, all_ids = searches(conn, qs, "dense", TOKEN, ids=True)
            one_ms, one_ids = searches(conn, qs, "dense", TOKEN_ONE, ids=True)
        finally:
            server.stop()
        return {"all": (all_ms, all_ids), "one": (one_ms, one_ids)}

    phase("beam sweep: exact", loads)
    exact = serve_dense({"ZHIKU_QDRANT_EXACT": "true"})
    rows = []
    for beam in ["exact"] + args.beams:
        if beam != "exact":
            phase(f"beam sweep: hnsw_ef {beam}", loads)
        got = exact if beam == "exact" else serve_dense(
            {} if beam == "default" else {"ZHIKU_QDRANT_HNSW_EF": beam})
        row = {"beam": beam}
        for scope in ("all", "one"):
            ms, ids = got[scope]
            ref = exact[scope][1]
            found = [len(set(a) & set(b)) / len(b) for a, b in zip(ids, ref) if b]
            row[scope] = (percentile(ms, 50), percentile(ms, 99),
                          statistics.mean(found) if found else float("nan"))
        rows.append(row)
        print(f"  hnsw_ef {beam}: all scopes {row['all'][0]:.2f} / {row['all'][1]:.2f} ms, "
              f"recall {row['all'][2]:.3f}; one scope {row['one'][0]:.2f} / {row['one'][1]:.2f} ms,"
              f" recall {row['one'][2]:.3f}", flush=True)
    phase("beam sweep done", loads)
    return rows


def throughput(bin_: str, kb: Path, stores: Path, queries: list[dict], args,
               env: dict[str, str], loads: list[str]) -> list[dict]:
    """Hybrid searches/s with 1 and with `--replicas` servers at each number of client
    threads."""
    qs = queries[: args.queries_n]
    rows = []
    for replicas in sorted({1, args.replicas}):
        phase(f"throughput: {replicas} replica(s)", loads)
        servers = [Server(bin_, kb, Path(f"{stores}-replica-{i}"), env) for i in range(replicas)]
        try:
            for s in servers:
                searches(s.conn(), qs[:20], "hybrid")  # warm-up
            for threads in args.threads:
                ms: list[float] = []
                errors = [0]
                lock = threading.Lock()
                go = threading.Barrier(threads + 1)
                deadline = [0.0]

                def client(i: int) -> None:
                    c = servers[i % replicas].conn()
                    mine, bad, n = [], 0, i * 37
                    go.wait()
                    while time.perf_counter() < deadline[0]:
                        t, status, _ = post(c, "/v1/search",
                                            {"query": qs[n % len(qs)]["text"], "k": 10,
                                             "mode": "hybrid"})
                        n += 1
                        if status == 200:
                            mine.append(t)
                        else:
                            bad += 1
                    with lock:
                        ms.extend(mine)
                        errors[0] += bad

                pool = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
                for t in pool:
                    t.start()
                deadline[0] = time.perf_counter() + args.step_s
                started = time.perf_counter()
                go.wait()
                for t in pool:
                    t.join()
                elapsed = time.perf_counter() - started
                row = {"replicas": replicas, "threads": threads, "rps": len(ms) / elapsed,
                       "p50": percentile(ms, 50), "p99": percentile(ms, 99),
                       "errors": errors[0], "load": load()}
                rows.append(row)
                print(f"  {replicas} replica(s), {threads} threads: {row['rps']:.1f} req/s, "
                      f"p50 {row['p50']:.1f} / p99 {row['p99']:.1f} ms, errors {errors[0]}, "
                      f"load {row['load']}", flush=True)
        finally:
            for s in servers:
                s.stop()
    phase("throughput done", loads)
    return rows


def access_tokens() -> str:
    """The `[[serve.tokens]]` of `--access`: a read-only service token of scope-0..9 and the
    persons, stored as SHA-256."""
    def sha(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    text = ('\n[[serve.tokens]]\nname = "bench-service"\n'
            f'sha256 = "{sha(TOKEN_SERVICE)}"\nscopes = {json.dumps(SCOPES)}\n')
    for name, token, user, groups in (PERSON, PERSON_B):
        text += (f'\n[[serve.tokens]]\nname = "{name}"\nsha256 = "{sha(token)}"\n'
                 f"scopes = {json.dumps(SCOPES)}\nuser = {json.dumps(user)}\n"
                 f"groups = {json.dumps(groups)}\n")
    return text


def corpus_readers(kb: Path) -> dict[str, list[str] | None]:
    """Each corpus document's readers from its front matter (None: it names none, so it is
    open to its scope)."""
    out: dict[str, list[str] | None] = {}
    for folder in sorted(kb.glob("part-*")):
        for path in sorted(folder.glob("doc-*.md")):
            doc_id, readers = None, None
            with open(path, encoding="utf-8") as f:
                f.readline()  # ---
                for line in f:
                    if line.startswith("---"):
                        break
                    key, _, value = line.partition(":")
                    value = value.strip()
                    if key == "id":
                        doc_id = value
                    elif key == "access":
                        readers = [r.strip() for r in value.strip("[]").split(",") if r.strip()]
            if doc_id:
                out[doc_id] = readers
    return out


def may_read(readers: list[str] | None, person: tuple) -> bool:
    _, _, user, groups = person
    mine = {f"user:{user}", "*"} | {f"group:{g}" for g in groups}
    return readers is None or bool(mine.intersection(readers))


def access_phase(bin_: str, kb: Path, store: Path, queries: list[dict], args,
                 env: dict[str, str], loads: list[str]) -> dict:
    """The reader filter's cost per route (service against person token, interleaved) and the
    propagation of access changes (see the docstring)."""
    out: dict = {}
    readers = corpus_readers(kb)
    mine = [d for d, r in readers.items() if may_read(r, PERSON)]
    theirs = [d for d, r in readers.items() if not may_read(r, PERSON)]
    out["corpus docs"] = len(readers)
    out["docs the person may read"] = len(mine)
    print(f"  access: {len(readers)} corpus documents, {len(mine)} readable by {PERSON[0]} "
          f"({PERSON[2]}, groups {PERSON[3]}), {len(theirs)} not", flush=True)
    n = args.access_n
    qs = queries[:n]
    rng = random.Random(15)
    # The changes' write steps are read from this server's log, as the ingests' are.
    log = store.parent / f"{store.name}-serve-access.log"
    logged = dict(env, ZHIKU_LOG=f"{env.get('ZHIKU_LOG', 'warn')},zhiku::put=debug")
    phase("access: start (serve)", loads)
    server = Server(bin_, kb, store, logged, log)
    try:
        conn = server.conn()
        tokens = [("service", TOKEN_SERVICE), ("person", PERSON[1])]
        total = {}
        for label, token in tokens:
            _, status, answer = get(conn, "/v1/documents?limit=1", token)
            if status != 200:
                sys.exit(f"GET /v1/documents as {label} answered {status}: {answer[:300]!r}")
            total[label] = json.loads(answer)["total"]
        out["documents total (service, person)"] = (total["service"], total["person"])
        # Requests per route: (method, path, body); both tokens send the same ones.
        pages = list(range(0, max(total["person"] - 100, 0) + 1, 100))
        rng.shuffle(pages)
        routes: list[tuple[str, list[tuple[str, str, dict | None]]]] = []
        for mode in ["dense", "hybrid", "lexical"]:
            routes.append((f"search {mode}", [
                ("POST", "/v1/search", {"query": q["text"], "k": 10, "mode": mode}) for q in qs]))
        routes.append(("ask", [("POST", "/v1/ask", {"question": q["text"]}) for q in qs]))
        routes.append(("documents?limit=100", [
            ("GET", f"/v1/documents?limit=100&offset={pages[i % len(pages)]}", None)
            for i in range(n)]))
        routes.append(("documents/{id}", [
            ("GET", f"/v1/documents/{urllib.parse.quote(d, safe='')}", None)
            for d in rng.sample(mine, min(n, len(mine)))]))
        routes.append(("documents/{id} (person denied)", [
            ("GET", f"/v1/documents/{urllib.parse.quote(d, safe='')}", None)
            for d in rng.sample(theirs, min(n, len(theirs)))]))

        def call(method: str, path: str, body: dict | None, token: str):
            if method == "POST":
                return post(conn, path, body, token)
            return get(conn, path, token)

        table = {}
        for route, items in routes:
            phase(f"access: {route}", loads)
            for method, path, body in items[:20]:  # warm-up, both tokens
                for _, token in tokens:
                    call(method, path, body, token)
            ms: dict[str, list[float]] = {"service": [], "person": []}
            statuses: dict[str, dict[str, int]] = {"service": {}, "person": {}}
            hits: dict[str, list[int]] = {"service": [], "person": []}
            leaks, service_hits, readable, overlap = 0, 0, 0, []
            for i, (method, path, body) in enumerate(items):
                got = {}
                # Alternate which token goes first, so neither always follows the other.
                for label, token in (tokens if i % 2 == 0 else tokens[::-1]):
                    t, status, answer = call(method, path, body, token)
                    ms[label].append(t)
                    statuses[label][str(status)] = statuses[label].get(str(status), 0) + 1
                    if status == 200 and route.startswith(("search", "ask")):
                        frame = json.loads(answer)
                        got[label] = [h["doc_id"] for h in
                                      frame.get("hits", frame.get("citations", []))]
                        hits[label].append(len(got[label]))
                for d in got.get("person", []):
                    leaks += d in readers and not may_read(readers[d], PERSON)
                for d in got.get("service", []):
                    service_hits += 1
                    readable += d in readers and may_read(readers[d], PERSON)
                if route.startswith("search") and got.get("service"):
                    a, b = set(got["service"]), set(got.get("person", []))
                    overlap.append(len(a & b) / len(a))
            row: dict = {"n": len(items), "statuses": statuses}
            for label in ("service", "person"):
                row[label] = (percentile(ms[label], 50), percentile(ms[label], 99))
            row["ratio"] = (row["person"][0] / row["service"][0],
                            row["person"][1] / row["service"][1])
            if hits["service"]:
                row["mean hits (service, person)"] = (statistics.mean(hits["service"]),
                                                      statistics.mean(hits["person"] or [0]))
                row["person hits they may not read"] = leaks
                row["service hits the person may read"] = readable / max(service_hits, 1)
            if overlap:
                row["service top-10 docs also in the person's"] = statistics.mean(overlap)
            table[route] = row
            print(f"  {route}: service {row['service'][0]:.2f} / {row['service'][1]:.2f} ms, "
                  f"person {row['person'][0]:.2f} / {row['person'][1]:.2f} ms "
                  f"(x{row['ratio'][0]:.2f} / x{row['ratio'][1]:.2f}); statuses {statuses}"
                  + (f"; person hits not theirs {leaks}" if hits["service"] else ""),
                  flush=True)
        out["routes"] = table
        phase("access: propagation", loads)
        out["propagation"] = propagation(server, args)
        out["serve RSS MiB"] = server.rss_mib()
    finally:
        server.stop()
    steps = write_steps(log)
    out["access change write steps p50 ms"] = steps
    print("  access changes: write steps (p50 ms): "
          + ", ".join(f"{k} {v:.1f}" for k, v in steps.items()), flush=True)
    phase("access: end", loads)
    return out


def propagation(server: Server, args) -> dict:
    """`--access-changes` rewrites of a probe document's readers, alternating group:g1 and
    group:g2, each probed by a person of each group from the moment it is sent."""
    run = time.strftime("%Y%m%d%H%M%S")
    # A word only the probe holds: lower-case Latin letters (one word to the analyzer).
    marker = "zkprobe" + "".join(chr(ord("a") + int(c)) for c in run)
    doc_id = f"access-probe-{run}"
    title = f"权限探针 {marker}"
    text = (f"# {title}\n\n这篇文档用于测量读者变更生效的时间，"
            f"它的标记词是 {marker}。文档的正文不变，只有读者在两个组之间交替。\n")
    writer = server.conn()
    by_group = {PERSON[3][0]: PERSON, PERSON_B[3][0]: PERSON_B}  # g1: person-a, g2: person-b
    order = list(by_group)
    probe_conns = {p[0]: server.conn() for p in by_group.values()}

    def write(group: str) -> tuple[float, int, dict]:
        ms, status, answer = post(writer, "/v1/documents", {
            "id": doc_id, "text": text, "title": title, "scope": "scope-0",
            "metadata": {"access": [f"group:{group}"]}})
        if status not in (200, 201):
            sys.exit(f"access change answered {status}: {answer[:500]!r}")
        return ms, status, json.loads(answer)

    def finds(person: tuple, token: str | None = None) -> bool:
        _, status, answer = post(probe_conns[person[0]], "/v1/search",
                                 {"query": marker, "k": 10, "mode": "lexical"},
                                 token or person[1])
        if status != 200:
            raise RuntimeError(f"probe search answered {status}: {answer[:300]!r}")
        return any(h["doc_id"] == doc_id for h in json.loads(answer)["hits"])

    ms, status, first = write(order[0])
    created_embedded = first.get("report", {}).get("chunks_embedded")
    current = order[0]
    for person in by_group.values():
        want = person is by_group[current]
        if finds(person) != want:
            sys.exit(f"probe: {person[0]} {'misses' if want else 'finds'} the probe document "
                     f"readable by group:{current} before any change")
    if not finds(PERSON, TOKEN_SERVICE):
        sys.exit("probe: the service token does not find the probe document")
    print(f"  access: probe {doc_id} written ({status}, {created_embedded} chunks embedded); "
          f"marker {marker}", flush=True)

    appear, disappear, both, post_ms, probes = [], [], [], [], []
    embedded: dict[str, int] = {}
    stale_after_ack, timeouts = 0, 0
    for i in range(args.access_changes):
        target = order[(order.index(current) + 1) % len(order)]
        newly, formerly = by_group[target], by_group[current]
        go = threading.Event()
        t0 = [0.0]
        acked: list[float | None] = [None]  # when the POST answered
        result: dict[str, float | None] = {}
        counts: dict[str, int] = {}
        stale = [0]
        errors: list[str] = []

        def prober(person: tuple, reflected_when_found: bool) -> None:
            go.wait()
            n = 0
            try:
                while True:
                    started = time.perf_counter()
                    found = finds(person)
                    done = time.perf_counter()
                    n += 1
                    if found == reflected_when_found:
                        result[person[0]] = done - t0[0]
                        break
                    if acked[0] is not None and started > acked[0]:
                        stale[0] += 1
                    if done - t0[0] > 30:
                        result[person[0]] = None
                        break
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"{person[0]}: {e}")
            counts[person[0]] = n

        threads = [threading.Thread(target=prober, args=(newly, True)),
                   threading.Thread(target=prober, args=(formerly, False))]
        for t in threads:
            t.start()
        t0[0] = time.perf_counter()
        go.set()
        ms, status, answer = write(target)
        acked[0] = time.perf_counter()
        for t in threads:
            t.join()
        if errors:
            sys.exit("; ".join(errors))
        current = target
        post_ms.append(ms)
        k = str(answer.get("report", {}).get("chunks_embedded"))
        embedded[k] = embedded.get(k, 0) + 1
        a, d = result.get(newly[0]), result.get(formerly[0])
        stale_after_ack += stale[0]
        if a is None or d is None:
            timeouts += 1
            continue
        appear.append(a * 1000.0)
        disappear.append(d * 1000.0)
        both.append(max(a, d) * 1000.0)
        probes.append(counts[newly[0]] + counts[formerly[0]])
        if (i + 1) % 50 == 0:
            print(f"  access: {i + 1} changes, both reflect it p50 {percentile(both, 50):.1f} "
                  f"ms, max {max(both):.1f} ms; POST p50 {percentile(post_ms, 50):.1f} ms",
                  flush=True)

    def stats(v: list[float]) -> tuple[float, float, float]:
        return (percentile(v, 50), percentile(v, 99), max(v) if v else float("nan"))

    return {
        "probe": doc_id, "changes": args.access_changes, "timeouts (30 s)": timeouts,
        "chunks embedded at creation": created_embedded,
        "chunks_embedded per change (value: count)": embedded,
        "POST ms": stats(post_ms),
        "newly reader finds it ms": stats(appear),
        "former reader no longer finds it ms": stats(disappear),
        "both reflect it ms": stats(both),
        "probe searches per change (mean)": statistics.mean(probes) if probes else float("nan"),
        "stale after ack": stale_after_ack,
    }


def print_access(name: str, a: dict) -> None:
    totals = a["documents total (service, person)"]
    print(f"\n{name}: per-person access ({a['corpus docs']} corpus documents, "
          f"{a['docs the person may read']} readable by {PERSON[0]} = {PERSON[2]} in "
          f"{', '.join(PERSON[3])}; GET /v1/documents total: service {totals[0]}, "
          f"person {totals[1]})\n")
    print("| route | n | service p50 / p99 ms | person p50 / p99 ms | person / service p50, p99 "
          "| hits service / person | person hits not theirs | service hits the person may read "
          "| service top-10 docs in the person's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for route, r in a["routes"].items():
        h = r.get("mean hits (service, person)")
        o = r.get("service top-10 docs also in the person's")
        print(f"| {route} | {r['n']} | {r['service'][0]:.2f} / {r['service'][1]:.2f} | "
              f"{r['person'][0]:.2f} / {r['person'][1]:.2f} | "
              f"{r['ratio'][0]:.2f}x, {r['ratio'][1]:.2f}x | "
              + (f"{h[0]:.2f} / {h[1]:.2f} | {r['person hits they may not read']} | "
                 f"{r['service hits the person may read']:.2f} | " if h else "- | - | - | ")
              + (f"{o:.2f} |" if o is not None else "- |"))
    print("\n(ask: hits are its citations; statuses per route and token in the JSON)")
    p = a["propagation"]
    print(f"\npropagation of access changes ({p['changes']} changes of {p['probe']}'s readers, "
          f"group:g1 <-> group:g2; goal p99 <= 1000 ms)\n")
    print("| measure | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|")
    for k in ("POST ms", "newly reader finds it ms", "former reader no longer finds it ms",
              "both reflect it ms"):
        v = p[k]
        print(f"| {k.removesuffix(' ms')} | {v[0]:.1f} | {v[1]:.1f} | {v[2]:.1f} |")
    print(f"\nchunks_embedded per change: {p['chunks_embedded per change (value: count)']} "
          f"(at creation: {p['chunks embedded at creation']}); probe searches per change "
          f"{p['probe searches per change (mean)']:.1f}; stale after ack {p['stale after ack']}; "
          f"timeouts {p['timeouts (30 s)']}")
    steps = a.get("access change write steps p50 ms") or {}
    if steps:
        print("write steps of the changes (p50 ms): "
              + ", ".join(f"{k} {v:.1f}" for k, v in steps.items()))


def print_rows(rows: list[dict]) -> None:
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
    p.add_argument("--json-out", type=Path, help="also write every figure to this JSON file")
    a = p.add_argument_group("per-person access (a corpus made with make-scale-corpus.py --access)")
    a.add_argument("--access", action="store_true",
                   help="measure the reader filter per route (service vs person token) and the "
                   "propagation of access changes")
    a.add_argument("--access-n", type=int, default=300,
                   help="requests per route and token (default 300)")
    a.add_argument("--access-changes", type=int, default=200,
                   help="changes of the probe document's readers (default 200)")
    c = p.add_argument_group("profile cluster (the whole store on a local Qdrant node)")
    c.add_argument("--profile", choices=["local", "cluster"], default="local")
    c.add_argument("--qdrant-url", help="the node's gRPC URL (ZHIKU_QDRANT_URL)")
    c.add_argument("--qdrant-http", help="its REST URL (default: the gRPC port - 1)")
    c.add_argument("--knowledge-base", default="scale",
                   help="ZHIKU_QDRANT_KNOWLEDGE_BASE (a baseline gets NAME-baseline)")
    c.add_argument("--hnsw-ef", help="ZHIKU_QDRANT_HNSW_EF for every phase but the beam sweep "
                   "(default: zhiku's, 256)")
    c.add_argument("--beams", type=lambda s: [b for b in s.split(",") if b],
                   default=["64", "128", "256", "512"],
                   help="beams of the recall sweep, comma-separated ('' skips it)")
    c.add_argument("--replicas", type=int, default=0,
                   help="measure hybrid throughput with 1 and with N serve replicas (0: skip)")
    c.add_argument("--threads", type=lambda s: [int(t) for t in s.split(",")],
                   default=[1, 2, 4, 8, 16], help="client threads, stepped")
    c.add_argument("--step-s", type=float, default=15.0, help="seconds per throughput step")
    c.add_argument("--p99-ms", type=float, default=100.0, help="the throughput's p99 target")
    args = p.parse_args()
    cluster = args.profile == "cluster"
    if cluster and not args.qdrant_url:
        p.error("--profile cluster needs --qdrant-url")

    queries = [json.loads(l) for l in args.queries.read_text(encoding="utf-8").splitlines() if l]
    meta = json.loads((args.kb / ".scale-corpus.json").read_text()) \
        if (args.kb / ".scale-corpus.json").exists() else {}
    if args.access and "access" not in meta:
        p.error(f"--access needs a corpus made with make-scale-corpus.py --access ({args.kb})")
    # The serve bench ingests with a token: a config beside the corpus names it (and a
    # read-only one of one scope, for the beam sweep).
    (args.kb / "zhiku.toml").write_text(
        '[[serve.tokens]]\nname = "bench"\nenv = "ZHIKU_BENCH_TOKEN"\n'
        f"scopes = {json.dumps(SCOPES + ['default'])}\nwrite = true\n\n"
        '[[serve.tokens]]\nname = "bench-one"\nenv = "ZHIKU_BENCH_TOKEN_ONE"\n'
        'scopes = ["scope-0"]\n' + (access_tokens() if args.access else ""),
        encoding="utf-8",
    )
    root = args.store_root or Path(tempfile.mkdtemp(prefix="zhiku-scale-"))
    print(f"corpus {args.kb}: {meta.get('files', '?')} files, {meta.get('expected_chunks', '?')} chunks; "
          f"profile {args.profile}")
    loads: list[str] = []
    phase("start", loads)
    rows, sweeps, tput, access = [], {}, {}, {}
    for name, bin_ in [("zhiku", args.bin)] + ([("baseline", args.baseline)] if args.baseline else []):
        env = dict(os.environ)
        env.update({"ZHIKU_EMBEDDER": "hashing", "ZHIKU_BENCH_TOKEN": TOKEN,
                    "ZHIKU_BENCH_TOKEN_ONE": TOKEN_ONE, "ZHIKU_LOG": "warn"})
        qdrant = None
        if cluster:
            kb_name = args.knowledge_base + ("-baseline" if name == "baseline" else "")
            env.update({"ZHIKU_PROFILE": "cluster", "ZHIKU_QDRANT_URL": args.qdrant_url,
                        "ZHIKU_QDRANT_KNOWLEDGE_BASE": kb_name})
            env.pop("ZHIKU_QDRANT_EXACT", None)
            env.pop("ZHIKU_QDRANT_HNSW_EF", None)
            if args.hnsw_ef:
                env["ZHIKU_QDRANT_HNSW_EF"] = args.hnsw_ef
            qdrant = Qdrant(args.qdrant_url, args.qdrant_http, kb_name)
        rows.append(measure(name, bin_, args.kb, root / name, queries, args, env, qdrant, loads))
        if args.access and name == "zhiku":
            access[name] = access_phase(bin_, args.kb, root / name, queries, args, env, loads)
        if qdrant and (args.beams or args.replicas):
            # The ingests leave the node optimising: wait, so that it does not share the cores.
            rows[-1]["Qdrant optimising after ingests s"] = qdrant.wait_optimized()
        if cluster and args.beams:
            sweeps[name] = beam_sweep(bin_, args.kb, root / name, queries, args, env, loads)
        if cluster and args.replicas:
            tput[name] = throughput(bin_, args.kb, root / name, queries, args, env, loads)
        if qdrant:
            rows[-1]["Qdrant RSS MiB (end)"], rows[-1]["Qdrant peak RSS MiB (end)"] = qdrant.rss_mib()
            rows[-1]["Qdrant storage MiB (end)"] = qdrant.disk_mib()
    phase("end", loads)
    print()

    print_rows(rows)
    for name, sweep in sweeps.items():
        print(f"\n{name}: served dense top-10 against exact search ({args.queries_n} queries)\n")
        print("| hnsw_ef | all scopes p50 / p99 ms | recall@10 | one scope p50 / p99 ms | recall@10 |")
        print("|---|---|---|---|---|")
        for r in sweep:
            a, o = r["all"], r["one"]
            print(f"| {r['beam']} | {a[0]:.2f} / {a[1]:.2f} | {a[2]:.3f} | "
                  f"{o[0]:.2f} / {o[1]:.2f} | {o[2]:.3f} |")
    for name, steps in tput.items():
        print(f"\n{name}: hybrid search throughput, {args.step_s:.0f} s per step, "
              f"p99 target {args.p99_ms:.0f} ms\n")
        print("| replicas | client threads | requests/s | p50 ms | p99 ms | errors | load |")
        print("|---|---|---|---|---|---|---|")
        for r in steps:
            print(f"| {r['replicas']} | {r['threads']} | {r['rps']:.1f} | {r['p50']:.1f} | "
                  f"{r['p99']:.1f} | {r['errors']} | {r['load']} |")
        for replicas in sorted({s["replicas"] for s in steps}):
            ok = [s for s in steps if s["replicas"] == replicas and s["p99"] <= args.p99_ms]
            best = max(ok, key=lambda s: s["rps"]) if ok else None
            print(f"{replicas} replica(s): " + (
                f"{best['rps']:.1f} requests/s at {best['threads']} threads (p99 {best['p99']:.1f} ms)"
                if best else f"no step with p99 <= {args.p99_ms:.0f} ms"))
    for name, a in access.items():
        print_access(name, a)
    print("\n" + "\n".join(loads))
    if args.json_out:
        figures = {"profile": args.profile, "corpus": meta, "rows": rows, "beams": sweeps,
                   "throughput": tput, "loads": loads}
        if args.access:
            figures["access"] = access
        args.json_out.write_text(json.dumps(figures, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
