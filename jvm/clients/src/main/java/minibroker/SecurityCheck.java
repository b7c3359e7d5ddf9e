package minibroker;

import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Java client security checks, driven by tests/acceptance/test_java_security.py.
 * Usage: SecurityCheck CLIENT_PROPERTIES SCENARIO TOPIC [TRANSACTIONAL_ID]. The properties file
 * holds bootstrap.servers and the client's security settings (SASL, TLS with PEM stores).
 * Scenarios:
 *   roundtrip  produce 10 records to TOPIC (which must exist) and read them back from offset 0
 *   refused    the client's first request fails: prints the exception's class (expected: bad credentials)
 *   denied     a produce to TOPIC and initTransactions for TRANSACTIONAL_ID fail: prints both classes
 * Each scenario ends with one line "RESULT key=value ..." on stdout (exit 0), or throws.
 */
public final class SecurityCheck {
    private static final int COUNT = 10;
    private static final Duration WAIT = Duration.ofSeconds(30);
    private final Properties base;

    private SecurityCheck(Properties base) { this.base = base; }

    public static void main(String[] args) throws Exception {
        Properties base = new Properties();
        try (InputStream in = new FileInputStream(args[0])) { base.load(in); }
        SecurityCheck check = new SecurityCheck(base);
        switch (args[1]) {
            case "roundtrip": check.roundtrip(args[2]); break;
            case "refused": check.refused(args[2]); break;
            case "denied": check.denied(args[2], args[3]); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[1]);
        }
    }

    private Properties with(String... pairs) {
        Properties p = new Properties();
        p.putAll(base);
        for (int i = 0; i < pairs.length; i += 2) p.put(pairs[i], pairs[i + 1]);
        return p;
    }

    private KafkaProducer<String, String> producer(String... pairs) {
        Properties p = with(pairs);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return new KafkaProducer<>(p);
    }

    private KafkaConsumer<String, String> consumer() {
        Properties p = with(ConsumerConfig.GROUP_ID_CONFIG, "security-check-" + UUID.randomUUID(),
                            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    private static String causeName(Throwable e) {
        Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return t.getClass().getSimpleName();
    }

    private void roundtrip(String topic) throws Exception {
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = producer(ProducerConfig.ACKS_CONFIG, "all")) {
            for (int i = 0; i < COUNT; i++) {
                String value = "secure-" + i;
                p.send(new ProducerRecord<>(topic, 0, "k" + i, value)).get();
                sent.add(value);
            }
        }
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer()) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + WAIT.toMillis();
            while (got.size() < COUNT) {
                if (System.currentTimeMillis() > deadline) throw new AssertionError("consumed only " + got);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
            }
        }
        if (!got.equals(sent)) throw new AssertionError("consumed " + got + ", produced " + sent);
        System.out.println("RESULT produced=" + sent.size() + " consumed=" + got.size());
    }

    /** Bad credentials: the admin client's first call and a producer's send both fail. */
    private void refused(String topic) throws Exception {
        String admin;
        try (Admin a = Admin.create(with("default.api.timeout.ms", "20000", "request.timeout.ms", "10000"))) {
            a.listTopics().names().get();
            throw new AssertionError("listTopics succeeded with bad credentials");
        } catch (ExecutionException | KafkaException e) {
            admin = causeName(e);
        }
        String send;
        try (KafkaProducer<String, String> p = producer()) {
            p.send(new ProducerRecord<>(topic, "k", "v")).get();
            throw new AssertionError("send succeeded with bad credentials");
        } catch (ExecutionException | KafkaException e) {
            send = causeName(e);
        }
        System.out.println("RESULT admin=" + admin + " send=" + send);
    }

    /** The authorizer denies: a produce to TOPIC, and initTransactions for TRANSACTIONAL_ID. */
    private void denied(String topic, String transactionalId) throws Exception {
        String send;
        try (KafkaProducer<String, String> p = producer(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false")) {
            p.send(new ProducerRecord<>(topic, "k", "v")).get();
            throw new AssertionError("send to " + topic + " succeeded");
        } catch (ExecutionException | KafkaException e) {
            send = causeName(e);
        }
        String init;
        try (KafkaProducer<String, String> p = producer(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId)) {
            p.initTransactions();
            throw new AssertionError("initTransactions for " + transactionalId + " succeeded");
        } catch (KafkaException e) {
            init = causeName(e);
        }
        System.out.println("RESULT send=" + send + " init=" + init);
    }
}
