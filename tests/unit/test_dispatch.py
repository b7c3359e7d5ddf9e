"""broker/dispatch.py's table against the handler modules it names (imported lazily by the
broker, so a wrong row would otherwise show only at that API's first request)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
from minibroker.broker.dispatch import HANDLERS, supports

HANDLER_DIR = Path(__file__).resolve().parents[2] / "broker" / "handlers"


@pytest.mark.parametrize("key", sorted(HANDLERS))
def test_each_row_names_the_module_of_its_api_key(key):
    handler = HANDLERS[key]
    module = importlib.import_module(handler.module_name)
    assert module.API_KEY == key, f"{handler.module_name} is API key {module.API_KEY}, listed under {key}"
    assert inspect.iscoroutinefunction(module.handle)
    assert handler.handle is module.handle
    assert 0 <= handler.min_version <= handler.max_version


def test_every_handler_module_is_in_the_table():
    listed = {h.name for h in HANDLERS.values()}
    on_disk = {p.stem for p in HANDLER_DIR.glob("*.py") if p.stem != "__init__"}
    # a handler module the table forgets is never served and never advertised
    assert on_disk == listed


def test_supports_follows_the_version_range():
    assert supports(3, 0) and supports(3, HANDLERS[3].max_version)
    assert not supports(3, HANDLERS[3].max_version + 1)
    assert not supports(1, HANDLERS[1].min_version - 1)
    assert not supports(4, 0)  # LeaderAndIsr: not a key this broker serves
