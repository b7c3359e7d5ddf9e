"""The handlers' typed edge: the kio unions of broker/api_types.py against broker/dispatch.py's
version ranges, each handler's annotations, `protocol.codec.field` (a misspelt field name fails
here, not in production as a silent default), and the handler tests' FakeBroker against the
HandlerServices Protocol."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType
from minibroker.broker.context import HandlerServices, RequestContext
from minibroker.broker.dispatch import HANDLERS
from minibroker.protocol.codec import _NEWER_SCHEMAS, field, request_class

from tests.unit.handler_fakes import FakeBroker

ROOT = Path(__file__).resolve().parents[2]
API_TYPES = ROOT / "broker" / "api_types.py"
HANDLER_DIR = ROOT / "broker" / "handlers"


def _aliases() -> dict[str, set[tuple[str, str]]]:
    """api_types.py's aliases: name -> {(module, class)} of the union's members."""
    tree = ast.parse(API_TYPES.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))  # if TYPE_CHECKING:
    imported = {
        a.asname or a.name: (n.module, a.name)
        for n in block.body
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    out = {}
    for n in block.body:
        if isinstance(n, ast.Assign):
            members = {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)}
            out[n.targets[0].id] = {imported[m] for m in members}
    return out


def _kio_name(api_key: int) -> str:
    """kio's class-name stem of an API: ApiVersions, Fetch, ... (for a key kio lacks, the stem
    of minibroker's schema module in protocol/)"""
    if api_key not in api_key_map:
        newest = max(v for k, v in _NEWER_SCHEMAS if k == api_key)
        module_name = _NEWER_SCHEMAS[(api_key, newest)]
        classes = vars(importlib.import_module(module_name)).values()
        request = next(c for c in classes if isinstance(c, type) and c.__name__.endswith("Request"))
        return request.__name__.removesuffix("Request")
    module = schema_name_map[api_key_map[api_key]]
    newest = module[max(module)][EntityType.request]
    return newest.rsplit(":", 1)[1].removesuffix("Request")


def _served_modules(api_key: int, kind: EntityType) -> set[str]:
    handler = HANDLERS[api_key]
    versions = schema_name_map[api_key_map[api_key]] if api_key in api_key_map else {}
    out = set()
    for v in range(handler.min_version, handler.max_version + 1):
        if v in versions:
            out.add(versions[v][kind].split(":")[0])
        elif (api_key, v) in _NEWER_SCHEMAS:
            out.add(_NEWER_SCHEMAS[(api_key, v)])
    return out


@pytest.mark.parametrize("key", sorted(HANDLERS))
def test_each_api_union_holds_exactly_the_versions_served(key):
    aliases = _aliases()
    stem = _kio_name(key)
    for kind, suffix in ((EntityType.request, "Request"), (EntityType.response, "Response")):
        members = aliases[stem + suffix]
        assert {cls for _, cls in members} == {stem + suffix}
        assert {module for module, _ in members} == _served_modules(key, kind), (
            f"broker/api_types.py {stem}{suffix}: the versions differ from broker/dispatch.py's "
            f"{HANDLERS[key].min_version}-{HANDLERS[key].max_version}"
        )


@pytest.mark.parametrize("key", sorted(HANDLERS))
def test_each_handler_is_annotated_with_its_api_types(key):
    module = importlib.import_module(HANDLERS[key].module_name)
    hints = inspect.get_annotations(module.handle)  # strings: the types exist only for mypy
    stem = _kio_name(key)
    assert hints["ctx"] == "RequestContext"
    assert hints["req"] == f"{stem}Request"
    assert f"{stem}Response" in hints["return"] or "RawResponse" in hints["return"]


def test_api_types_imports_nothing_at_run_time():
    module = importlib.import_module("minibroker.broker.api_types")
    assert not [name for name in vars(module) if name.endswith(("Request", "Response"))]


def _field_reads() -> list[tuple[str, int, str]]:
    """Every `field(x, "name", default)` in the handlers: (handler module, api key, name)."""
    out = []
    for path in sorted(HANDLER_DIR.glob("*.py")):
        text = path.read_text()
        key = re.search(r"^API_KEY = (\d+)$", text, re.M)
        for name in re.findall(r"\bfield\(\w+, \"(\w+)\"", text):
            out.append((path.stem, int(key.group(1)) if key else -1, name))
    return out


def _names_in_api(api_key: int) -> set[str]:
    """Every field name of every entity (request, response, nested) of any version of an API."""
    names = set()
    versions = schema_name_map[api_key_map[api_key]] if api_key in api_key_map else {}
    modules = [importlib.import_module(p[k].split(":")[0]) for p in versions.values() for k in p]
    modules += [importlib.import_module(m) for (k, _), m in _NEWER_SCHEMAS.items() if k == api_key]
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                names |= {f.name for f in dataclasses.fields(value)}
    return names


def test_every_field_a_handler_reads_exists_in_its_api():
    reads = _field_reads()
    assert len(reads) >= 20  # the probes that once were getattr(req, "...", default)
    unknown = [(m, name) for m, key, name in reads if name not in _names_in_api(key)]
    assert unknown == []


def test_no_getattr_probes_left_in_handlers():
    probes = [
        (p.stem, line)
        for p in sorted(HANDLER_DIR.glob("*.py"))
        for line in p.read_text().splitlines()
        if re.search(r"\bgetattr\(", line)
    ]
    assert probes == []


# --- protocol.codec.field ---------------------------------------------------------------------


def _entity(api_key: int, version: int, **values: object) -> object:
    from minibroker.protocol.codec import build  # noqa: PLC0415

    return build(request_class(api_key, version), values)


def test_field_reads_a_field_the_version_has():
    req = _entity(1, 12, session_epoch=5, topics=[])
    assert field(req, "session_epoch", -1) == 5


def test_field_gives_the_default_for_a_field_an_older_version_lacks():
    req = _entity(1, 4, topics=[])  # Fetch v4 has no session_epoch (v7+)
    assert field(req, "session_epoch", -1) == -1


def test_field_accepts_a_field_newer_versions_dropped():
    # OffsetFetch v8+ has groups instead of a top-level group_id
    req = _entity(9, 9, groups=[])
    assert field(req, "group_id", "") == ""


def test_field_checks_nested_entities_and_the_schemas_kio_predates():
    fetch = _entity(1, 4, topics=[dict(topic="t", partitions=[dict(partition=0, fetch_offset=0)])])
    assert field(fetch.topics[0].partitions[0], "current_leader_epoch", -1) == -1  # v9+
    api_versions = _entity(18, 3, client_software_name="x", client_software_version="1")
    assert field(api_versions, "cluster_id", None) is None  # only in minibroker's v5


@pytest.mark.parametrize(
    ("api_key", "version", "name"),
    [
        (1, 12, "sesion_epoch"),  # a field of the class, misspelt
        (1, 4, "session_epch"),  # a field of newer versions only, misspelt
        (9, 1, "groupid"),
        (18, 3, "clusterid"),
    ],
)
def test_field_refuses_a_misspelt_name(api_key, version, name):
    entity = _entity(api_key, version, topics=[], groups=[])
    with pytest.raises(AttributeError, match=name):
        field(entity, name, None)
    with pytest.raises(AttributeError, match=name):  # every time, not only the first
        field(entity, name, None)


def test_field_refuses_a_misspelt_nested_name():
    fetch = _entity(1, 12, topics=[dict(topic="t", partitions=[dict(partition=0, fetch_offset=0)])])
    with pytest.raises(AttributeError, match="current_leader_epch"):
        field(fetch.topics[0].partitions[0], "current_leader_epch", -1)


@pytest.mark.parametrize("api_key", [1, 3, 9, 11, 18])
def test_field_reads_unimported_kio_schemas_as_their_classes_say(api_key):
    # field() reads a kio schema module the process has not imported as text (importing costs
    # the broker ~3 ms a version): the text gives every class's fields, and nothing else
    from minibroker.protocol.codec import _kio_source_declares  # noqa: PLC0415

    for paths in schema_name_map[api_key_map[api_key]].values():
        for module_name in {path.split(":")[0] for path in paths.values()}:
            module = importlib.import_module(module_name)
            classes = [
                v
                for v in vars(module).values()
                if dataclasses.is_dataclass(v) and v.__module__ == module_name
            ]
            names = {f.name for c in classes for f in dataclasses.fields(c)} | {"nope", "topic"}
            for cls in classes:
                declared = {f.name for f in dataclasses.fields(cls)}
                assert {n for n in names if _kio_source_declares(module_name, cls.__name__, n)} == declared
            assert not _kio_source_declares(module_name, "NoSuchClass", "topic")


# --- HandlerServices ------------------------------------------------------------------------------


def _protocol_members(protocol: type) -> set[str]:
    names = set(inspect.get_annotations(protocol))
    names |= {n for n, v in vars(protocol).items() if inspect.isfunction(v) and not n.startswith("_")}
    return names


def test_the_fake_broker_offers_what_handlers_may_use():
    members = _protocol_members(HandlerServices)
    assert {"logs", "groups", "txns", "security", "coordinators", "get_log"} <= members
    fake = FakeBroker()
    assert [m for m in sorted(members) if not hasattr(fake, m)] == []


def test_the_broker_offers_what_handlers_may_use():
    from minibroker.broker.state import Broker  # noqa: PLC0415

    members = _protocol_members(HandlerServices)
    methods = {n for n in members if inspect.isfunction(getattr(HandlerServices, n, None))}
    assert [m for m in sorted(methods) if not callable(getattr(Broker, m, None))] == []
    init = inspect.getsource(Broker)
    attributes = members - methods
    assert [a for a in sorted(attributes) if f"self.{a} =" not in init and f"self.{a}:" not in init] == []


def test_request_context_takes_handler_services():
    assert inspect.get_annotations(RequestContext)["broker"] == "HandlerServices"
