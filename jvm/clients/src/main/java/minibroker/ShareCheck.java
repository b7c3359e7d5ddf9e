package minibroker;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * KIP-932 share groups seen by the Java KafkaShareConsumer and Admin of kafka-clients 4.4,
 * driven by tests/acceptance/test_share_groups_java.py (and test_share_groups_tools.py for
 * set-up). Usage: ShareCheck BOOTSTRAP SCENARIO NAME [ARGS]; the topic is NAME, the group
 * NAME-group, whose share.auto.offset.reset is set to earliest first (GROUP config resource).
 * <ul>
 * <li>consume MODE N: three consumers (share.acknowledgement.mode MODE: explicit or implicit)
 * of a 2-partition topic, stable in the group before N records are produced; each record's
 * deliveries and the offsets acknowledged as accepted (AcknowledgementCommitCallback), the group
 * as describeShareGroups saw it, listShareGroupOffsets and listGroups(SHARE) at the end.</li>
 * <li>release: a consumer RELEASEs record 0 at its first delivery and accepts everything else;
 * record 0 comes again with its delivery count.</li>
 * <li>reject: a consumer REJECTs the first record and accepts everything else, also records
 * produced afterwards; the rejected record is never delivered again.</li>
 * <li>limit: share.delivery.count.limit=2; a consumer RELEASEs record 0 each time it comes, then
 * reads records produced afterwards; record 0 is archived after its second delivery.</li>
 * <li>hold N LOCK_MS: produces N records to a 2-partition topic (group share.record.lock.duration.ms
 * LOCK_MS), polls once in explicit mode and prints "ACQUIRED ..." without acknowledging, then
 * sleeps until killed (the test kills or keeps it).</li>
 * <li>drain N: two consumers read NAME until all N records are accepted; which records came with
 * a delivery count above 1, and when the first of them came.</li>
 * <li>admin: Admin on a group: describe an unknown group, alter and delete offsets while a member
 * is active (refused) and once empty, listShareGroupOffsets after each, deleteShareGroups.</li>
 * <li>consumed N: one consumer reads and accepts the N records of a 2-partition topic, then
 * closes (the set-up of the kafka-share-groups.sh test).</li>
 * <li>reread N: one consumer of the existing group and topic accepts N records, then closes;
 * which records (partition:offset/deliveryCount) it got.</li>
 * </ul>
 * API newer than kafka-clients 3.9 (the Admin share-group calls, ConsumerRecord.deliveryCount,
 * ConfigResource.Type.GROUP) is called by reflection (Clients.call). Ends with one line
 * "RESULT key=value ..." on stdout (exit 0), or throws.
 */
public final class ShareCheck {
    private static final long WAIT_MS = 90_000;
    private final String bootstrap;
    private final String topic;
    private final String group;
    private final List<Member> started = new CopyOnWriteArrayList<>();

    private ShareCheck(String bootstrap, String name) {
        this.bootstrap = bootstrap;
        this.topic = name;
        this.group = name + "-group";
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);  // the consumer threads would keep the JVM alive
        }
        System.exit(0);
    }

    private static void run(String[] args) throws Exception {
        ShareCheck check = new ShareCheck(args[0], args[2]);
        switch (args[1]) {
            case "consume": check.consume(args[3], Integer.parseInt(args[4])); break;
            case "release": check.release(); break;
            case "reject": check.reject(); break;
            case "limit": check.limit(); break;
            case "hold": check.hold(Integer.parseInt(args[3]), args[4]); break;
            case "drain": check.drain(Integer.parseInt(args[3])); break;
            case "admin": check.admin(); break;
            case "consumed": check.consumed(Integer.parseInt(args[3])); break;
            case "reread": check.reread(Integer.parseInt(args[3])); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[1]);
        }
    }

    // --- set-up ------------------------------------------------------------------------------

    private KafkaShareConsumer<String, String> consumer(String mode, String clientId, int maxPollRecords) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put("share.acknowledgement.mode", mode);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(maxPollRecords));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    /** Creates the topic and sets the group configs (waiting until DescribeConfigs shows them:
     * Kafka applies them through its metadata log a moment after answering). */
    private void prepare(Admin admin, int partitions, Map<String, String> groupConfigs) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        Map<String, String> configs = new LinkedHashMap<>();
        configs.put("share.auto.offset.reset", "earliest");
        configs.putAll(groupConfigs);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.valueOf("GROUP"), group);
        List<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        waitFor("the group configs " + configs + " applied", () -> {
            Config shown = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            for (Map.Entry<String, String> e : configs.entrySet()) {
                ConfigEntry entry = shown.get(e.getKey());
                if (entry == null || !e.getValue().equals(entry.value())) return false;
            }
            return true;
        });
    }

    private void waitFor(String what, Callable<Boolean> condition) throws Exception {
        Clients.waitFor(what, WAIT_MS, this::failIfAnyFailed, condition);
    }

    private void failIfAnyFailed() {
        for (Member m : started) {
            if (m.failure != null) throw new IllegalStateException(m.name + " failed", m.failure);
        }
    }

    private static String key(ConsumerRecord<?, ?> r) { return r.partition() + ":" + r.offset(); }

    private static String key(TopicIdPartition tip, long offset) { return tip.partition() + ":" + offset; }

    private static short deliveryCount(ConsumerRecord<?, ?> r) throws Exception {
        Optional<?> count = (Optional<?>) Clients.call(r, "deliveryCount");
        return count.isPresent() ? (Short) count.get() : -1;
    }

    private static <T> T get(Object future) throws Exception {
        @SuppressWarnings("unchecked")
        T value = ((KafkaFuture<T>) future).get();
        return value;
    }

    /** The simple class name of what `call` throws (through ExecutionException), or "none". */
    private static String failure(Callable<?> call) {
        try {
            call.call();
            return "none";
        } catch (Exception e) {
            Throwable t = e;
            while ((t instanceof ExecutionException || t instanceof java.lang.reflect.InvocationTargetException)
                    && t.getCause() != null) {
                t = t.getCause();
            }
            return t.getClass().getSimpleName();
        }
    }

    // --- Admin share-group calls (kafka-clients 4.x, by reflection) --------------------------

    /** describeShareGroups(group): the ShareGroupDescription. */
    private Object describe(Admin admin, String groupId) throws Exception {
        Object result = Clients.call(admin, "describeShareGroups", List.of(groupId));
        Map<String, Object> all = get(Clients.call(result, "all"));
        return all.get(groupId);
    }

    private static String state(Object description) throws Exception {
        return String.valueOf(Clients.call(description, "groupState")).toUpperCase(Locale.ROOT);
    }

    private static List<Object> members(Object description) throws Exception {
        return new ArrayList<>((Collection<?>) Clients.call(description, "members"));
    }

    private static Set<TopicPartition> assignment(Object member) throws Exception {
        @SuppressWarnings("unchecked")
        Set<TopicPartition> tps = (Set<TopicPartition>) Clients.call(Clients.call(member, "assignment"), "topicPartitions");
        return tps;
    }

    /** listShareGroupOffsets(group): partition -> "startOffset/lag" (lag "-" when absent). */
    private SortedMap<Integer, String> offsets(Admin admin) throws Exception {
        Object spec = Class.forName("org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec")
                .getConstructor().newInstance();
        Object result = Clients.call(admin, "listShareGroupOffsets", Map.of(group, spec));
        Map<TopicPartition, Object> infos = get(Clients.call(result, "partitionsToOffsetInfo", group));
        SortedMap<Integer, String> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, Object> e : infos.entrySet()) {
            if (!e.getKey().topic().equals(topic)) continue;
            Object info = e.getValue();
            if (info == null) {
                out.put(e.getKey().partition(), "null");
                continue;
            }
            Optional<?> lag = (Optional<?>) Clients.call(info, "lag");
            out.put(e.getKey().partition(), Clients.call(info, "startOffset") + "/" + (lag.isPresent() ? lag.get() : "-"));
        }
        return out;
    }

    private static String text(SortedMap<Integer, String> offsets) {
        StringBuilder b = new StringBuilder();
        offsets.forEach((p, v) -> b.append(b.length() == 0 ? "" : ",").append(p).append("=").append(v));
        return b.length() == 0 ? "none" : b.toString();
    }

    /** listGroups(ListGroupsOptions.forShareGroups()): "type/state" of the group, or "absent". */
    private String listed(Admin admin) throws Exception {
        Object options = Clients.callStatic("org.apache.kafka.clients.admin.ListGroupsOptions", "forShareGroups");
        Object result = Clients.call(admin, "listGroups", options);
        Collection<?> listings = get(Clients.call(result, "all"));
        for (Object listing : listings) {
            if (!group.equals(Clients.call(listing, "groupId"))) continue;
            Optional<?> type = (Optional<?>) Clients.call(listing, "type");
            Optional<?> st = (Optional<?>) Clients.call(listing, "groupState");
            return type.map(String::valueOf).orElse("-") + "/" + st.map(String::valueOf).orElse("-");
        }
        return "absent";
    }

    // --- a consumer in its own thread ---------------------------------------------------------

    /** One KafkaShareConsumer polling in its own thread until stopped, then closing. Each delivery
     * is recorded (partition:offset -> delivery counts); in explicit mode each record gets the
     * acknowledgement `decide` chooses (ACCEPT when it returns null); what the broker confirmed as
     * accepted comes from the AcknowledgementCommitCallback (every acknowledgement of this check
     * that is not RELEASE/REJECT is an ACCEPT). */
    private final class Member implements Runnable {
        final String name;
        final String mode;
        final int maxPollRecords;
        final Function<ConsumerRecord<String, String>, AcknowledgeType> decide;
        final Map<String, List<Short>> deliveries;
        final Map<String, Integer> accepted;
        final Set<String> notAccepted = ConcurrentHashMap.newKeySet();
        final AtomicLong firstRedeliveryMs = new AtomicLong(-1);
        final AtomicBoolean stop = new AtomicBoolean();
        final List<String> ackErrors = new CopyOnWriteArrayList<>();
        volatile int polled;
        volatile Throwable failure;
        final Thread thread;

        Member(String name, String mode, int maxPollRecords, Function<ConsumerRecord<String, String>, AcknowledgeType> decide,
               Map<String, List<Short>> deliveries, Map<String, Integer> accepted) {
            this.name = name;
            this.mode = mode;
            this.maxPollRecords = maxPollRecords;
            this.decide = decide;
            this.deliveries = deliveries;
            this.accepted = accepted;
            this.thread = new Thread(this, name);
            started.add(this);
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaShareConsumer<String, String> consumer = consumer(mode, name, maxPollRecords)) {
                consumer.setAcknowledgementCommitCallback((offsets, exception) -> {
                    if (exception != null) {
                        ackErrors.add(exception.getClass().getSimpleName());
                        return;
                    }
                    offsets.forEach((tip, set) -> {
                        for (Long o : set) {
                            String k = key(tip, o);
                            if (!notAccepted.remove(k)) accepted.merge(k, 1, Integer::sum);
                        }
                    });
                });
                consumer.subscribe(List.of(topic));
                while (!stop.get()) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : records) {
                        short count = deliveryCount(r);
                        if (count > 1) firstRedeliveryMs.compareAndSet(-1, System.currentTimeMillis());
                        deliveries.computeIfAbsent(key(r), k -> new CopyOnWriteArrayList<>()).add(count);
                        polled++;
                        if (mode.equals("explicit")) {
                            AcknowledgeType type = decide == null ? null : decide.apply(r);
                            if (type != null && type != AcknowledgeType.ACCEPT) notAccepted.add(key(r));
                            consumer.acknowledge(r, type == null ? AcknowledgeType.ACCEPT : type);
                        }
                    }
                    if (mode.equals("explicit") && !records.isEmpty()) consumer.commitSync();
                }
            } catch (Throwable t) {
                failure = t;
            }
        }

        void close() throws Exception {
            stop.set(true);
            thread.join(WAIT_MS);
            if (failure != null) throw new IllegalStateException(name + " failed", failure);
        }
    }

    private static int distinct(Map<String, ?> m) { return m.size(); }

    private static int total(Map<String, List<Short>> deliveries) {
        return deliveries.values().stream().mapToInt(List::size).sum();
    }

    private static int twice(Map<String, Integer> accepted) {
        return accepted.values().stream().mapToInt(c -> c - 1).sum();
    }

    private static String missing(Map<String, Integer> accepted, int partitions, int n) {
        int lost = 0;
        for (int i = 0; i < n; i++) if (!accepted.containsKey((i % partitions) + ":" + (i / partitions))) lost++;
        return String.valueOf(lost);
    }

    // --- scenarios ---------------------------------------------------------------------------

    private void consume(String mode, int n) throws Exception {
        int partitions = 2;
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        try (Admin admin = Clients.admin(bootstrap); KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            prepare(admin, partitions, Map.of());
            List<Member> members = new ArrayList<>();
            for (String name : List.of("a", "b", "c")) members.add(new Member(name, mode, 500, null, deliveries, accepted));
            Object[] described = new Object[1];
            waitFor("the group stable with 3 members, each assigned", () -> {
                if (!"none".equals(failure(() -> described[0] = describe(admin, group)))) return false;
                if (described[0] == null || !"STABLE".equals(state(described[0]))) return false;
                List<Object> ms = members(described[0]);
                if (ms.size() != 3) return false;
                for (Object m : ms) if (assignment(m).isEmpty()) return false;
                return true;
            });
            Set<Integer> assigned = new TreeSet<>();
            for (Object m : members(described[0])) for (TopicPartition tp : assignment(m)) assigned.add(tp.partition());
            Clients.sendBatched(producer, topic, partitions, 0, n);
            waitFor(n + " records delivered", () -> distinct(deliveries) >= n);
            for (Member m : members) m.close();
            waitFor(n + " records accepted", () -> distinct(accepted) >= n);
            int withRecords = 0;
            List<String> errors = new ArrayList<>();
            for (Member m : members) {
                if (m.polled > 0) withRecords++;
                errors.addAll(m.ackErrors);
            }
            SortedMap<Integer, String> offsets = offsets(admin);
            System.out.println("RESULT sent=" + n + " delivered=" + total(deliveries) + " distinct=" + distinct(deliveries)
                    + " accepted=" + distinct(accepted) + " accepted_twice=" + twice(accepted)
                    + " lost=" + missing(accepted, partitions, n) + " ack_errors=" + errors.size()
                    + " state=" + state(described[0]) + " members=" + members(described[0]).size()
                    + " assigned_partitions=" + assigned.toString().replace(" ", "")
                    + " consumers_with_records=" + withRecords + " offsets=" + text(offsets)
                    + " listed=" + listed(admin));
        }
    }

    /** One consumer alone (explicit) polling until `done`, with `decide` choosing each acknowledgement. */
    private Member alone(String name, Function<ConsumerRecord<String, String>, AcknowledgeType> decide,
                         Map<String, List<Short>> deliveries, Map<String, Integer> accepted) {
        return new Member(name, "explicit", 500, decide, deliveries, accepted);
    }

    private static String counts(Map<String, List<Short>> deliveries, String key) {
        List<Short> got = deliveries.get(key);
        return got == null ? "none" : got.toString().replace(" ", "");
    }

    private void release() throws Exception {
        int n = 10;
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        try (Admin admin = Clients.admin(bootstrap); KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            prepare(admin, 1, Map.of());
            Clients.send(producer, topic, 1, 0, n);
            Member a = alone("a", r -> r.offset() == 0 && deliveries.get("0:0").size() == 1 ? AcknowledgeType.RELEASE : null,
                    deliveries, accepted);
            waitFor("all " + n + " records accepted", () -> distinct(accepted) >= n);
            a.close();
            System.out.println("RESULT counts=" + counts(deliveries, "0:0") + " accepted=" + distinct(accepted)
                    + " accepted_twice=" + twice(accepted) + " delivered=" + total(deliveries)
                    + " offsets=" + text(offsets(admin)));
        }
    }

    private void reject() throws Exception {
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        try (Admin admin = Clients.admin(bootstrap); KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            prepare(admin, 1, Map.of());
            Clients.send(producer, topic, 1, 0, 10);
            String[] rejected = {null};
            Member a = alone("a", r -> {
                if (rejected[0] == null) {
                    rejected[0] = key(r);
                    return AcknowledgeType.REJECT;
                }
                return null;
            }, deliveries, accepted);
            waitFor("9 records accepted", () -> distinct(accepted) >= 9);
            Clients.send(producer, topic, 1, 10, 10);
            waitFor("19 records accepted", () -> distinct(accepted) >= 19);
            a.close();
            System.out.println("RESULT rejected=" + rejected[0] + " counts=" + counts(deliveries, rejected[0])
                    + " rejected_accepted=" + accepted.containsKey(rejected[0]) + " accepted=" + distinct(accepted)
                    + " accepted_twice=" + twice(accepted) + " delivered=" + total(deliveries)
                    + " offsets=" + text(offsets(admin)));
        }
    }

    private void limit() throws Exception {
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        try (Admin admin = Clients.admin(bootstrap); KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            prepare(admin, 1, Map.of("share.delivery.count.limit", "2"));
            Clients.send(producer, topic, 1, 0, 5);
            Member a = alone("a", r -> r.offset() == 0 ? AcknowledgeType.RELEASE : null, deliveries, accepted);
            waitFor("record 0 delivered twice and 1-4 accepted",
                    () -> deliveries.getOrDefault("0:0", List.of()).size() >= 2 && distinct(accepted) >= 4);
            Clients.send(producer, topic, 1, 5, 5);
            waitFor("records 5-9 accepted", () -> distinct(accepted) >= 9);
            a.close();
            System.out.println("RESULT counts=" + counts(deliveries, "0:0") + " accepted=" + distinct(accepted)
                    + " accepted_twice=" + twice(accepted) + " delivered=" + total(deliveries)
                    + " offsets=" + text(offsets(admin)));
        }
    }

    private void hold(int n, String lockMs) throws Exception {
        int partitions = 2;
        try (Admin admin = Clients.admin(bootstrap); KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            prepare(admin, partitions, Map.of("share.record.lock.duration.ms", lockMs));
            Clients.sendBatched(producer, topic, partitions, 0, n);
        }
        KafkaShareConsumer<String, String> consumer = consumer("explicit", "holder", 500);
        consumer.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + WAIT_MS;
        ConsumerRecords<String, String> records = ConsumerRecords.empty();
        while (records.isEmpty()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for records");
            records = consumer.poll(Duration.ofMillis(100));
        }
        long acquired = System.currentTimeMillis();
        List<String> keys = new ArrayList<>();
        for (ConsumerRecord<String, String> r : records) keys.add(key(r) + "/" + deliveryCount(r));
        System.out.println("ACQUIRED at_ms=" + acquired + " records=" + String.join(",", keys));
        System.out.flush();
        Thread.sleep(WAIT_MS * 3);  // holds its records unacknowledged until killed
        System.out.println("RESULT held=" + keys.size());
    }

    private void drain(int n) throws Exception {
        int partitions = 2;
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        List<Member> members = new ArrayList<>();
        for (String name : List.of("d1", "d2")) members.add(new Member(name, "explicit", 500, null, deliveries, accepted));
        waitFor("all " + n + " records accepted", () -> distinct(accepted) >= n);
        for (Member m : members) m.close();
        long first = -1;
        for (Member m : members) {
            long t = m.firstRedeliveryMs.get();
            if (t >= 0 && (first < 0 || t < first)) first = t;
        }
        List<String> redelivered = new ArrayList<>();
        deliveries.forEach((k, counts) -> {
            for (Short c : counts) if (c > 1) redelivered.add(k + "/" + c);
        });
        Collections.sort(redelivered);
        int[] busy = new int[members.size()];
        for (int i = 0; i < busy.length; i++) busy[i] = members.get(i).polled;
        System.out.println("RESULT accepted=" + distinct(accepted) + " accepted_twice=" + twice(accepted)
                + " lost=" + missing(accepted, partitions, n) + " first_redelivery_ms=" + first
                + " redelivered=" + (redelivered.isEmpty() ? "none" : String.join(",", redelivered))
                + " polled=" + Arrays.toString(busy).replace(" ", ""));
    }

    private void admin() throws Exception {
        int n = 10;
        Map<String, String> result = new LinkedHashMap<>();
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin(bootstrap); KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            result.put("describe_unknown", failure(() -> describe(admin, topic + "-none")));
            prepare(admin, 1, Map.of());
            Clients.send(producer, topic, 1, 0, n);
            Member a = alone("a", null, deliveries, accepted);
            waitFor("a accepts " + n, () -> distinct(accepted) >= n);
            Object described = describe(admin, group);
            result.put("active_state", state(described));
            result.put("active_members", String.valueOf(members(described).size()));
            result.put("alter_active", failure(() ->
                    get(Clients.call(Clients.call(admin, "alterShareGroupOffsets", group, Map.of(tp, 0L)), "all"))));
            result.put("delete_active", failure(() ->
                    get(Clients.call(Clients.call(admin, "deleteShareGroupOffsets", group, Set.of(topic)), "all"))));
            a.close();
            waitFor("the group empty", () -> "EMPTY".equals(state(describe(admin, group))));
            result.put("offsets_consumed", text(offsets(admin)));
            result.put("listed", listed(admin));
            get(Clients.call(Clients.call(admin, "alterShareGroupOffsets", group, Map.of(tp, 4L)), "all"));
            result.put("offsets_altered", text(offsets(admin)));
            Map<String, List<Short>> again = new ConcurrentHashMap<>();
            Map<String, Integer> acceptedAgain = new ConcurrentHashMap<>();
            Member b = alone("b", null, again, acceptedAgain);
            waitFor("b accepts offsets 4-9", () -> distinct(acceptedAgain) >= n - 4);
            b.close();
            result.put("after_alter", String.valueOf(new TreeSet<>(acceptedAgain.keySet())).replace(" ", ""));
            get(Clients.call(Clients.call(admin, "deleteShareGroupOffsets", group, Set.of(topic)), "all"));
            result.put("offsets_deleted", text(offsets(admin)));
            Map<String, List<Short>> third = new ConcurrentHashMap<>();
            Map<String, Integer> acceptedThird = new ConcurrentHashMap<>();
            Member c = alone("c", null, third, acceptedThird);
            waitFor("c accepts all " + n + " again", () -> distinct(acceptedThird) >= n);
            c.close();
            result.put("after_delete", String.valueOf(distinct(acceptedThird)));
            result.put("after_delete_counts", String.valueOf(new TreeSet<>(
                    third.values().stream().flatMap(List::stream).map(String::valueOf).toList())).replace(" ", ""));
            waitFor("the group empty again", () -> "EMPTY".equals(state(describe(admin, group))));
            get(Clients.call(Clients.call(admin, "deleteShareGroups", List.of(group)), "all"));
            result.put("listed_after_delete", listed(admin));
            result.put("describe_deleted", failure(() -> describe(admin, group)));
        }
        StringBuilder line = new StringBuilder("RESULT");
        result.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        System.out.println(line);
    }

    private void consumed(int n) throws Exception {
        int partitions = 2;
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        try (Admin admin = Clients.admin(bootstrap); KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            prepare(admin, partitions, Map.of());
            Clients.send(producer, topic, partitions, 0, n);
            Member a = alone("a", null, deliveries, accepted);
            waitFor("all " + n + " accepted", () -> distinct(accepted) >= n);
            a.close();
            System.out.println("RESULT accepted=" + distinct(accepted) + " offsets=" + text(offsets(admin)));
        }
    }

    private void reread(int n) throws Exception {
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        Member a = alone("a", null, deliveries, accepted);
        waitFor(n + " accepted", () -> distinct(accepted) >= n);
        a.close();
        List<String> got = new ArrayList<>();
        deliveries.forEach((k, counts) -> counts.forEach(c -> got.add(k + "/" + c)));
        Collections.sort(got);
        System.out.println("RESULT accepted=" + distinct(accepted) + " records=" + String.join(",", got));
    }
}
