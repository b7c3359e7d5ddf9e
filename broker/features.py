"""Feature levels (KIP-584): what ApiVersions reports and UpdateFeatures (57) changes.

Clients read the finalized levels from ApiVersions (tags 0-2) and switch protocol paths by them:
a Java 4.x producer uses transactions V2 (KIP-890 part 2: no AddPartitionsToTxn, EndTxn v5, epoch
bump per transaction) when `transaction.version` is finalized at 2 or more. A feature is
finalized here only where everything it switches on in clients is served:

- `transaction.version` 0-2, finalized at 2 as Kafka 4.4 does (0 = classic KIP-98 transactions,
  1 = flexible transaction-log records, 2 = KIP-890 part 2).
- `group.version` 0-1, finalized at 1 as Kafka 4.4 does: 1 serves KIP-848 consumer groups
  (ConsumerGroupHeartbeat and ConsumerGroupDescribe, advertised only at 1; a data directory
  made before keeps the 0 it holds until upgraded).
- `share.version` 0-1, finalized at 1: KIP-932 share groups (ShareGroupHeartbeat/Describe,
  ShareFetch, ShareAcknowledge, Describe/Alter/DeleteShareGroupOffsets, advertised only at 1; a
  data directory made before keeps the 0 it holds until upgraded). Kafka 4.4 finalizes 2, which
  adds the share groups' dead-letter queue (KIP-1191), not served here.
- `streams.version`: supported 0-0 (KIP-1071 streams groups are not served), never finalized.
- `metadata.version`, `kraft.version` and `eligible.leader.replicas.version` are not reported:
  they describe a KRaft metadata log and replication this one-process broker does not have, and
  no client changes its requests by them.

The levels live in `<data_dir>/features.json` (replaced atomically, fsynced, through the
broker's durability path), with Kafka's finalized-features epoch, which goes up at each change.
The property `minibroker.features` (comma-separated `name=level`, e.g. `transaction.version=1`)
sets levels at startup, over what the file holds, so a user can run either transaction path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import structlog
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.durable_files import atomic_write

__all__ = [
    "SUPPORTED",
    "FeatureRange",
    "FeatureStore",
    "FeatureUpdate",
    "parse_features",
    "UPGRADE",
    "SAFE_DOWNGRADE",
    "UNSAFE_DOWNGRADE",
]

log = structlog.get_logger("minibroker.broker.features")

FILE_NAME = "features.json"

# UpdateFeatures' upgrade types (v1+); v0's allow_downgrade maps onto them
UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3


class FeatureRange(NamedTuple):
    """A feature this broker serves: its supported levels, the level a new data directory
    finalizes, and whether a downgrade is allowed."""

    min_level: int
    max_level: int
    default_level: int
    downgradable: bool = True


SUPPORTED: Mapping[str, FeatureRange] = {
    "group.version": FeatureRange(0, 1, 1),  # 1: KIP-848 consumer groups
    "share.version": FeatureRange(0, 1, 1),  # 1: KIP-932 share groups
    "streams.version": FeatureRange(0, 0, 0),
    "transaction.version": FeatureRange(0, 2, 2),
}


class FeatureUpdate(NamedTuple):
    feature: str
    max_version_level: int
    upgrade_type: int


def parse_features(text: str) -> dict[str, int]:
    """`minibroker.features`: "name=level,name=level" -> {name: level}; ValueError naming what
    is wrong (an unknown feature, a level outside its supported range, bad syntax)."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"{item!r} is not name=level")
        try:
            level = int(raw.strip())
        except ValueError:
            raise ValueError(f"{item!r}: the level is not an integer") from None
        spec = SUPPORTED.get(name)
        if spec is None:
            raise ValueError(f"unknown feature {name!r} (known: {', '.join(sorted(SUPPORTED))})")
        if not spec.min_level <= level <= spec.max_level:
            raise ValueError(f"{name}={level}: supported levels are {spec.min_level}-{spec.max_level}")
        out[name] = level
    return out


class FeatureStore:
    """The finalized levels and their epoch. `write(path, data)` replaces the file durably (the
    broker's `Durability.write_file`, off the event loop; `atomic_write` at startup)."""

    def __init__(self, data_dir: str, write: Callable[[str, bytes], None] = atomic_write) -> None:
        self.path = os.path.join(data_dir, FILE_NAME)
        self._write = write
        self.levels: dict[str, int] = {name: spec.default_level for name, spec in SUPPORTED.items()}
        self.epoch = 0

    def load(self, overrides: Mapping[str, int]) -> None:
        """Read the persisted levels, then apply `overrides` (the startup property); a change
        is written back (synchronously: this runs before the broker serves)."""
        stored = self._read()
        if stored is not None:
            self.epoch = stored[0]
            self.levels.update(stored[1])
        changed = stored is None or any(self.levels.get(k) != v for k, v in overrides.items())
        self.levels.update(overrides)
        if changed:
            self.epoch += 1
            atomic_write(self.path, self._encode())
        log.info(
            "feature levels", epoch=self.epoch, **{k.replace(".", "_"): v for k, v in self.levels.items()}
        )

    def _read(self) -> tuple[int, dict[str, int]] | None:
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
            levels = {str(k): int(v) for k, v in data["levels"].items() if k in SUPPORTED}
            return int(data["epoch"]), levels
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            log.warning(
                "feature level file is damaged; using the default levels",
                path=self.path,
                error=str(exc),
            )
            return None

    def _encode(self) -> bytes:
        return json.dumps({"epoch": self.epoch, "levels": self.levels}, sort_keys=True).encode()

    # ------------------------------------------------------------------ reads
    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def transaction_version(self) -> int:
        return self.level("transaction.version")

    def supported(self) -> list[dict]:
        """ApiVersions' SupportedFeatures."""
        return [
            dict(name=name, min_version=spec.min_level, max_version=spec.max_level)
            for name, spec in SUPPORTED.items()
        ]

    def finalized(self) -> list[dict]:
        """ApiVersions' FinalizedFeatures: the features at a level above 0 (min = max = level)."""
        return [
            dict(name=name, min_version_level=level, max_version_level=level)
            for name, level in self.levels.items()
            if level > 0
        ]

    # ------------------------------------------------------------------ UpdateFeatures
    def check(self, update: FeatureUpdate) -> str | None:
        """Why Kafka's controller refuses this update (its message), None when it is valid."""
        name, level, kind = update
        prefix = f"Invalid update version {level} for feature {name}."
        spec = SUPPORTED.get(name)
        if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return f"{prefix} The controller does not support the given upgrade type."
        if level < 0:
            return f"{prefix} A feature version cannot be less than 0."
        if spec is None:
            return f"{prefix} Local controller 1 does not support this feature."
        if not spec.min_level <= level <= spec.max_level:
            return f"{prefix} Local controller 1 only supports versions {spec.min_level}-{spec.max_level}"
        if level < self.level(name):
            if kind == UPGRADE:
                return (
                    f"{prefix} Can't downgrade the version of this feature without setting the "
                    "upgrade type to either safe or unsafe downgrade."
                )
            if not spec.downgradable:
                return f"{prefix} Can't downgrade the version of this feature."
        return None

    def update(self, updates: Iterable[FeatureUpdate], validate_only: bool) -> tuple[ErrorCode, str | None]:
        """Kafka's all-or-nothing UpdateFeatures: the first refused update fails the request
        with INVALID_UPDATE_VERSION; otherwise the levels change (unless `validate_only`)."""
        updates = list(updates)
        for update in updates:
            reason = self.check(update)
            if reason is not None:
                return (
                    ErrorCode.invalid_update_version,
                    "The update failed for all features since the following feature had an error: " + reason,
                )
        if validate_only:
            return ErrorCode.none, None
        changed = {
            u.feature: u.max_version_level for u in updates if self.level(u.feature) != u.max_version_level
        }
        if changed:
            self.levels.update(changed)
            self.epoch += 1
            self._write(self.path, self._encode())
            log.info(
                "feature levels updated",
                epoch=self.epoch,
                **{k.replace(".", "_"): v for k, v in changed.items()},
            )
        return ErrorCode.none, None
