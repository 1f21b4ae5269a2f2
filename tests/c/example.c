/* example.c: count words in a kstate store, commit with a changelog offset, read back. */
#include <stdio.h>
#include <string.h>

#include "kstate.h"

/* Prints and frees an error; returns 1 if there was one. */
static int failed(kstate_error_t *err, const char *what) {
    if (err == NULL) {
        return 0;
    }
    fprintf(stderr, "%s failed: %s (%s)\n", what, kstate_error_message(err),
            kstate_error_code_name(kstate_error_code(err)));
    kstate_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/kstate-example";
    kstate_kv_options_t options;
    /* sizeof tells the library which fields this header's options have */
    if (failed(kstate_kv_options_init(&options, sizeof options), "options")) {
        return 1;
    }
    options.max_uncommitted_bytes = 8u << 20; /* spill to disk past 8 MiB */
    kstate_kv_t *store = NULL;
    if (failed(kstate_kv_open(path, &options, &store), "open")) {
        return 1;
    }

    /* Writes form a transaction: visible to this writer now, to others after commit. */
    const char *words[] = {"apple", "banana", "apple", "cherry"};
    for (int i = 0; i < 4; i++) {
        const uint8_t *key = (const uint8_t *)words[i];
        kstate_bytes_t old;
        int64_t ts;
        bool found;
        if (failed(kstate_kv_get(store, key, strlen(words[i]), &old, &ts, &found), "get")) {
            return 1;
        }
        unsigned count = 1;
        if (found && old.len < 16) {
            char buf[16] = {0};
            memcpy(buf, old.ptr, old.len);
            sscanf(buf, "%u", &count);
            count++;
        }
        kstate_bytes_free(&old);
        char value[16];
        int n = snprintf(value, sizeof value, "%u", count);
        if (failed(kstate_kv_put(store, key, strlen(words[i]), (const uint8_t *)value,
                                 (size_t)n, 1700000000000 + i),
                   "put")) {
            return 1;
        }
    }

    /* Commit the writes atomically with the changelog offset they came from. */
    kstate_offset_t offset = {"words-changelog", 0, 3, true};
    if (failed(kstate_kv_commit(store, &offset, 1, NULL, 0), "commit")) {
        return 1;
    }
    int64_t committed = 0;
    bool has_offset = false;
    if (failed(kstate_kv_committed_offset(store, "words-changelog", 0, &committed,
                                          &has_offset),
               "committed_offset")) {
        return 1;
    }
    printf("committed offset: %lld\n", has_offset ? (long long)committed : -1LL);

    /* Iterate over everything, many entries per call. */
    kstate_kv_iter_t *iter = NULL;
    if (failed(kstate_kv_all(store, &iter), "all")) {
        return 1;
    }
    for (;;) {
        kstate_kv_batch_t batch;
        if (failed(kstate_kv_iter_next_batch(iter, 128, 0, &batch), "next_batch")) {
            return 1;
        }
        if (batch.len == 0) {
            break; /* exhausted */
        }
        for (size_t i = 0; i < batch.len; i++) {
            const kstate_kv_entry_t *e = &batch.entries[i];
            printf("%.*s = %.*s (timestamp %lld)\n", (int)e->key_len, (const char *)e->key,
                   (int)e->value_len, (const char *)e->value, (long long)e->timestamp);
        }
        kstate_kv_batch_free(&batch);
    }
    if (failed(kstate_kv_iter_close(iter), "iter_close") ||
        failed(kstate_kv_close(store), "close")) {
        return 1;
    }
    return 0;
}
