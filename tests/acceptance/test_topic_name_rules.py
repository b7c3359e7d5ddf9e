"""Issue 9: auto-creation applies Kafka's topic name rules (a name ending in a newline used to be
created and then broke the line-based recovery-point checkpoint)."""

from __future__ import annotations

import pytest

from tests.support.broker import BrokerFactory
from tests.support.helpers import unique_name
from tests.support.wire import INVALID_TOPIC_EXCEPTION, WireClient


@pytest.fixture(scope="module")
def broker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("names"))
    b = factory({"auto.create.topics.enable": True})
    yield b
    factory.teardown(request.session.testsfailed > 0)


@pytest.mark.parametrize("version", [4, 12])
def test_metadata_auto_creation_refuses_illegal_names(broker, version):
    good = unique_name("auto")
    bad = ["x\n", "..\n", "sp ace", "..", "x" * 250]
    with WireClient.to(broker) as c:
        r = c.metadata(bad + [good], version=version, allow_auto_topic_creation=True)
        errors = {t.name: t.error_code for t in r.topics}
        assert errors == {**{n: INVALID_TOPIC_EXCEPTION for n in bad}, good: 0}
        listed = {t.name for t in c.metadata(None, version=version).topics}
    assert good in listed and not listed & set(bad)
    broker.restart(kill=True)  # the recovery checkpoint must still parse
    with WireClient.to(broker) as c:
        assert good in {t.name for t in c.metadata(None).topics}
    assert "unparseable" not in broker.log_text().lower()
