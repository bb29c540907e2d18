// Signs a person in on the page of a running `zhiku serve` through its identity provider (the
// provider's own sign-in form; authorization code + PKCE), asks a question as that person, and
// reports what the page showed. Usage: node sign_in.cjs BASE_URL USER QUESTION SCREENSHOT.png
"use strict";
const { launch } = require("./launch.cjs");

async function main() {
  const [base, user, question, shot] = process.argv.slice(2);
  const browser = await launch();
  const out = {};
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    // Script errors only: a 401 before sign-in and after sign-out is the page working.
    page.on("console", (m) => { if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text()); });
    await page.goto(base + "/");
    await page.waitForSelector("#sign-in:not([hidden])", { timeout: 15000 });
    await page.click("#sign-in");
    // The provider's own page: type the name, sign in.
    await page.waitForSelector('input[name="login"]', { timeout: 15000 });
    out.provider_url = new URL(page.url()).origin;
    await page.fill('input[name="login"]', user);
    await Promise.all([page.waitForURL(base + "/**", { timeout: 15000 }), page.click('button[type="submit"]')]);
    await page.waitForFunction(() => document.getElementById("who").textContent.length > 0, null, { timeout: 15000 });
    out.who = await page.textContent("#who");
    out.sign_in_hidden = await page.evaluate(() => document.getElementById("sign-in").hidden);
    out.url_after = page.url();
    out.token_kept = await page.evaluate(() => (sessionStorage.getItem("zhiku-token") || "").split(".").length === 3);
    await page.fill("#question", question);
    await page.click("#ask");
    await page.waitForSelector('.card[data-stage="answer"]', { timeout: 30000 });
    out.answer = await page.textContent("#answer");
    out.citations = await page.$$eval("#answer a.citation", (as) => as.map((a) => a.getAttribute("data-chunk")));
    await page.screenshot({ path: shot, fullPage: true });
    // Signing out forgets the token: the next request has none.
    await page.click("#sign-out");
    out.after_sign_out = await page.evaluate(() => sessionStorage.getItem("zhiku-token"));
    out.errors = errors;
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => { console.error(e); process.exit(1); });
