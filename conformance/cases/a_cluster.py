"""ApiVersions, Metadata, DescribeCluster: what a client learns first."""

from conformance.cases import case, versions

APIV, METADATA, DESCRIBE_CLUSTER = 18, 3, 60


@case("api_versions")
def api_versions_all(s):
    for v in versions(APIV):
        s.check(f"v{v}", APIV, v, {"client_software_name": "conformance", "client_software_version": "1.0"})


@case("api_versions/software-name")
def api_versions_software_name(s):
    # KIP-511: name and version must match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
    for label, name, ver in [
        ("empty-name", "", "1.0"),
        ("bad-char", "my client", "1.0"),
        ("bad-version", "ok", "1.0!"),
        ("dash-end", "ok-", "1"),
        ("dots", "a.b-c", "2.16.1"),
    ]:
        s.check(label, APIV, 3, {"client_software_name": name, "client_software_version": ver}, conn=label)
        s.connection_state(f"{label}/after", conn=label)


@case("metadata/empty")
def metadata_empty(s):
    for v in versions(METADATA):
        # v0 with an empty list means "all topics"; from v1 on it means none.
        if v == 0:
            continue
        s.check(
            f"v{v}",
            METADATA,
            v,
            {
                "topics": [],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )


@case("metadata/topic")
def metadata_topic(s):
    s.create_topic("md-known", 3)
    for v in versions(METADATA):
        s.check(f"v{v}", METADATA, v, {"topics": [{"name": "md-known"}], "allow_auto_topic_creation": False})


@case("metadata/authorized-operations")
def metadata_authorized_ops(s):
    s.create_topic("md-authz", 1)
    for v in versions(METADATA):
        if v < 8:
            continue
        s.check(
            f"v{v}",
            METADATA,
            v,
            {
                "topics": [{"name": "md-authz"}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": True,
                "include_topic_authorized_operations": True,
            },
        )


@case("metadata/unknown-topic-no-create")
def metadata_unknown(s):
    for v in versions(METADATA):
        if v < 4:
            continue
        s.check(
            f"v{v}",
            METADATA,
            v,
            {"topics": [{"name": f"md-unknown-{v}"}], "allow_auto_topic_creation": False},
        )


@case("metadata/invalid-topic-name")
def metadata_invalid_name(s):
    for label, name in [("dotdot", ".."), ("space", "bad name"), ("long", "x" * 250), ("empty", "")]:
        s.check(
            f"{label}/no-create",
            METADATA,
            12,
            {"topics": [{"name": name}], "allow_auto_topic_creation": False},
        )


@case("metadata/topic-id")
def metadata_topic_id(s):
    import uuid

    s.check(
        "unknown-id",
        METADATA,
        12,
        {"topics": [{"name": None, "topic_id": uuid.uuid4()}], "allow_auto_topic_creation": False},
    )
    s.create_topic("md-by-id", 1)
    for v in (10, 11, 12, 13):
        s.check(
            f"v{v}/name-and-random-id",
            METADATA,
            v,
            {"topics": [{"name": "md-by-id", "topic_id": uuid.uuid4()}], "allow_auto_topic_creation": False},
            conn=f"nri{v}",
        )
        s.check(
            f"v{v}/null-name-random-id",
            METADATA,
            v,
            {"topics": [{"name": None, "topic_id": uuid.uuid4()}], "allow_auto_topic_creation": False},
            conn=f"nnri{v}",
        )
        s.check(
            f"v{v}/null-name-zero-id",
            METADATA,
            v,
            {"topics": [{"name": None, "topic_id": uuid.UUID(int=0)}], "allow_auto_topic_creation": False},
        )


@case("describe_cluster")
def describe_cluster(s):
    for v in versions(DESCRIBE_CLUSTER):
        for ops in (False, True):
            s.check(
                f"v{v}/ops={ops}",
                DESCRIBE_CLUSTER,
                v,
                {"include_cluster_authorized_operations": ops, "endpoint_type": 1},
            )


@case("api_versions/v5-cluster-and-node")
def api_versions_v5(s):
    md = s.call(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    own_cluster, own_node = md["cluster_id"], md["brokers"][0]["node_id"]
    base = {"client_software_name": "conformance", "client_software_version": "1.0"}
    for label, cluster, node in [
        ("unset", None, -1),
        ("own", own_cluster, own_node),
        ("other-cluster", "AAAAAAAAAAAAAAAAAAAAAA", own_node),
        ("other-node", own_cluster, own_node + 5),
        ("cluster-only", "AAAAAAAAAAAAAAAAAAAAAA", -1),
        ("node-only", None, 7),
    ]:
        s.check(label, APIV, 5, {**base, "cluster_id": cluster, "node_id": node}, conn=label)
        s.connection_state(f"{label}/after", conn=label)


@case("metadata/auto-create")
def metadata_auto_create(s):
    s.check(
        "first-request", METADATA, 12, {"topics": [{"name": "md-auto"}], "allow_auto_topic_creation": True}
    )
    s.wait_topic("md-auto", 1)
    s.check(
        "after-creation", METADATA, 12, {"topics": [{"name": "md-auto"}], "allow_auto_topic_creation": True}
    )
    s.check(
        "invalid-name", METADATA, 12, {"topics": [{"name": "bad name!"}], "allow_auto_topic_creation": True}
    )
    s.check(
        "internal-name",
        METADATA,
        12,
        {"topics": [{"name": "__transaction_state"}], "allow_auto_topic_creation": True},
    )
