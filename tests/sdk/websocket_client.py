#!/usr/bin/env python3
"""Python's websockets (Debian's python3-websockets) against lemonade-router.

Drives both WebSocket endpoints as Lemonade's clients do: the log stream with
the app's subprotocols (lemonade-realtime, bearer.<base64url key>) and with
?api_key=, and realtime transcription on the main port and on the port
/health reports as websocket_port, with the key in a header and in-band,
against the fake whisper-server. Starts the real router (LEMON_ROUTER_BIN)
with the fakes (LEMON_FAKES_DIR). Exits 77 (skipped) without the package.
"""
import asyncio
import base64
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.request

try:
    import websockets
    import websockets.exceptions
except ImportError:
    print("skipped: python3-websockets is not installed (scripts/install-deps.sh --test)")
    sys.exit(77)

ROUTER = os.environ["LEMON_ROUTER_BIN"]
FAKES = os.environ["LEMON_FAKES_DIR"]
KEY = "sk-websocket-test"
RATE = 16000
WAIT = 20  # seconds: a guard against hangs, never a way to pace the test


def b64url(text):
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def pcm(ms, amplitude):
    """`ms` of a 440 Hz tone (silence at 0) as base64 PCM16, 16 kHz mono."""
    n = RATE * ms // 1000
    samples = (int(amplitude * 32767 * math.sin(2 * math.pi * 440 * i / RATE)) for i in range(n))
    return base64.b64encode(b"".join(struct.pack("<h", s) for s in samples)).decode()


def start_router(root):
    models = {"w": {"checkpoint": os.path.join(root, "w.bin"), "recipe": "whispercpp",
                    "labels": ["audio"], "source": "local_path"}}
    with open(models["w"]["checkpoint"], "w") as f:
        f.write("whisper")
    os.makedirs(os.path.join(root, "cache"))
    with open(os.path.join(root, "cache", "user_models.json"), "w") as f:
        json.dump(models, f)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": root,
        "LEMONADE_CACHE_DIR": os.path.join(root, "cache"),
        "HF_HUB_CACHE": os.path.join(root, "hf"),
        "LEMONADE_WHISPERCPP_CPU_BIN": os.path.join(FAKES, "whisper-server"),
        "LEMONADE_WHISPERCPP_NPU_BIN": os.path.join(FAKES, "whisper-server"),
        "LEMONADE_API_KEY": KEY,
    }
    proc = subprocess.Popen([ROUTER, "--port", "0"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = ""
    port = None
    for line in proc.stderr:
        log += line
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        raise RuntimeError("the router did not start:\n" + log)
    # Keep reading its log, so the router never waits on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def http_json(port, method, path, body=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=WAIT) as r:
        return json.load(r)


async def next_of(ws, wanted):
    """Messages until one of type `wanted` (returned)."""
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
        assert event["type"] != "error" or wanted == "error", event
        if event["type"] == wanted:
            return event


async def logs_with_the_apps_subprotocols(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/logs/stream",
                                  subprotocols=["lemonade-realtime", f"bearer.{b64url(KEY)}"]) as ws:
        assert ws.subprotocol == "lemonade-realtime", ws.subprotocol
        await ws.send(json.dumps({"type": "logs.subscribe", "after_seq": None}))
        snapshot = await next_of(ws, "logs.snapshot")
        assert snapshot["entries"], snapshot
        last = snapshot["entries"][-1]
        assert set(last) >= {"seq", "timestamp", "severity", "tag", "line"}, last
        http_json(port, "POST", "/api/v1/log-level", {"level": "info"})
        while True:
            entry = (await next_of(ws, "logs.entry"))["entry"]
            assert entry["seq"] > last["seq"], entry
            if "log level set to info" in entry["line"]:
                assert entry["severity"] == "Info", entry
                break
        await ws.close(1000, "OK")
        assert ws.close_code == 1000, ws.close_code


async def logs_with_the_key_in_the_query(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/api/v1/logs/stream?api_key={KEY}") as ws:
        assert ws.subprotocol is None
        await ws.send(json.dumps({"type": "logs.subscribe", "after_seq": 0}))
        await next_of(ws, "logs.snapshot")


async def a_wrong_key_or_origin_is_refused(port):
    for url, origin in ((f"ws://127.0.0.1:{port}/logs/stream?api_key=nope", None),
                        (f"ws://127.0.0.1:{port}/logs/stream?api_key={KEY}", "http://evil.example")):
        try:
            async with websockets.connect(url, origin=origin):
                raise AssertionError(f"{url} from {origin} opened")
        except websockets.exceptions.InvalidStatusCode as e:
            assert e.status_code in (401, 403), e.status_code


async def realtime_with_detection(url, headers):
    async with websockets.connect(url, extra_headers=headers) as ws:
        created = await next_of(ws, "session.created")
        assert created["session"]["model"] == "user.w", created
        for ms, amplitude in ((500, 0.0), (1200, 0.3), (1500, 0.0)):
            for _ in range(ms // 100):
                await ws.send(json.dumps({"type": "input_audio_buffer.append",
                                          "audio": pcm(100, amplitude)}))
        started = await next_of(ws, "input_audio_buffer.speech_started")
        stopped = await next_of(ws, "input_audio_buffer.speech_stopped")
        done = await next_of(ws, "conversation.item.input_audio_transcription.completed")
        assert started["audio_start_ms"] == 500 and stopped["audio_end_ms"] == 1700, (started, stopped)
        assert done["transcript"].startswith("fake transcript of "), done
        assert done["transcript"].endswith(" bytes from realtime_audio.wav"), done


async def realtime_authenticated_in_band(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/v1/realtime?model=user.w") as ws:
        await ws.send(json.dumps({"type": "auth", "token": KEY}))
        await next_of(ws, "auth.ok")
        await next_of(ws, "session.created")
        await ws.send(json.dumps({"type": "session.update", "session": {"turn_detection": None}}))
        updated = await next_of(ws, "session.updated")
        assert updated["session"]["turn_detection"] is None, updated
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": pcm(600, 0.2)}))
        await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        await next_of(ws, "input_audio_buffer.committed")
        done = await next_of(ws, "conversation.item.input_audio_transcription.completed")
        assert done["transcript"] == f"fake transcript of {44 + 2 * 9600} bytes from realtime_audio.wav", done


async def main(port):
    socket_port = http_json(port, "GET", "/api/v1/health")["websocket_port"]
    assert socket_port != port, socket_port
    await logs_with_the_apps_subprotocols(port)
    await logs_with_the_key_in_the_query(port)
    await a_wrong_key_or_origin_is_refused(port)
    auth = {"Authorization": f"Bearer {KEY}"}
    await realtime_with_detection(f"ws://127.0.0.1:{port}/api/v1/realtime?model=user.w", auth)
    await realtime_with_detection(f"ws://127.0.0.1:{socket_port}/realtime?model=user.w", auth)
    await realtime_authenticated_in_band(port)


if __name__ == "__main__":
    root = tempfile.mkdtemp(prefix="lemon-ws-py-")
    proc = None
    try:
        proc, port = start_router(root)
        asyncio.run(main(port))
        print("websockets", websockets.__version__, "drove both endpoints: ok")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=WAIT)
        shutil.rmtree(root, ignore_errors=True)
