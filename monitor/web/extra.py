"""The web app's extra: without it, ``serve`` and ``daemon --ui-port`` name what to install.

The web framework is imported only when an app is built or served; :func:`require_web` is
called first there, so that a user without the ``web`` extra reads one line saying how to
get it, never an ImportError's traceback.
"""

from __future__ import annotations

import importlib

from monitor.errors import UsageError

#: The command that installs what the web app needs.
INSTALL = "pip install 'retrieval-monitor[web]'"
#: The modules of the web extra the app imports.
MODULES = ("starlette", "uvicorn", "jinja2")


def require_web() -> None:
    """Raise UsageError naming the ``web`` extra when a module of it cannot be imported."""
    missing = []
    for module in MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise UsageError(f"the web app needs {', '.join(missing)}: {INSTALL}")
