package minibroker;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Topic ids (KIP-516) and fetch sessions (KIP-227) seen by a Java consumer, driven by
 * tests/acceptance/test_topic_ids.py. Usage: TopicIdCheck BOOTSTRAP SCENARIO TOPIC.
 * <ul>
 * <li>recreated, recreated-idle: a consumer reads 5 records, the topic is deleted and created
 * again under its name with 8 new records (the consumer polling meanwhile, or not); then it
 * polls for a while. Prints what it read after the re-creation and whether the ids differ.</li>
 * <li>stream: a consumer reads 3 partitions while a producer keeps writing to one of them, so
 * the consumer's fetches run in one incremental session; prints how many records it read.</li>
 * </ul>
 * Ends with one line "RESULT key=value ..." on stdout (exit 0), or throws.
 */
public final class TopicIdCheck {
    private final String bootstrap;

    private TopicIdCheck(String bootstrap) { this.bootstrap = bootstrap; }

    public static void main(String[] args) throws Exception {
        TopicIdCheck check = new TopicIdCheck(args[0]);
        switch (args[1]) {
            case "recreated": check.recreated(args[2], true); break;
            case "recreated-idle": check.recreated(args[2], false); break;
            case "stream": check.stream(args[2]); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[1]);
        }
    }

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    private KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private KafkaConsumer<String, String> consumer() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");  // the test deletes and re-creates
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    private static void send(KafkaProducer<String, String> producer, String topic, int partition, String prefix, int n)
            throws Exception {
        for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, partition, null, prefix + i)).get();
    }

    private Uuid topicId(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId();
    }

    private void recreated(String topic, boolean pollThrough) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = admin(); KafkaConsumer<String, String> c = consumer()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            try (KafkaProducer<String, String> p = producer()) {
                send(p, topic, 0, "old-", 5);
            }
            Uuid oldId = topicId(admin, topic);
            c.assign(List.of(tp));
            List<String> before = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (before.size() < 5) {
                if (System.currentTimeMillis() > deadline) throw new AssertionError("read only " + before);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) before.add(r.value());
            }
            admin.deleteTopics(List.of(topic)).all().get();
            deadline = System.currentTimeMillis() + 30_000;
            while (true) {  // wait until the broker no longer knows the topic
                try {
                    topicId(admin, topic);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof UnknownTopicOrPartitionException) break;
                    throw e;
                }
                if (System.currentTimeMillis() > deadline) throw new AssertionError("topic not deleted");
                Thread.sleep(50);
            }
            // polling through the deletion, the consumer's session partition is unknown for a
            // while; idle, its next fetch names the old id of a topic that exists again
            List<String> after = new ArrayList<>();
            for (int i = 0; pollThrough && i < 5; i++)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) after.add(r.value());
            deadline = System.currentTimeMillis() + 30_000;
            while (true) {  // Kafka may still be removing the old topic: TopicExistsException
                try {
                    admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
                    break;
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException) || System.currentTimeMillis() > deadline) throw e;
                    Thread.sleep(100);
                }
            }
            try (KafkaProducer<String, String> p = producer()) {
                send(p, topic, 0, "new-", 8);
            }
            Uuid newId = topicId(admin, topic);
            deadline = System.currentTimeMillis() + 6_000;
            while (System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200)))
                    after.add(r.offset() + ":" + r.value());
            System.out.println("RESULT before=" + before.size() + " after=" + (after.isEmpty() ? "-" : String.join(",", after))
                + " position=" + c.position(tp) + " ids_differ=" + !oldId.equals(newId));
        }
    }

    private void stream(String topic) throws Exception {
        List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2));
        try (Admin admin = admin(); KafkaConsumer<String, String> c = consumer(); KafkaProducer<String, String> p = producer()) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            c.assign(tps);
            int read = 0;
            for (int round = 0; round < 20; round++) {
                send(p, topic, round % 2, "r" + round + "-", 5);
                long deadline = System.currentTimeMillis() + 10_000;
                int want = (round + 1) * 5;
                while (read < want) {
                    if (System.currentTimeMillis() > deadline) throw new AssertionError("read " + read + " of " + want);
                    read += c.poll(Duration.ofMillis(100)).count();
                }
            }
            System.out.println("RESULT read=" + read);
        }
    }
}
