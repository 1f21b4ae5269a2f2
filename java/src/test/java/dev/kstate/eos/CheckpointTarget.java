package dev.kstate.eos;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a {@code file://} checkpoint target the way an operator would, without kstate's code:
 * the manifests under {@code <app>/<task>/<store>/manifests/}, the changelog offset each one
 * records, and whether every file a manifest names is present with its size. The real-broker
 * checkpoint tests and the scale-out benchmark check the adapter's uploads with it.
 */
final class CheckpointTarget {
    private static final Pattern FILE = Pattern.compile(
        "\\{\"name\":\"([^\"]+)\",\"object\":\"([^\"]+)\",\"size\":(\\d+),\"sha256\":\"([0-9a-f]+)\"\\}");
    private static final Pattern OFFSET = Pattern.compile(
        "\\{\"topic\":\"([^\"]+)\",\"partition\":(\\d+),\"offset\":(-?\\d+)\\}");

    /** The target's root directory. */
    final File root;

    CheckpointTarget(File root) {
        this.root = root;
    }

    /** The {@code kstate.checkpoint.uri} of this target. */
    String uri() {
        return "file://" + root.getAbsolutePath();
    }

    /** One manifest as read from the target. */
    static final class Manifest {
        final String task;
        final String store;
        final String key;
        /** Changelog offset recorded (the highest, one partition per store and task). */
        final long offset;
        /** Object key (relative to the store's scope) and size of every file named. */
        final Map<String, Long> objects = new TreeMap<>();

        Manifest(String task, String store, String key, long offset) {
            this.task = task;
            this.store = store;
            this.key = key;
            this.offset = offset;
        }

        @Override
        public String toString() {
            return task + "/" + store + "/" + key + "@" + offset;
        }
    }

    /** Every manifest of application {@code appId} (unreadable ones throw). */
    List<Manifest> manifests(String appId) throws IOException {
        List<Manifest> out = new ArrayList<>();
        File[] tasks = new File(root, appId).listFiles(File::isDirectory);
        for (File task : tasks == null ? new File[0] : tasks) {
            File[] stores = task.listFiles(File::isDirectory);
            for (File store : stores == null ? new File[0] : stores) {
                File[] files = new File(store, "manifests").listFiles(f -> f.getName().endsWith(".json"));
                for (File m : files == null ? new File[0] : files) {
                    String json;
                    try {
                        json = new String(Files.readAllBytes(m.toPath()), StandardCharsets.UTF_8);
                    } catch (java.nio.file.NoSuchFileException deletedByGc) {
                        continue;
                    }
                    long offset = -1;
                    Matcher o = OFFSET.matcher(json);
                    while (o.find()) {
                        offset = Math.max(offset, Long.parseLong(o.group(3)));
                    }
                    Manifest manifest = new Manifest(task.getName(), store.getName(), m.getName(), offset);
                    Matcher f = FILE.matcher(json);
                    while (f.find()) {
                        manifest.objects.put(f.group(2), Long.parseLong(f.group(3)));
                    }
                    EosRig.check(!manifest.objects.isEmpty(), "manifest " + m + " names no file: " + json);
                    out.add(manifest);
                }
            }
        }
        return out;
    }

    /**
     * The manifests of {@code appId} that name a missing object or one of another size: a
     * garbage collection or an upload that broke a published checkpoint.
     */
    List<String> broken(String appId) throws IOException {
        List<String> bad = new ArrayList<>();
        for (Manifest m : manifests(appId)) {
            File scope = new File(new File(new File(root, appId), m.task), m.store);
            if (!new File(scope, "manifests/" + m.key).exists()) {
                continue; // deleted by a garbage collection since the listing: not published any more
            }
            for (Map.Entry<String, Long> e : m.objects.entrySet()) {
                File object = new File(scope, e.getKey());
                if (!object.isFile() || object.length() != e.getValue()) {
                    bad.add(m + " names " + e.getKey() + " (" + e.getValue() + " bytes): "
                        + (object.isFile() ? object.length() + " bytes" : "missing"));
                }
            }
        }
        return bad;
    }

    /** The newest manifest's offset of each task/store, by highest changelog offset. */
    Map<String, Long> newestOffsets(String appId) throws IOException {
        Map<String, Long> newest = new TreeMap<>();
        for (Manifest m : manifests(appId)) {
            newest.merge(m.task + "/" + m.store, m.offset, Math::max);
        }
        return newest;
    }
}
