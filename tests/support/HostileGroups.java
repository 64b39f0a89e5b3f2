import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Commits an offset for groups whose ids a C client cannot send (a NUL ends a C string):
 * lagmon's hostile-names test (tests/integration/test_hostile_names.py). Kafka's own Java
 * admin client, as any Java application could. Never joins a group.
 *
 * Usage: java -cp "kafka/libs/*" tests/support/HostileGroups.java BOOTSTRAP TOPIC OFFSET HEX_ID...
 * (each id as the hex of its UTF-8 bytes: a command line cannot carry a NUL either)
 */
public final class HostileGroups {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        TopicPartition partition = new TopicPartition(args[1], 0);
        OffsetAndMetadata offset = new OffsetAndMetadata(Long.parseLong(args[2]));
        try (Admin admin = Admin.create(props)) {
            for (int i = 3; i < args.length; i++) {
                String group = new String(HexFormat.of().parseHex(args[i]), StandardCharsets.UTF_8);
                admin.alterConsumerGroupOffsets(group, Map.of(partition, offset)).all().get();
            }
        }
    }
}
