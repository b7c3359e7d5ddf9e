package minibroker;

import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java transactional-produce workload of `make bench` (bench/workloads.py java_transactions):
 * the same program against minibroker and Kafka, so both see a Java 4.x producer on the path
 * the cluster's `transaction.version` selects (2: KIP-890 transactions V2, 1: the classic flow).
 *
 * Usage: TxnBench BOOTSTRAP TOPIC TRANSACTIONS RECORDS_PER_TXN VALUE_BYTES TXN_VERSION
 * It first sets the finalized `transaction.version` to TXN_VERSION through Admin.updateFeatures
 * (an upgrade or a safe downgrade, nothing when it already is), then runs TRANSACTIONS
 * transactions of RECORDS_PER_TXN records with one producer, each committed and waited for.
 * Prints one line "RESULT transactions=N records=N seconds=S txn_version=V" (exit 0), or
 * throws. Only the transactions are timed, not the JVM start or initTransactions.
 */
public final class TxnBench {
    private TxnBench() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int transactions = Integer.parseInt(args[2]);
        int perTxn = Integer.parseInt(args[3]);
        int valueBytes = Integer.parseInt(args[4]);
        short version = Short.parseShort(args[5]);

        short finalized = setTransactionVersion(bootstrap, version);

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "bench-" + UUID.randomUUID());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(1 << 20));
        byte[] value = new byte[valueBytes];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            long start = System.nanoTime();
            for (int t = 0; t < transactions; t++) {
                producer.beginTransaction();
                for (int i = 0; i < perTxn; i++) {
                    byte[] key = Integer.toString(i % 64).getBytes();
                    producer.send(new ProducerRecord<>(topic, key, value));
                }
                producer.commitTransaction();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf(Locale.ROOT, "RESULT transactions=%d records=%d seconds=%.6f txn_version=%d%n",
                    transactions, (long) transactions * perTxn, seconds, finalized);
        }
    }

    /** Finalize `transaction.version` at `version` and return what the broker then reports. */
    private static short setTransactionVersion(String bootstrap, short version) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            short current = finalized(admin);
            if (current != version) {
                FeatureUpdate.UpgradeType type = version > current
                        ? FeatureUpdate.UpgradeType.UPGRADE : FeatureUpdate.UpgradeType.SAFE_DOWNGRADE;
                admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate(version, type)),
                        new UpdateFeaturesOptions()).all().get(60, TimeUnit.SECONDS);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while ((current = finalized(admin)) != version) {  // Kafka applies it asynchronously
                if (System.nanoTime() > deadline)
                    throw new IllegalStateException("transaction.version stayed " + current + ", wanted " + version);
                Thread.sleep(50);
            }
            return current;
        }
    }

    private static short finalized(Admin admin) throws Exception {
        FeatureMetadata features = admin.describeFeatures().featureMetadata().get(60, TimeUnit.SECONDS);
        FinalizedVersionRange range = features.finalizedFeatures().get("transaction.version");
        return range == null ? 0 : range.maxVersionLevel();
    }
}
