#!/usr/bin/env python3
"""Checks an ftbench HTML report in headless Chromium (Python 3 standard library only).

Usage: check_html_report.py PAGE.html --out RESULT.json [--screenshot SHOT.png]
                            [--timeout 60] [--chromium /usr/bin/chromium]

Chromium is driven over --remote-debugging-pipe (DevTools protocol, NUL-terminated JSON
on fds 3 and 4). It starts on about:blank and is sent to the page once the console, the
browser log and the network are being recorded.

The page contract checked:
  * one offline file: it requests nothing but file:, data:, blob:, about: URLs (the
    browser's proxy is a closed local port, so no request reaches a network anyway);
  * it sets document.documentElement.dataset.ftbenchReady to "1" once every chart is
    drawn, or to "error: <message>" when its own script failed;
  * window.ftbench = {data: <parsed #ftbench-data JSON>, charts: {<id>: <Chart>, ...}}
    holds at least one chart, and each chart's canvas is the document's #<id>;
  * no console.error / console.warn / console.assert, no uncaught exception, no
    error-level browser log entry (e.g. a resource that failed to load);
  * every chart painted a non-transparent pixel on its canvas, and one with data drew some of
    it (its canvas changes when every dataset is hidden), and the full-page
    screenshot has more than 16 distinct colours (a blank page has 1-2);
  * the headline (#headline: time, tokens/s, cost, MFU) comes before every other section and
    chart;
  * no dollar figure breaks over two lines, at 1400 px and at a phone's 360 px.

RESULT.json: {"page", "ready" (the ftbenchReady string, null if never set),
"console_errors", "exceptions", "network_requests" (lists of strings), "charts": [{"id",
"type", "labels", "datasets": [{"label", "data"}], "canvas": {"id", "width", "height",
"in_document"}, "ticks": {<scale>: [{"value", "label"}]}, "painted_pixels", "data_pixels"
(pixels that change when every dataset is hidden: what the data drew), "error"}], "data"
(window.ftbench.data), "headline": {"present", "first", "figures": [{"report", "figure",
"value", "text"}]}, "dollars": {<width>: {"checked", "wrapped"}}, "screenshot": {"width",
"height", "distinct_colours"}, "chromium_version", "elapsed_s", "problems"}.

Exit status: 0 every check passed; 1 a check failed or Chromium failed (one line per
problem on stderr); 2 bad usage, or the page or Chromium missing. Chromium's whole
process group is killed before exit, also on timeout, error or SIGTERM. --timeout bounds
Chromium's start plus the wait for ftbenchReady, and then each DevTools call on its own.
"""
import argparse, base64, ctypes, json, os, pathlib, select, shutil, signal, struct
import subprocess, sys, tempfile, time, zlib

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
# Browser log entries ignored on purpose, by URL suffix (nothing else is ignored):
IGNORED_LOG_URL_SUFFIXES = ("/favicon.ico",)  # Chromium may look for one next to a file:// page
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--window-size=1400,1000", "--hide-scrollbars", "--mute-audio", "--disable-breakpad",
    "--disable-dev-shm-usage",  # containers often have a small /dev/shm
    # No network: no background traffic, and whatever the page requests goes to a proxy
    # at a closed local port and fails (it is still recorded, and is a problem).
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-domain-reliability", "--no-pings",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]
# Every chart, window.ftbench.data, and how many canvas pixels are not transparent.
READ_BACK_JS = r"""(() => {
  const plain = v => JSON.parse(JSON.stringify(v === undefined ? null : v));
  const f = window.ftbench, charts = [];
  if (!f || typeof f !== "object") return {missing: true, charts: [], data: null};
  for (const [id, c] of Object.entries(f.charts || {})) {
    const r = {id, type: null, labels: [], datasets: [], canvas: null, ticks: {}, painted_pixels: 0,
               data_pixels: 0, error: null};
    try {
      r.type = c.config.type || (c.config._config && c.config._config.type) || null;
      r.labels = plain(c.data.labels || []);
      r.datasets = (c.data.datasets || []).map(d => ({label: plain(d.label), data: plain(d.data || [])}));
      const cv = c.canvas; r.canvas = {id: cv.id, width: cv.width, height: cv.height, in_document: document.getElementById(id) === cv};
      r.ticks = Object.fromEntries(Object.entries(c.scales).map(([k, sc]) => [k,
        sc.ticks.map(t => ({value: t.value, label: plain(t.label)}))]));
      if (cv.width > 0 && cv.height > 0) {
        const image = () => cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
        const px = image();
        for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) r.painted_pixels++;
        // What the data drew: the pixels that change when every dataset is hidden, with the
        // legend off and each scale held at its range (so only the data can change), counted;
        // then the chart is put back as it was.
        const o = c.options, saved = {legend: o.plugins.legend.display, scales: {}};
        for (const [k, sc] of Object.entries(c.scales)) {
          saved.scales[k] = [o.scales[k].min, o.scales[k].max];
          o.scales[k].min = sc.min; o.scales[k].max = sc.max;
        }
        o.plugins.legend.display = false;
        c.update("none");
        const drawn = image();
        const shown = c.data.datasets.map((_, i) => c.isDatasetVisible(i));
        shown.forEach((_, i) => c.setDatasetVisibility(i, false));
        c.update("none");
        const bare = image();
        shown.forEach((v, i) => c.setDatasetVisibility(i, v));
        o.plugins.legend.display = saved.legend;
        for (const [k, [min, max]] of Object.entries(saved.scales)) {
          o.scales[k].min = min; o.scales[k].max = max;
        }
        c.update("none");
        for (let i = 0; i < drawn.length; i += 4) {
          if (drawn[i] !== bare[i] || drawn[i + 1] !== bare[i + 1] || drawn[i + 2] !== bare[i + 2] ||
              drawn[i + 3] !== bare[i + 3]) r.data_pixels++;
        }
      }
    } catch (e) { r.error = String(e); }
    charts.push(r);
  }
  return {missing: false, charts, data: plain(f.data)};
})()"""
# The headline: where it is (before every other section and chart) and its figures, each an
# element with data-report, data-figure and data-value (the exact number, "" when none).
HEADLINE_JS = r"""(() => {
  const h = document.getElementById("headline");
  if (!h) return {present: false, first: false, figures: []};
  const others = [...document.querySelectorAll("main section, canvas")].filter(e => e !== h && !h.contains(e));
  const first = others.every(e => (h.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0);
  const figures = [...h.querySelectorAll("[data-figure]")].map(e => ({report: e.dataset.report,
    figure: e.dataset.figure, value: e.dataset.value, text: e.textContent}));
  return {present: true, first, figures};
})()"""
# Every dollar figure shown ("$0.891", "$1,234.50") and whether its characters lie on more than
# one line: a figure broken mid-number. Text without a box (scripts, closed details) is skipped.
DOLLARS_JS = r"""(() => {
  const wrapped = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let checked = 0;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    for (const m of n.data.matchAll(/\$\d[\d,]*(?:\.\d+)?/g)) {
      const range = document.createRange();
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      const rects = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
      if (!rects.length) continue;
      checked++;
      const lines = new Set(rects.map(r => Math.round(r.top))).size;
      if (lines > 1) wrapped.push(`${m[0]} over ${lines} lines in "${n.data.slice(0, 60)}"`);
    }
  }
  return {checked, wrapped};
})()"""
NARROW_WIDTH = 360  # a phone's viewport, in CSS pixels: where tables squeeze their cells
LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


class CdpError(Exception):  # a protocol error reply, a timeout, or Chromium going away
    pass


class Cdp:
    """Minimal DevTools client on the pipe; events go to on_event as they arrive."""

    def __init__(self, write_fd, read_fd, on_event, timeout):
        self.write_fd, self.read_fd, self.on_event, self.timeout = write_fd, read_fd, on_event, timeout
        self.buf, self.next_id, self.replies = bytearray(), 0, {}

    def pump(self, deadline):
        """Reads what Chromium sent: replies are stored, events dispatched."""
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
            raise CdpError("timed out waiting for Chromium")
        chunk = os.read(self.read_fd, 1 << 20)
        if not chunk:
            raise CdpError("Chromium closed the DevTools pipe (it exited or crashed)")
        self.buf += chunk
        while (end := self.buf.find(b"\0")) >= 0:
            msg = json.loads(self.buf[:end])
            del self.buf[:end + 1]
            if "id" in msg:
                self.replies[msg["id"]] = msg
            else:
                self.on_event(msg)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg_id, msg = self.next_id, {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.write_fd, data):]
        except BrokenPipeError:
            raise CdpError("Chromium closed the DevTools pipe (it exited or crashed)") from None
        deadline = time.monotonic() + self.timeout
        while msg_id not in self.replies:
            self.pump(deadline)
        reply = self.replies.pop(msg_id)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})


def where(d):
    """' (url:line)' of a console call, exception or log entry, when known."""
    frame = ((d.get("stackTrace") or {}).get("callFrames") or [d])[0]
    line = frame.get("lineNumber")
    return f" ({frame['url']}{f':{line + 1}' if isinstance(line, int) else ''})" if frame.get("url") else ""


def make_recorder(result):
    """The event handler: fills console_errors, exceptions and network_requests."""
    def on_event(msg):
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            text = " ".join(str(a.get("value", a.get("description", a.get("type")))) for a in p.get("args", []))
            kind = "warn" if p["type"] == "warning" else p["type"]
            result["console_errors"].append(f"console.{kind}: {text}{where(p)}")
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            text = (d.get("exception") or {}).get("description") or d.get("text") or "?"
            result["exceptions"].append(f"{text.splitlines()[0]}{where(d)}")  # first line; where() locates it
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            if not (e.get("url") or "").endswith(IGNORED_LOG_URL_SUFFIXES):
                result["console_errors"].append(f"log.{e.get('source')}: {e.get('text')}{where(e)}")
        elif method == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if not url.startswith(LOCAL_SCHEMES):
                result["network_requests"].append(f"{p['request'].get('method')} {url}")
        elif method == "Inspector.targetCrashed":
            result["exceptions"].append("the page's renderer crashed")
    return on_event


def launch(chromium, profile):
    """Starts Chromium in a process group of its own, the DevTools pipe on fds 3 and 4."""
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()

    def in_child():  # runs between fork and exec
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # if this script is SIGKILLed, so is Chromium
        src_r, src_w = os.dup(to_chrome_r), os.dup(from_chrome_w)  # copies first: 3/4 may be taken
        os.dup2(src_r, 3)
        os.dup2(src_w, 4)
        os.set_inheritable(3, True)  # dup2 onto the same fd would leave close-on-exec set
        os.set_inheritable(4, True)

    LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphaned helpers become ours to reap (see stop)
    with open(os.path.join(profile, "chromium.log"), "wb") as log:
        try:
            proc = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    close_fds=False, preexec_fn=in_child, start_new_session=True)
        finally:
            os.close(to_chrome_r)
            os.close(from_chrome_w)
    return proc, to_chrome_w, from_chrome_r


def stop(proc):
    """Kills Chromium's whole process group and waits (at most 5 s) until it is gone."""
    os.killpg(proc.pid, signal.SIGKILL)  # zygote, renderers, GPU process: all in the group
    proc.wait()  # (the group exists until then: the unreaped browser is still in it)
    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            while os.waitpid(-proc.pid, os.WNOHANG)[0]:  # helpers orphaned to us (subreaper)
                pass
        except ChildProcessError:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # any member left, zombies included, keeps the group
        except ProcessLookupError:
            return
        time.sleep(0.02)


def evaluate(cdp, session, expression, await_promise=False):
    r = cdp.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                      "awaitPromise": await_promise}, session)
    if "exceptionDetails" in r:
        raise CdpError(f"evaluating {expression[:40]!r} failed: {r['exceptionDetails'].get('text')}")
    return r.get("result", {}).get("value")


def wait_ready(cdp, session, deadline):
    """Polls dataset.ftbenchReady until set; returns it, or None at the deadline."""
    while time.monotonic() < deadline:
        try:
            value = evaluate(cdp, session, "document.documentElement.dataset.ftbenchReady || ''")
            if value:
                return value
        except CdpError:
            pass  # mid-navigation the context can vanish; only the deadline ends the wait
        time.sleep(0.1)
    return None


def screenshot(cdp, session):
    """PNG of the whole page (at most 16384 px each way) at scale 1. The viewport is made as tall
    as the page first (captureBeyondViewport alone leaves the charts below the fold as their
    canvases were, blank or half-sized), and the page given two frames to redraw."""
    size = cdp.call("Page.getLayoutMetrics", session=session)
    content = size.get("cssContentSize") or size["contentSize"]
    width = max(1, min(int(content["width"]), 16384))
    height = max(1, min(int(content["height"]), 16384))
    cdp.call("Emulation.setDeviceMetricsOverride",
             {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
    cdp.call("Runtime.evaluate", {"expression": "new Promise(r => requestAnimationFrame(() => "
                                                "requestAnimationFrame(() => r(1))))",
                                  "awaitPromise": True}, session)
    shot = cdp.call("Page.captureScreenshot", {"format": "png"}, session)
    return base64.b64decode(shot["data"])


def png_rows(png):
    """Decodes an 8-bit RGB/RGBA, non-interlaced PNG: (width, height, bytes per pixel, rows)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("the screenshot is not a PNG")
    pos, idat, header = 8, bytearray(), (0,) * 7  # no IHDR: rejected below as bit depth 0
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", png[pos + 8:pos + 21])
        elif kind == b"IDAT":
            idat += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: bit depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = 3 if colour == 2 else 4
    return width, height, bpp, unfilter(zlib.decompress(idat), width * bpp, height, bpp)


def unfilter(raw, stride, height, bpp):
    """Undoes the PNG row filters: 0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth."""
    rows, prev = [], bytearray(stride)
    low7, high = int.from_bytes(b"\x7f" * stride, "big"), int.from_bytes(b"\x80" * stride, "big")
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:  # bytewise add of whole rows as big integers, without carries between bytes
            x, p = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
            line = bytearray((((x & low7) + (p & low7)) ^ ((x ^ p) & high)).to_bytes(stride, "big"))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + (((line[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a, b, c = (line[i - bpp], prev[i], prev[i - bpp]) if i >= bpp else (0, prev[i], 0)
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif kind != 0:
            raise ValueError(f"bad PNG filter type {kind} in row {y}")
        rows.append(line)
        prev = line
    return rows


def distinct_colours(png):
    width, height, bpp, rows = png_rows(png)
    pixels = b"".join(rows)
    colours = set(memoryview(pixels).cast("I")) if bpp == 4 else set(zip(*[iter(pixels)] * 3))
    return {"width": width, "height": height, "distinct_colours": len(colours)}


def chart_problems(back):
    if back["missing"]:
        return ["window.ftbench is missing"]
    if not back["charts"]:
        return ["window.ftbench.charts holds no chart"]
    problems = []
    for c in back["charts"]:
        if c["error"]:
            problems.append(f"chart {c['id']}: reading it back failed: {c['error']}")
            continue
        cv = c["canvas"]
        if cv["id"] != c["id"] or not cv["in_document"]:
            problems.append(f"chart {c['id']}: its canvas (id {cv['id']!r}) is not the document's #{c['id']}")
        if c["painted_pixels"] == 0:
            problems.append(f"chart {c['id']}: painted nothing (no non-transparent pixel on its "
                            f"{cv['width']}x{cv['height']} canvas)")
        has_data = any(v is not None and (not isinstance(v, dict) or v.get("y") is not None)
                       for d in c["datasets"] for v in d["data"])
        if has_data and c["data_pixels"] == 0:
            problems.append(f"chart {c['id']}: its data drew nothing (the canvas is the same with "
                            f"every dataset hidden)")
    return problems


def inspect_page(cdp, url, result, deadline, shot_path):
    """Opens the page in a new target, fills result; returns the problems found."""
    result["chromium_version"] = cdp.call("Browser.getVersion").get("product")
    target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Page", "Network", "Inspector"):
        cdp.call(f"{domain}.enable", session=session)
    nav = cdp.call("Page.navigate", {"url": url}, session)
    if nav.get("errorText"):
        return [f"page did not load: {nav['errorText']}"]
    problems = []
    result["ready"] = wait_ready(cdp, session, deadline)
    if result["ready"] is None:
        problems.append(f"page not ready: dataset.ftbenchReady still unset after the {cdp.timeout:g} s timeout")
    elif result["ready"] != "1":
        problems.append(f"page reported ftbenchReady = {result['ready']!r}")
    # Two animation frames, so that whatever the page drew last is on screen.
    evaluate(cdp, session, "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))", True)
    back = evaluate(cdp, session, READ_BACK_JS)
    result["charts"], result["data"] = back["charts"], back["data"]
    problems += chart_problems(back)
    result["headline"] = evaluate(cdp, session, HEADLINE_JS)
    if not result["headline"]["present"]:
        problems.append("no headline (#headline) on the page")
    elif not result["headline"]["first"]:
        problems.append("the headline is not before every other section and chart")
    png = screenshot(cdp, session)
    if shot_path:
        pathlib.Path(shot_path).write_bytes(png)
    result["screenshot"] = distinct_colours(png)
    if result["screenshot"]["distinct_colours"] <= 16:
        problems.append(f"screenshot has only {result['screenshot']['distinct_colours']} distinct colours")
    problems += dollar_problems(cdp, session, result)
    return problems


def dollar_problems(cdp, session, result):
    """Dollar figures at the page's width and at a phone's: none may break over two lines."""
    result["dollars"] = {}
    priced = any(r["cost"]["offers"] for r in (result["data"] or {}).get("reports", []))
    problems = []
    for width in (1400, NARROW_WIDTH):
        cdp.call("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session)
        evaluate(cdp, session, "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))", True)
        found = result["dollars"][str(width)] = evaluate(cdp, session, DOLLARS_JS)
        if priced and found["checked"] == 0:
            problems.append(f"at {width} px: no dollar figure shown, though offers are priced")
        problems += [f"at {width} px: a dollar figure wraps: {w}" for w in found["wrapped"]]
    return problems


def check(args, chromium, page):
    """Runs Chromium on the page; returns (result, problems). Chromium is always killed."""
    started = time.monotonic()
    result = {"page": page.as_uri(), "ready": None, "console_errors": [], "exceptions": [],
              "network_requests": [], "charts": [], "data": None, "headline": None, "dollars": None,
              "screenshot": None, "chromium_version": None}
    profile, proc = tempfile.mkdtemp(prefix="ftbench-chromium-"), None
    try:
        proc, write_fd, read_fd = launch(chromium, profile)
        cdp = Cdp(write_fd, read_fd, make_recorder(result), args.timeout)
        problems = inspect_page(cdp, page.as_uri(), result, started + args.timeout, args.screenshot)
    except (CdpError, OSError, ValueError, KeyError, struct.error, zlib.error) as e:
        log = pathlib.Path(profile, "chromium.log")
        tail = log.read_text(errors="replace")[-1500:].strip() if log.exists() else ""
        problems = [f"check aborted: {type(e).__name__}: {e}"] + ([f"chromium output ends: {tail!r}"] if tail else [])
    finally:
        if proc:
            stop(proc)
            os.close(write_fd)
            os.close(read_fd)
        shutil.rmtree(profile, ignore_errors=True)
    problems = ([f"console: {m}" for m in result["console_errors"]] + [f"exception: {m}" for m in result["exceptions"]]
                + [f"outside request: {m}" for m in result["network_requests"]] + problems)
    result["elapsed_s"], result["problems"] = round(time.monotonic() - started, 2), problems
    return result, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", help="the report's .html file")
    ap.add_argument("--out", required=True, help="where RESULT.json goes")
    ap.add_argument("--screenshot", help="where the full-page PNG goes")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds for start-up and the page to be ready")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()  # exits 2 on bad usage
    page, out_dir = pathlib.Path(args.page).resolve(), pathlib.Path(args.out).resolve().parent
    chromium = shutil.which(args.chromium)  # a name is looked up on PATH, a path checked as is
    for bad, what in ((not chromium, f"Chromium not found or not executable: {args.chromium}"),
                      (not page.is_file(), f"no such page: {page}"), (args.timeout <= 0, "--timeout must be > 0"),
                      (not out_dir.is_dir(), f"no directory for --out: {out_dir}")):
        if bad:
            print(f"check_html_report: {what}", file=sys.stderr)
            return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # unwinds through check's finally: Chromium dies
    result, problems = check(args, chromium, page)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for p in problems:
        print(f"check_html_report: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
