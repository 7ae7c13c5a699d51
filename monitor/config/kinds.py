"""Read a plug-in section's ``kind`` (a built-in alias or ``entrypoint:<name>``) and its
path options, for the ``search`` and ``notifiers`` sections."""

from __future__ import annotations

import difflib

from monitor.config.fields import Fields
from monitor.config.model import OptionValue
from monitor.config.nodes import Node
from monitor.plugins import ENTRYPOINT, ENTRYPOINT_PREFIX, PluginKinds


def search_kinds() -> PluginKinds:
    """Return the search kinds: the search registry's built-in aliases and entry points."""
    # Imported when asked for: the plug-in packages import the config's records, so an
    # import at the top would have each package start by importing the other.
    from monitor.search.registry import KINDS

    return KINDS


def notifier_kinds() -> PluginKinds:
    """Return the notifier kinds: the notifier registry's built-in aliases and entry points."""
    from monitor.alerts.registry import KINDS  # imported here for the reason given above

    return KINDS


def plugin_kind(f: Fields, node: Node, kinds: PluginKinds, what: str) -> str:
    """Return a plug-in kind: a built-in alias or ``entrypoint:<name>``."""
    known = kinds.builtin_kinds()
    expected = f"a {what} kind: one of {', '.join(known)}, or entrypoint:<name> for a plug-in"
    kind = f.string(node, expected)
    if kind not in known and not ENTRYPOINT.fullmatch(kind):
        # Only a mistake pays for reading the installed distributions' entry points.
        installed = sorted(kinds.entry_points())
        plugins = [f"{ENTRYPOINT_PREFIX}{name}" for name in installed]
        if plugins:
            expected += f" (installed: {', '.join(plugins)})"
        # A plug-in's name is compared bare too: 'team' is close to 'entrypoint:teams'.
        # A built-in wins the bare name, as it does when the kind is built.
        spelled = {name: f"{ENTRYPOINT_PREFIX}{name}" for name in installed}
        spelled.update({plugin: plugin for plugin in plugins})
        spelled.update({name: name for name in known})
        close = difflib.get_close_matches(kind, list(spelled), n=1, cutoff=0.6)
        hint = f" (did you mean {spelled[close[0]]!r}?)" if close else ""
        raise f.error(node, expected + hint, show=True)
    return kind


def path_option(f: Fields, node: Node) -> OptionValue:
    """Resolve a path option (a string or a list of them) against the config's folder."""
    if isinstance(node.value, str):
        return str(f.path(node, "a path"))
    if isinstance(node.value, tuple):
        return tuple(str(f.path(item, "a path")) for item in node.value)
    return f.options(node)
