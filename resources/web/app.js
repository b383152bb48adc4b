// The dashboard (docs/dashboard.md). It reads GET /api/v1/health for the
// model table, follows GET /api/v1/events and GET /api/v1/logs/stream for
// everything that changes, and drives load, unload, pull and chat.

import {
  errorFrom,
  followLogSocket,
  followStream,
  getJson,
  postJson,
  readEventStream,
  setKeyAsker,
} from "./api.js";
import { ChatBox } from "./chat.js";
import { bytes, clockTime, duration, el, idle, number, setText } from "./format.js";
import { LogView, MAX_LOG_LINES } from "./logview.js";
import { RoutingPanel } from "./routing.js";
import { createRing, HistoryChart } from "./widgets.js";

const EVENT_BACKLOG = 200;
const HEALTH_MIN_INTERVAL_MS = 1000;
const HEALTH_SLOW_TIMER_MS = 5000;
const MAX_LIST_ROWS = 100;
const LIST_UPDATE_INTERVAL_MS = 250;
// Events that change what GET /health reports.
const TABLE_EVENTS = new Set([
  "load_succeeded",
  "load_failed",
  "eviction_planned",
  "drain_waiting",
  "server_stopped",
  "server_crashed",
  "waiting_for_slot",
  "request",
]);
// Events too frequent for the event list; they have panels of their own.
const UNLISTED_EVENTS = new Set(["request", "context", "download_progress", "backend_state"]);

const $ = (id) => document.getElementById(id);

const state = {
  loaded: new Map(), // model name -> its entry in GET /health's all_models_loaded
  maxModels: {}, // type -> limit (-1: none)
  loading: new Map(), // model name -> {phase: "queued" | "loading", since, joined, progress?}
  downloads: new Map(), // model name -> the latest download_progress event
  context: new Map(), // model name -> the latest context event
  catalogue: [], // GET /api/v1/models?show_all=true's data
};

// ---------------------------------------------------------------------------
// The API key form

function askForKey(refused) {
  const dialog = $("key-dialog");
  const input = $("key-input");
  $("key-message").textContent = refused
    ? "The router refused that key. Enter the right one."
    : "This router needs an API key. It is kept in this tab's session storage.";
  input.value = "";
  return new Promise((resolve) => {
    $("key-form").addEventListener(
      "submit",
      () => resolve(input.value.trim()), // method="dialog" closes the dialog
      { once: true },
    );
    dialog.showModal();
    input.focus();
  });
}

// Without a key nothing works, so Escape does not close the form.
$("key-dialog").addEventListener("cancel", (event) => event.preventDefault());
setKeyAsker(askForKey);

// ---------------------------------------------------------------------------
// GET /health, at most about once a second

let healthTimer = null;
let healthInFlight = false;
let healthAgain = false;
let lastHealthAt = 0;

function refreshHealthSoon() {
  if (healthTimer !== null) {
    return;
  }
  const wait = Math.max(0, lastHealthAt + HEALTH_MIN_INTERVAL_MS - Date.now());
  healthTimer = setTimeout(() => {
    healthTimer = null;
    refreshHealth();
  }, wait);
}

async function refreshHealth() {
  if (healthInFlight) {
    healthAgain = true;
    return;
  }
  healthInFlight = true;
  lastHealthAt = Date.now();
  let health = null;
  try {
    health = await getJson("/api/v1/health");
  } catch {
    // the router is restarting or gone; the stream badges show that
  }
  healthInFlight = false;
  if (health) {
    applyHealth(health);
  }
  if (healthAgain) {
    healthAgain = false;
    refreshHealthSoon();
  }
}

function applyHealth(health) {
  state.loaded = new Map((health.all_models_loaded || []).map((m) => [m.model_name, m]));
  state.maxModels = health.max_models || {};
  for (const name of state.context.keys()) {
    if (!state.loaded.has(name)) {
      state.context.delete(name);
    }
  }
  setText($("version"), `router ${health.router_version} · Lemonade API ${health.version}`);
  renderModels();
  renderRemote(health.remote_models || []);
  renderLimits();
  chat.setModels(loadedNames().filter((name) => state.loaded.get(name).type === "llm"));
  updateLogModelChoices();
}

function remoteBadge(text) {
  const badge = el("span", "badge", text);
  badge.dataset.state = text === "ready" ? "ready" : "draining";
  return badge;
}

// Remote models (docs/remote.md): each with its endpoints' health.
function renderRemote(models) {
  $("remote-models").hidden = models.length === 0;
  $("remote-list").replaceChildren(
    ...models.map((m) => {
      const item = el("li");
      item.dataset.model = m.model_name;
      item.append(
        el("span", "model-name", m.model_name),
        remoteBadge(m.state),
        el("span", "remote-policy", `${m.policy} · ${m.in_flight} in flight`),
      );
      const endpoints = el("ul", "remote-endpoints");
      for (const e of m.endpoints) {
        const line = el("li", `endpoint-${e.state}`, `${e.base_url}: ${e.state}`);
        if (e.last_error) {
          line.title = e.last_error;
        }
        endpoints.append(line);
      }
      item.append(endpoints);
      return item;
    }),
  );
}

function loadedNames() {
  return [...state.loaded.keys()].sort();
}

// ---------------------------------------------------------------------------
// Loaded models: one table row per model, updated in place

let tableRenderRequested = false;

// Load and download events come in bursts; the table and queue are drawn
// once per frame.
function scheduleTableRender() {
  if (!tableRenderRequested) {
    tableRenderRequested = true;
    requestAnimationFrame(() => {
      tableRenderRequested = false;
      renderModels();
      renderQueue();
    });
  }
}

const modelRows = new Map(); // model name -> {row, cells, ring, slots, unload}

function renderLimits() {
  const box = $("type-limits");
  const counts = {};
  for (const m of state.loaded.values()) {
    counts[m.type] = (counts[m.type] || 0) + 1;
  }
  const chips = Object.entries(state.maxModels).map(([type, max]) => {
    const used = counts[type] || 0;
    const chip = el("span", "limit", `${type} ${used} / ${max < 0 ? "∞" : max}`);
    chip.classList.toggle("full", max >= 0 && used >= max);
    chip.title = max < 0 ? `${type}: no limit` : `${type}: ${used} of ${max} loaded`;
    return chip;
  });
  box.replaceChildren(...chips);
}

function tableNames() {
  const names = new Set(state.loaded.keys());
  for (const [name, load] of state.loading) {
    if (load.phase === "loading") {
      names.add(name);
    }
  }
  return [...names].sort();
}

function renderModels() {
  const names = tableNames();
  const keep = new Set(names);
  for (const [name, entry] of modelRows) {
    if (!keep.has(name)) {
      entry.row.remove();
      modelRows.delete(name);
    }
  }
  const body = $("models-body");
  names.forEach((name, index) => {
    let entry = modelRows.get(name);
    if (!entry) {
      entry = createModelRow(name);
      modelRows.set(name, entry);
    }
    updateModelRow(entry, name);
    if (body.children[index] !== entry.row) {
      body.insertBefore(entry.row, body.children[index] || null);
    }
  });
  $("models-empty").hidden = names.length > 0;
}

function createModelRow(name) {
  const row = el("tr");
  row.dataset.model = name;
  const cells = {};
  for (const key of ["name", "type", "state", "device", "pid", "inFlight", "slots", "idle", "context", "actions"]) {
    cells[key] = el("td");
    row.append(cells[key]);
  }
  cells.name.className = "model-name";
  cells.name.textContent = name;
  for (const key of ["inFlight", "slots", "idle"]) {
    cells[key].className = "num";
  }
  const badge = el("span", "badge");
  cells.state.append(badge);
  const ring = createRing(34, true);
  const slots = el("span", "slot-rings");
  const saved = el("span", "saved-context");
  cells.context.className = "context";
  cells.context.append(ring.element, slots, saved);
  const unload = el("button", "small", "Unload");
  unload.type = "button";
  unload.dataset.action = "unload";
  unload.addEventListener("click", () => unloadModel(name, unload));
  cells.actions.append(unload);
  return { row, cells, badge, ring, slots, saved, slotRings: [], unload };
}

function modelState(name) {
  const load = state.loading.get(name);
  if (load && load.phase === "loading") {
    return "loading";
  }
  return state.loaded.get(name)?.state || "ready";
}

function updateModelRow(entry, name) {
  const model = state.loaded.get(name);
  const { cells } = entry;
  const status = modelState(name);
  setText(entry.badge, status);
  entry.badge.dataset.state = status;
  entry.row.dataset.state = status;
  setText(cells.type, model?.type || "–");
  setText(cells.device, model?.device || "–");
  setText(cells.pid, model?.pid ?? "–");
  setText(cells.inFlight, model ? model.in_flight : "–");
  const slots = model?.slots;
  // Waiting: in the router's line, or the one queued inside llama-server.
  const waiting = slots ? (slots.waiting || 0) + (slots.queued_in_backend || 0) : 0;
  setText(cells.slots, slots ? `${slots.busy}/${slots.total}${waiting ? ` +${waiting} waiting` : ""}` : "–");
  entry.unload.hidden = !model;
  updateIdle(entry, name);
  updateContext(entry, name);
}

function updateIdle(entry, name) {
  const model = state.loaded.get(name);
  if (!model) {
    setText(entry.cells.idle, "–");
  } else if (model.in_flight > 0) {
    setText(entry.cells.idle, "busy");
  } else {
    setText(entry.cells.idle, idle(Date.now() / 1000 - model.last_use));
  }
}

function updateContext(entry, name) {
  const model = state.loaded.get(name);
  const context = state.context.get(name);
  // Slots saved to disk at a planned stop, restored when it loads again.
  const savedBytes = model?.saved_slots_bytes || 0;
  entry.saved.hidden = savedBytes === 0;
  setText(entry.saved, savedBytes ? `saved ${bytes(savedBytes)}` : "");
  entry.saved.title = savedBytes ? `${name}: ${bytes(savedBytes)} of saved slots on disk` : "";
  const hasSlots = Boolean(model?.slots) || Boolean(context);
  entry.ring.element.hidden = !hasSlots;
  entry.slots.hidden = !hasSlots;
  if (!hasSlots) {
    return;
  }
  if (!context) {
    entry.ring.set(0, "no context figures yet");
    return;
  }
  entry.ring.set(context.fraction, `${name}: ${context.used} of ${context.total} tokens of context in use`);
  const slotList = context.slots || [];
  while (entry.slotRings.length < slotList.length) {
    const ring = createRing(18, false);
    entry.slotRings.push(ring);
    entry.slots.append(ring.element);
  }
  while (entry.slotRings.length > slotList.length) {
    entry.slotRings.pop().element.remove();
  }
  slotList.forEach((slot, i) => {
    const fraction = slot.n_ctx > 0 ? slot.used / slot.n_ctx : 0;
    const text = `slot ${slot.id}: ${slot.used} of ${slot.n_ctx} tokens${slot.processing ? ", processing" : ""}`;
    entry.slotRings[i].set(fraction, text, slot.processing);
  });
}

async function unloadModel(name, button) {
  button.disabled = true;
  showManageStatus(`unloading ${name}…`);
  try {
    const response = await postJson("/api/v1/unload", { model_name: name });
    if (!response.ok) {
      throw await errorFrom(response);
    }
    showManageStatus(`${name} unloaded`);
  } catch (error) {
    showManageStatus(`unload of ${name} failed: ${error.message}`, true);
  } finally {
    button.disabled = false;
    refreshHealthSoon();
  }
}

// ---------------------------------------------------------------------------
// The model picker, load and pull

function showManageStatus(text, failed = false) {
  const status = $("manage-status");
  status.textContent = text;
  status.classList.toggle("failed", failed);
}

async function refreshCatalogue() {
  let answer;
  try {
    answer = await getJson("/api/v1/models?show_all=true");
  } catch (error) {
    showManageStatus(`could not read the models: ${error.message}`, true);
    return;
  }
  state.catalogue = answer.data || [];
  renderPicker();
}

function renderPicker() {
  const picker = $("model-picker");
  const chosen = picker.value;
  const byName = (a, b) => a.id.localeCompare(b.id);
  const group = (label, models) => {
    const node = el("optgroup");
    node.label = label;
    node.append(...models.sort(byName).map((m) => new Option(`${m.id} (${m.recipe})`, m.id)));
    return node;
  };
  const downloaded = state.catalogue.filter((m) => m.downloaded);
  const missing = state.catalogue.filter((m) => !m.downloaded);
  picker.replaceChildren(group("Downloaded", downloaded), group("Not downloaded", missing));
  if (state.catalogue.some((m) => m.id === chosen)) {
    picker.value = chosen;
  }
}

async function loadChosenModel() {
  const name = $("model-picker").value;
  if (!name) {
    return;
  }
  showManageStatus(`loading ${name}…`);
  try {
    const response = await postJson("/api/v1/load", { model_name: name });
    if (!response.ok) {
      throw await errorFrom(response);
    }
    showManageStatus(`${name} loaded`);
  } catch (error) {
    showManageStatus(`load of ${name} failed: ${error.message}`, true);
  }
  refreshHealthSoon();
}

function showPullProgress(progress, done = false) {
  $("pull-progress").value = progress.percent || 0;
  const parts = [];
  if (progress.file) {
    parts.push(progress.file);
  }
  if (progress.total_files > 1) {
    parts.push(`file ${progress.file_index} of ${progress.total_files}`);
  }
  if (progress.bytes_total) {
    parts.push(`${bytes(progress.bytes_downloaded)} of ${bytes(progress.bytes_total)}`);
  }
  parts.push(done ? "done" : `${progress.percent ?? 0}%`);
  setText($("pull-label"), parts.join(" · "));
}

async function pullChosenModel() {
  const name = $("model-picker").value;
  if (!name) {
    return;
  }
  const button = $("pull-button");
  button.disabled = true;
  $("pull-box").hidden = false;
  showPullProgress({ percent: 0 });
  showManageStatus(`pulling ${name}…`);
  try {
    const response = await postJson("/api/v1/pull", { model_name: name, stream: true });
    if (!response.ok) {
      throw await errorFrom(response);
    }
    let failure = null;
    let complete = false;
    await readEventStream(response, {
      onEvent(event) {
        const data = JSON.parse(event.data);
        if (event.event === "progress") {
          showPullProgress(data);
        } else if (event.event === "complete") {
          complete = true;
          showPullProgress({ percent: 100 }, true);
        } else if (event.event === "error") {
          failure = data.error || "the download failed";
        }
      },
    });
    if (failure || !complete) {
      throw new Error(failure || "the download stream ended early");
    }
    showManageStatus(`${name} is downloaded`);
  } catch (error) {
    showManageStatus(`pull of ${name} failed: ${error.message}`, true);
  } finally {
    button.disabled = false;
    refreshCatalogue();
  }
}

// ---------------------------------------------------------------------------
// The load queue and downloads seen in events

function renderQueue() {
  const items = [];
  const now = Date.now() / 1000;
  for (const [name, load] of [...state.loading].sort(([a], [b]) => a.localeCompare(b))) {
    const item = el("li", `queue-item ${load.phase}`);
    item.append(el("span", "model-name", name), el("span", "badge", load.phase));
    item.dataset.state = load.phase;
    const joined = load.joined > 0 ? `, ${load.joined} more waiting` : "";
    if (load.progress && typeof load.progress.value === "number") {
      // The stage llama-server loads now, and how far it is.
      const bar = el("progress");
      bar.max = 100;
      bar.value = Math.round(load.progress.value * 100);
      item.append(bar, el("span", "muted", `${load.progress.current} ${bar.value}%`));
    }
    item.append(el("span", "muted", `for ${duration(now - load.since)}${joined}`));
    items.push(item);
  }
  for (const [name, progress] of state.downloads) {
    const item = el("li", "queue-item downloading");
    const bar = el("progress");
    bar.max = 100;
    bar.value = progress.percent || 0;
    item.append(el("span", "model-name", name), el("span", "badge", "downloading"), bar);
    item.append(el("span", "muted", `${progress.file || ""} ${progress.percent ?? 0}%`));
    items.push(item);
  }
  $("queue").replaceChildren(...items);
  $("queue-empty").hidden = items.length > 0;
}

// ---------------------------------------------------------------------------
// Requests, speed and events, taken once per animation frame

const routing = new RoutingPanel($("routing-panel"), $("routing-body"));
const tpsChart = new HistoryChart($("tps-chart"), { format: (v) => `${number(v)} tok/s` });
const ttftChart = new HistoryChart($("ttft-chart"), { format: (v) => `${Math.round(v)} ms` });
let pendingRequests = [];
let pendingEvents = [];
let listUpdateScheduled = false;
let lastListUpdate = 0;

// Lists and charts change at most four times a second, in an animation
// frame: under a flood of requests that is all anyone can read, and it keeps
// the page's layout work small.
function scheduleListUpdate() {
  if (listUpdateScheduled) {
    return;
  }
  listUpdateScheduled = true;
  const wait = Math.max(0, lastListUpdate + LIST_UPDATE_INTERVAL_MS - performance.now());
  setTimeout(() => {
    requestAnimationFrame(() => {
      listUpdateScheduled = false;
      lastListUpdate = performance.now();
      flushRequests();
      flushEvents();
    });
  }, wait);
}

// Prepends rows (given oldest first) and keeps at most MAX_LIST_ROWS.
function prependRows(container, rows) {
  const fragment = document.createDocumentFragment();
  for (const row of rows.slice(-MAX_LIST_ROWS).reverse()) {
    fragment.append(row);
  }
  container.prepend(fragment);
  while (container.children.length > MAX_LIST_ROWS) {
    container.lastElementChild.remove();
  }
}

function requestRow(e) {
  const row = el("tr");
  row.classList.toggle("failed", e.status >= 400);
  const tokens = e.prompt_tokens || e.completion_tokens ? `${e.prompt_tokens ?? 0} → ${e.completion_tokens ?? 0}` : "–";
  const cells = [
    clockTime(e.time),
    e.route,
    e.routed_by ? `${e.routed_by} → ${e.model}` : e.model,
    e.status,
    duration(e.duration_s),
    e.ttft_s ? duration(e.ttft_s) : "–",
    tokens,
    e.tokens_per_second ? number(e.tokens_per_second) : "–",
    // Speculative decoding: the share of drafted tokens the model accepted.
    e.draft_tokens > 0 ? `${Math.round((100 * e.draft_accepted_tokens) / e.draft_tokens)} %` : "–",
  ];
  cells.forEach((text, i) => row.append(el("td", i >= 3 ? "num" : "", String(text ?? "–"))));
  return row;
}

// Requests whose backend is still reading the prompt (issue #26): one row
// each, with a progress bar, until the request's end replaces it.
const prefillRows = new Map(); // request_id -> its row

function showPrefill(e) {
  let row = prefillRows.get(e.request_id);
  if (!row) {
    row = el("tr", "prefill");
    row.dataset.requestId = String(e.request_id);
    const bar = el("progress");
    const label = el("span", "prefill-label");
    const status = el("td", "num");
    status.append(bar, label);
    row.append(el("td", "", clockTime(e.time)), el("td", "", e.route), el("td", "", e.model), status);
    for (let i = 0; i < 5; i += 1) {
      row.append(el("td", "num", "–"));
    }
    $("requests-body").prepend(row);
    $("requests-empty").hidden = true;
    prefillRows.set(e.request_id, row);
  }
  const bar = row.querySelector("progress");
  bar.max = Math.max(1, e.prefill_tokens_total);
  bar.value = Math.min(e.prefill_tokens_done, bar.max);
  setText(row.querySelector(".prefill-label"), ` ${e.prefill_tokens_done} / ${e.prefill_tokens_total} prompt tokens`);
}

function endPrefill(id) {
  const row = prefillRows.get(id);
  if (row) {
    row.remove();
    prefillRows.delete(id);
  }
}

function flushRequests() {
  if (pendingRequests.length === 0) {
    return;
  }
  prependRows($("requests-body"), pendingRequests.map(requestRow));
  $("requests-empty").hidden = true;
  for (const e of pendingRequests) {
    if (e.tokens_per_second > 0) {
      tpsChart.push(e.tokens_per_second);
      setText($("tps-now"), `${number(e.tokens_per_second)} tok/s`);
    }
    if (e.ttft_s > 0) {
      ttftChart.push(e.ttft_s * 1000);
      setText($("ttft-now"), duration(e.ttft_s));
    }
  }
  pendingRequests = [];
}

function eventDetail(e) {
  switch (e.type) {
    case "load_succeeded":
      return `in ${duration(e.duration_s)}`;
    case "load_failed":
    case "retrying_after_evict_all":
    case "download_failed":
      return `${e.code}: ${e.message}`;
    case "eviction_planned":
    case "server_stopped":
      return e.reason;
    case "drain_waiting":
      return `${e.in_flight} in flight`;
    case "waiting_for_slot":
      return `${e.waiting} waiting`;
    case "log_level":
      return e.level;
    default:
      return "";
  }
}

function eventItem(e) {
  const item = el("li", "event");
  item.dataset.type = e.type;
  const what = el("span", "what");
  what.append(el("span", "model-name", e.model || ""), el("span", "detail", eventDetail(e)));
  item.title = JSON.stringify(e);
  item.append(el("span", "time", clockTime(e.time)), el("span", "type", e.type.replaceAll("_", " ")), what);
  return item;
}

function flushEvents() {
  if (pendingEvents.length === 0) {
    return;
  }
  prependRows($("events-list"), pendingEvents.map(eventItem));
  $("events-empty").hidden = true;
  pendingEvents = [];
}

// ---------------------------------------------------------------------------
// GET /api/v1/events

function onRouterEvent(e) {
  switch (e.type) {
    case "load_queued":
      if (!state.loading.has(e.model)) {
        state.loading.set(e.model, { phase: "queued", since: e.time, joined: 0 });
      }
      break;
    case "load_joined": {
      const load = state.loading.get(e.model);
      if (load) {
        load.joined += 1;
      }
      break;
    }
    case "load_started": {
      const load = state.loading.get(e.model);
      state.loading.set(e.model, { phase: "loading", since: e.time, joined: load ? load.joined : 0 });
      break;
    }
    case "load_succeeded":
    case "load_failed":
      state.loading.delete(e.model);
      break;
    case "backend_state": {
      // llama-server's own load progress: {stages, current, value}.
      const load = state.loading.get(e.model);
      if (load && e.state === "loading" && e.progress) {
        load.progress = e.progress;
        scheduleTableRender();
      }
      break;
    }
    case "request":
      if (e.phase === "prefill") {
        showPrefill(e);
        break;
      }
      if (e.phase === "routed") {
        routing.refreshSoon();
        break;
      }
      endPrefill(e.request_id);
      pendingRequests.push(e);
      if (pendingRequests.length > MAX_LIST_ROWS) {
        pendingRequests.shift();
      }
      scheduleListUpdate();
      break;
    case "context": {
      state.context.set(e.model, e);
      const entry = modelRows.get(e.model);
      if (entry) {
        updateContext(entry, e.model);
      }
      break;
    }
    case "download_progress":
      state.downloads.set(e.model, e);
      break;
    case "download_complete":
    case "download_failed":
      state.downloads.delete(e.model);
      refreshCatalogue();
      break;
    default:
      break;
  }
  if (e.type.startsWith("load_") || e.type.startsWith("download_")) {
    scheduleTableRender();
  }
  if (TABLE_EVENTS.has(e.type)) {
    refreshHealthSoon();
  }
  if (!UNLISTED_EVENTS.has(e.type)) {
    pendingEvents.push(e);
    if (pendingEvents.length > MAX_LIST_ROWS) {
      pendingEvents.shift();
    }
    scheduleListUpdate();
  }
}

function showStreamState(node, name, streamState) {
  node.dataset.state = streamState;
  setText(node, `${name}: ${streamState}`);
}

// ---------------------------------------------------------------------------
// GET /api/v1/logs/stream

let knownLogModels = 0;
const logView = new LogView({
  scroller: $("log-scroll"),
  spacer: $("log-spacer"),
  rows: $("log-rows"),
  onFollowChange: (following) => {
    $("log-follow").checked = following;
  },
  onCountChange: (shown, kept) => {
    setText($("log-count"), shown === kept ? `${kept} lines` : `${shown} of ${kept} lines`);
    if (logView.models.size !== knownLogModels) {
      updateLogModelChoices();
    }
  },
});

// The log filter offers every model that is loaded or has logged.
function updateLogModelChoices() {
  const select = $("log-model");
  const names = new Set([...logView.models, ...state.loaded.keys()]);
  knownLogModels = logView.models.size;
  const have = new Set([...select.options].slice(2).map((o) => o.value));
  const missing = [...names].filter((name) => !have.has(name));
  if (missing.length === 0) {
    return;
  }
  const chosen = select.value;
  const all = [...new Set([...have, ...missing])].sort();
  select.replaceChildren(
    new Option("everything", ""),
    new Option("the router only", "router"),
    ...all.map((name) => new Option(`${name} only`, name)),
  );
  select.value = chosen;
}

function applyLogFilter() {
  logView.setFilter({ model: $("log-model").value, text: $("log-text").value });
}

// ---------------------------------------------------------------------------
// Start

const chat = new ChatBox({
  form: $("chat-form"),
  modelSelect: $("chat-model"),
  input: $("chat-input"),
  sendButton: $("chat-send"),
  stopButton: $("chat-stop"),
  clearButton: $("chat-clear"),
  log: $("chat-log"),
  status: $("chat-status"),
});

$("load-button").addEventListener("click", loadChosenModel);
$("pull-button").addEventListener("click", pullChosenModel);
$("log-model").addEventListener("change", applyLogFilter);
$("log-text").addEventListener("input", applyLogFilter);
$("log-follow").addEventListener("change", (event) => logView.setFollowing(event.target.checked));

// Idle times and waiting times move on their own.
setInterval(() => {
  for (const [name, entry] of modelRows) {
    updateIdle(entry, name);
  }
  if (state.loading.size > 0) {
    renderQueue();
  }
}, 1000);
setInterval(refreshHealthSoon, HEALTH_SLOW_TIMER_MS);

renderQueue();
refreshHealth();
refreshCatalogue();
followStream({
  firstPath: `/api/v1/events?backlog=${EVENT_BACKLOG}`,
  resumePath: "/api/v1/events",
  onEvent: (event) => onRouterEvent(JSON.parse(event.data)),
  onState: (s) => showStreamState($("events-state"), "events", s),
  onConnect: () => {
    refreshHealthSoon();
    routing.refreshSoon();
  },
});
// The log: over the WebSocket when it can be used, else the SSE stream.
let lastLogSeq = -1;
function addLogLine(raw) {
  if (Number(raw.seq) > lastLogSeq) {
    lastLogSeq = Number(raw.seq);
    logView.add(raw);
  }
}
function followLogEvents() {
  $("logs-state").dataset.transport = "events";
  followStream({
    firstPath: `/api/v1/logs/stream?format=json&tail=${MAX_LOG_LINES}`,
    resumePath: "/api/v1/logs/stream?format=json",
    onEvent: (event) => addLogLine(JSON.parse(event.data)),
    onState: (s) => showStreamState($("logs-state"), "log", s),
  });
}
$("logs-state").dataset.transport = "websocket";
const logSocket = followLogSocket({
  onLine: addLogLine,
  onState: (s) => showStreamState($("logs-state"), "log", s),
  onUnavailable: followLogEvents,
});
if (!logSocket) {
  followLogEvents();
}
