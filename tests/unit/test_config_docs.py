"""docs/configuration.md against the settings tree (monitor.config.AREAS), and the tree as the only reader.

Each area is a section of the page titled as the area; its rows are exactly the area's
fields, each with the field's default text and a meaning. Two kinds of field are not
read by Python's loaders alone: the LAGMON_KAFKA_* family (any librdkafka setting, one
field that reads them all) and the container image's settings (ImageSettings: read by
the scripts in docker/, whose `${VAR:-default}` must agree with the tree).
"""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from monitor.config import AREAS, declared

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"
ROW = re.compile(r"^\| `(LAGMON_[A-Z0-9_*]+)` \| ([^|]*) \| ([^|]*) \|$")
PYTHON = ["monitor", "spark", "app_pages", "app.py"]
TEXT_SOURCES = [*PYTHON, "docker", "Dockerfile"]


def page_sections() -> dict[str, dict[str, tuple[str, str]]]:
    """{section title: {variable: (default, meaning)}} for every table row of the page."""
    sections: dict[str, dict[str, tuple[str, str]]] = {}
    title = ""
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
        elif match := ROW.match(line):
            sections.setdefault(title, {})[match.group(1)] = (match.group(2).strip(), match.group(3).strip())
    return sections


def tree_variables() -> set[str]:
    return {s.env for area in AREAS for _, s in declared(area)}


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.__name__)
def test_each_area_is_a_section_whose_rows_are_its_fields(area):
    rows = page_sections().get(area.title)
    assert rows is not None, f"docs/configuration.md has no section '## {area.title}'"
    settings = {s.env: s for _, s in declared(area)}
    assert list(rows) == list(settings)  # the same variables, in the tree's order
    for env, (default, meaning) in rows.items():
        assert default == settings[env].default_text, env
        assert meaning, env


def test_every_row_of_the_page_is_a_field_of_the_tree():
    titles = {area.title for area in AREAS}
    strays = {title: list(rows) for title, rows in page_sections().items() if title not in titles}
    assert strays == {}


def test_every_field_of_an_area_is_a_setting():
    undeclared = [
        f"{area.__name__}.{f.name}"
        for area in AREAS
        for f in fields(area)
        if f.name not in {g.name for g, _ in declared(area)}
    ]
    assert undeclared == []


def test_a_literal_default_on_the_page_is_what_the_loader_gives_for_it():
    """`10s` on the page and 10.0 in the field are the same default."""
    for area in AREAS:
        unset = area.from_env({})
        for f, s in declared(area):
            literal = re.fullmatch(r"`([^`]+)`", s.default_text)
            if literal and not s.read_by:
                assert getattr(area.from_env({s.env: literal.group(1)}), f.name) == getattr(unset, f.name), s.env


def test_the_image_scripts_default_as_the_tree_says():
    for area in AREAS:
        for f, s in declared(area):
            if s.read_by:
                assert f"${{{s.env}:-{f.default}}}" in (ROOT / s.read_by).read_text(), s.env


def test_every_lagmon_name_in_the_sources_is_in_the_tree():
    """A message, a script or a docstring that names a variable names one that exists."""
    files = [
        p
        for s in TEXT_SOURCES
        for p in ([ROOT / s] if (ROOT / s).is_file() else (ROOT / s).rglob("*"))
        if p.is_file() and p.suffix in ("", ".py", ".sh", ".toml", ".yaml")
    ]
    found = {m for f in files for m in re.findall(r"\bLAGMON_[A-Z0-9_]+\b\*?", f.read_text(errors="replace"))}
    variables = tree_variables()
    prefixes = {name.removesuffix("*") for name in variables if name.endswith("*")}
    unknown = {
        name
        for name in found - variables
        if not any(name.startswith(p) for p in prefixes)  # LAGMON_KAFKA_SASL_PASSWORD: the family
        and not (name.endswith("*") and any(v.startswith(name[:-1]) for v in variables))  # LAGMON_SPARK_*
    }
    assert found, "found no settings: the scan is broken"
    assert sorted(unknown) == []


READERS = ("get", "getenv", "pop", "setdefault")


def read_key(node: ast.AST) -> ast.AST | None:
    """The key `node` reads from a mapping: m.get(key), os.getenv(key), m[key] or `key in m`."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return node.args[0] if name in READERS else None
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return node.slice
    if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
        return node.left
    return None


def names_lagmon(key: ast.AST | None) -> bool:
    if isinstance(key, ast.JoinedStr) and key.values:
        key = key.values[0]
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("LAGMON_")


def lagmon_reads(source: str) -> list[int]:
    """Lines of `source` that read a LAGMON_* variable, from os.environ or any mapping (argparse defaults too)."""
    return sorted({node.lineno for node in ast.walk(ast.parse(source)) if names_lagmon(read_key(node))})


def test_only_monitor_config_reads_lagmon_variables():
    """Entry points load settings from monitor.config and pass them down; no part reads the environment."""
    config = ROOT / "monitor" / "config"
    files = [p for s in PYTHON for p in ([ROOT / s] if s.endswith(".py") else (ROOT / s).rglob("*.py"))]
    reads = [
        f"{p.relative_to(ROOT)}:{line}"
        for p in files
        if config not in p.parents
        for line in lagmon_reads(p.read_text())
    ]
    assert reads == []


def test_the_read_detector_sees_every_form():
    source = """
import os
a = os.environ.get("LAGMON_A")
b = os.environ["LAGMON_B"]
c = os.getenv("LAGMON_C", "x")
d = "LAGMON_D" in os.environ
e = parser.add_argument("--e", default=os.environ.get(f"LAGMON_{name}"))
os.environ["LAGMON_F"] = "written, not read"
g = {"LAGMON_G": "a child's environment"}
"""
    assert lagmon_reads(source) == [3, 4, 5, 6, 7]
