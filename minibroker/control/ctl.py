"""`minibroker ctl`: the control plane from a shell (STUB, filled in by the ctl work)."""

from __future__ import annotations


def main(argv: list[str]) -> int:
    raise SystemExit("minibroker ctl: not built yet")
