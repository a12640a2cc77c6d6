"""The HTML report in a real browser: headless Chromium (Debian's `chromium`) opens the pages that
`ppb partition --report` and `ppb search --report` write and checks, against the JSON documents the same
commands print with --json:

- the page renders with no console error and no uncaught exception (Runtime and Log domains);
- it has one bar per stage, every bar as tall as the memory limit, and each stage's memory parts, as
  laid out (getBoundingClientRect), as tall as memory_mb / memory_limit_mb of the bar within a pixel;
  each part's number is the document's ("memory_breakdown_mb") and the parts add up to memory_mb;
- every copy button holds exactly the document's value: the MindFormers lines are "<name>: <array>"
  as the document holds the array, and any other framework's object (e.g. "megatron", "torchtitan")
  has one button per member, a string as it is, a list of strings one per line; clicking a button puts
  that text on the clipboard;
- a search's page has one table row and one chart point per ranked configuration, the points placed
  linearly in headroom (x) and iteration time (y);
- at a phone's width (380 px) the page does not scroll sideways.

It saves screenshots (wide and narrow) next to the pages, in the build tree. Chromium is driven over
the DevTools protocol on a pipe (--remote-debugging-pipe: NUL-terminated JSON on file descriptors 3 and
4), so nothing but Python's standard library and the browser is needed, and nothing listens on a port.
A missing browser is a failure, not a skip.

Usage: browser_check.py PPB SOURCE_DIR OUT_DIR [CHROMIUM]"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-debugging-pipe", "--hide-scrollbars", "--mute-audio"]
TIMEOUT = 120.0


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Browser:
    """Chromium over --remote-debugging-pipe: commands on fd 3, replies and events on fd 4."""

    def __init__(self, executable, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def wire():
            # The pipe's ends as descriptors 3 and 4 of the browser. Copied out of the way
            # first (a pipe may itself be 3 or 4); os.dup2 makes the copies inheritable, and
            # every other descriptor of this process is not (PEP 446), so it closes on exec.
            # close_fds would close 3 and 4 after this runs.
            ours = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(ours[0], 3)
            os.dup2(ours[1], 4)

        self.process = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise Failure("Chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise Failure(f"Chromium closed the DevTools pipe: {err[-2000:]}")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Failure(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, session):
        deadline = time.monotonic() + TIMEOUT
        for i, event in enumerate(self.events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method and event.get("sessionId") == session:
                return event
            self.events.append(event)

    def close(self):
        try:
            self.send("Browser.close")
        except Failure:
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)


class Page:
    def __init__(self, browser, path, width):
        self.browser = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget",
                                    {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.resize(width)
        self.send("Page.navigate", {"url": path.as_uri()})
        browser.wait_for("Page.loadEventFired", self.session)

    def send(self, method, params=None):
        return self.browser.send(method, params, self.session)

    def resize(self, width):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})

    def evaluate(self, expression, await_promise=False):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise, "userGesture": True})
        if "exceptionDetails" in result:
            raise Failure(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self):
        """Console errors and uncaught exceptions seen so far."""
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found

    def screenshot(self, path, width):
        """The whole page as a window of `width` as tall as the page shows it (a capture beyond
        the viewport lays the page out again, not as a reader sees it)."""
        height = self.evaluate("document.documentElement.scrollHeight")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
        shot = self.send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        self.resize(width)


def ppb(executable, source, *args):
    done = subprocess.run([executable, *args], cwd=source, capture_output=True, text=True,
                          env=dict(os.environ, PPB_PLUGIN_PATH="", PPB_DEBUG_PLUGINS=""))
    check(done.returncode == 0, f"ppb {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


BARS = """JSON.stringify([...document.querySelectorAll('section.memory')].map(section =>
  [...section.querySelectorAll('.bar')].map(bar => ({
    stage: Number(bar.dataset.stage), memory: Number(bar.dataset.memoryMb),
    limit: Number(bar.dataset.limitMb), height: bar.getBoundingClientRect().height,
    parts: [...bar.querySelectorAll('.seg')].map(s => ({part: s.dataset.part, mb: Number(s.dataset.mb),
      height: s.getBoundingClientRect().height, bottom: s.getBoundingClientRect().bottom})),
    bottom: bar.getBoundingClientRect().bottom}))))"""
ABOVE_MEMORY = {"margin", "headroom", "reserved"}


def check_bars(bars, plan, where):
    stages = plan["stages"]
    limit = plan["memory_limit_mb"]
    check(len(bars) == len(stages), f"{where}: {len(bars)} bars for {len(stages)} stages")
    height = bars[0]["height"]
    check(height > 100, f"{where}: bars are {height} px tall")
    for bar, stage in zip(bars, stages):
        s = stage["stage"]
        check(bar["stage"] == s, f"{where}: bar {bar['stage']} where stage {s} should be")
        check(abs(bar["height"] - height) < 0.5, f"{where}: stage {s}'s bar is not as tall as the limit")
        check(bar["limit"] == limit and bar["memory"] == stage["memory_mb"],
              f"{where}: stage {s}'s bar carries other numbers than the document")
        memory_parts = [p for p in bar["parts"] if p["part"] not in ABOVE_MEMORY]
        drawn = sum(p["height"] for p in memory_parts)
        expected = stage["memory_mb"] / limit * height
        check(abs(drawn - expected) <= 1.0,
              f"{where}: stage {s}'s memory is drawn {drawn:.1f} px tall, {expected:.1f} px expected "
              f"({stage['memory_mb']} of {limit} MB)")
        check(abs(sum(p["mb"] for p in memory_parts) - stage["memory_mb"]) <= 1e-6 * limit,
              f"{where}: stage {s}'s parts do not add up to its memory")
        for p in bar["parts"]:
            check(abs(p["height"] - p["mb"] / limit * height) <= 1.0,
                  f"{where}: stage {s}'s {p['part']} is {p['height']:.1f} px for {p['mb']} MB")
        # Stacked bottom up, touching: each part starts where the one below ends.
        bottom = bar["bottom"]
        for p in bar["parts"]:
            check(abs(p["bottom"] - bottom) <= 1.0, f"{where}: stage {s}'s {p['part']} is not stacked")
            bottom -= p["height"]
        headroom = [p["mb"] for p in bar["parts"] if p["part"] == "headroom"]
        check(abs(sum(headroom) - max(0.0, stage["headroom_mb"])) <= 1e-9 * limit,
              f"{where}: stage {s}'s headroom is not the document's")
        breakdown = stage.get("memory_breakdown_mb")
        by_part = {p["part"]: p["mb"] for p in memory_parts}
        if breakdown and "constant" in breakdown and breakdown["constant"] >= 0:
            expected_parts = {"constant": breakdown["constant"], "head": breakdown["head"],
                              "tail": breakdown["tail"], "parameters": breakdown["parameters"],
                              **breakdown["activations"]}
            expected_parts = {k: v for k, v in expected_parts.items() if v > 0}
            check(by_part == expected_parts,
                  f"{where}: stage {s}'s parts {by_part} are not the document's {expected_parts}")


def array_text(value):
    return json.dumps(value, separators=(", ", ": "))


def expected_copies(plan):
    copies = {}
    arrays = plan.get("mindformers")
    if arrays:
        lines = [f"{name}: {array_text(value)}" for name, value in arrays.items()]
        for name, line in zip(arrays, lines):
            copies[f"mindformers.{name}"] = line
        copies["mindformers"] = "\n".join(lines)
    for key, value in plan.items():
        if key in ("mindformers", "model", "simulated", "iteration_breakdown") or \
                not isinstance(value, dict):
            continue
        for name, member in value.items():
            if isinstance(member, str):
                text = member
            elif isinstance(member, list) and member and all(isinstance(m, str) for m in member):
                text = "\n".join(member)
            else:
                text = json.dumps(member, separators=(",", ":"))
            copies[f"{key}.{name}"] = text
    return copies


def check_copies(page, plan, where):
    buttons = page.evaluate("JSON.stringify([...document.querySelectorAll('button.copy')]"
                            ".map(b => [b.dataset.key, b.dataset.copy]))")
    found = dict(json.loads(buttons))
    check(len(found) == len(json.loads(buttons)), f"{where}: two copy buttons for one member")
    expected = expected_copies(plan)
    check(found == expected, f"{where}: copy buttons {found} are not the document's {expected}")
    # Clicking copies the text (the clipboard read back).
    page.browser.send("Browser.grantPermissions",
                      {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    for key, text in expected.items():
        box = json.loads(page.evaluate(
            f"(() => {{ const b = document.querySelector('button.copy[data-key=\"{key}\"]');"
            "b.scrollIntoView({block: 'center'}); const r = b.getBoundingClientRect();"
            "return JSON.stringify([r.x + r.width / 2, r.y + r.height / 2]); })()"))
        for kind in ("mousePressed", "mouseReleased"):
            page.send("Input.dispatchMouseEvent",
                      {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})
        # The copy is asynchronous: read the clipboard once the button says it is done.
        selector = f"button.copy[data-key=\"{key}\"]"
        deadline = time.monotonic() + 10.0
        while page.evaluate(f"document.querySelector('{selector}').textContent") != "Copied":
            check(time.monotonic() < deadline, f"{where}: the {key} button never said it copied")
            time.sleep(0.05)
        copied = page.evaluate("navigator.clipboard.readText()", await_promise=True)
        check(copied == text, f"{where}: the {key} button copied {copied!r}, not {text!r}")
    return len(expected)


def check_narrow(page, where):
    page.resize(380)
    width = page.evaluate("document.documentElement.scrollWidth")
    check(width <= 380, f"{where}: at 380 px the page is {width} px wide (scrolls sideways)")


def check_page(browser, html, plans, out, name, search=None):
    page = Page(browser, html, 1200)
    where = html.name
    title = page.evaluate("document.title")
    check(title.startswith("ppb "), f"{where}: title {title!r}")
    sections = json.loads(page.evaluate(BARS))
    check(len(sections) == len(plans), f"{where}: {len(sections)} memory charts, {len(plans)} plans")
    for bars, plan in zip(sections, plans):
        check_bars(bars, plan, where)
    ops = page.evaluate("document.querySelectorAll('.timeline rect.op').length")
    check(ops > 0, f"{where}: no timeline")
    page.screenshot(out / f"{name}-wide.png", 1200)
    copies = check_copies(page, plans[0], where)
    if search is not None:
        ranking = search["ranking"]
        rows = page.evaluate("document.querySelectorAll('table.ranking tbody tr').length")
        check(rows == len(ranking), f"{where}: {rows} rows for {len(ranking)} ranked configurations")
        points = json.loads(page.evaluate(
            "JSON.stringify([...document.querySelectorAll('.scatter .point')].map(p => {"
            "const r = p.getBoundingClientRect(); return {rank: Number(p.dataset.rank),"
            "time: Number(p.dataset.iterationTime), headroom: Number(p.dataset.headroomMb),"
            "x: r.x + r.width / 2, y: r.y + r.height / 2}; }))"))
        check(sorted(p["rank"] for p in points) == [e["rank"] for e in ranking],
              f"{where}: chart points are not one per configuration")
        by_rank = {e["rank"]: e for e in ranking}
        for p in points:
            e = by_rank[p["rank"]]
            check(p["time"] == e["iteration_time"] and p["headroom"] == e["headroom_mb"],
                  f"{where}: point {p['rank']} carries other numbers than the document")
        # Linear in both axes: fit through the extremes, every point on the line within a pixel.
        for axis, value in (("x", "headroom"), ("y", "time")):
            lo = min(points, key=lambda p: p[value])
            hi = max(points, key=lambda p: p[value])
            if hi[value] == lo[value]:
                continue
            scale = (hi[axis] - lo[axis]) / (hi[value] - lo[value])
            check(scale > 0 if axis == "x" else scale < 0,
                  f"{where}: the chart's {value} axis runs the wrong way")
            for p in points:
                at = lo[axis] + scale * (p[value] - lo[value])
                check(abs(p[axis] - at) <= 1.0, f"{where}: point {p['rank']} is off its {value}")
    check_narrow(page, where)
    page.screenshot(out / f"{name}-narrow.png", 380)
    errors = page.errors()
    check(not errors, f"{where}: console errors: {errors}")
    return copies


def main():
    executable, source, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    chromium = sys.argv[4] if len(sys.argv) > 4 else (shutil.which("chromium") or "/usr/bin/chromium")
    if not Path(chromium).exists():
        print(f"FAIL: no browser at {chromium}: install Debian's chromium "
              "(samples/scripts/install-deps.sh does)")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    data = "samples/data/"
    # A fitted linear model (every part itemised), 1F1B, and the analytic model (no coefficients:
    # activations probed, the rest not itemised) with interleaved chunks.
    plan_runs = {
        "plan-dryrun-lsq": ["--model-desc", data + "llama70b-layers.json", "--dryrun",
                            data + "llama70b-pp8-dryrun.json", "--stages", "8", "--micro-batches",
                            "32", "--memory-limit-mb", "30000"],
        "plan-analytic-interleaved": ["--model-desc", data + "llama70b-layers.json", "--model",
                                      "analytic", "--model-options", data + "llama70b-shape.json",
                                      "--stages", "4", "--micro-batches", "64", "--memory-limit-mb",
                                      "80000", "--schedule", "interleaved", "--recompute-rule", "any",
                                      "--memory-margin-mb", "2000"],
    }
    search_args = ["--model-desc", data + "llama70b-layers.json", "--model", "analytic",
                   "--model-options", data + "llama70b-shape.json", "--devices", "64",
                   "--global-batch", "256", "--memory-limit-mb", "80000", "--recompute", "any,full"]
    with tempfile.TemporaryDirectory(prefix="ppb-chromium-") as profile:
        browser = Browser(chromium, profile)
        try:
            for name, args in plan_runs.items():
                html = (out / f"{name}.html").resolve()
                plan = json.loads(ppb(executable, source, "partition", *args, "--json",
                                      "--report", str(html)))
                copies = check_page(browser, html, [plan], out, name)
                print(f"{name}: {len(plan['stages'])} bars as the document says, {copies} copy buttons")
            html = (out / "search.html").resolve()
            search = json.loads(ppb(executable, source, "search", *search_args, "--top", "0", "--json",
                                    "--report", str(html)))
            check(len(search["ranking"]) > 3, "the search ranks too few configurations to test")
            copies = check_page(browser, html, [search["ranking"][0]["plan"]], out, "search", search)
            print(f"search: {len(search['ranking'])} configurations in the table and the chart, "
                  f"{copies} copy buttons")
        finally:
            browser.close()
    print(f"screenshots in {out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(f"FAIL: {failure}")
        sys.exit(1)
