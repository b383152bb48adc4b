// End-to-end: LangChain's ChatOpenAI (@langchain/openai) streaming from the
// real lemonade-router binary while the fake backend reads a long prompt
// (issue #26): the router's ": ping" heartbeats keep the stream alive and
// LangChain's stream parser ignores them. Run by ctest as `node --test`, with
// LEMON_ROUTER_BIN and LEMON_FAKES_DIR in the environment.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ChatOpenAI } from "@langchain/openai";
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

before(async () => {
  root = makeRoot("lemon-sdk-langchain-", { slow: { recipe: "llamacpp", labels: [], knobs: SLOW_PROMPT } });
  router = await startRouter(root, HEARTBEAT);
});

after(async () => {
  await stopRouter(router);
  removeRoot(root);
});

test("ChatOpenAI.stream reads through the heartbeats", async () => {
  const raw = await rawStream(router.port, "/api/v1/chat/completions", {
    model: "user.slow",
    stream: true,
    messages: [{ role: "user", content: "Read this" }],
  });
  assert.match(raw, /^: ping$/m, "the router sent no heartbeat");

  const chat = new ChatOpenAI({
    model: "user.slow",
    apiKey: "unused",
    maxRetries: 0,
    configuration: { baseURL: `http://127.0.0.1:${router.port}/api/v1` },
  });
  let text = "";
  for await (const chunk of await chat.stream("Read this")) {
    text += typeof chunk.content === "string" ? chunk.content : "";
  }
  assert.equal(text, "The quick brown fox jumps");
});
