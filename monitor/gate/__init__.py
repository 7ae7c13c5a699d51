"""A quality gate for pull requests: a candidate run judged against an approved baseline.

:mod:`monitor.gate.records` holds what one gated suite produced (:class:`GateResult`); the
renderers (:mod:`monitor.gate.render`) turn results into what CI systems read: a markdown
summary, workflow annotations and JUnit XML.
"""
