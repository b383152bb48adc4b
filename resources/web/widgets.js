// Drawn widgets: the context-usage ring (inline SVG) and the history chart
// (canvas).

const SVG_NS = "http://www.w3.org/2000/svg";
const RING_RADIUS = 15.5;

function svgElement(tag, attributes) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, String(value));
  }
  return node;
}

function ringLevel(fraction) {
  if (fraction >= 0.9) {
    return "high";
  }
  if (fraction >= 0.7) {
    return "warn";
  }
  return "ok";
}

// A ring that fills with a fraction (0–1). withLabel puts the percentage in
// its middle. set(fraction, title, busy) updates it.
export function createRing(sizePx, withLabel) {
  const svg = svgElement("svg", { viewBox: "0 0 36 36", width: sizePx, height: sizePx, class: "ring" });
  const title = svgElement("title", {});
  const track = svgElement("circle", { cx: 18, cy: 18, r: RING_RADIUS, class: "ring-track" });
  const bar = svgElement("circle", {
    cx: 18,
    cy: 18,
    r: RING_RADIUS,
    class: "ring-bar ok",
    pathLength: 100,
    "stroke-dasharray": "0 100",
    transform: "rotate(-90 18 18)",
  });
  svg.append(title, track, bar);
  let label = null;
  if (withLabel) {
    label = svgElement("text", { x: 18, y: 18, class: "ring-label", "text-anchor": "middle", "dominant-baseline": "central" });
    svg.append(label);
  }
  let shown = null;
  return {
    element: svg,
    set(fraction, text, busy = false) {
      const value = Math.min(1, Math.max(0, Number(fraction) || 0));
      const key = `${value}|${text}|${busy}`;
      if (key === shown) {
        return;
      }
      shown = key;
      const percent = value * 100;
      // A sliver stays visible for any use above zero.
      const drawn = percent > 0 ? Math.max(percent, 1.5) : 0;
      bar.setAttribute("stroke-dasharray", `${drawn} 100`);
      bar.setAttribute("class", `ring-bar ${ringLevel(value)}`);
      svg.classList.toggle("busy", busy);
      title.textContent = text;
      if (label) {
        label.textContent = `${Math.round(percent)}%`;
      }
    },
  };
}

function cssColor(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

// A small chart of the last values, newest on the right, scaled to its
// largest value. Redrawn at most once per animation frame.
export class HistoryChart {
  constructor(canvas, { capacity = 60, format = (v) => String(v) } = {}) {
    this.canvas = canvas;
    this.capacity = capacity;
    this.format = format;
    this.values = [];
    this.frameRequested = false;
    new ResizeObserver(() => this.requestDraw()).observe(canvas);
  }

  push(value) {
    this.values.push(value);
    if (this.values.length > this.capacity) {
      this.values.shift();
    }
    this.requestDraw();
  }

  requestDraw() {
    if (!this.frameRequested) {
      this.frameRequested = true;
      requestAnimationFrame(() => {
        this.frameRequested = false;
        this.draw();
      });
    }
  }

  draw() {
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(this.canvas.clientWidth * ratio));
    const height = Math.max(1, Math.round(this.canvas.clientHeight * ratio));
    if (this.canvas.width !== width || this.canvas.height !== height) {
      this.canvas.width = width;
      this.canvas.height = height;
    }
    const g = this.canvas.getContext("2d");
    g.clearRect(0, 0, width, height);
    const line = cssColor("--chart-line", "#b08900");
    const fill = cssColor("--chart-fill", "rgba(176,137,0,0.15)");
    const ink = cssColor("--muted", "#666");
    const grid = cssColor("--border", "#ddd");

    const top = 16 * ratio;
    const bottom = height - 2 * ratio;
    g.strokeStyle = grid;
    g.lineWidth = ratio;
    g.beginPath();
    g.moveTo(0, bottom);
    g.lineTo(width, bottom);
    g.stroke();

    const max = Math.max(...this.values, 0);
    g.fillStyle = ink;
    g.font = `${11 * ratio}px system-ui, sans-serif`;
    g.textBaseline = "top";
    if (this.values.length === 0) {
      g.fillText("no requests yet", 2 * ratio, 2 * ratio);
      return;
    }
    g.fillText(`max ${this.format(max)}`, 2 * ratio, 2 * ratio);
    const scale = max > 0 ? (bottom - top) / max : 0;
    const step = width / Math.max(1, this.capacity - 1);
    const startX = width - step * (this.values.length - 1);
    const points = this.values.map((v, i) => [startX + i * step, bottom - v * scale]);

    g.beginPath();
    g.moveTo(points[0][0], bottom);
    for (const [x, y] of points) {
      g.lineTo(x, y);
    }
    g.lineTo(points[points.length - 1][0], bottom);
    g.closePath();
    g.fillStyle = fill;
    g.fill();

    g.beginPath();
    points.forEach(([x, y], i) => (i === 0 ? g.moveTo(x, y) : g.lineTo(x, y)));
    g.strokeStyle = line;
    g.lineWidth = 1.5 * ratio;
    g.stroke();
    g.fillStyle = line;
    const [lastX, lastY] = points[points.length - 1];
    g.beginPath();
    g.arc(lastX - 2 * ratio, lastY, 2.5 * ratio, 0, Math.PI * 2);
    g.fill();
  }
}
