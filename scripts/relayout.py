"""Move the top-level modules of ``monitor/`` that belong to a stage into that stage's package.

Run from the root of a checkout (a clean one: the moves are ``git mv``, the rewrites are plain
edits, and both are left uncommitted for review)::

    python3 scripts/relayout.py            # move, rewrite the references, then ruff-fix them
    python3 scripts/relayout.py --dry-run  # say what would move and which files would change

The script works from :data:`MOVES` alone, so it can be run again on a later checkout: a module
already at its new place is not moved again (its old references, if any came back, are still
rewritten); a module that is absent, whose destination package does not exist yet, or whose
destination is taken is skipped with a message. A second run changes nothing.

Every reference to a moved module is rewritten in the package, the tests, the benchmarks, the
scripts, the examples, the docs, the README and ``pyproject.toml`` (and the deployment files
beside them): ``from monitor.X import``, ``import monitor.X``, ``from monitor import X``,
dotted strings (``"monitor.X.name"`` for ``monkeypatch`` and ``mock.patch``, lazy-export
tables, entry points ``monitor.X:attr``), doc references (``monitor.X.func``,
``:mod:`monitor.X```) and paths (``monitor/X.py``). The rewritten Python files then get
ruff's import sorting and formatting (``ruff check --select I --fix``, ``ruff format``),
as the rest of the tree has them, when ruff is installed.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Move:
    """One module (``monitor/X.py`` or a package ``monitor/X/``) going to a new dotted name."""

    old: str
    new: str
    reason: str

    @property
    def old_path(self) -> Path:
        return Path(*self.old.split("."))

    @property
    def new_path(self) -> Path:
        return Path(*self.new.split("."))


# The destination of every top-level module of monitor/ that belongs to a stage. The data flows
# config -> evalset -> search -> runner -> metrics -> store -> compare -> publish (exporters,
# alerts) -> job (composition) -> cli / daemon / web / report / gate.
#
# Stay at the top level, because every stage (or several unrelated ones) reads them and putting
# them in one stage would make the others import that stage:
#   errors    the one error hierarchy every stage raises from (STYLE: "stages share only small
#             frozen records and the errors module");
#   records   the small frozen records passed between the stages (the seam module);
#   io        the one atomic writer and the bounded, decompressing reader of input files;
#   logs      structured logging, configured once by the CLI;
#   secrets   the scrubber the search, the runner, the notifiers and the log handler share;
#   plugins   built-in aliases and entry points, loaded one way for every plug-in point;
#   texts     the columnar layout of many texts (evalset, run, store, compare, search);
#   terminal  control characters stripped at the terminal edge (notifiers, report, gate);
#   testing   the public fakes for users' tests (``monitor.testing`` is documented API);
#   __init__, __main__: the package surface and ``python -m monitor``.
# Left where they are on purpose: job.py (the composer) and memory.py, restructured separately.
# The four modules that move into job/ wait until job.py has become the package monitor/job/:
# until then they are skipped with a message.
MOVES: tuple[Move, ...] = (
    Move(
        "monitor.evaluation",
        "monitor.metrics.evaluation",
        "evaluate(): the metric stage's entry point; metrics/__init__.py stays a docstring",
    ),
    Move(
        "monitor.units",
        "monitor.metrics.units",
        "rewrites judgments and run into unit space for the metric engine; only evaluate reads it",
    ),
    Move(
        "monitor.ksweep",
        "monitor.metrics.ksweep",
        "tabulates every measure at several k through evaluate()",
    ),
    Move(
        "monitor.pipelines",
        "monitor.compare.pipelines",
        "A/B of pipelines: paired tests of each against the first (compare.stats)",
    ),
    Move(
        "monitor.bundled",
        "monitor.evalset.bundled",
        "the bundled Larkfield eval set, runs and passages; reads only evalset",
    ),
    Move(
        "monitor.validate",
        "monitor.cli.validate",
        "'config validate' and the daemon's start check; builds search, judge and notifiers",
    ),
    Move(
        "monitor.exits",
        "monitor.cli.exits",
        "the exit-code table the command line maps errors through; only the CLI reads it",
    ),
    Move(
        "monitor.outcome",
        "monitor.job.outcome",
        "what one composed run produced; built by run_suite, read by publish, daemon and CLI",
    ),
    Move(
        "monitor.publish",
        "monitor.job.publish",
        "the composer's export and alert steps over the exporters and alerts packages",
    ),
    Move(
        "monitor.shards",
        "monitor.job.shards",
        "sharded runs: the composer's slices, parts and attempts (run_shard)",
    ),
    Move(
        "monitor.lockskips",
        "monitor.job.lockskips",
        "the composer's suite lock and its skip count (needs the schedule, so not in store)",
    ),
)

#: Where references are rewritten: folders and files at the root of the checkout.
ROOTS = (
    "monitor",
    "tests",
    "benchmarks",
    "scripts",
    "examples",
    "docs",
    "README.md",
    "pyproject.toml",
    "action.yml",
    "jobs",
    "alerts",
    "config",
    ".ci",
)
#: The text files among them (by suffix; files without a suffix, such as .ci/run, too).
TEXT_SUFFIXES = frozenset(
    {".py", ".pyi", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".sh", ""}
)


def main(argv: Sequence[str] | None = None) -> int:
    """Perform the moves of :data:`MOVES` in the current checkout; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="change nothing; say what would")
    parser.add_argument("--no-ruff", action="store_true", help="do not run ruff on the result")
    args = parser.parse_args(argv)
    root = Path.cwd()
    if not (root / "monitor" / "__init__.py").is_file() or not (root / ".git").exists():
        print("relayout: run this from the root of a checkout (monitor/ and .git)", file=sys.stderr)
        return 2
    active = [move for move in MOVES if _perform(root, move, dry_run=args.dry_run)]
    changed = rewrite_tree(root, active, dry_run=args.dry_run)
    for path in changed:
        print(f"{'would rewrite' if args.dry_run else 'rewrote'} {path}")
    python = [root / path for path in changed if path.suffix == ".py"]
    if python and not args.dry_run and not args.no_ruff:
        _ruff(root, python)
    return 0


def _perform(root: Path, move: Move, *, dry_run: bool) -> bool:
    """Move ``move``'s module if it is due; return whether its references are to be rewritten."""
    source = _module_path(root, move.old_path)
    target = _module_path(root, move.new_path)
    parent = root / move.new_path.parent
    if source is None and target is not None:
        print(f"{move.old}: already at {move.new}")
        return True
    if source is None:
        print(f"{move.old}: absent, skipped")
        return False
    if target is not None:
        print(f"{move.old}: skipped, {target.relative_to(root)} is already taken")
        return False
    if not (parent / "__init__.py").is_file():
        print(f"{move.old}: skipped, {move.new_path.parent}/ is not a package yet")
        return False
    destination = parent / (move.new_path.name + ("" if source.is_dir() else ".py"))
    print(f"{move.old} -> {move.new}: {move.reason}")
    if not dry_run:
        subprocess.run(
            ["git", "mv", str(source.relative_to(root)), str(destination.relative_to(root))],
            cwd=root,
            check=True,
        )
    return True


def _module_path(root: Path, dotted: Path) -> Path | None:
    """Return the module file or package folder of a dotted path, or None if there is none."""
    module = root / dotted.with_name(dotted.name + ".py")
    if module.is_file():
        return module
    package = root / dotted
    return package if (package / "__init__.py").is_file() else None


def rewrite_tree(root: Path, moves: Sequence[Move], *, dry_run: bool) -> list[Path]:
    """Rewrite the references to ``moves`` in every text file under :data:`ROOTS`; return the
    files that changed, relative to ``root``."""
    if not moves:
        return []
    this = Path(__file__).resolve()
    width = _line_length(root)
    changed = []
    for path in _text_files(root):
        if (root / path).resolve() == this:
            continue  # the table above names the old modules on purpose
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(text, moves, python=path.suffix in (".py", ".pyi"), width=width)
        if new != text:
            changed.append(path)
            if not dry_run:
                (root / path).write_text(new, encoding="utf-8")
    return changed


def _text_files(root: Path) -> list[Path]:
    """Return the tracked and the untracked, not ignored, text files under :data:`ROOTS`."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *ROOTS],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.decode()
    paths = sorted({Path(name) for name in listed.split("\0") if name})
    return [p for p in paths if p.suffix in TEXT_SUFFIXES and (root / p).is_file()]


def rewrite(text: str, moves: Sequence[Move], *, python: bool, width: int = 100) -> str:
    """Return ``text`` with every reference to a module of ``moves`` naming its new place.

    In Python, a comment or docstring line that a longer name pushed past ``width`` is wrapped
    into the next line of its paragraph (ruff's formatter wraps code, not prose).
    """
    if python:
        text = _split_from_imports(text, moves)
    for move in moves:
        text = _from_package_line(move).sub(_from_package_replacement(move), text)
        text = _dotted(move.old).sub(move.new, text)
        old, new = move.old.replace(".", "/"), move.new.replace(".", "/")
        text = re.sub(rf"(?<![\w./-]){re.escape(old)}(?=\.py\b|/)", new, text)
    if python:
        names = [name for move in moves for name in (move.new, move.new.replace(".", "/"))]
        text = _rewrap_prose(text, names, width)
    return text


def _line_length(root: Path) -> int:
    """Return ruff's ``line-length`` from ``pyproject.toml`` (100 when it gives none)."""
    try:
        config = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return 100
    found = re.search(r"^line-length\s*=\s*(\d+)", config, flags=re.MULTILINE)
    return int(found.group(1)) if found else 100


#: The start of a line of prose: an indent, then a comment's ``#`` or ``#:``, or the quotes
#: that open a docstring.
_PROSE_START = re.compile(r"[ \t]*(?:#:? |[rRbBuU]?\"\"\"|[rRbBuU]?''')?")


def _rewrap_prose(text: str, names: Sequence[str], width: int) -> str:
    """Return ``text`` with each comment or docstring line over ``width`` that names one of
    ``names`` cut at its last space that fits, the rest carried into the next line of its
    paragraph (or onto a new line when the paragraph ends there)."""
    lines = text.splitlines(keepends=True)
    prose = _prose_lines(text)
    carried: set[int] = set()
    index = 0
    while index < len(lines):
        line = lines[index].rstrip("\n")
        start = match.end() if (match := _PROSE_START.match(line)) else 0
        cut = line.rfind(" ", start + 1, width + 1)
        named = index in carried or any(name in line for name in names)
        if index not in prose or len(line) <= width or cut < 0 or not named:
            index += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        prefix = line[:start] if line.lstrip().startswith("#") else indent
        lines[index], overflow = line[:cut] + "\n", line[cut + 1 :]
        following = lines[index + 1].rstrip("\n") if index + 1 < len(lines) else ""
        if index + 1 in prose and _continues(following, prefix):
            lines[index + 1] = f"{prefix}{overflow} {following[len(prefix) :]}\n"
        else:
            lines.insert(index + 1, f"{prefix}{overflow}\n")
            prose = {i + (i > index) for i in prose} | {index + 1}
            carried = {i + (i > index) for i in carried}
        carried.add(index + 1)
        index += 1
    return "".join(lines)


def _continues(line: str, prefix: str) -> bool:
    """Return whether ``line`` goes on with the paragraph of a line that begins ``prefix``."""
    body = line[len(prefix) :]
    return (
        line.startswith(prefix)
        and bool(body.strip())
        and not body[0].isspace()
        and not body.startswith(("- ", "* ", '"""', "'''", ">>>", "#"))
    )


def _prose_lines(text: str) -> set[int]:
    """Return the 0-based numbers of the lines that hold only a comment or lie in a string
    spanning several lines (a docstring, most often)."""
    found: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    lines = text.splitlines()
    for token in tokens:
        (first, column), (last, _) = token.start, token.end
        if token.type == tokenize.COMMENT and not lines[first - 1][:column].strip():
            found.add(first - 1)
        elif token.type == tokenize.STRING and last > first:
            found.update(range(first - 1, last))
    return found


def _dotted(name: str) -> re.Pattern[str]:
    """Return the pattern of the dotted name ``name`` standing alone or followed by ``.attr``
    or ``:attr`` (not as the tail of a longer name nor the head of a longer word)."""
    return re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")


def _from_package_line(move: Move) -> re.Pattern[str]:
    """Return the pattern of a one-name ``from <package> import <module>`` line in prose, code
    blocks and docstrings (statements in Python files are split before, by their syntax)."""
    package, _, module = move.old.rpartition(".")
    return re.compile(
        rf"^(?P<indent>[ \t>]*)from {re.escape(package)} import {re.escape(module)}"
        rf"(?P<rest>(?: as \w+)?[ \t]*(?:#.*)?)$",
        flags=re.MULTILINE,
    )


def _from_package_replacement(move: Move) -> str:
    package, _, module = move.new.rpartition(".")
    alias = "" if module == move.old.rpartition(".")[2] else f" as {move.old.rpartition('.')[2]}"
    return rf"\g<indent>from {package} import {module}{alias}\g<rest>"


def _split_from_imports(text: str, moves: Sequence[Move]) -> str:
    """Return ``text`` with each ``from P import ...`` statement that names a moved module
    ``P.X`` split: the other names stay, each moved module comes from its new package."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    by_old = {move.old: move for move in moves}
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        moved = [a for a in node.names if f"{node.module}.{a.name}" in by_old]
        if not moved:
            continue
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        head, tail = lines[first][: node.col_offset], lines[last][node.end_col_offset or 0 :]
        if head.strip() or (tail.strip() and not tail.strip().startswith("#")):
            print(f"relayout: left a shared line alone: {lines[first].strip()}", file=sys.stderr)
            continue
        kept = [a for a in node.names if a not in moved]
        statements = []
        if kept:
            statements.append(f"from {node.module} import {_names(kept)}")
        for alias in moved:
            package, _, module = by_old[f"{node.module}.{alias.name}"].new.rpartition(".")
            name = alias.asname or (alias.name if module != alias.name else None)
            statements.append(f"from {package} import {module}{f' as {name}' if name else ''}")
        newline = "\n" if lines[last].endswith("\n") else ""
        comment = f"  {tail.strip()}" if tail.strip() else ""
        block = "".join(f"{head}{s}\n" for s in statements[:-1])
        block += f"{head}{statements[-1]}{comment}{newline}"
        edits.append((first, last, block))
    for first, last, block in sorted(edits, reverse=True):
        lines[first : last + 1] = [block]
    return "".join(lines)


def _names(aliases: Iterable[ast.alias]) -> str:
    return ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in aliases)


def _ruff(root: Path, files: Sequence[Path]) -> None:
    """Sort the imports and format ``files`` as the rest of the tree is, if ruff is installed."""
    if importlib.util.find_spec("ruff") is None:
        print("relayout: ruff is not installed; sort and format the files above", file=sys.stderr)
        return
    names = [str(path.relative_to(root)) for path in files]
    for command in (["check", "--select", "I", "--fix", "--quiet"], ["format", "--quiet"]):
        subprocess.run([sys.executable, "-m", "ruff", *command, *names], cwd=root, check=False)


if __name__ == "__main__":
    sys.exit(main())
