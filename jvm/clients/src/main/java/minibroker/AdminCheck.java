package minibroker;

import java.lang.reflect.Method;
import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Java Admin calls on the admin keys one node answers (issue 23), driven by
 * tests/acceptance/test_admin_keys.py. Usage: AdminCheck BOOTSTRAP TOPIC TXN_PREFIX.
 * Compiled against every kafka-clients version jvm/fetch.sh fetches: calls newer than 3.9
 * (DescribeClusterOptions.includeFencedBrokers, ListTransactionsOptions
 * .filterOnTransactionalIdPattern) go through reflection. Ends with one line
 * "RESULT key=value ..." on stdout; a failure throws (non-zero exit).
 */
public final class AdminCheck {
    private AdminCheck() {}

    private static String failure(Runnable call) {
        try {
            call.run();
            return "none";
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() instanceof ExecutionException ? e.getCause().getCause() : e.getCause();
            return (cause == null ? e : cause).getClass().getSimpleName();
        }
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> future) {
        try {
            return future.get();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], prefix = args[2];
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Map<String, String> result = new LinkedHashMap<>();
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();

            QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
            result.put("leader", String.valueOf(quorum.leaderId()));
            result.put("epoch", String.valueOf(quorum.leaderEpoch()));
            result.put("voters", String.valueOf(quorum.voters().size()));
            result.put("observers", String.valueOf(quorum.observers().size()));

            result.put("reassignments", String.valueOf(admin.listPartitionReassignments().reassignments().get().size()));
            TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
            admin.alterPartitionReassignments(Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(1))))).all().get();
            result.put("reassign_other", failure(() -> get(admin.alterPartitionReassignments(
                Map.of(p1, Optional.of(new NewPartitionReassignment(List.of(2))))).all())));
            result.put("cancel", failure(() -> get(admin.alterPartitionReassignments(
                Map.of(p1, Optional.empty())).all())));

            String logDir = admin.describeLogDirs(List.of(1)).allDescriptions().get().get(1).keySet().iterator().next();
            admin.alterReplicaLogDirs(Map.of(new TopicPartitionReplica(topic, 0, 1), logDir)).all().get();
            result.put("log_dir_other", failure(() -> get(admin.alterReplicaLogDirs(
                Map.of(new TopicPartitionReplica(topic, 0, 1), logDir + "-elsewhere")).all())));

            result.put("unregister_other", failure(() -> get(admin.unregisterBroker(7).all())));

            DescribeClusterOptions withFenced = new DescribeClusterOptions();
            try {
                DescribeClusterOptions.class.getMethod("includeFencedBrokers", boolean.class).invoke(withFenced, true);
            } catch (NoSuchMethodException older) {
                // before 4.0: no fenced brokers option
            }
            result.put("brokers", String.valueOf(admin.describeCluster(withFenced).nodes().get().size()));

            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            List<KafkaProducer<String, String>> producers = new ArrayList<>();
            try {
                for (String name : List.of("alpha-1", "alpha-2", "beta-1")) {
                    pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-" + name);
                    KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
                    producers.add(producer);
                    producer.initTransactions();
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(topic, 0, "k", "v")).get();
                }
                ListTransactionsOptions filtered = new ListTransactionsOptions();
                try {
                    Method pattern = ListTransactionsOptions.class.getMethod("filterOnTransactionalIdPattern", String.class);
                    pattern.invoke(filtered, prefix + "-alpha-\\d");
                    List<String> ids = new ArrayList<>();
                    for (TransactionListing t : admin.listTransactions(filtered).all().get()) ids.add(t.transactionalId());
                    Collections.sort(ids);
                    result.put("pattern", String.join(",", ids).replace(prefix + "-", ""));
                } catch (NoSuchMethodException older) {
                    result.put("pattern", "unsupported-by-client");
                }
            } finally {
                for (KafkaProducer<String, String> producer : producers) {
                    producer.abortTransaction();
                    producer.close();
                }
            }
        }
        StringBuilder line = new StringBuilder("RESULT");
        result.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        System.out.println(line);
    }
}
