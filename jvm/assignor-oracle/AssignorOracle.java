// Kafka 4.4's own server-side assignors run on cases read from stdin, for
// tests/unit/test_assignors.py: it compiles this file with javac against the Kafka 4.4.0 libs
// (~/.cache/minibroker/kafka-4.4.0/libs) and compares the answers with coordinator/assignors.py.
//
// The group spec is built as Kafka's TargetAssignmentBuilder builds it: the members go into a
// HashMap in the case's order, each member's subscription is a TopicIds over a HashSet of topic
// names (filled in the case's order), each current target is what Assignment.fromRecord makes
// of a record (a HashMap of new HashSet<>(partition list)).
//
// Input, one case after another:
//   case <uniform|range> <HOMOGENEOUS|HETEROGENEOUS>
//   topic <most significant bits> <least significant bits> <name> <partitions>
//   member <member id> <instance id or -> <rack id or ->
//   sub <topic name>...                        (the member's subscribed names)
//   target <msb> <lsb> <partition>...          (the member's target, record order; repeatable)
//   end
// Output per case: "assign <member id> <msb> <lsb> <partition>,..." lines (one per member and
// topic, the partitions ascending), or "error <exception class> <message>", then "done".
package minibroker.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.TopicIds;

public final class AssignorOracle {
    private static final class Member {
        String memberId;
        String instanceId;
        String rackId;
        List<String> names = new ArrayList<>();
        Map<Uuid, List<Integer>> target = new LinkedHashMap<>();
    }

    private static final class Resolver implements TopicIds.TopicResolver {
        final Map<String, Uuid> ids;
        final Map<Uuid, String> names = new HashMap<>();

        Resolver(Map<String, Uuid> ids) {
            this.ids = ids;
            ids.forEach((name, id) -> names.put(id, name));
        }

        @Override
        public CoordinatorMetadataImage image() {
            return null;
        }

        @Override
        public String name(Uuid id) {
            return names.get(id);
        }

        @Override
        public Uuid id(String name) {
            return ids.get(name);
        }

        @Override
        public void clear() {}
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String assignorName = null;
        SubscriptionType type = null;
        Map<String, Uuid> topicIds = new LinkedHashMap<>();
        Map<Uuid, Integer> partitions = new HashMap<>();
        List<Member> members = new ArrayList<>();
        Member member = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "case":
                    assignorName = f[1];
                    type = SubscriptionType.valueOf(f[2]);
                    topicIds = new LinkedHashMap<>();
                    partitions = new HashMap<>();
                    members = new ArrayList<>();
                    break;
                case "topic": {
                    Uuid id = new Uuid(Long.parseLong(f[1]), Long.parseLong(f[2]));
                    topicIds.put(f[3], id);
                    partitions.put(id, Integer.parseInt(f[4]));
                    break;
                }
                case "member":
                    member = new Member();
                    member.memberId = f[1];
                    member.instanceId = f[2].equals("-") ? null : f[2];
                    member.rackId = f[3].equals("-") ? null : f[3];
                    members.add(member);
                    break;
                case "sub":
                    member.names.addAll(Arrays.asList(f).subList(1, f.length));
                    break;
                case "target": {
                    Uuid id = new Uuid(Long.parseLong(f[1]), Long.parseLong(f[2]));
                    List<Integer> parts = new ArrayList<>();
                    for (int i = 3; i < f.length; i++) parts.add(Integer.parseInt(f[i]));
                    member.target.put(id, parts);
                    break;
                }
                case "end":
                    run(out, assignorName, type, topicIds, partitions, members);
                    break;
                default:
                    throw new IllegalArgumentException("unknown line: " + line);
            }
        }
        System.out.print(out);
        System.out.flush();
    }

    private static void run(
        StringBuilder out,
        String assignorName,
        SubscriptionType type,
        Map<String, Uuid> topicIds,
        Map<Uuid, Integer> partitions,
        List<Member> members
    ) {
        Resolver resolver = new Resolver(topicIds);
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (Member m : members) {
            Map<Uuid, Set<Integer>> target = new HashMap<>();
            m.target.forEach((id, parts) -> target.put(id, new HashSet<>(parts)));
            for (Map.Entry<Uuid, List<Integer>> e : m.target.entrySet()) {
                for (int p : e.getValue()) inverted.computeIfAbsent(e.getKey(), k -> new HashMap<>()).put(p, m.memberId);
            }
            specs.put(
                m.memberId,
                new MemberSubscriptionAndAssignmentImpl(
                    Optional.ofNullable(m.rackId),
                    Optional.ofNullable(m.instanceId),
                    new TopicIds(new HashSet<>(m.names), resolver),
                    new Assignment(target)
                )
            );
        }
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return partitions.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        ConsumerGroupPartitionAssignor assignor = assignorName.equals("range") ? new RangeAssignor() : new UniformAssignor();
        try {
            GroupAssignment result = assignor.assign(new GroupSpecImpl(Collections.unmodifiableMap(specs), type, inverted), describer);
            for (Map.Entry<String, MemberAssignment> e : new TreeMap<>(result.members()).entrySet()) {
                for (Map.Entry<Uuid, Set<Integer>> t : e.getValue().partitions().entrySet()) {
                    if (t.getValue().isEmpty()) continue;
                    StringBuilder parts = new StringBuilder();
                    for (int p : new TreeSet<>(t.getValue())) parts.append(parts.length() == 0 ? "" : ",").append(p);
                    out.append("assign ").append(e.getKey()).append(' ')
                        .append(t.getKey().getMostSignificantBits()).append(' ')
                        .append(t.getKey().getLeastSignificantBits()).append(' ')
                        .append(parts).append('\n');
                }
            }
        } catch (Exception e) {
            out.append("error ").append(e.getClass().getSimpleName()).append(' ').append(e.getMessage()).append('\n');
        }
        out.append("done\n");
    }
}
