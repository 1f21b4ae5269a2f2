/*
 * Tiny test harness shared by the kstate C tests: checks that count failures, one line per
 * test case ("ok - name" / "not ok - name", read by run.sh), and scratch directories.
 */
#ifndef KSTATE_TEST_COMMON_H
#define KSTATE_TEST_COMMON_H

#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, kill, usleep-free nanosleep */

#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every test includes this header first, so the feature-test macro above applies. */

#include "kstate.h"

static int g_failures;
static int g_case_failures;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            g_case_failures++;                                                          \
        }                                                                               \
    } while (0)

/* The call must succeed (return NULL). */
#define CHECK_OK(call)                                                                  \
    do {                                                                                \
        kstate_error_t *err_ = (call);                                                  \
        if (err_ != NULL) {                                                             \
            fprintf(stderr, "%s:%d: %s failed: [%s] %s\n", __FILE__, __LINE__, #call,   \
                    kstate_error_code_name(kstate_error_code(err_)),                    \
                    kstate_error_message(err_));                                        \
            kstate_error_free(err_);                                                    \
            g_case_failures++;                                                          \
        }                                                                               \
    } while (0)

/* The call must fail with `code` and a non-empty message. */
#define CHECK_ERR(call, code)                                                           \
    do {                                                                                \
        kstate_error_t *err_ = (call);                                                  \
        int32_t got_ = kstate_error_code(err_);                                         \
        if (got_ != (code)) {                                                           \
            fprintf(stderr, "%s:%d: %s: expected %s, got %s (%s)\n", __FILE__, __LINE__, \
                    #call, kstate_error_code_name(code), kstate_error_code_name(got_),  \
                    kstate_error_message(err_));                                        \
            g_case_failures++;                                                          \
        } else if (strlen(kstate_error_message(err_)) == 0) {                           \
            fprintf(stderr, "%s:%d: %s: empty message\n", __FILE__, __LINE__, #call);    \
            g_case_failures++;                                                          \
        }                                                                               \
        kstate_error_free(err_);                                                        \
    } while (0)

/* kstate's default options in this header's layout (struct_size = sizeof the struct). */
static inline kstate_kv_options_t default_options(void) {
    kstate_kv_options_t o;
    memset(&o, 0, sizeof o);
    CHECK_OK(kstate_kv_options_init(&o, sizeof o));
    return o;
}

static inline void run_case(const char *name, void (*fn)(void)) {
    g_case_failures = 0;
    fn();
    printf("%s - %s\n", g_case_failures == 0 ? "ok" : "not ok", name);
    fflush(stdout);
    if (g_case_failures != 0) {
        g_failures++;
    }
}

#define RUN(fn) run_case(#fn, fn)

/* Exit status of a test program. */
static inline int finish(void) {
    return g_failures == 0 ? 0 : 1;
}

static inline int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a directory tree (like rm -rf). */
static inline void remove_tree(const char *path) {
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh scratch directory under $TMPDIR (or /tmp); `buf` receives its path. */
static inline void make_scratch(char *buf, size_t len) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, len, "%s/kstate-c-XXXXXX", tmp != NULL ? tmp : "/tmp");
    if (mkdtemp(buf) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Compares a returned buffer with a C string's bytes. */
static inline int bytes_eq(kstate_bytes_t b, const char *s) {
    size_t n = strlen(s);
    return b.len == n && (n == 0 || memcmp(b.ptr, s, n) == 0);
}

#define KEY(s) (const uint8_t *)(s), strlen(s)

/* ---- SIGKILL crash loops (test_crash, test_versioned) ------------------------------------
 * The parent runs rounds: each forks a child that exec()s this same program as
 * `PROG --child PATH` (a forked copy of a process that already ran RocksDB would lack its
 * background threads, which fork does not copy), lets it write and commit for a while,
 * SIGKILLs it, and checks the store the child left. */

/* What a crash loop needs to start its children and replay a run. */
typedef struct {
    char self[4096]; /* this program, which the children exec */
    unsigned seed;   /* KSTATE_CRASH_SEED, else the time: printed, so a run replays */
    int rounds;      /* `rounds`, or `small_rounds` with KSTATE_TEST_SMALL=1 (valgrind) */
} crash_loop_t;

/* The store path when this process is a crash loop's child (`PROG --child PATH`), else NULL. */
static inline const char *crash_child_path(int argc, char **argv) {
    return argc == 3 && strcmp(argv[1], "--child") == 0 ? argv[2] : NULL;
}

/* The parent's settings, printed as "  <what>: N rounds, KSTATE_CRASH_SEED=S". */
static inline crash_loop_t crash_loop_setup(const char *argv0, int rounds, int small_rounds,
                                            const char *what) {
    crash_loop_t loop;
    if (realpath("/proc/self/exe", loop.self) == NULL) {
        snprintf(loop.self, sizeof loop.self, "%s", argv0);
    }
    const char *seed = getenv("KSTATE_CRASH_SEED");
    loop.seed = seed != NULL ? (unsigned)strtoul(seed, NULL, 10) : (unsigned)time(NULL);
    const char *small = getenv("KSTATE_TEST_SMALL");
    loop.rounds = (small != NULL && small[0] == '1') ? small_rounds : rounds;
    fprintf(stderr, "  %s: %d rounds, KSTATE_CRASH_SEED=%u\n", what, loop.rounds, loop.seed);
    return loop;
}

/* Starts `self --child path` (with KSTATE_FAILPOINT_ODDS=failpoint_odds, or without the
 * variable when NULL), lets it run for delay_ms unless it dies first, SIGKILLs and reaps it.
 * The child never exits by itself: it must end by SIGKILL, the parent's or an armed crash
 * point's. Returns true when it died before the parent killed it. */
static inline bool crash_run_child(const crash_loop_t *loop, const char *path, unsigned delay_ms,
                                   const char *failpoint_odds) {
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        if (failpoint_odds != NULL) {
            setenv("KSTATE_FAILPOINT_ODDS", failpoint_odds, 1);
        } else {
            unsetenv("KSTATE_FAILPOINT_ODDS");
        }
        char *argv[] = {(char *)loop->self, "--child", (char *)path, NULL};
        execv(loop->self, argv);
        perror("execv");
        _exit(5);
    }
    int status = 0;
    pid_t done = 0;
    for (unsigned waited = 0; waited < delay_ms && done != pid; waited++) {
        struct timespec ms = {0, 1000 * 1000};
        nanosleep(&ms, NULL);
        done = waitpid(pid, &status, WNOHANG);
    }
    bool died_first = done == pid;
    if (!died_first) {
        kill(pid, SIGKILL);
        CHECK(waitpid(pid, &status, 0) == pid);
    }
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    return died_first;
}

#endif /* KSTATE_TEST_COMMON_H */
