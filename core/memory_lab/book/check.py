"""Open every page of the built book in headless Chromium and check it really renders.

For each HTML page under `_build/html` (static assets and search/index pages
aside) the check loads the page through the DevTools protocol and fails when:
the page does not fire its load event, a script throws, a local resource fails
to load, an `<img>` did not decode (missing file or broken data), or a chapter
page has no figure image. Chapter pages must also name a run directory in a
caption ("Source: run"), show no code until a toggle is opened (every code cell's
input folded), and show every table whole: a table wider than the page must sit
in a container that scrolls sideways, not run past the page's edge.

`--screenshots DIR` also saves a full-page PNG of every chapter page (1280 pixels
wide) there.

Usage: memory-lab study check-book [_build/html] [--chromium PATH] [--screenshots DIR]
Exit code 0 when every page passes, 1 otherwise; one line per page.

Chromium is started with the flags CI uses and a throwaway profile; the DevTools
client is tornado's websocket (already installed with Jupyter), so nothing else
is needed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tornado.websocket import websocket_connect

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--remote-debugging-port=0"]
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}
PAGE_TIMEOUT = 60.0
REDIRECT = re.compile(r'http-equiv="refresh"\s+content="0;\s*url=([^"]+)"', re.IGNORECASE)
INSPECT = """JSON.stringify({
  title: document.title,
  images: Array.from(document.images).map(i => ({src: i.getAttribute('src') || '',
                                                  ok: i.complete && i.naturalWidth > 0})),
  text: document.body ? document.body.innerText.length : 0,
  captions: document.body ? document.body.innerText.includes('Source: run') : false,
  tables: document.querySelectorAll('table').length,
  visibleCode: Array.from(document.querySelectorAll('.cell_input'))
    // checkVisibility: false inside a closed <details> (whose content Chromium lays out unrendered)
    .filter(e => e.checkVisibility ? e.checkVisibility({visibilityProperty: true})
                                   : e.getClientRects().length > 0).length,
  clippedTables: Array.from(document.querySelectorAll('article table')).filter(t => {
    for (let e = t.parentElement; e && e !== document.body; e = e.parentElement) {
      const overflow = getComputedStyle(e).overflowX;
      if (overflow === 'auto' || overflow === 'scroll') return false;
    }
    const page = (t.closest('article') || document.body).getBoundingClientRect();
    return t.getBoundingClientRect().right > page.right + 1;
  }).length,
})"""
SCREEN_WIDTH = 1280


class DevTools:
    """A minimal Chrome DevTools Protocol client over one websocket (flat sessions)."""

    def __init__(self, connection) -> None:
        self.connection = connection
        self.next_id = 0
        self.events: list[dict] = []

    async def call(self, method: str, params: dict | None = None, session: str | None = None,
                   timeout: float = PAGE_TIMEOUT) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        await self.connection.write_message(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            reply = await self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self.events.append(reply)

    async def wait_for(self, method: str, session: str, timeout: float = PAGE_TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
                return True
            try:
                self.events.append(await self._read(deadline))
            except TimeoutError:
                return False

    async def _read(self, deadline: float) -> dict:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        raw = await asyncio.wait_for(self.connection.read_message(), remaining)
        if raw is None:
            raise RuntimeError("the browser closed the DevTools connection")
        return json.loads(raw)


def pages_of(html_root: Path) -> list[Path]:
    return sorted(p for p in html_root.rglob("*.html")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(html_root).parts)
                  and p.name not in SKIP_PAGES)


def redirect_target(page: Path) -> Path | None:
    """The target of a meta-refresh stub (Jupyter Book's root index.html), if the page is one."""
    match = REDIRECT.search(page.read_text(encoding="utf-8", errors="replace")[:2000])
    return (page.parent / match.group(1)).resolve() if match else None


async def check_page(tools: DevTools, page: Path, html_root: Path,
                     screenshot: Path | None = None) -> list[str]:
    target = await tools.call("Target.createTarget", {"url": "about:blank"})
    attached = await tools.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
    session = attached["sessionId"]
    tools.events.clear()
    problems: list[str] = []
    try:
        for domain in ("Page", "Runtime", "Network"):
            await tools.call(f"{domain}.enable", session=session)
        if screenshot is not None:   # lay the page out at the screenshot's width from the start
            await tools.call("Emulation.setDeviceMetricsOverride", {
                "width": SCREEN_WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=session)
        await tools.call("Page.navigate", {"url": page.as_uri()}, session=session)
        if not await tools.wait_for("Page.loadEventFired", session):
            return [f"no load event within {PAGE_TIMEOUT:.0f} s"]
        result = await tools.call("Runtime.evaluate", {"expression": INSPECT, "returnByValue": True},
                                  session=session)
        facts = json.loads(result["result"]["value"])
        for event in tools.events:
            if event.get("sessionId") != session:
                continue
            if event.get("method") == "Runtime.exceptionThrown":
                details = event["params"]["exceptionDetails"]
                description = details.get("exception", {}).get("description") or details.get("text")
                problems.append(f"script error: {description}")
            if event.get("method") == "Network.loadingFailed" and not event["params"].get("canceled"):
                problems.append(f"resource failed: {event['params'].get('errorText')}")
        if facts["text"] < 200:
            problems.append(f"almost no text ({facts['text']} characters)")
        problems += [f"image not rendered: {i['src']}" for i in facts["images"] if not i["ok"]]
        if "chapters" in page.relative_to(html_root).parts:
            if not any("_images/" in i["src"] and i["ok"] for i in facts["images"]):
                problems.append("chapter page without a rendered figure image")
            if not facts["tables"]:
                problems.append("chapter page without a rendered table")
            if not facts["captions"]:
                problems.append("chapter page names no run directory (no 'Source: run' caption)")
            if facts["visibleCode"]:
                problems.append(f"{facts['visibleCode']} code cells shown without a toggle")
            if facts["clippedTables"]:
                problems.append(f"{facts['clippedTables']} tables run past the page's edge")
            if screenshot is not None:
                await save_screenshot(tools, session, screenshot)
    finally:
        await tools.call("Target.closeTarget", {"targetId": target["targetId"]})
    return problems


async def save_screenshot(tools: DevTools, session: str, path: Path) -> None:
    """A full-page PNG of the loaded page (laid out SCREEN_WIDTH pixels wide), scrolled to the top."""
    import base64

    await tools.call("Runtime.evaluate", {"expression": "window.scrollTo(0, 0)"}, session=session)
    metrics = await tools.call("Page.getLayoutMetrics", session=session)
    height = int(metrics["cssContentSize"]["height"])
    await tools.call("Emulation.setDeviceMetricsOverride", {
        "width": SCREEN_WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
    shot = await tools.call("Page.captureScreenshot", {"format": "png"}, session=session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


async def check_book(html_root: Path, chromium: str, screenshots: Path | None = None) -> int:
    pages = pages_of(html_root)
    if not pages:
        print(f"no pages under {html_root}", file=sys.stderr)
        return 1
    profile = Path(tempfile.mkdtemp(prefix="check-book-"))
    browser = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if browser.poll() is not None or time.monotonic() > deadline:
                print("chromium did not start (no DevToolsActivePort)", file=sys.stderr)
                return 1
            await asyncio.sleep(0.2)
        port, path = port_file.read_text().splitlines()[:2]
        tools = DevTools(await websocket_connect(f"ws://127.0.0.1:{port}{path}", max_message_size=1 << 26))
        failures = 0
        for page in pages:
            name = page.relative_to(html_root).as_posix()
            target = redirect_target(page)
            if target is not None:
                problems = [] if target.is_file() else [f"redirects to a missing page {target}"]
            else:
                shot = (screenshots / f"{page.stem}.png"
                        if screenshots is not None and "chapters" in page.relative_to(html_root).parts
                        else None)
                problems = await check_page(tools, page, html_root, shot)
            if problems:
                failures += 1
                print(f"FAIL {name}: " + "; ".join(dict.fromkeys(problems)))
            else:
                print(f"ok   {name}")
        print(f"{len(pages) - failures}/{len(pages)} pages passed")
        return 1 if failures else 0
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html_root", nargs="?", default="_build/html")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--screenshots", type=Path, default=None,
                        help="save a full-page PNG of every chapter page in this folder")
    args = parser.parse_args(argv)
    root = Path(args.html_root).resolve()
    if not (root / "index.html").is_file():
        print(f"{root}/index.html is missing: build the book first (memory-lab book)", file=sys.stderr)
        return 1
    return asyncio.run(check_book(root, args.chromium, args.screenshots))


if __name__ == "__main__":
    sys.exit(main())
