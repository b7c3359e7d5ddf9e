"""Differential conformance suite: the same requests to minibroker and to Apache Kafka 4.x.

Run with `make conformance` (or `python -m conformance`). See conformance/README.md.
"""
