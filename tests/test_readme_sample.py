"""The README's sample output is what the first command, ``retrieval-monitor run``, prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
ELISION = "..."


def sample_lines() -> list[str]:
    """Return the lines of the README's first code block that shows a firing alert."""
    block: list[str] | None = None
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if block is not None and block[:1] and block[0].startswith("[FIRING]"):
                return block
            block = [] if block is None else None
        elif block is not None:
            block.append(line)
    raise AssertionError("the README shows no sample output of `retrieval-monitor run`")


def matches(expected: str, actual: str) -> bool:
    """Tell whether an output line is the sample line (a trailing ``...`` keeps a prefix)."""
    if expected.endswith(ELISION):
        return actual.startswith(expected[: -len(ELISION)])
    return expected == actual


def unmatched(expected: list[str], actual: list[str]) -> str | None:
    """Return the first sample line the output does not give in order, or None.

    A line that is only ``...`` stands for any number of output lines; every other sample
    line must be the next output line.
    """
    position = 0
    skipping = False
    for line in expected:
        if line.strip() == ELISION:
            skipping = True
            continue
        while skipping and position < len(actual) and not matches(line, actual[position]):
            position += 1
        if position >= len(actual) or not matches(line, actual[position]):
            return line
        position += 1
        skipping = False
    return None


def test_the_readme_sample_is_what_the_first_command_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Every line of the README's sample output is printed by the embedded default run."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert 0 == main(["--quiet", "run", "--no-progress"])
    assert None is unmatched(sample_lines(), capsys.readouterr().out.splitlines())


@pytest.mark.parametrize(
    ("expected", "actual", "first_unmatched"),
    [
        (["a", "...", "d"], ["a", "b", "c", "d"], None),
        (["a", "b..."], ["a", "bcd"], None),
        (["a", "c"], ["a", "b", "c"], "c"),
        (["a", "...", "e"], ["a", "b"], "e"),
    ],
)
def test_an_elision_stands_for_any_lines_and_a_trailing_one_for_the_rest_of_a_line(
    expected: list[str], actual: list[str], first_unmatched: str | None
) -> None:
    """A sample line matches in order, ``...`` skipping lines and ``x...`` keeping a prefix."""
    assert first_unmatched == unmatched(expected, actual)
