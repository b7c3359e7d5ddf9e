"""Delegation tokens (issue 23) on the conformance run's PLAINTEXT listener, where Kafka refuses
every token request (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) before anything else: every version of
CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40) and
DescribeDelegationToken (41). Tokens over SASL are tested in tests/acceptance/test_delegation_tokens.py."""

from conformance.cases import case, versions

CREATE, RENEW, EXPIRE, DESCRIBE = 38, 39, 40, 41


@case("tokens/plaintext-refused")
def plaintext_refused(s):
    for v in versions(CREATE):
        s.check(
            f"create/v{v}",
            CREATE,
            v,
            {
                "owner_principal_type": None,
                "owner_principal_name": None,
                "renewers": [{"principal_type": "User", "principal_name": "renewer"}],
                "max_lifetime_ms": -1,
            },
        )
        s.check(
            f"create-for-other-owner/v{v}",
            CREATE,
            v,
            {
                "owner_principal_type": "User",
                "owner_principal_name": "someone",
                "renewers": [{"principal_type": "Group", "principal_name": "g"}],
                "max_lifetime_ms": 3600000,
            },
        )
    for v in versions(RENEW):
        s.check(f"renew/v{v}", RENEW, v, {"hmac": b"not-a-token", "renew_period_ms": 1000})
    for v in versions(EXPIRE):
        s.check(f"expire/v{v}", EXPIRE, v, {"hmac": b"not-a-token", "expiry_time_period_ms": -1})
    for v in versions(DESCRIBE):
        s.check(f"describe-all/v{v}", DESCRIBE, v, {"owners": None})
        s.check(f"describe-none/v{v}", DESCRIBE, v, {"owners": []})
        s.check(
            f"describe-owner/v{v}",
            DESCRIBE,
            v,
            {"owners": [{"principal_type": "User", "principal_name": "ANONYMOUS"}]},
        )
