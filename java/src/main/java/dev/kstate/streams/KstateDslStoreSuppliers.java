package dev.kstate.streams;

import java.util.Map;
import org.apache.kafka.streams.DslStoreFormat;
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
 * <p>Key-value stores are kstate stores (timestamped or plain as the DSL asks; engine from
 * {@code kstate.engine}, RocksDB by default). Window and session stores, and key-value stores
 * in the {@code HEADERS} store format, are for now delegated to Kafka's built-in RocksDB
 * suppliers: kstate's window/session stores come in their own issue.
 */
public class KstateDslStoreSuppliers implements DslStoreSuppliers {
    private final DslStoreSuppliers fallback = new BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers();
    private KstateStoreOptions.Engine engine = KstateStoreOptions.Engine.ROCKSDB;

    @Override
    public void configure(Map<String, ?> configs) {
        Object v = configs == null ? null : configs.get(KstateStoreOptions.ENGINE_CONFIG);
        if (v != null) {
            engine = KstateStoreOptions.Engine.parse(v);
        }
        fallback.configure(configs);
    }

    @Override
    public KeyValueBytesStoreSupplier keyValueStore(DslKeyValueParams params) {
        DslStoreFormat format = params.dslStoreFormat();
        if (format == DslStoreFormat.HEADERS) {
            return fallback.keyValueStore(params);
        }
        return KstateStores.builder(params.name()).engine(engine).timestamped(format == DslStoreFormat.TIMESTAMPED).build();
    }

    @Override
    public WindowBytesStoreSupplier windowStore(DslWindowParams params) {
        return fallback.windowStore(params);
    }

    @Override
    public SessionBytesStoreSupplier sessionStore(DslSessionParams params) {
        return fallback.sessionStore(params);
    }
}
