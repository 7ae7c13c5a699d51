"""``run --format json`` writes its report as ``json.dump(..., indent=2)`` does, byte for byte."""

from __future__ import annotations

import enum
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.cli.run import indented_json

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
)
keys = st.text(max_size=4) | st.integers() | st.floats() | st.booleans() | st.none()
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=20,
)


class Colour(enum.IntEnum):
    """An int subclass, which the standard encoder writes as its number."""

    RED = 1


@given(documents)
@settings(max_examples=400, deadline=None)
def test_any_document_is_written_as_json_dump_writes_it(document: object) -> None:
    """Nested dicts, lists and tuples of any scalars, non-string keys too, read the same."""
    assert json.dumps(document, indent=2) == "".join(indented_json(document))


def test_a_report_of_many_flat_rows_is_written_as_json_dump_writes_it() -> None:
    """A list of flat per-query rows, the bulk of a large report, is written alike."""
    rows = [
        {"query_id": f"q{i}", "rbo": i / 7, "jaccard": None, "ok": i % 2 == 0} for i in range(50)
    ]
    document = {"suites": [{"comparison": {"overlap": {"queries": rows, "n": 50}}, "e": []}]}
    assert json.dumps(document, indent=2) == "".join(indented_json(document))


def test_values_of_other_types_are_left_to_the_standard_encoder() -> None:
    """A subclass of int is written by the standard encoder, as json.dump writes it."""
    document = {"colour": Colour.RED, "rows": [{"c": Colour.RED}]}
    assert json.dumps(document, indent=2) == "".join(indented_json(document))
