"""`minibroker dump DATA_DIR`: print what a data directory holds, like Kafka's kafka-dump-log.sh.

Read-only and tolerant: it opens every file itself instead of going through LogManager (whose
open() recovers, and so writes), so it works on a directory a crashed broker left behind and
reports a torn tail, a bad CRC or a partial index entry instead of stopping. For each partition:
the segments' batches (offsets, producer id/epoch/sequences, transactional and control flags,
end-transaction markers), the offset, time and transaction indexes and the producer-state
snapshots; records of `__transaction_state` and `__consumer_offsets` are decoded. `--json`
prints one JSON document for scripts.

It never takes the data directory's lock (storage/data_dir_lock.py), so it also reads a directory
a broker is running on, and says so on stderr: what it sees there may be mid-write.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import re
import signal
import struct
import sys
import uuid
from typing import Any, TextIO

from minibroker.broker.kafka_compat import did_you_mean
from minibroker.coordinator import consumer_group_records, group_records, txn_state
from minibroker.protocol.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    BatchHeader,
    CorruptBatchError,
    crc_ok,
    iter_records,
    parse_control_record,
)
from minibroker.storage.data_dir_lock import LOCK_FILE, held_by
from minibroker.storage.producer_state import ProducerStateManager
from minibroker.storage.segment import ScanStop, scan_batches
from minibroker.storage.time_index import _ENTRY as TIME_ENTRY
from minibroker.storage.transaction_index import _ENTRY as TXN_ENTRY

OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position (storage/offset_index.py)
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
TXN_TOPIC, OFFSETS_TOPIC = "__transaction_state", "__consumer_offsets"


# ------------------------------------------------------------------------------ reading
def _text(data: bytes | None, limit: int = 200) -> str | None:
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data[:limit]).decode()
    return text if len(text) <= limit else text[:limit] + "..."


def _plain(value: Any) -> Any:
    """Dataclasses, named tuples, enums, sets and bytes as JSON-friendly values."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple (group_records' keys)
        return {name: _plain(v) for name, v in zip(value._fields, value, strict=True)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _text(bytes(value))
    if isinstance(value, uuid.UUID):  # a topic id, as Kafka prints one (base64url, unpadded)
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    if hasattr(value, "display"):  # TxnState
        return value.display
    return value


def _decode_txn_record(key: bytes, value: bytes | None) -> dict:
    txn_id = txn_state.decode_key(key)
    if value is None:
        return {"transactional_id": txn_id, "tombstone": True}
    meta = txn_state.decode_value(txn_id, value)
    out = _plain(meta)
    out["partitions"] = [f"{t}-{p}" for t, p in sorted(meta.partitions)]
    out.pop("has_failed_epoch_fence", None)  # in memory only, never stored
    return out


def _decode_offsets_record(key: bytes, value: bytes | None) -> dict:
    record = consumer_group_records.decode(key, value)
    if record is not None:  # a KIP-848 consumer group record (types 3-8, 16)
        out = {"key_type": type(record).__name__, **_plain(record)}
        if getattr(record, "value", None) is None:
            out.pop("value", None)
            out["tombstone"] = True
        return out
    decoded = group_records.decode_key(key)
    if decoded is None:
        return {"unknown_key": _text(key)}
    out = {"key_type": type(decoded).__name__, **_plain(decoded)}
    if value is None:
        out["tombstone"] = True
    elif isinstance(decoded, group_records.OffsetKey):
        out["value"] = _plain(group_records.decode_offset_value(value))
    else:
        out["value"] = _plain(group_records.decode_group_value(value))
    return out


def _record_entries(topic: str, batch: bytes, header: BatchHeader, print_data: bool) -> list[dict]:
    if header.is_control:
        marker = parse_control_record(batch)
        kind = {CONTROL_COMMIT: "COMMIT", CONTROL_ABORT: "ABORT"}.get(marker.type, f"type {marker.type}")
        return [
            {
                "offset": header.base_offset,
                "end_txn_marker": kind,
                "coordinator_epoch": marker.coordinator_epoch,
            }
        ]
    decoder = {TXN_TOPIC: _decode_txn_record, OFFSETS_TOPIC: _decode_offsets_record}.get(topic)
    if decoder is None and not print_data:
        return []
    out = []
    for rec in iter_records(batch):
        entry: dict[str, Any] = {"offset": rec.offset, "timestamp": rec.timestamp}
        if decoder is not None:
            try:
                if rec.key is None:
                    raise ValueError(f"a {topic} record without a key")
                entry["decoded"] = decoder(rec.key, rec.value)
            except Exception as exc:  # noqa: BLE001 - show the bytes and the reason, keep going
                entry["decode_error"] = f"{type(exc).__name__}: {exc}"
                entry["key"], entry["value"] = _text(rec.key), _text(rec.value)
        else:
            entry["key"], entry["value"] = _text(rec.key), _text(rec.value)
            entry["headers"] = [[k, _text(v)] for k, v in rec.headers]
        out.append(entry)
    return out


def dump_segment(path: str, topic: str, print_data: bool) -> dict:
    batches = []
    stop = ScanStop()
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        for position, h, data in scan_batches(fd, 0, size, stop, with_bytes=True):
            assert data is not None  # with_bytes=True
            batch = bytes(data)
            entry: dict[str, Any] = {
                "base_offset": h.base_offset,
                "last_offset": h.last_offset,
                "count": h.records_count,
                "position": position,
                "size": h.size,
                "base_sequence": h.base_sequence,
                "last_sequence": h.last_sequence,
                "producer_id": h.producer_id,
                "producer_epoch": h.producer_epoch,
                "partition_leader_epoch": h.partition_leader_epoch,
                "is_transactional": h.is_transactional,
                "is_control": h.is_control,
                "timestamp_type": "LogAppendTime" if h.timestamp_type else "CreateTime",
                "max_timestamp": h.max_timestamp,
                "compression": CODECS.get(h.compression, str(h.compression)),
                "crc_valid": crc_ok(batch),
            }
            if entry["crc_valid"]:
                try:
                    entry["records"] = _record_entries(topic, batch, h, print_data)
                except CorruptBatchError as exc:
                    entry["records_error"] = str(exc)
            batches.append(entry)
    finally:
        os.close(fd)
    out: dict[str, Any] = {"file": path, "size": size, "batches": batches}
    if stop.reason is not None:
        out["torn_tail"] = {"position": stop.position, "bytes": size - stop.position, "reason": stop.reason}
    return out


def _read_entries(path: str, entry: struct.Struct) -> tuple[list[tuple], int]:
    with open(path, "rb") as f:
        data = f.read()
    whole = len(data) - len(data) % entry.size
    return list(entry.iter_unpack(data[:whole])), len(data) - whole


def dump_index(path: str, base_offset: int) -> dict:
    suffix = os.path.splitext(path)[1]
    if suffix == ".index":
        rows, partial = _read_entries(path, OFFSET_ENTRY)
        entries = [{"offset": base_offset + rel, "position": pos} for rel, pos in rows]
    elif suffix == ".timeindex":
        rows, partial = _read_entries(path, TIME_ENTRY)
        entries = [{"timestamp": ts, "offset": base_offset + rel} for ts, rel in rows]
    else:  # .txnindex
        rows, partial = _read_entries(path, TXN_ENTRY)
        entries = [
            {
                "version": v,
                "producer_id": pid,
                "first_offset": first,
                "last_offset": last,
                "last_stable_offset": lso,
            }
            for v, pid, first, last, lso in rows
        ]
    out: dict[str, Any] = {"file": path, "entries": entries}
    if partial:
        out["partial_entry_bytes"] = partial
    return out


def dump_snapshot(path: str) -> dict:
    with open(path, "rb") as f:
        data = f.read()
    try:
        next_offset, producers = ProducerStateManager._decode(data)
    except (ValueError, struct.error) as exc:
        return {"file": path, "error": str(exc)}
    return {
        "file": path,
        "next_offset": next_offset,
        "producers": [
            {
                "producer_id": e.producer_id,
                "epoch": e.epoch,
                "coordinator_epoch": e.coordinator_epoch,
                "last_timestamp": e.last_timestamp,
                "current_txn_first_offset": e.current_txn_first_offset_raw,
                "batches": [
                    {
                        "first_seq": b.first_seq,
                        "last_seq": b.last_seq,
                        "first_offset": b.first_offset,
                        "last_offset": b.last_offset,
                    }
                    for b in e.batches
                ],
            }
            for e in producers.values()
        ],
    }


def dump_partition(path: str, topic: str, partition: int, print_data: bool) -> dict:
    names = sorted(os.listdir(path))
    segments, indexes, snapshots = [], [], []
    for name in names:
        full = os.path.join(path, name)
        stem, suffix = os.path.splitext(name)
        if not stem.isdigit():
            continue
        if suffix == ".log":
            segments.append(dump_segment(full, topic, print_data))
        elif suffix in (".index", ".timeindex", ".txnindex"):
            indexes.append(dump_index(full, int(stem)))
        elif suffix == ".snapshot":
            snapshots.append(dump_snapshot(full))
    return {
        "topic": topic,
        "partition": partition,
        "dir": path,
        "segments": segments,
        "indexes": indexes,
        "producer_snapshots": snapshots,
    }


def _read_small(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _locate(path: str) -> tuple[str, bool, list[tuple[str, str, int]]]:
    """What `path` is, decided in one place for dump, --topic and the running-broker check: a
    data directory (it holds meta.properties or the lock, or its name is not
    `<topic>-<partition>`) or one partition directory. Returns the data directory, whether
    `path` is it, and the partition directories to read: (directory, topic, partition)."""
    stripped = path.rstrip("/") or path
    one = PARTITION_DIR.match(os.path.basename(stripped))
    if (
        one is None
        or os.path.isfile(os.path.join(path, "meta.properties"))
        or os.path.exists(os.path.join(path, LOCK_FILE))
    ):
        partitions = []
        for name in sorted(os.listdir(path)):
            m, full = PARTITION_DIR.match(name), os.path.join(path, name)
            if m and os.path.isdir(full):
                partitions.append((full, m["topic"], int(m["partition"])))
        return path, True, partitions
    return (
        os.path.dirname(os.path.abspath(stripped)),
        False,
        [(stripped, one["topic"], int(one["partition"]))],
    )


def dump_data_dir(path: str, print_data: bool = False, topics: set[str] | None = None) -> dict:
    _, is_data_dir, partition_dirs = _locate(path)
    meta = {}
    if is_data_dir:
        meta = {
            "meta.properties": _read_small(os.path.join(path, "meta.properties")),
            "clean_shutdown_marker": os.path.exists(os.path.join(path, ".kafka_cleanshutdown")),
            "recovery_point_checkpoint": _read_small(os.path.join(path, "recovery-point-offset-checkpoint")),
            "producer_ids": _read_small(os.path.join(path, "producer_ids")),
        }
    partitions = [
        dump_partition(pdir, topic, partition, print_data)
        for pdir, topic, partition in partition_dirs
        if not topics or topic in topics
    ]
    return {"data_dir": path, **meta, "partitions": partitions}


# ------------------------------------------------------------------------------ text output
def _kv(d: dict, skip: tuple = ()) -> str:
    return " ".join(
        f"{k}: {json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in d.items() if k not in skip
    )


def render_text(dump: dict, out: TextIO) -> None:  # noqa: C901 - one section per kind of state, in order
    w = out.write
    w(f"Data directory {dump['data_dir']}\n")
    for key in ("meta.properties", "recovery_point_checkpoint", "producer_ids"):
        if dump.get(key):
            w(f"{key}:\n" + "".join(f"  {line}\n" for line in dump[key].splitlines()))
    if "clean_shutdown_marker" in dump:
        marker = (
            "present"
            if dump["clean_shutdown_marker"]
            else ("absent (last stop was not clean, or the broker is running)")
        )
        w(f"clean shutdown marker: {marker}\n")
    for part in dump["partitions"]:
        w(f"\n=== {part['topic']}-{part['partition']} ({part['dir']})\n")
        for seg in part["segments"]:
            w(f"Dumping {seg['file']} ({seg['size']} bytes)\n")
            for b in seg["batches"]:
                w(_kv(b, skip=("records", "records_error")) + "\n")
                for rec in b.get("records", ()):
                    w("| " + _kv(rec) + "\n")
                if "records_error" in b:
                    w(f"| cannot decode records: {b['records_error']}\n")
            if "torn_tail" in seg:
                t = seg["torn_tail"]
                w(f"TORN TAIL at position {t['position']} ({t['bytes']} bytes): {t['reason']}\n")
        for idx in part["indexes"]:
            w(f"Dumping {idx['file']}\n")
            for e in idx["entries"]:
                w(_kv(e) + "\n")
            if "partial_entry_bytes" in idx:
                w(f"PARTIAL ENTRY: {idx['partial_entry_bytes']} trailing bytes\n")
        for snap in part["producer_snapshots"]:
            w(f"Dumping {snap['file']}\n")
            if "error" in snap:
                w(f"UNREADABLE: {snap['error']}\n")
                continue
            w(f"next_offset: {snap['next_offset']}\n")
            for p in snap["producers"]:
                w(_kv(p) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="minibroker dump",
        description="Print a data directory's segments, indexes, producer snapshots "
        "and internal-topic records (read-only; works after a crash, and on the directory of a "
        "running broker, which it then names on stderr).",
        epilog="exit codes: 0 done; 2 no such directory or topic; 141 the output pipe was closed (`| head`)",
    )
    p.add_argument("path", help="data directory (log.dirs) or one <topic>-<partition> directory")
    p.add_argument("--json", action="store_true", help="one JSON document instead of text")
    p.add_argument("--print-data", action="store_true", help="print keys, values and headers of user records")
    p.add_argument("--topic", action="append", help="only this topic (repeatable)")
    args = p.parse_args(argv)
    if not os.path.isdir(args.path):
        print(f"minibroker dump: {args.path} is not a directory", file=sys.stderr)
        return 2
    if args.topic:
        unknown = _unknown_topics(args.path, args.topic)
        if unknown:
            print(unknown, file=sys.stderr)
            return 2
    _warn_if_running(args.path)
    dump = dump_data_dir(args.path, args.print_data, set(args.topic) if args.topic else None)
    try:
        if args.json:
            json.dump(dump, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            render_text(dump, sys.stdout)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at the interpreter's exit
    except BrokenPipeError:
        # `minibroker dump DIR | head`: the reader has all it wanted. Exit quietly, as cat does
        # (128 + SIGPIPE); stdout goes to /dev/null so the exit's own flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return 0


def _topics_in(path: str) -> set[str]:
    """The topics `dump_data_dir(path)` can show: those with a partition directory."""
    return {topic for _, topic, _ in _locate(path)[2]}


def _unknown_topics(path: str, wanted: list[str]) -> str | None:
    """A message naming the --topic values no partition directory in `path` belongs to."""
    known = _topics_in(path)
    missing = [t for t in dict.fromkeys(wanted) if t not in known]
    if not missing:
        return None
    lines = []
    for name in missing:
        lines.append(f"minibroker dump: no topic {name!r} in {path}{did_you_mean(name, sorted(known), n=3)}")
    shown = sorted(t for t in known if not t.startswith("__"))
    listing = ", ".join(shown[:20]) + (f" and {len(shown) - 20} more" if len(shown) > 20 else "")
    if not known:
        listing = "none"
    elif not shown:
        listing = "only internal ones (" + ", ".join(sorted(known)) + ")"
    lines.append(f"topics there: {listing}")
    return "\n".join(lines)


def _warn_if_running(path: str) -> None:
    """Say so when a broker holds the directory: dump reads without the lock (it must never stop
    a broker from starting, nor wait for one to stop), so what it sees may be mid-write."""
    data_dir = _locate(path)[0]
    pid = held_by(data_dir)
    if pid is not None:
        who = f"pid {pid}" if pid else "pid unknown"
        print(
            f"minibroker dump: a broker ({who}) is running on {os.path.abspath(data_dir)}; reading "
            f"without its lock, so the newest writes may be missing or partial (a torn tail may be "
            f"a write in progress). Stop the broker for an exact picture.",
            file=sys.stderr,
        )
