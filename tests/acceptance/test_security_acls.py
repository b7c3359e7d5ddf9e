"""ACLs end to end: CreateAcls/DescribeAcls/DeleteAcls through librdkafka's and kafka-python's
admin clients, and the authorizer refusing what Kafka refuses (topics, groups, transactional
ids, the cluster) for SASL users, with super users, prefixed patterns, persistence across a
restart, and the authorized-operations fields."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KPResourceType

from tests.support.security import listener_ports, plain_jaas

pytestmark = pytest.mark.timeout(90)

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw"}
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def overrides(**extra) -> dict:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:admin",
        **extra,
    }


@pytest.fixture
def acl_broker(broker_factory):
    b = broker_factory(overrides())
    b.ports = listener_ports(b)
    return b


def conf(broker, user: str | None, **extra) -> dict:
    if user is None:
        return {"bootstrap.servers": f"127.0.0.1:{broker.ports['PLAINTEXT']}", **extra}
    return {
        "bootstrap.servers": f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
        **extra,
    }


def allow(rt, name, principal, op, pattern=ResourcePatternType.LITERAL, perm=AclPermissionType.ALLOW):
    return AclBinding(rt, name, pattern, principal, "*", op, perm)


def create_acls(admin: AdminClient, bindings) -> None:
    for fut in admin.create_acls(bindings).values():
        fut.result(15)


def make_topics(admin: AdminClient, *names: str) -> None:
    for fut in admin.create_topics([NewTopic(n, 1) for n in names]).values():
        fut.result(15)


def produce_error(config: dict, topic: str) -> KafkaError | None:
    errors = []
    producer = Producer({**config, "acks": "all", "message.timeout.ms": 8000})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: errors.append(err))
    try:
        producer.flush(15)
    except KafkaException as exc:
        # a fatal error (an idempotent producer refused its producer id) may be raised by
        # flush before the delivery report of the failed message is served
        return exc.args[0]
    assert errors, "no delivery report"
    return errors[0]


def test_acl_apis_need_an_authorizer(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    fut = admin.create_acls([allow(ResourceType.TOPIC, "t", "User:alice", AclOperation.READ)])
    with pytest.raises(KafkaException) as err:
        list(fut.values())[0].result(15)
    assert err.value.args[0].code() == KafkaError.SECURITY_DISABLED


def test_create_describe_delete_acls_and_persistence(acl_broker):
    admin = AdminClient(conf(acl_broker, "admin"))
    create_acls(
        admin,
        [
            allow(
                ResourceType.TOPIC, "orders-", "User:alice", AclOperation.WRITE, ResourcePatternType.PREFIXED
            ),
            allow(ResourceType.GROUP, "g1", "User:bob", AclOperation.READ),
        ],
    )
    everything = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert len(admin.describe_acls(everything).result(15)) == 2
    match = AclBindingFilter(
        ResourceType.TOPIC,
        "orders-eu",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    [found] = admin.describe_acls(match).result(15)
    assert (found.name, found.principal, found.operation) == ("orders-", "User:alice", AclOperation.WRITE)

    # a user that is not a super user may not manage ACLs
    alice = AdminClient(conf(acl_broker, "alice"))
    with pytest.raises(KafkaException) as err:
        create_acls(alice, [allow(ResourceType.TOPIC, "*", "User:alice", AclOperation.ALL)])
    assert err.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    acl_broker.restart()
    acl_broker.ports = listener_ports(acl_broker)
    admin = AdminClient(conf(acl_broker, "admin"))
    assert len(admin.describe_acls(everything).result(15)) == 2
    group_filter = AclBindingFilter(
        ResourceType.GROUP, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    [deleted] = list(admin.delete_acls([group_filter]).values())[0].result(15)
    assert deleted.name == "g1"
    assert len(admin.describe_acls(everything).result(15)) == 1


def test_kafka_python_admin_acls(acl_broker):
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{acl_broker.ports['SASL_PLAINTEXT']}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="admin",
        sasl_plain_password=USERS["admin"],
    )
    try:
        pattern = ResourcePattern(KPResourceType.TOPIC, "kp-", ACLResourcePatternType.PREFIXED)
        result = admin.create_acls(
            [ACL("User:bob", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)]
        )
        assert not result["failed"], result
        acls, error = admin.describe_acls(
            ACLFilter(
                None,
                "*",
                ACLOperation.ANY,
                ACLPermissionType.ANY,
                ResourcePatternFilter(KPResourceType.TOPIC, None, ACLResourcePatternType.ANY),
            )
        )
        assert [(a.principal, a.resource_pattern.resource_name) for a in acls] == [("User:bob", "kp-")]
    finally:
        admin.close()


def test_topic_write_read_and_group_authorization(acl_broker):
    admin = AdminClient(conf(acl_broker, "admin"))
    make_topics(admin, "orders-eu", "payroll")
    create_acls(
        admin,
        [
            allow(
                ResourceType.TOPIC, "orders-", "User:alice", AclOperation.WRITE, ResourcePatternType.PREFIXED
            ),
            allow(ResourceType.TOPIC, "orders-eu", "User:bob", AclOperation.READ),
        ],
    )
    assert produce_error(conf(acl_broker, "alice"), "orders-eu") is None
    assert produce_error(conf(acl_broker, "alice"), "payroll").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(conf(acl_broker, "bob"), "orders-eu").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # anonymous PLAINTEXT clients have no ACLs and allow.everyone.if.no.acl.found is false
    assert produce_error(conf(acl_broker, None), "payroll").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    group = f"g-{uuid.uuid4().hex[:6]}"

    def consume_once() -> KafkaError | bytes:
        consumer = Consumer(conf(acl_broker, "bob", **{"group.id": group, "auto.offset.reset": "earliest"}))
        consumer.subscribe(["orders-eu"])
        try:
            for _ in range(30):
                msg = consumer.poll(1)
                if msg is None:
                    continue
                return msg.error() if msg.error() else msg.value()
            raise AssertionError("no message and no error within 30 s")
        finally:
            consumer.close()

    err = consume_once()
    assert isinstance(err, KafkaError) and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    create_acls(admin, [allow(ResourceType.GROUP, group, "User:bob", AclOperation.READ)])
    assert consume_once() == b"x"


def test_metadata_hides_topics_and_reports_authorized_operations(acl_broker):
    admin = AdminClient(conf(acl_broker, "admin"))
    make_topics(admin, "visible", "hidden")
    create_acls(admin, [allow(ResourceType.TOPIC, "visible", "User:alice", AclOperation.READ)])
    alice = AdminClient(conf(acl_broker, "alice"))
    assert set(alice.list_topics(timeout=15).topics) == {"visible"}
    from confluent_kafka import TopicCollection

    described = alice.describe_topics(TopicCollection(["visible"]), include_authorized_operations=True)
    ops = set(described["visible"].result(15).authorized_operations)
    assert ops == {AclOperation.READ, AclOperation.DESCRIBE}


def test_transactional_id_and_idempotence_authorization(acl_broker):
    admin = AdminClient(conf(acl_broker, "admin"))
    make_topics(admin, "txn-out")
    create_acls(admin, [allow(ResourceType.TOPIC, "txn-out", "User:alice", AclOperation.WRITE)])
    producer = Producer(conf(acl_broker, "alice", **{"transactional.id": "tx-alice"}))
    with pytest.raises(KafkaException) as err:
        producer.init_transactions(15)
    assert err.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    create_acls(
        admin,
        [
            allow(
                ResourceType.TRANSACTIONAL_ID,
                "tx-",
                "User:alice",
                AclOperation.WRITE,
                ResourcePatternType.PREFIXED,
            )
        ],
    )
    producer = Producer(conf(acl_broker, "alice", **{"transactional.id": "tx-alice"}))
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce("txn-out", b"in-txn")
    producer.commit_transaction(15)

    # idempotence needs WRITE on some topic (or IDEMPOTENT_WRITE on the cluster): bob has neither
    assert produce_error(conf(acl_broker, "bob", **{"enable.idempotence": True}), "txn-out").code() in (
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
    )


def test_cluster_and_group_authorized_operations(acl_broker):
    admin = AdminClient(conf(acl_broker, "admin"))
    create_acls(
        admin,
        [
            allow(ResourceType.GROUP, "ops-group", "User:alice", AclOperation.READ),
            allow(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.DESCRIBE),
        ],
    )
    alice = AdminClient(conf(acl_broker, "alice"))
    cluster = alice.describe_cluster(include_authorized_operations=True, request_timeout=15).result(15)
    assert set(cluster.authorized_operations) == {AclOperation.DESCRIBE}
    group = alice.describe_consumer_groups(["ops-group"], include_authorized_operations=True)[
        "ops-group"
    ].result(15)
    assert set(group.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}
    with pytest.raises(KafkaException) as err:
        alice.describe_consumer_groups(["other-group"])["other-group"].result(15)
    assert err.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
