"""The HTML report in a real browser: headless Chromium (Debian's `chromium`) opens the pages that
`ppb partition --report` and `ppb search --report` write and checks them against the JSON documents
and the text the same commands print:

- the page renders with no console error and no uncaught exception (Runtime and Log domains);
- it has one bar per stage, every bar as tall as the memory limit, and each stage's memory parts, as
  laid out (getBoundingClientRect), as tall as memory_mb / memory_limit_mb of the bar within a pixel;
  each part's number is the document's ("memory_breakdown_mb": the fit's coefficients, or the model's
  own terms, "parts") and the parts add up to memory_mb; a model that gives its terms (the analytic
  model) has no part left "not broken down";
- each framework's configuration block holds exactly what `ppb partition` prints for it (its text
  output, the title's lines with their two-space indent taken off), or the same reason why the
  framework cannot run the plan; the configuration section shows no `null` and no member name of the
  document outside the configuration text itself; every copy button holds and (read back from the
  clipboard) copies exactly its block;
- at 380, 800 and 1400 px the page does not scroll sideways, the configuration blocks wrap (none is
  wider than its box), and the timeline's text is at least 11 px on screen (its font size in the
  SVG's units times the SVG's scale); at 800 px the timeline fits the column without scrolling;
- a search's page has one table row and one chart point per ranked configuration, the points placed
  linearly in headroom (x) and iteration time (y), and its best plan's configuration is what
  `ppb partition` prints for that configuration.

It saves a screenshot of every page at each width (NAME-380.png, NAME-800.png, NAME-1400.png) next to
the pages, in the build tree. Chromium is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: NUL-terminated JSON on file descriptors 3 and 4), so nothing but Python's
standard library and the browser is needed, and nothing listens on a port. A missing browser is a
failure, not a skip.

Usage: browser_check.py PPB SOURCE_DIR OUT_DIR [CHROMIUM]"""

import base64
import json
import os
import re
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


WIDTHS = (380, 800, 1400)
LEGIBLE_PX = 11.0  # the least size of the timeline's text on screen

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
        expected_parts = None
        if breakdown and "parts" in breakdown:
            # The model's own terms, in its order: every one drawn, nothing left unexplained.
            expected_parts = {p["name"]: p["mb"] for p in breakdown["parts"] if p["mb"] > 0}
            check([p["part"] for p in memory_parts] ==
                  [p["name"] for p in breakdown["parts"] if p["mb"] > 0],
                  f"{where}: stage {s}'s parts are not stacked in the model's order")
        elif breakdown and "constant" in breakdown and breakdown["constant"] >= 0:
            expected_parts = {"constant": breakdown["constant"], "head": breakdown["head"],
                              "tail": breakdown["tail"], "parameters": breakdown["parameters"],
                              **breakdown["activations"]}
            expected_parts = {k: v for k, v in expected_parts.items() if v > 0}
        if expected_parts is not None:
            check(by_part == expected_parts,
                  f"{where}: stage {s}'s parts {by_part} are not the document's {expected_parts}")


def text_blocks(text):
    """`ppb partition`'s configuration blocks: each title line ending in ':' at the start of a line,
    with the lines under it indented by two spaces (the indent taken off)."""
    blocks = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.endswith(":") or line.startswith(" ") or i + 1 >= len(lines) or \
                not lines[i + 1].startswith("  "):
            continue
        body = []
        for under in lines[i + 1:]:
            if not under.startswith("  "):
                break
            body.append(under[2:])
        blocks[line[:-1]] = "\n".join(body)
    return blocks


CONFIGS = """JSON.stringify([...document.querySelectorAll('section.configuration .config')].map(c => {
  const pre = c.querySelector('pre'); const why = c.querySelector('.why-not');
  const button = c.querySelector('button.copy');
  return {framework: c.dataset.framework, title: c.querySelector('h3').textContent,
          text: pre ? pre.textContent : null, why: why ? why.textContent : null,
          copy: button ? button.dataset.copy : null}; }))"""

# The configuration section's words outside the configuration text itself (its blocks).
PROSE = """(() => { const section = document.querySelector('section.configuration').cloneNode(true);
  section.querySelectorAll('pre, button').forEach(e => e.remove()); return section.textContent; })()"""


# Members of the document named as the frameworks name their own settings (torchtitan's TOML
# tables and keys, MindFormers' YAML keys): a title or reason may name them as the framework does.
FRAMEWORK_KEYS = {"activation_checkpoint", "selective_ac_option", "module_fqns_per_model_part",
                  "pipeline_parallel_schedule", "pipeline_parallel_degree", "select_recompute",
                  "select_comm_recompute"}


def member_names(value, names=None):
    names = set() if names is None else names
    if isinstance(value, dict):
        for key, member in value.items():
            names.add(key)
            member_names(member, names)
    elif isinstance(value, list):
        for member in value:
            member_names(member, names)
    return names


def check_configuration(page, plan, text, where):
    """The configuration blocks against ppb's text output for the same plan (`ppb partition`'s,
    or for a search's best configuration the search's own block for rank 1)."""
    configs = json.loads(page.evaluate(CONFIGS))
    expected = text_blocks(text)
    frameworks = [t for t in expected if "configuration" in t or "flags" in t or
                  "Megatron-LM" in t or t.startswith("torchtitan")]
    check([c["title"] for c in configs] == frameworks,
          f"{where}: configuration blocks {[c['title'] for c in configs]}, the text has {frameworks}")
    for c in configs:
        printed = expected[c["title"]]
        if c["text"] is not None:
            check(c["text"] == printed, f"{where}: {c['title']} shows {c['text']!r}, ppb prints "
                                        f"{printed!r}")
            check(c["copy"] == printed, f"{where}: {c['title']}'s button holds {c['copy']!r}")
        else:
            check(printed.startswith("none (") and printed.endswith(")") and "\n" not in printed,
                  f"{where}: {c['title']} has no block where ppb prints {printed!r}")
            check(c["why"] == f"None: {printed[len('none ('):-1]}.",
                  f"{where}: {c['title']} says {c['why']!r} where ppb prints {printed!r}")
    # Nothing null, no member name of the document in the words around the blocks.
    prose = page.evaluate(PROSE)
    check(re.search(r"\bnull\b", page.evaluate(
        "document.querySelector('section.configuration').textContent")) is None,
          f"{where}: the configuration section shows null")
    names = {n for n in member_names({k: v for k, v in plan.items() if k != "stages"}) if "_" in n}
    shown = (names - FRAMEWORK_KEYS) & set(re.findall(r"[A-Za-z0-9_]+", prose))
    check(not shown, f"{where}: the configuration section names the document's members {shown}")
    return configs


def click_copies(page, configs, where):
    page.browser.send("Browser.grantPermissions",
                      {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    copies = 0
    for c in configs:
        if c["copy"] is None:
            continue
        selector = f"section.configuration .config[data-framework=\"{c['framework']}\"] button.copy"
        box = json.loads(page.evaluate(
            f"(() => {{ const b = document.querySelector('{selector}');"
            "b.scrollIntoView({block: 'center'}); const r = b.getBoundingClientRect();"
            "return JSON.stringify([r.x + r.width / 2, r.y + r.height / 2]); })()"))
        for kind in ("mousePressed", "mouseReleased"):
            page.send("Input.dispatchMouseEvent",
                      {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})
        # The copy is asynchronous: read the clipboard once the button says it is done.
        deadline = time.monotonic() + 10.0
        while page.evaluate(f"document.querySelector('{selector}').textContent") != "Copied":
            check(time.monotonic() < deadline, f"{where}: the {c['title']} button never said it copied")
            time.sleep(0.05)
        copied = page.evaluate("navigator.clipboard.readText()", await_promise=True)
        check(copied == c["copy"], f"{where}: the {c['title']} button copied {copied!r}, "
                                   f"not {c['copy']!r}")
        copies += 1
    return copies


TIMELINE_TEXT = """JSON.stringify((() => {
  const svg = document.querySelector('section.timeline svg');
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const box = svg.closest('.scroll');
  const sizes = [...svg.querySelectorAll('text')].map(t =>
    parseFloat(getComputedStyle(t).fontSize) * scale);
  return {scale: scale, smallest: Math.min(...sizes), count: sizes.length,
          scrolls: box.scrollWidth > box.clientWidth + 1}; })())"""

WIDER_THAN_BOX = """JSON.stringify([...document.querySelectorAll('section.configuration pre')]
  .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 60)))"""


def check_width(page, width, out, name, where):
    page.resize(width)
    scroll = page.evaluate("document.documentElement.scrollWidth")
    check(scroll <= width, f"{where}: at {width} px the page is {scroll} px wide (scrolls sideways)")
    unwrapped = json.loads(page.evaluate(WIDER_THAN_BOX))
    check(not unwrapped, f"{where}: at {width} px these blocks do not wrap: {unwrapped}")
    timeline = json.loads(page.evaluate(TIMELINE_TEXT))
    check(timeline["count"] > 0, f"{where}: the timeline has no text")
    check(timeline["smallest"] >= LEGIBLE_PX - 0.01,
          f"{where}: at {width} px the timeline's text is {timeline['smallest']:.2f} px "
          f"(scale {timeline['scale']:.3f}), under {LEGIBLE_PX} px")
    if width == 800:
        check(not timeline["scrolls"], f"{where}: at 800 px the timeline does not fit the column")
    page.screenshot(out / f"{name}-{width}.png", width)
    return timeline


def check_page(browser, html, plan, text, out, name, search=None):
    page = Page(browser, html, 1400)
    where = html.name
    title = page.evaluate("document.title")
    check(title.startswith("ppb "), f"{where}: title {title!r}")
    sections = json.loads(page.evaluate(BARS))
    check(len(sections) == 1, f"{where}: {len(sections)} memory charts, 1 plan")
    check_bars(sections[0], plan, where)
    ops = page.evaluate("document.querySelectorAll('.timeline rect.op').length")
    check(ops > 0, f"{where}: no timeline")
    configs = check_configuration(page, plan, text, where)
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
    fonts = {}
    for width in WIDTHS:
        fonts[width] = check_width(page, width, out, name, where)["smallest"]
    # After the screenshots, which show the buttons as a reader first sees them.
    copies = click_copies(page, configs, where)
    errors = page.errors()
    check(not errors, f"{where}: console errors: {errors}")
    return copies, fonts


def main():
    executable, source, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    chromium = sys.argv[4] if len(sys.argv) > 4 else (shutil.which("chromium") or "/usr/bin/chromium")
    if not Path(chromium).exists():
        print(f"FAIL: no browser at {chromium}: install Debian's chromium "
              "(samples/scripts/install-deps.sh does)")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    data = "samples/data/"
    # A layer file of our own (the table model) whose fastest plan under --recompute-rule any mixes
    # 'select' and 'comm' layers on a stage: no MindFormers arrays build it.
    mixed_layers = (out / "select-comm-layers.json").resolve()
    mixed_layers.write_text(json.dumps({"stage_const_mem": 1000, "layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 10, "memory_parameter": 2000},
        {"name": "decoder", "type": "BODY", "nb_layer": 12, "time": 10, "backward_coef": 0,
         "select_rec_coef": 0.05, "select_comm_coef": 0.3, "both_comm_select_coef": 0.35,
         "recompute_coef": 1.0, "memory_parameter": 500, "memory_activation": 1000,
         "memory_select_rec": 600, "memory_select_comm": 300, "memory_both_comm_select": 250,
         "memory_recompute": 20},
        {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 10, "memory_parameter": 2000}]}))
    fitted = ["--model-desc", data + "llama70b-layers.json", "--dryrun", data + "llama70b-pp8-dryrun.json",
              "--stages", "8", "--micro-batches", "32", "--memory-limit-mb", "30000"]
    # A fitted linear model (every part its coefficients') under MindFormers' rule and Megatron's;
    # the analytic model (its own terms) with interleaved chunks under torchtitan's, with a margin;
    # a plan MindFormers cannot build.
    plan_runs = {
        "plan-mindformers": fitted,
        # Megatron's rule where its older flags give the plan (--decoder-first/last-...), and
        # where they cannot and the plan recomputes by Megatron's block method, which torchtitan's
        # one activation checkpointing setting cannot.
        "plan-megatron": fitted[:-1] + ["24000", "--recompute-rule", "megatron"],
        "plan-megatron-block": fitted[:-1] + ["25000", "--recompute-rule", "megatron"],
        "plan-torchtitan-analytic": [
            "--model-desc", data + "llama70b-layers.json", "--model", "analytic", "--model-options",
            data + "llama70b-shape.json", "--stages", "4", "--micro-batches", "64",
            "--memory-limit-mb", "80000", "--schedule", "interleaved", "--recompute-rule", "torchtitan",
            "--memory-margin-mb", "2000"],
        "plan-mixed-kinds": ["--model-desc", str(mixed_layers), "--model", "table", "--model-options",
                             str(mixed_layers), "--stages", "2", "--micro-batches", "4",
                             "--memory-limit-mb", "9000", "--kinds", "select,comm",
                             "--recompute-rule", "any"],
    }
    shape = json.loads((source / data / "llama70b-shape.json").read_text())
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
                text = ppb(executable, source, "partition", *args)
                if name == "plan-torchtitan-analytic":
                    check(all("parts" in s["memory_breakdown_mb"] for s in plan["stages"]),
                          f"{name}: the analytic model's stages are not broken into its terms")
                if name == "plan-mixed-kinds":
                    check(plan["mindformers"] is None, f"{name}: MindFormers can build this plan")
                if name == "plan-megatron":
                    check(plan["megatron"]["legacy_args"] is not None,
                          f"{name}: no flags for Megatron before the layout flag")
                if name == "plan-megatron-block":
                    check(plan["torchtitan"]["activation_checkpoint"] is None,
                          f"{name}: torchtitan can checkpoint this plan's activations")
                copies, fonts = check_page(browser, html, plan, text, out, name)
                print(f"{name}: {len(plan['stages'])} bars as the document says, configuration as "
                      f"ppb prints it, {copies} copy buttons; timeline text "
                      + ", ".join(f"{size:.1f} px at {w}" for w, size in fonts.items()))
            html = (out / "search.html").resolve()
            search = json.loads(ppb(executable, source, "search", *search_args, "--top", "0", "--json",
                                    "--report", str(html)))
            check(len(search["ranking"]) > 3, "the search ranks too few configurations to test")
            # The best configuration planned by itself: its options with the configuration's data
            # parallel degree, its pipeline, micro-batches, schedule and recompute kinds.
            best = search["ranking"][0]
            options = (out / "best-shape.json").resolve()
            options.write_text(json.dumps(dict(shape, data_parallel=best["data_parallel"])))
            best_args = ["--model-desc", data + "llama70b-layers.json", "--model", "analytic",
                         "--model-options", str(options), "--stages", str(best["pipeline_parallel"]),
                         "--micro-batches", str(best["micro_batches"]), "--schedule", best["schedule"],
                         "--chunks", str(best["chunks"]), "--kinds", ",".join(best["recompute_kinds"]),
                         "--memory-limit-mb", str(search["search"]["memory_limit_mb"]),
                         "--recompute-rule", search["search"]["recompute_rule"]]
            alone = json.loads(ppb(executable, source, "partition", *best_args, "--json"))
            check([s["layers"] for s in alone["stages"]] == [s["layers"] for s in best["plan"]["stages"]],
                  "the search's best plan is not the plan of its configuration by itself")
            # Its configuration blocks as the search prints them for rank 1: the plan's, each
            # framework's with the configuration's degrees and batch.
            copies, fonts = check_page(browser, html, best["plan"],
                                       ppb(executable, source, "search", *search_args, "--top", "0"),
                                       out, "search", search)
            print(f"search: {len(search['ranking'])} configurations in the table and the chart, "
                  f"{copies} copy buttons; timeline text "
                  + ", ".join(f"{size:.1f} px at {w}" for w, size in fonts.items()))
        finally:
            browser.close()
    print(f"screenshots in {out}: " + ", ".join(f"NAME-{w}.png" for w in WIDTHS))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(f"FAIL: {failure}")
        sys.exit(1)
