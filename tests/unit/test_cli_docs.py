"""docs/cli.md against the command line (monitor.__main__.build_parser), as test_config_docs.py holds
docs/configuration.md to the settings tree.

The page has one section per command, headed `## lagmon COMMAND`, and one per nested command or
action, headed `### lagmon COMMAND ACTION` (`devcluster start`, `db upgrade`, `alerts silence`: a
sub-parser's choices, or the choices of a positional argument named `action`). A section runs to the
next heading. Its options are the table rows whose first cell starts with a backticked option, e.g.
"| `--since T` | ... |" or "| `--suffix S`, `--prefix S` | ... |": every option string in that cell
counts. An option belongs to the section of the parser that takes it (`alerts --by` is under
`## lagmon alerts`, not under `### lagmon alerts ack`). The root parser's own options are under
`## lagmon`. Hidden options (help=argparse.SUPPRESS) and -h/--help are not documented; a hidden option
must not appear on the page at all. The choices of any other positional argument (the scenarios of
`sim`) are table rows whose first cell names them in backticks.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from monitor.__main__ import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
COMMAND = re.compile(r"^lagmon(?: [a-z0-9][a-z0-9-]*)*$")
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)")
CODE = re.compile(r"`([^`]*)`")
NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ACTION_DEST = "action"

Commands = dict[str, dict]  # path -> {"options": set[str], "choices": set[str]}


def _visible(action: argparse.Action) -> bool:
    return action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction)


def parser_commands(parser: argparse.ArgumentParser, path: str = "lagmon") -> Commands:
    """{"lagmon devcluster start": {"options": {"--dir", "--nodes"}, "choices": set()}, ...} for every command."""
    here = {"options": set(), "choices": set()}
    found: Commands = {path: here}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            hidden = {a.dest for a in action._choices_actions if a.help == argparse.SUPPRESS}
            for name, child in action.choices.items():
                if name not in hidden:
                    found.update(parser_commands(child, f"{path} {name}"))
        elif action.option_strings:
            if _visible(action):
                here["options"].update(action.option_strings)
        elif action.choices and action.dest == ACTION_DEST:
            found.update({f"{path} {choice}": {"options": set(), "choices": set()} for choice in action.choices})
        elif action.choices:
            here["choices"].update(str(choice) for choice in action.choices)
    return found


def hidden_options(parser: argparse.ArgumentParser) -> set[str]:
    hidden = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                hidden |= hidden_options(child)
        elif action.option_strings and action.help == argparse.SUPPRESS:
            hidden.update(action.option_strings)
    return hidden


def page_commands(text: str) -> Commands:
    """The same shape, from the page: its command sections, their option rows and choice rows."""
    found: Commands = {}
    current: dict | None = None
    for line in text.splitlines():
        if heading := HEADING.match(line):
            title = heading.group(2).strip("`")
            current = None
            if COMMAND.match(title):
                assert title not in found, f"docs/cli.md has two sections '{title}'"
                current = found[title] = {"options": set(), "choices": set()}
        elif current is not None and line.startswith("|"):
            first = line.strip("|").split("|")[0].strip()
            codes = CODE.findall(first)
            if not first.startswith("`") or not codes:
                continue
            if codes[0].startswith("-"):
                current["options"].update(m.group(1) for code in codes if (m := OPTION.match(code)))
            else:
                current["choices"].update(code for code in codes if NAME.match(code))
    return found


def differences(parser: Commands, page: Commands) -> list[str]:
    """What the page misses of the parser, and what it has that the parser does not; empty when they agree."""
    out = [f"no section '{path}'" for path in parser if path not in page]
    out += [f"section '{path}' is no command" for path in page if path not in parser]
    for path in parser.keys() & page.keys():
        for kind in ("options", "choices"):
            want, have = parser[path][kind], page[path][kind]
            out += [f"{path}: {kind[:-1]} {x} is not documented" for x in sorted(want - have)]
            out += [f"{path}: {kind[:-1]} {x} is not in the parser" for x in sorted(have - want)]
    return sorted(out)


def test_the_page_documents_exactly_the_commands_and_options_of_the_parser():
    assert differences(parser_commands(build_parser()), page_commands(PAGE.read_text())) == []


def test_hidden_options_stay_off_the_page():
    text = PAGE.read_text()
    hidden = hidden_options(build_parser())
    assert hidden, "found no hidden option: the walk is broken (collect --worker is one)"
    shown = sorted(o for o in hidden if re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text))
    assert shown == []


def test_the_walk_finds_nested_commands_actions_and_options():
    commands = parser_commands(build_parser())
    assert "--version" in commands["lagmon"]["options"]
    assert {"lagmon devcluster start", "lagmon db upgrade", "lagmon alerts silence"} <= commands.keys()
    assert "--nodes" in commands["lagmon devcluster start"]["options"]
    assert "-h" not in commands["lagmon collect"]["options"]


def test_a_difference_either_way_is_found():
    """The check itself: a missing or stray command, option or choice each make a difference."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", action="version", version="1")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run")
    run.add_argument("--fast", "--quick", action="store_true")
    run.add_argument("--secret", help=argparse.SUPPRESS)
    run.add_argument("mode", choices=["a", "b"])
    db = sub.add_parser("db")
    db.add_argument("action", choices=["upgrade"])
    commands = parser_commands(parser)
    good = """# CLI
## lagmon
| option | meaning |
|---|---|
| `--version` | the version |

## lagmon run
| option | meaning |
|---|---|
| `--fast`, `--quick` | faster |

| mode | what |
|---|---|
| `a`, `b` | modes |

## Not a command
| `--anything` | ignored: not a command section |

## lagmon db
### lagmon db upgrade
"""
    assert differences(commands, page_commands(good)) == []
    assert differences(commands, page_commands(good.replace(", `--quick`", ""))) == [
        "lagmon run: option --quick is not documented"
    ]
    assert differences(commands, page_commands(good.replace("`--fast`", "`--fast`, `--slow N`"))) == [
        "lagmon run: option --slow is not in the parser"
    ]
    assert differences(commands, page_commands(good.replace("### lagmon db upgrade\n", ""))) == [
        "no section 'lagmon db upgrade'"
    ]
    assert differences(commands, page_commands(good + "## lagmon stop\n")) == ["section 'lagmon stop' is no command"]
    assert differences(commands, page_commands(good.replace("`a`, `b`", "`a`"))) == [
        "lagmon run: choice b is not documented"
    ]
    assert hidden_options(parser) == {"--secret"}
