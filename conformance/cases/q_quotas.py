"""Client quotas (issue 23): AlterClientQuotas (49) and DescribeClientQuotas (48), every version,
Kafka's entity rules and errors, validate_only, strict and loose matching.

Both brokers live for the whole run, so nothing here may throttle another case: the byte rates
are set only on a user no case authenticates as, the defaults carry values no client reaches,
and the case removes everything it set. Kafka applies a quota through its metadata log, so a
describe waits until the alteration shows."""

from conformance.cases import case, versions

DESCRIBE, ALTER = 48, 49
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
USER, CLIENT = "conf-quota-user", "conf-quota-client"


def _entity(**names):
    return [{"entity_type": t.replace("_", "-"), "entity_name": n} for t, n in names.items()]


def _ops(**values):
    return [
        {"key": k, "value": 0.0 if v is None else float(v), "remove": v is None} for k, v in values.items()
    ]


def _entry(entity, ops):
    return {"entity": entity, "ops": ops}


_STORED = [
    _entry(_entity(user=USER), _ops(producer_byte_rate=10**9, consumer_byte_rate=2 * 10**9)),
    _entry(_entity(user=USER, client_id=CLIENT), _ops(request_percentage=12.5)),
    _entry(_entity(client_id=CLIENT), _ops(controller_mutation_rate=10**6)),
    _entry(_entity(user=None), _ops(request_percentage=10**6)),
    _entry(_entity(ip="127.0.0.9"), _ops(connection_creation_rate=10**6)),
]


def _describe(s, components, strict=False):
    return s.call(DESCRIBE, 1, {"components": components, "strict": strict})


def _wait_stored(s, count):
    def shown():
        answer = _describe(s, [])
        return isinstance(answer, dict) and len(answer["entries"] or []) == count

    s.wait_until(shown, f"{count} client quota entities described")


@case("quotas/alter-errors")
def alter_errors(s):
    bad = [
        _entry([], _ops(producer_byte_rate=1)),
        _entry(_entity(user=""), _ops(producer_byte_rate=1)),
        _entry([{"entity_type": "group", "entity_name": "g"}], _ops(producer_byte_rate=1)),
        _entry(_entity(ip="127.0.0.1", user="u"), _ops(connection_creation_rate=1)),
        _entry(_entity(ip="not a host name at all"), _ops(connection_creation_rate=1)),
        _entry(_entity(user="conf-q-u1"), _ops(connection_creation_rate=1)),
        _entry(_entity(ip="127.0.0.2"), _ops(producer_byte_rate=1)),
        _entry(_entity(user="conf-q-u2"), _ops(producer_byte_rate=0)),
        _entry(_entity(user="conf-q-u3"), _ops(producer_byte_rate=-5)),
        _entry(_entity(user="conf-q-u4"), _ops(producer_byte_rate=1.5)),
        _entry(_entity(ip="127.0.0.3"), _ops(connection_creation_rate=2**31)),
        _entry(_entity(ip="127.0.0.4"), _ops(connection_creation_rate=2.5)),
        _entry(_entity(user="conf-q-u5"), _ops(no_such_quota=1)),
        _entry(_entity(user="conf-q-u6"), _ops(request_percentage=0.5, producer_byte_rate=None)),
        _entry(_entity(user="conf-q-u7", client_id=None), _ops(consumer_byte_rate=100)),
        _entry(_entity(user="conf-q-dup"), _ops(producer_byte_rate=1)),
        _entry(_entity(user="conf-q-dup"), _ops(producer_byte_rate=2)),
        _entry(
            _entity(user="conf-q-dupkey"),
            [*_ops(producer_byte_rate=1), *_ops(producer_byte_rate=2)],
        ),
    ]
    for v in versions(ALTER):
        s.check(f"validate-only/v{v}", ALTER, v, {"entries": bad, "validate_only": True})
    s.check("nothing-stored", DESCRIBE, 1, {"components": [], "strict": False})


@case("quotas/alter-describe")
def alter_describe(s):
    s.check("set", ALTER, 1, {"entries": _STORED, "validate_only": False})
    _wait_stored(s, len(_STORED))
    filters = {
        "all": ([], False),
        "all-strict": ([], True),
        "user-exact": ([{"entity_type": "user", "match_type": EXACT, "match": USER}], False),
        "user-exact-strict": ([{"entity_type": "user", "match_type": EXACT, "match": USER}], True),
        "user-default": ([{"entity_type": "user", "match_type": DEFAULT, "match": None}], False),
        "user-specified": ([{"entity_type": "user", "match_type": SPECIFIED, "match": None}], False),
        "client-specified-strict": (
            [{"entity_type": "client-id", "match_type": SPECIFIED, "match": None}],
            True,
        ),
        "user-and-client": (
            [
                {"entity_type": "user", "match_type": EXACT, "match": USER},
                {"entity_type": "client-id", "match_type": SPECIFIED, "match": None},
            ],
            True,
        ),
        "ip": ([{"entity_type": "ip", "match_type": SPECIFIED, "match": None}], False),
        "no-such-user": ([{"entity_type": "user", "match_type": EXACT, "match": "nobody"}], False),
        # refused filters
        "exact-without-match": ([{"entity_type": "user", "match_type": EXACT, "match": None}], False),
        "default-with-match": ([{"entity_type": "user", "match_type": DEFAULT, "match": "x"}], False),
        "specified-with-match": ([{"entity_type": "user", "match_type": SPECIFIED, "match": "x"}], False),
        "type-twice": (
            [
                {"entity_type": "user", "match_type": SPECIFIED, "match": None},
                {"entity_type": "user", "match_type": DEFAULT, "match": None},
            ],
            False,
        ),
        "empty-type": ([{"entity_type": "", "match_type": SPECIFIED, "match": None}], False),
        "unknown-type": ([{"entity_type": "group", "match_type": SPECIFIED, "match": None}], False),
        "unknown-match-type": ([{"entity_type": "user", "match_type": 7, "match": None}], False),
        "ip-with-user": (
            [
                {"entity_type": "ip", "match_type": SPECIFIED, "match": None},
                {"entity_type": "user", "match_type": SPECIFIED, "match": None},
            ],
            False,
        ),
    }
    for v in versions(DESCRIBE):
        for label, (components, strict) in filters.items():
            s.check(f"{label}/v{v}", DESCRIBE, v, {"components": components, "strict": strict})
    # changed, removed, unchanged: then everything this case set is removed again
    s.check(
        "change",
        ALTER,
        0,
        {
            "entries": [
                _entry(_entity(user=USER), _ops(producer_byte_rate=5 * 10**8, consumer_byte_rate=None)),
                _entry(_entity(client_id=CLIENT), _ops(controller_mutation_rate=10**6)),
            ],
            "validate_only": False,
        },
    )

    def changed():
        answer = _describe(s, [{"entity_type": "user", "match_type": EXACT, "match": USER}], strict=True)
        entries = answer["entries"] if isinstance(answer, dict) else None
        return entries and [v["key"] for v in entries[0]["values"]] == ["producer_byte_rate"]

    s.wait_until(changed, "the changed quota described")
    s.check("after-change", DESCRIBE, 1, {"components": [], "strict": False})
    removals = [_entry(e["entity"], _ops(**{o["key"]: None for o in e["ops"]})) for e in _STORED]
    s.check("remove", ALTER, 1, {"entries": removals, "validate_only": False})
    _wait_stored(s, 0)
    s.check("after-remove", DESCRIBE, 1, {"components": [], "strict": False})
