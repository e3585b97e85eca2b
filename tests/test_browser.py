"""JupyterLab in a real browser: headless Chromium, driven by playwright, on JupyterLab started by `make lab`.

1. The PlacementExplorer: opens tests/browser/placement_explorer.ipynb, runs every cell, checks the plotly figure
   draws, picks another target in the ipywidgets dropdown and checks the figure redraws for it. Screenshot:
   test-artifacts/browser/placement_explorer.png.
2. Every notebook in notebooks/: each plotly output is drawn as a chart, none shows as a JSON tree, nothing went
   to stderr, and every text a chart draws can be read (no two labels overlap, none runs off the chart, no legend
   needs a scrollbar). Notebook 00 runs cell by cell in JupyterLab's kernel, as a learner runs it; the others are
   executed headless first (tests/notebook_runs.py: each notebook's one papermill run in a session, which its
   other tests read too) and JupyterLab opens the executed copy, so no notebook runs twice for this test. Screenshots:
   test-artifacts/browser/ (every chart's too with ACCELKIT_CHART_SCREENSHOTS=1).

Needs Debian's chromium at /usr/bin/chromium (scripts/install_chromium.sh) and the Python
``playwright`` package (its own browser download is not used). Without them the test is skipped,
except when the environment variable ``CI`` is set: there it fails, so CI proves it ran.

    .venv/bin/python -m pytest -m browser tests/test_browser.py
    ACCELKIT_NOTEBOOK_RUNS=/tmp/runs .venv/bin/python -m pytest -m browser tests/test_browser.py  # keep the runs
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from notebook_runs import ORDER

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "tests" / "browser"
NOTEBOOK = "placement_explorer.ipynb"
ARTIFACTS = ROOT / "test-artifacts" / "browser"  # gitignored
SCREENSHOT = ARTIFACTS / "placement_explorer.png"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SERVER_START_S = 60  # `make lab` checks the set-up first (quick when nothing changed)
CELLS_RUN_S = 120  # kernel start (torch, transformers) + the first compile + the first draw, on a busy machine
REDRAW_S = 15

SUBTITLE_BELOW_TITLE = """() => {
    const title = document.querySelector('.ak-placement-explorer .gtitle');
    const sub = document.querySelector('.ak-placement-explorer .gtitle-subtitle');
    return title && sub && sub.getBoundingClientRect().top >= title.getBoundingClientRect().bottom - 1;
}"""

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _need(what: str, fix: str) -> None:
    """Skip for lack of ``what``; under CI, fail instead (CI must prove the browser test runs)."""
    message = f"{what} is missing ({fix})"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so the browser test must run, but {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def chromium() -> Path:
    if not CHROMIUM.exists():
        _need(str(CHROMIUM), "run scripts/install_chromium.sh")
    try:
        import playwright  # noqa: F401
    except ImportError:
        _need("the playwright Python package", "pip install playwright; `playwright install` is not needed")
    return CHROMIUM


@dataclass
class Lab:
    url: str  # the notebook's page, token included
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(proc: subprocess.Popen[bytes], base: str, token: str, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{_tail(log)}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    pytest.fail(f"jupyter lab did not answer within {SERVER_START_S} s:\n{_tail(log)}", pytrace=False)


def _tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:]


@contextmanager
def _lab(tmp_path: Path, lab_dir: Path, extra_args: str = "") -> Iterator[tuple[str, str, Path]]:
    """JupyterLab serving ``lab_dir``, started by ``make lab`` itself (so with the Makefile's environment, as
    root too), on a free port with a random token; yields (base URL, token, log). Always shut down.

    Only the test's own state is kept apart: JupyterLab's settings (no news toast, no autosave, so running
    the real notebooks/ never writes outputs into them), workspaces and runtime files live under ``tmp_path``.
    """
    port, token = _free_port(), secrets.token_hex(16)
    log = tmp_path / "jupyter.log"
    settings = tmp_path / "settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    (settings / "docmanager-extension").mkdir(parents=True)
    (settings / "docmanager-extension" / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    env = {**os.environ, "JUPYTER_PORT": str(port), "JUPYTER_TOKEN": token, "JUPYTER_IP": "127.0.0.1",
           "LAB_DIR": str(lab_dir), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "PYTHONUNBUFFERED": "1"}
    lab_args = (f"--no-browser --LabApp.workspaces_dir={tmp_path / 'workspaces'} "
                f"--LabApp.user_settings_dir={tmp_path / 'settings'} {extra_args}").strip()
    cmd = ["make", "-s", "--no-print-directory", "lab", f"LAB_ARGS={lab_args}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                start_new_session=True)  # its own process group: kernels go down with it
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(proc, base, token, log)
        yield base, token, log
    finally:
        _stop(proc, base, token)


@pytest.fixture
def lab(chromium: Path, tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab (as `make lab` starts it) serving a copy of tests/browser."""
    root = tmp_path / "root"
    shutil.copytree(NOTEBOOK_DIR, root)
    with _lab(tmp_path, root) as (base, token, log):
        yield Lab(f"{base}/lab/tree/{NOTEBOOK}?token={token}", log)


def _stop(proc: subprocess.Popen[bytes], base: str, token: str) -> None:
    """Shut the server down: its kernels run in sessions of their own, so ask it to stop them first
    (POST /api/shutdown), then terminate its process group, and kill it if it lingers."""
    if proc.poll() is not None:
        return
    try:
        urllib.request.urlopen(urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST"),
                               timeout=5).close()
        proc.wait(timeout=10)
        return
    except (urllib.error.URLError, ConnectionError, TimeoutError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass


def _title(page: Any) -> str:
    return str(page.locator(".js-plotly-plot .gtitle").first.text_content() or "")


@pytest.mark.timeout(CELLS_RUN_S + 120)
def test_placement_explorer_in_jupyterlab(lab: Lab, chromium: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # ipywidgets logs (and swallows) exceptions a front end raises while applying an update
        widget_errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and "Error setting state" in m.text
                and widget_errors.append(m.text))
        try:
            page.goto(lab.url, timeout=30_000)
            # the notebook is loaded (its code cells, not the placeholder) and its kernel is idle
            expect(page.locator(".jp-Notebook .jp-CodeCell")).to_have_count(3, timeout=30_000)
            kernel_idle = page.get_by_role("button", name=re.compile(r"Python 3 \(ipykernel\) \| Idle"))
            expect(kernel_idle).to_be_visible(timeout=30_000)
            # Run > Run All Cells, as a learner would
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

            plot = page.locator(".ak-placement-explorer .js-plotly-plot")
            expect(plot).to_be_visible(timeout=CELLS_RUN_S * 1000)
            summary = page.locator(".ak-placement-explorer .ak-summary")
            expect(summary).to_contain_text("target: sn40l", timeout=REDRAW_S * 1000)
            expect(plot.locator(".gtitle")).to_contain_text("sn40l", timeout=REDRAW_S * 1000)  # a busy machine draws late
            # the subtitle sits under the title once the view is on the page (the explorer redraws then)
            page.wait_for_function(SUBTITLE_BELOW_TITLE, timeout=REDRAW_S * 1000)
            before = _title(page)
            assert plot.locator(".annotation-text", has_text="PMUs").count() == 1  # the RDU's second panel

            # another target in the ipywidgets dropdown: the same figure redraws for it
            page.locator(".ak-target.widget-dropdown select").select_option("wse2")
            expect(plot.locator(".gtitle")).to_contain_text("wse2", timeout=REDRAW_S * 1000)
            expect(summary).to_contain_text("target: wse2 (wafer-dataflow)")
            after = _title(page)
            assert after != before and "sn40l" not in after
            assert plot.count() == 1, "the figure must redraw in place, not as a second output"
            # the RDU's layout (two panels, PMU titles) is gone, not left behind by the relayout
            expect(plot.locator(".annotation-text", has_text="PMUs")).to_have_count(0)
            expect(page.locator(".ak-precision.widget-dropdown select")).to_have_value("bf16")
            page.wait_for_function(SUBTITLE_BELOW_TITLE, timeout=REDRAW_S * 1000)
            assert widget_errors == [], f"the front end failed to apply an update: {widget_errors}"
            page.locator(".ak-placement-explorer").scroll_into_view_if_needed()
            page.screenshot(path=str(SCREENSHOT))
        except BaseException:  # pytest-timeout's failure too: keep what the page showed
            page.screenshot(path=str(ARTIFACTS / "placement_explorer-failure.png"), timeout=5_000)
            print(f"jupyter log ({lab.log}):\n{_tail(lab.log)}")
            raise
        finally:
            browser.close()
    print(f"browser test: {time.perf_counter() - start:.1f} s in the browser; screenshot {SCREENSHOT}")


# ---- every notebook, as a learner opens it under `make lab` ---------------------------------------------------
# Notebook 00 runs end to end through JupyterLab's own kernel (Run > Run All Cells, as a learner does). The others
# are executed headless first, by papermill (tests/notebook_runs.py: each notebook's one run in a session, the same
# its golden cells and its exercises are checked on), and JupyterLab opens the executed copy: the browser renders
# and lays out every figure the notebook made, without running it again. In the order the runs start in `make test`
# (notebook_runs.ORDER, conftest.py): this test reads each run once it is made, waits for one in progress, or
# makes it.
NOTEBOOKS = [next(p.name for p in (ROOT / "notebooks").glob(f"{nb}_*.ipynb")) for nb in ORDER]
RUN_IN_THE_BROWSER = {"00_accelerator_landscape.ipynb"}
NOTEBOOK_RUN_S = 300  # the slowest notebook runs in ~60 s under papermill, longer on a busy machine, and this test
# may wait for a run another worker is making; the browser adds the drawing
PLOTLY_OUT = ".jp-OutputArea-output.jp-RenderedPlotly"  # plotly's JupyterLab renderer (the mimetype output)
PLOTLY_MIME = "application/vnd.plotly.v1+json"
FIGURELESS = {"09_port_your_own_model.ipynb", "10_on_the_real_machines.ipynb"}  # text and tables only
JSON_TREE = '.jp-OutputArea-output[data-mime-type="application/json"], .jp-RenderedJSON'
STDERR = ('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
          '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
ALL_RUN = """() => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
    const texts = prompts.map(p => p.textContent.trim());
    return texts.length > 0 && texts.every(t => /^\\[\\d+\\]:$/.test(t) || t === '[ ]:' || t === '');
}"""
CHARTS_SEEN: dict[str, int] = {}
# a screenshot of every chart (to look at them one by one); without it, only of the charts that fail the check
CHART_SCREENSHOTS = os.environ.get("ACCELKIT_CHART_SCREENSHOTS") == "1"
# Every text a chart draws (titles, axis titles, tick labels, bar and marker labels, annotations, legend entries),
# as the browser laid it out: two that overlap, or one cut off by the chart's edge, is a label a learner cannot read;
# a legend with a scrollbar hides entries. Returns one line per problem.
TEXT_PROBLEMS = """(plot) => {
    const svg = plot.querySelector('svg.main-svg');
    if (!svg) return [];
    const edge = svg.getBoundingClientRect();
    const sel = ['.gtitle', '.g-xtitle text', '.g-ytitle text', '.g-x2title text', '.g-y2title text',
                 '.xtick text', '.ytick text', '.textpoint text', 'text.bartext', '.annotation-text', '.legendtext'];
    const boxes = [];
    for (const el of plot.querySelectorAll(sel.join(','))) {
        const text = (el.textContent || '').trim();
        if (!text || el.closest('[visibility="hidden"]') || getComputedStyle(el).opacity === '0') continue;
        const r = el.getBoundingClientRect();
        if (r.width < 1 || r.height < 1) continue;
        const legend = !!el.closest('.legend');
        boxes.push({text, r, legend, axis: !!el.closest('.xtick, .ytick')});
    }
    const out = [];
    const slack = 2;  // px: glyph boxes touch without the text overlapping
    for (const b of boxes) {
        if (b.legend) continue;  // the legend scrolls inside its own box (checked below)
        if (b.r.left < edge.left - slack || b.r.right > edge.right + slack || b.r.top < edge.top - slack
            || b.r.bottom > edge.bottom + slack) out.push(`cut off by the chart's edge: "${b.text}"`);
    }
    for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
            const a = boxes[i].r, b = boxes[j].r;
            if (boxes[i].legend !== boxes[j].legend) continue;
            const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
            const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
            if (w > slack && h > slack && w * h > 0.2 * Math.min(a.width * a.height, b.width * b.height))
                out.push(`"${boxes[i].text}" overlaps "${boxes[j].text}"`);
        }
    }
    // a legend's box over a label outside it (an axis title, a tick label) hides that label
    for (const bg of plot.querySelectorAll('.legend .bg')) {
        const l = bg.getBoundingClientRect();
        for (const b of boxes) {
            if (b.legend) continue;
            const w = Math.min(l.right, b.r.right) - Math.max(l.left, b.r.left);
            const h = Math.min(l.bottom, b.r.bottom) - Math.max(l.top, b.r.top);
            if (w > slack && h > slack) out.push(`the legend covers "${b.text}"`);
        }
    }
    for (const bar of plot.querySelectorAll('.legend .scrollbar')) {
        if (bar.getBoundingClientRect().height > 1) out.push('the legend needs a scrollbar: too many entries');
    }
    return [...new Set(out)];
}"""


@pytest.fixture(scope="module")
def notebooks_lab(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path, Path]]:
    """One JupyterLab, started by `make lab`, serving a folder of its own (autosave off): a clean copy of each
    notebook in RUN_IN_THE_BROWSER, and the executed copies of the others as their tests arrive. Its app is
    exposed to the page (window.jupyterapp), so one page opens every notebook with JupyterLab's own command."""
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    for name in RUN_IN_THE_BROWSER:
        shutil.copy(ROOT / "notebooks" / name, root / name)
    with _lab(tmp, root, "--LabApp.expose_app_in_browser=True") as (base, token, log):
        yield base, token, log, root


@pytest.fixture(scope="module")
def lab_page(notebooks_lab: tuple[str, str, Path, Path], chromium: Path) -> Iterator[Any]:
    """One headless Chromium page on JupyterLab, loaded once: each notebook opens in it as a tab (as File > Open
    does) and is closed after its checks, so the app is not loaded again for every notebook."""
    from playwright.sync_api import expect, sync_playwright

    base, token, _log, _root = notebooks_lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/lab?reset&token={token}", timeout=60_000)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
        expect(page.locator(".jp-DirListing")).to_be_visible(timeout=30_000)
        yield page
        browser.close()


OPEN = """async (path) => {
    const widget = await window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    await widget.context.ready;
    window.akNotebook = widget;
}"""
CLOSE = "() => { if (window.akNotebook) { window.akNotebook.dispose(); window.akNotebook = null; } }"


def _shut_down_kernels(base: str, token: str) -> None:
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=10) as r:
        sessions = json.loads(r.read())
    for s in sessions:
        urllib.request.urlopen(urllib.request.Request(
            f"{base}/api/sessions/{s['id']}?token={token}", method="DELETE"), timeout=30).close()


def _executed_copy(name: str, root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """The notebook executed headless (its one run, shared with its other tests), copied where JupyterLab serves it and
    trusted, as a notebook a learner ran; with the run's own duration."""
    import nbformat
    from nbformat.sign import NotebookNotary
    from notebook_runs import RUNS, executed, runs_dir

    run = executed(name[:2], RUNS[name[:2]], runs_dir(tmp_path_factory))
    nb = nbformat.read(str(run), as_version=4)
    NotebookNotary().sign(nb)  # outputs the learner made: JupyterLab renders them as trusted
    nbformat.write(nb, str(root / name))
    return root / name, float(nb.metadata.get("papermill", {}).get("duration") or 0.0)


@pytest.mark.timeout(NOTEBOOK_RUN_S + 60)
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_draws_every_chart_in_jupyterlab(notebooks_lab: tuple[str, str, Path, Path], lab_page: Any,
                                                  name: str, record_property: Any,
                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every plotly output is a chart JupyterLab drew, none is a JSON tree, no cell wrote to stderr or failed, and
    every text a chart draws can be read (TEXT_PROBLEMS). A screenshot of the notebook, and of each chart that
    fails the check (of every chart with ACCELKIT_CHART_SCREENSHOTS=1), is kept under test-artifacts/browser/."""
    import nbformat
    from playwright.sync_api import expect

    base, token, log, root = notebooks_lab
    page = lab_page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{Path(name).stem}.png"
    run_in_browser = name in RUN_IN_THE_BROWSER
    expected = None
    if not run_in_browser:
        path, seconds = _executed_copy(name, root, tmp_path_factory)
        record_property("notebook_run_time_s", seconds)  # the table conftest.py prints (the headless run's)
        expected = sum(PLOTLY_MIME in o.get("data", {}) for c in nbformat.read(str(path), 4).cells
                       if c.cell_type == "code" for o in c.outputs)
    try:
        page.evaluate(OPEN, name)
        expect(page.locator(".jp-Notebook .jp-CodeCell").first).to_be_visible(timeout=30_000)
        if run_in_browser:
            idle = page.get_by_role("button", name=re.compile(r"Python 3 \(ipykernel\) \| Idle"))
            expect(idle).to_be_visible(timeout=30_000)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            start = time.perf_counter()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            page.wait_for_timeout(1_000)
            page.wait_for_function(ALL_RUN, timeout=NOTEBOOK_RUN_S * 1000, polling=500)
            expect(idle).to_be_visible(timeout=30_000)
            record_property("notebook_run_time_s", time.perf_counter() - start)
            page.wait_for_timeout(1_500)  # the last figures draw after the kernel goes idle

        outputs = page.locator(PLOTLY_OUT)
        if expected is not None:  # every figure the run made is on the page
            expect(outputs).to_have_count(expected, timeout=30_000)
        n = outputs.count()
        unreadable: dict[str, list[str]] = {}
        for i in range(n):  # each output scrolled into view so JupyterLab renders it
            out = outputs.nth(i)
            out.scroll_into_view_if_needed()
            expect(out).to_have_class(re.compile(r"\bjs-plotly-plot\b"), timeout=15_000)  # plotly drew it
            expect(out.locator("svg.main-svg").first).to_be_visible(timeout=15_000)
            problems = out.evaluate(TEXT_PROBLEMS)
            if problems:
                unreadable[f"chart {i + 1}"] = problems
            if problems or CHART_SCREENSHOTS:  # a screenshot takes a second on a busy machine: on demand
                out.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}-chart{i + 1}.png"))
        assert n > 0 or name in FIGURELESS, f"{name}: no plotly output was rendered by JupyterLab"
        if unreadable:
            (ARTIFACTS / f"{Path(name).stem}-unreadable.json").write_text(json.dumps(unreadable, indent=1))
        CHARTS_SEEN[name] = page.locator(".js-plotly-plot").count()  # figures and FigureWidgets
        assert page.locator(JSON_TREE).count() == 0, f"{name}: a figure (or other output) shows as a JSON tree"
        stderr = [t[:300] for t in page.locator(STDERR).all_inner_texts()]
        assert stderr == [], f"{name}: output on stderr or an error: {stderr}"
        page.screenshot(path=str(shot))
        assert unreadable == {}, f"{name}: labels a learner cannot read: {unreadable}"
    except BaseException:
        page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}-failure.png"), timeout=5_000)
        print(f"jupyter log ({log}):\n{_tail(log)}")
        raise
    finally:
        page.evaluate(CLOSE)
        _shut_down_kernels(base, token)
    print(f"{name}: {CHARTS_SEEN[name]} chart(s) drawn; screenshot {shot}")
