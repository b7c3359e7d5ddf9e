"""Listening ports for the brokers under comparison, all below 32768.

A readiness poller connecting while a JVM starts can be handed a local (ephemeral) port equal
to the target port; TCP simultaneous open then connects the socket to itself and Kafka fails
with "Address already in use". Linux hands out ephemeral ports from 32768 up, so listeners stay
below that.
"""

from __future__ import annotations

import random
import socket


def free_low_port(exclude: set[int] = frozenset()) -> int:
    for _ in range(200):
        port = random.randint(20000, 32000)
        if port in exclude:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port found between 20000 and 32000")
