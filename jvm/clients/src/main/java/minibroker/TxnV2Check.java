package minibroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions as a Java 4.x producer runs them against a broker that finalizes (or not)
 * transaction.version=2 (KIP-890 part 2), driven by tests/acceptance/test_java_txn_v2.py.
 * Usage: TxnV2Check BOOTSTRAP SCENARIO TOPIC; SCENARIO is flow, fence or pause.
 * Each scenario ends with one line "RESULT key=value ..." on stdout (exit 0), or throws.
 * "pause" prints "READY" with a transaction open and waits for a line on stdin before it
 * goes on (the test kills and restarts the broker meanwhile).
 */
public final class TxnV2Check {
    private final String bootstrap;

    private TxnV2Check(String bootstrap) { this.bootstrap = bootstrap; }

    public static void main(String[] args) throws Exception {
        TxnV2Check check = new TxnV2Check(args[0]);
        String topic = args[2];
        switch (args[1]) {
            case "flow": check.flow(topic); break;
            case "fence": check.fence(topic); break;
            case "pause": check.pause(topic); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[1]);
        }
    }

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    private void createTopic(String topic, int partitions) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
    }

    private KafkaProducer<String, String> producer(String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        return new KafkaProducer<>(p);
    }

    /** Values a read_committed consumer sees on every partition up to the last stable offset. */
    private List<String> readCommitted(String topic, int partitions) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "txnv2-reader-" + UUID.randomUUID());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);   // the LSO for read_committed
            List<String> out = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) throw new AssertionError("read_committed consumer stuck below " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) out.add(r.value());
            }
            return out;
        }
    }

    /** The finalized transaction.version Admin.describeFeatures reports (0 when absent). */
    private short transactionVersion(Admin admin) throws Exception {
        FeatureMetadata features = admin.describeFeatures().featureMetadata().get();
        FinalizedVersionRange range = features.finalizedFeatures().get("transaction.version");
        return range == null ? 0 : range.maxVersionLevel();
    }

    private String describe(Admin admin, String txnId) throws Exception {
        TransactionDescription d = admin.describeTransactions(List.of(txnId)).description(txnId).get();
        return "state=" + d.state() + " epoch=" + d.producerEpoch();
    }

    private static String failure(Throwable e) {
        if (e instanceof ExecutionException && e.getCause() != null) e = e.getCause();
        String name = e.getClass().getSimpleName();
        return e.getCause() != null && e.getCause() != e ? name + "<" + e.getCause().getClass().getSimpleName() : name;
    }

    /** Committed, aborted and committed transactions on three partitions, offsets of a group
     * sent to the first; what a read_committed consumer and Admin then see. */
    private void flow(String topic) throws Exception {
        createTopic(topic, 3);
        String txnId = topic + "-txn";
        String group = topic + "-group";
        try (KafkaProducer<String, String> p = producer(txnId); Admin admin = admin()) {
            p.initTransactions();
            for (int txn = 0; txn < 3; txn++) {
                p.beginTransaction();
                for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(topic, i % 3, "k" + i, "t" + txn + "-" + i));
                if (txn == 0) {
                    p.sendOffsetsToTransaction(
                        Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(42)),
                        new ConsumerGroupMetadata(group));
                }
                if (txn == 1) p.abortTransaction(); else p.commitTransaction();
            }
            List<String> seen = readCommitted(topic, 3);
            if (seen.stream().anyMatch(v -> v.startsWith("t1-"))) throw new AssertionError("aborted records visible: " + seen);
            long offset = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .get(new TopicPartition(topic, 0)).offset();
            System.out.println("RESULT committed=" + seen.size() + " group_offset=" + offset
                + " tv=" + transactionVersion(admin) + " " + describe(admin, txnId));
        }
    }

    /** A second instance with the same transactional.id fences the first mid-transaction. */
    private void fence(String topic) throws Exception {
        createTopic(topic, 1);
        String txnId = topic + "-txn";
        String sendFailed = "none";
        String commitFailed = "none";
        try (KafkaProducer<String, String> first = producer(txnId); Admin admin = admin()) {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, 0, "k", "loser-1")).get();
            try (KafkaProducer<String, String> second = producer(txnId)) {
                second.initTransactions();   // aborts the first's transaction, bumps the epoch
                try {
                    first.send(new ProducerRecord<>(topic, 0, "k", "loser-2")).get();
                } catch (Exception e) {
                    sendFailed = failure(e);
                }
                try {
                    first.commitTransaction();
                } catch (Exception e) {
                    commitFailed = failure(e);
                }
                second.beginTransaction();
                second.send(new ProducerRecord<>(topic, 0, "k", "winner")).get();
                second.commitTransaction();
                List<String> seen = readCommitted(topic, 1);
                System.out.println("RESULT send_failed=" + sendFailed + " commit_failed=" + commitFailed
                    + " visible=" + String.join(",", seen) + " " + describe(admin, txnId));
            }
        }
    }

    /** A transaction left open while the test restarts the broker, then continued and committed. */
    private void pause(String topic) throws Exception {
        createTopic(topic, 2);
        String txnId = topic + "-txn";
        String group = topic + "-group";
        try (KafkaProducer<String, String> p = producer(txnId)) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "aborted")).get();
            p.abortTransaction();
            p.beginTransaction();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, i % 2, "k", "before-" + i));
            p.flush();
            System.out.println("READY");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, i % 2, "k", "after-" + i));
            p.sendOffsetsToTransaction(
                Map.of(new TopicPartition(topic, 1), new OffsetAndMetadata(7)), new ConsumerGroupMetadata(group));
            p.commitTransaction();
        }
        try (Admin admin = admin()) {
            List<String> seen = readCommitted(topic, 2);
            long offset = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .get(new TopicPartition(topic, 1)).offset();
            System.out.println("RESULT committed=" + seen.size() + " aborted_visible=" + seen.contains("aborted")
                + " group_offset=" + offset + " " + describe(admin, txnId));
        }
    }
}
