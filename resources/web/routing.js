// The routing policies panel: each collection.router's decisions, the
// conversations it moved to another model, and its hits per rule, as
// GET /api/v1/stats counts them. A routing decision's event asks for the
// counts again, at most once a second; the panel stays hidden until some
// policy has decided.

import { getJson } from "./api.js";
import { el, setText } from "./format.js";

const REFRESH_MIN_INTERVAL_MS = 1000;

export class RoutingPanel {
  constructor(panel, body) {
    this.panel = panel;
    this.body = body;
    this.rows = new Map(); // policy -> its row
    this.timer = null;
    this.inFlight = false;
    this.again = false;
    this.lastAt = 0;
  }

  // Reads the counts again soon (a decision was made).
  refreshSoon() {
    if (this.timer !== null) {
      return;
    }
    const wait = Math.max(0, this.lastAt + REFRESH_MIN_INTERVAL_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.refresh();
    }, wait);
  }

  async refresh() {
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = true;
    this.lastAt = Date.now();
    let stats = null;
    try {
      stats = await getJson("/api/v1/stats");
    } catch {
      // the router is restarting or gone; the stream badges show that
    }
    this.inFlight = false;
    if (stats) {
      this.render(stats.routing_policies || {});
    }
    if (this.again) {
      this.again = false;
      this.refreshSoon();
    }
  }

  render(policies) {
    const names = Object.keys(policies).sort();
    this.panel.hidden = names.length === 0;
    for (const [name, row] of this.rows) {
      if (!(name in policies)) {
        row.remove();
        this.rows.delete(name);
      }
    }
    for (const name of names) {
      let row = this.rows.get(name);
      if (!row) {
        row = el("tr");
        row.dataset.policy = name;
        row.append(el("td", "model-name", name), el("td", "num decisions"), el("td", "num switches"), el("td", "rules"));
        this.body.append(row);
        this.rows.set(name, row);
      }
      const counts = policies[name];
      setText(row.querySelector(".decisions"), counts.decisions ?? 0);
      setText(row.querySelector(".switches"), counts.switches ?? 0);
      const rules = Object.entries(counts.rules || {}).sort((a, b) => b[1] - a[1]);
      setText(row.querySelector(".rules"), rules.map(([rule, n]) => `${rule} ${n}`).join(" · "));
    }
  }
}
