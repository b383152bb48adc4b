// The chat box: sends the conversation to POST /api/v1/chat/completions with
// "stream": true and writes the reply's deltas as they arrive.

import { ApiError, errorFrom, postJson, readEventStream } from "./api.js";
import { el, number } from "./format.js";

export class ChatBox {
  constructor({ form, modelSelect, input, sendButton, stopButton, clearButton, log, status }) {
    this.modelSelect = modelSelect;
    this.input = input;
    this.sendButton = sendButton;
    this.stopButton = stopButton;
    this.log = log;
    this.status = status;
    this.messages = [];
    this.controller = null;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    stopButton.addEventListener("click", () => this.controller?.abort());
    clearButton.addEventListener("click", () => this.clear());
    this.setModels([]);
  }

  // The loaded chat models to choose from; keeps the choice when it stays.
  setModels(names) {
    const chosen = this.modelSelect.value;
    const current = [...this.modelSelect.options].map((o) => o.value);
    if (current.join("\n") !== names.join("\n")) {
      this.modelSelect.replaceChildren(...names.map((name) => new Option(name, name)));
      if (names.length === 0) {
        this.modelSelect.append(new Option("load a chat model first", ""));
      }
      if (names.includes(chosen)) {
        this.modelSelect.value = chosen;
      }
    }
    this.sendButton.disabled = names.length === 0 || this.controller !== null;
  }

  clear() {
    this.controller?.abort();
    this.messages = [];
    this.log.replaceChildren();
    this.status.textContent = "";
  }

  addBubble(role, text) {
    const bubble = el("div", `bubble ${role}`);
    bubble.append(el("span", "who", role === "user" ? "You" : this.modelSelect.value));
    const body = el("div", "text");
    body.append(document.createTextNode(text));
    bubble.append(body);
    this.log.append(bubble);
    this.log.scrollTop = this.log.scrollHeight;
    return bubble;
  }

  setBusy(busy) {
    this.sendButton.disabled = busy || this.modelSelect.value === "";
    this.stopButton.disabled = !busy;
  }

  async send() {
    const text = this.input.value.trim();
    const model = this.modelSelect.value;
    if (!text || !model || this.controller) {
      return;
    }
    this.input.value = "";
    this.messages.push({ role: "user", content: text });
    this.addBubble("user", text);
    const bubble = this.addBubble("assistant", "");
    bubble.classList.add("streaming");
    const reply = bubble.querySelector(".text").firstChild;
    this.controller = new AbortController();
    this.setBusy(true);
    this.status.textContent = "waiting for the first token…";
    const started = performance.now();
    let content = "";
    let firstTokenMs = null;
    let timings = null;
    try {
      const response = await postJson(
        "/api/v1/chat/completions",
        { model, messages: this.messages, stream: true },
        this.controller.signal,
      );
      if (!response.ok) {
        throw await errorFrom(response);
      }
      await readEventStream(response, {
        onEvent: (event) => {
          if (event.data === "[DONE]") {
            return;
          }
          const chunk = JSON.parse(event.data);
          if (chunk.error) {
            throw new ApiError(0, chunk.error.message || "the stream failed", chunk.error.code);
          }
          const delta = chunk.choices?.[0]?.delta || {};
          const piece = delta.content || delta.reasoning_content || "";
          if (piece) {
            if (firstTokenMs === null) {
              firstTokenMs = performance.now() - started;
              this.status.textContent = "streaming…";
            }
            content += delta.content || "";
            reply.appendData(piece);
            this.log.scrollTop = this.log.scrollHeight;
          }
          timings = chunk.timings || timings;
        },
      });
      this.messages.push({ role: "assistant", content });
      this.status.textContent = this.summary(firstTokenMs, timings);
    } catch (error) {
      if (error.name === "AbortError") {
        if (bubble.isConnected) {
          this.messages.push({ role: "assistant", content }); // stopped, not cleared
          this.status.textContent = "stopped";
        }
      } else {
        this.messages.pop(); // the question did not get an answer
        bubble.classList.add("failed");
        reply.appendData(reply.length ? `\n${error.message}` : error.message);
        this.status.textContent = "failed";
      }
      this.controller?.abort();
    } finally {
      bubble.classList.remove("streaming");
      this.controller = null;
      this.setBusy(false);
    }
  }

  summary(firstTokenMs, timings) {
    const parts = [];
    if (firstTokenMs !== null) {
      parts.push(`first token after ${Math.round(firstTokenMs)} ms`);
    }
    if (timings && timings.predicted_n !== undefined) {
      parts.push(`${timings.predicted_n} tokens at ${number(timings.predicted_per_second)} tok/s`);
    }
    return parts.join(", ");
  }
}
