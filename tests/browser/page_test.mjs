// Browser test of the web page at /: starts `rexnlu serve` with the tiny model on an ephemeral
// port, drives Debian's Chromium (headless) with playwright-core, checks that the spans and paths
// shown are those of the original implementation (tests/data e2e cases), and saves a screenshot.
//
//   node page_test.mjs REXNLU_BINARY MODEL_DIR TEST_DATA_DIR SCREENSHOT.png
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const [binary, modelDir, testData, screenshot] = process.argv.slice(2);
if (!screenshot) {
  console.error("usage: node page_test.mjs REXNLU_BINARY MODEL_DIR TEST_DATA_DIR SCREENSHOT.png");
  process.exit(2);
}

const cases = new Map(
  readFileSync(`${testData}/rexuninlu_tiny/e2e_cases.jsonl`, "utf8").split("\n").filter((l) => l.trim())
    .map((l) => JSON.parse(l)).map((c) => [c.id, c]));

// Starts the service; resolves with its base URL once /health answers 200.
function startServer() {
  const server = spawn(binary, ["serve", "--port", "0", "--model", modelDir], { stdio: ["ignore", "pipe", "inherit"] });
  const url = new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`rexnlu serve exited early with ${code}`)));
  });
  return { server, url };
}

async function waitHealthy(base) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch (e) { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the service never became healthy");
}

const rowsText = (page) => page.locator("#paths tbody tr.path-row").allTextContents();
const expectedRow = (path) => path.map((it) => `${it.type}: ${it.span} [${it.offset[0]}, ${it.offset[1]})`);

const results = [];
async function check(name, fn) {
  try {
    await fn();
    results.push([name, true]);
    console.log(`ok   ${name}`);
  } catch (e) {
    results.push([name, false]);
    console.log(`FAIL ${name}\n${e.stack}`);
  }
}

const { server, url } = startServer();
let browser;
let exitCode = 1;
try {
  const base = await url;
  await waitHealthy(base);
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(60000);
  await page.goto(`${base}/`);

  await check("health badge shows the model is ready", async () => {
    await page.locator("#health.ok").waitFor();
    assert.equal(await page.locator("#health").textContent(), "model ready");
  });

  await check("custom schema: paths and highlighted spans of the original", async () => {
    const c = cases.get("ner/cf108c98d1f686e65d7a5676af5a0af1");
    await page.selectOption("#task", "");
    await page.fill("#text", c.text);
    await page.fill("#schema", JSON.stringify(c.schema));
    await page.click("#run");
    await page.locator("#paths tbody tr.path-row").first().waitFor();
    const rows = await rowsText(page);
    assert.equal(rows.length, c.expected.length);
    c.expected.forEach((path, i) => {
      for (const item of expectedRow(path)) assert.ok(rows[i].includes(item), `row ${i}: ${rows[i]} lacks ${item}`);
    });
    // The highlighted text is the whole input; the marked characters are exactly the spans' union.
    assert.equal(await page.locator("#highlighted").textContent(), c.text);
    const marked = (await page.locator("#highlighted mark").allTextContents()).join("");
    const chars = Array.from(c.text);
    const covered = new Set();
    for (const path of c.expected) for (const it of path) for (let k = it.offset[0]; k < it.offset[1]; k++) covered.add(k);
    assert.equal(marked, [...covered].sort((a, b) => a - b).map((k) => chars[k]).join(""));
    assert.deepEqual(await page.locator("#legend span").allTextContents(), [...new Set(c.expected.flat().map((it) => it.type))]);
    await page.screenshot({ path: screenshot, fullPage: true });
  });

  await check("task picker: sentiment classifies like the original", async () => {
    const c = cases.get("cls_sent");
    await page.selectOption("#task", "sentiment");
    assert.equal(await page.locator("#schema-row").isHidden(), true);
    await page.fill("#text", c.text.replace(/^\[CLASSIFY\]/, ""));
    await page.fill("#labels", "");
    await page.click("#run");
    await page.locator("#paths tbody tr.path-row", { hasText: c.expected[0][0].type }).waitFor();
    const rows = await rowsText(page);
    assert.equal(rows.length, 1);
    assert.ok(rows[0].includes(expectedRow(c.expected[0])[0]), rows[0]);
    await page.screenshot({ path: screenshot.replace(/\.png$/, "_task.png"), fullPage: true });
  });

  await check("errors are shown: a task without its labels is a 422", async () => {
    await page.selectOption("#task", "ner");
    await page.fill("#labels", "");
    await page.click("#run");
    await page.locator("#error:not([hidden])").waitFor();
    assert.match(await page.locator("#error").textContent(), /^422 invalid_request: /);
  });

  await check("errors are shown: a schema that is not JSON never leaves the page", async () => {
    await page.selectOption("#task", "");
    await page.fill("#schema", "{人物");
    await page.click("#run");
    await page.locator("#error:not([hidden])").waitFor();
    assert.match(await page.locator("#error").textContent(), /not valid JSON/);
  });
  exitCode = results.every(([, ok]) => ok) && results.length === 5 ? 0 : 1;
} catch (e) {
  console.log(`FAIL setup\n${e.stack}`);
} finally {
  if (browser) await browser.close();
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  server.kill("SIGTERM");
  const code = await exited;
  if (code !== 0) {
    console.log(`FAIL rexnlu serve exited with ${code} after SIGTERM`);
    exitCode = 1;
  }
}
const passed = results.filter(([, ok]) => ok).length;
console.log(`${passed} passed, ${results.length - passed} failed`);
process.exit(exitCode);
