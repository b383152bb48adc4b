// End-to-end: npm's `ws` and the official `openai` package's realtime client
// (OpenAIRealtimeWS) against the real lemonade-router binary and the fake
// whisper-server: the log stream with the subprotocols Lemonade's app sends,
// realtime transcription on the port /health reports as websocket_port, and
// the OpenAI SDK's client, which always connects with wss://, through a TLS
// proxy the test runs (the router itself speaks plain HTTP).
// Run by ctest (tests/CMakeLists.txt) as `node --test`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import tls from "node:tls";
import { join } from "node:path";
import OpenAI from "openai";
import { OpenAIRealtimeWS } from "openai/beta/realtime/ws";
import WebSocket from "ws";
import { makeRoot, removeRoot, startRouter, stopRouter } from "./router.mjs";

const FAKES = process.env.LEMON_FAKES_DIR;
const KEY = "sk-realtime-test";
const RATE = 16000;

let root;
let router;
let proxy;

// `ms` of a 440 Hz tone (silence at 0) as base64 PCM16, 16 kHz mono.
function pcm(ms, amplitude) {
  const samples = new Int16Array((RATE * ms) / 1000);
  for (let i = 0; i < samples.length; i++) {
    samples[i] = Math.round(amplitude * 32767 * Math.sin((2 * Math.PI * 440 * i) / RATE));
  }
  return Buffer.from(samples.buffer).toString("base64");
}

// The next message of type `type` on a `ws` socket (errors fail the test).
function nextOf(socket, type) {
  return new Promise((resolve, reject) => {
    const onMessage = (data) => {
      const event = JSON.parse(data.toString());
      if (event.type === "error" && type !== "error") {
        cleanup();
        reject(new Error(JSON.stringify(event)));
      } else if (event.type === type) {
        cleanup();
        resolve(event);
      }
    };
    const onClose = (code) => {
      cleanup();
      reject(new Error(`closed with ${code} before ${type}`));
    };
    const cleanup = () => {
      socket.off("message", onMessage);
      socket.off("close", onClose);
    };
    socket.on("message", onMessage);
    socket.on("close", onClose);
  });
}

function opened(socket) {
  return new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
}

// A TLS server on a free port that forwards every connection to `port`.
async function tlsProxy(port, dir) {
  const key = join(dir, "proxy.key");
  const cert = join(dir, "proxy.crt");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
    "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
  const server = tls.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (client) => {
    const upstream = net.connect(port, "127.0.0.1");
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

before(async () => {
  root = makeRoot("lemon-sdk-realtime-", { w: { recipe: "whispercpp", labels: ["audio"] } });
  router = await startRouter(root, [], {
    LEMONADE_API_KEY: KEY,
    LEMONADE_WHISPERCPP_CPU_BIN: join(FAKES, "whisper-server"),
    LEMONADE_WHISPERCPP_NPU_BIN: join(FAKES, "whisper-server"),
  });
  proxy = await tlsProxy(router.port, root);
});

after(async () => {
  proxy?.close();
  await stopRouter(router);
  removeRoot(root);
});

test("ws: the log stream with the subprotocols Lemonade's app sends", async () => {
  const bearer = Buffer.from(KEY).toString("base64url");
  const socket = new WebSocket(`ws://127.0.0.1:${router.port}/logs/stream`, [
    "lemonade-realtime",
    `bearer.${bearer}`,
  ]);
  await opened(socket);
  assert.equal(socket.protocol, "lemonade-realtime", "the app's protocol, never the key");
  socket.send(JSON.stringify({ type: "logs.subscribe", after_seq: null }));
  const snapshot = await nextOf(socket, "logs.snapshot");
  assert.ok(snapshot.entries.length > 0);
  for (const field of ["seq", "timestamp", "severity", "tag", "line"]) {
    assert.ok(field in snapshot.entries[0], field);
  }
  const closed = new Promise((resolve) => socket.once("close", resolve));
  socket.close(1000, "OK");
  assert.equal(await closed, 1000);
});

test("ws: realtime with voice detection on the websocket_port", async () => {
  const health = await (
    await fetch(`http://127.0.0.1:${router.port}/api/v1/health`, {
      headers: { Authorization: `Bearer ${KEY}` },
    })
  ).json();
  assert.notEqual(health.websocket_port, router.port);
  const socket = new WebSocket(`ws://127.0.0.1:${health.websocket_port}/realtime?model=user.w`, {
    headers: { Authorization: `Bearer ${KEY}` },
  });
  // Listening before the socket opens: session.created may come with the 101.
  const created = nextOf(socket, "session.created");
  await opened(socket);
  await created;
  const started = nextOf(socket, "input_audio_buffer.speech_started");
  const completed = nextOf(socket, "conversation.item.input_audio_transcription.completed");
  for (const [ms, amplitude] of [
    [500, 0],
    [1200, 0.3],
    [1500, 0],
  ]) {
    for (let done = 0; done < ms; done += 100) {
      socket.send(JSON.stringify({ type: "input_audio_buffer.append", audio: pcm(100, amplitude) }));
    }
  }
  assert.equal((await started).audio_start_ms, 500);
  const done = await completed;
  assert.match(done.transcript, /^fake transcript of \d+ bytes from realtime_audio\.wav$/);
  socket.close(1000, "OK");
});

test("the OpenAI SDK's realtime client transcribes a committed buffer", async () => {
  const client = new OpenAI({ apiKey: KEY, baseURL: `https://127.0.0.1:${proxy.address().port}/v1` });
  // The proxy's certificate is its own; the Host it passes on must name the
  // router, which listens on loopback and refuses other names (DNS rebinding).
  const options = { rejectUnauthorized: false, headers: { Host: `127.0.0.1:${router.port}` } };
  const rt = new OpenAIRealtimeWS({ model: "user.w", options }, client);
  const errors = [];
  rt.on("error", (error) => errors.push(error.message));
  const created = new Promise((resolve) => rt.on("session.created", resolve));
  const updated = new Promise((resolve) => rt.on("session.updated", resolve));
  const committed = new Promise((resolve) => rt.on("input_audio_buffer.committed", resolve));
  const completed = new Promise((resolve) =>
    rt.on("conversation.item.input_audio_transcription.completed", resolve),
  );
  await new Promise((resolve) => rt.socket.once("open", resolve));
  assert.equal((await created).session.model, "user.w");
  rt.send({ type: "session.update", session: { turn_detection: null } });
  assert.equal((await updated).session.turn_detection, null);
  rt.send({ type: "input_audio_buffer.append", audio: pcm(700, 0.2) });
  rt.send({ type: "input_audio_buffer.commit" });
  const item = (await committed).item_id;
  const done = await completed;
  assert.equal(done.item_id, item);
  assert.equal(done.transcript, `fake transcript of ${44 + 2 * 11200} bytes from realtime_audio.wav`);
  assert.deepEqual(errors, []);
  const closed = new Promise((resolve) => rt.socket.once("close", resolve));
  rt.close({ code: 1000, reason: "OK" });
  assert.equal(await closed, 1000);
});
