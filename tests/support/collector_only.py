"""`python -m monitor ...` as in the collector-only image: every module that image lacks fails to import.

Usage: python tests/support/collector_only.py MODULE,MODULE,... [monitor arguments]

The first argument names the top-level modules to refuse (tests/unit/test_collector_image.py
computes them: everything installed here but outside requirements-collector.txt and its
dependencies, and lagmon's own spark/ and app_pages/, which that image does not copy). A module
that tries one of them and copes (an optional import) copes here as it would there; one that
needs it fails here as it would there.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import runpy
import sys
from pathlib import Path


class Refuse(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname, path, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (not in the collector image)", name=fullname)
        return None


def main() -> None:
    refused = set(sys.argv[1].split(","))
    early = sorted(m for m in sys.modules if m.partition(".")[0] in refused)
    if early:
        sys.exit(f"already imported before the guard: {', '.join(early)}")
    sys.meta_path.insert(0, Refuse(refused))
    find_spec = importlib.util.find_spec  # asked, not imported: there, the answer is None
    importlib.util.find_spec = lambda name, package=None: (
        None if name.partition(".")[0] in refused else find_spec(name, package)
    )
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's monitor/
    sys.argv = ["python -m monitor", *sys.argv[2:]]
    runpy.run_module("monitor", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
