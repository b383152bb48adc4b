// End-to-end: the official `@anthropic-ai/sdk` npm package against the real
// lemonade-router binary's Messages API (issue #14 §3), with the fake
// llama-server. Run by ctest (tests/CMakeLists.txt) as `node --test`, with
// LEMON_ROUTER_BIN and LEMON_FAKES_DIR in the environment.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import {
  HEARTBEAT,
  SLOW_PROMPT,
  makeRoot,
  rawStream,
  removeRoot,
  startRouter,
  stopRouter,
} from "./router.mjs";

let root;
let router;
let client;

const weatherTool = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

before(async () => {
  root = makeRoot("lemon-sdk-anthropic-", {
    chat: { recipe: "llamacpp", labels: [] },
    embed: { recipe: "llamacpp", labels: ["embeddings"] },
    slow: { recipe: "llamacpp", labels: [], knobs: SLOW_PROMPT },
  });
  router = await startRouter(root, HEARTBEAT);
  client = new Anthropic({ baseURL: `http://127.0.0.1:${router.port}`, apiKey: "unused", maxRetries: 0 });
});

after(async () => {
  await stopRouter(router);
  removeRoot(root);
});

test("messages.create, non-streaming", async () => {
  const m = await client.messages.create({
    model: "user.chat",
    max_tokens: 4,
    system: "Be brief.",
    messages: [{ role: "user", content: "Say something" }],
  });
  assert.equal(m.type, "message");
  assert.equal(m.role, "assistant");
  assert.match(m.id, /^msg_/);
  assert.deepEqual(m.content, [{ type: "text", text: "The quick brown fox" }]);
  assert.equal(m.stop_reason, "max_tokens");
  assert.equal(m.usage.output_tokens, 4);
  assert.ok(m.usage.input_tokens > 0);
});

test("messages.create with stream: true yields Anthropic's events", async () => {
  const stream = await client.messages.create({
    model: "user.chat",
    max_tokens: 5,
    messages: [{ role: "user", content: "Count" }],
    stream: true,
  });
  const types = [];
  let text = "";
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "content_block_delta" && event.delta.type === "text_delta") {
      text += event.delta.text;
    }
  }
  assert.equal(types[0], "message_start");
  assert.equal(types.at(-1), "message_stop");
  assert.ok(types.includes("content_block_start"));
  assert.ok(types.includes("content_block_stop"));
  assert.ok(types.includes("message_delta"));
  assert.equal(types.filter((t) => t === "content_block_delta").length, 5);
  assert.equal(text, "The quick brown fox jumps");
});

test("messages.stream collects the final message", async () => {
  const stream = client.messages.stream({
    model: "user.chat",
    max_tokens: 8,
    stop_sequences: ["fox"],
    messages: [{ role: "user", content: "Tell me" }],
  });
  let streamed = "";
  stream.on("text", (delta) => {
    streamed += delta;
  });
  const m = await stream.finalMessage();
  assert.equal(streamed, "The quick brown ");
  assert.deepEqual(m.content, [{ type: "text", text: "The quick brown " }]);
  assert.equal(m.stop_reason, "stop_sequence");
  assert.equal(m.stop_sequence, "fox");
});

test("ping events while the backend reads a long prompt are ignored by the SDK", async () => {
  const request = { model: "user.slow", max_tokens: 5, messages: [{ role: "user", content: "Read this" }] };
  const raw = await rawStream(router.port, "/v1/messages", { ...request, stream: true });
  assert.match(raw, /event: ping\ndata: \{"type":\s?"ping"\}/, "the router sent no ping event");
  assert.doesNotMatch(raw, /^:/m, "Anthropic's stream carries ping events, not comments");
  const message = await client.messages.stream(request).finalMessage();
  assert.deepEqual(message.content, [{ type: "text", text: "The quick brown fox jumps" }]);
  assert.equal(message.stop_reason, "end_turn", "the fake's five tokens end the answer");
});

test("tool use, non-streaming and streamed", async () => {
  const request = {
    model: "user.chat",
    max_tokens: 64,
    tools: [weatherTool],
    tool_choice: { type: "tool", name: "get_weather" },
    messages: [{ role: "user", content: "Weather in Paris?" }],
  };
  const m = await client.messages.create(request);
  assert.equal(m.stop_reason, "tool_use");
  const use = m.content.find((b) => b.type === "tool_use");
  assert.ok(use, JSON.stringify(m.content));
  assert.equal(use.name, "get_weather");
  assert.deepEqual(use.input, { city: "fake-city" });

  const stream = client.messages.stream(request);
  let partial = "";
  stream.on("inputJson", (delta) => {
    partial += delta;
  });
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, "tool_use");
  assert.deepEqual(JSON.parse(partial), { city: "fake-city" });
  assert.deepEqual(final.content.find((b) => b.type === "tool_use").input, { city: "fake-city" });

  // The tool's result goes back in the next turn.
  const next = await client.messages.create({
    ...request,
    tool_choice: { type: "auto" },
    messages: [
      ...request.messages,
      { role: "assistant", content: m.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "18 C" }] },
    ],
  });
  assert.equal(next.content[0].type, "text");
  assert.equal(next.stop_reason, "max_tokens");
});

test("messages.countTokens", async () => {
  const r = await client.messages.countTokens({
    model: "user.chat",
    messages: [{ role: "user", content: "hello big world" }],
  });
  assert.equal(r.input_tokens, 5);
});

test("errors are the SDK's typed errors", async () => {
  await assert.rejects(
    client.messages.create({ model: "no-such-model", max_tokens: 4, messages: [{ role: "user", content: "x" }] }),
    (e) => {
      assert.ok(e instanceof Anthropic.NotFoundError, String(e));
      assert.equal(e.status, 404);
      assert.equal(e.error?.type, "error");
      assert.equal(e.error?.error?.type, "not_found_error");
      return true;
    },
  );
  await assert.rejects(
    client.messages.create({ model: "user.chat", messages: [{ role: "user", content: "x" }] }),
    (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, String(e));
      assert.equal(e.error?.error?.type, "invalid_request_error");
      assert.match(e.error?.error?.message, /max_tokens/);
      return true;
    },
  );
  await assert.rejects(
    client.messages.create({ model: "user.embed", max_tokens: 4, messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof Anthropic.BadRequestError && e.status === 400,
  );
});

test("x-api-key with --api-key", async () => {
  const keyed = await startRouter(root, ["--api-key", "s3cret"]);
  try {
    const baseURL = `http://127.0.0.1:${keyed.port}`;
    const wrong = new Anthropic({ baseURL, apiKey: "wrong", maxRetries: 0 });
    await assert.rejects(
      wrong.messages.create({ model: "user.chat", max_tokens: 2, messages: [{ role: "user", content: "x" }] }),
      (e) => {
        assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
        assert.equal(e.status, 401);
        assert.equal(e.error?.error?.type, "authentication_error");
        return true;
      },
    );
    const right = new Anthropic({ baseURL, apiKey: "s3cret", maxRetries: 0 });
    const m = await right.messages.create({
      model: "user.chat",
      max_tokens: 2,
      messages: [{ role: "user", content: "x" }],
    });
    assert.equal(m.content[0].text, "The quick");
  } finally {
    await stopRouter(keyed);
  }
});
