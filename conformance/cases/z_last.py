"""Cases that damage the brokers for everything after them: registered last."""

from conformance.cases import case


@case("zz/delete-internal-topics")
def delete_internal_topics(s):
    for name in ("__consumer_offsets", "__transaction_state"):
        s.check(name, 20, 6, {"topics": [{"name": name}], "timeout_ms": 30000})
