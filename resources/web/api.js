// Talking to the router: the API key, JSON requests, and Server-Sent Event
// streams read with fetch() (EventSource cannot send an Authorization header).

const KEY_STORAGE = "lemonade-router.api-key";
const QUIET_LIMIT_MS = 5000; // the router sends a heartbeat every second
const FIRST_RETRY_MS = 1000;
const LAST_RETRY_MS = 10000;

let apiKey = sessionStorage.getItem(KEY_STORAGE) || "";
let keyAsker = null; // (refused: boolean) => Promise<string>, set by the page
let pendingKey = null; // one open key form, shared by every request that waits

export class ApiError extends Error {
  constructor(status, message, code = "") {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// The page supplies the form that asks for the key.
export function setKeyAsker(asker) {
  keyAsker = asker;
}

function askForKey(refused) {
  if (!pendingKey) {
    pendingKey = keyAsker(refused).then((key) => {
      apiKey = key;
      sessionStorage.setItem(KEY_STORAGE, key);
      pendingKey = null;
    });
  }
  return pendingKey;
}

// fetch() with the API key; a 401 asks for the key (once for all waiting
// requests) and tries again with it.
export async function apiFetch(path, init = {}) {
  for (;;) {
    const sentKey = apiKey;
    const headers = new Headers(init.headers);
    if (sentKey) {
      headers.set("Authorization", `Bearer ${sentKey}`);
    }
    const response = await fetch(path, { ...init, headers });
    if (response.status !== 401 || !keyAsker) {
      return response;
    }
    await response.body?.cancel();
    if (apiKey === sentKey) {
      await askForKey(sentKey !== "");
    }
  }
}

// The router's error envelope as an ApiError.
export async function errorFrom(response) {
  let message = `HTTP ${response.status}`;
  let code = "";
  try {
    const body = await response.json();
    if (body && body.error) {
      message = body.error.message || message;
      code = body.error.code || "";
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message, code);
}

export async function getJson(path) {
  const response = await apiFetch(path);
  if (!response.ok) {
    throw await errorFrom(response);
  }
  return response.json();
}

export function postJson(path, body, signal) {
  return apiFetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

// Reads a text/event-stream body to its end: onEvent({id, event, data}) for
// each event, onActivity() for each chunk received (heartbeats included).
export async function readEventStream(response, { onEvent, onActivity = () => {} }) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  let event = "";
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      return;
    }
    onActivity();
    buffer += value;
    let start = 0;
    let end;
    while ((end = buffer.indexOf("\n", start)) >= 0) {
      let line = buffer.slice(start, end);
      start = end + 1;
      if (line.endsWith("\r")) {
        line = line.slice(0, -1);
      }
      if (line === "") {
        if (data.length > 0) {
          onEvent({ id, event: event || "message", data: data.join("\n") });
        }
        data = [];
        event = "";
        continue;
      }
      if (line.startsWith(":")) {
        continue; // a comment: heartbeat, keepalive
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? "" : line.slice(colon + 1);
      if (text.startsWith(" ")) {
        text = text.slice(1);
      }
      if (field === "data") {
        data.push(text);
      } else if (field === "event") {
        event = text;
      } else if (field === "id") {
        id = text;
      }
    }
    buffer = buffer.slice(start);
  }
}

function wait(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Follows an SSE route for as long as the page lives. The first request goes
// to firstPath; after the stream ends, fails or goes quiet, it reconnects to
// resumePath with Last-Event-ID. onState("live" | "reconnecting") reports the
// connection; onConnect() runs after each (re)connect.
export function followStream({ firstPath, resumePath, onEvent, onState, onConnect = () => {} }) {
  let lastId = null;
  let retryMs = FIRST_RETRY_MS;

  async function connectOnce() {
    const controller = new AbortController();
    const headers = lastId === null ? {} : { "Last-Event-ID": lastId };
    const path = lastId === null ? firstPath : resumePath;
    const response = await apiFetch(path, { headers, signal: controller.signal });
    if (!response.ok) {
      throw await errorFrom(response);
    }
    let watchdog = setTimeout(() => controller.abort(), QUIET_LIMIT_MS);
    const stillAlive = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => controller.abort(), QUIET_LIMIT_MS);
    };
    onState("live");
    retryMs = FIRST_RETRY_MS;
    onConnect();
    try {
      await readEventStream(response, {
        onActivity: stillAlive,
        onEvent(event) {
          if (event.id !== null) {
            lastId = event.id;
          }
          try {
            onEvent(event);
          } catch (error) {
            reportError(error); // a bug in the page, not in the stream
          }
        },
      });
    } finally {
      clearTimeout(watchdog);
    }
  }

  async function run() {
    for (;;) {
      try {
        await connectOnce();
      } catch {
        // ended, aborted or refused: try again below
      }
      onState("reconnecting");
      await wait(retryMs);
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
    }
  }
  run();
}

// The API key as a WebSocket subprotocol ("bearer." + base64url of its
// UTF-8 bytes): browsers cannot set headers on a WebSocket.
function keyProtocols() {
  if (!apiKey) {
    return [];
  }
  const bytes = new TextEncoder().encode(apiKey);
  let binary = "";
  for (const b of bytes) {
    binary += String.fromCharCode(b);
  }
  const url = btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  return ["lemonade-realtime", `bearer.${url}`];
}

// Follows the log over the WebSocket at /api/v1/logs/stream (Lemonade's
// logs.subscribe, with the router's own line shape), reconnecting after the
// last line seen. Returns false at once when the browser has no WebSocket;
// calls onUnavailable() if the socket cannot be used (refused, no key, an
// error before its first snapshot), so the caller falls back to the SSE
// stream. onLine(raw) gets each line as GET /logs/stream?format=json has it.
export function followLogSocket({ onLine, onState, onUnavailable }) {
  if (typeof WebSocket !== "function") {
    return false;
  }
  let lastSeq = null;
  let retryMs = FIRST_RETRY_MS;
  let gaveUp = false;

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    let socket;
    try {
      socket = new WebSocket(`${scheme}://${location.host}/api/v1/logs/stream`, keyProtocols());
    } catch {
      gaveUp = true;
      onUnavailable();
      return;
    }
    let subscribed = false;
    socket.onopen = () => {
      socket.send(JSON.stringify({ type: "logs.subscribe", after_seq: lastSeq, format: "router" }));
    };
    socket.onmessage = (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      if (event.type === "error" && !subscribed) {
        gaveUp = true; // not authenticated, or not served: the SSE stream asks for the key
        socket.close(1000, "OK");
        onUnavailable();
        return;
      }
      const lines = event.type === "logs.snapshot" ? event.entries : event.type === "logs.entry" ? [event.entry] : [];
      if (event.type === "logs.snapshot") {
        subscribed = true;
        retryMs = FIRST_RETRY_MS;
        onState("live");
      }
      for (const line of lines) {
        if (lastSeq === null || line.seq > lastSeq) {
          lastSeq = line.seq;
          try {
            onLine(line);
          } catch (error) {
            reportError(error); // a bug in the page, not in the stream
          }
        }
      }
    };
    socket.onclose = () => {
      if (gaveUp) {
        return;
      }
      if (!subscribed) {
        gaveUp = true;
        onUnavailable();
        return;
      }
      onState("reconnecting");
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
    };
  }
  connect();
  return true;
}
