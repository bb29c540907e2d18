#!/usr/bin/env python3
"""Run the peer OCR engines over the fixture page images and write engine-output JSONL.

Usage: peers.py FIXTURES_DIR OUT_DIR [--engines rapidocr,tesseract] [--conditions a,b]
                [--limit N] [--resume]
Run it with the venv from bench/ocr/setup.sh.

Engines, each single-threaded, one page at a time, on the page image (images/...; a frame
of a multi-page TIFF is written out to a PNG first, outside the timing):
  rapidocr   rapidocr-onnxruntime (PP-OCRv4 mobile det+rec, v2 direction classifier, the
             models shipped in the wheel), default settings, onnxruntime intra-op and
             inter-op threads 1, OpenCV threads 1. Models are loaded (and warmed on a tiny
             image) once, before timing. Per-page seconds cover decoding the file and OCR.
  tesseract  the tesseract CLI, `tesseract IMG stdout -l LANGS tsv`, default --psm (3),
             OMP_THREAD_LIMIT=1. LANGS by the page's script: chi_sim+eng (Simplified),
             chi_tra+eng (Traditional), eng (English). Per-page seconds cover the whole
             process (start, loading the traineddata, decoding, OCR), as a CLI user sees it.

Output: OUT_DIR/<engine>.jsonl, one record a page:
  {"engine", "file", "page", "page_id", "size": [w, h], "seconds",
   "lines": [{"text", "box": [x0, y0, x1, y1], "confidence", "words"?}]}
  ("words", optional, [{"text", "box"}]: tesseract's word boxes; score.py places table
  cells from words when a line has them.)
  file/page name the image the engine read (as in truth.jsonl); boxes are in that image's
  pixels; lines are in the engine's own output order. OUT_DIR/peers-meta.json records the
  versions, thread settings, machine load before and after.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

from PIL import Image  # noqa: E402

TESS_LANG = {"sc": "chi_sim+eng", "tc": "chi_tra+eng", "en": "eng"}


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return open("/proc/loadavg").read().strip()


def is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (0x2E80 <= o <= 0x9FFF) or (0xF900 <= o <= 0xFAFF) or (0xFF00 <= o <= 0xFFEF) or (0x3000 <= o <= 0x303F)


def join_words(words: list) -> str:
    """Tesseract splits CJK into one-character words; join those without spaces."""
    out = ""
    for w in words:
        if out and not (is_cjk(out[-1]) or is_cjk(w[0])):
            out += " "
        out += w
    return out


class RapidOCREngine:
    name = "rapidocr"

    def __init__(self):
        import cv2
        cv2.setNumThreads(1)
        from rapidocr_onnxruntime import RapidOCR
        t = time.perf_counter()
        self.eng = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
        import numpy as np
        warm = np.full((64, 256, 3), 255, dtype=np.uint8)
        cv2.putText(warm, "warm 123", (10, 40), cv2.FONT_HERSHEY_SIMPLEX, 1, (0, 0, 0), 2)
        self.eng(warm)
        self.load_seconds = time.perf_counter() - t
        import importlib.metadata as md
        import onnxruntime
        models = sorted(p.name for p in (Path(sys.modules["rapidocr_onnxruntime"].__file__).parent / "models").glob("*.onnx"))
        self.meta = dict(version=md.version("rapidocr-onnxruntime"), onnxruntime=onnxruntime.__version__,
                         opencv=cv2.__version__, models=models, threads="intra_op=1 inter_op=1 cv2=1",
                         settings="defaults of config.yaml (max_side_len 2000, det limit_side_len 736 min, use_cls)",
                         load_and_warm_seconds=round(self.load_seconds, 2))

    def run(self, path: Path, script: str):
        t = time.perf_counter()
        res, _ = self.eng(str(path))
        sec = time.perf_counter() - t
        lines = []
        for quad, text, score in res or []:
            xs, ys = [p[0] for p in quad], [p[1] for p in quad]
            lines.append(dict(text=text, box=[round(min(xs)), round(min(ys)), round(max(xs)), round(max(ys))],
                              confidence=round(float(score), 4)))
        return lines, sec


class TesseractEngine:
    name = "tesseract"

    def __init__(self):
        v = subprocess.run(["tesseract", "--version"], capture_output=True, text=True)
        first = (v.stdout or v.stderr).splitlines()
        self.meta = dict(version=first[0] if first else "?", detail=" | ".join(l.strip() for l in first[1:3]),
                         threads="OMP_THREAD_LIMIT=1", psm="default (3)", langs=TESS_LANG,
                         command="tesseract IMG stdout -l LANGS tsv")
        self.env = dict(os.environ, OMP_THREAD_LIMIT="1")

    def run(self, path: Path, script: str):
        cmd = ["tesseract", str(path), "stdout", "-l", TESS_LANG[script], "tsv"]
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=self.env)
        sec = time.perf_counter() - t
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
        groups: dict = {}
        order = []
        for row in csv.DictReader(io.StringIO(p.stdout), delimiter="\t", quoting=csv.QUOTE_NONE):
            if row.get("level") != "5" or not (row.get("text") or "").strip():
                continue
            key = (row["page_num"], row["block_num"], row["par_num"], row["line_num"])
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(row)
        lines = []
        for key in order:
            ws = groups[key]
            x0 = min(int(w["left"]) for w in ws)
            y0 = min(int(w["top"]) for w in ws)
            x1 = max(int(w["left"]) + int(w["width"]) for w in ws)
            y1 = max(int(w["top"]) + int(w["height"]) for w in ws)
            conf = sum(float(w["conf"]) for w in ws) / len(ws) / 100
            words = [dict(text=w["text"].strip(), box=[int(w["left"]), int(w["top"]),
                                                      int(w["left"]) + int(w["width"]),
                                                      int(w["top"]) + int(w["height"])]) for w in ws]
            lines.append(dict(text=join_words([w["text"] for w in words]), box=[x0, y0, x1, y1],
                              confidence=round(conf, 4), words=words))
        return lines, sec


ENGINES = {"rapidocr": RapidOCREngine, "tesseract": TesseractEngine}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fixtures")
    ap.add_argument("out_dir")
    ap.add_argument("--engines", default="rapidocr,tesseract")
    ap.add_argument("--conditions", default="", help="comma-separated subset (default all)")
    ap.add_argument("--limit", type=int, default=0, help="at most N pages per condition")
    ap.add_argument("--resume", action="store_true", help="skip pages already in OUT_DIR/<engine>.jsonl")
    args = ap.parse_args()
    fx, out = Path(args.fixtures), Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    truth = [json.loads(l) for l in open(fx / "truth.jsonl", encoding="utf-8")]
    conds = set(filter(None, args.conditions.split(",")))
    pages, seen = [], {}
    for p in truth:
        if conds and p["condition"] not in conds:
            continue
        seen[p["condition"]] = seen.get(p["condition"], 0) + 1
        if args.limit and seen[p["condition"]] > args.limit:
            continue
        pages.append(p)
    # frames of multi-page TIFFs go to PNGs first, outside any timing
    frames = out / "_frames"
    inputs = {}
    for p in pages:
        img = p["image"]
        src = fx / img["file"]
        if img["format"] == "tif":
            frames.mkdir(exist_ok=True)
            dst = frames / f"{p['id']}.png"
            if not dst.exists():
                with Image.open(src) as im:
                    im.seek(img["page"] - 1)
                    im.save(dst, dpi=(img["dpi"], img["dpi"]))
            inputs[p["id"]] = dst
        else:
            inputs[p["id"]] = src
    meta_path = out / "peers-meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.update(machine=dict(cpu=platform.processor() or platform.machine(), nproc=os.cpu_count(),
                             python=platform.python_version()))
    for name in filter(None, args.engines.split(",")):
        eng = ENGINES[name]()
        path = out / f"{name}.jsonl"
        done = set()
        if args.resume and path.exists():
            for l in open(path, encoding="utf-8"):
                r = json.loads(l)
                done.add((r["file"], r["page"]))
        mode = "a" if args.resume else "w"
        before = uptime()
        total, n = 0.0, 0
        with open(path, mode, encoding="utf-8") as fh:
            for p in pages:
                key = (p["image"]["file"], p["image"]["page"])
                if key in done:
                    continue
                src = inputs[p["id"]]
                with Image.open(src) as im:
                    size = list(im.size)
                lines, sec = eng.run(src, p["script"])
                total += sec
                n += 1
                fh.write(json.dumps(dict(engine=name, file=p["image"]["file"], page=p["image"]["page"],
                                         page_id=p["id"], size=size, seconds=round(sec, 3), lines=lines),
                                    ensure_ascii=False) + "\n")
                fh.flush()
                print(f"{name} {p['id']} {sec:.2f}s {len(lines)} lines", file=sys.stderr)
        meta[name] = dict(eng.meta, pages=n, seconds=round(total, 2), uptime_before=before, uptime_after=uptime())
        meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
