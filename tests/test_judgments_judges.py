"""Judges grade label holes after a run: the http chat-completions judge, the python one,
their layer keyed by judge, model and prompt, and the two views of the figures."""

from __future__ import annotations

import hashlib
import json
import textwrap
import threading
import time
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
from monitor.judgments.judges import (
    HttpJudge,
    JudgeAnswerError,
    JudgeError,
    build_judge,
    judge_prompt,
    judge_source,
    parse_grade,
)
from monitor.store import open_store
from monitor.testing import FakeLLM

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
    """An answer holding no grade raises JudgeAnswerError quoting the answer."""
    chat.answer("I cannot tell.")
    judge = HttpJudge(chat.url, model="tiny")
    with pytest.raises(JudgeAnswerError, match=r"exactly one grade .*, found 'I cannot"):
        judge("q", "d")
    judge.close()


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ('{"grade": 2}', 2),
        ('{"grade": 0, "reason": "off topic"}', 0),
        ('```json\n{"grade": 1}\n```', 1),
        ("1", 1),
        ("The passage names the refund.\nGrade: 2", 2),
    ],
)
def test_an_answer_of_one_grade_in_the_reply_format_is_read(answer: str, grade: int) -> None:
    """A JSON object with a grade, a bare grade, or a last line grade: N gives that grade."""
    assert grade == parse_grade(answer, "llm", 2)


@pytest.mark.parametrize(
    "answer",
    [
        "On a scale of 0 to 2, I give it 2",
        "7",
        "-1",
        '{"grade": 3}',
        '{"grade": "2"}',
        '{"grade": true}',
        '{"grade": 1, "grade": 2}',
        '{"grade": 1.0}',
        '{"grade": ' + "9" * 5000 + "}",
        "[" * 100_000,
        "grade: 1\ngrade: 2",
        "grade: 3",
        "grade: \u0661",
        "grade: 1_0",
        "",
    ],
)
def test_an_answer_without_exactly_one_grade_of_the_scale_is_refused(answer: str) -> None:
    """Prose, a grade outside 0..2, a JSON string grade or two grades are all refused."""
    with pytest.raises(JudgeAnswerError):
        parse_grade(answer, "llm", 2)


def test_the_default_prompt_asks_for_the_reply_format_and_the_scale() -> None:
    """The built-in prompt names the JSON reply and the suite's scale, as sent."""
    prompt = judge_prompt(JudgeConfig(kind="http", judge_id="llm", max_grade=3))
    assert (True, True, False) == ('{"grade": N}' in prompt, "0 to 3" in prompt, "{max" in prompt)


def test_the_default_prompt_is_hashed_as_sent_not_as_the_empty_string() -> None:
    """The layer source of a judge with no prompt hashes the default prompt's text."""
    empty = hashlib.sha256(b"").hexdigest()[:12]
    assert not judge_source(JudgeConfig(kind="http", judge_id="llm", model="m")).endswith(empty)


def test_a_changed_scale_starts_a_new_layer_source() -> None:
    """Two scales of the default prompt are two prompts: their grades are never mixed."""
    a, b = (JudgeConfig(kind="http", judge_id="llm", max_grade=top) for top in (2, 3))
    assert judge_source(a) != judge_source(b)


class DripServer:
    """A local server that sends its answer one byte every 0.2 s (``headers``: from the
    status line on, else the headers at once and then the body)."""

    def __init__(self, body: bytes, *, headers: bool) -> None:
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                head = (
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                )
                dripped = head + body if headers else body
                try:
                    if not headers:
                        self.wfile.write(head)
                    for byte in dripped:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        if outer.stop.wait(0.2):
                            return
                except OSError:
                    return

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/chat/completions"


@pytest.mark.slow
@pytest.mark.parametrize("headers", [True, False], ids=["headers", "body"])
def test_a_server_that_drips_its_answer_is_cut_off_at_the_call_deadline(headers: bool) -> None:
    """A byte every 0.2 s never trips a per-read timeout; the call still ends by its deadline."""
    reply = json.dumps({"choices": [{"message": {"content": '{"grade": 1}'}}]}).encode()
    drip = DripServer(reply, headers=headers)
    thread = threading.Thread(target=drip.server.serve_forever)
    thread.start()
    judge = HttpJudge(drip.url, model="tiny", timeout=1.0)
    try:
        start = time.monotonic()
        with pytest.raises(JudgeError, match=r"a whole answer within 1 s \(timeout_seconds\)"):
            judge("q", "d")
        elapsed = time.monotonic() - start
    finally:
        judge.close()
        drip.stop.set()
        drip.server.shutdown()
        drip.server.server_close()
        thread.join()
    assert elapsed < 2.0


def test_a_body_that_is_not_a_chat_completion_is_a_clear_error(chat: ChatServer) -> None:
    """A body without choices[0].message.content raises JudgeError saying what was expected."""
    chat.reply = {"output": "2"}
    judge = HttpJudge(chat.url, model="tiny")
    with pytest.raises(JudgeError, match=r"choices\[0\]\.message\.content"):
        judge("q", "d")
    judge.close()


def test_an_answer_past_a_mebibyte_is_refused_unread(chat: ChatServer) -> None:
    """A body past MAX_ANSWER_BYTES is an error, never held whole in memory."""
    chat.answer("x" * (2 << 20))
    judge = HttpJudge(chat.url, model="tiny")
    with pytest.raises(JudgeError, match="expected an answer of at most 1048576 bytes"):
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


@pytest.mark.parametrize("timeout", [0, -1, 1e30, float("nan"), True, "30"])
def test_an_http_judge_timeout_is_seconds_above_0_of_at_most_a_week(timeout: object) -> None:
    """A timeout no timer can hold (1e30, NaN) or that is no number is refused at build."""
    config = JudgeConfig(
        kind="http",
        judge_id="llm",
        options={"url": "http://127.0.0.1:1/v1/chat/completions", "timeout_seconds": timeout},
    )  # type: ignore[dict-item]
    with pytest.raises(JudgeError) as caught:
        build_judge(config)
    assert "timeout_seconds" == caught.value.option


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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
        ("{kind: python, max_grade: 0}", "human", "suites.larkfield.judge.max_grade"),
        ("{kind: python, max_grade: 1e30}", "human", "suites.larkfield.judge.max_grade"),
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


@pytest.mark.slow
def test_an_http_judge_in_a_suite_grades_through_the_chat_server(tmp_path: Path) -> None:
    """A suite's ``kind: http`` judge asks the server once per pair and stores its grades."""
    with FakeLLM(default=1) as llm:
        judge = f"{{kind: http, id: llm, url: '{llm.url}', model: tiny, max_per_run: 3}}"
        config = write_config(tmp_path, judge)
        assert 0 == main(["run", "--config", str(config), "--no-progress"])
    (layer,) = judge_layers(tmp_path)
    grades = {grade for docs in layer.grades.values() for grade in docs.values()}
    assert (3, 3, {1}, "llm tiny") == (len(llm.requests), layer.size, grades, layer.who)


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


OVERSCALE = """
def judge(query, doc_text):
    return 7
"""


def test_grades_outside_the_scale_are_refused_counted_and_never_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A judge's 7 on a 0..2 scale is reported as a judge failure; no layer holds it."""
    (tmp_path / "overjudge.py").write_text(OVERSCALE)
    judge = f"{{kind: python, target: 'overjudge:judge', path: {tmp_path}, max_per_run: 3}}"
    config = write_config(tmp_path, judge)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    out = capsys.readouterr().out
    expected = "judge failed: judge 'python': 3 answers refused, never stored (first: expected"
    assert (True, []) == (expected in out, judge_layers(tmp_path))


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
