"""What a request may hold: a body of at most :data:`MAX_BODY_BYTES`, JSON at most
:data:`MAX_JSON_DEPTH` deep, and integers that fit the store's 64-bit columns.

Each limit is refused with a 4xx that says which one was passed: a body too large is a 413,
deep JSON or an integer out of range a 400 (404 for an id in a page's address), never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from monitor.errors import UsageError

#: The largest request body accepted (1 MiB): a label or a simulation is a few KiB.
MAX_BODY_BYTES = 1 << 20

#: How deeply a JSON body may nest arrays and objects (a simulation nests three deep).
MAX_JSON_DEPTH = 32

#: The largest integer a run id, page or grade may be: the store keeps 64-bit integers.
MAX_INT = (1 << 63) - 1

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]


class BodyTooLarge(Exception):
    """The request's body is larger than :data:`MAX_BODY_BYTES`."""

    def __init__(self) -> None:
        super().__init__(f"the request body is larger than {MAX_BODY_BYTES} bytes (1 MiB)")


def declared_too_large(headers: list[tuple[bytes, bytes]]) -> bool:
    """Return whether a ``Content-Length`` header announces a body over the limit."""
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value) > MAX_BODY_BYTES
            except ValueError:
                return False
    return False


async def read_body(receive: Receive) -> bytes:
    """Return the whole body read from ``receive``; raise BodyTooLarge past the limit.

    Reading stops at the first chunk past the limit, so a larger body is never held.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            break
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """Return a ``receive`` giving ``body`` in one message, then what ``receive`` gives."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def parse_json(body: bytes) -> Any:
    """Return the JSON document ``body`` holds; raise UsageError when it is not JSON, nests
    deeper than :data:`MAX_JSON_DEPTH` or holds an integer past :data:`MAX_INT`."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        # RecursionError: nesting deep enough to exhaust the parser's stack.
        raise UsageError("the request body: expected JSON") from None
    _check(data)
    return data


def _check(data: Any) -> None:
    # Iterative, so that checking never recurses as deep as the document.
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise UsageError(
                    f"the request body: expected JSON nested at most {MAX_JSON_DEPTH} deep"
                )
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
        elif isinstance(value, int) and not isinstance(value, bool) and not _fits(value):
            raise UsageError(
                f"the request body: expected integers of at most 64 bits, got {_shown(value)}"
            )


def bounded_int(raw: object, name: str) -> int:
    """Return ``raw`` (an int or its decimal text) as an int of at most 64 bits; raise
    UsageError naming ``name`` otherwise."""
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = int(str(raw))
    except ValueError:
        raise UsageError(f"{name}: expected an integer, got {_shown(raw)}") from None
    if not _fits(value):
        raise UsageError(f"{name}: expected an integer of at most 64 bits, got {_shown(raw)}")
    return value


def _fits(value: int) -> bool:
    return -MAX_INT - 1 <= value <= MAX_INT


def _shown(raw: object) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else f"{text[:37]}..."
