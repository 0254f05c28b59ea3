"""plait-report's page in a real browser: compiles the GPT sample for 2 ranks under a memory
limit (so the planner compares candidates) with --clip-grad-norm (so the log has the gradients'
norm), trains a few steps with a log, writes the page, loads it in headless Chromium and checks
from the rendered DOM that every chart was laid out with drawn marks and that the page fetches
nothing.

  report_browser.py --build BUILD_DIR
"""
import argparse
import html.parser
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXPECTED_CHARTS = [
    "chart-memory-timeline", "chart-unit-bytes", "chart-comm-planned", "chart-comm-measured",
    "chart-candidates", "chart-loss", "chart-grad-norm", "chart-step-time",
]


def run(cmd, timeout=120):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        sys.exit(f"report_browser: {' '.join(map(str, cmd))} failed ({result.returncode}):\n"
                 f"{result.stdout}{result.stderr}")
    return result.stdout


class Dom(html.parser.HTMLParser):
    """The body's attributes, and each chart <svg>'s attributes and count of drawn marks."""

    def __init__(self):
        super().__init__()
        self.body = {}
        self.charts = {}  # id -> {"attrs": {...}, "marks": n}
        self.inside = None
        self.fetches = []  # attributes that would load something

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for name in ("src", "href", "xlink:href"):
            if name in a:
                self.fetches.append(f"<{tag} {name}={a[name]!r}>")
        if tag == "link" or (tag == "script" and "src" in a):
            self.fetches.append(f"<{tag}>")
        if tag == "body":
            self.body = a
        if tag == "svg" and "plait-chart" in a.get("class", "").split():
            self.inside = a.get("id", "")
            self.charts[self.inside] = {"attrs": a, "marks": 0}
        elif self.inside is not None and "mark" in a.get("class", "").split():
            self.charts[self.inside]["marks"] += 1

    def handle_endtag(self, tag):
        if tag == "svg":
            self.inside = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=pathlib.Path)
    args = parser.parse_args()
    bin_dir = args.build.resolve() / "bin"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("report_browser: FAIL: chromium is not installed; install Debian's chromium "
                 "(scripts/deps.sh) to run this test")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="plait-report-") as tmp:
        tmp = pathlib.Path(tmp)
        run(["/usr/bin/python3", ROOT / "tests/lit/train/Inputs/gpt_data.py", tmp / "data"])
        compile_args = [bin_dir / "plait-compile", ROOT / "samples/gpt/gpt.onnx", "--train",
                        "--optimizer", "adamw", "--clip-grad-norm", "1.0", "--world-size", "2",
                        "--placement", "blocks.0=zero3"]
        # A limit one byte under what the plan needs: the planner must search.
        run(compile_args + ["-o", tmp / "free.plan", "--report", tmp / "free.json"])
        need = json.loads((tmp / "free.json").read_text())["memory"]["total"]
        run(compile_args + ["--recompute", "auto", "--mem-limit", str(need - 1),
                            "-o", tmp / "gpt.plan"])
        run([bin_dir / "plait-run", "--nproc", "2", tmp / "gpt.plan", "--data", tmp / "data",
             "--steps", "8", "--log-jsonl", tmp / "log.jsonl"])
        page = tmp / "report.html"
        run([bin_dir / "plait-report", tmp / "gpt.plan", "--log", tmp / "log.jsonl", "-o", page])

        browser_start = time.monotonic()
        dom_text = run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
                        "--window-size=1100,2000", "--dump-dom", page.as_uri()], timeout=90)
        browser_s = time.monotonic() - browser_start
        version = run([chromium, "--version"], timeout=30).strip()

    dom = Dom()
    dom.feed(dom_text)
    problems = []
    if dom.body.get("data-charts", "").split() != EXPECTED_CHARTS:
        problems.append(f"the page lists charts {dom.body.get('data-charts')!r}, expected "
                        f"{' '.join(EXPECTED_CHARTS)!r}")
    rendered = dom.body.get("data-charts-rendered")
    if rendered != str(len(EXPECTED_CHARTS)):
        problems.append(f"data-charts-rendered={rendered!r}: the browser laid out "
                        f"{rendered} of {len(EXPECTED_CHARTS)} charts (\"0\" or absent: the "
                        f"page's script did not run)")
    for chart in EXPECTED_CHARTS:
        found = dom.charts.get(chart)
        if not found:
            problems.append(f"{chart}: no <svg class=\"plait-chart\"> with this id in the DOM")
        elif found["marks"] == 0:
            problems.append(f"{chart}: the SVG has no drawn marks")
        elif found["attrs"].get("data-rendered") != "true":
            problems.append(f"{chart}: the browser gave it no size or its marks no extent")
    if dom.fetches:
        problems.append(f"the page would fetch: {', '.join(dom.fetches)}")
    if problems:
        sys.exit("report_browser: FAIL\n  " + "\n  ".join(problems))
    marks = ", ".join(f"{c.removeprefix('chart-')} {dom.charts[c]['marks']}" for c in EXPECTED_CHARTS)
    print(f"report_browser: {version} rendered {rendered}/{len(EXPECTED_CHARTS)} charts "
          f"(marks: {marks}); browser {browser_s:.1f} s, total {time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    main()
