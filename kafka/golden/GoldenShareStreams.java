// Golden records for lagmon's decoder tests: Kafka 4.3.0's generated message classes serialised by the
// coordinators' own record serdes, printed by Kafka's own formatters (ShareGroupMessageFormatter,
// ShareGroupStateMessageFormatter; streams types through the same CoordinatorRecordMessageFormatter code
// with CoordinatorRecordJsonConverters, as DumpLogSegments --offsets-decoder does).
// Run (prints key hex, value hex, Kafka's JSON per line; tests/unit/test_offsets_share_streams.py holds its output):
//   javac -d /tmp/golden -cp "kafka/libs/*" kafka/golden/GoldenShareStreams.java && java -cp "kafka/libs/*:/tmp/golden" GoldenShareStreams
import java.io.*;
import java.util.*;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.generated.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.tools.consumer.CoordinatorRecordMessageFormatter;
import org.apache.kafka.tools.consumer.ShareGroupMessageFormatter;
import org.apache.kafka.tools.consumer.group.share.ShareGroupStateMessageFormatter;

public class GoldenShareStreams {
    static final Uuid T1 = new Uuid(0x0001020304050607L, 0x08090a0b0c0d0e0fL);
    static final Uuid T2 = new Uuid(0xf0977bc555264159L, 0x9d950bd656ad499bL);
    static final long TS = 1_700_000_000_000L;
    static final CoordinatorRecordSerde GROUP = new GroupCoordinatorRecordSerde(), SHARE = new ShareCoordinatorRecordSerde();

    static class StreamsFormatter extends CoordinatorRecordMessageFormatter {
        StreamsFormatter() { super(new GroupCoordinatorRecordSerde()); }
        protected boolean isRecordTypeAllowed(short t) { return t >= 17; }
        protected JsonNode keyAsJson(ApiMessage m) { return org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters.writeRecordKeyAsJson(m); }
        protected JsonNode valueAsJson(ApiMessage m, short v) { return org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters.writeRecordValueAsJson(m, v); }
    }

    static String hex(byte[] b) {
        if (b == null) return "None";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    static void emit(CoordinatorRecordSerde serde, org.apache.kafka.common.MessageFormatter fmt, CoordinatorRecord r) {
        byte[] k = serde.serializeKey(r), v = serde.serializeValue(r);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        fmt.writeTo(new ConsumerRecord<>("t", 0, 0L, k, v), new PrintStream(out));
        System.out.println(hex(k) + "\t" + hex(v) + "\t" + out.toString());
    }

    static void share(ApiMessage key, ApiMessage value) {
        emit(GROUP, new ShareGroupMessageFormatter(), value == null ? CoordinatorRecord.tombstone(key) : CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0)));
    }
    static void streams(ApiMessage key, ApiMessage value) {
        emit(GROUP, new StreamsFormatter(), value == null ? CoordinatorRecord.tombstone(key) : CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0)));
    }
    static void state(ApiMessage key, ApiMessage value) {
        emit(SHARE, new ShareGroupStateMessageFormatter(), value == null ? CoordinatorRecord.tombstone(key) : CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0)));
    }

    static StreamsGroupCurrentMemberAssignmentValue.TaskIds cur(String sub, List<Integer> ps, List<Integer> epochs) {
        return new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId(sub).setPartitions(ps).setAssignmentEpochs(epochs);
    }
    static StreamsGroupTargetAssignmentMemberValue.TaskIds tgt(String sub, Integer... ps) {
        return new StreamsGroupTargetAssignmentMemberValue.TaskIds().setSubtopologyId(sub).setPartitions(List.of(ps));
    }
    static StreamsGroupTopologyValue.TopicInfo topic(String name, int partitions, short rf, String... kv) {
        List<StreamsGroupTopologyValue.TopicConfig> cfg = new ArrayList<>();
        for (int i = 0; i < kv.length; i += 2) cfg.add(new StreamsGroupTopologyValue.TopicConfig().setKey(kv[i]).setValue(kv[i + 1]));
        return new StreamsGroupTopologyValue.TopicInfo().setName(name).setPartitions(partitions).setReplicationFactor(rf).setTopicConfigs(cfg);
    }

    public static void main(String[] a) {
        // --- share groups (10-15)
        share(new ShareGroupMemberMetadataKey().setGroupId("sg").setMemberId("m-1"),
              new ShareGroupMemberMetadataValue().setRackId(null).setClientId("cli").setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("orders", "pay")));
        share(new ShareGroupMemberMetadataKey().setGroupId("sg").setMemberId("m-2"),
              new ShareGroupMemberMetadataValue().setRackId("rack-1").setClientId("").setClientHost("/10.0.0.1").setSubscribedTopicNames(List.of()));
        share(new ShareGroupMemberMetadataKey().setGroupId("sg").setMemberId("m-1"), null);
        share(new ShareGroupMetadataKey().setGroupId("sg"), new ShareGroupMetadataValue().setEpoch(7).setMetadataHash(-1234567890123L));
        share(new ShareGroupMetadataKey().setGroupId("sg"), null);
        share(new ShareGroupTargetAssignmentMetadataKey().setGroupId("sg"), new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7));
        share(new ShareGroupTargetAssignmentMetadataKey().setGroupId("sg"), new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(8).setAssignmentTimestamp(TS + 5));
        share(new ShareGroupTargetAssignmentMetadataKey().setGroupId("sg"), null);
        share(new ShareGroupTargetAssignmentMemberKey().setGroupId("sg").setMemberId("m-1"),
              new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(
                  new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(T1).setPartitions(List.of(0, 1, 2)),
                  new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(T2).setPartitions(List.of()))));
        share(new ShareGroupTargetAssignmentMemberKey().setGroupId("sg").setMemberId("m-1"), null);
        share(new ShareGroupCurrentMemberAssignmentKey().setGroupId("sg").setMemberId("m-1"),
              new ShareGroupCurrentMemberAssignmentValue().setMemberEpoch(8).setPreviousMemberEpoch(7).setState((byte) 0).setAssignedPartitions(List.of(
                  new ShareGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(T2).setPartitions(List.of(3)))));
        share(new ShareGroupCurrentMemberAssignmentKey().setGroupId("sg").setMemberId("m-1"), null);
        share(new ShareGroupStatePartitionMetadataKey().setGroupId("sg"),
              new ShareGroupStatePartitionMetadataValue()
                  .setInitializingTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo().setTopicId(T2).setTopicName("pay").setPartitions(List.of(0))))
                  .setInitializedTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo().setTopicId(T1).setTopicName("orders").setPartitions(List.of(0, 1))))
                  .setDeletingTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicInfo().setTopicId(T2).setTopicName("old"))));
        share(new ShareGroupStatePartitionMetadataKey().setGroupId("sg"), new ShareGroupStatePartitionMetadataValue());
        share(new ShareGroupStatePartitionMetadataKey().setGroupId("sg"), null);

        // --- streams groups (17, 19-23)
        streams(new StreamsGroupMetadataKey().setGroupId("app"), new StreamsGroupMetadataValue().setEpoch(4).setMetadataHash(987654321L));
        streams(new StreamsGroupMetadataKey().setGroupId("app"), new StreamsGroupMetadataValue().setEpoch(5).setMetadataHash(-1L).setValidatedTopologyEpoch(0)
                .setLastAssignmentConfigs(List.of(new StreamsGroupMetadataValue.LastAssignmentConfig().setKey("num.standby.replicas").setValue("1"))));
        streams(new StreamsGroupMetadataKey().setGroupId("app"), new StreamsGroupMetadataValue().setEpoch(6).setMetadataHash(0L).setValidatedTopologyEpoch(2).setLastAssignmentConfigs(null));
        streams(new StreamsGroupMetadataKey().setGroupId("app"), null);
        streams(new StreamsGroupMemberMetadataKey().setGroupId("app").setMemberId("s-1"),
                new StreamsGroupMemberMetadataValue().setInstanceId(null).setRackId(null).setClientId("app-1-StreamThread-1-consumer").setClientHost("/127.0.0.1")
                    .setRebalanceTimeoutMs(300000).setTopologyEpoch(0).setProcessId("3f1c0d2e-proc").setUserEndpoint(null).setClientTags(List.of()));
        streams(new StreamsGroupMemberMetadataKey().setGroupId("app").setMemberId("s-2"),
                new StreamsGroupMemberMetadataValue().setInstanceId("inst-2").setRackId("rack-2").setClientId("c").setClientHost("/10.0.0.2")
                    .setRebalanceTimeoutMs(-1).setTopologyEpoch(3).setProcessId("p2")
                    .setUserEndpoint(new StreamsGroupMemberMetadataValue.Endpoint().setHost("app-2.local").setPort(65535))
                    .setClientTags(List.of(new StreamsGroupMemberMetadataValue.KeyValue().setKey("zone").setValue("eu-1"),
                                           new StreamsGroupMemberMetadataValue.KeyValue().setKey("tier").setValue("gold"))));
        streams(new StreamsGroupMemberMetadataKey().setGroupId("app").setMemberId("s-1"), null);
        streams(new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app"), new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(4));
        streams(new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app"), new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(5).setAssignmentTimestamp(TS + 7));
        streams(new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app"), null);
        streams(new StreamsGroupTargetAssignmentMemberKey().setGroupId("app").setMemberId("s-1"),
                new StreamsGroupTargetAssignmentMemberValue().setActiveTasks(List.of(tgt("0", 0, 1), tgt("1", 2))).setStandbyTasks(List.of(tgt("1", 0))).setWarmupTasks(List.of()));
        streams(new StreamsGroupTargetAssignmentMemberKey().setGroupId("app").setMemberId("s-1"), null);
        streams(new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("s-1"),
                new StreamsGroupCurrentMemberAssignmentValue().setMemberEpoch(5).setPreviousMemberEpoch(4).setState((byte) 0)
                    .setActiveTasks(List.of(cur("0", List.of(0, 1), List.of(5, 4)), cur("1", List.of(2), List.of())))
                    .setStandbyTasks(List.of(cur("1", List.of(0), null)))
                    .setWarmupTasks(List.of())
                    .setActiveTasksPendingRevocation(List.of(cur("0", List.of(3), List.of(3))))
                    .setStandbyTasksPendingRevocation(List.of())
                    .setWarmupTasksPendingRevocation(List.of(cur("2", List.of(1), List.of()))));
        // a newer broker's tags, on the value and on a task entry: Kafka's reader keeps them aside, the JSON leaves them out
        StreamsGroupCurrentMemberAssignmentValue.TaskIds future = cur("0", List.of(1), List.of(6));
        future.unknownTaggedFields().add(new org.apache.kafka.common.protocol.types.RawTaggedField(3, new byte[] {1, 2, 3}));
        StreamsGroupCurrentMemberAssignmentValue withFuture = new StreamsGroupCurrentMemberAssignmentValue().setMemberEpoch(6).setPreviousMemberEpoch(5).setState((byte) 2)
            .setActiveTasks(List.of(future)).setStandbyTasks(List.of()).setWarmupTasks(List.of())
            .setActiveTasksPendingRevocation(List.of()).setStandbyTasksPendingRevocation(List.of()).setWarmupTasksPendingRevocation(List.of());
        withFuture.unknownTaggedFields().add(new org.apache.kafka.common.protocol.types.RawTaggedField(9, new byte[] {0x7f}));
        streams(new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("s-2"), withFuture);
        streams(new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("s-1"), null);
        streams(new StreamsGroupTopologyKey().setGroupId("app"),
                new StreamsGroupTopologyValue().setEpoch(0).setSubtopologies(List.of(
                    new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("0").setSourceTopics(List.of("words")).setSourceTopicRegex(List.of())
                        .setStateChangelogTopics(List.of()).setRepartitionSinkTopics(List.of("app-count-repartition"))
                        .setRepartitionSourceTopics(List.of()).setCopartitionGroups(List.of()),
                    new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("1").setSourceTopics(List.of("app-count-repartition")).setSourceTopicRegex(List.of("in-.*"))
                        .setStateChangelogTopics(List.of(topic("app-count-changelog", 0, (short) -1, "cleanup.policy", "compact")))
                        .setRepartitionSinkTopics(List.of())
                        .setRepartitionSourceTopics(List.of(topic("app-count-repartition", 4, (short) 3, "cleanup.policy", "delete", "retention.ms", "-1")))
                        .setCopartitionGroups(List.of(new StreamsGroupTopologyValue.CopartitionGroup().setSourceTopics(List.of((short) 0))
                            .setSourceTopicRegex(List.of((short) 0)).setRepartitionSourceTopics(List.of((short) 0, (short) 1)))))));
        streams(new StreamsGroupTopologyKey().setGroupId("app"), null);

        // --- __share_group_state (0 snapshot, 1 update)
        state(new ShareSnapshotKey().setGroupId("sg").setTopicId(T1).setPartition(3),
              new ShareSnapshotValue().setSnapshotEpoch(2).setStateEpoch(1).setLeaderEpoch(0).setStartOffset(40).setCreateTimestamp(TS).setWriteTimestamp(TS + 9)
                  .setStateBatches(List.of(new ShareSnapshotValue.StateBatch().setFirstOffset(40).setLastOffset(44).setDeliveryState((byte) 0).setDeliveryCount((short) 1),
                                           new ShareSnapshotValue.StateBatch().setFirstOffset(45).setLastOffset(45).setDeliveryState((byte) 4).setDeliveryCount((short) 5))));
        state(new ShareSnapshotKey().setGroupId("sg").setTopicId(T2).setPartition(0),
              new ShareSnapshotValue().setSnapshotEpoch(0).setStateEpoch(0).setLeaderEpoch(-1).setStartOffset(-1).setDeliveryCompleteCount(12).setCreateTimestamp(TS).setWriteTimestamp(TS).setStateBatches(List.of()));
        ShareSnapshotValue futureSnap = new ShareSnapshotValue().setSnapshotEpoch(3).setStateEpoch(1).setLeaderEpoch(2).setStartOffset(7).setDeliveryCompleteCount(2)
            .setCreateTimestamp(TS).setWriteTimestamp(TS + 1).setStateBatches(List.of());
        futureSnap.unknownTaggedFields().add(new org.apache.kafka.common.protocol.types.RawTaggedField(4, new byte[] {9, 9}));
        state(new ShareSnapshotKey().setGroupId("sg").setTopicId(T1).setPartition(4), futureSnap);
        state(new ShareSnapshotKey().setGroupId("sg").setTopicId(T1).setPartition(3), null);
        state(new ShareUpdateKey().setGroupId("sg").setTopicId(T1).setPartition(3),
              new ShareUpdateValue().setSnapshotEpoch(2).setLeaderEpoch(0).setStartOffset(-1)
                  .setStateBatches(List.of(new ShareUpdateValue.StateBatch().setFirstOffset(46).setLastOffset(50).setDeliveryState((byte) 2).setDeliveryCount((short) 1))));
        state(new ShareUpdateKey().setGroupId("sg").setTopicId(T1).setPartition(3),
              new ShareUpdateValue().setSnapshotEpoch(2).setLeaderEpoch(1).setStartOffset(51).setDeliveryCompleteCount(0).setStateBatches(List.of()));
        state(new ShareUpdateKey().setGroupId("sg").setTopicId(T1).setPartition(3), null);
    }
}
