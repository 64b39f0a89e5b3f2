"""`python -m monitor dashboard [STREAMLIT OPTIONS]`: the dashboard, stopped by one signal however many arrive.

Streamlit stops on its first SIGTERM or SIGINT, but one more that lands while it
shuts down ends it with a traceback and exit code 1 (SIGINT), or by the signal
itself (SIGTERM, once Python has put the default handler back): GNU timeout,
Kubernetes and an impatient Ctrl-C all send more than one. So Streamlit runs as a
child in a session of its own, which signals to this process's group never reach;
this process takes every signal (monitor.stopping) and hands the child exactly
one SIGTERM.

app.py (and app_pages/ beside it) sit next to the `monitor` package both in a checkout
and in an installed wheel (pyproject.toml ships them as the top-level module `app` and
package `app_pages`), so the script is found from this module's own file, never from the
working directory (where another app.py may be). Streamlit reads `.streamlit/config.toml`
from the working directory and the home directory only, so the options that keep the
dashboard local and quiet are passed on its command line, where they would beat those
files: each only when neither file, nor its STREAMLIT_ environment variable, nor the
command line sets it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path

from monitor.logs import get_logger
from monitor.stopping import stop_on_signals, terminate

APP = Path(__file__).resolve().parents[2] / "app.py"  # monitor/cli/dashboard.py -> app.py beside monitor/
STOP_WAIT_S = 15.0
# As in .streamlit/config.toml: loopback only (`--server.address 0.0.0.0` to serve others), no browser, no
# telemetry, and no error details to viewers (tracebacks hold SQL, paths and hosts; they go to the log).
DEFAULT_OPTIONS = {
    "server.address": "127.0.0.1",
    "server.headless": "true",
    "browser.gatherUsageStats": "false",
    "client.showErrorDetails": "none",
}

log = get_logger("dashboard")


def streamlit_command(options: list[str], configured: Collection[str] = ()) -> list[str]:
    """`streamlit run app.py`, lagmon's defaults for the options neither in `options` nor `configured`
    (set in a config file or the environment), then `options`."""
    given = {o.removeprefix("--").split("=", 1)[0] for o in options if o.startswith("--")} | set(configured)
    defaults = [part for name, value in DEFAULT_OPTIONS.items() if name not in given for part in (f"--{name}", value)]
    return [sys.executable, "-m", "streamlit", "run", str(APP), *defaults, *options]


def compute_configured(files: list[dict], env: Mapping[str, str]) -> set[str]:
    """Which of lagmon's default options the user set: in a config.toml (parsed) or as STREAMLIT_SECTION_KEY."""
    out = set()
    for name in DEFAULT_OPTIONS:
        section, key = name.split(".")
        snake = re.sub(r"(?<!^)([A-Z])", r"_\1", key)  # gatherUsageStats -> gather_Usage_Stats
        variable = f"STREAMLIT_{section}_{snake}".upper()
        if variable in env or any(key in f.get(section, {}) for f in files):
            out.add(name)
    return out


def read_configured() -> set[str]:
    """compute_configured over the files Streamlit reads (home, then the working directory) and the environment."""
    files = []
    for path in (Path.home() / ".streamlit" / "config.toml", Path.cwd() / ".streamlit" / "config.toml"):
        try:
            files.append(tomllib.loads(path.read_text()))
        except (OSError, tomllib.TOMLDecodeError):  # none, or one Streamlit itself will complain about
            continue
    return compute_configured(files, os.environ)


def run_dashboard(options: list[str]) -> int:
    """Streamlit's exit code; 0 when it stopped because we asked it to."""
    stop = threading.Event()
    stop_on_signals(stop)
    child = subprocess.Popen(streamlit_command(options, read_configured()), start_new_session=True)
    threading.Thread(target=lambda: (child.wait(), stop.set()), name="dashboard-exit", daemon=True).start()
    stop.wait()
    if child.poll() is not None:
        return _exit_code(child.returncode)  # it ended by itself: say how
    code = terminate(child, STOP_WAIT_S)
    if code is None:
        log.error("Streamlit did not stop within %gs of SIGTERM; killed it", STOP_WAIT_S)
        return 1
    if code not in (0, -signal.SIGTERM):  # -SIGTERM: it had not taken the signals over yet
        return _exit_code(code)
    log.info("stopped")
    return 0


def _exit_code(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode  # a signal's death as a shell reports it


def cmd_dashboard(args) -> int:
    return run_dashboard(args.streamlit_options)
