// The live log tail. It keeps the last 10,000 lines, takes new lines once per
// animation frame, and puts only the rows on screen into the DOM (a virtual
// list over a tall spacer), so 10,000 lines cost as little as 50.

import { clockTime } from "./format.js";

export const MAX_LOG_LINES = 10000;
const OVERSCAN_ROWS = 8;
const FALLBACK_ROW_PX = 18;

// A log line from GET /api/v1/logs/stream?format=json, ready to show.
function toLogLine(raw) {
  const level = String(raw.level || "info");
  const model = String(raw.model || "");
  const source = String(raw.source || "");
  const tag = model ? `${source} ${model}` : source;
  const display = `${clockTime(raw.time, true)} ${level.toUpperCase().padEnd(7)} [${tag}] ${raw.text}`;
  return { seq: Number(raw.seq), level, model, display, search: display.toLowerCase() };
}

export class LogView {
  constructor({ scroller, spacer, rows, onFollowChange, onCountChange }) {
    this.scroller = scroller;
    this.spacer = spacer;
    this.rowsBox = rows;
    this.onFollowChange = onFollowChange;
    this.onCountChange = onCountChange;
    this.lines = []; // every kept line, oldest first
    this.shown = []; // the kept lines that pass the filter
    this.pending = []; // raw lines received since the last frame
    this.filter = { model: "", text: "" };
    this.following = true;
    this.rowHeight = 0;
    this.rowPool = [];
    this.frameRequested = false;
    this.models = new Set();
    scroller.addEventListener("scroll", () => this.onScroll());
    new ResizeObserver(() => this.render()).observe(scroller);
  }

  // Queues one raw line; it is shown with the others at the next frame.
  add(raw) {
    this.pending.push(raw);
    if (this.pending.length > 2 * MAX_LOG_LINES) {
      this.pending.splice(0, this.pending.length - MAX_LOG_LINES); // a hidden tab gets no frames
    }
    this.requestFrame();
  }

  // filter: {model: "" (all) | "router" | a model name, text: substring}.
  setFilter(filter) {
    this.filter = { model: filter.model, text: filter.text.trim().toLowerCase() };
    this.shown = this.lines.filter((line) => this.passes(line));
    this.following = true;
    this.onFollowChange(true);
    this.render();
  }

  setFollowing(following) {
    this.following = following;
    if (following) {
      this.render();
    }
  }

  passes(line) {
    const { model, text } = this.filter;
    if (model === "router" && line.model !== "") {
      return false;
    }
    if (model !== "" && model !== "router" && line.model !== model) {
      return false;
    }
    return text === "" || line.search.includes(text);
  }

  requestFrame() {
    if (!this.frameRequested) {
      this.frameRequested = true;
      requestAnimationFrame(() => {
        this.frameRequested = false;
        this.takePending();
        this.render();
      });
    }
  }

  takePending() {
    if (this.pending.length === 0) {
      return;
    }
    const fresh = this.pending.length > MAX_LOG_LINES ? this.pending.slice(-MAX_LOG_LINES) : this.pending;
    for (const raw of fresh) {
      const line = toLogLine(raw);
      if (line.model) {
        this.models.add(line.model);
      }
      this.lines.push(line);
      if (this.passes(line)) {
        this.shown.push(line);
      }
    }
    this.pending = [];
    if (this.lines.length > MAX_LOG_LINES) {
      this.lines.splice(0, this.lines.length - MAX_LOG_LINES);
      const oldest = this.lines[0].seq;
      const firstKept = this.shown.findIndex((line) => line.seq >= oldest);
      this.shown.splice(0, firstKept < 0 ? this.shown.length : firstKept);
    }
  }

  measureRowHeight() {
    if (this.rowHeight > 0) {
      return this.rowHeight;
    }
    const probe = this.makeRow();
    probe.textContent = "0";
    this.rowsBox.append(probe);
    const height = probe.getBoundingClientRect().height;
    probe.remove();
    if (height > 0) {
      this.rowHeight = height;
      return height;
    }
    return FALLBACK_ROW_PX;
  }

  makeRow() {
    const row = document.createElement("div");
    row.className = "log-row";
    return row;
  }

  onScroll() {
    const atBottom =
      this.scroller.scrollTop + this.scroller.clientHeight >= this.scroller.scrollHeight - this.measureRowHeight();
    if (atBottom !== this.following) {
      this.following = atBottom;
      this.onFollowChange(atBottom);
    }
    this.renderRows();
  }

  // Sizes the spacer for every shown line, keeps the view at the bottom while
  // following, then fills in the rows on screen.
  render() {
    const rowHeight = this.measureRowHeight();
    const total = this.shown.length * rowHeight;
    this.spacer.style.height = `${total}px`;
    if (this.following) {
      this.scroller.scrollTop = Math.max(0, total - this.scroller.clientHeight);
    }
    this.renderRows();
    this.onCountChange(this.shown.length, this.lines.length);
  }

  renderRows() {
    const rowHeight = this.measureRowHeight();
    const count = Math.ceil(this.scroller.clientHeight / rowHeight) + 2 * OVERSCAN_ROWS;
    // The rows never reach past the spacer, so they never stretch the scroll area.
    const top = Math.floor(this.scroller.scrollTop / rowHeight) - OVERSCAN_ROWS;
    const first = Math.max(0, Math.min(top, this.shown.length - count));
    const last = Math.min(this.shown.length, first + count);
    this.rowsBox.style.transform = `translateY(${first * rowHeight}px)`;
    while (this.rowPool.length < last - first) {
      const row = this.makeRow();
      this.rowPool.push(row);
      this.rowsBox.append(row);
    }
    for (let i = 0; i < this.rowPool.length; i++) {
      const row = this.rowPool[i];
      const line = i < last - first ? this.shown[first + i] : null;
      if (row.line === line) {
        continue;
      }
      row.line = line;
      row.hidden = line === null;
      row.textContent = line ? line.display : "";
      row.className = line ? `log-row level-${line.level}` : "log-row";
    }
  }
}
