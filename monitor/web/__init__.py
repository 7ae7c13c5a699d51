"""The web app (``retrieval-monitor serve``): suites, runs and queries, the simulator, labeling.

Import :func:`create_app` and :class:`WebSettings` from here; the web framework is loaded
only when an app is built, so importing the package stays cheap.
"""

from __future__ import annotations

from monitor.web.app import DEFAULT_ADDRESS, DEFAULT_PORT, WebSettings, create_app

__all__ = ["DEFAULT_ADDRESS", "DEFAULT_PORT", "WebSettings", "create_app"]
