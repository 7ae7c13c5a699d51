"""The metric engine."""
