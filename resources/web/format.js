// Small helpers for building elements and writing numbers and times.

// A new element with an optional class and text.
export function el(tag, className = "", text = "") {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== "") {
    node.textContent = text;
  }
  return node;
}

// Sets a node's text only when it changed (no needless layout work).
export function setText(node, text) {
  const value = String(text);
  if (node.textContent !== value) {
    node.textContent = value;
  }
}

function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}

// Unix seconds as local HH:MM:SS (and .mmm).
export function clockTime(unixSeconds, withMillis = false) {
  const date = new Date(Number(unixSeconds) * 1000);
  const hms = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return withMillis ? `${hms}.${pad(date.getMilliseconds(), 3)}` : hms;
}

// Seconds as "850 ms", "2.4 s", "3 min 5 s", "2 h 10 min".
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(Number(seconds))) {
    return "–";
  }
  const s = Number(seconds);
  if (s < 1) {
    return `${Math.round(s * 1000)} ms`;
  }
  if (s < 60) {
    return `${s.toFixed(1)} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
  }
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// A short idle time: "12 s", "4 min", "3 h".
export function idle(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min`;
  }
  return `${Math.floor(s / 3600)} h`;
}

export function number(value, digits = 1) {
  if (value === null || value === undefined || !Number.isFinite(Number(value))) {
    return "–";
  }
  return Number(value).toFixed(digits);
}

// Bytes as "512 B", "3.2 MB", "1.4 GB".
export function bytes(n) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = Number(n) || 0;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}
