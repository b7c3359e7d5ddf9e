package minibroker;

import java.lang.reflect.Method;
import java.util.Properties;
import java.util.concurrent.Callable;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the group checks (Kip848Check, ShareCheck) share: an Admin and a String producer on one
 * bootstrap, sending numbered records round-robin over partitions, waiting on a condition with a
 * bound, and calling kafka-clients API newer than 3.9 by reflection (the checks are compiled
 * against every kafka-clients version jvm/fetch.sh fetches).
 */
final class Clients {
    private Clients() {}

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    /** Records "r<i>" for i in [from, from + n), record i to partition i % partitions, each acknowledged. */
    static void send(KafkaProducer<String, String> producer, String topic, int partitions, int from, int n)
            throws Exception {
        for (int i = from; i < from + n; i++) producer.send(new ProducerRecord<>(topic, i % partitions, null, "r" + i)).get();
    }

    /** As send, but batched: all sent, then flushed (for many records). */
    static void sendBatched(KafkaProducer<String, String> producer, String topic, int partitions, int from, int n) {
        for (int i = from; i < from + n; i++) producer.send(new ProducerRecord<>(topic, i % partitions, null, "r" + i));
        producer.flush();
    }

    /** Polls `condition` every 50 ms until true; `check` runs before each poll (to fail early). */
    static void waitFor(String what, long timeoutMs, Runnable check, Callable<Boolean> condition) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.call()) {
            check.run();
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for " + what);
            Thread.sleep(50);
        }
    }

    /** target.name(args...) by reflection: the public method of that name and arity. */
    static Object call(Object target, String name, Object... args) throws Exception {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                m.setAccessible(true);
                return m.invoke(target, args);
            }
        }
        throw new NoSuchMethodException(target.getClass().getName() + "." + name + "/" + args.length);
    }

    /** The static method `name` of class `className`, called with no arguments. */
    static Object callStatic(String className, String name) throws Exception {
        return Class.forName(className).getMethod(name).invoke(null);
    }
}
