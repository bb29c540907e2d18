#!/usr/bin/env python3
"""Scanned-page fixtures for the OCR benchmark, made from text we know.

Usage: make_fixtures.py OUT_DIR [--seed N] [--pages N] [--conditions a,b,...]
Run it with the venv from bench/ocr/setup.sh. Deterministic for a given seed, page count,
font files and package versions (all pinned in setup.sh).

Sources
  - Simplified Chinese: passages of the CMRC 2018 dev set (CC BY-SA 4.0), read from
    $ZHIKU_CMRC_DIR (default /work/shared/datasets/cmrc2018-dev, BEIR layout). Nothing of it
    is copied into the repository; OUT_DIR holds derived pages under the same licence.
  - Traditional Chinese: other passages of the same set, converted with OpenCC s2tw.
  - English: a fictional staff handbook written below (company names, amounts, dates,
    warranty clause), different numbers on every page.
  Every page carries its own passage, so a question has one expected page.

Conditions (one page set each; page i of a condition is Simplified, Traditional, English,
Simplified, ... in turn):
  clean       300 dpi, PNG                 dpi150     150 dpi, PNG
  jpeg_q40    200 dpi, JPEG quality 40     rotated    300 dpi, turned 90/180/270 (in turn), PNG
  skewed      300 dpi, turned ±2–5°, WebP (lossless)
  noise_blur  300 dpi, Gaussian blur + Gaussian noise, BMP
  two_column  300 dpi, two columns, one multi-page TIFF for the whole condition
  table       300 dpi, a ruled table (header row + 6 rows, CJK and numbers), PNG
  stamp       300 dpi, a red round seal (text around the ring) over the body text, PNG (RGB)
  photo       a phone photo: perspective warp, uneven warm lighting, blur, noise, JPEG q85

Outputs (paths in the JSONL files are relative to OUT_DIR)
  images/<cond>/pNNN.<ext>   one image per page (two_column: images/two_column/pages.tif)
  scan/<cond>.pdf            image-only PDF, one full-page image per page, no text layer
  text/<cond>.pdf            the same pages as a text-layer PDF (no image), same positions
  mixed/<cond>.pdf           odd pages from text/, even pages from scan/
  truth.jsonl                one record a page (see README.md for the fields)
  questions.jsonl            1–2 questions a page, answer span in that page's text only
  manifest.json              seed, counts, fonts, package versions, source and licence
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import re
import sys
import unicodedata
from pathlib import Path

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageFilter, ImageFont

DATASET = Path(os.environ.get("ZHIKU_CMRC_DIR", "/work/shared/datasets/cmrc2018-dev"))
NOTO = "/usr/share/fonts/opentype/noto"
FONT_FILES = {
    # key: (path, {script: ttc index})
    "cjk_serif": (f"{NOTO}/NotoSerifCJK-Regular.ttc", {"sc": 2, "tc": 3}),
    "cjk_sans": (f"{NOTO}/NotoSansCJK-Regular.ttc", {"sc": 2, "tc": 3}),
    "cjk_bold": (f"{NOTO}/NotoSansCJK-Bold.ttc", {"sc": 2, "tc": 3}),
    "en_serif": ("/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf", {}),
    "en_sans": ("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", {}),
    "en_bold": ("/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf", {}),
}
# Text-layer PDFs use TrueType (glyf) fonts, as bench/formats does: CJK from Droid Sans
# Fallback with DejaVu Sans for what it lacks; English pages in Liberation.
PDF_CJK = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"
PDF_CJK_LATIN = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

A4_W, A4_H = 595.28, 841.89  # points
MARGIN = 56.7  # 20 mm
SCRIPTS = ["sc", "tc", "en"]
LANG = {"sc": "zh-Hans", "tc": "zh-Hant", "en": "en"}

CONDITIONS = {
    "clean": dict(dpi=300, fmt="png"),
    "dpi150": dict(dpi=150, fmt="png"),
    "jpeg_q40": dict(dpi=200, fmt="jpg", quality=40),
    "rotated": dict(dpi=300, fmt="png"),
    "skewed": dict(dpi=300, fmt="webp"),
    "noise_blur": dict(dpi=300, fmt="bmp"),
    "two_column": dict(dpi=300, fmt="tif", columns=2),
    "table": dict(dpi=300, fmt="png"),
    "stamp": dict(dpi=300, fmt="png", rgb=True),
    "photo": dict(dpi=300, fmt="jpg", quality=85, rgb=True),
}

HEADER = {"sc": "内部资料 仅供参考", "tc": "內部資料 僅供參考", "en": "Internal document. For reference only"}
PAGE_NO = {"sc": "第 {} 页", "tc": "第 {} 頁", "en": "Page {}"}
CLOSING = set("，。、；：？！）」』》〉】”’,.;:?!)]%")

FIXED_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


# ---------------------------------------------------------------- fonts and coverage

_font_cache: dict = {}


def font(key: str, script: str, px: int) -> ImageFont.FreeTypeFont:
    path, idx = FONT_FILES[key]
    k = (key, script, px)
    if k not in _font_cache:
        _font_cache[k] = ImageFont.truetype(
            path, px, index=idx.get(script, 0), layout_engine=ImageFont.Layout.BASIC)
    return _font_cache[k]


def cmap(path: str, index: int = 0) -> set:
    from fontTools.ttLib import TTFont
    f = TTFont(path, fontNumber=index, lazy=True)
    return set(f.getBestCmap())


class Coverage:
    """Characters every font that draws a page (image and text PDF) can show."""

    def __init__(self):
        self.ok = {}
        pdf = cmap(PDF_CJK) | cmap(PDF_CJK_LATIN)
        for s in ("sc", "tc"):
            self.ok[s] = (cmap(FONT_FILES["cjk_serif"][0], FONT_FILES["cjk_serif"][1][s])
                          & cmap(FONT_FILES["cjk_bold"][0], FONT_FILES["cjk_bold"][1][s]) & pdf)

    def covers(self, script: str, text: str) -> bool:
        return all(ord(c) in self.ok[script] or c == " " for c in text)


# ---------------------------------------------------------------- source text

def load_cmrc():
    corpus = [json.loads(l) for l in open(DATASET / "corpus.jsonl", encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, open(DATASET / "queries.jsonl", encoding="utf-8"))}
    spans: dict = {}
    for s in map(json.loads, open(DATASET / "spans.jsonl", encoding="utf-8")):
        spans.setdefault(s["doc_id"], []).append(dict(s, question=queries[s["query_id"]]))
    return corpus, spans


def clean_text(t: str) -> str:
    return re.sub(r"\s+", " ", t).strip()


COMPANY_A = ["Northwind", "Bluefin", "Kestrel", "Harbourline", "Ashgrove", "Copperleaf", "Redwater",
             "Silverpine", "Oakridge", "Larkspur", "Fenwick", "Marlow", "Pemberton", "Quarry Hill"]
COMPANY_B = ["Instruments", "Logistics", "Analytics", "Foundry", "Textiles", "Ceramics", "Robotics",
             "Press", "Optics", "Marine"]
COMPANY_C = ["Ltd", "plc", "GmbH", "Inc."]
DEVICES = ["field recorder", "laptop", "survey tablet", "thermal camera", "barcode scanner", "handheld radio"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


def en_date(r: random.Random) -> str:
    return f"{r.randint(1, 28)} {MONTHS[r.randrange(12)]} {r.randint(2019, 2025)}"


def money(r: random.Random, lo: int, hi: int, sym: str = "$") -> str:
    v = r.randint(lo * 100, hi * 100) / 100
    return f"{sym}{v:,.2f}"


def en_page(r: random.Random, company: str) -> dict:
    """A handbook page: title, effective-date line, four paragraphs, two questions."""
    c = company
    v = dict(
        company=c, device=r.choice(DEVICES), model=f"{r.choice('KRTVX')}-{r.randint(1000, 9999)}",
        months=r.choice([12, 18, 24, 30, 36]), days=r.choice([14, 21, 30, 45]),
        fee=money(r, 40, 400), date=en_date(r), rate=f"${r.randint(28, 65) / 100:.2f}",
        cap=money(r, 150, 900), meal=money(r, 25, 80), leave=r.randint(20, 32),
        carry=r.randint(3, 10), long=r.randint(5, 15), notice=r.randint(2, 6),
        prob=r.choice([3, 4, 6]), pn=r.choice([7, 14]), an=r.choice([30, 60, 90]),
        grade=f"{r.choice('ABCDE')}{r.randint(1, 4)}", lo=money(r, 28000, 40000, "£"),
        hi=money(r, 42000, 61000, "£"), badge=r.choice([6, 12, 24]), pw=r.choice([12, 14, 16]),
        exp=r.choice([60, 90, 180]), ext=str(r.randint(2000, 7999)), h1=f"0{r.randint(7, 9)}:00",
        h2=f"{r.randint(17, 20)}:30", ot=r.choice(["1.25", "1.5", "2"]), hrs=r.choice([37.5, 40, 42]),
        oncall=money(r, 30, 120), payday=r.choice(["15th", "20th", "25th", "last working day"]),
        first=en_date(r), rev=f"{r.randint(1, 9)}.{r.randint(0, 9)}")
    templates = [
        ("Equipment issued to staff, including the {device} (model {model}), is covered by a "
         "manufacturer warranty of {months} months from the date of issue. Claims must be lodged "
         "with the IT desk within {days} days of a fault being noticed; repairs outside the warranty "
         "are charged to the cost centre at a flat rate of {fee}.",
         "How long is the warranty on the {device} model {model} issued by {company}?", "{months} months"),
        ("Travel booked on or after {date} is reimbursed at {rate} per kilometre for private cars, "
         "up to {cap} per trip. Receipts older than {days} days are not accepted, and meals are "
         "covered up to {meal} per day.",
         "At {company}, what is the per-trip cap for private car travel?", "{cap}"),
        ("Full-time staff accrue {leave} days of annual leave per year. Up to {carry} unused days may "
         "be carried into the next year, and requests longer than {long} consecutive days need "
         "approval {notice} weeks in advance.",
         "How many days of annual leave do full-time staff at {company} accrue per year?", "{leave} days"),
        ("New employees serve a probation period of {prob} months. The notice period during probation "
         "is {pn} days; after confirmation it rises to {an} days. The salary band for grade {grade} "
         "runs from {lo} to {hi} per year.",
         "What is the lowest salary of grade {grade} at {company}?", "{lo}"),
        ("Access badges must be renewed every {badge} months. Passwords are at least {pw} characters "
         "long and expire after {exp} days. The help desk answers on extension {ext} between {h1} "
         "and {h2}, Monday to Friday.",
         "Which telephone extension reaches the {company} help desk?", "{ext}"),
        ("Overtime is paid at {ot} times the hourly rate after {hrs} hours per week, and the on-call "
         "allowance is {oncall} per night. Payroll runs on the {payday} of each month; the first "
         "payment under this policy was made on {first}.",
         "How much is the on-call allowance per night at {company}?", "{oncall}"),
    ]
    chosen = sorted(r.sample(range(len(templates)), 4))
    paras = [templates[i][0].format(**v) for i in chosen]
    qs = [(templates[i][1].format(**v), templates[i][2].format(**v)) for i in r.sample(chosen, 2)]
    return dict(title=f"{c} Staff Handbook, revision {v['rev']}",
                subtitle=f"Effective from {v['date']}", paragraphs=paras,
                questions=[dict(question=q, answer=a) for q, a in qs],
                source={"generated": "fictional staff handbook", "company": c})


SURNAMES = list("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁沈姚卢姜崔钟谭陆汪范金石廖贾夏韦方白邹孟熊秦邱江尹薛段雷侯龙史陶黎贺顾毛郝龚邵万钱严武戴莫孔汤")
GIVEN = list("伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚英华玉兰萍红建文辉力鹏宇浩凯俊峰岚琳雪梅晨欣怡博然嘉悦")
DEPTS_ZH = ["财务部", "人事部", "研发中心", "市场部", "法务部", "采购部", "客服中心", "行政部", "质量部"]
FIRST_EN = ["Alice", "Bram", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas",
            "Kira", "Leon", "Maya", "Nils", "Olga", "Priya", "Quentin", "Rosa", "Tomas", "Uma"]
LAST_EN = ["Abbott", "Byrne", "Castell", "Dorsey", "Ellery", "Fitch", "Garland", "Hollis", "Ingram",
           "Jessop", "Keane", "Lowther", "Mercer", "Norland", "Orme", "Pryce", "Quill", "Radley"]
DEPTS_EN = ["Finance", "Legal", "Field Service", "Purchasing", "Quality", "Research", "Logistics"]


def table_page(r: random.Random, script: str, used_names: set, conv) -> dict:
    rows_n = 6
    if script == "en":
        header = ["No.", "Name", "Department", "Start date", "Claim (USD)"]
        names = []
        while len(names) < rows_n:
            n = f"{r.choice(FIRST_EN)} {r.choice(LAST_EN)}"
            if n not in used_names:
                used_names.add(n)
                names.append(n)
        rows = [[str(i + 1), n, r.choice(DEPTS_EN), en_date(r), f"{r.randint(12000, 2500000) / 100:,.2f}"]
                for i, n in enumerate(names)]
        title = f"Expense claims, quarter {r.randint(1, 4)} of {r.randint(2020, 2025)}"
        intro = [f"The table lists claims approved by {r.choice(DEPTS_EN)} before {en_date(r)}.",
                 "Amounts are in US dollars and include tax."]
        q = [(f"What is {rows[1][1]}'s claim amount in the expense claims table?", rows[1][4]),
             (f"When did {rows[4][1]} start, according to the expense claims table?", rows[4][3])]
    else:
        header = ["序号", "姓名", "部门", "入职日期", "报销金额（元）"]
        names = []
        while len(names) < rows_n:
            n = r.choice(SURNAMES) + "".join(r.sample(GIVEN, r.choice([1, 2])))
            if n not in used_names:
                used_names.add(n)
                names.append(n)
        rows = [[str(i + 1), n, r.choice(DEPTS_ZH),
                 f"{r.randint(2012, 2024)}年{r.randint(1, 12)}月{r.randint(1, 28)}日",
                 f"{r.randint(12000, 2500000) / 100:,.2f}"] for i, n in enumerate(names)]
        year = r.randint(2019, 2024)
        title = f"{year}年度第{'一二三四'[r.randrange(4)]}季度差旅报销汇总表"
        intro = [f"下表列出{r.choice(DEPTS_ZH)}等部门员工的入职日期与报销金额，",
                 f"数据截至{year}年{r.randint(1, 12)}月底，金额单位为人民币元。"]
        q = [(f"{rows[1][1]}的报销金额是多少？", rows[1][4]),
             (f"{rows[4][1]}的入职日期是哪天？", rows[4][3])]
        if script == "tc":
            header = [conv(x) for x in header]
            rows = [[conv(x) for x in row] for row in rows]
            title, intro = conv(title), [conv(x) for x in intro]
            q = [(conv(a), conv(b)) for a, b in q]
    return dict(title=title, intro=intro, table=[header] + rows,
                questions=[dict(question=a, answer=b) for a, b in q],
                source={"generated": "expense claims table"})


# ---------------------------------------------------------------- drawing

class Canvas:
    """Draws a page at `dpi` and records, for every text line, its truth and the drawing
    operation that the text-layer PDF repeats (in points)."""

    def __init__(self, dpi: int, script: str, rgb: bool = False):
        self.dpi, self.script = dpi, script
        self.s = dpi / 72.0
        self.w, self.h = round(A4_W * self.s), round(A4_H * self.s)
        self.img = Image.new("RGB" if rgb else "L", (self.w, self.h), "white" if rgb else 255)
        self.d = ImageDraw.Draw(self.img)
        self.lines: list = []
        self.ops: list = []

    def f(self, key: str, size_pt: float):
        return font(key, self.script, max(6, round(size_pt * self.s)))

    def width(self, text: str, key: str, size_pt: float) -> float:
        return self.f(key, size_pt).getlength(text) / self.s

    def text(self, x: float, base: float, text: str, key: str, size_pt: float, kind: str,
             fill=0, record: bool = True, **extra):
        fnt = self.f(key, size_pt)
        px, py = round(x * self.s), round(base * self.s)
        col = fill if self.img.mode == "L" else (fill, fill, fill)
        self.d.text((px, py), text, font=fnt, fill=col, anchor="ls")
        if record:
            box = list(self.d.textbbox((px, py), text, font=fnt, anchor="ls"))
            self.lines.append(dict(text=text, kind=kind, box=box, **extra))
        self.ops.append(("text", x, base, size_pt, key, text))

    def rule(self, x0, y0, x1, y1, width_pt=0.6):
        col = 0 if self.img.mode == "L" else (0, 0, 0)
        self.d.line([(x0 * self.s, y0 * self.s), (x1 * self.s, y1 * self.s)], fill=col,
                    width=max(1, round(width_pt * self.s)))
        self.ops.append(("line", x0, y0, x1, y1, width_pt))

    def wrap(self, text: str, maxw: float, key: str, size_pt: float, first_indent: float = 0.0):
        fnt = self.f(key, size_pt)
        lim = maxw * self.s
        out = []
        if self.script == "en":
            words, cur = text.split(" "), ""
            for wd in words:
                cand = f"{cur} {wd}" if cur else wd
                room = lim - (first_indent * self.s if not out else 0)
                if cur and fnt.getlength(cand) > room:
                    out.append(cur)
                    cur = wd
                else:
                    cur = cand
            if cur:
                out.append(cur)
            return out
        cur = ""
        for ch in text:
            room = lim - (first_indent * self.s if not out else 0)
            if cur and fnt.getlength(cur + ch) > room and ch not in CLOSING:
                out.append(cur.strip())
                cur = ch.lstrip()
            else:
                cur += ch
        if cur.strip():
            out.append(cur.strip())
        return out


def header(c: Canvas):
    """Running header with a rule under it."""
    key = "en_sans" if c.script == "en" else "cjk_sans"
    c.text(MARGIN, 40, HEADER[c.script], key, 8, "header", fill=70)
    c.rule(MARGIN, 45, A4_W - MARGIN, 45, 0.5)


def footer(c: Canvas, page_no: int):
    """The page number at the foot (last in reading order)."""
    key = "en_sans" if c.script == "en" else "cjk_sans"
    label = PAGE_NO[c.script].format(page_no)
    c.text((A4_W - c.width(label, key, 8)) / 2, A4_H - 34, label, key, 8, "page_number", fill=70)


def draw_prose(c: Canvas, content: dict, columns: int = 1):
    en = c.script == "en"
    body_key, size = ("en_serif", 11.0) if en else ("cjk_serif", 10.5)
    lead = size * (1.5 if en else 1.7)
    title_key = "en_bold" if en else "cjk_bold"
    y = 82.0
    c.text(MARGIN, y, content["title"], title_key, 15, "title")
    y += 24
    if content.get("subtitle"):
        c.text(MARGIN, y, content["subtitle"], "en_sans", 9.5, "subtitle", fill=40)
        y += 20
    y += 6
    paras = content["paragraphs"]
    gutter = 18.0
    colw = (A4_W - 2 * MARGIN - (columns - 1) * gutter) / columns
    indent = 0.0 if en else 2 * size
    flow = []  # (text, para, first)
    for pi, p in enumerate(paras):
        for li, ln in enumerate(c.wrap(p, colw, body_key, size, indent)):
            flow.append((ln, pi, li == 0))
    if columns == 1:
        groups = [flow]
    else:
        half = math.ceil(len(flow) / 2)
        groups = [flow[:half], flow[half:]]
    y0 = y + size
    for col, group in enumerate(groups):
        yy = y0
        x0 = MARGIN + col * (colw + gutter)
        for i, (ln, pi, first) in enumerate(group):
            if en and first and i > 0:
                yy += size * 0.7
            extra = {"para": pi}
            if columns > 1:
                extra["column"] = col
            c.text(x0 + (indent if first else 0), yy, ln, body_key, size, "body", **extra)
            yy += lead
    return y0


def draw_table(c: Canvas, content: dict):
    en = c.script == "en"
    title_key = "en_bold" if en else "cjk_bold"
    body_key = "en_serif" if en else "cjk_serif"
    c.text(MARGIN, 82, content["title"], title_key, 15, "title")
    y = 112.0
    for ln in content["intro"]:
        c.text(MARGIN, y, ln, body_key, 10.5, "body")
        y += 18
    y += 10
    rows = content["table"]
    size = 10.5
    rowh = 26.0
    fracs = [0.09, 0.22, 0.22, 0.24, 0.23]
    tw = A4_W - 2 * MARGIN
    xs = [MARGIN]
    for fr in fracs:
        xs.append(xs[-1] + fr * tw)
    top = y
    cell_boxes, truth_rows = [], []
    for ri, row in enumerate(rows):
        ry = top + ri * rowh
        key = title_key if ri == 0 else body_key
        boxes = []
        for ci, cell in enumerate(row):
            base = ry + rowh / 2 + size * 0.38
            if ri > 0 and ci == 4:  # amounts right-aligned
                x = xs[ci + 1] - 6 - c.width(cell, key, size)
            else:
                x = xs[ci] + 6
            c.text(x, base, cell, key, size, "table_cell", row=ri, col=ci)
            boxes.append([round(xs[ci] * c.s), round(ry * c.s), round(xs[ci + 1] * c.s),
                          round((ry + rowh) * c.s)])
        cell_boxes.append(boxes)
        truth_rows.append(list(row))
    bottom = top + len(rows) * rowh
    for ri in range(len(rows) + 1):
        c.rule(MARGIN, top + ri * rowh, MARGIN + tw, top + ri * rowh, 1.0 if ri in (0, 1, len(rows)) else 0.5)
    for x in xs:
        c.rule(x, top, x, bottom, 0.5)
    return dict(rows=truth_rows, header_rows=1, cell_boxes=cell_boxes)


# ---------------------------------------------------------------- degradations

def stamp(c: Canvas, rng: np.random.Generator, ring: str, center: str, cx: float, cy: float):
    """A red round seal: ring, text around the upper arc, a star, a label under the star."""
    img = c.img
    r = 21 * 72 / 25.4 * c.s  # 21 mm radius
    alpha = Image.new("L", img.size, 0)
    d = ImageDraw.Draw(alpha)
    d.ellipse([cx - r, cy - r, cx + r, cy + r], outline=255, width=max(2, round(r * 0.05)))
    key = "en_bold" if c.script == "en" else "cjk_bold"
    n = len(ring)
    span = 250.0 if c.script != "en" else 300.0
    arc = math.radians(span) * r * 0.74 / n  # room per character along the ring
    fs = max(8, round(min(r * 0.26, arc / (0.75 if c.script == "en" else 1.05))))
    fnt = font(key, c.script, fs)
    for i, ch in enumerate(ring):
        ang = -90 - span / 2 + span * (i + 0.5) / n
        a = math.radians(ang)
        rr = r * 0.74
        tile = Image.new("L", (fs * 2, fs * 2), 0)
        ImageDraw.Draw(tile).text((fs, fs), ch, font=fnt, fill=255, anchor="mm")
        tile = tile.rotate(-(ang + 90), resample=Image.Resampling.BICUBIC)
        px, py = round(cx + rr * math.cos(a)) - fs, round(cy + rr * math.sin(a)) - fs
        region = alpha.crop((px, py, px + 2 * fs, py + 2 * fs))
        alpha.paste(ImageChops.lighter(region, tile), (px, py))
    sr = r * 0.2
    pts = []
    for k in range(10):
        rad = sr if k % 2 == 0 else sr * 0.4
        a = math.radians(-90 + 36 * k)
        pts.append((cx + rad * math.cos(a), cy + rad * math.sin(a)))
    d.polygon(pts, fill=255)
    f2 = font(key, c.script, max(8, round(r * 0.18)))
    d.text((cx, cy + r * 0.52), center, font=f2, fill=255, anchor="mm")
    # uneven ink
    small = rng.uniform(0.45, 1.0, size=(img.size[1] // 40 + 1, img.size[0] // 40 + 1)).astype(np.float32)
    field = np.asarray(Image.fromarray((small * 255).astype(np.uint8)).resize(img.size, Image.Resampling.BILINEAR),
                       dtype=np.float32) / 255
    a = np.asarray(alpha, dtype=np.float32) / 255 * field * 0.85
    base = np.asarray(img.convert("RGB"), dtype=np.float32)
    ink = np.array([205, 30, 38], dtype=np.float32)
    out = base * (1 - a[..., None] * (1 - ink / 255))
    c.img = Image.fromarray(np.clip(out, 0, 255).astype(np.uint8), "RGB")
    return dict(kind="stamp", text=ring, center_text=center,
                center=[round(cx), round(cy)], radius=round(r))


def add_noise(img: Image.Image, rng: np.random.Generator, sigma: float) -> Image.Image:
    a = np.asarray(img, dtype=np.float32)
    a = a + rng.normal(0, sigma, size=a.shape).astype(np.float32)
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), img.mode)


def perspective_coeffs(dst, src):
    """Coefficients for Image.transform(PERSPECTIVE): maps output (dst) points to input (src)."""
    m = []
    for (x, y), (u, v) in zip(dst, src):
        m.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        m.append([0, 0, 0, x, y, 1, -v * x, -v * y])
    b = np.array([p for uv in src for p in uv], dtype=np.float64)
    return np.linalg.solve(np.array(m, dtype=np.float64), b).tolist()


def phone_photo(img: Image.Image, rng: np.random.Generator):
    img = img.convert("RGB")
    w, h = img.size
    # uneven lighting: a tilted plane plus a vignette, warm cast
    gy, gx = np.mgrid[0:h // 16 + 1, 0:w // 16 + 1].astype(np.float32)
    gx /= gx.max()
    gy /= gy.max()
    tilt = rng.uniform(-0.6, 0.6, size=2)
    cx0, cy0 = rng.uniform(0.2, 0.8, size=2)
    field = 1.0 + tilt[0] * (gx - 0.5) + tilt[1] * (gy - 0.5) - 0.8 * ((gx - cx0) ** 2 + (gy - cy0) ** 2)
    field = np.clip(field, 0.42, 1.05)
    fimg = Image.fromarray((field / 1.05 * 255).astype(np.uint8)).resize((w, h), Image.Resampling.BILINEAR)
    f = np.asarray(fimg, dtype=np.float32)[..., None] / 255 * 1.05
    a = np.asarray(img, dtype=np.float32) * f * np.array([1.0, 0.96, 0.86], dtype=np.float32)
    lit = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")
    ow, oh = 2400, 3200
    j = lambda s: float(rng.uniform(-s, s))
    dst = [(200 + j(120), 230 + j(120)), (ow - 200 + j(120), 170 + j(120)),
           (ow - 110 + j(90), oh - 120 + j(90)), (110 + j(90), oh - 170 + j(90))]
    src = [(0, 0), (w, 0), (w, h), (0, h)]
    co = perspective_coeffs(dst, src)
    warped = lit.transform((ow, oh), Image.Transform.PERSPECTIVE, co, Image.Resampling.BICUBIC)
    mask = Image.new("L", (w, h), 255).transform((ow, oh), Image.Transform.PERSPECTIVE, co,
                                                   Image.Resampling.BILINEAR)
    bg = np.empty((oh, ow, 3), dtype=np.float32)
    bg[:] = np.array([92, 74, 58], dtype=np.float32)
    bgi = add_noise(Image.fromarray(bg.astype(np.uint8), "RGB"), rng, 10)
    out = Image.composite(warped, bgi, mask).filter(ImageFilter.GaussianBlur(0.8))
    out = add_noise(out, rng, 5)
    return out, dict(perspective_dst=[[round(x, 1), round(y, 1)] for x, y in dst],
                     lighting_tilt=[round(float(t), 3) for t in tilt], output_size=[ow, oh])


# ---------------------------------------------------------------- PDF writing

def new_pdf():
    from fpdf import FPDF
    pdf = FPDF(unit="pt", format="A4")
    pdf.set_auto_page_break(False)
    pdf.set_margin(0)
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_producer("zhiku bench/ocr make_fixtures.py")
    pdf.add_font("droid", "", PDF_CJK)
    pdf.add_font("dejavu", "", PDF_CJK_LATIN)
    pdf.add_font("libserif", "", FONT_FILES["en_serif"][0])
    pdf.add_font("libsans", "", FONT_FILES["en_sans"][0])
    pdf.add_font("libbold", "", FONT_FILES["en_bold"][0])
    return pdf


_DROID = None


def font_runs(text: str):
    global _DROID
    if _DROID is None:
        _DROID = cmap(PDF_CJK)
    runs: list = []
    for ch in text:
        fam = "droid" if ord(ch) in _DROID else "dejavu"
        if runs and runs[-1][0] == fam:
            runs[-1][1] += ch
        else:
            runs.append([fam, ch])
    return runs


def pdf_text_page(pdf, page: dict):
    pdf.add_page(format=(A4_W, A4_H))
    for op in page["_ops"]:
        if op[0] == "line":
            _, x0, y0, x1, y1, wpt = op
            pdf.set_line_width(wpt)
            pdf.line(x0, y0, x1, y1)
        else:
            _, x, base, size, key, text = op
            fam = {"en_serif": "libserif", "en_sans": "libsans", "en_bold": "libbold"}.get(key)
            if fam:
                pdf.set_font(fam, size=size)
                pdf.text(x, base, text)
                continue
            # fpdf2's text() does not use fallback fonts: split into runs by font coverage
            for run_fam, run in font_runs(text):
                pdf.set_font(run_fam, size=size)
                pdf.text(x, base, run)
                x += pdf.get_string_width(run)


def pdf_scan_page(pdf, image_path: Path, frame_img, size_px, dpi):
    w_pt, h_pt = size_px[0] * 72 / dpi, size_px[1] * 72 / dpi
    pdf.add_page(format=(w_pt, h_pt))
    pdf.image(frame_img if frame_img is not None else str(image_path), x=0, y=0, w=w_pt, h=h_pt)


# ---------------------------------------------------------------- main

def pick_questions(spans, text, conv=None, limit=None):
    out = []
    for s in spans:
        q, a = s["question"], s["answer"]
        if conv:
            q, a = conv(q), conv(a)
        a = clean_text(a)
        if len(a) < 2 or text.count(a) != 1:
            continue
        out.append(dict(question=q, answer=a, source_query_id=s["query_id"],
                        **({"question_sc": s["question"], "answer_sc": s["answer"]} if conv else {})))
        if limit and len(out) == limit:
            break
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--pages", type=int, default=4, help="pages per condition (default 4)")
    ap.add_argument("--conditions", default=",".join(CONDITIONS), help="comma-separated subset")
    args = ap.parse_args()
    out = Path(args.out_dir)
    conds = [c for c in args.conditions.split(",") if c]
    for cnd in conds:
        if cnd not in CONDITIONS:
            sys.exit(f"unknown condition {cnd}; known: {', '.join(CONDITIONS)}")
    import opencc
    conv = opencc.OpenCC("s2tw").convert
    cov = Coverage()
    corpus, spans = load_cmrc()
    rnd = random.Random(args.seed)
    order = list(range(len(corpus)))
    rnd.shuffle(order)
    passages = iter(order)
    used_names: set = set()
    companies = [f"{a} {b} {c}" for a in COMPANY_A for b in COMPANY_B for c in COMPANY_C]
    rnd.shuffle(companies)
    companies = iter(companies)

    def next_passage(script: str, max_len: int):
        for i in passages:
            doc = corpus[i]
            text = clean_text(doc["text"])
            title = clean_text(doc["title"])
            if len(text) > max_len:
                continue
            if script == "tc":
                text, title = conv(text), conv(title)
            if not (cov.covers(script, text) and cov.covers(script, title)):
                continue
            qs = pick_questions(spans.get(doc["_id"], []), text, conv if script == "tc" else None)
            if not qs:
                continue
            return dict(title=title, paragraphs=[text], questions=qs,
                        source={"dataset": "cmrc2018-dev", "doc_id": doc["_id"],
                                "licence": "CC BY-SA 4.0", "converted": "opencc s2tw" if script == "tc" else None})
        sys.exit("ran out of passages")

    truth, questions = [], []
    for cnd in conds:
        spec = CONDITIONS[cnd]
        dpi, fmt = spec["dpi"], spec["fmt"]
        (out / "images" / cnd).mkdir(parents=True, exist_ok=True)
        pages = []
        for i in range(args.pages):
            script = SCRIPTS[i % 3]
            prng = random.Random(f"{args.seed}/{cnd}/{i}")
            nrng = np.random.default_rng([args.seed, list(CONDITIONS).index(cnd), i])
            if cnd == "table":
                content = table_page(prng, script, used_names, conv)
            elif script == "en":
                content = en_page(prng, next(companies))
            else:
                content = next_passage(script, 700 if spec.get("columns") else 980)
            c = Canvas(dpi, script, rgb=spec.get("rgb", False))
            header(c)
            table = None
            if cnd == "table":
                table = draw_table(c, content)
            else:
                draw_prose(c, content, spec.get("columns", 1))
            footer(c, i + 1)
            excluded = []
            transform: dict = {}
            if cnd == "stamp":
                body = [l for l in c.lines if l["kind"] == "body"]
                anchor = body[len(body) // 2]["box"]
                cx = c.w * prng.uniform(0.55, 0.72)
                cy = (anchor[1] + anchor[3]) / 2
                if script == "en":
                    ring = f"{content['source']['company'].upper()} * APPROVED"
                    centre = "RECEIVED"
                else:
                    city = prng.choice(["北京", "上海", "广州", "杭州", "成都", "武汉", "南京", "西安"])
                    ring = f"{city}{prng.choice(['星河', '远航', '青松', '明德', '华信'])}文化传播有限公司"
                    centre = "合同专用章"
                    if script == "tc":
                        ring, centre = conv(ring), conv(centre)
                excluded.append(stamp(c, nrng, ring, centre, cx, cy))
            img = c.img
            render_size = list(img.size)
            if cnd == "rotated":
                ang = [90, 180, 270][i % 3]
                img = img.transpose({90: Image.Transpose.ROTATE_90, 180: Image.Transpose.ROTATE_180,
                                     270: Image.Transpose.ROTATE_270}[ang])
                transform["rotate_ccw_deg"] = ang
            elif cnd == "skewed":
                ang = prng.uniform(2, 5) * prng.choice([-1, 1])
                img = img.rotate(ang, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
                transform["skew_ccw_deg"] = round(ang, 3)
            elif cnd == "noise_blur":
                img = add_noise(img.filter(ImageFilter.GaussianBlur(1.8)), nrng, 28)
                transform.update(blur_radius_px=1.8, noise_sigma=28)
            elif cnd == "photo":
                img, t = phone_photo(img, nrng)
                transform.update(t)
            if fmt == "jpg":
                transform["jpeg_quality"] = spec["quality"]
            pid = f"{cnd}-{i + 1:03d}"
            rel = f"images/{cnd}/p{i + 1:03d}.{fmt}" if fmt != "tif" else f"images/{cnd}/pages.tif"
            img_page = 1 if fmt != "tif" else i + 1
            save_dpi = None if cnd == "photo" else (dpi, dpi)
            if fmt == "png":
                img.save(out / rel, optimize=False, compress_level=6, **({"dpi": save_dpi} if save_dpi else {}))
            elif fmt == "jpg":
                img.save(out / rel, quality=spec["quality"], **({"dpi": save_dpi} if save_dpi else {}))
            elif fmt == "webp":
                img.save(out / rel, lossless=True, method=2)
            elif fmt == "bmp":
                img.save(out / rel, dpi=save_dpi)
            page = dict(
                id=pid, condition=cnd, script=script, lang=LANG[script], source=content["source"],
                image=dict(file=rel, page=img_page, format=fmt, size=list(img.size),
                           dpi=None if cnd == "photo" else dpi),
                scan_pdf=dict(file=f"scan/{cnd}.pdf", page=i + 1),
                text_pdf=dict(file=f"text/{cnd}.pdf", page=i + 1),
                mixed_pdf=dict(file=f"mixed/{cnd}.pdf", page=i + 1, layer="text" if i % 2 == 0 else "scan"),
                render=dict(dpi=dpi, size=render_size, boxes="pixels of the page as drawn, before any transform"),
                transform=transform, lines=c.lines, table=table, excluded=excluded,
                _ops=c.ops, _img=img if fmt == "tif" else None)
            pages.append(page)
            for qi, q in enumerate(content["questions"]):
                questions.append(dict(
                    id=f"{pid}-q{qi + 1}", question=q["question"], answer=q["answer"], lang=LANG[script],
                    page_id=pid, condition=cnd, script=script,
                    scan=dict(page["scan_pdf"]), text=dict(page["text_pdf"]),
                    image=dict(file=rel, page=img_page),
                    **{k: v for k, v in q.items() if k not in ("question", "answer")}))
            print(f"{pid} {script} {img.size[0]}x{img.size[1]} {len(c.lines)} lines", file=sys.stderr)
        if fmt == "tif":
            frames = [p["_img"] for p in pages]
            frames[0].save(out / pages[0]["image"]["file"], save_all=True, append_images=frames[1:],
                           compression="tiff_deflate", dpi=(dpi, dpi))
        # PDFs: scanned, text-layer, mixed
        for sub in ("scan", "text", "mixed"):
            (out / sub).mkdir(parents=True, exist_ok=True)
        scan, text, mixed = new_pdf(), new_pdf(), new_pdf()
        for p in pages:
            size = p["image"]["size"]
            pdpi = p["image"]["dpi"] or 300
            fr = p["_img"]
            pdf_scan_page(scan, out / p["image"]["file"], fr, size, pdpi)
            pdf_text_page(text, p)
            if p["mixed_pdf"]["layer"] == "text":
                pdf_text_page(mixed, p)
            else:
                pdf_scan_page(mixed, out / p["image"]["file"], fr, size, pdpi)
        scan.output(str(out / f"scan/{cnd}.pdf"))
        text.output(str(out / f"text/{cnd}.pdf"))
        mixed.output(str(out / f"mixed/{cnd}.pdf"))
        for p in pages:
            p.pop("_ops")
            p.pop("_img")
            truth.append(p)

    with open(out / "truth.jsonl", "w", encoding="utf-8") as fh:
        for p in truth:
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    # answer only in its own page: skip a question whose answer shows up on another page;
    # keep at most two a page (the dataset's order)
    texts = {p["id"]: "".join(l["text"] for l in p["lines"]).replace(" ", "") for p in truth}
    kept, per_page = [], {}
    for q in questions:
        if per_page.get(q["page_id"], 0) >= 2:
            continue
        if any(q["answer"].replace(" ", "") in t for pid, t in texts.items() if pid != q["page_id"]):
            continue
        per_page[q["page_id"]] = per_page.get(q["page_id"], 0) + 1
        q["id"] = f"{q['page_id']}-q{per_page[q['page_id']]}"
        kept.append(q)
    missing = [p["id"] for p in truth if not per_page.get(p["id"])]
    if missing:
        print(f"warning: no question with a page-unique answer for {missing}", file=sys.stderr)
    with open(out / "questions.jsonl", "w", encoding="utf-8") as fh:
        for q in kept:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    import importlib.metadata as md
    versions = {p: md.version(p) for p in ("pillow", "numpy", "fpdf2", "OpenCC", "fonttools")}
    manifest = dict(
        seed=args.seed, pages_per_condition=args.pages, conditions=conds, pages=len(truth),
        questions=len(kept), pages_without_question=missing,
        fonts={k: v[0] for k, v in FONT_FILES.items()} | {"pdf_cjk": PDF_CJK, "pdf_cjk_latin": PDF_CJK_LATIN},
        versions=versions,
        source=dict(dataset=str(DATASET), licence="CMRC 2018 passages: CC BY-SA 4.0; derived pages share it"),
    )
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(truth)} pages, {len(kept)} questions to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
