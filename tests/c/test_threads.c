/*
 * Thread safety: several reader threads read committed data (point reads, committed scans,
 * committed offsets) while one writer thread writes, rolls back and commits. Every commit
 * sets all KEYS keys to the same generation number, so a reader that ever sees two
 * generations in one committed scan has seen a torn commit; a reader that sees a value the
 * writer only wrote uncommitted (or rolled back) has seen uncommitted data. A second case
 * closes the store under the readers' feet: they must get errors, never crash.
 */
#include "common.h" /* first: it sets the feature-test macros */

#include <pthread.h>
#include <time.h>

#define KEYS 32
#define READERS 4
#define ROLLED_BACK 99999999L /* written only in transactions that are rolled back */

static kstate_kv_t *g_store;
static int g_generations;
static volatile int g_writer_done; /* set once under g_lock, read by readers */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static int writer_done(void) {
    pthread_mutex_lock(&g_lock);
    int d = g_writer_done;
    pthread_mutex_unlock(&g_lock);
    return d;
}

static void key_of(int i, char *buf, size_t len) {
    snprintf(buf, len, "key-%03d", i);
}

static long parse_gen(const uint8_t *p, size_t len) {
    char buf[32];
    if (len == 0 || len >= sizeof buf) {
        return -1;
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    return strtol(buf, NULL, 10);
}

static int g_reader_failures;
static long g_reader_scans;

static void reader_fail(const char *what, long a, long b) {
    pthread_mutex_lock(&g_lock);
    if (g_reader_failures++ < 10) {
        fprintf(stderr, "reader: %s (%ld vs %ld)\n", what, a, b);
    }
    pthread_mutex_unlock(&g_lock);
}

static int offset_of(long *out) {
    int64_t off = 0;
    bool found = false;
    kstate_error_t *e = kstate_kv_committed_offset(g_store, "changelog", 0, &off, &found);
    if (e != NULL) {
        reader_fail(kstate_error_message(e), 0, 0);
        kstate_error_free(e);
        return 0;
    }
    *out = found ? (long)off : 0;
    return 1;
}

static void *reader(void *arg) {
    (void)arg;
    long last = 0;
    long scans = 0;
    while (!writer_done()) {
        long before = 0;
        long after = 0;
        if (!offset_of(&before)) {
            break;
        }
        /* One committed scan: all keys must carry the same generation. */
        kstate_kv_iter_t *it = NULL;
        kstate_error_t *e =
            kstate_kv_scan(g_store, KSTATE_READ_COMMITTED, NULL, 0, NULL, 0, scans % 2, &it);
        if (e != NULL) {
            reader_fail(kstate_error_message(e), 0, 0);
            kstate_error_free(e);
            break;
        }
        long gen = -1;
        size_t seen = 0;
        for (;;) {
            kstate_kv_batch_t b;
            e = kstate_kv_iter_next_batch(it, 7, 0, &b);
            if (e != NULL) {
                reader_fail(kstate_error_message(e), 0, 0);
                kstate_error_free(e);
                break;
            }
            if (b.len == 0) {
                break;
            }
            for (size_t i = 0; i < b.len; i++) {
                long g = parse_gen(b.entries[i].value, b.entries[i].value_len);
                if (g == ROLLED_BACK) {
                    reader_fail("saw a rolled-back value", g, 0);
                }
                if (b.entries[i].timestamp != g) {
                    reader_fail("timestamp differs from value", b.entries[i].timestamp, g);
                }
                if (gen == -1) {
                    gen = g;
                } else if (g != gen) {
                    reader_fail("torn commit: two generations in one scan", gen, g);
                }
                seen++;
            }
            kstate_kv_batch_free(&b);
        }
        kstate_error_free(kstate_kv_iter_close(it));
        if (!offset_of(&after)) {
            break;
        }
        if (seen != 0 && seen != KEYS) {
            reader_fail("scan saw a partial key set", (long)seen, KEYS);
        }
        if (seen == KEYS) {
            /* The offset is committed with the data: before <= gen <= after. */
            if (gen < before || gen > after) {
                reader_fail("generation outside the offsets read around it", gen, before);
            }
            if (gen < last) {
                reader_fail("generation went backwards", gen, last);
            }
            last = gen;
        }
        /* Point reads of the first and last key: never older than what was seen. */
        char k[16];
        key_of(KEYS - 1, k, sizeof k);
        kstate_bytes_t v;
        int64_t ts;
        bool found;
        e = kstate_kv_get_committed(g_store, KEY(k), &v, &ts, &found);
        if (e != NULL) {
            reader_fail(kstate_error_message(e), 0, 0);
            kstate_error_free(e);
            break;
        }
        if (found) {
            long g = parse_gen(v.ptr, v.len);
            if (g < last || g == ROLLED_BACK) {
                reader_fail("point read older than a previous scan", g, last);
            }
        }
        kstate_bytes_free(&v);
        scans++;
    }
    pthread_mutex_lock(&g_lock);
    g_reader_scans += scans;
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

/* Sets every key to generation `g`: the first half one put at a time, the rest in one
 * put_all, so readers get many chances to observe a half-written transaction. */
static void write_generation(long g) {
    static char keys[KEYS][16];
    char v[16];
    snprintf(v, sizeof v, "%08ld", g);
    kstate_kv_write_t batch[KEYS];
    size_t n = 0;
    for (int i = 0; i < KEYS; i++) {
        key_of(i, keys[i], sizeof keys[i]);
        if (i < KEYS / 2) {
            CHECK_OK(kstate_kv_put(g_store, KEY(keys[i]), KEY(v), g));
        } else {
            kstate_kv_write_t w = {(const uint8_t *)keys[i], strlen(keys[i]),
                                   (const uint8_t *)v, strlen(v), g};
            batch[n++] = w;
        }
    }
    CHECK_OK(kstate_kv_put_all(g_store, batch, n));
}

static void *writer(void *arg) {
    (void)arg;
    for (long g = 1; g <= g_generations; g++) {
        if (g % 5 == 0) {
            /* A transaction that is rolled back: never visible to anyone. */
            write_generation(ROLLED_BACK);
            CHECK_OK(kstate_kv_rollback(g_store));
        }
        write_generation(g);
        kstate_offset_t off = {"changelog", 0, g, true};
        CHECK_OK(kstate_kv_commit(g_store, &off, 1, NULL, 0));
    }
    pthread_mutex_lock(&g_lock);
    g_writer_done = 1;
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

static int scale(int full) {
    const char *s = getenv("KSTATE_TEST_SMALL");
    return (s != NULL && s[0] == '1') ? full / 10 : full;
}

static void run_readers_and_writer(kstate_engine_t engine) {
    char dir[4096];
    char path[4200];
    make_scratch(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/store", dir);
    kstate_kv_options_t o = default_options();
    o.engine = engine;
    o.max_uncommitted_bytes = 1024; /* some transactions spill: commits roll them forward */
    CHECK_OK(kstate_kv_open(path, &o, &g_store));
    g_writer_done = 0;
    g_reader_failures = 0;
    g_reader_scans = 0;
    g_generations = scale(300);

    pthread_t readers[READERS];
    pthread_t w;
    for (int i = 0; i < READERS; i++) {
        CHECK(pthread_create(&readers[i], NULL, reader, NULL) == 0);
    }
    CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
    CHECK(pthread_join(w, NULL) == 0);
    for (int i = 0; i < READERS; i++) {
        CHECK(pthread_join(readers[i], NULL) == 0);
    }
    CHECK(g_reader_failures == 0);
    CHECK(g_reader_scans > 0);
    fprintf(stderr, "  %s: %d commits, %ld committed scans by %d readers\n",
            engine == KSTATE_ENGINE_ROCKSDB ? "rocksdb" : "memory", g_generations,
            g_reader_scans, READERS);
    int64_t off = 0;
    bool found = false;
    CHECK_OK(kstate_kv_committed_offset(g_store, "changelog", 0, &off, &found));
    CHECK(found && off == g_generations);
    CHECK_OK(kstate_kv_close(g_store));
    remove_tree(dir);
}

static void test_rocksdb_readers_never_see_torn_commits(void) {
    run_readers_and_writer(KSTATE_ENGINE_ROCKSDB);
}

static void test_memory_readers_never_see_torn_commits(void) {
    run_readers_and_writer(KSTATE_ENGINE_MEMORY);
}

/* Readers hammer a store that another thread closes: only clean errors may come back. */
static volatile int g_stop;
static int g_unexpected;

static void *hammer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&g_lock);
        int stop = g_stop;
        pthread_mutex_unlock(&g_lock);
        if (stop) {
            break;
        }
        kstate_kv_iter_t *it = NULL;
        kstate_error_t *e = kstate_kv_all(g_store, &it);
        int32_t c = kstate_error_code(e);
        kstate_error_free(e);
        if (c == KSTATE_OK) {
            kstate_kv_batch_t b;
            e = kstate_kv_iter_next_batch(it, 3, 0, &b);
            c = kstate_error_code(e);
            kstate_error_free(e);
            kstate_kv_batch_free(&b);
            if (c != KSTATE_OK && c != KSTATE_ERR_ITERATOR_CLOSED) {
                pthread_mutex_lock(&g_lock);
                g_unexpected++;
                pthread_mutex_unlock(&g_lock);
            }
            e = kstate_kv_iter_close(it);
            if (e != NULL) {
                pthread_mutex_lock(&g_lock);
                g_unexpected++;
                pthread_mutex_unlock(&g_lock);
            }
            kstate_error_free(e);
        } else if (c != KSTATE_ERR_STORE_CLOSED) {
            pthread_mutex_lock(&g_lock);
            g_unexpected++;
            pthread_mutex_unlock(&g_lock);
        }
        kstate_bytes_t v;
        int64_t ts;
        bool found;
        e = kstate_kv_get_committed(g_store, KEY("a"), &v, &ts, &found);
        c = kstate_error_code(e);
        kstate_error_free(e);
        kstate_bytes_free(&v);
        if (c != KSTATE_OK && c != KSTATE_ERR_STORE_CLOSED) {
            pthread_mutex_lock(&g_lock);
            g_unexpected++;
            pthread_mutex_unlock(&g_lock);
        }
    }
    return NULL;
}

static void test_close_under_concurrent_readers(void) {
    kstate_kv_options_t o = default_options();
    o.engine = KSTATE_ENGINE_MEMORY;
    CHECK_OK(kstate_kv_open(NULL, &o, &g_store));
    for (int i = 0; i < 20; i++) {
        char k[16];
        key_of(i, k, sizeof k);
        CHECK_OK(kstate_kv_put(g_store, KEY(k), KEY("v"), i));
    }
    CHECK_OK(kstate_kv_commit(g_store, NULL, 0, NULL, 0));
    g_stop = 0;
    g_unexpected = 0;
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++) {
        CHECK(pthread_create(&t[i], NULL, hammer, NULL) == 0);
    }
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK_OK(kstate_kv_close(g_store));
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&g_lock);
    g_stop = 1;
    pthread_mutex_unlock(&g_lock);
    for (int i = 0; i < READERS; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
    }
    CHECK(g_unexpected == 0);
    CHECK_ERR(kstate_kv_close(g_store), KSTATE_ERR_STORE_CLOSED);
}

int main(void) {
    RUN(test_rocksdb_readers_never_see_torn_commits);
    RUN(test_memory_readers_never_see_torn_commits);
    RUN(test_close_under_concurrent_readers);
    return finish();
}
