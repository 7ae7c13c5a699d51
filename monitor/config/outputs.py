"""Read the sections that say where a suite's results go: ``exporters`` and ``notifiers``,
and the ``labels`` and ``links`` they carry."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from monitor.config import vocab
from monitor.config.common import (
    ExporterConfig,
    HttpExporterConfig,
    LinksConfig,
    NotifierConfig,
    PushgatewayExporterConfig,
    TextfileExporterConfig,
)
from monitor.config.fields import Fields, is_secret_key, mask_url
from monitor.config.kinds import notifier_kinds, path_option, plugin_kind
from monitor.config.model import Secret
from monitor.config.nodes import Node


def exporters(f: Fields, node: Node | None) -> tuple[ExporterConfig, ...]:
    """Read ``exporters``: pushgateway, textfile and http (scrape endpoint)."""
    if node is None or node.value is None:
        return ()
    out: list[ExporterConfig] = []
    for item in f.sequence(node, "exporters such as {kind: textfile, path: monitor.prom}"):
        exporter = _exporter(f, item)
        if exporter in out:
            raise f.error(item, "each exporter once")
        out.append(exporter)
    return tuple(out)


def _exporter(f: Fields, node: Node) -> ExporterConfig:
    if not isinstance(node.value, Mapping):
        raise f.error(node, "a mapping (an exporter: kind and its options)", show=True)
    kinds = tuple(vocab.EXPORTER_KEYS)
    expected = f"an exporter kind: one of {', '.join(kinds)}"
    kind = f.string(f.require(node, node.value, "kind"), expected)
    if kind not in vocab.EXPORTER_KEYS:
        raise f.error(node.value["kind"], expected, show=True)
    entries = f.mapping(node, ("kind", *vocab.EXPORTER_KEYS[kind]), f"a {kind} exporter")
    if kind == "pushgateway":
        url_node = f.require(node, entries, "url")
        url = f.url(url_node, "a Pushgateway URL such as http://pushgateway:9091", secret=True)
        job = "retrieval-monitor"
        if "job" in entries:
            job = f.string(entries["job"], "a job name", pattern=vocab.TEXT)
        return PushgatewayExporterConfig(url=Secret(url, mask_url(url, hide_path=False)), job=job)
    if kind == "textfile":
        path = f.path(f.require(node, entries, "path"), "a .prom file path")
        if path.suffix != ".prom":
            raise f.error(
                entries["path"],
                "a file name ending in .prom (node_exporter reads only those)",
                show=True,
            )
        if f.check_files:
            _writable_target(f, entries["path"], path)
        return TextfileExporterConfig(path=path)
    port = 9108
    if "port" in entries:
        port = f.integer(entries["port"], minimum=1, maximum=65535)
    address = "127.0.0.1"
    if "address" in entries:
        address = f.string(
            entries["address"],
            "a listen address such as 127.0.0.1, 0.0.0.0 or ::",
            pattern=vocab.ADDRESS,
        )
    return HttpExporterConfig(port=port, address=address)


def _writable_target(f: Fields, node: Node, path: Path) -> None:
    """Refuse a textfile target no run could write: a folder, or a path under a file."""
    if path.is_dir():
        raise f.error(node, "a .prom file path, not a folder", show=True)
    for parent in path.parents:
        if parent.is_dir():
            return
        if parent.exists() or parent.is_symlink():
            raise f.error(node, f"a .prom file path under a folder ({parent} is not one)")


def notifiers(f: Fields, node: Node | None) -> tuple[NotifierConfig, ...]:
    """Read ``notifiers``: a kind, an optional secret ``url``, ``secret_env`` and options."""
    if node is None or node.value is None:
        return ()
    return tuple(
        _notifier(f, item)
        for item in f.sequence(node, "notifiers such as {kind: slack, url: ${SLACK_URL}}")
    )


def _notifier(f: Fields, node: Node) -> NotifierConfig:
    if not isinstance(node.value, Mapping):
        raise f.error(node, "a mapping (a notifier: kind and its options)", show=True)
    entries = node.value
    kind = plugin_kind(f, f.require(node, entries, "kind"), notifier_kinds(), "notifier")
    url = None
    if "url" in entries:
        if kind == "stdout":
            raise f.error(entries["url"], "no 'url' for kind: stdout")
        text = f.url(entries["url"], "an http(s) URL", secret=True)
        url = Secret(text, mask_url(text, hide_path=True))
    elif kind in vocab.NOTIFIERS_NEEDING_URL:
        raise f.error(node, f"the key 'url' (where the {kind} notifier sends alerts)")
    secret_env = None
    if "secret_env" in entries:
        secret_env = f.string(
            entries["secret_env"],
            "the name of an environment variable such as WEBHOOK_SECRET",
            pattern=vocab.ENV_NAME,
        )
    options = {
        key: path_option(f, child)
        if key in vocab.NOTIFIER_PATH_OPTIONS
        else f.options(child, is_secret_key(key))
        for key, child in entries.items()
        if key not in ("kind", "url", "secret_env")
    }
    return NotifierConfig(
        kind=kind, url=url, secret_env=secret_env, options=options, origin=f.origin(node)
    )


def labels(f: Fields, node: Node | None) -> dict[str, str]:
    """Read ``labels``: static Prometheus labels, names ``[a-zA-Z_][a-zA-Z0-9_]*``, no ``__``."""
    if node is None or node.value is None:
        return {}
    if not isinstance(node.value, Mapping):
        raise f.error(node, "a mapping of label names to values", show=True)
    out: dict[str, str] = {}
    for name, child in node.value.items():
        if not vocab.LABEL_NAME.fullmatch(name):
            raise f.error(
                child,
                "a Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*, not starting with __",
                found=name,
            )
        value = child.value
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise f.error(child, "a label value (a string or an integer)", show=True)
        out[name] = value
    return out


def links(f: Fields, node: Node | None) -> LinksConfig:
    """Read ``links``: report, dashboard and runbook URLs put into alerts."""
    if node is None or node.value is None:
        return LinksConfig()
    entries = f.mapping(node, vocab.LINK_KEYS, "report, dashboard and runbook URLs")
    found = {key: f.url(child, "an http(s) URL") for key, child in entries.items()}
    return LinksConfig(
        report=found.get("report"), dashboard=found.get("dashboard"), runbook=found.get("runbook")
    )
