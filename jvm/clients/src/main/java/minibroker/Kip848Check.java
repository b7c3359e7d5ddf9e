package minibroker;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * KIP-848 consumer groups seen by the Java consumer with group.protocol=consumer, driven by
 * tests/acceptance/test_kip848_java.py. Usage: Kip848Check BOOTSTRAP SCENARIO NAME.
 * <ul>
 * <li>members: three consumers of one group over a 3-partition topic NAME, joining one by one
 * and leaving one by one while records keep arriving; each commits what it processed after every
 * poll (commitSync). Prints how many records were read, how many twice, how many never, the
 * committed total, and the group as Admin.describeConsumerGroups saw it with three members.</li>
 * <li>regex: a consumer subscribed with SubscriptionPattern NAME-.* reads the one matching topic,
 * then a topic created later. Prints the records read and the time the new topic took.</li>
 * </ul>
 * The 4.x-only API (SubscriptionPattern, ConsumerGroupDescription.groupState) is called by
 * reflection: the checks are compiled against every kafka-clients version jvm/fetch.sh fetches.
 * Ends with one line "RESULT key=value ..." on stdout (exit 0), or throws.
 */
public final class Kip848Check {
    private static final long WAIT_MS = 60_000;
    private final String bootstrap;

    private Kip848Check(String bootstrap) { this.bootstrap = bootstrap; }

    public static void main(String[] args) throws Exception {
        Kip848Check check = new Kip848Check(args[0]);
        switch (args[1]) {
            case "members": check.members(args[2]); break;
            case "regex": check.regex(args[2]); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[1]);
        }
    }

    private Admin admin() { return Clients.admin(bootstrap); }

    private KafkaProducer<String, String> producer() { return Clients.producer(bootstrap); }

    private KafkaConsumer<String, String> consumer(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put("group.protocol", "consumer");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    private static void send(KafkaProducer<String, String> producer, String topic, int partitions, int from, int n)
            throws Exception {
        Clients.send(producer, topic, partitions, from, n);
    }

    private final List<Member> started = new CopyOnWriteArrayList<>();

    private void waitFor(String what, Callable<Boolean> condition) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!condition.call()) {
            for (Member m : started) {
                if (m.failure != null) throw new IllegalStateException(m.name + " failed", m.failure);
            }
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for " + what);
            Thread.sleep(50);
        }
    }

    /** One member in its own thread: poll, record what it read, commit it, until stopped; then close (leave). */
    private final class Member implements Runnable {
        final String name;
        final String group;
        final String topic;
        final Map<TopicPartition, List<Long>> read;
        final AtomicBoolean stop = new AtomicBoolean();
        volatile Set<TopicPartition> assignment = Set.of();
        volatile Throwable failure;
        final Thread thread;

        Member(String name, String group, String topic, Map<TopicPartition, List<Long>> read) {
            this.name = name;
            this.group = group;
            this.topic = topic;
            this.read = read;
            this.thread = new Thread(this, name);
            started.add(this);
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<String, String> consumer = consumer(group)) {
                consumer.subscribe(List.of(topic));
                while (!stop.get()) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
                    for (ConsumerRecord<String, String> r : records) {
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        synchronized (read) { read.computeIfAbsent(tp, k -> new ArrayList<>()).add(r.offset()); }
                        done.put(tp, new OffsetAndMetadata(r.offset() + 1));
                    }
                    if (!done.isEmpty()) consumer.commitSync(done);
                    assignment = Set.copyOf(consumer.assignment());
                }
            } catch (Throwable t) {
                failure = t;
            }
        }

        void leave() throws Exception {
            stop.set(true);
            thread.join(WAIT_MS);
            if (failure != null) throw new IllegalStateException(name + " failed", failure);
        }
    }

    private static int count(Map<TopicPartition, List<Long>> read) {
        synchronized (read) { return read.values().stream().mapToInt(List::size).sum(); }
    }

    private void members(String topic) throws Exception {
        String group = topic + "-group";
        int partitions = 3;
        Map<TopicPartition, List<Long>> read = new HashMap<>();
        try (Admin admin = admin(); KafkaProducer<String, String> producer = producer()) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            int sent = 0;
            send(producer, topic, partitions, sent, 30);
            sent += 30;
            Member a = new Member("a", group, topic, read);
            waitFor("a reads 30", () -> count(read) >= 30);
            Member b = new Member("b", group, topic, read);
            waitFor("a and b share the partitions",
                    () -> !b.assignment.isEmpty() && a.assignment.size() + b.assignment.size() == partitions);
            send(producer, topic, partitions, sent, 30);
            sent += 30;
            Member c = new Member("c", group, topic, read);
            waitFor("one partition each",
                    () -> a.assignment.size() == 1 && b.assignment.size() == 1 && c.assignment.size() == 1);
            ConsumerGroupDescription described = stable(admin, group, 3);
            send(producer, topic, partitions, sent, 30);
            sent += 30;
            final int third = sent;
            waitFor("three read 90", () -> count(read) >= third);
            b.leave();
            send(producer, topic, partitions, sent, 30);
            sent += 30;
            c.leave();
            send(producer, topic, partitions, sent, 30);
            sent += 30;
            final int all = sent;
            waitFor("a reads everything", () -> count(read) >= all && a.assignment.size() == partitions);
            a.leave();
            long committed = 0;
            Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            for (OffsetAndMetadata o : offsets.values()) committed += o.offset();
            int twice = 0, lost = 0;
            for (int p = 0; p < partitions; p++) {
                List<Long> got = read.getOrDefault(new TopicPartition(topic, p), List.of());
                Set<Long> distinct = new HashSet<>(got);
                twice += got.size() - distinct.size();
                for (long o = 0; o < all / partitions; o++) if (!distinct.contains(o)) lost++;
            }
            System.out.println("RESULT sent=" + all + " read=" + count(read) + " twice=" + twice + " lost=" + lost
                    + " committed=" + committed + " type=" + described.type() + " state=" + state(described)
                    + " assignor=" + described.partitionAssignor() + " members=" + described.members().size()
                    + " member_partitions=" + memberPartitions(described));
        }
    }

    /** The group as describeConsumerGroups shows it once stable with `members` members. */
    private ConsumerGroupDescription stable(Admin admin, String group, int members) throws Exception {
        ConsumerGroupDescription[] last = new ConsumerGroupDescription[1];
        waitFor("the group stable with " + members + " members", () -> {
            last[0] = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            return "STABLE".equals(state(last[0])) && last[0].members().size() == members;
        });
        return last[0];
    }

    private static String state(ConsumerGroupDescription d) throws Exception {
        return String.valueOf(d.getClass().getMethod("groupState").invoke(d)).toUpperCase(Locale.ROOT);
    }

    private static String memberPartitions(ConsumerGroupDescription d) {
        List<Integer> sizes = new ArrayList<>();
        d.members().forEach(m -> sizes.add(m.assignment().topicPartitions().size()));
        Collections.sort(sizes);
        return sizes.toString().replace(" ", "");
    }

    private void regex(String prefix) throws Exception {
        String group = prefix + "-group";
        String first = prefix + "-a", later = prefix + "-b";
        try (Admin admin = admin(); KafkaProducer<String, String> producer = producer();
             KafkaConsumer<String, String> consumer = consumer(group)) {
            admin.createTopics(List.of(new NewTopic(first, 1, (short) 1), new NewTopic(prefix + "x", 1, (short) 1)))
                    .all().get();
            send(producer, first, 1, 0, 5);
            send(producer, prefix + "x", 1, 0, 5);  // does not match NAME-.*
            Class<?> pattern = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
            Object subscription = pattern.getConstructor(String.class).newInstance(prefix + "-.*");
            consumer.getClass().getMethod("subscribe", pattern).invoke(consumer, subscription);
            Set<String> topics = new TreeSet<>();
            int[] n = {0};
            Callable<Boolean> reads = () -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    topics.add(r.topic());
                    n[0]++;
                }
                return false;
            };
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (n[0] < 5 && System.currentTimeMillis() < deadline) reads.call();
            long created = System.currentTimeMillis();
            admin.createTopics(List.of(new NewTopic(later, 1, (short) 1))).all().get();
            send(producer, later, 1, 0, 5);
            while (n[0] < 10 && System.currentTimeMillis() < deadline) reads.call();
            long took = System.currentTimeMillis() - created;
            System.out.println("RESULT read=" + n[0] + " topics=" + String.join(",", topics) + " new_topic_ms=" + took);
        }
    }
}
