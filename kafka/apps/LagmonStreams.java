import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A small Kafka Streams application for lagmon's dev cluster: counts words of `input.topic`
 * into `output.topic`. The count makes two sub-topologies (a repartition topic between them)
 * and a state store with its changelog, so a streams group shows tasks, standbys and topology.
 * `process.delay.ms` slows each record down, to build lag on purpose. `app.instances` N > 1
 * runs N applications in this one JVM, application ids `<application.id>-0` .. `-(N-1)`, one
 * streams group each (benchmarks: many groups without many JVMs).
 *
 * Each application prints "state BEFORE -> NOW" on each state change and "tasks N" when the
 * number of active tasks its threads hold changes: RUNNING alone does not say the group is
 * settled, as an instance also reaches it with the empty assignment it holds while it waits
 * for the coordinator's first one.
 *
 * Usage: java -cp "kafka/libs/*:kafka/libs/apps" LagmonStreams app.properties
 * (any Kafka Streams setting in the file is passed through; group.protocol defaults to streams).
 */
public final class LagmonStreams {
    public static void main(String[] args) throws Exception {
        Properties props = Utils.loadProps(args[0]);
        String input = (String) props.remove("input.topic");
        String output = (String) props.remove("output.topic");
        long delayMs = Long.parseLong((String) props.getOrDefault("process.delay.ms", "0"));
        int instances = Integer.parseInt((String) props.getOrDefault("app.instances", "1"));
        props.remove("process.delay.ms");
        props.remove("app.instances");
        props.putIfAbsent(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.putIfAbsent(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.putIfAbsent(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        java.util.List<KafkaStreams> apps = new java.util.ArrayList<>();
        java.util.List<String> names = new java.util.ArrayList<>();
        for (int i = 0; i < instances; i++) {
            Properties own = new Properties();
            own.putAll(props);
            if (instances > 1) {
                own.put(StreamsConfig.APPLICATION_ID_CONFIG, props.get(StreamsConfig.APPLICATION_ID_CONFIG) + "-" + i);
                own.put(StreamsConfig.STATE_DIR_CONFIG, props.getOrDefault(StreamsConfig.STATE_DIR_CONFIG, "/tmp/kafka-streams") + "/" + i);
            }
            String name = instances > 1 ? own.get(StreamsConfig.APPLICATION_ID_CONFIG) + " " : "";
            KafkaStreams streams = new KafkaStreams(wordCount(input, output, delayMs), own);
            streams.setStateListener((now, before) -> System.out.println(name + "state " + before + " -> " + now));
            apps.add(streams);
            names.add(name);
        }
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            apps.parallelStream().forEach(KafkaStreams::close);
            done.countDown();
        }));
        apps.forEach(KafkaStreams::start);
        reportTasks(apps, names);
        done.await();
    }

    /** Polls each application's active task count (Kafka Streams has no public assignment listener). */
    private static void reportTasks(java.util.List<KafkaStreams> apps, java.util.List<String> names) {
        int[] last = new int[apps.size()];
        java.util.Arrays.fill(last, -1);
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "lagmon-task-report");
            t.setDaemon(true);
            return t;
        }).scheduleAtFixedRate(() -> {
            for (int i = 0; i < apps.size(); i++) {
                KafkaStreams streams = apps.get(i);
                if (!streams.state().isRunningOrRebalancing()) continue;
                int tasks = streams.metadataForLocalThreads().stream().mapToInt(t -> t.activeTasks().size()).sum();
                if (tasks != last[i]) {
                    last[i] = tasks;
                    System.out.println(names.get(i) + "tasks " + tasks);
                }
            }
        }, 200, 200, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    /** A topology of its own for each application: a built topology names its internal topics after one. */
    private static Topology wordCount(String input, String output, long delayMs) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input)
            .peek((k, v) -> pause(delayMs))
            .flatMapValues(v -> java.util.Arrays.asList(v.toLowerCase().split("\\W+")))
            .groupBy((k, word) -> word)
            .count()
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    private static void pause(long ms) {
        if (ms <= 0) return;
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
