"""Run notebooks the way a learner does: JupyterLab in a headless Chromium.

:class:`JupyterLab` starts a JupyterLab server on a copy of the notebooks and always stops it
together with every process it started (kernels, and the llama.cpp servers the kernels start).
:class:`LabNotebook` opens one notebook in a browser page, runs it from the Run menu, waits
until nothing is left to run and reads back what JupyterLab shows: error outputs, widgets that
did not render, bold or italic markup shown as text, the page as a screenshot.

JupyterLab is started with ``expose_app_in_browser`` so that the page can read the notebook's
own model: a traceback and a stderr warning render alike, only the model says which output is
an error. Everything else is read from what is on the screen.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

from markdown_support import left_over

NESTED_TAGS = {"STRONG": "bold inside bold", "EM": "italics inside italics"}


# Driven by default: one notebook per kind of control panel, English and Chinese both. The
# default run leaves these notebooks' nbval run to CI when a browser is here (conftest.py).
DRIVEN = ("01_restaurant.ipynb", "03_kv_capacity.ipynb", "05_slots_live.ipynb",
          "08_capacity_planning.ipynb", "zh-TW/04_slot_context.ipynb",
          "zh-TW/07_scheduling.ipynb", "zh-TW/classroom.ipynb")


def browser_missing() -> str | None:
    """Why no browser can be driven here (and how to get one), or None when one can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        return (f"the `playwright` package is not importable ({e}): install it with "
                "`pip install -e \".[test]\"` or `pip install playwright`; its own browser "
                "download is not needed, the system's Chromium is used")
    if shutil.which("chromium") is None:
        return ("no `chromium` on PATH: install Debian's with `apt-get install -y chromium` "
                "(.ci/run does), or put any Chromium on PATH as `chromium`")
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_processes(procs: list[psutil.Process], grace_s: float = 20.0):
    """Terminate those of ``procs`` still alive and kill what outlives ``grace_s``."""
    alive = [p for p in procs if p.is_running()]
    for p in alive:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, stubborn = psutil.wait_procs(alive, timeout=grace_s)
    for p in stubborn:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(stubborn, timeout=5)


# Settings that keep a fresh JupyterLab from asking about news, and keep every cell in the page
# (no virtual scrolling), so that the whole notebook is checked and photographed.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


class JupyterLab:
    """A JupyterLab server on ``root``, as a context manager. Its kernels run in quick mode and
    record into ``results``; ``home`` holds its settings, workspaces and log."""

    def __init__(self, root: Path, results: Path, home: Path, start_timeout_s: float = 180):
        self.root, self.results, self.home = Path(root), Path(results), Path(home)
        self.start_timeout_s = start_timeout_s
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = self.home / "jupyterlab.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "JupyterLab":
        for name, value in LAB_SETTINGS.items():
            path = self.home / "settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        env = dict(os.environ, LABKIT_QUICK="1", LABKIT_RESULTS=str(self.results),
                   JUPYTERLAB_SETTINGS_DIR=str(self.home / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.home / "workspaces"))
        env.pop("MPLBACKEND", None)        # a learner's kernel draws inline, not into Agg
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
               f"--port={self.port}", "--ip=127.0.0.1", f"--ServerApp.token={self.token}",
               f"--ServerApp.root_dir={self.root}", "--LabApp.expose_app_in_browser=True"]
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def _wait_ready(self):
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "status")
                return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"JupyterLab did not answer in {self.start_timeout_s:.0f} s:\n"
                           f"{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def api(self, method: str, path: str):
        req = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def url(self, notebook: str) -> str:
        """The notebook in a workspace of its own, so that no earlier notebook reopens (and
        starts a kernel) beside it."""
        workspace = Path(notebook).with_suffix("").as_posix().replace("/", "-")   # one per edition
        return f"{self.base}/lab/workspaces/{workspace}/tree/{notebook}?token={self.token}"

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def shut_down_kernels(self):
        """Shut down every kernel, as closing its notebook would, and make sure that nothing
        the kernels started outlives them."""
        started = self.descendants()
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")
        stop_processes(started)

    def stop(self):
        """Stop the server and everything under it, whatever state it is in."""
        if self.proc is None:
            return
        started = self.descendants()
        if self.proc.poll() is None:
            self.proc.terminate()            # the server shuts its kernels down first
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        stop_processes(started, grace_s=10)
        self._log.close()
        self.proc = None


# ---------------------------------------------------------------------------- the page

_FIND_PANEL = """
const panelFor = (path) => [...window.jupyterapp.shell.widgets('main')]
    .find(w => w.context && w.context.path === path);
"""

_KERNEL_STATE = _FIND_PANEL + """
return (path) => {
  const panel = panelFor(path);
  const k = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
  return k ? [k.status, k.connectionStatus] : ['none', 'none'];
};
"""

# One row per code cell: whether it ran or is still pending, the model's error outputs, and
# the widget outputs against the widget views the page actually shows.
_CELLS = _FIND_PANEL + """
return (path) => {
  const panel = panelFor(path);
  const rows = [];
  panel.content.widgets.forEach((cell, index) => {
    const m = cell.model;
    if (m.type !== 'code') return;
    const outputs = m.outputs.toJSON();
    const area = cell.node.querySelector('.jp-Cell-outputArea');
    const shown = area ? [...area.querySelectorAll(
        ':scope > .jp-OutputArea-child > .jp-OutputArea-output')] : [];
    const broken = (o) => o.textContent.includes('Error displaying widget');
    const prompt = cell.node.querySelector('.jp-InputPrompt');
    rows.push({
      index,
      source: m.sharedModel.getSource(),
      execution_count: m.executionCount,
      running: m.executionState === 'running' || (!!prompt && prompt.textContent.includes('*')),
      errors: outputs.filter(o => o.output_type === 'error').map(
          o => ({ename: o.ename, evalue: o.evalue, traceback: (o.traceback || []).join('\\n')})),
      widget_outputs: outputs.filter(
          o => o.data && o.data['application/vnd.jupyter.widget-view+json']).length,
      widget_views: shown.filter(o => o.querySelector(':scope > .jupyter-widgets') && !broken(o)).length,
      widget_errors: shown.filter(broken).map(o => o.textContent.trim().slice(0, 300)),
    });
  });
  return rows;
};
"""


# One row per markdown cell as JupyterLab rendered it: its text outside code and formulas, and
# each bold holding a bold (italics holding italics), where the markers paired wrongly: the
# inner one's tag and the outer one's text.
_PROSE = _FIND_PANEL + """
return (path) => {
  const rows = [];
  panelFor(path).content.widgets.forEach((cell, index) => {
    const shown = cell.model.type === 'markdown' && cell.node.querySelector('.jp-RenderedMarkdown');
    if (!shown) return;
    const prose = shown.cloneNode(true);
    prose.querySelectorAll('pre, code, mjx-container, .MathJax, script').forEach(e => e.remove());
    const nested = [...shown.querySelectorAll('strong strong, em em')].map(e => e.tagName + ' '
        + e.parentElement.closest(e.tagName).textContent.trim().slice(0, 60));
    rows.push({index, text: prose.textContent, nested: [...new Set(nested)]});
  });
  return rows;
};
"""


def _js(body: str) -> str:
    """A page function from a body that returns it (so that it may declare helpers first)."""
    return "(arg) => { const f = (() => {" + body + "})(); return f(arg); }"


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class LabNotebook:
    """One notebook open in a browser page of ``lab``."""

    def __init__(self, page, lab: JupyterLab, name: str):
        self.page, self.lab, self.name = page, lab, name

    def open(self, timeout_s: float = 180):
        """Load the notebook and wait until its kernel is connected and idle."""
        self.page.goto(self.lab.url(self.name), timeout=timeout_s * 1000)
        self.page.wait_for_function(
            _js(_FIND_PANEL + "return (path) => window.jupyterapp && panelFor(path) !== undefined;"),
            arg=self.name, timeout=timeout_s * 1000)
        deadline = time.monotonic() + timeout_s
        while self.kernel_state() != ["idle", "connected"]:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: the kernel did not start in {timeout_s:.0f} s "
                                     f"({self.kernel_state()})")
            time.sleep(0.5)

    def kernel_state(self) -> list[str]:
        return self.page.evaluate(_js(_KERNEL_STATE), self.name)

    def cells(self) -> list[dict]:
        return self.page.evaluate(_js(_CELLS), self.name)

    def prose(self) -> list[dict]:
        return self.page.evaluate(_js(_PROSE), self.name)

    def run_all(self):
        """Edit > Clear Outputs of All Cells, then Run > Run All Cells, from the menu bar: the
        committed outputs of the reference run go first, so that what is read afterwards (a
        cell that ran, its errors, its widgets) is this run's alone."""
        self.page.get_by_role("menuitem", name="Edit", exact=True).click()
        self.page.get_by_role("menuitem", name="Clear Outputs of All Cells", exact=True).click()
        self.page.get_by_role("menuitem", name="Run", exact=True).click()
        self.page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    def wait_until_done(self, timeout_s: float, poll_s: float = 2.0):
        """Until the kernel is idle and no cell is running or queued, seen twice in a row so
        that the moment between two cells does not pass for the end. A kernel that dies fails
        at once."""
        deadline = time.monotonic() + timeout_s
        quiet = 0
        while quiet < 2:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: not finished after {timeout_s:.0f} s; "
                                     + self.progress())
            time.sleep(poll_s)
            state = self.kernel_state()
            if state[0] in ("dead", "restarting", "autorestarting") or state[1] == "disconnected":
                raise AssertionError(f"{self.name}: the kernel went {state}; " + self.progress())
            idle = state == ["idle", "connected"] and not any(c["running"] for c in self.cells())
            quiet = quiet + 1 if idle else 0

    def progress(self) -> str:
        cells = self.cells()
        ran = sum(c["execution_count"] is not None for c in cells)
        running = [c for c in cells if c["running"]]
        if not running:
            return f"{ran}/{len(cells)} code cells ran, none running"
        first = running[0]
        return (f"{ran}/{len(cells)} code cells ran; running cell {first['index']}: "
                + " / ".join(first["source"].splitlines()[:3]))

    def problems(self) -> list[str]:
        """What a learner would see go wrong: error outputs, code cells that never ran, widgets
        that did not render, bold or italic markup that did not render."""
        out = []
        for c in self.cells():
            first_line = c["source"].splitlines()[0] if c["source"] else ""
            where = f"cell {c['index']} ({first_line!r})"
            for e in c["errors"]:
                tb = _ANSI.sub("", e["traceback"]).strip().splitlines()
                out.append(f"{where}: {e['ename']}: {e['evalue']}\n    " + "\n    ".join(tb[-12:]))
            if c["execution_count"] is None:
                out.append(f"{where}: did not run")
            for text in c["widget_errors"]:
                out.append(f"{where}: {text}")
            if c["widget_views"] < c["widget_outputs"]:
                out.append(f"{where}: {c['widget_outputs']} widget output(s), "
                           f"{c['widget_views']} rendered")
        for c in self.prose():
            where = f"cell {c['index']} (markdown)"
            out += [f"{where}: markers shown as text: {span}" for span in left_over(c["text"])]
            for nested in c["nested"]:
                tag, text = nested.split(" ", 1)
                out.append(f"{where}: {NESTED_TAGS[tag]}: {text}")
        return out

    def screenshot(self, path: Path, width: int = 1400, max_height: int = 30000) -> Path:
        """The whole notebook in one picture: the file browser folded away and the window
        made as tall as the notebook, scrolled to its top."""
        scroller = "document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer')"
        self.page.evaluate("() => window.jupyterapp && window.jupyterapp.shell.collapseLeft()")
        extra = self.page.evaluate(f"() => {{ const o = {scroller}; "
                                   "return o ? o.scrollHeight - o.clientHeight : 0; }")
        old = self.page.viewport_size
        self.page.set_viewport_size({"width": width,
                                     "height": min(old["height"] + extra, max_height)})
        self.page.wait_for_timeout(1000)
        self.page.evaluate(f"() => {{ const o = {scroller}; if (o) o.scrollTop = 0; }}")
        self.page.wait_for_timeout(1000)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=True)
        self.page.set_viewport_size(old)
        return path

    def move_slider(self, panel_title: str, label: str, key: str = "ArrowRight",
                    timeout_s: float = 180) -> tuple[str, str]:
        """Move the slider ``label`` of the widget panel titled ``panel_title`` one step with
        the keyboard, as a learner would with the mouse, and wait until the panel's output is
        redrawn (a new figure and table). Returns the output's text before and after."""
        page = self.page
        panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .widget-vbox").filter(
            has=page.locator(".widget-html", has_text=panel_title)).first
        slider = panel.locator(".widget-slider").filter(has_text=label)
        output = panel.locator(".widget-output").first
        readout = slider.locator(".widget-readout")
        before_text, before_html, before_value = (output.inner_text(), output.inner_html(),
                                                  readout.inner_text())
        slider.locator(".noUi-handle").focus()
        page.keyboard.press(key)
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        try:
            page.wait_for_function(
                """([el, before]) => el.innerHTML !== before && el.querySelector('img') !== null
                                     && el.querySelector('table') !== null""",
                arg=[output.element_handle(), before_html], timeout=timeout_s * 1000)
        except PlaywrightTimeout:
            raise AssertionError(f"{self.name}: moving {label!r} did not redraw the panel "
                                 f"{panel_title!r} in {timeout_s:.0f} s") from None
        self.wait_until_done(timeout_s)
        assert readout.inner_text() != before_value, f"the slider {label!r} did not move"
        return before_text, output.inner_text()
