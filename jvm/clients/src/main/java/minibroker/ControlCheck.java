package minibroker;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A Java test driving minibroker's test control plane over its HTTP JSON API (docs/control-plane.md),
 * the way a JUnit test would: java.net.http.HttpClient and a few lines of JSON, no other jar.
 * Driven by tests/acceptance/test_control_java.py.
 *
 * Usage: ControlCheck BOOTSTRAP CONTROL_URL SCENARIO TOPIC [TOKEN]
 *   routes           GET /v1 lists the routes; POST /v1/reset; an unknown route answers 404
 *   produce-retries  POST /v1/faults (Produce answered NOT_LEADER_OR_FOLLOWER 3 times): a default
 *                    producer (acks=all, retries) gets every record acknowledged once;
 *                    GET /v1/faults/{id}/wait confirms the 3 firings; DELETE /v1/faults
 *   observe-fetch    POST /v1/faults {"observe": true} on Fetch: a consumer's fetches are counted
 *   txn-timeout      (a broker with minibroker.control.clock=manual) a stuck transaction is
 *                    aborted by POST /v1/clock/advance past transaction.timeout.ms; a read_committed
 *                    consumer sees nothing of it and the stuck producer cannot commit
 *   fault-kinds      every kind of fault a Java client meets: an error every 2nd Produce, a delay,
 *                    a throttle, a Fetch disconnect, Fetch errors for one client id, a seeded
 *                    probability and a `where` observer: every record acknowledged and read once
 * Each scenario ends with one line "RESULT key=value ..." on stdout (exit 0), or throws.
 */
public final class ControlCheck {
    private final String bootstrap;
    private final Control control;

    private ControlCheck(String bootstrap, Control control) {
        this.bootstrap = bootstrap;
        this.control = control;
    }

    public static void main(String[] args) throws Exception {
        ControlCheck check = new ControlCheck(args[0], new Control(args[1], args.length > 4 ? args[4] : null));
        String topic = args[3];
        switch (args[2]) {
            case "routes": check.routes(topic); break;
            case "produce-retries": check.produceRetries(topic); break;
            case "observe-fetch": check.observeFetch(topic); break;
            case "txn-timeout": check.txnTimeout(topic); break;
            case "fault-kinds": check.faultKinds(topic); break;
            default: throw new IllegalArgumentException("unknown scenario " + args[2]);
        }
    }

    // ------------------------------------------------------------------------------------------
    // The scenarios

    /** GET /v1, POST /v1/reset, and the answer to a route that does not exist. */
    @SuppressWarnings("unchecked")
    private void routes(String topic) throws Exception {
        Map<String, Object> index = (Map<String, Object>) control.call("GET", "/v1", null);
        List<Object> routes = (List<Object>) index.get("routes");
        boolean hasReset = false;
        for (Object r : routes) {
            Map<String, Object> route = (Map<String, Object>) r;
            if (route.get("method").equals("POST") && "/v1/reset".matches(javaRegex((String) route.get("path")))) hasReset = true;
        }
        Map<String, Object> reset = (Map<String, Object>) control.call("POST", "/v1/reset", Map.of());
        int unknown = control.status("GET", "/v1/no-such-route");
        // the broker the control plane belongs to is the one the clients use
        createTopic(topic, 1);
        try (KafkaProducer<String, String> p = producer(new Properties())) {
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, 0, "k", "v" + i)).get();
        }
        System.out.println("RESULT routes_listed=" + (routes.size() >= 2) + " has_reset=" + hasReset
            + " bootstrap=" + bootstrap.equals(index.get("bootstrap_servers"))
            + " reset=" + reset.get("reset") + " unknown_route=" + unknown);
    }

    /** A producer's retries on NOT_LEADER_OR_FOLLOWER: every record acknowledged exactly once. */
    @SuppressWarnings("unchecked")
    private void produceRetries(String topic) throws Exception {
        createTopic(topic, 1);
        Map<String, Object> fault = (Map<String, Object>) control.call("POST", "/v1/faults", ordered(
            "api", "Produce", "topic", topic, "partition", 0, "error", "NOT_LEADER_OR_FOLLOWER", "count", 3));
        String id = String.valueOf(fault.get("id"));
        int records = 50;
        List<Long> offsets = new ArrayList<>();
        Properties props = new Properties();
        props.put(ProducerConfig.ACKS_CONFIG, "all");  // retries: the default (Integer.MAX_VALUE)
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        try (KafkaProducer<String, String> p = producer(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < records; i++) sent.add(p.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)));
            for (Future<RecordMetadata> f : sent) offsets.add(f.get().offset());
        }
        Map<String, Object> fired = (Map<String, Object>) control.call(
            "GET", "/v1/faults/" + id + "/wait?n=3&timeout=10", null);
        List<Object> listed = (List<Object>) ((Map<String, Object>) control.call("GET", "/v1/faults", null)).get("faults");
        control.call("DELETE", "/v1/faults", null);
        List<Object> after = (List<Object>) ((Map<String, Object>) control.call("GET", "/v1/faults", null)).get("faults");
        // a faulted produce appends nothing: the acknowledged offsets are 0..records-1, each once
        boolean contiguous = true;
        for (int i = 0; i < offsets.size(); i++) contiguous &= offsets.get(i) == i;
        List<String> values = readAll(topic, 1, "read_uncommitted");
        System.out.println("RESULT acked=" + offsets.size() + " offsets_contiguous=" + contiguous
            + " in_log=" + values.size() + " distinct=" + new HashSet<>(values).size()
            + " fired=" + number(fired.get("fired")) + " listed=" + listed.size() + " after_clear=" + after.size());
    }

    /** An observer counts a consumer's Fetch requests without changing them. */
    @SuppressWarnings("unchecked")
    private void observeFetch(String topic) throws Exception {
        createTopic(topic, 1);
        Map<String, Object> observer = (Map<String, Object>) control.call("POST", "/v1/faults", ordered(
            "api", "Fetch", "topic", topic, "observe", true));
        String id = String.valueOf(observer.get("id"));
        try (KafkaProducer<String, String> p = producer(new Properties())) {
            for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(topic, 0, "k", "v" + i));
        }
        List<String> values = readAll(topic, 1, "read_uncommitted");
        Map<String, Object> seen = (Map<String, Object>) control.call(
            "GET", "/v1/faults/" + id + "/wait?n=1&timeout=10", null);
        control.call("DELETE", "/v1/faults/" + id, null);
        int gone = control.status("GET", "/v1/faults/" + id);
        // the wait answered: it was seen at least once (an observer's count is its "fired", answered)
        boolean observed = number(seen.get("fired")) >= 1 || number(seen.get("matched")) >= 1;
        System.out.println("RESULT consumed=" + values.size() + " observed=" + observed
            + " removed=" + gone);
    }

    /** A transaction left open is aborted when the broker's manual clock passes its timeout. */
    @SuppressWarnings("unchecked")
    private void txnTimeout(String topic) throws Exception {
        createTopic(topic, 1);
        Map<String, Object> clock = (Map<String, Object>) control.call("GET", "/v1/clock", null);
        Properties stuckProps = new Properties();
        stuckProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-stuck");
        stuckProps.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 60_000);
        Properties goodProps = new Properties();
        goodProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-good");
        String stuckCommit = "none";
        long lsoWhileStuck;
        long fired;
        try (KafkaProducer<String, String> stuck = producer(stuckProps);
             KafkaProducer<String, String> good = producer(goodProps)) {
            stuck.initTransactions();
            stuck.beginTransaction();
            for (int i = 0; i < 5; i++) stuck.send(new ProducerRecord<>(topic, 0, "k", "stuck-" + i));
            stuck.flush();  // written, never committed: the job hangs here
            good.initTransactions();
            good.beginTransaction();
            for (int i = 0; i < 5; i++) good.send(new ProducerRecord<>(topic, 0, "k", "committed-" + i));
            good.commitTransaction();
            lsoWhileStuck = lastStableOffset(topic);  // held at the stuck transaction's first offset
            Map<String, Object> advanced = (Map<String, Object>) control.call(
                "POST", "/v1/clock/advance", ordered("seconds", 61));
            fired = number(advanced.get("fired"));
            control.call("GET", "/v1/state/wait/transactions-complete?timeout=10", null);
            try {
                stuck.commitTransaction();
            } catch (Exception e) {
                stuckCommit = e.getClass().getSimpleName();
            }
        }
        List<String> visible = readAll(topic, 1, "read_committed");
        boolean stuckVisible = visible.stream().anyMatch(v -> v.startsWith("stuck-"));
        System.out.println("RESULT clock=" + clock.get("mode") + " lso_while_stuck=" + lsoWhileStuck
            + " fired_some=" + (fired >= 1) + " visible=" + visible.size() + " stuck_visible=" + stuckVisible
            + " stuck_commit_failed=" + !stuckCommit.equals("none"));
    }

    /** Every fault kind and trigger against a Java producer and consumer: nothing lost, nothing twice. */
    @SuppressWarnings("unchecked")
    private void faultKinds(String topic) throws Exception {
        createTopic(topic, 1);
        Map<String, String> ids = new LinkedHashMap<>();
        Object[][] rules = {
            {"every", ordered("api", "Produce", "topic", topic, "error", "NOT_ENOUGH_REPLICAS", "every", 2)},
            {"delay", ordered("api", "Produce", "topic", topic, "delay_ms", 300, "count", 2)},
            {"throttle", ordered("api", "Produce", "topic", topic, "throttle_ms", 200, "count", 1)},
            {"random", ordered("api", "Produce", "topic", topic, "error", "REQUEST_TIMED_OUT",
                "probability", 0.3, "seed", 7)},
            {"acks_all", ordered("api", "Produce", "where", ordered("acks", -1), "observe", true)},
            {"disconnect", ordered("api", "Fetch", "topic", topic, "disconnect", "before", "count", 1)},
            {"client", ordered("api", "Fetch", "client_id", topic + "-reader", "error", "NOT_LEADER_OR_FOLLOWER",
                "count", 2)},
        };
        for (Object[] rule : rules) {
            Map<String, Object> added = (Map<String, Object>) control.call("POST", "/v1/faults", rule[1]);
            ids.put((String) rule[0], String.valueOf(added.get("id")));
        }
        int records = 20;
        List<Long> offsets = new ArrayList<>();
        Properties props = new Properties();
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 20);
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);  // one batch per request
        try (KafkaProducer<String, String> p = producer(props)) {
            for (int i = 0; i < records; i++) offsets.add(p.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get().offset());
        }
        boolean contiguous = true;
        for (int i = 0; i < offsets.size(); i++) contiguous &= offsets.get(i) == i;
        // the consumer: its first Fetch loses its connection, then two answer NOT_LEADER_OR_FOLLOWER
        List<String> values = new ArrayList<>();
        Properties cp = new Properties();
        cp.put(ConsumerConfig.CLIENT_ID_CONFIG, topic + "-reader");
        try (KafkaConsumer<String, String> c = consumer("read_uncommitted", cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < records) {
                if (System.currentTimeMillis() > deadline) throw new AssertionError("consumed only " + values.size());
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) values.add(r.value());
            }
        }
        Map<String, Long> fired = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : ids.entrySet()) {
            Map<String, Object> f = (Map<String, Object>) control.call("GET", "/v1/faults/" + e.getValue(), null);
            fired.put(e.getKey(), number(f.get("fired")));
        }
        control.call("DELETE", "/v1/faults", null);
        StringBuilder out = new StringBuilder("RESULT acked=" + offsets.size() + " offsets_contiguous=" + contiguous
            + " consumed=" + values.size() + " distinct=" + new HashSet<>(values).size()
            + " every_fired=" + (fired.get("every") >= 10)
            + " random_fired=" + (fired.get("random") >= 1)
            + " observed_all_acks=" + (fired.get("acks_all") >= records));
        for (String kind : List.of("delay", "throttle", "disconnect", "client")) out.append(" ").append(kind).append("=").append(fired.get(kind));
        System.out.println(out);
    }

    // ------------------------------------------------------------------------------------------
    // Kafka clients

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    private void createTopic(String topic, int partitions) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
    }

    private KafkaProducer<String, String> producer(Properties extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    private KafkaConsumer<String, String> consumer(String isolation) {
        return consumer(isolation, new Properties());
    }

    private KafkaConsumer<String, String> consumer(String isolation, Properties extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    /** The end offset a read_committed consumer is given: the partition's last stable offset. */
    private long lastStableOffset(String topic) {
        try (KafkaConsumer<String, String> c = consumer("read_committed")) {
            TopicPartition tp = new TopicPartition(topic, 0);
            return c.endOffsets(List.of(tp)).get(tp);
        }
    }

    /** Every value up to the end offset (the last stable offset for read_committed). */
    private List<String> readAll(String topic, int partitions, String isolation) {
        try (KafkaConsumer<String, String> c = consumer(isolation)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            List<String> out = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) throw new AssertionError("consumer stuck below " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) out.add(r.value());
            }
            return out;
        }
    }

    // ------------------------------------------------------------------------------------------
    // The control plane's HTTP JSON API

    /** Calls the control plane; a refusal (4xx/5xx) throws with the broker's {"error": ...}. */
    static final class Control {
        private final String base;
        private final String token;
        private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

        Control(String base, String token) {
            this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
            this.token = token;
        }

        private HttpResponse<String> send(String method, String path, Object body) throws Exception {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(Duration.ofSeconds(60))
                .header("Accept", "application/json");
            if (token != null) b.header("Authorization", "Bearer " + token);
            if (body == null) {
                b.method(method, HttpRequest.BodyPublishers.noBody());
            } else {
                b.header("Content-Type", "application/json");
                b.method(method, HttpRequest.BodyPublishers.ofString(Json.write(body)));
            }
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        }

        Object call(String method, String path, Object body) throws Exception {
            HttpResponse<String> r = send(method, path, body);
            if (r.statusCode() / 100 != 2) {
                throw new AssertionError(method + " " + path + " answered " + r.statusCode() + ": " + r.body());
            }
            return Json.parse(r.body());
        }

        int status(String method, String path) throws Exception {
            return send(method, path, null).statusCode();
        }
    }

    /** GET /v1 lists each route's path as a Python regular expression: (?P<name>...) groups. */
    static String javaRegex(String pythonRegex) {
        return pythonRegex.replace("(?P<", "(?<");
    }

    static long number(Object value) {
        return value == null ? -1 : ((Number) value).longValue();
    }

    /** A JSON object with its keys in the order given: ordered("api", "Produce", "count", 3). */
    static Map<String, Object> ordered(Object... keysAndValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) m.put((String) keysAndValues[i], keysAndValues[i + 1]);
        return m;
    }

    /** Just enough JSON: objects, arrays, strings, numbers (Long or Double), booleans, null. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) { this.s = s; }

        static Object parse(String text) {
            Json p = new Json(text);
            Object v = p.value();
            p.ws();
            if (p.i != text.length()) throw new IllegalArgumentException("trailing data in JSON: " + text);
            return v;
        }

        static String write(Object v) {
            if (v == null) return "null";
            if (v instanceof String) {
                StringBuilder b = new StringBuilder("\"");
                for (char c : ((String) v).toCharArray()) {
                    if (c == '"' || c == '\\') b.append('\\').append(c);
                    else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
                return b.append('"').toString();
            }
            if (v instanceof Number || v instanceof Boolean) return v.toString();
            if (v instanceof Map) {
                StringJoiner j = new StringJoiner(",", "{", "}");
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) j.add(write(e.getKey().toString()) + ":" + write(e.getValue()));
                return j.toString();
            }
            if (v instanceof Collection) {
                StringJoiner j = new StringJoiner(",", "[", "]");
                for (Object o : (Collection<?>) v) j.add(write(o));
                return j.toString();
            }
            throw new IllegalArgumentException("not JSON: " + v);
        }

        private void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

        private Object value() {
            ws();
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    Map<String, Object> m = new LinkedHashMap<>();
                    i++; ws();
                    if (s.charAt(i) == '}') { i++; return m; }
                    while (true) {
                        ws();
                        String key = (String) value();
                        ws(); expect(':');
                        m.put(key, value());
                        ws();
                        if (s.charAt(i) == ',') { i++; continue; }
                        expect('}');
                        return m;
                    }
                }
                case '[': {
                    List<Object> l = new ArrayList<>();
                    i++; ws();
                    if (s.charAt(i) == ']') { i++; return l; }
                    while (true) {
                        l.add(value());
                        ws();
                        if (s.charAt(i) == ',') { i++; continue; }
                        expect(']');
                        return l;
                    }
                }
                case '"': {
                    StringBuilder b = new StringBuilder();
                    i++;
                    while (s.charAt(i) != '"') {
                        char ch = s.charAt(i++);
                        if (ch != '\\') { b.append(ch); continue; }
                        char esc = s.charAt(i++);
                        switch (esc) {
                            case 'n': b.append('\n'); break;
                            case 't': b.append('\t'); break;
                            case 'r': b.append('\r'); break;
                            case 'b': b.append('\b'); break;
                            case 'f': b.append('\f'); break;
                            case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                            default: b.append(esc);
                        }
                    }
                    i++;
                    return b.toString();
                }
                default:
                    if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
                    if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
                    if (s.startsWith("null", i)) { i += 4; return null; }
                    int start = i;
                    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
                    String n = s.substring(start, i);
                    if (n.isEmpty()) throw new IllegalArgumentException("bad JSON at " + start + ": " + s);
                    return n.matches("-?\\d+") ? (Object) Long.parseLong(n) : (Object) Double.parseDouble(n);
            }
        }

        private void expect(char c) {
            if (s.charAt(i) != c) throw new IllegalArgumentException("expected '" + c + "' at " + i + ": " + s);
            i++;
        }
    }
}
