#!/usr/bin/env python3
"""Generate the PDF extraction benchmark corpus (deterministic, seeded).

    make_corpus.py [CORPUS_DIR] [--zh N] [--en N] [--seed S]

Writes CORPUS_DIR (default /tmp/zhiku-format-corpus) with
  zh-NNN.pdf  Chinese documents, fpdf2, Droid Sans Fallback with DejaVu Sans as
              the fallback font for digits and Latin; running header (rule under
              it) and page-number footer; an outline; 10-30 pages; a third of the
              documents have two-column pages (every third page); a quarter draw
              each page's lines in a shuffled order (content stream order is not
              reading order).
  en-NNN.pdf  English documents, reportlab platypus (Helvetica or Times,
              justified); running header and footer; an outline; some documents
              switch to two frames (two columns) on every fourth page.
and, beside it, CORPUS_DIR-truth/<file>.json with the exact text of every page in
reading order (headings and body; NOT the running header/footer), plus what a
fair scorer needs to strip the header/footer from tools that keep them:

  {"file", "lang": "zh"|"en", "stream_order": "reading"|"shuffled", "title",
   "header", "footer_re",
   "pages": [text of page 1, ...], "two_column_pages": [1-based numbers]}

`footer_re` is a regular expression for the footer with all whitespace removed.

The text is pseudo-prose: paragraphs sampled from the sentence lists below (no
external data). Columns and pages are laid out by this script line by line
(fpdf2's own line breaking through multi_cell(dry_run=True); reportlab's
Paragraph), so the truth of every page is known exactly.

Needs fpdf2==2.8.9 and reportlab==5.1.0 (the fixture venv of
scripts/make-format-fixtures.sh has both).
"""

import argparse
import datetime as dt
import json
import os
import random
import re
import sys

FONT = os.environ.get(
    "ZHIKU_FIXTURE_FONT", "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"
)
LATIN_FONT = os.environ.get(
    "ZHIKU_FIXTURE_LATIN_FONT", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
)
FIXED = dt.datetime(2026, 1, 15, 9, 30, 0, tzinfo=dt.timezone.utc)

# ---------------------------------------------------------------------------
# Text material
# ---------------------------------------------------------------------------

ZH_SENTENCES = [
    "本制度适用于公司总部及各分支机构的全体员工，包括正式员工、试用期员工和劳务派遣人员。",
    "各部门负责人应当在每季度结束后的十个工作日内，向管理委员会提交本部门的工作总结与下季度计划。",
    "系统管理员每天凌晨两点对核心数据库进行一次全量备份，并将备份文件同步到异地机房。",
    "用户在首次登录时必须修改初始密码，新密码长度不少于12位，且须同时包含字母、数字和符号。",
    "为保证产品质量，生产车间的温度应控制在18至26摄氏度之间，相对湿度不超过65%。",
    "项目经理负责组织需求评审会议，邀请产品、研发、测试和运维等相关方共同参加。",
    "报销单据须附有合法有效的发票原件，单张发票金额超过5000元的，还须提供合同或订单复印件。",
    "城市更新工作坚持“留改拆”并举，优先保护历史街区的传统风貌和街巷肌理。",
    "本季度全市空气质量优良天数比例为86.4%，较去年同期上升3.2个百分点。",
    "设备安装完成后，技术人员应按照检查清单逐项确认接线、接地和通风条件，并填写验收记录。",
    "图书馆的开放时间为每周二至周日上午九点至晚上九点，每周一闭馆进行内部整理。",
    "如遇突发停电，值班人员应立即启动应急预案，优先保障机房、电梯和消防系统的供电。",
    "培训结束后，学员须在两周内完成在线考核，考核成绩达到80分以上方可获得结业证书。",
    "对于逾期未还的借款，财务部将按月计收滞纳金，并在下一次发放工资时予以扣除。",
    "新版应用程序优化了启动速度，在主流机型上的冷启动时间由2.8秒缩短至1.6秒。",
    "供应商应在合同签订后三十日内交付全部货物，延迟交付的，每日按合同总额的千分之五支付违约金。",
    "社区卫生服务中心为辖区内六十五岁以上老人提供免费体检，每年一次，需提前预约。",
    "所有对外发布的宣传材料，须经品牌部和法务部双重审核，确保内容真实、准确、合法。",
    "数据分析平台支持按日、周、月三种粒度查看指标，并可将报表导出为CSV或PDF格式。",
    "施工单位应在工地出入口设置车辆冲洗设施，严禁带泥上路，防止扬尘污染周边环境。",
    "会议纪要由会议组织者在会后两个工作日内整理完毕，并通过电子邮件发送给全体参会人员。",
    "员工因病不能上班的，应在当日上午十点前向直属上级请假，并在返岗后补交医院证明。",
    "本产品的标准保修期为两年，保修期内因质量问题导致的故障，由厂家免费维修或更换。",
    "河道治理工程分三期实施，第一期主要完成清淤疏浚和岸线整治，预计年底前竣工。",
    "客服中心实行7×24小时值守，普通工单须在四小时内响应，紧急工单须在三十分钟内响应。",
    "研发团队采用双周迭代的开发模式，每个迭代结束时进行演示和回顾，持续改进工作方法。",
    "学校食堂每周公布下一周的菜谱，并邀请家长代表不定期参与食品安全检查。",
    "仓库管理员应定期盘点库存，账实不符的，须查明原因并形成书面说明报财务部备案。",
    "为方便市民出行，地铁三号线在节假日期间将末班车时间延长至凌晨零点三十分。",
    "信息安全事件发生后，相关部门应在一小时内上报，并配合安全团队开展调查和处置。",
    "公司鼓励员工参加与岗位相关的职业资格考试，考试通过后可凭证书报销全部考试费用。",
    "该型号服务器配备两颗64核处理器和512GB内存，适用于大规模数据处理和虚拟化场景。",
    "志愿者服务时长以实际参与活动的时间为准，由活动组织方在系统中登记并确认。",
    "合同履行过程中发生争议的，双方应首先友好协商；协商不成的，提交合同签订地人民法院诉讼解决。",
    "实验室的危险化学品须存放在专用柜中，实行双人双锁管理，领用时应登记用途和数量。",
    "本次调查共回收有效问卷1268份，其中超过七成的受访者表示对服务总体感到满意。",
    "公共自行车租赁点分布在主要交通枢纽、商业中心和居民小区，首小时免费使用。",
    "年度预算编制工作于每年九月启动，各部门应结合战略目标和历史数据合理测算各项支出。",
    "园区内禁止吸烟，吸烟者须到指定的室外吸烟区，违者将按园区管理规定予以处罚。",
    "软件发布前须通过功能测试、性能测试和安全扫描，发现的严重缺陷必须全部修复。",
    "博物馆推出了线上展览，观众可以通过手机浏览高清文物图片并收听专业讲解。",
    "物业服务企业应每月公示公共收益的收支情况，接受业主委员会和全体业主的监督。",
    "新员工入职第一周将参加集中培训，内容包括企业文化、规章制度和信息安全意识。",
    "农业合作社引进了滴灌技术，使每亩用水量减少约四成，同时提高了作物产量。",
    "在高温天气下，户外作业人员每工作两小时应休息二十分钟，并及时补充水分。",
    "知识库中的文档按照部门和主题分类，员工可以通过关键词检索快速找到所需资料。",
    "所有访客须在前台登记身份信息并领取临时通行证，离开时应将通行证交回前台。",
    "电动汽车充电桩的安装须符合国家电气安全标准，并由具备资质的单位施工。",
]

ZH_TOPICS = [
    "总则", "适用范围", "基本原则", "组织架构", "职责分工", "工作流程", "考勤管理",
    "请假制度", "薪酬福利", "培训发展", "绩效考核", "信息安全", "数据备份", "设备维护",
    "采购管理", "合同管理", "财务报销", "质量控制", "安全生产", "应急预案", "客户服务",
    "项目管理", "档案管理", "环境保护", "社区服务", "交通出行", "城市规划", "产品说明",
    "技术参数", "常见问题", "监督检查", "奖惩办法", "附则",
]
ZH_NUM = "一二三四五六七八九十"

EN_SENTENCES = [
    "The gateway collects readings from up to sixty-four wireless sensors and forwards them to the building management system every thirty seconds.",
    "Before you connect the device to mains power, read the safety instructions on the back of the quick reference card.",
    "Each department submits its budget proposal by the end of September, together with a short explanation of any increase over the previous year.",
    "The committee reviews all applications within fifteen working days and informs the applicants of its decision in writing.",
    "Firmware updates are signed by the manufacturer and are installed only when the signature is valid.",
    "Visitors must register at the front desk, wear their badge in plain sight and return it when they leave the building.",
    "If the status light blinks amber for more than ten minutes, disconnect the power, wait a few seconds and connect it again.",
    "The library opens at nine o'clock on weekdays and at ten o'clock on Saturdays; it is closed on Sundays and public holidays.",
    "Our survey of 1,268 customers found that seventy-two percent were satisfied with the response time of the support team.",
    "Invoices above 5,000 euros must be approved by the head of finance before the payment is released.",
    "The new release reduces the cold start time from 2.8 seconds to 1.6 seconds on most supported phones.",
    "Employees who work from home must use the company VPN and enable two-factor authentication on every account.",
    "The river restoration project is carried out in three phases, the first of which removes sediment and stabilises the banks.",
    "A backup that has never been restored is only a hope; schedule a restore test at least once every quarter.",
    "The warranty covers defects in materials and workmanship for two years from the date of purchase.",
    "Meeting minutes are circulated within two working days, and corrections are accepted for one week after that.",
    "Store hazardous chemicals in the ventilated cabinet and record every withdrawal in the logbook next to it.",
    "The council has approved a plan to extend the cycle network by forty kilometres over the next five years.",
    "Support tickets marked as urgent receive a first response within thirty minutes, at any hour of the day.",
    "Each iteration lasts two weeks and ends with a demonstration of the finished work and a short retrospective.",
    "Suppliers that deliver late pay a penalty of half a percent of the order value for each day of delay.",
    "The server ships with two 64-core processors and 512 GB of memory, which suits large virtualisation clusters.",
    "Temporary staff receive the same safety training as permanent employees before they start work on the site.",
    "The museum now offers an online exhibition in which visitors can browse high-resolution images and listen to expert commentary.",
    "Volunteers record their hours in the portal, and the organiser confirms them at the end of each month.",
    "When a security incident is detected, the on-call engineer informs the incident manager within one hour.",
    "Outdoor workers take a twenty-minute break every two hours during heat waves and drink water regularly.",
    "The knowledge base is organised by department and topic, and its search box accepts both keywords and phrases.",
    "Charging stations for electric vehicles must be installed by a certified electrician and inspected once a year.",
    "The annual report, including the audited accounts, is published on the website no later than the thirtieth of April.",
    "Passwords must be at least twelve characters long and must not reuse any of the last five passwords.",
    "The cooperative introduced drip irrigation, which cut water use by about forty percent while raising yields.",
    "Please keep the ventilation slots free of dust and never cover the housing with cloth or paper.",
    "A contract dispute is first discussed between the parties; if no agreement is reached, it goes to the competent court.",
    "New employees spend their first week in an induction programme that covers company culture, policies and information security.",
    "The school canteen publishes next week's menu every Friday and invites parents to take part in food safety checks.",
    "Inventory is counted at the end of every quarter, and any difference between the books and the shelves is explained in writing.",
    "During the holidays the last metro train on line three leaves the central station at half past midnight.",
    "Requests for remote work are approved by the line manager for at most two days a week.",
    "Reports can be exported as CSV or PDF files and scheduled for delivery by e-mail every Monday morning.",
    "The community clinic offers a free annual check-up to residents over sixty-five; an appointment is required.",
    "All marketing material is reviewed by the brand team and the legal department before it is published.",
    "Construction sites install wheel-washing facilities at their gates so that no mud is carried onto public roads.",
    "The study followed 312 households for eighteen months and measured their energy use every fifteen minutes.",
    "Smoking is not allowed anywhere on the campus except in the marked outdoor areas.",
    "Each release candidate passes functional tests, load tests and a security scan before it is deployed.",
]

EN_TOPICS = [
    "Introduction", "Scope", "Getting Started", "Safety Instructions", "Installation",
    "Initial Configuration", "Network Setup", "Daily Operation", "Maintenance", "Troubleshooting",
    "Budget and Planning", "Procurement", "Contracts", "Travel and Expenses", "Working Hours",
    "Remote Work", "Training", "Performance Reviews", "Information Security", "Data Protection",
    "Backup and Recovery", "Incident Response", "Customer Support", "Quality Assurance",
    "Environmental Policy", "Community Services", "Public Transport", "Urban Planning",
    "Technical Specifications", "Frequently Asked Questions", "Glossary", "Final Provisions",
]


def zh_paragraph(rng):
    return "".join(rng.sample(ZH_SENTENCES, rng.randint(2, 6)))


def en_paragraph(rng):
    return " ".join(rng.sample(EN_SENTENCES, rng.randint(2, 5)))


def zh_blocks(rng):
    """An endless stream of (kind, text): chapters (h0), sections (h1), paragraphs."""
    chapter = 0
    while True:
        chapter += 1
        num = ZH_NUM[(chapter - 1) % 10] if chapter <= 10 else "十" + ZH_NUM[(chapter - 11) % 10]
        yield ("h0", f"第{num}章 {rng.choice(ZH_TOPICS)}")
        for section in range(1, rng.randint(2, 5) + 1):
            yield ("h1", f"{chapter}.{section} {rng.choice(ZH_TOPICS)}")
            for _ in range(rng.randint(1, 4)):
                yield ("p", zh_paragraph(rng))


def en_blocks(rng):
    chapter = 0
    while True:
        chapter += 1
        yield ("h0", f"{chapter} {rng.choice(EN_TOPICS)}")
        for section in range(1, rng.randint(2, 5) + 1):
            yield ("h1", f"{chapter}.{section} {rng.choice(EN_TOPICS)}")
            for _ in range(rng.randint(1, 4)):
                yield ("p", en_paragraph(rng))


def squash(s):
    return re.sub(r"\s+", "", s)


# ---------------------------------------------------------------------------
# Chinese: fpdf2
# ---------------------------------------------------------------------------

ZH_TITLES = ["员工手册", "信息安全管理办法", "产品使用说明书", "年度工作报告", "城市更新规划纲要",
             "客户服务规范", "项目管理制度", "实验室安全守则", "财务报销细则", "社区服务指南"]
ZH_DEPTS = ["内部资料", "人力资源部", "信息技术部", "综合管理部", "质量管理部", "仅供内部使用"]
# (format, regex over the squashed footer)
ZH_FOOTERS = [
    ("第 {n} 页", r"第\d+页"),
    ("- {n} -", r"-\d+-"),
    ("{n} / {total}", r"\d+/\d+"),
    ("第 {n} 页 共 {total} 页", r"第\d+页共\d+页"),
]


def make_zh(path, idx, rng):
    from fpdf import FPDF
    from fpdf.enums import MethodReturnValue, WrapMode

    title = f"{rng.choice(ZH_TITLES)}（第{idx + 1}号）"
    header = f"{title} · {rng.choice(ZH_DEPTS)}"
    footer_fmt, footer_re = rng.choice(ZH_FOOTERS)
    target = rng.randint(10, 30)
    two_col = idx % 3 == 1  # a third of the documents
    body = rng.choice([10.0, 10.5, 11.0])
    spacing = rng.choice([1.5, 1.6, 1.75])
    header_right = rng.random() < 0.5
    # a quarter of the documents draw each page's lines in a shuffled order: the content
    # stream is then no guide to the reading order (as in many real PDFs)
    shuffled = idx % 4 == 3
    order_rng = random.Random(f"order-{idx}")
    ops = []

    class Doc(FPDF):
        def header(self):
            self.set_font("droid", size=9)
            self.set_text_color(110, 110, 110)
            self.set_xy(self.l_margin, 10)
            self.cell(0, 6, header, align="R" if header_right else "L")
            self.set_draw_color(180, 180, 180)
            self.line(self.l_margin, 17, self.w - self.r_margin, 17)
            self.set_text_color(0, 0, 0)

        def footer(self):
            self.set_font("droid", size=9)
            self.set_text_color(110, 110, 110)
            self.set_xy(self.l_margin, self.h - 15)
            self.cell(0, 8, footer_fmt.format(n=self.page_no(), total=target), align="C")
            self.set_text_color(0, 0, 0)

    pdf = Doc(format="A4", unit="mm")
    left, right, top, bottom_margin = 20, 20, 24, 22
    pdf.set_margins(left, top, right)
    pdf.set_auto_page_break(False)
    pdf.add_font("droid", "", FONT)
    pdf.add_font("dejavu", "", LATIN_FONT)
    pdf.set_fallback_fonts(["dejavu"])
    pdf.set_title(title)
    pdf.set_lang("zh-CN")
    pdf.set_author("zhiku benchmark")
    pdf.set_creator("zhiku bench/formats/make_corpus.py")
    pdf.set_creation_date(FIXED)

    width = pdf.w - left - right
    bottom = pdf.h - bottom_margin
    gutter = 8
    colw = (width - gutter) / 2
    sizes = {"h0": 18, "h1": 14, "p": body}
    pt = 25.4 / 72

    def lh(kind):
        return sizes[kind] * (1.3 if kind != "p" else spacing) * pt

    def is_two(page):
        return two_col and page % 3 == 2

    pages = []  # per page: list of text pieces (blocks)
    state = {"page": 0, "col": 0, "y": 0.0, "cols": []}

    def flush():
        if shuffled:
            order_rng.shuffle(ops)
        for kind, x, y, w, line in ops:
            pdf.set_font("droid", size=sizes[kind])
            pdf.set_xy(x, y)
            pdf.cell(w, lh(kind), line)
        ops.clear()

    def new_page():
        if state["page"] == target:
            return False
        flush()
        pdf.add_page()
        state["page"] += 1
        state["cols"] = [(left, colw), (left + colw + gutter, colw)] if is_two(state["page"]) else [(left, width)]
        state["col"] = 0
        state["y"] = top
        pages.append([])
        return True

    def next_col():
        state["col"] += 1
        state["y"] = top
        if state["col"] >= len(state["cols"]):
            return new_page()
        return True

    def wrap(kind, text, w):
        pdf.set_font("droid", size=sizes[kind])
        return pdf.multi_cell(w, lh(kind), text, dry_run=True, output=MethodReturnValue.LINES,
                              wrapmode=WrapMode.CHAR)

    def draw(kind, line):
        x, w = state["cols"][state["col"]]
        ops.append((kind, x, state["y"], w, line))
        state["y"] += lh(kind)

    new_page()
    blocks = zh_blocks(rng)
    done = False
    while not done:
        kind, text = next(blocks)
        if kind == "p":
            rest = text
            while rest:
                x, w = state["cols"][state["col"]]
                lines = wrap("p", rest, w)
                fit = int((bottom - state["y"]) / lh("p") + 1e-6)
                if fit <= 0:
                    if not next_col():
                        done = True
                        break
                    continue
                take = lines[:fit]
                for line in take:
                    draw("p", line)
                pages[-1].append("".join(take))
                rest = "".join(lines[fit:])
                if rest and not next_col():
                    done = True
                    break
            state["y"] += 2
        else:
            x, w = state["cols"][state["col"]]
            lines = wrap(kind, text, w)
            before = 3 if state["y"] > top else 0
            # keep a heading with two lines of the paragraph after it
            need = before + len(lines) * lh(kind) + 2 + 2 * lh("p")
            if state["y"] + need > bottom:
                if not next_col():
                    break
                before = 0
            state["y"] += before
            pdf.set_xy(state["cols"][state["col"]][0], state["y"])
            pdf.start_section(text, level=0 if kind == "h0" else 1)
            for line in lines:
                draw(kind, line)
            pages[-1].append("".join(lines))
            state["y"] += 2
    flush()
    pdf.output(path)
    return {
        "lang": "zh",
        "stream_order": "shuffled" if shuffled else "reading",
        "title": title,
        "header": header,
        "footer_re": footer_re,
        "pages": ["\n".join(p) for p in pages],
        "two_column_pages": [p for p in range(1, len(pages) + 1) if is_two(p)],
    }


# ---------------------------------------------------------------------------
# English: reportlab platypus
# ---------------------------------------------------------------------------

EN_TITLES = ["Lumen Hub Product Guide", "Employee Handbook", "Information Security Policy",
             "Annual Report", "Urban Mobility Plan", "Customer Service Standards",
             "Laboratory Safety Manual", "Travel and Expense Policy", "Community Services Guide",
             "Project Management Handbook"]
EN_FOOTERS = [
    ("Page {n}", r"Page\d+"),
    ("{n}", r"\d+"),
    ("Page {n} of {total}", r"Page\d+of\d+"),
    ("- {n} -", r"-\d+-"),
]


def make_en(path, idx, rng):
    from reportlab.lib.enums import TA_JUSTIFY, TA_LEFT
    from reportlab.lib.pagesizes import A4, LETTER
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import BaseDocTemplate, Frame, PageTemplate, Paragraph

    title = f"{rng.choice(EN_TITLES)} No. {idx + 1}"
    header = f"{title} · Rev. {rng.choice('ABCDE')}"
    footer_fmt, footer_re = rng.choice(EN_FOOTERS)
    target = rng.randint(10, 30)
    two_col = idx % 3 == 2
    pagesize = A4 if rng.random() < 0.7 else LETTER
    serif = rng.random() < 0.5
    font, bold = ("Times-Roman", "Times-Bold") if serif else ("Helvetica", "Helvetica-Bold")
    size = rng.choice([10, 10.5, 11])
    justify = rng.random() < 0.6

    body = ParagraphStyle("Body", fontName=font, fontSize=size, leading=size * 1.4,
                          spaceAfter=size * 0.6, alignment=TA_JUSTIFY if justify else TA_LEFT)
    h0 = ParagraphStyle("Heading0", fontName=bold, fontSize=16, leading=20,
                        spaceBefore=10, spaceAfter=8, keepWithNext=1)
    h1 = ParagraphStyle("Heading1", fontName=bold, fontSize=13, leading=17,
                        spaceBefore=8, spaceAfter=6, keepWithNext=1)

    record = {}  # page -> list of texts, in drawing order

    class P(Paragraph):
        def drawOn(self, canv, x, y, _sW=0):
            # the lines as drawn: a split paragraph's parts carry their text in blPara only
            bl = getattr(self, "blPara", None)
            if bl is None:
                text = self.getPlainText()
            elif bl.kind == 0:
                text = "\n".join(" ".join(words) for _, words in bl.lines)
            else:
                text = "\n".join("".join(getattr(w, "text", "") for w in line.words)
                                 for line in bl.lines)
            record.setdefault(canv.getPageNumber(), []).append(text)
            return super().drawOn(canv, x, y, _sW)

    def build(total):
        record.clear()
        w, h = pagesize
        lm, rm, tm, bm = 22 * mm, 22 * mm, 25 * mm, 22 * mm
        fw, fh = w - lm - rm, h - tm - bm
        one = Frame(lm, bm, fw, fh, id="one", leftPadding=0, rightPadding=0,
                    topPadding=0, bottomPadding=0)
        g = 8 * mm
        cw = (fw - g) / 2
        col1 = Frame(lm, bm, cw, fh, id="c1", leftPadding=0, rightPadding=0,
                     topPadding=0, bottomPadding=0)
        col2 = Frame(lm + cw + g, bm, cw, fh, id="c2", leftPadding=0, rightPadding=0,
                     topPadding=0, bottomPadding=0)

        def is_two(page):
            return two_col and page % 4 == 3

        def decorate(canv, doc):
            canv.saveState()
            canv.setFont(font, 9)
            canv.drawCentredString(w / 2, 12 * mm, footer_fmt.format(n=doc.page, total=total))
            canv.setFont(font, 8.5)
            canv.drawString(lm, h - 14 * mm, header)
            canv.setLineWidth(0.4)
            canv.line(lm, h - 16 * mm, w - rm, h - 16 * mm)
            canv.restoreState()

        def end(canv, doc):
            doc.handle_nextPageTemplate("two" if is_two(doc.page + 1) else "one")

        class Doc(BaseDocTemplate):
            def afterFlowable(self, flowable):
                if isinstance(flowable, Paragraph) and flowable.style.name.startswith("Heading"):
                    key = "h%d" % len(self._keys)
                    self._keys.append(key)
                    self.canv.bookmarkPage(key)
                    self.canv.addOutlineEntry(flowable.getPlainText(), key,
                                              level=int(flowable.style.name[-1]), closed=False)

        doc = Doc(path, pagesize=pagesize, title=title, author="zhiku benchmark",
                  creator="zhiku bench/formats/make_corpus.py", invariant=1,
                  leftMargin=lm, rightMargin=rm, topMargin=tm, bottomMargin=bm)
        doc._keys = []
        doc.addPageTemplates([
            PageTemplate(id="one", frames=[one], onPage=decorate, onPageEnd=end),
            PageTemplate(id="two", frames=[col1, col2], onPage=decorate, onPageEnd=end),
        ])
        doc.build([P(text, {"h0": h0, "h1": h1, "p": body}[kind]) for kind, text in items])
        return doc.page, [p for p in range(1, doc.page + 1) if is_two(p)]

    # roughly the right amount of text for `target` pages: ~ 2600 characters a page
    blocks = en_blocks(rng)
    items, chars = [], 0
    while chars < target * 2600 * (10.5 / size) ** 2:
        kind, text = next(blocks)
        items.append((kind, text))
        chars += len(text)
    total, _ = build(0)
    total2, two_pages = build(total)
    assert total2 == total, path
    pages = ["\n".join(record.get(p, [])) for p in range(1, total + 1)]
    return {
        "lang": "en",
        "stream_order": "reading",
        "title": title,
        "header": header,
        "footer_re": footer_re,
        "pages": pages,
        "two_column_pages": two_pages,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default="/tmp/zhiku-format-corpus")
    ap.add_argument("--zh", type=int, default=60)
    ap.add_argument("--en", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20260115)
    args = ap.parse_args()
    corpus = os.path.abspath(args.corpus)
    truth_dir = corpus.rstrip("/") + "-truth"
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(truth_dir, exist_ok=True)
    total = 0
    jobs = [("zh", i) for i in range(args.zh)] + [("en", i) for i in range(args.en)]
    for lang, i in jobs:
        name = f"{lang}-{i + 1:03d}.pdf"
        rng = random.Random(f"{args.seed}-{name}")
        path = os.path.join(corpus, name)
        truth = (make_zh if lang == "zh" else make_en)(path, i, rng)
        truth = {"file": name, **truth}
        with open(os.path.join(truth_dir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(truth, f, ensure_ascii=False, indent=1)
        total += len(truth["pages"])
        print(f"{name}: {len(truth['pages'])} pages", file=sys.stderr)
    print(f"{len(jobs)} documents, {total} pages in {corpus} (truth: {truth_dir})", file=sys.stderr)


if __name__ == "__main__":
    main()
