package dev.kstate.streams;

import java.lang.reflect.Method;
import java.util.Map;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.state.DslKeyValueParams;
import org.apache.kafka.streams.state.DslSessionParams;
import org.apache.kafka.streams.state.DslStoreSuppliers;
import org.apache.kafka.streams.state.DslWindowParams;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;

/**
 * Makes every DSL key-value, window and session store a kstate store: set
 * {@code dsl.store.suppliers.class=dev.kstate.streams.KstateDslStoreSuppliers}.
 *
 * <p>Key-value, window and session stores are kstate stores in the format the DSL asks for
 * (plain, timestamped or, with Kafka 4.3+'s {@code dsl.store.format=headers}, the KIP-1271
 * headers format); engine from {@code kstate.engine}, RocksDB by default. The time-ordered
 * window and session stores of {@code EmitStrategy.onWindowClose()} are kstate's time-ordered
 * stores (see {@link KstateTimeOrderedWindowStore}), in the {@code HEADERS} store format too, as
 * Kafka 4.4 lays them out: windows in the headers format, key-indexed
 * ({@link KstateTimeOrderedHeadersWindowStore}); sessions without headers, which Kafka's builder
 * wraps in its {@code SessionToHeadersStoreAdapter}.
 *
 * <p>Works on Kafka Streams 4.0 to 4.4: {@code DslKeyValueParams#dslStoreFormat()} (and the
 * {@code DslStoreFormat} enum) appeared in 4.3, so they are looked up reflectively, falling back
 * to {@code isTimestamped()} on older runtimes.
 */
public class KstateDslStoreSuppliers implements DslStoreSuppliers {
    /** {@code DslKeyValueParams#dslStoreFormat()}, or null before Kafka Streams 4.3. */
    private static final Method DSL_STORE_FORMAT = dslStoreFormatMethod();
    /** {@code DslWindowParams#dslStoreFormat()}, or null on older runtimes. */
    private static final Method WINDOW_STORE_FORMAT = method(DslWindowParams.class, "dslStoreFormat");
    /** {@code DslSessionParams#storeFormat()}, or null on older runtimes. */
    private static final Method SESSION_STORE_FORMAT = method(DslSessionParams.class, "storeFormat");

    private KstateStoreOptions.Engine engine = KstateStoreOptions.Engine.ROCKSDB;

    /**
     * Checks every {@code kstate.*} key (see {@link KstateStoreOptions}), reads
     * {@code kstate.engine} (rocksdb or memory).
     *
     * @throws org.apache.kafka.common.config.ConfigException for a bad {@code kstate.*} value
     */
    @Override
    public void configure(Map<String, ?> configs) {
        KstateStoreOptions.validate(configs);
        Object v = configs == null ? null : configs.get(KstateStoreOptions.ENGINE_CONFIG);
        if (v != null) {
            engine = KstateStoreOptions.Engine.parse(v);
        }
    }

    /** A kstate store in the format the DSL asks for: plain, timestamped or headers. */
    @Override
    public KeyValueBytesStoreSupplier keyValueStore(DslKeyValueParams params) {
        return KstateStores.builder(params.name()).engine(engine)
            .valueFormat(KstateStoreOptions.ValueFormat.valueOf(formatOf(params))).build();
    }

    /**
     * A kstate window store (plain, timestamped or headers as the DSL asks; for
     * {@code EmitStrategy.onWindowClose()} a time-ordered one, as Kafka's
     * {@code RocksDbIndexedTimeOrderedWindowBytesStoreSupplier}, indexed by key for sliding windows; in
     * the {@code HEADERS} format as {@code RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier},
     * headers-format values, always indexed by key).
     */
    @Override
    public WindowBytesStoreSupplier windowStore(DslWindowParams params) {
        String format = windowFormatOf(params);
        boolean onClose = params.emitStrategy().type() == EmitStrategy.StrategyType.ON_WINDOW_CLOSE;
        if (onClose && format.equals("HEADERS")) {
            // Kafka's headers layout, always with its key index (the store says so whatever isSlidingWindow says)
            return KstateHeadersWindowBytesStoreSupplier.createTimeOrdered(
                KstateStores.builder(params.name()).engine(engine).valueFormat(KstateStoreOptions.ValueFormat.HEADERS)
                    .options(),
                params.retentionPeriod().toMillis(), params.windowSize().toMillis(), params.retainDuplicates(),
                params.isSlidingWindow());
        }
        if (onClose) {
            return new KstateWindowBytesStoreSupplier(
                KstateStores.builder(params.name()).engine(engine).timestamped(true).options(),
                params.retentionPeriod().toMillis(), params.windowSize().toMillis(), params.retainDuplicates(), true,
                params.isSlidingWindow());
        }
        return KstateStores.builder(params.name()).engine(engine).valueFormat(KstateStoreOptions.ValueFormat.valueOf(format))
            .buildWindowStore(params.retentionPeriod(), params.windowSize(), params.retainDuplicates());
    }

    /**
     * A kstate session store (plain, or headers as the DSL asks; for
     * {@code EmitStrategy.onWindowClose()} a time-ordered one, as Kafka's
     * {@code RocksDbTimeOrderedSessionBytesStoreSupplier}, and in the {@code HEADERS} format as
     * {@code RocksDbTimeOrderedSessionHeadersBytesStoreSupplier}: aggregates without headers, under
     * Kafka's {@code SessionToHeadersStoreAdapter}).
     */
    @Override
    public SessionBytesStoreSupplier sessionStore(DslSessionParams params) {
        boolean headers = enumName(invoke(SESSION_STORE_FORMAT, params), "").equals("HEADERS");
        boolean onClose = params.emitStrategy().type() == EmitStrategy.StrategyType.ON_WINDOW_CLOSE;
        if (onClose) {
            // in the headers format too: Kafka 4.4's RocksDbTimeOrderedSessionHeadersBytesStoreSupplier
            // gives a store that is not a HeadersBytesStore, so its builder adapts it
            // (SessionToHeadersStoreAdapter) and the aggregates are stored without headers; so here
            if (headers) {
                return KstateHeadersSessionBytesStoreSupplier.createTimeOrdered(
                    KstateStores.builder(params.name()).engine(engine).options(), params.retentionPeriod().toMillis());
            }
            return new KstateSessionBytesStoreSupplier(KstateStores.builder(params.name()).engine(engine).options(),
                params.retentionPeriod().toMillis(), true);
        }
        return KstateStores.builder(params.name()).engine(engine)
            .valueFormat(headers ? KstateStoreOptions.ValueFormat.HEADERS : KstateStoreOptions.ValueFormat.TIMESTAMPED)
            .buildSessionStore(params.retentionPeriod());
    }

    /** @return the window store format: PLAIN, TIMESTAMPED or HEADERS ({@code dslStoreFormat()} is 4.3+) */
    @SuppressWarnings("deprecation") // isTimestamped() is the only way to ask on older runtimes
    static String windowFormatOf(DslWindowParams params) {
        String name = enumName(invoke(WINDOW_STORE_FORMAT, params), null);
        if (name != null) {
            return name;
        }
        return params.isTimestamped() ? "TIMESTAMPED" : "PLAIN";
    }

    private static Object invoke(Method method, Object target) {
        if (method == null) {
            return null;
        }
        try {
            return method.invoke(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the store format of " + target, e);
        }
    }

    private static String enumName(Object format, String fallback) {
        return format instanceof Enum ? ((Enum<?>) format).name() : fallback;
    }

    private static Method method(Class<?> type, String name) {
        try {
            return type.getMethod(name);
        } catch (NoSuchMethodException olderKafka) {
            return null;
        }
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
