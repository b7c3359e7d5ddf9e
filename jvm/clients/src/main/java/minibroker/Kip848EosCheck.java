package minibroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A read-process-write exactly-once loop in a KIP-848 consumer group (group.protocol=consumer):
 * each member is a consumer (isolation.level=read_committed) with its own transactional producer,
 * as Kafka Streams runs one per member; it copies what it polled to NAME-out and sends the offsets
 * with consumer.groupMetadata() (KIP-447, the member epoch fencing a zombie's commit). Driven by
 * tests/acceptance/test_kip848_java_eos.py. Usage: Kip848EosCheck BOOTSTRAP SCENARIO NAME.
 * <ul>
 * <li>members: records keep arriving in NAME-in (3 partitions); members a and b copy them, c joins
 * mid-run, then b leaves.</li>
 * <li>crash: as members, but before c joins the check prints "READY" and waits for a line on stdin
 * (the test arms a crash point then, and kills the broker while c is joining); once the broker is
 * back it waits for a second line, and the members carry on.</li>
 * </ul>
 * A failed transaction is aborted (or the producer made again, whose initTransactions closes it) and
 * the member goes back to its group's committed offsets. At the end (everything committed), the
 * output read read_committed is compared with the input. Ends with one line "RESULT key=value ..."
 * on stdout (exit 0), or throws.
 */
public final class Kip848EosCheck {
    private static final long WAIT_MS = 90_000;
    private static final int PARTITIONS = 3;
    private final String bootstrap;
    private final String input;
    private final String output;
    private final String group;
    private final List<Member> started = new CopyOnWriteArrayList<>();

    private Kip848EosCheck(String bootstrap, String name) {
        this.bootstrap = bootstrap;
        this.input = name + "-in";
        this.output = name + "-out";
        this.group = name + "-g";
    }

    public static void main(String[] args) throws Exception {
        Kip848EosCheck check = new Kip848EosCheck(args[0], args[2]);
        switch (args[1]) {
            case "members": check.run(false); break;
            case "crash": check.run(true); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[1]);
        }
    }

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    private Properties producerProperties() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        return p;
    }

    private KafkaProducer<String, String> transactionalProducer(String transactionalId) {
        Properties p = producerProperties();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "10000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
        return new KafkaProducer<>(p);
    }

    private KafkaConsumer<String, String> consumer(String clientId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put("group.protocol", "consumer");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    private void waitFor(String what, Callable<Boolean> condition) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!condition.call()) {
            for (Member m : started) {
                if (m.failure != null) throw new IllegalStateException(m.name + " failed", m.failure);
            }
            if (feeder != null && feeder.failure != null) throw new IllegalStateException("feeder failed", feeder.failure);
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for " + what);
            Thread.sleep(50);
        }
    }

    /** Sends r0, r1, ... to the input (round robin over the partitions) until stopped. */
    private final class Feeder implements Runnable {
        final AtomicInteger sent = new AtomicInteger();
        final AtomicBoolean stop = new AtomicBoolean();
        volatile Throwable failure;
        final Thread thread = new Thread(this, "feeder");

        @Override
        public void run() {
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProperties())) {
                while (!stop.get()) {
                    int i = sent.get();
                    producer.send(new ProducerRecord<>(input, i % PARTITIONS, null, "r" + i)).get();
                    sent.incrementAndGet();
                    Thread.sleep(5);
                }
            } catch (Throwable t) {
                failure = t;
            }
        }

        int finish() throws Exception {
            stop.set(true);
            thread.join(WAIT_MS);
            if (failure != null) throw new IllegalStateException("feeder failed", failure);
            return sent.get();
        }
    }

    private Feeder feeder;

    /** One member in its own thread: poll, copy in a transaction with the offsets, until stopped; then close (leave). */
    private final class Member implements Runnable {
        final String name;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicInteger copied = new AtomicInteger();
        final AtomicInteger aborted = new AtomicInteger();
        volatile Set<TopicPartition> assignment = Set.of();
        volatile Throwable failure;
        final Thread thread;
        KafkaProducer<String, String> producer;

        Member(String name) {
            this.name = name;
            this.thread = new Thread(this, name);
            started.add(this);
            thread.start();
        }

        private String transactionalId() { return group + "-" + name; }

        /** A new producer for this member's transactional id; its initTransactions ends what the last one left open. */
        private void newProducer() throws Exception {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (true) {
                if (producer != null) producer.close(Duration.ZERO);
                producer = transactionalProducer(transactionalId());
                try {
                    producer.initTransactions();
                    return;
                } catch (org.apache.kafka.common.errors.TimeoutException e) {
                    if (System.currentTimeMillis() > deadline) throw e;
                }
            }
        }

        /** Back to the group's committed offsets (read stable: the last transaction is complete by now). */
        private void rewind(KafkaConsumer<String, String> consumer) {
            Set<TopicPartition> owned = consumer.assignment();
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(owned, Duration.ofMillis(WAIT_MS));
            for (TopicPartition tp : owned) {
                OffsetAndMetadata at = committed.get(tp);
                if (at == null) consumer.seekToBeginning(List.of(tp));
                else consumer.seek(tp, at.offset());
            }
        }

        @Override
        public void run() {
            try (KafkaConsumer<String, String> consumer = consumer(group + "-" + name)) {
                newProducer();
                consumer.subscribe(List.of(input));
                while (!stop.get()) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    assignment = Set.copyOf(consumer.assignment());
                    if (records.isEmpty()) continue;
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    try {
                        producer.beginTransaction();
                        for (ConsumerRecord<String, String> r : records) {
                            producer.send(new ProducerRecord<>(output, r.partition(), r.key(), r.value()));
                            offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        }
                        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                        producer.commitTransaction();
                        copied.addAndGet(records.count());
                    } catch (KafkaException e) {
                        aborted.incrementAndGet();
                        System.err.println(name + ": transaction failed, going back to the committed offsets: " + e);
                        try {
                            producer.abortTransaction();
                        } catch (KafkaException again) {
                            newProducer();
                        }
                        rewind(consumer);
                    }
                }
            } catch (Throwable t) {
                failure = t;
            } finally {
                if (producer != null) producer.close(Duration.ofSeconds(5));
            }
        }

        void leave() throws Exception {
            stop.set(true);
            thread.join(WAIT_MS);
            if (thread.isAlive()) throw new IllegalStateException(name + " did not close");
            if (failure != null) throw new IllegalStateException(name + " failed", failure);
        }
    }

    private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) throws Exception {
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) ask.put(new TopicPartition(topic, p), OffsetSpec.latest());
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : admin.listOffsets(ask).all().get().entrySet()) {
            ends.put(e.getKey(), e.getValue().offset());
        }
        return ends;
    }

    private Map<TopicPartition, Long> committed(Admin admin) throws Exception {
        Map<TopicPartition, Long> out = new HashMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .forEach((tp, at) -> { if (at != null) out.put(tp, at.offset()); });
        return out;
    }

    /** Every value of the output, read read_committed up to its end. */
    private Map<String, Integer> readOutput() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<String, Integer> seen = new HashMap<>();
        try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) parts.add(new TopicPartition(output, i));
            reader.assign(parts);
            reader.seekToBeginning(parts);
            Map<TopicPartition, Long> ends = reader.endOffsets(parts);
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (parts.stream().anyMatch(tp -> reader.position(tp) < ends.get(tp))) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("output not read to its end");
                for (ConsumerRecord<String, String> r : reader.poll(Duration.ofMillis(200))) seen.merge(r.value(), 1, Integer::sum);
            }
        }
        return seen;
    }

    private void run(boolean crash) throws Exception {
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(input, PARTITIONS, (short) 1), new NewTopic(output, PARTITIONS, (short) 1)))
                    .all().get();
            feeder = new Feeder();
            feeder.thread.start();
            Member a = new Member("a");
            Member b = new Member("b");
            waitFor("a and b copy records",
                    () -> a.copied.get() > 0 && b.copied.get() > 0
                            && a.assignment.size() + b.assignment.size() == PARTITIONS);
            if (crash) {
                System.out.println("READY");
                System.out.flush();
                if (stdin.readLine() == null) throw new IllegalStateException("no GO on stdin");
            }
            Member c = new Member("c");
            if (crash && stdin.readLine() == null) throw new IllegalStateException("no RESTARTED on stdin");
            waitFor("c copies records", () -> c.copied.get() > 0 && !c.assignment.isEmpty());
            int before = a.copied.get() + b.copied.get() + c.copied.get();
            waitFor("three members copy more", () -> a.copied.get() + b.copied.get() + c.copied.get() > before + 30);
            b.leave();
            waitFor("a and c own every partition", () -> a.assignment.size() + c.assignment.size() == PARTITIONS);
            int after = a.copied.get() + c.copied.get();
            waitFor("a and c copy more", () -> a.copied.get() + c.copied.get() > after + 30);
            int sent = feeder.finish();
            Map<TopicPartition, Long> ends = endOffsets(admin, input);
            waitFor("the group commits the end offsets", () -> committed(admin).equals(ends));
            a.leave();
            c.leave();
            Map<TopicPartition, Long> committed = committed(admin);
            Map<String, Integer> seen = readOutput();
            int twice = 0;
            int lost = 0;
            for (int i = 0; i < sent; i++) {
                int n = seen.getOrDefault("r" + i, 0);
                if (n == 0) lost++;
                if (n > 1) twice += n - 1;
            }
            int total = seen.values().stream().mapToInt(Integer::intValue).sum();
            int aborted = 0;
            for (Member m : started) aborted += m.aborted.get();
            System.out.println("RESULT sent=" + sent + " output=" + total + " twice=" + twice + " lost=" + lost
                    + " committed_is_end=" + committed.equals(ends)
                    + " committed=" + committed.values().stream().mapToLong(Long::longValue).sum()
                    + " aborted=" + aborted);
        }
    }
}
