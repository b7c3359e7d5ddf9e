"""Requests for the admin and security APIs merged without cases (issues 13 and 16): every
advertised version sent once with a plain body, so that coverage holds and answers are compared."""

from conformance.cases import case, versions

SASL_HANDSHAKE, DELETE_RECORDS, WRITE_TXN_MARKERS = 17, 21, 27
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS, ALTER_CONFIGS = 29, 30, 31, 33
DESCRIBE_LOG_DIRS, SASL_AUTHENTICATE, INCREMENTAL_ALTER_CONFIGS = 35, 36, 44
DESCRIBE_SCRAM, ALTER_SCRAM = 50, 51


@case("coverage/admin")
def admin(s):
    t = "cov-admin"
    s.create_topic(t)
    for v in versions(DELETE_RECORDS):
        s.check(
            f"delete-records/v{v}",
            DELETE_RECORDS,
            v,
            {
                "topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 0}]}],
                "timeout_ms": 30000,
            },
        )
    for v in versions(WRITE_TXN_MARKERS):
        s.check(f"write-txn-markers/v{v}", WRITE_TXN_MARKERS, v, {"markers": []})
    for v in versions(ALTER_CONFIGS):
        s.check(
            f"alter-configs/v{v}",
            ALTER_CONFIGS,
            v,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": t,
                        "configs": [{"name": "retention.ms", "value": "100000"}],
                    }
                ],
                "validate_only": True,
            },
        )
    for v in versions(INCREMENTAL_ALTER_CONFIGS):
        s.check(
            f"incremental-alter-configs/v{v}",
            INCREMENTAL_ALTER_CONFIGS,
            v,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": t,
                        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "100000"}],
                    }
                ],
                "validate_only": True,
            },
        )
    for v in versions(DESCRIBE_LOG_DIRS):
        s.check(
            f"describe-log-dirs/v{v}", DESCRIBE_LOG_DIRS, v, {"topics": [{"topic": t, "partitions": [0]}]}
        )


@case("coverage/security")
def security(s):
    for v in versions(DESCRIBE_ACLS):
        s.check(
            f"describe-acls/v{v}",
            DESCRIBE_ACLS,
            v,
            {
                "resource_type_filter": 1,
                "resource_name_filter": None,
                "pattern_type_filter": 1,
                "principal_filter": None,
                "host_filter": None,
                "operation": 1,
                "permission_type": 1,
            },
        )
    for v in versions(CREATE_ACLS):
        s.check(f"create-acls/v{v}", CREATE_ACLS, v, {"creations": []})
    for v in versions(DELETE_ACLS):
        s.check(f"delete-acls/v{v}", DELETE_ACLS, v, {"filters": []})
    for v in versions(DESCRIBE_SCRAM):
        s.check(f"describe-scram/v{v}", DESCRIBE_SCRAM, v, {"users": None})
    for v in versions(ALTER_SCRAM):
        s.check(f"alter-scram/v{v}", ALTER_SCRAM, v, {"deletions": [], "upsertions": []})
    for v in versions(SASL_HANDSHAKE):
        s.check(f"sasl-handshake/v{v}", SASL_HANDSHAKE, v, {"mechanism": "PLAIN"}, conn=f"hs{v}")
        s.connection_state(f"sasl-handshake/v{v}/connection", conn=f"hs{v}")
    for v in versions(SASL_AUTHENTICATE):
        s.check(f"sasl-authenticate/v{v}", SASL_AUTHENTICATE, v, {"auth_bytes": b""}, conn=f"au{v}")
        s.connection_state(f"sasl-authenticate/v{v}/connection", conn=f"au{v}")
