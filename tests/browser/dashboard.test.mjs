// The dashboard (resources/web, docs/dashboard.md) in headless Chromium,
// against the real lemonade-router with the fake backends from tests/fakes.
// Run by ctest (tests/CMakeLists.txt) with LEMON_ROUTER_BIN and
// LEMON_FAKES_DIR set; exits 77 (skipped) when no Chromium is installed.
// LEMON_SCREENSHOT names where the screenshot goes (default: a new folder in
// the temp dir, which is kept; the path is printed).
//
// Nothing here sleeps to synchronize: every wait polls a condition (in the
// page or over HTTP) until a deadline.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findChromium, launchChromium, Page } from "./chromium.mjs";

const ROUTER = process.env.LEMON_ROUTER_BIN;
const FAKES = process.env.LEMON_FAKES_DIR;
assert.ok(ROUTER && FAKES, "LEMON_ROUTER_BIN and LEMON_FAKES_DIR must be set");

const CHROMIUM = findChromium();
if (!CHROMIUM) {
  console.log(
    "SKIP: no Chromium found (looked for chromium, chromium-browser, google-chrome on PATH; " +
      "set LEMON_CHROMIUM, or install Debian's chromium with scripts/install-deps.sh --test)",
  );
  process.exit(77);
}

const MANY_MODELS = 50;
const LOG_LINES = 10000;
const HUB_REPO = "org/tiny-GGUF";
const HUB_FILE = `${HUB_REPO}/tiny-Q4_0.gguf`;
const HUB_FILE_SIZE = 2 << 20;
const API_KEY = "s3cret";

// Starts a router on a free port; resolves once it logs where it listens.
function startRouter(root, extraArgs = [], hubPort = 9) {
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: root,
    LEMONADE_CACHE_DIR: join(root, "cache"),
    HF_HUB_CACHE: join(root, "hf"),
    HF_ENDPOINT: `http://127.0.0.1:${hubPort}`,
    LEMONADE_LLAMACPP_CPU_BIN: join(FAKES, "llama-server"),
  };
  const child = spawn(ROUTER, ["--port", "0", "--llamacpp", "cpu", ...extraArgs], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let log = "";
    const timer = setTimeout(() => reject(new Error("router did not start:\n" + log)), 20000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      if (log.length > 100000) {
        log = log.slice(-50000);
      }
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && !child.port) {
        child.port = Number(m[1]);
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on("exit", (code) => reject(new Error(`router exited with ${code}:\n${log}`)));
  });
}

// The fake Hugging Face hub (tests/fakes/README.md) serving HUB_FILE.
function startHub(root) {
  const dir = join(root, "hub", HUB_REPO);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(root, "hub", HUB_FILE), randomBytes(HUB_FILE_SIZE));
  const child = spawn(join(FAKES, "fake-hub"), ["--root", join(root, "hub"), "--port", "0"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/fake-hub listening on 127\.0\.0\.1:(\d+)/);
      if (m && !child.port) {
        child.port = Number(m[1]);
        resolve(child);
      }
    });
    child.on("exit", (code) => reject(new Error(`fake-hub exited with ${code}: ${out}`)));
  });
}

async function setHubRules(hub, rules) {
  const r = await fetch(`http://127.0.0.1:${hub.port}/_fake/knobs`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ rules }),
  });
  assert.equal(r.status, 200, await r.text());
}

function stopRouter(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

// A folder with cache/user_models.json registering one local GGUF file per
// name (model "user.<name>"); knobs[name] becomes the fake's sidecar config;
// extra holds more entries as they are.
function makeRoot(prefix, names, knobs = {}, extra = {}) {
  const root = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(root, "cache"));
  mkdirSync(join(root, "hf"));
  const models = {};
  for (const name of names) {
    const file = join(root, `${name}.gguf`);
    writeFileSync(file, "GGUF");
    if (knobs[name]) {
      writeFileSync(`${file}.fake.json`, JSON.stringify(knobs[name]));
    }
    models[name] = { checkpoint: file, recipe: "llamacpp", source: "local_path" };
  }
  writeFileSync(join(root, "cache", "user_models.json"), JSON.stringify({ ...models, ...extra }));
  return root;
}

async function post(port, path, body, key = "") {
  const headers = { "Content-Type": "application/json" };
  if (key) {
    headers.Authorization = `Bearer ${key}`;
  }
  const r = await fetch(`http://127.0.0.1:${port}/api/v1/${path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  const text = await r.text();
  assert.equal(r.status, 200, `${path}: ${text}`);
  return text;
}

async function loadedModels(port) {
  const r = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
  const health = await r.json();
  return health.all_models_loaded.map((m) => m.model_name);
}

async function backendUrl(port, model) {
  const r = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
  const health = await r.json();
  return health.all_models_loaded.find((m) => m.model_name === model)?.backend_url;
}

async function fakeState(url) {
  return (await fetch(`${url}/fake/state`)).json();
}

// Polls an async condition until it is truthy or the deadline passes (a
// guard against hangs, as long as the other suites' 30 s).
async function until(description, condition, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${description}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// Sends `count` small completions spread over `models`, `parallel` at a time.
async function completions(port, models, count, parallel = 16) {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await post(port, "completions", {
        model: models[i % models.length],
        prompt: "x".repeat(1 + (i % 40)),
        max_tokens: 1 + (i % 4),
      });
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

const rowSelector = (model) => `#models-body tr[data-model="${model}"]`;
const rowState = (model) => `document.querySelector('${rowSelector(model)}')?.dataset.state`;

function assertNoProblems(page) {
  assert.deepEqual(page.problems, [], "the page logged errors or warnings");
}

// Picks a value in a <select> as a user would, firing its change event.
function choose(selectId, value) {
  return page.evaluate(`(() => {
    const select = document.getElementById(${JSON.stringify(selectId)});
    select.value = ${JSON.stringify(value)};
    select.dispatchEvent(new Event("change"));
    return select.value === ${JSON.stringify(value)};
  })()`);
}

const streamsLive = `document.getElementById("events-state").dataset.state === "live" &&
  document.getElementById("logs-state").dataset.state === "live"`;
// "websocket" while the log comes over /api/v1/logs/stream's WebSocket,
// "events" once the page fell back to its SSE stream.
const logTransport = `document.getElementById("logs-state").dataset.transport`;

let root;
let hub;
let router;
let browser;
let page;

before(async () => {
  // user.talk streams slowly enough for the page to show it growing;
  // user.hub is on the fake hub, not on disk.
  root = makeRoot(
    "lemon-dash-",
    ["quick", "talk", "tiny", "reader", "slow"],
    // talk's fake holds each token after the first until the test releases
    // it; reader reports its prompt progress; slow takes 3 s to load and
    // reports how far it is, as llama-server does to a router.
    {
      talk: { gate: "tokens", tokens: 24 },
      reader: { prefill_progress_ms: 100 },
      slow: { startup_delay_ms: 3000, load_progress_steps: 3 },
    },
    {
      hub: { checkpoint: `${HUB_REPO}:Q4_0`, recipe: "llamacpp" },
      // Served by another machine (docs/remote.md): nothing listens there.
      far: { recipe: "remote", checkpoint: "Qwen3-8B-GGUF", endpoints: [{ base_url: "http://127.0.0.1:1/v1" }] },
    },
  );
  hub = await startHub(root);
  router = await startRouter(root, ["--max-loaded-models", "3", "--parallel", "2", "--slot-save-min-tokens", "1"], hub.port);
  browser = await launchChromium(CHROMIUM);
  page = new Page(browser.client);
  await page.watchConsole();
  await page.goto(`http://127.0.0.1:${router.port}/`);
  await page.waitFor("the event and log streams", streamsLive);
  assert.equal(await page.evaluate(logTransport), "websocket", "the log comes over the WebSocket");
});

after(async () => {
  if (browser) await browser.close();
  if (router) await stopRouter(router);
  if (hub) await stopRouter(hub);
  if (root) rmSync(root, { recursive: true, force: true });
});

test("a model loaded over HTTP appears with its slots and context ring", async () => {
  await post(router.port, "load", { model_name: "user.quick" });
  await page.waitFor("user.quick ready in the table", `${rowState("user.quick")} === "ready"`);
  const cells = await page.evaluate(
    `[...document.querySelector('${rowSelector("user.quick")}').cells].map((c) => c.textContent)`,
  );
  assert.equal(cells[1], "llm");
  assert.equal(cells[3], "cpu");
  assert.match(cells[4], /^\d+$/, "pid");
  assert.equal(cells[6], "0/2", "slots");
  // The context ring fills in from `context` events (two slot rings).
  await page.waitFor(
    "the context ring",
    `document.querySelector('${rowSelector("user.quick")} svg.ring title')?.textContent.includes("tokens of context")`,
  );
  assert.equal(await page.evaluate(`document.querySelectorAll('${rowSelector("user.quick")} .slot-rings svg').length`), 2);
  assert.match(await page.evaluate(`document.getElementById("type-limits").textContent`), /llm 1 \/ 3/);
  assertNoProblems(page);
});

test("a remote model shows with its endpoint's health", async () => {
  const answer = await fetch(`http://127.0.0.1:${router.port}/api/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ model: "user.far", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(answer.status, 503, await answer.text());
  await page.waitFor(
    "user.far among the remote models",
    `document.querySelector('#remote-list li[data-model="user.far"] .endpoint-down')?.textContent === "http://127.0.0.1:1/v1: down"`,
  );
  assert.equal(await page.evaluate(`document.getElementById("remote-models").hidden`), false);
  assert.match(
    await page.evaluate(`document.querySelector('#remote-list li[data-model="user.far"] .badge').textContent`),
    /unavailable/,
  );
  assertNoProblems(page);
});

test("the unload button unloads the model", async () => {
  await page.click(`${rowSelector("user.quick")} button[data-action="unload"]`);
  await until("user.quick to be unloaded", async () => !(await loadedModels(router.port)).includes("user.quick"));
  await page.waitFor("the row to go", `!document.querySelector('${rowSelector("user.quick")}')`);
  await page.waitFor("the server_stopped event", `document.querySelector('#events-list [data-type="server_stopped"]')`);
  assertNoProblems(page);
});

test("the load button loads the model chosen in the picker", async () => {
  // The picker lists models by their Lemonade 11 id: "quick" for user.quick.
  await page.waitFor(
    "quick in the model picker",
    `[...document.getElementById("model-picker").options].some((o) => o.value === "quick")`,
  );
  await page.evaluate(`(() => {
    const picker = document.getElementById("model-picker");
    picker.value = "quick";
    picker.dispatchEvent(new Event("change"));
  })()`);
  await page.click("#load-button");
  await until("user.quick to be loaded", async () => (await loadedModels(router.port)).includes("user.quick"));
  await page.waitFor("user.quick ready in the table", `${rowState("user.quick")} === "ready"`);
  await page.waitFor("the load to be reported", `document.getElementById("manage-status").textContent.includes("quick loaded")`);
  await post(router.port, "unload", { model_name: "user.quick" });
  await page.waitFor("the row to go", `!document.querySelector('${rowSelector("user.quick")}')`);
  assertNoProblems(page);
});

test("a model that comes back shows its saved context", async () => {
  await post(router.port, "load", { model_name: "user.tiny" });
  await post(router.port, "chat/completions", {
    model: "user.tiny",
    messages: [{ role: "user", content: "a question worth keeping" }],
    max_tokens: 2,
  });
  // The unload saves its slot (--slot-save-min-tokens 1); the next load restores it.
  await post(router.port, "unload", { model_name: "user.tiny" });
  await post(router.port, "load", { model_name: "user.tiny" });
  await page.waitFor(
    "the saved context in user.tiny's row",
    `/^saved \\d/.test(document.querySelector('${rowSelector("user.tiny")} .saved-context')?.textContent || "")`,
  );
  await post(router.port, "unload", { model_name: "user.tiny" });
  await page.waitFor("the row to go", `!document.querySelector('${rowSelector("user.tiny")}')`);
  assertNoProblems(page);
});

test("the chat box streams a reply from a loaded model", async () => {
  await post(router.port, "load", { model_name: "user.talk" });
  await page.waitFor(
    "user.talk in the chat's model list",
    `[...document.getElementById("chat-model").options].some((o) => o.value === "user.talk")`,
  );
  assert.ok(await choose("chat-model", "user.talk"));
  await page.evaluate(`(() => {
    // Counts how often the reply grows: a streamed reply grows many times.
    window.replyUpdates = 0;
    new MutationObserver((records) => { window.replyUpdates += records.length; })
      .observe(document.getElementById("chat-log"), { subtree: true, characterData: true, childList: true });
    return true;
  })()`);
  await page.type("#chat-input", "Tell me about foxes");
  await page.click("#chat-send");
  await page.waitFor(
    "the reply to start",
    `document.querySelector(".bubble.assistant.streaming .text")?.textContent.startsWith("The")`,
  );
  // The fake holds every token after the first: release them one by one,
  // each once the fake waits for it.
  const talk = await backendUrl(router.port, "user.talk");
  for (let i = 1; i < 24; i += 1) {
    await until(`token ${i} to be held`, async () => {
      const state = await fakeState(talk);
      return state.gates_reached === i && state.held === 1;
    });
    await fetch(`${talk}/fake/release`, { method: "POST" });
  }
  const reply = await page.waitFor(
    "the whole reply",
    `!document.querySelector(".bubble.assistant.streaming") &&
     document.querySelector(".bubble.assistant .text")?.textContent`,
  );
  assert.match(reply, /^The quick brown fox jumps over the lazy dog\./);
  assert.ok((await page.evaluate("window.replyUpdates")) >= 5, "the reply was drawn as it streamed");
  assert.match(await page.evaluate(`document.getElementById("chat-status").textContent`), /24 tokens/);
  assert.equal(await page.evaluate(`document.querySelector(".bubble.failed")`), null);
  // The chat shows up as a request, with its speed in the charts.
  await page.waitFor(
    "the chat in recent requests",
    `[...document.querySelectorAll("#requests-body tr")].some((r) => r.cells[1].textContent === "chat/completions" && r.cells[2].textContent === "user.talk")`,
  );
  assert.notEqual(await page.evaluate(`document.getElementById("tps-now").textContent`), "–");
  assertNoProblems(page);
});

test("the pull button downloads a model with a progress bar", async () => {
  // The hub holds the file back halfway until the rule is cleared.
  await setHubRules(hub, [{ path: HUB_FILE, stall_after_bytes: HUB_FILE_SIZE / 2 }]);
  await page.waitFor(
    "hub in the picker, not downloaded",
    `[...document.querySelectorAll('#model-picker optgroup[label="Not downloaded"] option')].some((o) => o.value === "hub")`,
  );
  assert.ok(await choose("model-picker", "hub"));
  await page.click("#pull-button");
  const stalled = await fetch(
    `http://127.0.0.1:${hub.port}/_fake/wait?event=stalled&path=${HUB_FILE}&timeout_ms=30000`,
  );
  assert.equal(stalled.status, 200, "the download reached the hub's stall point");
  await page.waitFor(
    "the progress bar part way",
    `(() => {
      const bar = document.getElementById("pull-progress");
      return !document.getElementById("pull-box").hidden && bar.value > 0 && bar.value < 100;
    })()`,
  );
  assert.ok(await page.evaluate(`document.getElementById("pull-button").disabled`), "one pull at a time");
  await page.waitFor("the download in the queue", `document.querySelector("#queue .downloading")`);
  await setHubRules(hub, []);
  await page.waitFor(
    "the pull to finish",
    `document.getElementById("manage-status").textContent === "hub is downloaded"`,
    30000,
  );
  assert.equal(await page.evaluate(`document.getElementById("pull-progress").value`), 100);
  await page.waitFor(
    "hub listed as downloaded",
    `[...document.querySelectorAll('#model-picker optgroup[label="Downloaded"] option')].some((o) => o.value === "hub")`,
  );
  await page.waitFor("the queue to empty", `!document.querySelector("#queue .downloading")`);
  assertNoProblems(page);
});

test("a request whose prompt is being read shows a progress bar until it ends", async () => {
  // A streamed chat whose backend reads its prompt for 600 ms, reporting its
  // progress (issue #26), then holds the answer until the test releases it;
  // the page follows it from `request` events.
  await post(router.port, "load", { model_name: "user.reader" });
  const reader = await backendUrl(router.port, "user.reader");
  const reply = fetch(`http://127.0.0.1:${router.port}/api/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      model: "user.reader",
      stream: true,
      messages: [{ role: "user", content: "Summarise this long document" }],
      lemon_fake: { response_delay_ms: 600, tokens: 3, gate: "start" },
    }),
  }).then((r) => r.text());
  const label = await page.waitFor(
    "the request's progress bar",
    `document.querySelector('#requests-body tr.prefill progress')?.value > 0 &&
     document.querySelector('#requests-body tr.prefill .prefill-label').textContent`,
  );
  assert.match(label, /\d+ \/ \d+ prompt tokens/);
  await until("the answer to be held", async () => (await fakeState(reader)).held === 1);
  await fetch(`${reader}/fake/release`, { method: "POST" });
  const body = await reply;
  assert.ok(body.includes("[DONE]"), body);
  assert.ok(!body.includes("prompt_progress"), "progress the client did not ask for was forwarded");
  await page.waitFor("the bar to give way to the finished request", `!document.querySelector('#requests-body tr.prefill')`);
  assertNoProblems(page);
});

test("a loading model shows llama-server's own load progress in the queue", async () => {
  const loading = post(router.port, "load", { model_name: "user.slow" });
  const shown = await page.waitFor(
    "a progress bar on user.slow's queue item",
    `[...document.querySelectorAll("#queue .queue-item")].some((item) =>
       item.querySelector(".model-name")?.textContent === "user.slow" &&
       item.querySelector("progress")?.value > 0) &&
     [...document.querySelectorAll("#queue .queue-item")].find((item) =>
       item.querySelector(".model-name")?.textContent === "user.slow").textContent`,
  );
  assert.match(shown, /text_model \d+%/);
  await loading;
  await page.waitFor("user.slow ready in the table", `${rowState("user.slow")} === "ready"`);
  await post(router.port, "unload", { model_name: "user.slow" });
  assertNoProblems(page);
});

test("requests, events and log lines show up; screenshot", async () => {
  await post(router.port, "load", { model_name: "user.tiny" });
  await post(router.port, "load", { model_name: "user.quick" });
  // Requests with different speeds and prompt lengths, for the charts.
  for (let i = 0; i < 24; i++) {
    await post(router.port, "completions", {
      model: i % 3 === 0 ? "user.talk" : "user.quick",
      prompt: "word ".repeat(5 + ((i * 37) % 120)),
      max_tokens: 2 + (i % 5),
      lemon_fake: { stream_chunk_delay_ms: 4 + ((i * 7) % 12) },
    });
  }
  await page.waitFor("24 more requests", `document.querySelectorAll("#requests-body tr").length >= 25`);
  await page.waitFor("three models", `document.querySelectorAll('#models-body tr[data-state="ready"]').length === 3`);
  await page.waitFor(
    "backend lines in the log",
    `[...document.querySelectorAll("#log-rows .log-row")].some((r) => r.textContent.includes("[backend user.quick]"))`,
  );
  await page.waitFor("the load events", `document.querySelectorAll('#events-list [data-type="load_succeeded"]').length >= 4`);
  // Slot rings reflect every loaded llama.cpp model.
  await page.waitFor(
    "context rings for every model",
    `[...document.querySelectorAll("#models-body tr")].every((r) => r.querySelector("svg.ring title")?.textContent.includes("tokens of context"))`,
  );
  const png = await page.screenshot();
  const path = process.env.LEMON_SCREENSHOT || join(mkdtempSync(join(tmpdir(), "lemon-dash-shot-")), "dashboard.png");
  writeFileSync(path, png);
  console.log(`screenshot: ${path}`);
  assertNoProblems(page);
});

test("a routing policy's hits per rule show in their panel", async () => {
  // user.pick sends long prompts to user.tiny and the rest to user.quick.
  await post(router.port, "pull", {
    model_name: "user.pick",
    recipe: "collection.router",
    version: "1",
    components: ["user.quick", "user.tiny"],
    routing: {
      candidates: ["user.quick", "user.tiny"],
      default_model: "user.quick",
      rules: [{ id: "long", match: { min_chars: 40 }, route_to: "user.tiny" }],
    },
  });
  for (const text of ["hi", "word ".repeat(20)]) {
    await post(router.port, "chat/completions", {
      model: "user.pick",
      messages: [{ role: "user", content: text }],
      max_tokens: 2,
    });
  }
  const row = `document.querySelector('#routing-body tr[data-policy="user.pick"]')`;
  await page.waitFor(
    "two decisions in the routing panel",
    `!document.getElementById("routing-panel").hidden && ${row}?.querySelector(".decisions").textContent === "2"`,
  );
  const rules = await page.evaluate(`${row}.querySelector(".rules").textContent`);
  assert.match(rules, /long 1/);
  assert.match(rules, /default 1/);
  await page.waitFor(
    "a routed request's row names its policy",
    `[...document.querySelectorAll("#requests-body tr")].some((r) => r.children[2]?.textContent === "user.pick → user.tiny")`,
  );
  assertNoProblems(page);
});

test("the log filter shows one model's lines", async () => {
  assert.ok(await choose("log-model", "user.talk"));
  const rows = await page.evaluate(`[...document.querySelectorAll("#log-rows .log-row:not([hidden])")].map((r) => r.textContent)`);
  assert.ok(rows.length > 0);
  assert.ok(rows.every((text) => text.includes("[backend user.talk]")), rows.join("\n"));
  assert.ok(await choose("log-model", ""));
  assertNoProblems(page);
});

test("asks for the API key once and keeps it for the session", async () => {
  const keyRoot = makeRoot("lemon-dash-key-", ["quick"]);
  const keyed = await startRouter(keyRoot, ["--api-key", API_KEY]);
  const url = `http://127.0.0.1:${keyed.port}/`;
  const seen = page.problems.length;
  try {
    await page.goto(url);
    await page.waitFor("the key form", `document.getElementById("key-dialog").open`);
    await page.type("#key-input", "wrong");
    await page.click('#key-form button[type="submit"]');
    await page.waitFor(
      "the form again, saying the key was refused",
      `document.getElementById("key-dialog").open && document.getElementById("key-message").textContent.includes("refused")`,
    );
    await page.type("#key-input", API_KEY);
    await page.click('#key-form button[type="submit"]');
    await page.waitFor("the streams with the key", `${streamsLive} && !document.getElementById("key-dialog").open`);
    await post(keyed.port, "load", { model_name: "user.quick" }, API_KEY);
    await page.waitFor("user.quick ready in the table", `${rowState("user.quick")} === "ready"`);
    assert.equal(await page.evaluate(`sessionStorage.getItem("lemonade-router.api-key")`), API_KEY);
    // The refused requests show up as failed loads; nothing else may.
    const refusals = page.problems.splice(seen);
    assert.deepEqual(refusals.filter((p) => !p.includes("status of 401")), []);

    // Without the key the socket could not be used: the SSE stream asked.
    assert.equal(await page.evaluate(logTransport), "events");
    // A reload uses the kept key: no form, no refusals, the log's socket.
    await page.goto(url);
    await page.waitFor("the streams", streamsLive);
    assert.equal(await page.evaluate(logTransport), "websocket");
    await page.waitFor("user.quick ready in the table", `${rowState("user.quick")} === "ready"`);
    assert.equal(await page.evaluate(`document.getElementById("key-dialog").open`), false);
    assertNoProblems(page);
  } finally {
    await page.goto("about:blank");
    await stopRouter(keyed);
    rmSync(keyRoot, { recursive: true, force: true });
  }
});

test(`stays responsive with ${MANY_MODELS} loaded models and ${LOG_LINES} log lines`, async () => {
  const names = Array.from({ length: MANY_MODELS }, (_, i) => `m${String(i).padStart(2, "0")}`);
  const models = names.map((n) => `user.${n}`);
  const bigRoot = makeRoot("lemon-dash-many-", names);
  const big = await startRouter(bigRoot, ["--max-loaded-models", String(MANY_MODELS)]);
  let traffic = Promise.resolve(null);
  try {
    await page.goto(`http://127.0.0.1:${big.port}/`);
    await page.waitFor("the event and log streams", streamsLive);
    // The longest task the page's main thread runs from here on.
    await page.evaluate(`(() => {
      window.longestTask = 0;
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) window.longestTask = Math.max(window.longestTask, entry.duration);
      }).observe({ type: "longtask" });
      return true;
    })()`);

    for (let i = 0; i < models.length; i += 10) {
      await Promise.all(models.slice(i, i + 10).map((m) => post(big.port, "load", { model_name: m })));
    }
    await page.waitFor(
      `${MANY_MODELS} ready rows`,
      `document.querySelectorAll('#models-body tr[data-state="ready"]').length === ${MANY_MODELS}`,
      30000,
    );
    // Every completion adds a backend log line and a request event.
    let started = Date.now();
    await completions(big.port, models, LOG_LINES);
    console.log(`${LOG_LINES} completions took ${Date.now() - started} ms`);
    await page.waitFor(
      `${LOG_LINES} kept log lines`,
      `document.getElementById("log-count").textContent === "${LOG_LINES} lines"`,
      60000,
    );

    // With more traffic still arriving: a filter change is drawn in the very
    // next frame (not deferred)...
    const others = models.filter((m) => m !== "user.m03"); // m03 is unloaded below
    traffic = completions(big.port, others, 2000, 8).then(() => null, (error) => error);
    const filterMs = await page.evaluate(`(async () => {
      const start = performance.now();
      const select = document.getElementById("log-model");
      select.value = "user.m07";
      select.dispatchEvent(new Event("change"));
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const rows = [...document.querySelectorAll("#log-rows .log-row:not([hidden])")];
      if (rows.length === 0 || !rows.every((r) => r.textContent.includes("[backend user.m07]"))) return -1;
      return performance.now() - start;
    })()`);
    assert.ok(filterMs >= 0, "the filtered rows show only user.m07 in the next frame");

    // ...and a click on a button disables it in the next frame.
    await page.evaluate(`(() => {
      const button = document.querySelector('${rowSelector("user.m03")} button[data-action="unload"]');
      window.clickDelay = null;
      button.addEventListener("pointerdown", () => { window.pressedAt = performance.now(); }, { once: true });
      new MutationObserver((records, observer) => {
        observer.disconnect();
        requestAnimationFrame(() => { window.clickDelay = performance.now() - window.pressedAt; });
      }).observe(button, { attributes: true, attributeFilter: ["disabled"] });
      return true;
    })()`);
    await page.click(`${rowSelector("user.m03")} button[data-action="unload"]`);
    const clickMs = await page.waitFor("the click to be answered", "window.clickDelay");
    await until("user.m03 to be unloaded", async () => !(await loadedModels(big.port)).includes("user.m03"));
    assert.equal(await traffic, null, "the extra traffic failed");

    await page.waitFor(`${MANY_MODELS - 1} rows`, `document.querySelectorAll("#models-body tr").length === ${MANY_MODELS - 1}`);
    const rows = await page.evaluate(`document.querySelectorAll("#log-rows .log-row").length`);
    assert.ok(rows < 200, `${rows} log rows in the DOM`);
    const longest = await page.evaluate("window.longestTask");
    // Reported, not asserted: on a loaded machine (the suite runs tests in
    // parallel) a starved renderer's tasks stretch with the load, so a bound
    // in milliseconds measures the machine (issue #23: the filter's 1 s bound
    // failed at 3.3 s under a full suite). What the test holds the page to is
    // structural: a bounded DOM, the filter drawn in the next frame, the
    // click answered by the next frame.
    console.log(`filter ${filterMs.toFixed(0)} ms, click ${clickMs.toFixed(0)} ms, longest task ${longest.toFixed(0)} ms`);
    assertNoProblems(page);
  } finally {
    await traffic;
    await page.goto("about:blank");
    await stopRouter(big);
    rmSync(bigRoot, { recursive: true, force: true });
  }
});
