package dev.kstate.streams;

import java.lang.reflect.Method;
import java.util.Map;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.DslKeyValueParams;
import org.apache.kafka.streams.state.DslSessionParams;
import org.apache.kafka.streams.state.DslStoreSuppliers;
import org.apache.kafka.streams.state.DslWindowParams;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;

/**
 * Makes every DSL key-value store a kstate store: set
 * {@code dsl.store.suppliers.class=dev.kstate.streams.KstateDslStoreSuppliers}.
 *
 * <p>Key-value stores are kstate stores (plain, timestamped or, with Kafka 4.3+'s
 * {@code dsl.store.format=headers}, in the KIP-1271 headers format, as the DSL asks; engine from
 * {@code kstate.engine}, RocksDB by default). Window and session stores are for now delegated
 * to Kafka's built-in RocksDB suppliers: kstate's window/session stores come in their own issue.
 *
 * <p>Works on Kafka Streams 4.0 to 4.4: {@code DslKeyValueParams#dslStoreFormat()} (and the
 * {@code DslStoreFormat} enum) appeared in 4.3, so they are looked up reflectively, falling back
 * to {@code isTimestamped()} on older runtimes.
 */
public class KstateDslStoreSuppliers implements DslStoreSuppliers {
    /** {@code DslKeyValueParams#dslStoreFormat()}, or null before Kafka Streams 4.3. */
    private static final Method DSL_STORE_FORMAT = dslStoreFormatMethod();

    private final DslStoreSuppliers fallback = new BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers();
    private KstateStoreOptions.Engine engine = KstateStoreOptions.Engine.ROCKSDB;

    /** Reads {@code kstate.engine} (rocksdb or memory) and configures the delegate. */
    @Override
    public void configure(Map<String, ?> configs) {
        Object v = configs == null ? null : configs.get(KstateStoreOptions.ENGINE_CONFIG);
        if (v != null) {
            engine = KstateStoreOptions.Engine.parse(v);
        }
        fallback.configure(configs);
    }

    /** A kstate store in the format the DSL asks for: plain, timestamped or headers. */
    @Override
    public KeyValueBytesStoreSupplier keyValueStore(DslKeyValueParams params) {
        return KstateStores.builder(params.name()).engine(engine)
            .valueFormat(KstateStoreOptions.ValueFormat.valueOf(formatOf(params))).build();
    }

    /** Kafka's built-in window store (kstate has none yet). */
    @Override
    public WindowBytesStoreSupplier windowStore(DslWindowParams params) {
        return fallback.windowStore(params);
    }

    /** Kafka's built-in session store (kstate has none yet). */
    @Override
    public SessionBytesStoreSupplier sessionStore(DslSessionParams params) {
        return fallback.sessionStore(params);
    }

    /** @return the name of the DSL store format: PLAIN, TIMESTAMPED or HEADERS */
    @SuppressWarnings("deprecation") // isTimestamped() is the only way to ask before Kafka Streams 4.3
    static String formatOf(DslKeyValueParams params) {
        if (DSL_STORE_FORMAT != null) {
            try {
                Object format = DSL_STORE_FORMAT.invoke(params);
                if (format instanceof Enum) {
                    return ((Enum<?>) format).name(); // DslStoreFormat overrides toString()
                }
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot read the store format of " + params, e);
            }
        }
        return params.isTimestamped() ? "TIMESTAMPED" : "PLAIN";
    }

    private static Method dslStoreFormatMethod() {
        try {
            return DslKeyValueParams.class.getMethod("dslStoreFormat");
        } catch (NoSuchMethodException beforeKafka43) {
            return null;
        }
    }
}
