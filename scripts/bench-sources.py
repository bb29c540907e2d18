#!/usr/bin/env python3
"""What a sync costs: 10,000 items in each kind of source (a git repository, a web site served
by Python's http.server, a WebDAV share served by wsgidav), synced by `zhiku sync` three times:
first (everything copied and indexed), again with nothing changed (the peer measured in the same
run: the ratio of the two is printed), and after one item of each source was deleted (it must
be gone from search after that one sync).

    python3 scripts/bench-sources.py [--items 10000] [--zhiku PATH] [--webdav-python PATH]

The zhiku binary defaults to the debug build in $CARGO_TARGET_DIR (or ~/.cache/zhiku/target);
the embedder is the hashing test double (what is measured is the sync, not embedding). The
WebDAV share needs wsgidav: `bash scripts/setup-webdav.sh` prints the python to pass.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on {port}")


def git(repo, *args):
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         "-c", "commit.gpgsign=false", *args],
        check=True, capture_output=True,
    )


def page(i):
    return (f"<html><head><title>页面 {i}</title></head><body><main><h1>页面 {i}</h1>"
            f"<p>第 {i} 页的正文：编号 W{i:05d} 的说明。</p></main></body></html>\n")


def markdown(i, kind):
    return f"# {kind} {i}\n\n{kind} 文档 {i} 的正文：编号 {kind[0].upper()}{i:05d} 的条款。\n"


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/zhiku/target"))
    ap.add_argument("--zhiku", default=str(Path(target) / "debug/zhiku"))
    ap.add_argument("--webdav-python", default=os.environ.get("ZHIKU_WEBDAV_PYTHON"))
    a = ap.parse_args()
    n = a.items
    work = Path(tempfile.mkdtemp(prefix="zhiku-bench-sources-"))
    procs = []
    try:
        # The git repository.
        repo = work / "repo"
        (repo / "docs").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        for i in range(n):
            d = repo / "docs" / f"d{i % 100:02d}"
            d.mkdir(exist_ok=True)
            (d / f"g{i}.md").write_text(markdown(i, "git"), encoding="utf-8")
        git(repo, "add", "--all")
        git(repo, "commit", "-q", "-m", "bench")
        # The web site, every page listed by a sitemap.
        site = work / "site"
        site.mkdir()
        urls = []
        web_port = free_port()
        for i in range(n):
            d = site / f"s{i % 100:02d}"
            d.mkdir(exist_ok=True)
            (d / f"w{i}.html").write_text(page(i), encoding="utf-8")
            urls.append(f"http://127.0.0.1:{web_port}/s{i % 100:02d}/w{i}.html")
        (site / "sitemap.xml").write_text(
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{u}</loc></url>" for u in urls) + "</urlset>", encoding="utf-8")
        (site / "index.html").write_text("<html><body><p>首页</p></body></html>", encoding="utf-8")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(web_port),
             "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_port(web_port)
        # The WebDAV share.
        share = work / "share"
        dav_url = None
        if a.webdav_python:
            for i in range(n):
                d = share / f"f{i % 100:02d}"
                d.mkdir(parents=True, exist_ok=True)
                (d / f"v{i}.md").write_text(markdown(i, "dav"), encoding="utf-8")
            dav_port = free_port()
            conf = work / "wsgidav.yaml"
            conf.write_text(
                f"host: 127.0.0.1\nport: {dav_port}\nprovider_mapping:\n  \"/\": \"{share}\"\n"
                "http_authenticator:\n  accept_basic: true\n  accept_digest: false\n  default_to_digest: false\n"
                "simple_dc:\n  user_mapping:\n    \"*\":\n      \"bench\":\n        password: \"bench\"\n"
                "verbose: 0\nlogging:\n  enable_loggers: []\n")
            procs.append(subprocess.Popen(
                [a.webdav_python, "-m", "wsgidav.server.server_cli", "--config", str(conf)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_port(dav_port)
            dav_url = f"http://127.0.0.1:{dav_port}/"
        else:
            print("SKIPPED the WebDAV share: pass --webdav-python $(bash scripts/setup-webdav.sh | tail -n 1)")
        kb = work / "kb"
        kb.mkdir()
        config = (f'[[sources]]\nname = "repo"\nkind = "git"\nurl = "{repo}"\n\n'
                  f'[[sources]]\nname = "site"\nkind = "web"\nstart = ["http://127.0.0.1:{web_port}/"]\n'
                  f'sitemaps = ["http://127.0.0.1:{web_port}/sitemap.xml"]\nmax_pages = {n + 100}\n'
                  'rate_ms = 0\ngone_after = "0"\n')
        if dav_url:
            config += (f'\n[[sources]]\nname = "share"\nkind = "webdav"\nurl = "{dav_url}"\n'
                       'user = "bench"\npassword_env = "BENCH_DAV_PASSWORD"\n')
        (kb / "zhiku.toml").write_text(config, encoding="utf-8")
        env = dict(os.environ, ZHIKU_EMBEDDER="hashing", BENCH_DAV_PASSWORD="bench")

        def sync(label):
            started = time.time()
            out = subprocess.run([a.zhiku, "--kb", str(kb), "sync", "--json"], env=env,
                                 capture_output=True, text=True)
            took = time.time() - started
            if out.returncode != 0:
                sys.exit(f"{label}: zhiku sync exited {out.returncode}\n{out.stderr}")
            lines = [json.loads(l) for l in out.stdout.splitlines()]
            sources = {l["source"]: l["outcome"] for l in lines if "source" in l}
            index = lines[-1]
            return took, sources, index

        def search(query):
            out = subprocess.run([a.zhiku, "--kb", str(kb), "search", query, "--json",
                                  "--no-refresh", "--mode", "lexical"],
                                 env=env, capture_output=True, text=True, check=True)
            return [h["doc_id"] for h in json.loads(out.stdout)["evidence"]]

        print(f"{n} items per source; load {load()} before the first sync")
        first = sync("first")
        second = sync("unchanged")
        # One item of each gone.
        (repo / "docs/d07/g7.md").unlink()
        git(repo, "commit", "-q", "--all", "-m", "drop")
        (site / "s07/w7.html").unlink()
        if dav_url:
            (share / "f07/v7.md").unlink()
        third = sync("after deletions")
        rows = []
        for name in first[1]:
            f, s, t = first[1][name], second[1][name], third[1][name]
            rows.append((name, f, s, t))
        print("| source | first sync: requests | bytes | unchanged sync: requests | per item | bytes | copied | after one deletion: removed |")
        print("|---|---|---|---|---|---|---|---|")
        for name, f, s, t in rows:
            print(f"| {name} | {f['requests']} | {f['bytes']} | {s['requests']} | "
                  f"{s['requests'] / max(1, s['unchanged']):.4f} | {s['bytes']} | "
                  f"{s['added'] + s['changed']} | {t['removed']} |")
        print()
        print(f"zhiku sync, all sources and the index: first {first[0]:.1f} s, unchanged "
              f"{second[0]:.1f} s (ratio {second[0] / first[0]:.3f}), after deletions {third[0]:.1f} s")
        i1, i2, i3 = first[2], second[2], third[2]
        print(f"index after the first sync: {i1['docs_added']} documents added, {i1['chunks_embedded']} chunks embedded")
        print(f"index after the unchanged sync: {i2['docs_changed']} changed, {i2['docs_added']} added, "
              f"{i2['chunks_embedded']} chunks embedded (nothing extracted: every copy recognised by its stamp)")
        print(f"index after the deletions: {i3['docs_removed']} documents removed")
        leftover = [d for q, d in [("编号 G00007", "sources/repo/docs/d07/g7.md"),
                                    ("编号 W00007", "sources/site/s07/w7.html"),
                                    ("编号 D00007", "sources/share/f07/v7.md")] if d in search(q)]
        print(f"deleted items still answering after that one sync: {leftover or 'none'}")
        print(f"load {load()} after the run")
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
