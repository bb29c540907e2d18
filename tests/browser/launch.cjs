// How the browser tests start Debian's Chromium (no Playwright browser download; no sandbox in a
// container; nothing in the background reaching the network).
"use strict";
const { chromium } = require("playwright-core");

module.exports.launch = () => chromium.launch({
  executablePath: process.env.ZHIKU_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
