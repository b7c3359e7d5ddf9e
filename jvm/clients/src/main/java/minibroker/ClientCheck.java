package minibroker;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Java client checks against a broker, driven by tests/acceptance/test_java_clients.py.
 * Usage: ClientCheck BOOTSTRAP SCENARIO TOPIC [COUNT]; SCENARIO is txn, fence or idempotent.
 * Each scenario checks what it can itself and ends with one line "RESULT key=value ..." on
 * stdout (exit 0), or throws (non-zero exit, stack trace on stderr).
 */
public final class ClientCheck {
    private final String bootstrap;

    private ClientCheck(String bootstrap) { this.bootstrap = bootstrap; }

    public static void main(String[] args) throws Exception {
        ClientCheck check = new ClientCheck(args[0]);
        String topic = args[2];
        switch (args[1]) {
            case "txn": check.transactions(topic); break;
            case "fence": check.fencing(topic); break;
            case "idempotent": check.idempotent(topic, Integer.parseInt(args[3])); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[1]);
        }
    }

    private void createTopic(String topic, int partitions) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
    }

    private KafkaProducer<String, String> producer(String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        if (transactionalId != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return new KafkaProducer<>(p);
    }

    private KafkaConsumer<String, String> consumer(String groupId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /** Values a read_committed consumer sees on every partition up to the last stable offset. */
    private List<String> readCommitted(String topic, int partitions) {
        try (KafkaConsumer<String, String> c = consumer("check-reader-" + UUID.randomUUID())) {
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

    /** Three partitions: a committed txn with sendOffsetsToTransaction, an aborted one, another committed. */
    private void transactions(String topic) throws Exception {
        createTopic(topic, 3);
        String group = topic + "-group";
        Set<String> committed = new TreeSet<>();
        Map<TopicPartition, OffsetAndMetadata> offsets = Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(42));
        try (KafkaProducer<String, String> p = producer(topic + "-txn")) {
            p.initTransactions();
            for (int txn = 0; txn < 3; txn++) {
                boolean commit = txn != 1;
                p.beginTransaction();
                for (int i = 0; i < 30; i++) {
                    String value = "t" + txn + "-" + i;
                    p.send(new ProducerRecord<>(topic, i % 3, "k" + i, value));
                    if (commit) committed.add(value);
                }
                if (commit) {
                    p.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group));
                    p.commitTransaction();
                } else {
                    p.flush();   // the aborted records really reach the log before the abort
                    p.abortTransaction();
                }
            }
        }
        List<String> seen = readCommitted(topic, 3);
        if (!new TreeSet<>(seen).equals(committed) || seen.size() != committed.size())
            throw new AssertionError("read_committed saw " + seen.size() + " records, expected exactly " + committed);
        long groupOffset;
        try (KafkaConsumer<String, String> c = consumer(group)) {
            OffsetAndMetadata om = c.committed(Set.of(new TopicPartition(topic, 0))).get(new TopicPartition(topic, 0));
            groupOffset = om == null ? -1 : om.offset();
        }
        if (groupOffset != 42) throw new AssertionError("group offset after sendOffsetsToTransaction is " + groupOffset);
        System.out.println("RESULT committed=" + seen.size() + " group_offset=" + groupOffset);
    }

    /** A second instance with the same transactional.id fences the first. */
    private void fencing(String topic) throws Exception {
        createTopic(topic, 1);
        String txnId = topic + "-txn";
        String fencedWith;
        String sendFailedWith;
        try (KafkaProducer<String, String> first = producer(txnId); KafkaProducer<String, String> second = producer(txnId)) {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, "k", "zombie")).get();
            second.initTransactions();   // bumps the epoch and aborts first's open transaction
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, "k", "winner"));
            second.commitTransaction();
            // the broker refuses the zombie's produce (stale epoch): the batch fails
            try {
                first.send(new ProducerRecord<>(topic, "k", "zombie-late")).get();
                throw new AssertionError("the fenced producer's send succeeded");
            } catch (ExecutionException e) {
                sendFailedWith = e.getCause().getClass().getSimpleName();
            }
            // ending the transaction asks the coordinator, which answers PRODUCER_FENCED (fatal)
            try {
                first.abortTransaction();
                throw new AssertionError("the fenced producer ended its transaction");
            } catch (ProducerFencedException e) {
                fencedWith = e.getClass().getSimpleName();
            }
        }
        List<String> seen = readCommitted(topic, 1);
        if (!seen.equals(List.of("winner"))) throw new AssertionError("read_committed saw " + seen);
        System.out.println("RESULT send_failed=" + sendFailedWith + " fenced=" + fencedWith + " visible=" + String.join(",", seen));
    }

    /**
     * The default (idempotent) producer sends COUNT numbered records one small batch at a time,
     * printing "acked N" as it goes so the test can SIGKILL and restart the broker meanwhile.
     */
    private void idempotent(String topic, int count) throws Exception {
        createTopic(topic, 1);
        try (KafkaProducer<String, String> p = producer(null)) {
            List<Future<RecordMetadata>> batch = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                batch.add(p.send(new ProducerRecord<>(topic, 0, null, Integer.toString(i))));
                if (batch.size() == 20 || i == count - 1) {
                    for (Future<RecordMetadata> f : batch) f.get();
                    batch.clear();
                    System.out.println("acked " + (i + 1));
                    System.out.flush();
                    Thread.sleep(20);
                }
            }
        }
        System.out.println("RESULT acked=" + count);
    }
}
