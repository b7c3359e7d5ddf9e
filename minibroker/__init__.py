"""minibroker: a single-process Kafka-compatible broker for CI and laptops.

User-facing pieces live here: `minibroker.testing` (start a broker from any test framework),
`minibroker.pytest_plugin` (pytest fixtures, registered through the `pytest11` entry point) and
`python -m minibroker` (the broker's command line).
"""

__version__ = "0.1.0"
