"""common/faults.py: arming crash points (names, keys, hits, after), what reaching one does, and
the property's form. A `crash` that raises stands for the SIGKILL."""

from __future__ import annotations

import os

import pytest
from minibroker.common.faults import CRASH_POINTS, Faults, UnknownCrashPoint

pytestmark = pytest.mark.timeout(10)


class Crashed(BaseException):  # like the kill it stands for: nothing catches it
    pass


def _raise() -> None:
    raise Crashed


def faults(*specs: str) -> Faults:
    return Faults(specs, crash=_raise)


def test_the_issues_names_are_the_points():
    assert set(CRASH_POINTS) == {
        "produce.after_append",
        "txn.after_prepare",
        "txn.after_markers",
        "txn.before_complete",
        "offsets.after_write",
        "log.mid_roll",
        "cleaner.mid_swap",
        "checkpoint.mid_write",
    }


def test_nothing_armed_is_one_attribute_test():
    f = faults()
    assert f.armed == ()
    for name in CRASH_POINTS:
        f.crash_point(name, "k")
    assert not f.reach("txn.after_prepare")


def test_an_armed_point_fires_once_then_is_gone():
    f = faults()
    f.arm("txn.after_prepare")
    f.crash_point("txn.before_complete")  # another point: nothing
    with pytest.raises(Crashed):
        f.crash_point("txn.after_prepare", "any-id")
    assert f.armed == ()
    f.crash_point("txn.after_prepare", "any-id")  # a restarted broker would be unarmed too


def test_a_key_limits_the_point():
    f = faults()
    f.arm("txn.after_prepare", key="tx-1")
    f.crash_point("txn.after_prepare", "tx-2")
    f.crash_point("txn.after_prepare")  # reached without a key: not this one's
    assert f.armed[0].reached == 0
    with pytest.raises(Crashed):
        f.crash_point("txn.after_prepare", "tx-1")


def test_a_key_matches_any_of_the_keys_a_reach_has():
    f = faults()
    f.arm("produce.after_append", key="orders-1")
    f.crash_point("produce.after_append", ["tx", "orders-0"])
    with pytest.raises(Crashed):
        f.crash_point("produce.after_append", ["tx", "orders-0", "orders-1"])
    f.arm("produce.after_append", key="tx")
    with pytest.raises(Crashed):
        f.crash_point("produce.after_append", ["tx", "orders-0"])


def test_hits_die_the_nth_time():
    f = faults()
    armed = f.arm("offsets.after_write", key="g", hits=3)
    f.crash_point("offsets.after_write", "g")
    f.crash_point("offsets.after_write", "other")  # not counted
    f.crash_point("offsets.after_write", "g")
    assert armed.reached == 2
    with pytest.raises(Crashed):
        f.crash_point("offsets.after_write", "g")


def test_after_counts_the_partitions_whose_markers_are_written():
    f = faults()
    armed = f.arm("txn.after_markers", key="tx", after=2)
    f.crash_point("txn.after_markers", "tx", done=1)
    assert armed.reached == 0
    with pytest.raises(Crashed):
        f.crash_point("txn.after_markers", "tx", done=2)
    f.arm("txn.after_markers")  # default: after the first
    assert f.armed[0].after == 1
    with pytest.raises(Crashed):
        f.crash_point("txn.after_markers", "tx", done=1)


def test_after_and_hits_together():
    f = faults()
    f.arm("txn.after_markers", after=1, hits=2)
    f.crash_point("txn.after_markers", "a", done=1)  # first transaction: counted, alive
    f.crash_point("txn.after_markers", "a", done=2)
    with pytest.raises(Crashed):
        f.crash_point("txn.after_markers", "b", done=1)


def test_several_armed_points_are_independent():
    f = faults()
    f.arm("txn.after_prepare", key="a")
    f.arm("txn.after_prepare", key="b", hits=2)
    f.crash_point("txn.after_prepare", "b")
    with pytest.raises(Crashed):
        f.crash_point("txn.after_prepare", "a")
    assert [(a.key, a.reached) for a in f.armed] == [("b", 1)]


def test_disarm():
    f = faults()
    f.arm("log.mid_roll")
    f.arm("checkpoint.mid_write")
    f.disarm()
    assert f.armed == ()
    f.crash_point("log.mid_roll", "t-0")


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        (dict(point="txn.after_prepar"), "unknown crash point 'txn.after_prepar'"),
        (dict(point="crash-after-prepare-commit"), "the known ones: produce.after_append"),
        (dict(point="txn.after_prepare", after=2), "`after` is for txn.after_markers"),
        (dict(point="txn.after_markers", after=0), "`after` must be 1 or more"),
        (dict(point="log.mid_roll", hits=0), "`hits` must be 1 or more"),
    ],
)
def test_refused_arguments(kwargs, problem):
    f = faults()
    with pytest.raises(UnknownCrashPoint, match=problem):
        f.arm(**kwargs)
    assert f.armed == ()


def test_the_property_form():
    f = Faults.from_property(" txn.after_prepare@tx-1 , cleaner.mid_swap,unknown.point ,")
    assert [(a.point, a.key) for a in f.armed] == [("txn.after_prepare", "tx-1"), ("cleaner.mid_swap", None)]
    assert Faults.from_property(None).armed == ()
    assert Faults.from_property("").armed == ()


def test_the_json_shown_by_the_control_plane():
    f = faults()
    armed = f.arm("txn.after_markers", key="tx", after=2, hits=3)
    f.crash_point("txn.after_markers", "tx", done=2)
    assert armed.to_json() == {"point": "txn.after_markers", "key": "tx", "after": 2, "hits": 3, "reached": 1}


def test_reach_then_crash_elsewhere():
    """The checkpoint decides on the loop and dies in the io thread: `reach` counts and disarms,
    `crash` dies."""
    f = faults()
    f.arm("checkpoint.mid_write")
    assert f.reach("checkpoint.mid_write")
    assert not f.reach("checkpoint.mid_write")
    with pytest.raises(Crashed):
        f.crash("checkpoint.mid_write")


# ------------------------------------------------------------------ storage points, in process
def _txn_batch(pid: int, seq: int, value: bytes) -> bytes:
    from minibroker.protocol.records import build_batch

    return build_batch(
        [(None, value)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        transactional=True,
        timestamp_ms=1,
    )


def test_log_mid_roll_leaves_a_log_recovery_repairs(tmp_path):
    """log.mid_roll in a transaction spanning the roll: the new segment is empty and has no
    producer snapshot; an unclean start keeps every batch and the transaction open (LSO at its
    first offset) until its marker."""
    from minibroker.storage.log_manager import LogManager

    from tests.support.storage import Clock, crash

    f = faults()
    f.arm("log.mid_roll", key="t-0")
    m = LogManager(str(tmp_path), {"log.segment.bytes": 400}, clock=Clock(), faults=f)
    m.open()
    m.create_topic("t", 1, {})
    plog = m.get_log("t", 0)
    appended = 0
    with pytest.raises(Crashed):
        for seq in range(100):
            plog.append(_txn_batch(7, seq, b"v" * 40))
            appended += 1
    crash(m)  # nothing flushed or closed, as SIGKILL leaves it
    directory = plog.dir
    newest = sorted(n for n in os.listdir(directory) if n.endswith(".log"))[-1]
    assert os.path.getsize(os.path.join(directory, newest)) == 0
    assert not os.path.exists(os.path.join(directory, newest.replace(".log", ".snapshot")))

    again = LogManager(str(tmp_path), {"log.segment.bytes": 400}, clock=Clock())
    again.open()
    log = again.get_log("t", 0)
    # the append that rolled died before writing its batch: the log ends with those before it
    assert log.log_end_offset == appended
    assert log.last_stable_offset == 0  # the transaction from offset 0 is still open
    log.append_marker(7, 0, True, 0)
    assert log.last_stable_offset == log.high_watermark == appended + 1
    again.close()


def test_checkpoint_mid_write_leaves_the_old_checkpoint_and_a_temp_file(tmp_path):
    """checkpoint.mid_write: the new recovery points are in a temporary file, not renamed; the
    next start removes it and recovers from the old recovery points, losing nothing."""
    from minibroker.storage.log_manager import LogManager

    from tests.support.storage import Clock, crash

    f = faults()
    m = LogManager(str(tmp_path), {}, clock=Clock(), faults=f)
    m.open()
    m.create_topic("t", 1, {})
    plog = m.get_log("t", 0)
    for seq in range(5):
        plog.append(_txn_batch(7, seq, b"v"))
    m.checkpoint_recovery_points(now=True)  # recovery point 0
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    old = checkpoint.read_text()
    assert "t 0 0" in old
    plog.flush()  # the recovery point moves to 5
    f.arm("checkpoint.mid_write")
    written = m.checkpoint_recovery_points()
    assert written is not None and isinstance(written.exception(), Crashed)
    crash(m)
    assert checkpoint.read_text() == old
    temps = list(tmp_path.glob(".tmp-*"))
    assert len(temps) == 1 and "t 0 5" in temps[0].read_text()

    again = LogManager(str(tmp_path), {}, clock=Clock())
    again.open()
    assert not list(tmp_path.glob(".tmp-*"))
    log = again.get_log("t", 0)
    assert log.log_end_offset == 5
    assert log.last_stable_offset == 0  # the open transaction was rebuilt by the replay
    again.close()
