package minibroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a consumer group, driven by a test (tests/acceptance/test_kip848_mixed.py):
 * {@code GroupMember <bootstrap> <group> <topic> <group.protocol>} subscribes, and for every record
 * commits its offset synchronously, then prints {@code REC <partition> <offset> <value>} (a record
 * printed is one its commit covers; one whose commit failed is printed {@code UNCOMMITTED ...}).
 * Assignments print {@code ASSIGNED p,p,...} / {@code REVOKED p,p,...}. A line {@code stop} on stdin
 * (or its end) makes it close the consumer, which leaves the group; then {@code RESULT closed=1}.
 */
public final class GroupMember {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2], protocol = args[3];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("group.protocol", protocol);
        props.put("client.id", "group-member-" + protocol);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
                    // wait for "stop"
                }
            } catch (Exception ignored) {
                // stdin closed: stop
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    say("REVOKED " + partitionList(partitions));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    say("ASSIGNED " + partitionList(partitions));
                }
            });
            while (!stop.get()) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
                    TopicPartition tp = new TopicPartition(record.topic(), record.partition());
                    String what = record.partition() + " " + record.offset() + " " + record.value();
                    try {
                        consumer.commitSync(Map.of(tp, new OffsetAndMetadata(record.offset() + 1)));
                        say("REC " + what);
                    } catch (Exception e) {
                        say("UNCOMMITTED " + what + " " + e.getClass().getSimpleName());
                    }
                }
            }
        }
        say("RESULT closed=1");
    }

    private static String partitionList(Collection<TopicPartition> partitions) {
        TreeSet<Integer> sorted = new TreeSet<>();
        for (TopicPartition tp : partitions) {
            sorted.add(tp.partition());
        }
        StringBuilder out = new StringBuilder();
        for (int p : sorted) {
            out.append(out.length() == 0 ? "" : ",").append(p);
        }
        return out.toString();
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
