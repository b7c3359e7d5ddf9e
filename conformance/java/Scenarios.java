// Client scenarios run with Apache Kafka's own Java client (the kafka-clients jar of the reference
// Kafka), against whichever broker is given. Prints one "label<TAB>value" line per observation;
// conformance/cases/i_java.py compares them between minibroker and Apache Kafka.
// Run (Java 11+ source-file mode): java -cp 'LIBS/*' Scenarios.java BOOTSTRAP SCENARIO
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class Scenarios {
    static String bootstrap;
    static String prefix;  // topic, group and transactional-id prefix, distinct per client version
    // Record timestamps are T0 + i and printed as offsets from T0: timestamps of a fixed past date
    // made Kafka roll a segment per batch and its retention check (first run 30 s after start)
    // delete those segments in the middle of a scenario, whichever scenario ran at that moment.
    static final long T0 = System.currentTimeMillis();

    static void out(String label, Object value) {
        System.out.println(label + "\t" + value);
        System.out.flush();
    }

    static String error(Throwable t) {
        Throwable c = (t instanceof ExecutionException && t.getCause() != null) ? t.getCause() : t;
        return "error:" + c.getClass().getSimpleName();
    }

    interface Step { Object run() throws Exception; }

    /** The first of these no-argument methods the object has: names changed between client versions. */
    static Object firstOf(Object target, String... methods) throws Exception {
        for (String m : methods) {
            try { return target.getClass().getMethod(m).invoke(target); } catch (NoSuchMethodException e) { /* older */ }
        }
        throw new NoSuchMethodException(String.join("/", methods));
    }

    static void attempt(String label, Step step) {
        try { out(label, step.run()); } catch (Exception e) { out(label, error(e)); }
    }

    static Properties base() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "20000");
        p.put("default.api.timeout.ms", "30000");
        return p;
    }

    static Admin admin() { return Admin.create(base()); }

    static void waitTopic(Admin admin, String topic, int partitions) throws Exception {
        long deadline = System.currentTimeMillis() + 30000;
        while (System.currentTimeMillis() < deadline) {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                if (d.partitions().size() >= partitions && d.partitions().stream().allMatch(p -> p.leader() != null)) return;
            } catch (ExecutionException e) { /* not there yet */ }
            Thread.sleep(100);
        }
        throw new IllegalStateException("topic " + topic + " not ready");
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        prefix = args.length > 2 ? args[2] : "jv";
        switch (args[1]) {
            case "admin" -> adminScenario();
            case "produce-consume" -> produceConsume();
            case "transactions" -> transactions();
            default -> throw new IllegalArgumentException(args[1]);
        }
    }

    static void adminScenario() throws Exception {
        try (Admin admin = admin()) {
            attempt("create", () -> { admin.createTopics(List.of(new NewTopic(prefix + "-admin", 3, (short) 1)
                .configs(Map.of("retention.ms", "60000")))).all().get(); return "ok"; });
            waitTopic(admin, prefix + "-admin", 3);
            attempt("create-again", () -> { admin.createTopics(List.of(new NewTopic(prefix + "-admin", 3, (short) 1))).all().get(); return "ok"; });
            attempt("create-bad-segment", () -> { admin.createTopics(List.of(new NewTopic(prefix + "-bad", 1, (short) 1)
                .configs(Map.of("segment.bytes", "1000")))).all().get(); return "ok"; });
            attempt("describe-topic", () -> {
                TopicDescription d = admin.describeTopics(List.of(prefix + "-admin")).allTopicNames().get().get(prefix + "-admin");
                return d.name() + " internal=" + d.isInternal() + " " + d.partitions().stream()
                    .map(p -> p.partition() + ":" + p.leader().id() + ":" + p.replicas().size() + ":" + p.isr().size())
                    .collect(Collectors.joining(","));
            });
            attempt("describe-missing", () -> admin.describeTopics(List.of(prefix + "-missing")).allTopicNames().get());
            attempt("describe-with-ops", () -> admin.describeTopics(List.of(prefix + "-admin"),
                new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get()
                .get(prefix + "-admin").authorizedOperations().stream().map(Enum::name).sorted().collect(Collectors.toList()));
            attempt("cluster", () -> {
                DescribeClusterResult c = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
                return c.nodes().get().size() + " controller=" + c.controller().get().id() + " ops="
                    + c.authorizedOperations().get().stream().map(Enum::name).sorted().collect(Collectors.toList());
            });
            attempt("configs", () -> {
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, prefix + "-admin");
                Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
                return List.of("retention.ms", "cleanup.policy", "segment.bytes").stream().map(n -> {
                    ConfigEntry e = c.get(n);
                    return n + "=" + e.value() + "/" + e.source() + "/" + e.type();
                }).collect(Collectors.joining(","));
            });
            attempt("grow", () -> { admin.createPartitions(Map.of(prefix + "-admin", NewPartitions.increaseTo(4))).all().get(); return "ok"; });
            attempt("shrink", () -> { admin.createPartitions(Map.of(prefix + "-admin", NewPartitions.increaseTo(2))).all().get(); return "ok"; });
            attempt("elect", () -> admin.electLeaders(ElectionType.PREFERRED, Set.of(new TopicPartition(prefix + "-admin", 0)))
                .partitions().get().values().stream().map(o -> o.map(Scenarios::error).orElse("ok")).collect(Collectors.toList()));
            attempt("list-offsets", () -> admin.listOffsets(Map.of(new TopicPartition(prefix + "-admin", 0), OffsetSpec.latest(),
                new TopicPartition(prefix + "-admin", 1), OffsetSpec.maxTimestamp())).all().get().entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue().offset()).sorted().collect(Collectors.toList()));
            attempt("delete-missing", () -> { admin.deleteTopics(List.of(prefix + "-missing")).all().get(); return "ok"; });
            attempt("delete", () -> { admin.deleteTopics(List.of(prefix + "-admin")).all().get(); return "ok"; });
        }
    }

    static void produceConsume() throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(prefix + "-data", 2, (short) 1))).all().get();
            waitTopic(admin, prefix + "-data", 2);
        }
        Properties pp = base();
        pp.put("enable.idempotence", "true");
        pp.put("acks", "all");
        try (Producer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            List<String> acked = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                RecordMetadata m = producer.send(new ProducerRecord<>(prefix + "-data", null, T0 + i, "k" + i, "v" + i)).get();
                acked.add(m.partition() + "@" + m.offset());
            }
            Collections.sort(acked);
            out("produced", acked);
        }
        Properties cp = base();
        cp.put("group.id", prefix + "-group");
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        try (Consumer<String, String> consumer = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(prefix + "-data"));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30000;
            while (got.size() < 10 && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500)))
                    got.add(r.partition() + "@" + r.offset() + "=" + r.key() + ":" + r.value() + ":" + (r.timestamp() - T0));
            Collections.sort(got);
            out("consumed", got);
            consumer.commitSync();
            Set<TopicPartition> tps = Set.of(new TopicPartition(prefix + "-data", 0), new TopicPartition(prefix + "-data", 1));
            out("committed", consumer.committed(tps).entrySet().stream().map(e -> e.getKey() + "=" + e.getValue().offset())
                .sorted().collect(Collectors.toList()));
            out("end-offsets", consumer.endOffsets(tps).entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                .sorted().collect(Collectors.toList()));
        }
        try (Admin admin = admin()) {
            attempt("group-offsets", () -> admin.listConsumerGroupOffsets(prefix + "-group").partitionsToOffsetAndMetadata().get()
                .entrySet().stream().map(e -> e.getKey() + "=" + e.getValue().offset()).sorted().collect(Collectors.toList()));
            attempt("group", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(prefix + "-group")).all().get().get(prefix + "-group");
                return d.groupId() + " " + firstOf(d, "groupState", "state") + " members=" + d.members().size();
            });
        }
    }

    static void transactions() throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(prefix + "-txn", 1, (short) 1))).all().get();
            waitTopic(admin, prefix + "-txn", 1);
        }
        Properties pp = base();
        pp.put("transactional.id", prefix + "-txn-producer");
        try (Producer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            for (boolean commit : new boolean[] {true, false, true}) {
                producer.beginTransaction();
                for (int i = 0; i < 3; i++)
                    producer.send(new ProducerRecord<>(prefix + "-txn", null, T0 + i, "k", (commit ? "c" : "a") + i));
                producer.flush();
                if (commit) producer.commitTransaction(); else producer.abortTransaction();
            }
            out("transactions", "done");
        } catch (KafkaException e) {
            out("transactions", error(e));
        }
        for (String isolation : List.of("read_committed", "read_uncommitted")) {
            Properties cp = base();
            cp.put("isolation.level", isolation);
            cp.put("auto.offset.reset", "earliest");
            try (Consumer<String, String> consumer = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
                TopicPartition tp = new TopicPartition(prefix + "-txn", 0);
                consumer.assign(List.of(tp));
                int expected = isolation.equals("read_committed") ? 6 : 9;
                List<String> got = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 30000;
                while (got.size() < expected && System.currentTimeMillis() < deadline)
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) got.add(r.offset() + "=" + r.value());
                out("consumed-" + isolation, got);
                out("position-" + isolation, consumer.position(tp));
                out("end-" + isolation, consumer.endOffsets(List.of(tp)).get(tp));
            }
        }
        try (Admin admin = admin()) {
            attempt("list-transactions", () -> admin.listTransactions().all().get().stream()
                .filter(t -> t.transactionalId().equals(prefix + "-txn-producer")).map(t -> t.state().toString()).collect(Collectors.toList()));
            attempt("describe-transaction", () -> {
                TransactionDescription d = admin.describeTransactions(List.of(prefix + "-txn-producer")).all().get().get(prefix + "-txn-producer");
                return d.state() + " timeout=" + d.transactionTimeoutMs() + " partitions=" + d.topicPartitions();
            });
            attempt("describe-producers", () -> admin.describeProducers(List.of(new TopicPartition(prefix + "-txn", 0))).all().get()
                .values().stream().map(s -> s.activeProducers().size()).collect(Collectors.toList()));
        }
    }
}
