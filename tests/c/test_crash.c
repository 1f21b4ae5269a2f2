/*
 * Crash test: a child process writes and commits in a deterministic pattern, the parent
 * kills it with SIGKILL at a random moment, reopens the store and checks that the committed
 * offset is that of some completed commit (never lower than before) and that the contents
 * are exactly the state after that commit: nothing from the interrupted transaction,
 * nothing missing. Several rounds continue the same store; some rounds also arm kstate's
 * commit-path crash points (KSTATE_FAILPOINT_ODDS) so kills land inside spilled commits.
 *
 * The child is started by common.h's crash loop helpers (fork, then exec of this program
 * in child mode).
 *
 * Usage: test_crash            (parent; KSTATE_CRASH_SEED=n reproduces a run)
 *        test_crash --child P  (internal)
 */
#include "common.h"

#define SLOTS 64
#define BULK 100
#define BULK_VALUE 200
#define TOPIC "crash-changelog"

/* ---- the deterministic pattern, shared by the child (writes) and the parent (model) ---- */

typedef struct {
    int present[SLOTS];
    long value_gen[SLOTS]; /* value is "v<gen>-<slot>" or "w<gen>-<slot>" */
    char kind[SLOTS];
    long bulk_gen; /* 0: no bulk keys yet */
} model_t;

static void slot_key(int slot, char *buf, size_t len) {
    snprintf(buf, len, "k%02d", slot);
}

static void slot_value(char kind, long gen, int slot, char *buf, size_t len) {
    snprintf(buf, len, "%c%ld-%d", kind, gen, slot);
}

/* A 199-byte value: "<gen>:<i>:" then letters, all determined by (gen, i). */
static void bulk_value(long gen, int i, char *buf, size_t len) {
    int n = snprintf(buf, len, "%ld:%d:", gen, i);
    for (size_t j = (size_t)n; j + 1 < len; j++) {
        buf[j] = (char)('a' + (int)((gen + i + (long)j) % 26));
    }
    buf[len - 1] = '\0';
}

static int slot_a(long g) { return (int)((g * 7) % SLOTS); }
static int slot_b(long g) { return (int)((g * 11 + 3) % SLOTS); }
static int slot_d(long g) { return (int)((g * 13 + 5) % SLOTS); }
static int is_bulk(long g) { return g % 25 == 0; }

/* The model after applying generation g. */
static void model_apply(model_t *m, long g) {
    int a = slot_a(g);
    m->present[a] = 1;
    m->value_gen[a] = g;
    m->kind[a] = 'v';
    int b = slot_b(g);
    m->present[b] = 1;
    m->value_gen[b] = g;
    m->kind[b] = 'w';
    m->present[slot_d(g)] = 0;
    if (is_bulk(g)) {
        m->bulk_gen = g;
    }
}

/* ---- child ---- */

static void die(kstate_error_t *e, const char *what) {
    fprintf(stderr, "child: %s: [%s] %s\n", what, kstate_error_code_name(kstate_error_code(e)),
            kstate_error_message(e));
    kstate_error_free(e);
    _exit(3);
}

#define TRY(call, what)                                                                 \
    do {                                                                                \
        kstate_error_t *e_ = (call);                                                    \
        if (e_ != NULL) {                                                               \
            die(e_, what);                                                              \
        }                                                                               \
    } while (0)

static int child_main(const char *path) {
    kstate_kv_options_t o = default_options();
    o.max_uncommitted_bytes = 4096; /* bulk generations spill to disk */
    kstate_kv_t *s;
    TRY(kstate_kv_open(path, &o, &s), "open");
    int64_t off = 0;
    bool found = false;
    TRY(kstate_kv_committed_offset(s, TOPIC, 0, &off, &found), "committed_offset");
    long start = found ? (long)off + 1 : 1;
    char k[32];
    char v[64];
    static char bulk_keys[BULK][32];
    static char bulk_vals[BULK][BULK_VALUE];
    for (long g = start; g < start + 10000000; g++) {
        if (getppid() == 1) {
            _exit(4); /* the parent is gone */
        }
        slot_key(slot_a(g), k, sizeof k);
        slot_value('v', g, slot_a(g), v, sizeof v);
        TRY(kstate_kv_put(s, KEY(k), KEY(v), g), "put a");
        slot_key(slot_b(g), k, sizeof k);
        slot_value('w', g, slot_b(g), v, sizeof v);
        TRY(kstate_kv_put(s, KEY(k), KEY(v), g), "put b");
        slot_key(slot_d(g), k, sizeof k);
        kstate_bytes_t old;
        int64_t ts;
        TRY(kstate_kv_delete(s, KEY(k), &old, &ts, &found), "delete");
        kstate_bytes_free(&old);
        if (is_bulk(g)) {
            kstate_kv_write_t w[BULK];
            for (int i = 0; i < BULK; i++) {
                snprintf(bulk_keys[i], sizeof bulk_keys[i], "bulk-%03d", i);
                bulk_value(g, i, bulk_vals[i], BULK_VALUE);
                kstate_kv_write_t e = {(const uint8_t *)bulk_keys[i], strlen(bulk_keys[i]),
                                       (const uint8_t *)bulk_vals[i], BULK_VALUE - 1, g};
                w[i] = e;
            }
            TRY(kstate_kv_put_all(s, w, BULK), "put_all");
        }
        kstate_offset_t offset = {TOPIC, 0, g, true};
        uint8_t meta[8];
        for (int i = 0; i < 8; i++) {
            meta[i] = (uint8_t)(g >> (8 * (7 - i)));
        }
        TRY(kstate_kv_commit(s, &offset, 1, meta, sizeof meta), "commit");
    }
    TRY(kstate_kv_close(s), "close");
    return 0;
}

/* ---- parent ---- */

static char g_path[4200];
static crash_loop_t g_loop;
static long g_committed; /* highest committed generation seen so far */

/* Checks the reopened store against the model after generation c. */
static void verify(kstate_kv_t *s, long c) {
    model_t m;
    memset(&m, 0, sizeof m);
    for (long g = 1; g <= c; g++) {
        model_apply(&m, g);
    }
    size_t expected = 0;
    for (int i = 0; i < SLOTS; i++) {
        expected += m.present[i] ? 1 : 0;
    }
    expected += m.bulk_gen != 0 ? BULK : 0;

    kstate_kv_iter_t *it;
    CHECK_OK(kstate_kv_all(s, &it));
    size_t seen = 0;
    int mismatches = 0;
    for (;;) {
        kstate_kv_batch_t b;
        CHECK_OK(kstate_kv_iter_next_batch(it, 64, 0, &b));
        if (b.len == 0) {
            break;
        }
        for (size_t i = 0; i < b.len; i++) {
            const kstate_kv_entry_t *e = &b.entries[i];
            char key[64];
            char want[BULK_VALUE];
            long want_ts;
            snprintf(key, sizeof key, "%.*s", (int)e->key_len, (const char *)e->key);
            int slot;
            int bi;
            if (sscanf(key, "k%d", &slot) == 1 && slot >= 0 && slot < SLOTS) {
                if (!m.present[slot]) {
                    mismatches++;
                    fprintf(stderr, "  c=%ld: %s present, model says deleted\n", c, key);
                    continue;
                }
                slot_value(m.kind[slot], m.value_gen[slot], slot, want, sizeof want);
                want_ts = m.value_gen[slot];
            } else if (sscanf(key, "bulk-%d", &bi) == 1 && m.bulk_gen != 0) {
                bulk_value(m.bulk_gen, bi, want, sizeof want);
                want_ts = m.bulk_gen;
            } else {
                mismatches++;
                fprintf(stderr, "  c=%ld: unexpected key %s\n", c, key);
                continue;
            }
            if (e->value_len != strlen(want) || memcmp(e->value, want, e->value_len) != 0 ||
                e->timestamp != want_ts) {
                mismatches++;
                fprintf(stderr, "  c=%ld: %s = %.*s @%" PRId64 ", want %s @%ld\n", c, key,
                        (int)(e->value_len > 40 ? 40 : e->value_len), (const char *)e->value,
                        e->timestamp, want, want_ts);
            }
            seen++;
        }
        kstate_kv_batch_free(&b);
    }
    CHECK_OK(kstate_kv_iter_close(it));
    CHECK(mismatches == 0);
    CHECK(seen == expected);
    if (c > 0) {
        kstate_bytes_t meta;
        bool found;
        CHECK_OK(kstate_kv_committed_metadata(s, &meta, &found));
        CHECK(found && meta.len == 8);
        if (found && meta.len == 8) {
            long g = 0;
            for (int i = 0; i < 8; i++) {
                g = (g << 8) | meta.ptr[i];
            }
            CHECK(g == c);
        }
        kstate_bytes_free(&meta);
    }
}

static void one_round(int round, unsigned delay_ms, int failpoints) {
    /* Armed crash points kill the child themselves. */
    bool self_killed = crash_run_child(&g_loop, g_path, delay_ms, failpoints ? "40" : NULL);

    kstate_kv_t *s = NULL;
    CHECK_OK(kstate_kv_open(g_path, NULL, &s));
    if (s == NULL) {
        return;
    }
    int64_t off = 0;
    bool found = false;
    CHECK_OK(kstate_kv_committed_offset(s, TOPIC, 0, &off, &found));
    long c = found ? (long)off : 0;
    CHECK(c >= g_committed); /* nothing committed is ever lost */
    verify(s, c);
    /* The interrupted transaction is gone: nothing is pending after reopen. */
    uint64_t pending = 1;
    CHECK_OK(kstate_kv_approximate_num_uncommitted_bytes(s, &pending));
    CHECK(pending == 0);
    CHECK_OK(kstate_kv_close(s));
    fprintf(stderr, "  round %d: %s, committed generation %ld (+%ld)\n", round,
            self_killed ? "killed by an armed crash point" : "killed by the parent", c,
            c - g_committed);
    g_committed = c;
}

static void test_sigkill_during_writes_and_commits(void) {
    char dir[4096];
    make_scratch(dir, sizeof dir);
    snprintf(g_path, sizeof g_path, "%s/store", dir);
    srand(g_loop.seed);
    for (int r = 0; r < g_loop.rounds; r++) {
        unsigned delay = 150 + (unsigned)(rand() % 500);
        one_round(r, delay, r % 3 == 2);
    }
    CHECK(g_committed > 0); /* the test exercised real commits */
    remove_tree(dir);
}

int main(int argc, char **argv) {
    const char *child = crash_child_path(argc, argv);
    if (child != NULL) {
        return child_main(child);
    }
    g_loop = crash_loop_setup(argv[0], 9, 4, "crash test");
    RUN(test_sigkill_during_writes_and_commits);
    return finish();
}
