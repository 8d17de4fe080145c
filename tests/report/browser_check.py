#!/usr/bin/python3
"""Opens a weft HTML report in headless Chromium, driven over the DevTools protocol.

Prints one JSON object: what the page showed (pattern rows, the spans of one request's
waterfall, labels drawn past the drawing's edge) and every console error or uncaught
exception, and writes a screenshot. Used by html_browser_test.cc; needs only Debian's
chromium and python3-websockets (no network, no npm).

  browser_check.py --html report.html --request 17 --screenshot shot.png [--chromium PATH]

Chromium runs in a process group of its own with a fresh profile directory; the group is
killed and the directory removed on every exit path, and the child dies with this script.
"""
import argparse
import asyncio
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import base64

import websockets

PR_SET_PDEATHSIG = 1


def start_chromium(chromium, profile):
    def child_setup():
        os.setsid()
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    args = [chromium, "--headless=new", "--remote-debugging-port=0",
            "--user-data-dir=" + profile, "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--window-size=1280,900", "about:blank"]
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=child_setup)


def stop_chromium(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left
    except ProcessLookupError:
        pass
    proc.wait()


def devtools_address(profile, proc, timeout):
    path = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("chromium exited with status %d before listening" % proc.returncode)
        try:
            with open(path) as f:
                lines = f.read().split("\n")
            if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                return "ws://127.0.0.1:%s%s" % (lines[0].strip(), lines[1].strip())
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise RuntimeError("chromium wrote no DevToolsActivePort within %d s" % timeout)


class Session:
    """One websocket to the browser; commands to a page go with its sessionId."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.pending = {}
        self.events = []
        self.waiters = []
        self.reader = asyncio.ensure_future(self.read())

    async def read(self):
        async for raw in self.ws:
            msg = json.loads(raw)
            if "id" in msg:
                fut = self.pending.pop(msg["id"], None)
                if fut and not fut.done():
                    fut.set_result(msg)
            else:
                self.events.append(msg)
                for method, fut in list(self.waiters):
                    if msg.get("method") == method and not fut.done():
                        fut.set_result(msg)

    async def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        await self.ws.send(json.dumps(msg))
        reply = await fut
        if "error" in reply:
            raise RuntimeError("%s: %s" % (method, reply["error"]))
        return reply["result"]

    def expect(self, method):
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append((method, fut))
        return fut


async def evaluate(s, session, expression):
    result = await s.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "awaitPromise": True}, session)
    if "exceptionDetails" in result:
        raise RuntimeError("evaluating %r: %s" % (expression[:60], result["exceptionDetails"]))
    return result["result"].get("value")


# What the page shows, read from its DOM after picking the request through the search box
# as a user would.
CHECK = r"""
(() => {
  const out = {};
  out.ready = window.weftReady === true;
  out.patterns = document.querySelectorAll('#pattern-rows tr.pattern').length;
  const row = document.querySelector('#pattern-rows tr.pattern');
  if (row) row.click();
  const detail = row ? row.nextElementSibling : null;
  out.tree_calls = detail ? detail.querySelectorAll('.el').length : 0;
  out.tree_histograms = detail ? detail.querySelectorAll('svg.histogram').length : 0;
  const search = document.getElementById('request-search');
  search.value = '#' + REQUEST;
  search.dispatchEvent(new Event('input'));
  out.selected = document.getElementById('request-select').value;
  const svg = document.getElementById('waterfall-svg');
  out.spans = svg ? svg.querySelectorAll('rect.span').length : -1;
  out.lanes = svg ? [...svg.querySelectorAll('text')].filter(t => t.getAttribute('x') === '8').length : -1;
  const width = svg ? svg.width.baseVal.value : 0;
  out.labels_past_edge = svg ? [...svg.querySelectorAll('text')].filter(t => {
    const b = t.getBBox(); return b.x < -0.5 || b.x + b.width > width + 0.5; }).length : -1;
  out.delay_histograms = document.querySelectorAll('#delay-hists svg.histogram').length;
  out.accuracy = document.getElementById('accuracy-text').textContent;
  search.value = '';
  search.dispatchEvent(new Event('input'));
  return out;
})()
"""


async def check(url, request, screenshot):
    s = None
    problems = []
    async with websockets.connect(URL_HOLDER[0], max_size=None, open_timeout=20) as ws:
        s = Session(ws)
        target = await s.send("Target.createTarget", {"url": "about:blank"})
        attached = await s.send("Target.attachToTarget",
                                {"targetId": target["targetId"], "flatten": True})
        page = attached["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            await s.send(domain + ".enable", {}, page)
        await s.send("Emulation.setDeviceMetricsOverride",
                     {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, page)
        loaded = s.expect("Page.loadEventFired")
        await s.send("Page.navigate", {"url": url}, page)
        await asyncio.wait_for(loaded, 30)
        shown = await evaluate(s, page, CHECK.replace("REQUEST", str(int(request))))
        # Scroll to the waterfall's request again for the picture: the slowest is shown first.
        metrics = await s.send("Page.getLayoutMetrics", {}, page)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = await s.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": min(size["width"], 1280),
                     "height": min(size["height"], 6000), "scale": 1}}, page)
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        await asyncio.sleep(0.2)  # let late console messages arrive
        for e in s.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                problems.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                problems.append("console.%s: %s" % (p["type"], json.dumps(p.get("args"))[:500]))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                problems.append("log: " + p["entry"].get("text", "")[:500])
        s.reader.cancel()
    shown["errors"] = problems
    # Everything the page asked for beyond its own file: it must need no network.
    shown["fetched"] = sorted({e["params"]["request"]["url"] for e in s.events
                               if e.get("method") == "Network.requestWillBeSent"
                               and e["params"]["request"]["url"] != url})
    return shown


URL_HOLDER = [None]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--html", required=True)
    ap.add_argument("--request", required=True, type=int)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = ap.parse_args()
    profile = tempfile.mkdtemp(prefix="weft-chromium-")
    proc = None
    try:
        proc = start_chromium(args.chromium, profile)
        URL_HOLDER[0] = devtools_address(profile, proc, 30)
        url = "file://" + os.path.abspath(args.html)
        shown = asyncio.run(asyncio.wait_for(check(url, args.request, args.screenshot), 90))
        print(json.dumps(shown))
        return 0
    except Exception as e:  # one line for the test's failure message
        print(json.dumps({"failure": "%s: %s" % (type(e).__name__, e)}))
        return 1
    finally:
        if proc is not None:
            stop_chromium(proc)
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
