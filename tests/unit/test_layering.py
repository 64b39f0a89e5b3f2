"""The layers of docs/architecture.md section 2 and the house style, checked in `make test`.

import-linter keeps the contracts in pyproject.toml ([tool.importlinter]): the layers, no
import circle inside a package, who may talk to Kafka, pure cores without I/O, the store as
an edge, the dashboard and Spark apart from the collector. What it cannot see is checked here
by parsing the sources: private names crossing modules, import-time cost, the one Spark
session builder. ruff keeps lint and format ([tool.ruff]).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(sys.executable).parent  # the venv's own ruff and lint-imports


def imports_of(path: Path, top_level_only: bool = False) -> set[str]:
    """Module names `path` imports (top-level statements only when asked: lazy imports are allowed)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def run_tool(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(TOOLS / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_the_import_contracts_hold():
    result = run_tool("lint-imports", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_no_private_name_is_imported_from_another_module():
    """`from monitor.x import _name` couples two modules through what one of them may change at will."""
    bad = [
        f"{p.relative_to(ROOT)}:{node.lineno} imports {node.module}.{alias.name}"
        for p in [ROOT / "app.py", *python_files("monitor", "spark", "app_pages")]
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.level == 0
        and node.module.split(".")[0] in ("monitor", "spark", "app_pages")
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert bad == []


def test_monitor_imports_spark_only_lazily():
    """The CLI starts in a fraction of a second: pyspark is imported by `analyze`, when it runs."""
    bad = [
        f"{path.relative_to(ROOT)} imports {name} at module level"
        for path in python_files("monitor")
        for name in imports_of(path, top_level_only=True)
        if name.split(".")[0] in ("spark", "pyspark")
    ]
    assert bad == []


def test_spark_session_is_built_in_one_place():
    """spark/session.py is the only SparkSession builder (docs/architecture.md section 2): one set of settings."""
    builders = [
        str(p.relative_to(ROOT))
        for p in python_files("spark", "monitor", "bench")
        if "SparkSession.builder" in p.read_text()
    ]
    assert builders == ["spark/session.py"]


def test_ruff_finds_nothing_to_lint_or_format():
    lint = run_tool("ruff", "check", "--no-cache", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    layout = run_tool("ruff", "format", "--check", "--no-cache", ".")
    assert layout.returncode == 0, layout.stdout + layout.stderr
