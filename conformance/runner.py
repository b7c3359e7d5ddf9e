"""Run every case against minibroker and the reference Kafka, compare, report.

Each case runs on both brokers at once (one thread per broker); its recorded answers are
decoded with one codec for both sides, normalised (conformance/normalise.py) and compared field
by field. A difference listed in conformance/deviations.toml is intended (each entry says why);
any other difference fails the run.
"""

from __future__ import annotations

import json
import re
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from conformance.cases import REGISTRY
from conformance.compare import MISSING, diff
from conformance.normalise import Normaliser
from conformance.session import OBSERVATION, Session
from conformance.wire import decode_pair

DEVIATIONS = Path(__file__).resolve().parent / "deviations.toml"


@dataclass
class Mismatch:
    case: str
    path: str
    minibroker: object
    kafka: object
    reason: str | None = None  # set when intended (deviations.toml)


@dataclass
class Deviation:
    case: str
    path: str
    reason: str
    values: dict  # optional "minibroker" / "kafka": the value that side must show (as text)
    used: int = 0

    def matches(self, m: Mismatch) -> bool:
        if not (glob(self.case, m.case) and glob(self.path, m.path)):
            return False
        return all(glob(want, _text(getattr(m, side))) for side, want in self.values.items())


def glob(pattern: str, text: str) -> bool:
    """`*` matches anything; every other character (brackets included) only itself."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), text, re.DOTALL) is not None


def load_deviations(path: Path = DEVIATIONS) -> list[Deviation]:
    data = tomllib.loads(path.read_text())
    out = []
    for entry in data.get("deviation", []):
        if not entry.get("reason", "").strip():
            raise ValueError(f"deviation {entry} in {path} has no reason")
        values = {side: str(entry[side]) for side in ("minibroker", "kafka") if side in entry}
        out.append(Deviation(entry["case"], entry.get("path", "*"), entry["reason"].strip(), values))
    return out


def run_case(name: str, fn, addresses: dict[str, tuple[str, int]]) -> dict[str, Session | str]:
    def one(address):
        s = Session(address, name)
        try:
            fn(s)
            return s
        except Exception as exc:  # noqa: BLE001 - a case that cannot finish is itself a result
            s.error = f"{type(exc).__name__}: {exc}"
            return s
        finally:
            s.close()

    with ThreadPoolExecutor(len(addresses)) as pool:
        futures = {side: pool.submit(one, addr) for side, addr in addresses.items()}
        return {side: f.result() for side, f in futures.items()}


def compare_case(name: str, sessions: dict[str, Session]) -> tuple[int, list[Mismatch]]:
    """Returns (number of compared answers, mismatches)."""
    mb, ka = sessions["minibroker"], sessions["kafka"]
    out: list[Mismatch] = []
    if mb.error or ka.error:  # reported even when both fail alike: a case must finish to count
        out.append(Mismatch(name, "<case error>", mb.error or "ok", ka.error or "ok"))
    labels = list(dict.fromkeys([r.label for r in mb.records] + [r.label for r in ka.records]))
    by_label = {side: {r.label: r for r in s.records} for side, s in (("m", mb), ("k", ka))}
    norm_m, norm_k = Normaliser(), Normaliser()
    for label in labels:
        rm, rk = by_label["m"].get(label), by_label["k"].get(label)
        if rm is None or rk is None:
            out.append(
                Mismatch(label, "<answer>", "recorded" if rm else MISSING, "recorded" if rk else MISSING)
            )
            continue
        if rm.api_key == OBSERVATION:
            out += [
                Mismatch(label, path or "<value>", a, b)
                for path, a, b in diff(norm_m(rm.body), norm_k(rk.body))
            ]
            continue
        if isinstance(rm.body, str) or isinstance(rk.body, str):
            vm = rm.body if isinstance(rm.body, str) else "ANSWERED"
            vk = rk.body if isinstance(rk.body, str) else "ANSWERED"
            if vm != vk:
                out.append(Mismatch(label, "<answer>", vm, vk))
            continue
        dm, dk = decode_pair(rm.api_key, rm.version, [rm.body, rk.body])
        for path, a, b in diff(norm_m(dm), norm_k(dk)):
            out.append(Mismatch(label, path, a, b))
    return len(labels), out


def classify(mismatches: list[Mismatch], deviations: list[Deviation]) -> None:
    for m in mismatches:
        for d in deviations:
            if d.matches(m):
                m.reason = d.reason
                d.used += 1
                break


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _short(value, width: int = 46) -> str:
    text = _text(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def table(rows: list[Mismatch]) -> str:
    lines = [f"{'case':<58} {'field':<44} {'minibroker':<46} kafka"]
    for m in rows:
        lines.append(
            f"{_short(m.case, 58):<58} {_short(m.path, 44):<44} {_short(m.minibroker):<46} {_short(m.kafka)}"
        )
    return "\n".join(lines)


def selected_cases(patterns: list[str]) -> list[tuple[str, object]]:
    return [(n, f) for n, f in REGISTRY if not patterns or any(glob(p, n) for p in patterns)]


def uncovered(covered: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """(api key, version) pairs minibroker advertises that no case sent; Produce v0-2 are listed
    for old clients only and answered by closing the connection, like Kafka 4."""
    from minibroker.broker.dispatch import HANDLERS  # noqa: PLC0415

    return [
        (k, v)
        for k, handler in sorted(HANDLERS.items())
        for v in range(handler.min_version, handler.max_version + 1)
        if (k, v) not in covered and not (k == 0 and v < 3)
    ]
