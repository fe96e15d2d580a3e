"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe), with
nothing but the standard library: Chromium reads commands from fd 3 and writes replies and
events to fd 4, each a JSON object ended by a NUL byte.

The browser is ``ADAEXPLORE_CHROMIUM`` when set, else the first of chromium, chromium-browser,
google-chrome and headless_shell on PATH (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import signal
import struct
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    # the machine has no network: without these Chromium keeps trying to reach its services
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-extensions",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    configured = os.environ.get("ADAEXPLORE_CHROMIUM")
    if configured:
        return configured if Path(configured).is_file() else None
    for name in (*CANDIDATES, "headless_shell"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


@dataclass
class PageProblems:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)

    @property
    def all(self) -> list[str]:
        return self.console_errors + self.page_errors + self.log_errors


class Chromium:
    """One headless browser with one page (a flattened session on its target)."""

    def __init__(self, executable: str, *, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="adaexplore-chromium-")
        self._log = open(Path(self._profile.name) / "chromium.log", "wb")  # noqa: SIM115
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        flags = [*FLAGS, f"--user-data-dir={self._profile.name}"]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to run its sandbox as root
        self.pid = os.posix_spawn(
            executable,
            [executable, *flags, "about:blank"],
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, self._log.fileno(), 1),
                (os.POSIX_SPAWN_DUP2, self._log.fileno(), 2),
                (os.POSIX_SPAWN_DUP2, to_browser_r, 3),
                (os.POSIX_SPAWN_DUP2, from_browser_w, 4),
            ],
            setsid=True,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    # -- protocol ----------------------------------------------------------------------------

    def send(self, method: str, params: dict | None = None, *, session: bool = True) -> dict:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        reply = self._wait(lambda m: m.get("id") == self._next_id)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_event(self, method: str) -> dict:
        seen = next((e for e in self.events if e.get("method") == method), None)
        return seen or self._wait(lambda m: m.get("method") == method)

    def _wait(self, wanted) -> dict:
        deadline = time.monotonic() + self.timeout_s
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if wanted(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no answer from Chromium within {self.timeout_s} s")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed its pipe; see its log: " + self.log())
                self._buffer += chunk

    # -- a page ------------------------------------------------------------------------------

    def open(self, url: str, width: int = 1280, height: int = 900) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> PageProblems:
        problems = PageProblems()
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                problems.console_errors.append(json.dumps(params.get("args")))
            elif method == "Runtime.exceptionThrown":
                problems.page_errors.append(json.dumps(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                problems.log_errors.append(params["entry"].get("text", ""))
        return problems

    def screenshot(self) -> bytes:
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        return base64.b64decode(data["data"])

    def log(self) -> str:
        self._log.flush()
        return (Path(self._profile.name) / "chromium.log").read_text(errors="replace")[-2000:]

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close", session=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.killpg(self.pid, signal.SIGKILL)  # the browser's own process group (setsid)
            os.waitpid(self.pid, 0)
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)
        self._log.close()
        self._profile.cleanup()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def png_colours(png: bytes, limit: int = 64) -> int:
    """Distinct colours in an 8-bit RGB or RGBA PNG (counted up to ``limit``)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    position, idat = 8, b""
    width = height = colour_type = 0
    while position < len(png):
        (length,) = struct.unpack(">I", png[position : position + 4])
        kind = png[position + 4 : position + 8]
        body = png[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour_type not in (2, 6):
                raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour_type}")
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    channels = 3 if colour_type == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8)
    stride = width * channels
    rows = raw.reshape(height, stride + 1)
    image = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            current = line
        elif kind == 2:
            current = (line + previous) % 256
        elif kind == 1:
            current = _sub(line, channels)
        else:
            current = _sequential(line, previous, channels, kind)
        image[y] = current
        previous = current.astype(np.int32)
    pixels = image.reshape(-1, channels)
    return min(len(np.unique(pixels, axis=0)), limit)


def _sub(line: np.ndarray, channels: int) -> np.ndarray:
    # each byte adds the byte one pixel to the left: a running sum per channel
    return (line.reshape(-1, channels).cumsum(axis=0) % 256).reshape(-1)


def _sequential(line: np.ndarray, up: np.ndarray, channels: int, kind: int) -> np.ndarray:
    out = np.zeros_like(line)
    for i in range(len(line)):
        left = out[i - channels] if i >= channels else 0
        up_left = up[i - channels] if i >= channels else 0
        if kind == 3:
            predictor = (left + up[i]) // 2
        else:  # Paeth
            estimate = left + up[i] - up_left
            a, b, c = abs(estimate - left), abs(estimate - up[i]), abs(estimate - up_left)
            predictor = left if a <= b and a <= c else (up[i] if b <= c else up_left)
        out[i] = (line[i] + predictor) % 256
    return out
