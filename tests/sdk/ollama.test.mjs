// End-to-end: the official `ollama` npm package against the real
// lemonade-router binary's Ollama API (issue #14 §4), with the fake
// llama-server, on the router's port and on --ollama-port's listener. Run by
// ctest (tests/CMakeLists.txt) as `node --test`, with LEMON_ROUTER_BIN and
// LEMON_FAKES_DIR in the environment.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Ollama } from "ollama";
import { makeRoot, removeRoot, startRouter, stopRouter } from "./router.mjs";

let root;
let router;
let ollama;

before(async () => {
  root = makeRoot("lemon-sdk-ollama-", {
    chat: { recipe: "llamacpp", labels: [] },
    embed: { recipe: "llamacpp", labels: ["embeddings"] },
    spare: { recipe: "llamacpp", labels: [] },
  });
  router = await startRouter(root, ["--ollama-port", "0"]);
  ollama = new Ollama({ host: `http://127.0.0.1:${router.port}` });
});

after(async () => {
  await stopRouter(router);
  removeRoot(root);
});

test("chat, non-streaming", async () => {
  const r = await ollama.chat({
    model: "user.chat",
    messages: [{ role: "user", content: "Say something" }],
    options: { num_predict: 4, temperature: 0.2 },
  });
  assert.equal(r.model, "user.chat");
  assert.equal(r.message.role, "assistant");
  assert.equal(r.message.content, "The quick brown fox");
  assert.equal(r.done, true);
  assert.equal(r.done_reason, "length");
  assert.equal(r.eval_count, 4);
  assert.ok(r.prompt_eval_count > 0);
  // The fake reports 10 ms a token (its own timings, in nanoseconds here).
  assert.equal(r.eval_duration, 4 * 10_000_000);
  assert.ok(r.total_duration > 0);
  assert.ok(r.created_at instanceof Date || typeof r.created_at === "string");
});

test("chat, streaming", async () => {
  const stream = await ollama.chat({
    model: "user.chat:latest",
    messages: [{ role: "user", content: "Count" }],
    options: { num_predict: 5 },
    stream: true,
  });
  let text = "";
  let parts = 0;
  let last;
  for await (const part of stream) {
    parts += 1;
    text += part.message.content;
    last = part;
  }
  assert.equal(parts, 6);
  assert.equal(text, "The quick brown fox jumps");
  assert.equal(last.done, true);
  assert.equal(last.eval_count, 5);
});

test("generate, non-streaming and streaming", async () => {
  const r = await ollama.generate({ model: "user.chat", prompt: "Once", system: "Be brief.", options: { num_predict: 3 } });
  assert.equal(r.response, "The quick brown");
  assert.equal(r.done, true);
  const stream = await ollama.generate({ model: "user.chat", prompt: "Once", options: { num_predict: 3 }, stream: true });
  let text = "";
  for await (const part of stream) text += part.response;
  assert.equal(text, "The quick brown");
});

test("list, show, ps and version", async () => {
  const list = await ollama.list();
  const names = list.models.map((m) => m.name);
  for (const name of ["user.chat:latest", "user.embed:latest"]) assert.ok(names.includes(name), `${name} in ${names}`);
  const show = await ollama.show({ model: "user.chat" });
  assert.deepEqual(show.capabilities, ["completion"]);
  assert.equal(show.details.format, "gguf");
  await ollama.chat({ model: "user.chat", messages: [{ role: "user", content: "x" }], options: { num_predict: 1 } });
  const ps = await ollama.ps();
  assert.ok(ps.models.some((m) => m.name === "user.chat:latest"), JSON.stringify(ps));
  const v = await ollama.version();
  assert.match(v.version, /^\d+\.\d+\.\d+$/);
});

test("embed and the older embeddings", async () => {
  const r = await ollama.embed({ model: "user.embed", input: ["hello", "world"] });
  assert.equal(r.embeddings.length, 2);
  assert.equal(r.embeddings[0].length, 8);
  const legacy = await ollama.embeddings({ model: "user.embed", prompt: "hello" });
  assert.deepEqual(legacy.embedding, r.embeddings[0]);
});

test("pull and delete", async () => {
  const pulled = await ollama.pull({ model: "user.spare" });
  assert.equal(pulled.status, "success");
  const progress = await ollama.pull({ model: "user.spare", stream: true });
  let last;
  for await (const p of progress) last = p;
  assert.equal(last.status, "success");
  const deleted = await ollama.delete({ model: "user.spare" });
  assert.equal(deleted.status, "success");
  const names = (await ollama.list()).models.map((m) => m.name);
  assert.ok(!names.includes("user.spare:latest"), names.join(","));
});

test("errors are ResponseErrors with Ollama's message", async () => {
  await assert.rejects(
    ollama.chat({ model: "no-such-model", messages: [{ role: "user", content: "x" }] }),
    (e) => {
      assert.equal(e.name, "ResponseError");
      assert.equal(e.status_code, 404);
      assert.match(e.error, /no-such-model/);
      return true;
    },
  );
  await assert.rejects(
    ollama.chat({ model: "user.chat", messages: [{ role: "user", content: "x" }], options: { num_ctx: 8192 } }),
    (e) => e.name === "ResponseError" && e.status_code === 400 && /num_ctx/.test(e.error),
  );
});

test("--ollama-port serves the same API on a second port", async () => {
  assert.ok(router.ollamaPort && router.ollamaPort !== router.port);
  const res = await fetch(`http://127.0.0.1:${router.ollamaPort}/`);
  assert.equal(await res.text(), "Ollama is running");
  const second = new Ollama({ host: `http://127.0.0.1:${router.ollamaPort}` });
  const r = await second.chat({ model: "user.chat", messages: [{ role: "user", content: "x" }], options: { num_predict: 2 } });
  assert.equal(r.message.content, "The quick");
  const stream = await second.chat({ model: "user.chat", messages: [{ role: "user", content: "x" }], options: { num_predict: 2 }, stream: true });
  let text = "";
  for await (const part of stream) text += part.message.content;
  assert.equal(text, "The quick");
});
