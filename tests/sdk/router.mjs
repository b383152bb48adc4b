// Shared by the SDK tests: starts the real lemonade-router binary with the
// fake backends (LEMON_ROUTER_BIN, LEMON_FAKES_DIR) on free loopback ports,
// with user models whose files live in a temporary folder.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROUTER = process.env.LEMON_ROUTER_BIN;
const FAKES = process.env.LEMON_FAKES_DIR;
assert.ok(ROUTER && FAKES, "LEMON_ROUTER_BIN and LEMON_FAKES_DIR must be set");

// A temporary root with cache/user_models.json listing `models`
// ({name: {recipe, labels, knobs?}}), each served as "user.<name>"; `knobs`
// are the fake backend's (tests/fakes/README.md).
export function makeRoot(prefix, models) {
  const root = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(root, "cache"));
  mkdirSync(join(root, "hf"));
  const entries = {};
  for (const [name, { recipe, labels, knobs }] of Object.entries(models)) {
    const file = join(root, `${name}.gguf`);
    writeFileSync(file, "GGUF");
    if (knobs) {
      writeFileSync(`${file}.fake.json`, JSON.stringify(knobs));
    }
    entries[name] = { checkpoint: file, recipe, labels, source: "local_path" };
  }
  writeFileSync(join(root, "cache", "user_models.json"), JSON.stringify(entries));
  return root;
}

// A slow prompt (issue #26): the fake spends this long before its first
// token, so the router's heartbeat (--stream-heartbeat, set short by the
// tests) fills the silence.
export const SLOW_PROMPT = { response_delay_ms: 600, tokens: 5 };
export const HEARTBEAT = ["--stream-heartbeat", "0.05"];

// The raw text of a streamed POST, as any HTTP client would read it.
export async function rawStream(port, path, body, headers = {}) {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200);
  return r.text();
}

export function removeRoot(root) {
  if (root) rmSync(root, { recursive: true, force: true });
}

// Starts a router on a free port; resolves once it logs where it listens
// (and, with --ollama-port, where the Ollama listener is: child.ollamaPort).
export function startRouter(root, extraArgs = [], extraEnv = {}) {
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: root,
    LEMONADE_CACHE_DIR: join(root, "cache"),
    HF_HUB_CACHE: join(root, "hf"),
    LEMONADE_LLAMACPP_CPU_BIN: join(FAKES, "llama-server"),
    ...extraEnv,
  };
  const wantsOllama = extraArgs.includes("--ollama-port");
  const child = spawn(
    ROUTER,
    ["--port", "0", "--llamacpp", "cpu", "--max-loaded-models", "-1", ...extraArgs],
    { env, stdio: ["ignore", "ignore", "pipe"] },
  );
  return new Promise((resolve, reject) => {
    let log = "";
    const timer = setTimeout(() => reject(new Error("router did not start:\n" + log)), 20000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const main = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      const ollama = log.match(/Ollama API also served on http:\/\/127\.0\.0\.1:(\d+)/);
      if (main && !child.port) child.port = Number(main[1]);
      if (ollama && !child.ollamaPort) child.ollamaPort = Number(ollama[1]);
      if (child.port && (!wantsOllama || child.ollamaPort) && !child.started) {
        child.started = true;
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on("exit", (code) => reject(new Error(`router exited with ${code}:\n${log}`)));
  });
}

export function stopRouter(child) {
  return new Promise((resolve) => {
    if (!child || child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}
