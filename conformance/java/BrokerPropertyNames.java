// Prints the name of every property Apache Kafka's broker defines (kafka.server.KafkaConfig's
// ConfigDef, which is org.apache.kafka.server.config.AbstractKafkaConfig.CONFIG_DEF plus what the
// broker adds), one per line, sorted. conformance/kafka_properties.py runs it with the reference
// Kafka's jars and writes broker/kafka_properties.py from its output.
// Run (Java 11+ source-file mode): java -cp 'LIBS/*' BrokerPropertyNames.java
import java.util.TreeSet;

public class BrokerPropertyNames {
    public static void main(String[] args) {
        for (String name : new TreeSet<>(kafka.server.KafkaConfig.configDef().names())) {
            System.out.println(name);
        }
    }
}
