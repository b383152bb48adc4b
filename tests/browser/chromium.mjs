// Headless Chromium driven over the DevTools protocol (chrome-remote-interface).
// findChromium() locates a binary; launchChromium() starts one on a free
// DevTools port with a throwaway profile and opens a connected page.
import { spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import CDP from "chrome-remote-interface";

const POLL_MS = 25;
const CANDIDATES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];

// LEMON_CHROMIUM, or the first of CANDIDATES on PATH; null when none exists.
export function findChromium() {
  if (process.env.LEMON_CHROMIUM) {
    return process.env.LEMON_CHROMIUM;
  }
  const dirs = (process.env.PATH || "/usr/bin:/bin").split(delimiter);
  for (const name of CANDIDATES) {
    for (const dir of dirs) {
      const path = join(dir, name);
      try {
        accessSync(path, constants.X_OK);
        return path;
      } catch {
        // not here
      }
    }
  }
  return null;
}

// Resolves with the DevTools port once Chromium prints where it listens.
function devToolsPort(child, timeoutMs) {
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`chromium did not start:\n${output}`)), timeoutMs);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      output += chunk;
      const m = output.match(/DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`chromium exited with ${code}:\n${output}`));
    });
  });
}

// Starts headless Chromium and connects to its first page.
// Returns {client, close()}; close() ends the connection, kills Chromium's
// whole process group and removes the profile.
export async function launchChromium(binary, { width = 1440, height = 1000 } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "lemon-chromium-"));
  const child = spawn(
    binary,
    [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--remote-debugging-address=127.0.0.1",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      `--window-size=${width},${height}`,
      "about:blank",
    ],
    { stdio: ["ignore", "ignore", "pipe"], detached: true },
  );
  let client = null;
  const close = async () => {
    if (client) {
      await client.close().catch(() => {});
    }
    // Only the group this script started (a pid > 1 it was given), never
    // 0 or -1.
    if (Number.isInteger(child.pid) && child.pid > 1 &&
        child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      try {
        process.kill(-child.pid, "SIGKILL"); // the browser and its helpers
      } catch {
        // already gone
      }
      await exited;
    }
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    const port = await devToolsPort(child, 30000);
    const targets = await CDP.List({ host: "127.0.0.1", port });
    const page = targets.find((t) => t.type === "page");
    client = await CDP({ host: "127.0.0.1", port, target: page });
    await client.Emulation.setDeviceMetricsOverride({ width, height, deviceScaleFactor: 1, mobile: false });
    return { client, close };
  } catch (error) {
    await close();
    throw error;
  }
}

// Helpers over one connected page.
export class Page {
  constructor(client) {
    this.client = client;
    this.problems = []; // console errors and warnings, exceptions
  }

  // Records console errors and warnings, uncaught exceptions and browser log
  // errors (failed loads, CSP violations).
  async watchConsole() {
    const { Runtime, Log, Page: page } = this.client;
    Runtime.consoleAPICalled(({ type, args }) => {
      if (type === "error" || type === "warning" || type === "assert") {
        const text = args.map((a) => a.value ?? a.description ?? "").join(" ");
        this.problems.push(`console.${type}: ${text}`);
      }
    });
    Runtime.exceptionThrown(({ exceptionDetails }) => {
      const d = exceptionDetails;
      this.problems.push(`exception: ${d.exception?.description ?? d.text} at ${d.url ?? ""}:${d.lineNumber}`);
    });
    Log.entryAdded(({ entry }) => {
      if (entry.level === "error") {
        this.problems.push(`log ${entry.source}: ${entry.text} ${entry.url ?? ""}`);
      }
    });
    await Promise.all([Runtime.enable(), Log.enable(), page.enable()]);
  }

  async goto(url) {
    await this.client.Page.enable();
    const loaded = this.client.Page.loadEventFired();
    await this.client.Page.navigate({ url });
    await loaded;
  }

  // The value of an expression (awaited when it is a promise).
  async evaluate(expression) {
    const { result, exceptionDetails } = await this.client.Runtime.evaluate({
      expression,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails) {
      throw new Error(`evaluate failed: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    }
    return result.value;
  }

  // Polls an expression until it is truthy; throws after timeoutMs with the
  // description and the last value.
  async waitFor(description, expression, timeoutMs = 30000) {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
      last = await this.evaluate(expression);
      if (last) {
        return last;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${description} (last value: ${JSON.stringify(last)})`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  // A real mouse click in the middle of the element that selector names.
  async click(selector) {
    const box = await this.evaluate(`(() => {
      const node = document.querySelector(${JSON.stringify(selector)});
      if (!node) return null;
      node.scrollIntoView({ block: "center" });
      const r = node.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    })()`);
    if (!box) {
      throw new Error(`nothing matches ${selector}`);
    }
    const { Input } = this.client;
    const at = { x: box.x, y: box.y, button: "left", clickCount: 1 };
    await Input.dispatchMouseEvent({ type: "mouseMoved", x: box.x, y: box.y });
    await Input.dispatchMouseEvent({ type: "mousePressed", ...at });
    await Input.dispatchMouseEvent({ type: "mouseReleased", ...at });
  }

  // Focuses the element and types text into it as keyboard input would.
  async type(selector, text) {
    await this.click(selector);
    await this.client.Input.insertText({ text });
  }

  // A PNG of the whole page.
  async screenshot() {
    const { cssContentSize } = await this.client.Page.getLayoutMetrics();
    const { data } = await this.client.Page.captureScreenshot({
      format: "png",
      captureBeyondViewport: true,
      clip: { x: 0, y: 0, width: cssContentSize.width, height: cssContentSize.height, scale: 1 },
    });
    return Buffer.from(data, "base64");
  }
}
