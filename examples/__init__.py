"""Runnable examples of search plug-ins for retrieval-monitor.

They live beside the package, not in it: run them from the repository root
(``python -m examples.bm25_search``), and point a ``python`` search at them with
``path`` set to the repository root so that ``examples`` imports from there.
"""
