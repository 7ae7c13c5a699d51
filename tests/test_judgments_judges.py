"""Judges grade label holes after a run: the http chat-completions judge, the python one,
their layer keyed by judge, model and prompt, and the two views of the figures."""

from __future__ import annotations

import json
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from examples.overlap_judge import make_judge
from monitor.cli import main
from monitor.config import load_config
from monitor.config.model import JudgeConfig
from monitor.errors import ConfigError
from monitor.judgments.judges import HttpJudge, JudgeError, build_judge, judge_source
from monitor.store import open_store

ROOT = Path(__file__).resolve().parent.parent


class ChatServer:
    """A local server that speaks the chat-completions shape and answers ``reply``."""

    def __init__(self) -> None:
        self.reply: Any = {"choices": [{"message": {"role": "assistant", "content": "2"}}]}
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                outer.requests.append(json.loads(self.rfile.read(length)))
                body = json.dumps(outer.reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/chat/completions"

    def answer(self, content: str) -> None:
        self.reply = {"choices": [{"message": {"role": "assistant", "content": content}}]}


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    thread = threading.Thread(target=server.server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()
    thread.join(timeout=5)


def test_the_http_judge_sends_a_chat_completion_and_reads_the_grade(chat: ChatServer) -> None:
    """The request carries the model and one user message; the answer's integer is the grade."""
    chat.answer("Grade: 2")
    judge = HttpJudge(chat.url, model="tiny", prompt="Q={query} D={document}")
    grade = judge("why", "because")
    judge.close()
    (sent,) = chat.requests
    assert (2, "tiny", [{"role": "user", "content": "Q=why D=because"}]) == (
        grade,
        sent["model"],
        sent["messages"],
    )


def test_an_answer_without_a_grade_is_a_clear_error(chat: ChatServer) -> None:
    """An answer holding no integer raises JudgeError quoting the answer."""
    chat.answer("I cannot tell.")
    judge = HttpJudge(chat.url, model="tiny")
    with pytest.raises(
        JudgeError, match="expected an integer grade in the answer, found 'I cannot"
    ):
        judge("q", "d")
    judge.close()


def test_a_body_that_is_not_a_chat_completion_is_a_clear_error(chat: ChatServer) -> None:
    """A body without choices[0].message.content raises JudgeError saying what was expected."""
    chat.reply = {"output": "2"}
    judge = HttpJudge(chat.url, model="tiny")
    with pytest.raises(JudgeError, match=r"choices\[0\]\.message\.content"):
        judge("q", "d")
    judge.close()


@pytest.mark.parametrize(
    ("change", "same"),
    [({}, True), ({"model": "bigger"}, False), ({"prompt": "other prompt"}, False)],
)
def test_the_layer_source_changes_with_model_and_prompt(change: dict[str, str], same: bool) -> None:
    """A changed model or prompt gives a new layer source, so old grades are not reused."""
    base = {"kind": "http", "judge_id": "llm", "model": "tiny", "prompt": "p"}
    assert same == (
        judge_source(JudgeConfig(**base)) == judge_source(JudgeConfig(**{**base, **change}))
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "passage", "grade"),
    [
        ("How quickly do we refund a double charge?", "We refund a double charge quickly.", 2),
        ("How quickly do we refund a double charge?", "A refund of a charge takes days.", 1),
        ("How quickly do we refund a double charge?", "Hedge trimmers need oil.", 0),
    ],
)
def test_the_offline_example_grades_by_the_query_terms_a_passage_holds(
    query: str, passage: str, grade: int
) -> None:
    """Most query terms present is 2, some is 1, none is 0."""
    assert grade == make_judge()(query, passage)


def test_a_python_judge_is_built_like_a_python_search() -> None:
    """``kind: python`` with a factory returns the factory's judge."""
    config = JudgeConfig(
        kind="python",
        judge_id="overlap",
        options={"target": "examples.overlap_judge:make_judge", "factory": True,
                 "path": str(ROOT)},
    )  # fmt: skip
    assert 2 == build_judge(config)("refund charge", "refund of a charge")


def write_config(tmp_path: Path, judge: str, alert_labels: str = "human") -> Path:
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              larkfield:
                evalset: {{bundled: larkfield}}
                search: {{kind: replay, bundled: larkfield/keyword}}
                baseline: {{bundled_run: larkfield/rerank}}
                metrics: [recall@5, ndcg@10]
                rules: [{{metric: ndcg@10, max_drop: 0.05}}]
                significance: {{iterations: 200}}
                alert_labels: {alert_labels}
                judge: {judge}
            """
        )
    )
    return config


OVERLAP = (
    "{{kind: python, id: overlap, target: 'examples.overlap_judge:make_judge', factory: true, "
    "path: {root}, max_per_run: {most}, prompt: '{prompt}'}}"
)


def judge_layers(tmp_path: Path) -> list[Any]:
    with open_store(tmp_path / "monitor.db") as store:
        return [layer for layer in store.layers("larkfield") if layer.kind == "judge"]


def test_a_run_lets_the_judge_grade_at_most_max_per_run_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After a run the judge's layer holds max_per_run grades and the report gives both views."""
    config = write_config(tmp_path, OVERLAP.format(root=ROOT, most=7, prompt="v1"))
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    out = capsys.readouterr().out
    (layer,) = judge_layers(tmp_path)
    assert (7, True, True) == (
        layer.size,
        "with human labels only" in out,
        "alerts are gated on human labels only" in out,
    )


def test_judge_grades_never_move_the_figures_that_gate_alerts_by_default(
    tmp_path: Path,
) -> None:
    """With alert_labels human, a second run after the judge graded has the first's means."""
    config = write_config(tmp_path, OVERLAP.format(root=ROOT, most=20, prompt="v1"))
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    with open_store(tmp_path / "monitor.db") as store:
        first, second = (store.get_run(run_id).means for run_id in (2, 3))
    assert dict(first) == dict(second)


def test_a_changed_prompt_starts_a_new_judge_layer(tmp_path: Path) -> None:
    """Grades of another prompt are not reused: the new prompt's judge grades again."""
    for prompt in ("v1", "v2"):
        config = write_config(tmp_path, OVERLAP.format(root=ROOT, most=5, prompt=prompt))
        assert 0 == main(["run", "--config", str(config), "--no-progress"])
    sources = [layer.source for layer in judge_layers(tmp_path)]
    assert (2, 5) == (len(set(sources)), min(layer.size for layer in judge_layers(tmp_path)))


@pytest.mark.parametrize(
    ("judge", "alert_labels", "key"),
    [
        ("{kind: ollama}", "human", "suites.larkfield.judge.kind"),
        ("{kind: python, max_per_run: -1}", "human", "suites.larkfield.judge.max_per_run"),
        ("{kind: python}", "judges", "suites.larkfield.alert_labels"),
    ],
)
def test_a_bad_judge_key_names_file_line_and_key(
    tmp_path: Path, judge: str, alert_labels: str, key: str
) -> None:
    """An unknown judge kind, a negative budget or an unknown view is a config error there."""
    config = write_config(tmp_path, judge, alert_labels)
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value).startswith(f"{config}:")
    assert key in str(caught.value)


def test_an_http_judge_in_a_suite_grades_through_the_chat_server(
    tmp_path: Path, chat: ChatServer
) -> None:
    """A suite's ``kind: http`` judge asks the server once per pair and stores its grades."""
    chat.answer("1")
    judge = f"{{kind: http, id: llm, url: '{chat.url}', model: tiny, max_per_run: 3}}"
    config = write_config(tmp_path, judge)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    (layer,) = judge_layers(tmp_path)
    grades = {grade for docs in layer.grades.values() for grade in docs.values()}
    assert (3, 3, {1}, "llm tiny") == (len(chat.requests), layer.size, grades, layer.who)


def test_a_judge_that_fails_leaves_the_run_standing(
    tmp_path: Path, chat: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unparseable answer is reported in the run's output; the run exits 0, no layer."""
    chat.answer("no idea")
    judge = f"{{kind: http, id: llm, url: '{chat.url}', model: tiny, max_per_run: 3}}"
    config = write_config(tmp_path, judge)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    assert ("judge failed", []) == (
        "judge failed" if "judge failed" in capsys.readouterr().out else "missing",
        judge_layers(tmp_path),
    )


BROKEN = """
def judge(query, doc_text):
    raise RuntimeError("model not loaded")
"""


def test_a_python_judge_that_raises_leaves_the_run_standing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A judge's own exception is reported with its type and message; the run exits 0."""
    (tmp_path / "brokenjudge.py").write_text(BROKEN)
    judge = f"{{kind: python, target: 'brokenjudge:judge', path: {tmp_path}}}"
    config = write_config(tmp_path, judge)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    out = capsys.readouterr().out
    assert "judge failed: judge 'python': raised RuntimeError: model not loaded" in out


def test_the_report_gives_both_views_with_the_human_one_as_stored(tmp_path: Path) -> None:
    """The report's ndcg@10 with human labels only is the stored run's; judge labels beside."""
    from monitor.report.compose import compose_report

    config = write_config(tmp_path, OVERLAP.format(root=ROOT, most=30, prompt="v1"))
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    suite = load_config(config).suite("larkfield")
    with open_store(tmp_path / "monitor.db") as store:
        report = compose_report(store, suite)
    (line,) = [w for w in report.comparison.warnings if w.startswith("ndcg@10: ")]
    human = f"{report.run.means['ndcg@10']:.4f} with human labels only"
    assert (human, True) == (line.split(", ")[0].removeprefix("ndcg@10: "), "judge labels" in line)
