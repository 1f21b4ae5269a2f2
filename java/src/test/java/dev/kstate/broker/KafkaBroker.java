package dev.kstate.broker;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;

/**
 * A single-node Kafka 4.4 broker in KRaft combined mode ({@code process.roles=broker,controller})
 * in a child JVM, listening on 127.0.0.1 only, on free ports.
 *
 * <p>The broker's classpath is Gradle's {@code kafkaBroker} configuration
 * ({@code org.apache.kafka:kafka_2.13:4.4.0} and its dependencies), passed in the system property
 * {@code kstate.broker.classpath}. {@link #start} writes a {@code server.properties}, formats the
 * log directory with {@code kafka.tools.StorageTool format --standalone} and a fresh cluster id,
 * starts {@code kafka.Kafka} and waits until an {@link Admin} client gets an answer.
 * {@link #close} kills the broker and deletes its directory; a shutdown hook does the same if the
 * JVM exits first, and the broker halts by itself when this JVM dies (its standard input, held
 * open by this JVM, ends; see {@link BrokerMain}).
 */
public final class KafkaBroker implements AutoCloseable {
    private final File dir;
    private final int port;
    private final Process process;
    private final Thread hook;
    private final long startMillis;

    private KafkaBroker(File dir, int port, Process process, Thread hook, long startMillis) {
        this.dir = dir;
        this.port = port;
        this.process = process;
        this.hook = hook;
        this.startMillis = startMillis;
    }

    /** @return {@code 127.0.0.1:<port>} */
    public String bootstrap() {
        return "127.0.0.1:" + port;
    }

    /** @return how long the broker took from format to its first answer */
    public long startMillis() {
        return startMillis;
    }

    /** @return the broker's directory (server.properties, logs/, broker.log) */
    public File dir() {
        return dir;
    }

    /** A free TCP port on 127.0.0.1. */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    /** The classpath of the broker JVM: the kafkaBroker configuration plus {@link BrokerMain}. */
    static String brokerClasspath() {
        String cp = System.getProperty("kstate.broker.classpath");
        if (cp == null || cp.isEmpty()) {
            throw new IllegalStateException("system property kstate.broker.classpath is not set "
                + "(run through Gradle: it is the kafkaBroker configuration)");
        }
        return cp + File.pathSeparator + ownCodeSource();
    }

    /** The directory or jar holding this class (the test classes). */
    static String ownCodeSource() {
        try {
            return new File(BrokerMain.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getPath();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String javaBin() {
        return System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    }

    /**
     * Formats and starts a broker under {@code dir} (created; deleted again by {@link #close}).
     */
    public static KafkaBroker start(File dir) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Files.createDirectories(dir.toPath());
        int brokerPort = freePort();
        int controllerPort = freePort();
        while (controllerPort == brokerPort) {
            controllerPort = freePort();
        }
        File logs = new File(dir, "logs");
        Properties p = new Properties();
        p.setProperty("process.roles", "broker,controller");
        p.setProperty("node.id", "1");
        p.setProperty("controller.quorum.bootstrap.servers", "127.0.0.1:" + controllerPort);
        p.setProperty("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.setProperty("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        p.setProperty("controller.listener.names", "CONTROLLER");
        p.setProperty("inter.broker.listener.name", "PLAINTEXT");
        p.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.setProperty("log.dirs", logs.getAbsolutePath());
        p.setProperty("num.partitions", "1");
        p.setProperty("default.replication.factor", "1");
        p.setProperty("offsets.topic.replication.factor", "1");
        p.setProperty("offsets.topic.num.partitions", "4");
        p.setProperty("transaction.state.log.replication.factor", "1");
        p.setProperty("transaction.state.log.min.isr", "1");
        p.setProperty("transaction.state.log.num.partitions", "4");
        p.setProperty("share.coordinator.state.topic.replication.factor", "1");
        p.setProperty("share.coordinator.state.topic.min.isr", "1");
        p.setProperty("group.initial.rebalance.delay.ms", "0");
        // Streams applications here use short session timeouts, so that a killed member leaves
        // the group in seconds rather than 45 s.
        p.setProperty("group.min.session.timeout.ms", "500");
        p.setProperty("log.segment.bytes", String.valueOf(8 << 20));
        p.setProperty("log.cleaner.dedupe.buffer.size", String.valueOf(8 << 20));
        p.setProperty("auto.create.topics.enable", "false");
        p.setProperty("num.network.threads", "2");
        p.setProperty("num.io.threads", "2");
        p.setProperty("log.flush.interval.messages", String.valueOf(Long.MAX_VALUE));
        File config = new File(dir, "server.properties");
        try (java.io.Writer w = Files.newBufferedWriter(config.toPath(), StandardCharsets.UTF_8)) {
            p.store(w, "kstate test broker");
        }
        File log = new File(dir, "broker.log");
        String cp = brokerClasspath();

        // kafka-storage.sh format --standalone: a fresh cluster id, this node as the only voter
        List<String> format = jvm(cp, "kafka.tools.StorageTool", "format", "--standalone",
            "--cluster-id", Uuid.randomUuid().toString(), "--config", config.getAbsolutePath());
        Process f = new ProcessBuilder(format).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
        if (!f.waitFor(120, TimeUnit.SECONDS) || f.exitValue() != 0) {
            f.destroyForcibly();
            throw new IllegalStateException("kafka-storage format failed:\n" + tail(log));
        }

        Process proc = new ProcessBuilder(jvm(cp, "kafka.Kafka", config.getAbsolutePath()))
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
        Thread hook = new Thread(() -> {
            proc.destroyForcibly();
            deleteTree(dir);
        }, "kafka-broker-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        KafkaBroker broker = new KafkaBroker(dir, brokerPort, proc, hook, 0);
        try {
            broker.awaitAnswer(120_000);
        } catch (RuntimeException | InterruptedException e) {
            String tail = tail(log);
            broker.close();
            throw new IllegalStateException("broker did not come up: " + e + "\n" + tail, e);
        }
        return new KafkaBroker(dir, brokerPort, proc, hook, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }

    private static List<String> jvm(String cp, String mainClass, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaBin());
        cmd.add("-Xms128m");
        cmd.add("-Xmx512m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-Djava.awt.headless=true");
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        cmd.add("-cp");
        cmd.add(cp);
        cmd.add(BrokerMain.class.getName());
        cmd.add(mainClass);
        for (String a : args) {
            cmd.add(a);
        }
        return cmd;
    }

    private void awaitAnswer(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        RuntimeException last = null;
        while (System.currentTimeMillis() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("broker exited with " + process.exitValue());
            }
            try (Admin admin = admin()) {
                admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                // the controller and the broker are up; make sure topics can be created too
                String probe = "__kstate_probe";
                admin.createTopics(List.of(new NewTopic(probe, 1, (short) 1))).all().get(10, TimeUnit.SECONDS);
                admin.deleteTopics(List.of(probe)).all().get(10, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                last = new IllegalStateException(e);
            } catch (RuntimeException e) {
                last = e;
            }
            Thread.sleep(250);
        }
        throw last != null ? last : new IllegalStateException("timeout");
    }

    /** A new Admin client on this broker; close it. */
    public Admin admin() {
        Map<String, Object> c = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(),
            AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000,
            AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10000);
        return Admin.create(c);
    }

    /** Creates topics with the given partition counts. */
    public void createTopics(Map<String, Integer> partitions) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(partitions.entrySet().stream()
                .map(e -> new NewTopic(e.getKey(), e.getValue(), (short) 1)).collect(Collectors.toList()))
                .all().get(30, TimeUnit.SECONDS);
        }
    }

    /** @return whether the broker JVM is alive */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** Kills the broker JVM and deletes its directory. Idempotent. */
    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // shutting down already: the hook runs anyway
        }
        if (!Boolean.getBoolean("kstate.eos.keep")) {
            deleteTree(dir);
        }
    }

    static String tail(File log) {
        try {
            List<String> lines = Files.readAllLines(log.toPath(), StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    static void deleteTree(File dir) {
        if (!dir.exists()) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir.toPath())) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // best effort
        }
    }
}
