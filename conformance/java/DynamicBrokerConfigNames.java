// Prints every broker config Apache Kafka lets AlterConfigs/IncrementalAlterConfigs change at
// runtime (DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS plus DynamicConfig.Broker's), one per line:
// name, update mode (per-broker / cluster-wide), type, default, "security" for the configs that
// need a listener prefix. broker/dynamic_config.py's KAFKA_DYNAMIC_BROKER_CONFIGS was written
// from its output. Run (Java 11+ source-file mode):
//   java -cp "$HOME/.cache/minibroker/kafka-4.4.0/libs/*" conformance/java/DynamicBrokerConfigNames.java
import java.util.*;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.DynamicConfig;
public class DynamicBrokerConfigNames {
    public static void main(String[] args) throws Exception {
        Map<String, String> modes = new TreeMap<>(DynamicBrokerConfig.dynamicConfigUpdateModes());
        Set<String> all = new TreeSet<>(DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS);
        all.addAll(DynamicConfig.Broker.names());
        Map<String, org.apache.kafka.common.config.ConfigDef.ConfigKey> keys = kafka.server.KafkaConfig.configDef().configKeys();
        for (String n : all) {
            org.apache.kafka.common.config.ConfigDef.ConfigKey k = keys.get(n);
            if (k == null) k = DynamicConfig.Broker.configKeys().get(n);
            System.out.println(n + "\t" + modes.getOrDefault(n, "?") + "\t" + (k == null ? "?" : k.type) + "\t" + (k == null ? "" : String.valueOf(k.defaultValue)) + "\t" + (DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS.contains(n) ? "security" : ""));
        }
    }
}
