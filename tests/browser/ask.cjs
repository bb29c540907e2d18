// Asks a question on the page of a running `zhiku serve`, checks the cited answer, opens a
// citation and the run-chain cards, and saves a screenshot.
// With FOLLOW_UP, asks it next as the second turn of the same conversation.
// Usage: node ask.cjs BASE_URL QUESTION SCREENSHOT.png [FOLLOW_UP]
"use strict";
const { launch } = require("./launch.cjs");

async function main() {
  const [base, question, shot, followUp] = process.argv.slice(2);
  const browser = await launch();
  const out = {};
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(base + "/");
    await page.waitForFunction(() => !document.getElementById("kb-status").textContent.startsWith("…"));
    out.status_line = await page.textContent("#kb-status");
    await page.fill("#question", question);
    await page.click("#ask");
    await page.waitForSelector("#answer a.citation", { timeout: 30000 });
    await page.waitForSelector('.card[data-stage="answer"]', { timeout: 30000 });
    out.answer = await page.textContent("#answer");
    out.badge = await page.textContent("#answer .badge");
    out.cards = await page.$$eval(".card", (cs) => cs.map((c) => c.getAttribute("data-stage")));
    out.trace_id = await page.textContent("#trace-id");
    // Expand the route card: its hits table and data are there.
    const route = page.locator('.card[data-stage="retrieval.route"]').first();
    await route.locator("summary").click();
    out.route_open = await route.evaluate((d) => d.open);
    out.route_rows = await route.locator("table tr").count();
    // Open the first citation: the chunk, its source, the document with the chunk marked.
    const link = page.locator("#answer a.citation").first();
    out.cited_chunk = await link.getAttribute("data-chunk");
    await link.click();
    await page.waitForSelector("#chunk:not([hidden])");
    await page.waitForFunction(() => document.querySelector("#chunk-doc mark") !== null, null, { timeout: 10000 });
    out.chunk_id = await page.textContent("#chunk-id");
    out.chunk_source = await page.textContent("#chunk-source");
    out.chunk_content = await page.textContent("#chunk-content");
    out.marked = await page.textContent("#chunk-doc mark");
    // With ZHIKU_EXPECT_PAGE=1 the cited chunk is on a page picture (a scan): the page is
    // shown with the quote's lines highlighted on it.
    if (process.env.ZHIKU_EXPECT_PAGE === "1") {
      await page.waitForSelector("#chunk-page:not([hidden])", { timeout: 30000 });
      await page.waitForFunction(() => {
        const img = document.getElementById("chunk-page-img");
        return img.complete && img.naturalWidth > 0;
      }, null, { timeout: 30000 });
      out.page_image = await page.evaluate(() => {
        const img = document.getElementById("chunk-page-img");
        const frame = img.getBoundingClientRect();
        const boxes = Array.from(document.querySelectorAll("#chunk-page .quote-box")).map((b) => {
          const r = b.getBoundingClientRect();
          // Where each highlight sits on the shown page, as fractions of it.
          return { x0: (r.left - frame.left) / frame.width, y0: (r.top - frame.top) / frame.height,
            x1: (r.right - frame.left) / frame.width, y1: (r.bottom - frame.top) / frame.height };
        });
        return { natural_width: img.naturalWidth, natural_height: img.naturalHeight,
          caption: document.getElementById("chunk-page-caption").textContent, boxes };
      });
      await page.locator("#chunk-page").screenshot({ path: shot.replace(/\.png$/, "-page.png") });
    }
    await page.locator("#chunk details summary").click();
    out.citations = await page.$$eval("#citations li", (ls) => ls.map((l) => l.textContent));
    out.sources = await page.$$eval("#sources li", (ls) => ls.map((l) => l.textContent));
    out.tokens = await page.textContent("#tokens");
    // A citation of a PDF page opens the file at that page, in a new tab.
    const open = page.locator("#citations a.open-page").first();
    if (await open.count()) {
      const [tab] = await Promise.all([page.context().waitForEvent("page"), open.click()]);
      await tab.waitForURL(/^blob:/, { timeout: 10000 });
      out.opened = tab.url();
      await tab.close();
    }
    if (followUp) {
      await page.fill("#question", followUp);
      await page.click("#ask");
      await page.waitForFunction(() => document.querySelectorAll("#turns li").length === 2, null, { timeout: 30000 });
      out.follow_up = {
        answer: await page.textContent("#answer"),
        badge: await page.textContent("#answer .badge"),
        rewritten: await page.textContent("#rewritten"),
        turns: await page.$$eval("#turns li .step", (ts) => ts.map((t) => t.textContent)),
        cards: await page.$$eval(".card", (cs) => cs.map((c) => c.getAttribute("data-stage"))),
        rewrite_line: await page.textContent('.card[data-stage="rewrite"] .line'),
      };
    }
    await page.screenshot({ path: shot, fullPage: true });
    out.page_errors = errors;
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
