package minibroker;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams application with exactly-once v2, driven by tests/acceptance/test_kafka_streams.py.
 *
 * Usage: EosCountApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [STALL_KEY:STALL_COUNT[:RESUME_FILE]]
 *
 * Topology: INPUT (key: record id, value: a word) -> selectKey(word) -> groupByKey (repartition
 * topic APPLICATION_ID-by-word-repartition) -> count (RocksDB store "counts", changelog
 * APPLICATION_ID-counts-changelog) -> OUTPUT (key: word, value: its count as a long). The record
 * cache is off, so every input record gives exactly one output record: a read_committed reader
 * sees, for each word, the counts 1, 2, ... M in order.
 *
 * With a stall point, the stream thread stops inside the transaction that counts STALL_KEY up to
 * STALL_COUNT: the changelog record of that count is already sent (the transaction is open on
 * the broker) and the output of that count is not. It prints "STALL key count" and waits until
 * RESUME_FILE exists (forever without one: the test SIGKILLs the process there).
 *
 * Stdout: "STATE new_state" at each state change and the STALL line; SIGTERM closes the
 * application cleanly and prints "STOPPED"; the ERROR state (a fatal error in every stream thread)
 * ends the process with exit code 1.
 */
public final class EosCountApp {
    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            throw new IllegalArgumentException(
                "usage: EosCountApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [KEY:COUNT[:RESUME_FILE]]");
        }
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], stateDir = args[4];
        String[] stall = args.length > 5 ? args[5].split(":", 3) : null;
        String stallKey = stall == null ? null : stall[0];
        long stallCount = stall == null ? -1 : Long.parseLong(stall[1]);
        Path resume = stall != null && stall.length > 2 ? Path.of(stall[2]) : null;

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);   // the EOS default, stated
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);  // one output per input
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // a killed instance's member leaves the (classic) group after 2 s instead of 45 s
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 2000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((id, word) -> word)
            .groupByKey(Grouped.as("by-word"))
            .count(Materialized.as("counts"))
            .toStream()
            .peek((word, count) -> {
                if (word.equals(stallKey) && count == stallCount) stallHere(word, count, resume);
            })
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((now, before) -> say("STATE " + now));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            say("STOPPED");
            stopped.countDown();
        }));
        streams.start();
        // a fatal error stops every stream thread and leaves the JVM idle: end it, so that the
        // test sees the exit at once (with the cause on stderr) instead of waiting for output
        while (!stopped.await(100, TimeUnit.MILLISECONDS)) {
            if (streams.state() == KafkaStreams.State.ERROR) System.exit(1);
        }
    }

    private static void stallHere(String word, long count, Path resume) {
        say("STALL " + word + " " + count);
        try {
            while (resume == null || !Files.exists(resume)) Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        say("RESUMED");
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
