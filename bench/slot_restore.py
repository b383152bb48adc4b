#!/usr/bin/env python3
"""Restored against recomputed (issue #29 §1): the first turn after a model was
swapped out and back, with a real llama-server.

For each conversation length (about 2k, 8k and 16k prompt tokens), it starts
lemonade-router with --max-loaded-models 1 and two models, sends the long
first turn to MODEL, swaps to the tiny OTHER model (MODEL's slot is saved),
then sends the second turn to MODEL, which loads again and restores its slot
("restored"). It then does the same with --slot-cache-size off
("recomputed"). It prints, per length and mode: the time to first token of
the second turn (request sent to first streamed content, the load included),
the prompt tokens llama-server evaluated for it (its timings.prompt_n), and
for "restored" the save and restore time and the file size (from the
router's events).

    LLAMA_SERVER=/path/llama-server BENCH_MODEL=/path/model.gguf \\
        OTHER_MODEL=../shared/models/tiny-llama-chat.gguf \\
        python3 bench/slot_restore.py [--router build/lemonade-router] [--lengths 2000,8000,16000]

BENCH_MODEL should make prefill cost visible on the machine: a random llama
of n_embd 512, 8 layers, 16k context (../shared/models/make_random_llama_gguf.py
--n-embd 512 --n-layer 8 --n-head 8 --n-head-kv 8 --n-ff 1536 --n-ctx 16384)
evaluates about a thousand tokens a second on two cores.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body, timeout=900):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def stream_turn(port, model, messages):
    """TTFT in ms and the final chunk's timings."""
    body = {"model": model, "messages": messages, "stream": True, "max_tokens": 8,
            "temperature": 0, "seed": 7}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/chat/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    sent = time.monotonic()
    ttft = None
    timings = {}
    with urllib.request.urlopen(req, timeout=900) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            choices = chunk.get("choices") or [{}]
            if ttft is None and (choices[0].get("delta") or {}).get("content"):
                ttft = (time.monotonic() - sent) * 1000
            if "timings" in chunk:
                timings = chunk["timings"]
    return ttft, timings


def events_follower(port, seen):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/events")
    try:
        with urllib.request.urlopen(req, timeout=3600) as r:
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
    except Exception:
        pass


def first_turn_text(tokens):
    words = []
    i = 0
    while len(words) < tokens // 5:  # about five tokens per "wNNN," word
        words.append(f"w{(i * 7919) % 1000},")
        i += 1
    return "Remember these: " + " ".join(words)


def run(args, length, slot_cache):
    cache = tempfile.mkdtemp(prefix="lemon-slot-bench-")
    user_models = {
        "big": {"checkpoint": os.environ["BENCH_MODEL"], "recipe": "llamacpp",
                "source": "local_path"},
        "other": {"checkpoint": os.environ["OTHER_MODEL"], "recipe": "llamacpp",
                  "source": "local_path"},
    }
    with open(os.path.join(cache, "user_models.json"), "w") as f:
        json.dump(user_models, f)
    port = free_port()
    env = dict(os.environ, LEMONADE_CACHE_DIR=cache,
               LEMONADE_LLAMACPP_CPU_BIN=os.environ["LLAMA_SERVER"])
    router = subprocess.Popen(
        [args.router, "--port", str(port), "--max-loaded-models", "1", "--ctx-size", "17000",
         "--llamacpp", "cpu", "--slot-cache-size", slot_cache, "--slot-save-timeout", "120"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
                break
            except Exception:
                time.sleep(0.05)
        seen = []
        threading.Thread(target=events_follower, args=(port, seen), daemon=True).start()
        time.sleep(0.2)
        messages = [{"role": "user", "content": first_turn_text(length)}]
        reply = post(port, "/api/v1/chat/completions",
                     {"model": "user.big", "messages": messages, "max_tokens": 8,
                      "temperature": 0, "seed": 7})
        first_prompt = reply.get("timings", {}).get("prompt_n", -1)
        messages += [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]},
                     {"role": "user", "content": "And the last one?"}]
        post(port, "/api/v1/chat/completions",
             {"model": "user.other", "messages": [{"role": "user", "content": "hi"}],
              "max_tokens": 2})
        ttft, timings = stream_turn(port, "user.big", messages)
        time.sleep(0.3)
        saved = [e for e in seen if e.get("type") == "slot_saved" and e["model"] == "user.big"]
        restored = [e for e in seen if e.get("type") == "slot_restored"]
        return {
            "length": length,
            "mode": "restored" if slot_cache != "off" else "recomputed",
            "first_turn_prompt_tokens": first_prompt,
            "ttft_ms": round(ttft or -1, 1),
            "evaluated_prompt_tokens": timings.get("prompt_n", -1),
            "save_s": round(saved[0]["seconds"], 3) if saved else None,
            "restore_s": round(restored[0]["seconds"], 3) if restored else None,
            "file_bytes": saved[0]["bytes"] if saved else None,
        }
    finally:
        router.terminate()
        router.wait(timeout=60)
        shutil.rmtree(cache, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--router", default="build/lemonade-router")
    p.add_argument("--lengths", default="2000,8000,16000")
    args = p.parse_args()
    for var in ("LLAMA_SERVER", "BENCH_MODEL", "OTHER_MODEL"):
        if var not in os.environ:
            sys.exit(f"slot_restore.py: set {var} (see the header)")
    rows = []
    for length in [int(x) for x in args.lengths.split(",")]:
        for cache in ("auto", "off"):
            row = run(args, length, cache)
            rows.append(row)
            print(json.dumps(row), flush=True)
    by = {(r["length"], r["mode"]): r for r in rows}
    for length in sorted({r["length"] for r in rows}):
        a, b = by[(length, "restored")], by[(length, "recomputed")]
        if a["ttft_ms"] > 0:
            print(f"{length}: restored TTFT {a['ttft_ms']} ms vs recomputed {b['ttft_ms']} ms "
                  f"({b['ttft_ms'] / a['ttft_ms']:.1f}x); evaluated {a['evaluated_prompt_tokens']}"
                  f" vs {b['evaluated_prompt_tokens']} tokens")


if __name__ == "__main__":
    main()
