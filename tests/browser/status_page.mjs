// The status page of mcp_supervisor::web in a real browser: Debian's headless Chromium,
// driven by playwright-core. Started by tests/browser.rs with the base URL of a running
// service whose supervisor has the servers `alpha` and `beta` (demo servers) and `broken`
// (fails at start, after writing HTML to stderr). Checks that the page loads, shows every
// server, shows what a server wrote as text, and follows a kill -9 of alpha's process; and
// that the redacted page (the same scope under /redacted) shows no pid and nothing a server
// wrote, and follows a kill too.
// Exits non-zero on the first failed check.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = process.argv[2];
if (!base) throw new Error("usage: node status_page.mjs http://127.0.0.1:PORT");
const WAIT = { timeout: 20_000 };
let passed = 0;
function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}: ${detail ?? "failed"}`);
  passed += 1;
  console.log(`ok ${passed} - ${what}`);
}

const statuses = await (await fetch(`${base}/status`)).json();
const names = statuses.map((s) => s.name);
const alpha = statuses.find((s) => s.name === "alpha");

const userDataDir = mkdtempSync(join(tmpdir(), "mcp-status-page-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const problems = [];
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  page.on("dialog", (d) => {
    problems.push(`a dialog opened: ${d.message()}`);
    d.dismiss();
  });

  const started = Date.now();
  await page.goto(`${base}/status/page`);
  await page.locator("#connection", { hasText: "live" }).waitFor(WAIT);
  await page.waitForFunction((n) => document.querySelectorAll("tr[data-server]").length === n, names.length, WAIT);
  check("the page loads and follows the event stream", true);
  console.log(`# loaded in ${Date.now() - started} ms`);

  const shown = await page.$$eval("tr[data-server]", (rows) => rows.map((r) => r.dataset.server));
  check("every server is shown, sorted", JSON.stringify(shown) === JSON.stringify([...names].sort()), JSON.stringify(shown));
  for (const [name, state] of [["alpha", "ready"], ["beta", "ready"], ["broken", "failed"]]) {
    const text = await page.locator(`tr[data-server="${name}"] td[data-field=state]`).textContent();
    check(`${name} is ${state}`, text === state, text);
  }
  const pidText = await page.locator('tr[data-server="alpha"] td[data-field=process]').textContent();
  check("alpha's pid is shown", pidText.includes(`pid ${alpha.pid}`), pidText);

  const tail = await page.locator('tr[data-server="broken"] pre[data-field=stderr_tail]').textContent();
  check("a server's stderr is shown as text", tail.includes("<img src=x onerror=alert(1)>"), tail);
  check("and is not HTML", (await page.locator("img").count()) === 0, "an <img> element exists");

  const killed = Date.now();
  process.kill(alpha.pid, "SIGKILL");
  await page.waitForFunction(
    (oldPid) => {
      const row = document.querySelector('tr[data-server="alpha"]');
      return row &&
        row.dataset.state === "ready" &&
        row.querySelector("[data-field=reconnects]").textContent === "1" &&
        !row.querySelector("[data-field=process]").textContent.includes(`pid ${oldPid}`) &&
        row.querySelector("[data-field=last_error]").textContent.includes("SIGKILL");
    },
    alpha.pid,
    WAIT,
  );
  check("the page follows a kill -9: new pid, one reconnect, the signal in the last error", true);
  console.log(`# updated ${Date.now() - killed} ms after the kill`);
  const logged = await page.locator("#log li", { hasText: "alpha:" }).count();
  check("the kill is in the event log", logged >= 2, `${logged} entries`);
  check("the full view says nothing of redaction", await page.locator("#redacted").isHidden());

  // The same scope, redacted for every request (tests/browser.rs serves it under /redacted).
  await page.goto(`${base}/redacted/status/page`);
  await page.locator("#connection", { hasText: "live" }).waitFor(WAIT);
  await page.waitForFunction((n) => document.querySelectorAll("tr[data-server]").length === n, names.length, WAIT);
  check("the redacted page loads and says it is redacted", await page.locator("#redacted").isVisible());
  const processes = await page.$$eval("td[data-field=process]", (cells) => cells.map((c) => c.textContent));
  check("no pid is shown", processes.every((p) => !p.includes("pid")), JSON.stringify(processes));
  const broken = await page.locator('tr[data-server="broken"] td[data-field=last_error]').textContent();
  check("an error is its code, without what the server wrote",
    broken.length > 0 && !broken.includes("img") && !broken.includes(":") &&
      (await page.locator("pre[data-field=stderr_tail]").count()) === 0,
    broken);
  const newPid = (await (await fetch(`${base}/status`)).json()).find((s) => s.name === "alpha").pid;
  process.kill(newPid, "SIGKILL");
  await page.waitForFunction(
    () => document.querySelector('tr[data-server="alpha"] [data-field=reconnects]')?.textContent === "2",
    undefined,
    WAIT,
  );
  const entries = await page.$$eval("#log li", (items) => items.map((i) => i.textContent));
  check("the redacted page follows a kill -9, its events in words of its own",
    entries.some((e) => e.endsWith("alpha: Reconnecting (attempt 1)")) &&
      entries.some((e) => e.endsWith("alpha: Ready")),
    JSON.stringify(entries));
  check("no script errors, dialogs or blocked loads", problems.length === 0, problems.join("; "));
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(`${passed} passed, 0 failed`);
