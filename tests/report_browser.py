"""A headless Chromium driven over the DevTools protocol, for the report tests (no browser download:
Debian's `chromium` package, installed by `.ci/run`).

`Browser.open(path)` loads a file in a fresh tab and records what a reader would never want to see:
console errors, uncaught exceptions, JavaScript dialogs (`alert`), and any request that is not the
file itself."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
]
LOCAL = ("file:", "data:", "blob:", "about:")


@dataclass
class PageLog:
    """What happened while a page loaded and ran."""

    errors: list[str] = field(default_factory=list)  # console errors and uncaught exceptions
    dialogs: list[str] = field(default_factory=list)  # alert / confirm / prompt messages
    requests: list[str] = field(default_factory=list)  # every URL the page asked for


class Browser:
    def __init__(self) -> None:
        import websocket  # websocket-client, from the test extra

        self.profile = Path(tempfile.mkdtemp(prefix="tracelens-chromium-"))
        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}{path}", timeout=120, suppress_origin=True, max_size=None
        )
        self.next_id = 0
        self.session: str | None = None
        self.log = PageLog()

    # ------------------------------------------------------------------ protocol
    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self._event(reply)

    def _event(self, event: dict[str, Any]) -> None:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.log.errors.append(
                str(details.get("exception", {}).get("description") or details.get("text"))
            )
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.log.errors.append(
                " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
            )
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.log.errors.append(f"{params['entry'].get('source')}: {params['entry'].get('text')}")
        elif method == "Page.javascriptDialogOpening":
            self.log.dialogs.append(f"{params.get('type')}: {params.get('message')}")
            # answered asynchronously: the page stays blocked on the dialog until then
            self.next_id += 1
            self.ws.send(
                json.dumps(
                    {
                        "id": self.next_id,
                        "method": "Page.handleJavaScriptDialog",
                        "params": {"accept": True},
                        "sessionId": self.session,
                    }
                )
            )
        elif method == "Network.requestWillBeSent":
            self.log.requests.append(params["request"]["url"])

    def wait_for(self, expression: str, timeout: float = 60) -> Any:
        """Evaluate ``expression`` until it is truthy, reading events meanwhile, and return its value: a
        condition, not a fixed wait (on a loaded machine it takes as long as it takes)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{expression} is still {value!r} after {timeout} s; errors: {self.log.errors}"
                )
            self.pump(0.05)

    def settle(self) -> None:
        """Let the page run what it has queued (two rounds of tasks: handlers, timers set by handlers,
        Plotly's deferred redraws) and read every event it sent before: what "wait a second, nothing
        more may come" stood for. `send` reads the events that arrive before its reply."""
        self.send(
            "Runtime.evaluate",
            {
                "expression": "new Promise(r => setTimeout(() => setTimeout(() => r(true), 0), 0))",
                "awaitPromise": True,
            },
        )

    def pump(self, seconds: float) -> None:
        """Read events for a while (dialogs and errors arrive on their own)."""
        self.ws.settimeout(0.1)
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                try:
                    message = json.loads(self.ws.recv())
                except Exception:  # a read timeout: nothing to read yet
                    continue
                if "method" in message:
                    self._event(message)
        finally:
            self.ws.settimeout(120)

    # ------------------------------------------------------------------ pages
    def open(
        self, path: Path, *, width: int = 1440, height: int = 900, scheme: str = "light", timeout: float = 90
    ) -> float:
        """Load ``path`` in a new tab and wait until the report says it has drawn every figure; returns
        the seconds from navigation to ready."""
        self.log = PageLog()
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, session=False
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.send(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )
        started = time.monotonic()
        self.send("Page.navigate", {"url": path.resolve().as_uri()})
        deadline = started + timeout
        while time.monotonic() < deadline:
            ready = self.evaluate("document.body ? document.body.getAttribute('data-ready') : null")
            if ready is not None:
                return time.monotonic() - started
            self.pump(0.1)
        raise TimeoutError(f"the report did not finish drawing in {timeout} s; errors: {self.log.errors}")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def external_requests(self) -> list[str]:
        return [url for url in self.log.requests if not url.startswith(LOCAL)]

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
