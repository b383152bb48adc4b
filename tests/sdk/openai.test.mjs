// End-to-end: the official `openai` npm package against the real
// lemonade-router binary, with the fake backends from tests/fakes.
// Run by ctest (tests/CMakeLists.txt) as `node --test`, with
// LEMON_ROUTER_BIN and LEMON_FAKES_DIR in the environment.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";

const ROUTER = process.env.LEMON_ROUTER_BIN;
const FAKES = process.env.LEMON_FAKES_DIR;
assert.ok(ROUTER && FAKES, "LEMON_ROUTER_BIN and LEMON_FAKES_DIR must be set");

// Starts a router on a free port; resolves once it logs where it listens.
function startRouter(root, extraArgs = []) {
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: root,
    LEMONADE_CACHE_DIR: join(root, "cache"),
    HF_HUB_CACHE: join(root, "hf"),
    LEMONADE_LLAMACPP_CPU_BIN: join(FAKES, "llama-server"),
    LEMONADE_WHISPERCPP_CPU_BIN: join(FAKES, "whisper-server"),
    LEMONADE_SDCPP_CPU_BIN: join(FAKES, "sd-server"),
  };
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

function stopRouter(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

// A short mono 16 kHz 16-bit PCM WAV of silence.
function makeWav(samples = 1600) {
  const data = Buffer.alloc(samples * 2);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write("WAVE", 8);
  header.write("fmt ", 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(16000, 24);
  header.writeUInt32LE(32000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

let root;
let router;
let client;

before(async () => {
  root = mkdtempSync(join(tmpdir(), "lemon-sdk-"));
  mkdirSync(join(root, "cache"));
  mkdirSync(join(root, "hf"));
  const models = {};
  const add = (name, recipe, labels, knobs) => {
    const file = join(root, `${name}.gguf`);
    writeFileSync(file, "GGUF");
    if (knobs) {
      writeFileSync(`${file}.fake.json`, JSON.stringify(knobs));
    }
    models[name] = { checkpoint: file, recipe, labels, source: "local_path" };
  };
  add("chat", "llamacpp", []);
  add("embed", "llamacpp", ["embeddings"]);
  add("whisper", "whispercpp", ["audio"]);
  add("sd", "sd-cpp", ["image"]);
  // The fake reads this one's prompt for 600 ms (issue #26).
  add("slow", "llamacpp", [], { response_delay_ms: 600, tokens: 5 });
  writeFileSync(join(root, "cache", "user_models.json"), JSON.stringify(models));
  // Heartbeats in every silence over 50 ms: every stream below must parse
  // with them.
  router = await startRouter(root, ["--stream-heartbeat", "0.05"]);
  client = new OpenAI({ baseURL: `http://127.0.0.1:${router.port}/api/v1`, apiKey: "unused" });
});

after(async () => {
  if (router) await stopRouter(router);
  if (root) rmSync(root, { recursive: true, force: true });
});

test("chat.completions.create, non-streaming", async () => {
  const r = await client.chat.completions.create({
    model: "user.chat",
    messages: [{ role: "user", content: "Say something" }],
    max_tokens: 5,
  });
  assert.equal(r.object, "chat.completion");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.usage.completion_tokens, 5);
});

test("chat.completions.create, streaming", async () => {
  const stream = await client.chat.completions.create({
    model: "user.chat",
    messages: [{ role: "user", content: "Count" }],
    max_completion_tokens: 6,
    stream: true,
  });
  let text = "";
  let chunks = 0;
  let finish = null;
  for await (const chunk of stream) {
    chunks += 1;
    text += chunk.choices[0]?.delta?.content ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.ok(chunks >= 6, `got ${chunks} chunks`);
  assert.ok(text.length > 0);
  assert.equal(finish, "length");
});

test("heartbeats while the backend reads a long prompt are ignored by the SDK", async () => {
  const request = { model: "user.slow", messages: [{ role: "user", content: "Read this" }] };
  const r = await fetch(`http://127.0.0.1:${router.port}/api/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...request, stream: true }),
  });
  const raw = await r.text();
  assert.match(raw, /^: ping$/m, "the router sent no heartbeat");
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let text = "";
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  assert.equal(text, "The quick brown fox jumps");
  assert.equal(chunks, 6, "5 tokens and the final chunk, nothing for the heartbeats");
});

test("completions.create", async () => {
  const r = await client.completions.create({ model: "user.chat", prompt: "Once", max_tokens: 4 });
  assert.equal(r.object, "text_completion");
  assert.ok(r.choices[0].text.length > 0);
  assert.equal(r.usage.completion_tokens, 4);
});

test("embeddings.create, float and base64", async () => {
  const asFloat = await client.embeddings.create({
    model: "user.embed",
    input: ["hello", "world"],
    encoding_format: "float",
  });
  assert.equal(asFloat.data.length, 2);
  assert.ok(Array.isArray(asFloat.data[0].embedding));
  assert.ok(asFloat.data[0].embedding.length > 0);
  // Without encoding_format the SDK asks for base64 and decodes it itself.
  const decoded = await client.embeddings.create({ model: "user.embed", input: ["hello", "world"] });
  assert.equal(decoded.data[0].embedding.length, asFloat.data[0].embedding.length);
  decoded.data[0].embedding.forEach((v, i) =>
    assert.ok(Math.abs(v - asFloat.data[0].embedding[i]) < 1e-6),
  );
  const raw = await client.embeddings.create({
    model: "user.embed",
    input: "hello",
    encoding_format: "base64",
  });
  assert.equal(typeof raw.data[0].embedding, "string");
  assert.equal(Buffer.from(raw.data[0].embedding, "base64").length, 4 * asFloat.data[0].embedding.length);
});

test("models.list and models.retrieve", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  // Registered models are listed by their Lemonade 11 id, "chat" for
  // user.chat; either name retrieves the model, under the name asked for.
  for (const id of ["chat", "embed", "whisper", "sd"]) {
    assert.ok(ids.includes(id), `${id} in ${ids}`);
  }
  assert.ok(!ids.includes("user.chat"), "each model listed once");
  for (const name of ["user.chat", "chat"]) {
    const one = await client.models.retrieve(name);
    assert.equal(one.id, name);
    assert.equal(one.object, "model");
  }
  await assert.rejects(client.models.retrieve("no-such-model"), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError);
    assert.equal(e.status, 404);
    assert.equal(e.error?.code ?? e.code, "model_not_found");
    return true;
  });
});

test("responses.create", async () => {
  const r = await client.responses.create({ model: "user.chat", input: "Hello there" });
  assert.equal(r.object, "response");
  assert.equal(r.status, "completed");
  assert.ok(r.output_text.length > 0);
});

test("audio.transcriptions.create with a WAV made here", async () => {
  const wav = makeWav();
  const r = await client.audio.transcriptions.create({
    model: "user.whisper",
    file: await toFile(wav, "silence.wav", { type: "audio/wav" }),
  });
  assert.match(r.text, new RegExp(`${wav.length} bytes`));
});

test("images.generate", async () => {
  const r = await client.images.generate({
    model: "user.sd",
    prompt: "a lemon",
    size: "256x256",
    n: 2,
    response_format: "b64_json",
  });
  assert.equal(r.data.length, 2);
  const png = Buffer.from(r.data[0].b64_json, "base64");
  assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
});

test("BadRequestError and NotFoundError carry the right status", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "user.chat", messages: [] }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "messages",
  );
  await assert.rejects(
    client.chat.completions.create({ model: "user.embed", messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400,
  );
  await assert.rejects(
    client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404,
  );
});

test("AuthenticationError without the right API key", async () => {
  const keyed = await startRouter(root, ["--api-key", "s3cret"]);
  try {
    const base = `http://127.0.0.1:${keyed.port}/api/v1`;
    const wrong = new OpenAI({ baseURL: base, apiKey: "wrong", maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
    const right = new OpenAI({ baseURL: base, apiKey: "s3cret" });
    const page = await right.models.list();
    assert.ok(page.data.length > 0);
  } finally {
    await stopRouter(keyed);
  }
});
