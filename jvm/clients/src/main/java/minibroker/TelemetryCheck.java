package minibroker;

import java.time.Duration;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * KIP-714 with a Java producer, driven by tests/acceptance/test_client_telemetry.py.
 * Usage: TelemetryCheck BOOTSTRAP TOPIC CLIENT_ID COUNT LINGER_SECONDS. Sends COUNT records, asks
 * for its client instance id (clientInstanceId: GetTelemetrySubscriptions), keeps the producer
 * open LINGER_SECONDS so that it pushes its metrics, then closes it (a last, terminating push).
 * Ends with "RESULT instance=... sent=..." on stdout (exit 0), or throws.
 */
public final class TelemetryCheck {
    private TelemetryCheck() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], clientId = args[2];
        int count = Integer.parseInt(args[3]);
        long lingerMs = Long.parseLong(args[4]) * 1000L;
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ENABLE_METRICS_PUSH_CONFIG, "true");
        Uuid instance;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
            }
            instance = producer.clientInstanceId(Duration.ofSeconds(20));
            if (instance == null) throw new AssertionError("no client instance id: telemetry is off");
            long end = System.currentTimeMillis() + lingerMs;
            int i = count;
            while (System.currentTimeMillis() < end) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
                i++;
                Thread.sleep(100);
            }
            count = i;
        }
        System.out.println("RESULT instance=" + instance + " sent=" + count);
    }
}
