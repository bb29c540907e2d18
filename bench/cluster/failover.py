#!/usr/bin/env python3
"""failover.py — load generator and checker for zhiku's `cluster` failover bench.

Driven by bench/cluster/run.sh (a bench, not a test: it measures and reports, it does not
pass or fail). Standard library only.

Four client threads (--threads) send requests for --duration seconds, each to the replicas in
turn (round-robin); besides them one reader thread (--readers) sends only searches, one every
0.1 s (--reader-every), so that a spell without reads is not just every load thread waiting on
a write. A request whose connection fails, times out (--timeout, 10 s) or answers
5xx is retried once on the other replica, as a load balancer would; both attempts are kept.
Mix: 70 % POST /v1/search, 20 % POST /v1/ask, 10 % POST /v1/documents (IDs bench-<thread>-<n>),
all with the bearer token.

Timeline: at 1/3 of the run `<cluster-cmd> kill 2` (SIGKILL a Qdrant node; a second later,
read point 0 of the knowledge base's collections on node 1 at read consistency `majority` and
`1`: before zhiku's fix of 2026-12-05 its catalog head read asked for `majority`, now for the
default, `1`), at 1/2 SIGKILL replica 1 (by PID; within --kill-wait s, as soon as the catalog head
read on node 1 shows the write lease held by replica 1 — its owner is "<pid>:…" — or, without
--qdrant-http, as soon as a write has been in flight on it for 100 ms), at 2/3
`<cluster-cmd> revive 2`. From the replica kill on, the lease on record is read on node 1 every
0.25 s and each change of holder is kept (events.lease_changes), to see when the dead replica's
lease lapses or is released.

Afterwards: if no write was acknowledged after the replica kill, a probe writes to replica 2
every second until one is (write recovery); then, once the node is back, GET
/v1/documents/<id> on replica 2 for every write sent (acknowledged: 200 expected, a 404 is a
lost write). Prints a short table and one JSON summary (also written to --out).

Each attempt carries its own X-Request-Id (b-<thread>-<n>-<attempt>), so that with
--replica-log (once per replica, in order) every attempt the client gave up on (a timeout) can
be found in that replica's log: since 2026-12-05 such a request gets a line with status 499.
The report also gives, per phase, the longest spell without a successful read (search or ask).
"""

import argparse
import json
import random
import re
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

QUESTIONS = [
    "混合检索是怎么融合的？",
    "chunk ID",
    "增量索引",
    "什么是嵌入空间？",
    "引用是如何校验的？",
    "词法检索用什么分词？",
    "How are citations checked against the retrieval?",
    "document identity",
    "离线评测的指标有哪些？",
    "What does the chunking policy do?",
    "发布前要检查什么？",
]

PHASES = ["before node kill", "node down", "node+replica down", "after revive"]
TYPES = ["search", "ask", "write"]


def now():
    return time.monotonic()


def http(method, url, token, body=None, timeout=10.0, rid=None):
    """One HTTP request: (status or None, error text or None, latency s, parsed body or None)."""
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if rid:
        req.add_header("X-Request-Id", rid)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    t0 = now()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            status = r.status
        err = None
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
        err = None
    except Exception as e:  # refused, reset, timeout
        return None, "%s: %s" % (type(e).__name__, e), now() - t0, None
    lat = now() - t0
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    return status, err, lat, parsed


def failed(status):
    return status is None or status >= 500


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    i = min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[i]


class Bench:
    def __init__(self, a):
        self.a = a
        self.replicas = a.replica
        self.lock = threading.Lock()
        self.records = []
        self.events = {}
        self.t0 = None
        self.stop = threading.Event()
        self.inflight = {}  # (thread) -> (type, replica, start)
        self.catalog = None  # the catalog's collection, once found
        self.watch_stop = threading.Event()
        self.watcher = None

    def rel(self, t):
        return round(t - self.t0, 3)

    def cluster(self, *args):
        cmd = shlex.split(self.a.cluster_cmd) + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True)
        return p.returncode, (p.stderr.strip().splitlines() or [""])[-1]

    # -- the clients -------------------------------------------------------------------------

    def one(self, thread, n, rr, reader=False):
        r = 0.0 if reader else random.random()
        if r < 0.7:
            kind, path = "search", "/v1/search"
            body = {"query": random.choice(QUESTIONS), "k": 5}
        elif r < 0.9:
            kind, path = "ask", "/v1/ask"
            body = {"question": random.choice(QUESTIONS)}
        else:
            kind, path = "write", "/v1/documents"
            body = {
                "id": "bench-%d-%d" % (thread, n),
                "text": "# 压测文档 %d\n\n第 %d 条：失效切换期间写入的内容，编号 %d-%d。"
                % (n, n, thread, n),
            }
        first = rr % len(self.replicas)
        order = [first, (first + 1) % len(self.replicas)]
        start = now()
        attempts = []
        for j, i in enumerate(order):
            with self.lock:
                self.inflight[thread] = (kind, i + 1, start)
            rid = "b-%s-%d-%d" % ("r%d" % thread if reader else thread, n, j + 1)
            t_att = now()
            st, err, lat, parsed = http(
                "POST", self.replicas[i] + path, self.a.token, body, self.a.timeout, rid
            )
            att = {"replica": i + 1, "status": st, "error": err, "latency": round(lat, 4),
                   "rid": rid, "t": self.rel(t_att)}
            if kind == "search" and st == 200 and isinstance(parsed, dict):
                hits = parsed.get("hits") or parsed.get("results") or []
                att["hits"] = len(hits) if isinstance(hits, list) else None
            if st is not None and st >= 400 and isinstance(parsed, dict):
                att["body"] = json.dumps(parsed, ensure_ascii=False)[:300]
            attempts.append(att)
            if not failed(st):
                break
        end = now()
        with self.lock:
            self.inflight.pop(thread, None)
        last = attempts[-1]
        rec = {
            "t": self.rel(start),
            "end": self.rel(end),
            "type": "reader" if reader else kind,
            "replica": first + 1,
            "status": last["status"],
            "error": last["error"],
            "latency": round(end - start, 4),
            "ok": last["status"] is not None and 200 <= last["status"] < 300,
            "first_failed": failed(attempts[0]["status"]),
            "retry_saved": len(attempts) > 1 and not failed(last["status"]),
            "attempts": attempts,
        }
        if kind == "write":
            rec["id"] = body["id"]
        with self.lock:
            self.records.append(rec)

    def client(self, thread):
        n = 0
        rr = thread  # stagger the round-robin between threads
        while not self.stop.is_set():
            self.one(thread, n, rr)
            n += 1
            rr += 1

    def reader(self, thread):
        """A client that only searches, one request every --reader-every s (round-robin, the
        same retry): whether reads are answered does not then depend on whether the load's
        threads are all stuck in writes."""
        n = 0
        while not self.stop.is_set():
            t = now()
            self.one(thread, n, n, reader=True)
            n += 1
            self.stop.wait(max(0.0, self.a.reader_every - (now() - t)))

    # -- the timeline ------------------------------------------------------------------------

    def at(self, frac):
        delay = self.t0 + frac * self.a.duration - now()
        if delay > 0:
            self.stop.wait(delay)

    def timeline(self):
        if self.a.qdrant_http and self.a.kb_name:
            self.find_catalog()
        self.at(1 / 3)
        t = now()
        rc, msg = self.cluster("kill", "2")
        self.events["node_kill"] = {"t": self.rel(t), "rc": rc, "msg": msg}
        if self.a.qdrant_http and self.a.kb_name:
            self.stop.wait(1)
            self.events["node_kill"]["head_probe"] = self.head_probe()
        self.at(1 / 2)
        # Land the kill while replica 1 holds the write lease on record (waiting at most
        # --kill-wait s); without the head to read, on a write in flight on it for 100 ms.
        planned = now()
        mine = "%d:" % self.a.replica1_pid
        holder = None
        while True:
            with self.lock:
                inflight = [v for v in self.inflight.values() if v[1] == 1]
            if self.catalog:
                holder = self.lease()
                if holder and holder["owner"].startswith(mine) and \
                        holder["until_ms"] > time.time() * 1000:
                    break
            elif any(k == "write" and now() - began >= 0.1 for k, _, began in inflight):
                break
            if now() - planned >= self.a.kill_wait:
                break
            time.sleep(0.005)
        t = now()
        try:
            subprocess.run(["kill", "-9", str(self.a.replica1_pid)], check=True)
            rc = 0
        except subprocess.CalledProcessError as e:
            rc = e.returncode
        self.events["replica_kill"] = {
            "t": self.rel(t),
            "rc": rc,
            "pid": self.a.replica1_pid,
            "inflight_on_replica1": [k for k, _, _ in inflight],
            "waited_for_write": round(t - planned, 3),
            "lease_at_kill": None if holder is None else dict(
                holder, replica1=holder["owner"].startswith(mine),
                left_s=round(holder["until_ms"] / 1000.0 - time.time(), 3)),
        }
        if self.catalog:
            self.watcher = threading.Thread(target=self.watch_lease, daemon=True)
            self.watcher.start()
        self.at(2 / 3)
        t = now()
        self.events["node_revive"] = {"t": self.rel(t)}
        rc, msg = self.cluster("revive", "2")
        self.events["node_revive"].update({"ready": self.rel(now()), "rc": rc, "msg": msg})

    def find_catalog(self):
        """The knowledge base's collection whose point 0 is a catalog head (read on node 1)."""
        q = self.a.qdrant_http
        try:
            with urllib.request.urlopen(q + "/collections", timeout=5) as r:
                names = [c["name"] for c in json.load(r)["result"]["collections"]]
        except Exception:
            return None
        for name in sorted(n for n in names if n.startswith("zhiku_" + self.a.kb_name + "_")):
            self.catalog = name
            if self.lease() is not None:
                return name
        self.catalog = None
        return None

    def lease(self):
        """The write lease on record in the catalog head, read on node 1 (consistency 1):
        {owner, epoch, until_ms, version}, or None."""
        req = urllib.request.Request(
            "%s/collections/%s/points" % (self.a.qdrant_http, self.catalog),
            data=json.dumps({"ids": [0], "with_payload": True}).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                res = json.load(r)["result"]
            payload = res[0]["payload"]
            if payload.get("kind") != "head":
                return None
            head = json.loads(payload["head"])
            lease = head.get("lease") or {}
            return {"owner": lease.get("owner", ""), "epoch": lease.get("epoch"),
                    "until_ms": lease.get("until_ms", 0), "version": head.get("version")}
        except Exception:
            return None

    def watch_lease(self):
        """From the replica kill until the run (and the recovery probe) ends: each change of the
        lease's holder on record, with the time."""
        changes = self.events.setdefault("lease_changes", [])
        last = object()
        while not self.watch_stop.is_set():
            l = self.lease()
            if l is not None:
                key = (l["owner"], l["epoch"])
                if key != last:
                    last = key
                    changes.append({"t": self.rel(now()), "owner": l["owner"] or "(nobody)",
                                    "epoch": l["epoch"],
                                    "replica1": l["owner"].startswith("%d:" % self.a.replica1_pid),
                                    "left_s": round(l["until_ms"] / 1000.0 - time.time(), 1)
                                    if l["owner"] else None})
            self.watch_stop.wait(0.25)

    def head_probe(self):
        """With node 2 down: read point 0 (the catalog's head) of each of the knowledge base's
        collections on node 1, at read consistency `majority` (what zhiku's catalog head read
        asked for before the fix) and `1` (the default, what it asks for now); the status of each."""
        out = {}
        q = self.a.qdrant_http
        try:
            with urllib.request.urlopen(q + "/collections", timeout=5) as r:
                names = [c["name"] for c in json.load(r)["result"]["collections"]]
        except Exception as e:
            return {"error": str(e)}
        for name in sorted(n for n in names if n.startswith("zhiku_" + self.a.kb_name + "_")):
            for cons in ("majority", "1"):
                req = urllib.request.Request(
                    "%s/collections/%s/points?consistency=%s" % (q, name, cons),
                    data=json.dumps({"ids": [0], "with_payload": ["kind"]}).encode(),
                    headers={"Content-Type": "application/json"}, method="POST")
                t = now()
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        res = json.load(r)["result"]
                        st = "200, %d point(s)%s" % (len(res), " (head)" if res and
                                                    (res[0].get("payload") or {}).get("kind") == "head" else "")
                except urllib.error.HTTPError as e:
                    st = "%d %s" % (e.code, e.read().decode(errors="replace")[:160])
                except Exception as e:
                    st = "error %s" % e
                out["%s consistency=%s" % (name, cons)] = "%s in %.0f ms" % (st, 1000 * (now() - t))
        return out

    # -- after the load ----------------------------------------------------------------------

    def recovery_probe(self):
        """Write to replica 2 every second until acknowledged (at most --probe s)."""
        kill_t = self.events["replica_kill"]["t"]
        acked_after = [r for r in self.records if r["type"] == "write" and r["ok"] and r["end"] > kill_t]
        # writes sent after the kill only (not one in flight then, which may hold the lease)
        started_after = [r["end"] for r in acked_after if r["t"] > kill_t]
        if acked_after:
            first = min(r["end"] for r in acked_after)
            return {"probe_used": False, "first_ack_after_kill": round(first - kill_t, 3),
                    "first_ack_of_write_sent_after_kill":
                        round(min(started_after) - kill_t, 3) if started_after else None}
        url = self.replicas[1] + "/v1/documents"
        n = 0
        deadline = now() + self.a.probe
        probes = []
        while now() < deadline:
            doc_id = "bench-probe-%d" % n
            t = now()
            st, err, lat, _ = http("POST", url, self.a.token,
                                   {"id": doc_id, "text": "# 探测 %d\n\n恢复探测写入 %d。" % (n, n)},
                                   self.a.timeout)
            probes.append({"t": self.rel(t), "status": st, "error": err, "latency": round(lat, 3)})
            if st is not None and 200 <= st < 300:
                self.records.append({"t": self.rel(t), "end": self.rel(now()), "type": "probe",
                                     "id": doc_id, "ok": True, "status": st})
                return {"probe_used": True, "first_ack_after_kill": round(self.rel(now()) - kill_t, 3),
                        "probes": probes}
            n += 1
            time.sleep(max(0.0, 1.0 - (now() - t)))
        return {"probe_used": True, "first_ack_after_kill": None, "probes": probes}

    def check_writes(self):
        writes = [r for r in self.records if r["type"] in ("write", "probe")]
        acked = {r["id"] for r in writes if r["ok"]}
        unacked = {r["id"] for r in writes} - acked
        out = {"acknowledged": len(acked), "lost": [], "lost_status": {},
               "unacknowledged": len(unacked), "unacknowledged_present": 0, "check_errors": []}
        for doc_id in sorted(acked | unacked):
            st = None
            for _ in range(3):  # a transient failure of the check is not a lost write
                st, err, _, parsed = http("GET", self.replicas[1] + "/v1/documents/" + doc_id,
                                          self.a.token, None, self.a.timeout)
                if st is not None and st < 500:
                    break
                time.sleep(1)
            if doc_id in acked:
                if st == 404:
                    out["lost"].append(doc_id)
                elif st != 200:
                    out["check_errors"].append({"id": doc_id, "status": st, "error": err})
            elif st == 200:
                out["unacknowledged_present"] += 1
        return out

    # -- the report --------------------------------------------------------------------------

    def abandoned(self, load):
        """The attempts the client gave up on (timeout), per replica and type, against the
        replicas' logs (--replica-log): how many got a 499 line, another status, or no line;
        and every 499 line in each log, per route."""
        if not self.a.replica_log:
            return None
        logs = []
        for path in self.a.replica_log:
            lines = {}
            n499 = {}
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        m = re.search(r"request_id=(\S+)", line)
                        st = re.search(r"status=(\d+)", line)
                        if not m or not st or "zhiku::http" not in line:
                            continue
                        route = (re.search(r"route=(\S+)", line) or [None, "?"])[1]
                        lines[m.group(1)] = int(st.group(1))
                        if st.group(1) == "499":
                            n499[route] = n499.get(route, 0) + 1
            except OSError as e:
                lines, n499 = None, {"error": str(e)}
            logs.append((lines, n499))
        out = {"log_499_lines": {"replica %d" % (i + 1): logs[i][1] for i in range(len(logs))},
               "client_gave_up": {}}
        for r in self.records:
            for att in r.get("attempts") or []:
                if not att["error"] or "timed out" not in att["error"]:
                    continue
                key = "replica %d %s" % (att["replica"], r["type"])
                c = out["client_gave_up"].setdefault(
                    key, {"attempts": 0, "logged_499": 0, "logged_other": {}, "no_line": []})
                c["attempts"] += 1
                lines = logs[att["replica"] - 1][0] if att["replica"] <= len(logs) else None
                st = None if lines is None else lines.get(att["rid"])
                if st == 499:
                    c["logged_499"] += 1
                elif st is None:
                    c["no_line"].append(att["rid"])
                else:
                    c["logged_other"][str(st)] = c["logged_other"].get(str(st), 0) + 1
        return out

    def phase_of(self, t):
        b = [self.events["node_kill"]["t"], self.events["replica_kill"]["t"],
             self.events["node_revive"]["t"]]
        return PHASES[sum(1 for x in b if t >= x)]

    def report(self, recovery, writes):
        load = [r for r in self.records if r["type"] in TYPES]
        table = []
        for ph in PHASES:
            for kind in TYPES:
                rs = [r for r in load if r["type"] == kind and self.phase_of(r["t"]) == ph]
                lats = [r["latency"] for r in rs]
                table.append({
                    "phase": ph, "type": kind, "requests": len(rs),
                    "failed": sum(1 for r in rs if not r["ok"]),
                    "failed_first": sum(1 for r in rs if r["first_failed"]),
                    "retry_saved": sum(1 for r in rs if r["retry_saved"]),
                    "p50_ms": None if not lats else round(1000 * pct(lats, 50)),
                    "p99_ms": None if not lats else round(1000 * pct(lats, 99)),
                })
        # the longest spell with no acknowledged write (from the first ack to the last one,
        # or to the end of the load when none came after)
        acks = sorted(r["end"] for r in self.records if r["type"] in ("write", "probe") and r["ok"])
        gap = {"seconds": None}
        if acks:
            pts = acks + ([self.a.duration] if acks[-1] < self.a.duration else [])
            best = max(((b - a, a, b) for a, b in zip(pts, pts[1:])), default=(0, acks[0], acks[0]))
            gap = {"seconds": round(best[0], 3), "from": best[1], "to": best[2]}
        # per phase, the longest spell with no successful read (search or ask) completed: from
        # the phase's start to its end, ends included
        bounds = [0.0, self.events["node_kill"]["t"], self.events["replica_kill"]["t"],
                  self.events["node_revive"]["t"], self.a.duration]
        # (any read: the load's searches and asks and the reader's searches; the reader's only;
        # the longest a read sent in the phase waited, answered or not)
        read_gaps = {}
        for k, ph in enumerate(PHASES):
            lo, hi = bounds[k], bounds[k + 1]
            row = {}
            for name, types in (("any", ("search", "ask", "reader")), ("reader", ("reader",))):
                ends = sorted(r["end"] for r in self.records if r["type"] in types and r["ok"]
                              and lo <= r["end"] < hi)
                pts = [lo] + ends + [hi]
                best = max((b - a, a, b) for a, b in zip(pts, pts[1:]))
                row[name] = {"seconds": round(best[0], 3), "from": round(best[1], 3),
                             "to": round(best[2], 3), "reads_ok": len(ends)}
            rd = [r for r in self.records if r["type"] in ("search", "ask", "reader")
                  and lo <= r["t"] < hi]
            row["sent"] = len(rd)
            row["failed"] = sum(1 for r in rd if not r["ok"])
            row["longest_wait_s"] = max((r["latency"] for r in rd), default=None)
            read_gaps[ph] = row
        rdr = [r for r in self.records if r["type"] == "reader"]
        reader = {ph: {"requests": len(x), "failed": sum(1 for r in x if not r["ok"]),
                       "p50_ms": round(1000 * pct([r["latency"] for r in x], 50)) if x else None,
                       "p99_ms": round(1000 * pct([r["latency"] for r in x], 99)) if x else None}
                  for ph in PHASES for x in [[r for r in rdr if self.phase_of(r["t"]) == ph]]}
        # failures by status/error, per type and phase
        causes = {}
        for r in load:
            for att in r["attempts"]:
                if failed(att["status"]) or att["status"] >= 400:
                    key = "%s %s r%d %s" % (self.phase_of(r["t"]), r["type"], att["replica"],
                                             att["status"] if att["status"] else
                                             (att["error"] or "").split(":")[0])
                    causes[key] = causes.get(key, 0) + 1
        examples = {}
        for r in load:
            for att in r["attempts"]:
                if att["status"] is not None and att["status"] >= 400:
                    k = "%s %s" % (r["type"], att["status"])
                    examples.setdefault(k, {"t": r["t"], "replica": att["replica"],
                                            "body": att.get("body")})
        searches = [a.get("hits") for r in load if r["type"] == "search"
                    for a in r["attempts"] if a.get("hits") is not None]
        return {
            "duration_s": self.a.duration, "threads": self.a.threads,
            "events": self.events, "table": table,
            "totals": {"requests": len(load), "failed": sum(1 for r in load if not r["ok"]),
                       "failed_first": sum(1 for r in load if r["first_failed"]),
                       "search_hits_mean": round(sum(searches) / len(searches), 2) if searches else None},
            "write_gap": gap, "read_gaps": read_gaps, "reader": reader,
            "abandoned": self.abandoned(load),
            "write_recovery": recovery, "writes": writes,
            "failure_causes": causes, "error_examples": examples,
        }


def human(s):
    ev = s["events"]
    print("events: node 2 killed at %.1fs, replica 1 killed at %.1fs (writes in flight on it: %s, "
          "waited %.2fs for the lease or a write),"
          " node 2 revived at %.1fs (ready at %s s, rc %s)" % (
              ev["node_kill"]["t"], ev["replica_kill"]["t"],
              ev["replica_kill"]["inflight_on_replica1"].count("write"),
              ev["replica_kill"]["waited_for_write"],
              ev["node_revive"]["t"], ev["node_revive"].get("ready"), ev["node_revive"].get("rc")))
    print("%-18s %-6s %8s %7s %8s %6s %7s %7s" % (
        "phase", "type", "requests", "failed", "1st fail", "saved", "p50 ms", "p99 ms"))
    for row in s["table"]:
        print("%-18s %-6s %8d %7d %8d %6d %7s %7s" % (
            row["phase"], row["type"], row["requests"], row["failed"], row["failed_first"],
            row["retry_saved"], row["p50_ms"], row["p99_ms"]))
    for k, v in sorted((ev["node_kill"].get("head_probe") or {}).items()):
        print("  node 2 down, point 0 read on node 1: %s: %s" % (k, v))
    lk = ev["replica_kill"].get("lease_at_kill")
    if lk:
        print("lease on record at the replica kill: %s epoch %s, %s s left (replica 1: %s)" % (
            lk["owner"] or "(nobody)", lk["epoch"], lk["left_s"], lk["replica1"]))
    for c in ev.get("lease_changes") or []:
        print("  lease at %.2f s: %s epoch %s%s%s" % (
            c["t"], c["owner"], c["epoch"], " (replica 1)" if c["replica1"] else "",
            "" if c["left_s"] is None else ", %s s left" % c["left_s"]))
    g, w, rec = s["write_gap"], s["writes"], s["write_recovery"]
    print("longest spell without an acknowledged write: %s s (%s → %s)" % (
        g.get("seconds"), g.get("from"), g.get("to")))
    print("first write acknowledged %s s after the replica kill%s; the first one sent after it: %s s" % (
        rec.get("first_ack_after_kill"), " (by the post-run probe)" if rec.get("probe_used") else "",
        rec.get("first_ack_of_write_sent_after_kill", rec.get("first_ack_after_kill"))))
    print("writes: %d acknowledged, %d lost, %d check errors; %d unacknowledged, %d of them stored anyway" % (
        w["acknowledged"], len(w["lost"]), len(w["check_errors"]), w["unacknowledged"],
        w["unacknowledged_present"]))
    for ph, x in s["reader"].items():
        print("reader (searches only), %-18s %5d requests, %d failed, p50 %s ms, p99 %s ms" % (
            ph + ":", x["requests"], x["failed"], x["p50_ms"], x["p99_ms"]))
    for ph, g in s["read_gaps"].items():
        print("longest spell without a successful read, %s: any %s s (%s → %s; %d ok), reader %s s "
              "(%s → %s); %d reads sent, %d failed, longest wait %s s" % (
                  ph, g["any"]["seconds"], g["any"]["from"], g["any"]["to"], g["any"]["reads_ok"],
                  g["reader"]["seconds"], g["reader"]["from"], g["reader"]["to"],
                  g["sent"], g["failed"], g["longest_wait_s"]))
    ab = s.get("abandoned")
    if ab:
        for k, v in ab["log_499_lines"].items():
            print("499 lines in the log of %s: %s" % (k, v or "none"))
        for k, c in sorted(ab["client_gave_up"].items()):
            print("  client gave up (timeout) on %s: %d attempts, %d logged 499, other %s, no line %d%s" % (
                k, c["attempts"], c["logged_499"], c["logged_other"] or "-", len(c["no_line"]),
                (" " + ",".join(c["no_line"][:5])) if c["no_line"] else ""))
    for k, v in sorted(s["failure_causes"].items()):
        print("  failed attempt: %-60s %d" % (k, v))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--token", required=True)
    p.add_argument("--replica", action="append", required=True, help="replica base URL (twice)")
    p.add_argument("--replica1-pid", type=int, required=True)
    p.add_argument("--cluster-cmd", required=True, help="the cluster script, e.g. 'env ... bash qdrant-cluster.sh'")
    p.add_argument("--duration", type=float, default=60)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--timeout", type=float, default=10)
    p.add_argument("--readers", type=int, default=1, help="search-only client threads (besides --threads)")
    p.add_argument("--reader-every", type=float, default=0.1, help="a reader's pace, s per request")
    p.add_argument("--kill-wait", type=float, default=5,
                   help="at 1/2, wait at most this long for a write in flight on replica 1 before killing it")
    p.add_argument("--qdrant-http", help="node 1's HTTP URL, for the catalog-head probe after the node kill")
    p.add_argument("--kb-name", help="ZHIKU_QDRANT_KNOWLEDGE_BASE, to find its collections")
    p.add_argument("--replica-log", action="append",
                   help="a replica's log file (once per replica, in --replica order), to find "
                        "the requests the client gave up on")
    p.add_argument("--probe", type=float, default=60, help="longest write-recovery probe, s")
    p.add_argument("--out", help="write the JSON summary (and every request) here")
    a = p.parse_args()
    random.seed(37)

    b = Bench(a)
    b.t0 = now()
    threads = [threading.Thread(target=b.client, args=(i,), daemon=True) for i in range(a.threads)]
    threads += [threading.Thread(target=b.reader, args=(i,), daemon=True) for i in range(a.readers)]
    tl = threading.Thread(target=b.timeline, daemon=True)
    for t in threads:
        t.start()
    tl.start()
    b.stop.wait(a.duration)
    b.stop.set()
    for t in threads:
        t.join()
    tl.join()  # the revive may outlast the load: the node must be back before the check
    recovery = b.recovery_probe()
    b.watch_stop.set()
    if b.watcher:
        b.watcher.join()
    time.sleep(2)  # a replica follows the catalog on record at most once a second
    writes = b.check_writes()
    s = b.report(recovery, writes)
    human(s)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"summary": s, "records": b.records}, f, ensure_ascii=False, indent=1)
    print(json.dumps(s, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
