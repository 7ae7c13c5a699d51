"""The command line documents itself: every option has help text and a place in the README."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"


def leaf_parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Yield every parser that runs a command, with its sub-command path."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subcommands:
        for name, sub in action.choices.items():
            yield from leaf_parsers(sub, (*path, name))
    if not subcommands:
        yield path, parser


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Return the parser's own options and arguments, without -h and sub-command choices."""
    return [
        action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    ]


def spelled(action: argparse.Action) -> str:
    """Return how the README writes ``action``: its long option, or a positional's metavar."""
    if action.option_strings:
        return max(action.option_strings, key=len)
    return str(action.metavar or action.dest.upper())


def readme_commands() -> dict[str, str]:
    """Return the command cell of each row of the README's command table, by command path."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for match in re.finditer(r"^\| `retrieval-monitor ([^`]*)` \|", section, re.MULTILINE):
        cell = match.group(1)
        words = cell.split()
        path = []  # the leading sub-command words; a root option is its own key
        for word in words:
            if not re.fullmatch(r"[a-z][a-z-]*", word):
                break
            path.append(word)
        rows[" ".join(path) or words[0]] = cell
    return rows


def all_options() -> list[tuple[str, argparse.Action]]:
    """Return (command path, action) for every option of every sub-command and of the root."""
    parser = build_parser()
    pairs = [("", action) for action in options(parser)]
    pairs += [
        (" ".join(path), action) for path, leaf in leaf_parsers(parser) for action in options(leaf)
    ]
    return pairs


OPTIONS = all_options()
IDS = [f"{path or 'retrieval-monitor'} {spelled(action)}" for path, action in OPTIONS]


@pytest.mark.parametrize(("path", "action"), OPTIONS, ids=IDS)
def test_every_option_has_help_text(path: str, action: argparse.Action) -> None:
    """Every option and argument of every sub-command says what it does in --help."""
    assert action.help not in (None, "", argparse.SUPPRESS)


@pytest.mark.parametrize(("path", "action"), OPTIONS, ids=IDS)
def test_every_option_is_in_the_readme_command_table(path: str, action: argparse.Action) -> None:
    """The README's row for the sub-command names each of its options and their choices."""
    rows = readme_commands()
    key = path or spelled(action)
    assert key in rows, f"no README row for `retrieval-monitor {key}`"
    cell = rows[key]
    assert re.search(rf"(^|[\s\[]){re.escape(spelled(action))}(?![\w-])", cell), cell
    if action.choices is not None:
        assert "\\|".join(map(str, action.choices)) in cell


def test_every_readme_row_names_a_real_command() -> None:
    """Each command in the README's table is a sub-command (or option) the parser has."""
    parser = build_parser()
    real = {" ".join(path) for path, _ in leaf_parsers(parser)}
    real |= {spelled(action) for action in options(parser)}
    assert set() == set(readme_commands()) - real
