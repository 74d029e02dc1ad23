/* The library `sectormon sim -- CMD` preloads into a traced dynamic program (qemu's -E LD_PRELOAD):
 * it tells the plugin (plugin.c) what QEMU 7.2's plugin API cannot see - heap blocks with their
 * allocation sites, each thread's stack, and the program's marker calls.
 *
 * Each report is one system call with a number no kernel has (SMQ_SYSCALL, ring.h): kind plus five
 * words. The plugin sees the call, with its arguments, in the calling thread in order with the
 * thread's accesses; QEMU then answers ENOSYS and the program goes on. Outside the plugin the
 * call is a harmless ENOSYS too.
 *
 * - Heap: malloc, calloc, realloc, free, posix_memalign, aligned_alloc and memalign are wrapped
 *   around the next definitions (dlsym RTLD_NEXT: glibc's, or the allocator the program links,
 *   such as jemalloc, so the program keeps its own). dlsym itself may allocate before it has
 *   answered: those few allocations come from a small static area, never freed, never reported.
 *   C++'s operator new (all its forms) is wrapped too, so a C++ block is named by the code that
 *   called new, not by libstdc++'s call of malloc. ALLOC carries the address, the size
 *   and the call site (the wrapper's return address: the caller's code, which names the block);
 *   it is sent after the block exists, FREE before it is released, so the allocator's own
 *   bookkeeping in a freed block is not counted to it. gfortran's ALLOCATE calls malloc from the
 *   program's code, so Fortran arrays are named by their ALLOCATE statement.
 * - Stacks: the main thread's from the constructor, every other thread's from a wrapper of its
 *   start routine (pthread_create), as pthread_getattr_np gives them.
 * - Marks: the entry points of fapp, LIKWID's marker API and sectormon's own (regions/include)
 *   are defined here and, preloaded, take the place of the real library's: each sends the region's
 *   name and number (names past SMQ_MARK_NAME_MAX bytes are cut).
 * A static binary cannot preload anything: sectormon says so, and globals are still named.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the next allocator ---- */

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static void *(*next_memalign)(size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);

static _Alignas(16) char early[8192]; /* what dlsym allocates while the shim looks up the others */
static size_t early_used;
static __thread int resolving __attribute__((tls_model("initial-exec"))); /* no allocation to reach it */

static int is_early(const void *p) { return (const char *)p >= early && (const char *)p < early + sizeof early; }

static void *early_alloc(size_t size) {
    if (size > sizeof early) return NULL;
    size = (size + 15) & ~(size_t)15;
    size_t at = __atomic_fetch_add(&early_used, size, __ATOMIC_RELAXED);
    return size <= sizeof early && at <= sizeof early - size ? early + at : NULL; /* zeroed: static */
}

#define NEXT(name) (__typeof__(next_##name))dlsym(RTLD_NEXT, #name)

/* `f`: the next allocator's `name`, looked up on its first use (each dlsym costs the traced
 * start-up a thousand accesses or so: the functions a program never calls are not looked up; a
 * race only repeats a lookup), one load after that; `early` what to do while dlsym runs. */
#define NEXT_OR(f, name, early, failed)                                \
    __typeof__(next_##name) f = next_##name;                           \
    if (__builtin_expect(f == NULL, 0)) {                              \
        if (resolving) early;                                          \
        resolving = 1;                                                 \
        f = NEXT(name);                                                \
        __atomic_store_n(&next_##name, f, __ATOMIC_RELEASE);           \
        resolving = 0;                                                 \
        if (f == NULL) failed;                                         \
    }

/* The system call itself, inline: no libc wrapper, so no errno to save, and next to nothing of the
 * shim's own on the traced stack (the plugin traces the shim's accesses like the program's). */
static inline __attribute__((always_inline)) void report(uint64_t kind, uint64_t a, uint64_t b, uint64_t c,
                                                         uint64_t d, uint64_t e) {
#if defined(__x86_64__)
    register uint64_t r10 __asm__("r10") = c, r8 __asm__("r8") = d, r9 __asm__("r9") = e;
    uint64_t ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((uint64_t)SMQ_SYSCALL), "D"(kind), "S"(a), "d"(b), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    (void)ret;
#elif defined(__aarch64__)
    register uint64_t x8 __asm__("x8") = SMQ_SYSCALL, x0 __asm__("x0") = kind, x1 __asm__("x1") = a;
    register uint64_t x2 __asm__("x2") = b, x3 __asm__("x3") = c, x4 __asm__("x4") = d, x5 __asm__("x5") = e;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
#else
#error "the shim reports with x86_64's or aarch64's system call instruction"
#endif
}

#define SITE() ((uint64_t)(uintptr_t)__builtin_return_address(0))

/* Inside C++'s operator new: its own call of malloc is not reported, the operator's is (below). */
static __thread int inside_new __attribute__((tls_model("initial-exec")));

static void *allocated(void *p, size_t size, uint64_t site) {
    if (p != NULL && !inside_new) report(SMQ_EV_ALLOC, (uint64_t)(uintptr_t)p, size, site, 0, 0);
    return p;
}

EXPORT void *malloc(size_t size) {
    NEXT_OR(next, malloc, return early_alloc(size), return NULL);
    return allocated(next(size), size, SITE());
}

EXPORT void *calloc(size_t n, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) bytes = SIZE_MAX; /* calloc fails: nothing reported */
    NEXT_OR(next, calloc, return early_alloc(bytes), return NULL);
    return allocated(next(n, size), bytes, SITE());
}

EXPORT void free(void *p) {
    if (p == NULL || is_early(p)) return;
    NEXT_OR(next, free, return, return); /* a block freed while dlsym runs is kept */
    report(SMQ_EV_FREE, (uint64_t)(uintptr_t)p, 0, 0, 0, 0);
    next(p);
}

/* An early block moves to the next allocator's heap (its old size is at most what is left of the
 * area after it); while dlsym runs, only an early block is reallocated, from the area. */
static void *realloc_early(void *p, size_t size) {
    if (p != NULL && !is_early(p)) return NULL;
    void *moved = resolving ? early_alloc(size) : malloc(size);
    size_t left = p != NULL ? (size_t)(early + sizeof early - (char *)p) : 0;
    if (moved != NULL && p != NULL) memmove(moved, p, size < left ? size : left);
    return moved;
}

EXPORT void *realloc(void *p, size_t size) {
    uint64_t site = SITE();
    if (is_early(p)) return realloc_early(p, size);
    NEXT_OR(next, realloc, return realloc_early(p, size), return NULL);
    void *moved = next(p, size);
    /* After the call: a failed realloc leaves the block where it was. Its copy is counted to the
     * old block's object (it is still live for the consumer), the new block's from now on. */
    if (moved != NULL) {
        if (p != NULL) report(SMQ_EV_FREE, (uint64_t)(uintptr_t)p, 0, 0, 0, 0);
        allocated(moved, size, site);
    } else if (p != NULL && size == 0) {
        report(SMQ_EV_FREE, (uint64_t)(uintptr_t)p, 0, 0, 0, 0); /* glibc's realloc(p, 0) frees p */
    }
    return moved;
}

EXPORT void *memalign(size_t alignment, size_t size) {
    NEXT_OR(next, memalign, return NULL, return NULL);
    return allocated(next(alignment, size), size, SITE());
}

EXPORT void *aligned_alloc(size_t alignment, size_t size) {
    NEXT_OR(next, aligned_alloc, return NULL, return NULL);
    return allocated(next(alignment, size), size, SITE());
}

EXPORT int posix_memalign(void **out, size_t alignment, size_t size) {
    NEXT_OR(next, posix_memalign, return ENOMEM, return ENOMEM);
    int rc = next(out, alignment, size);
    if (rc == 0) allocated(*out, size, SITE());
    return rc;
}

/* ---- C++'s operator new ----
 * libstdc++'s operator new calls malloc from libstdc++: every C++ block would be named heap:lib.
 * Wrapping the operators names a block by the code that called new. An operator that throws
 * (bad_alloc) leaves through the cleanup, which ends the "inside" state (built with -fexceptions).
 * Parameters: std::align_val_t is a size_t, std::nothrow_t const & a pointer. */
static void leave_new(int *unused) {
    (void)unused;
    inside_new--;
}

#define WRAP_NEW(symbol, params, args)                                                      \
    EXPORT void *symbol params {                                                            \
        static void *(*next) params;                                                        \
        uint64_t site = SITE();                                                             \
        if (next == NULL) next = (void *(*) params)dlsym(RTLD_NEXT, #symbol);               \
        if (next == NULL) abort(); /* only C++ code calls it, and libstdc++ defines it */   \
        void *p;                                                                            \
        {                                                                                   \
            int inside __attribute__((cleanup(leave_new))) = ++inside_new;                  \
            (void)inside;                                                                   \
            p = next args;                                                                  \
        }                                                                                   \
        return allocated(p, size, site);                                                    \
    }

WRAP_NEW(_Znwm, (size_t size), (size))
WRAP_NEW(_Znam, (size_t size), (size))
WRAP_NEW(_ZnwmRKSt9nothrow_t, (size_t size, const void *nothrow), (size, nothrow))
WRAP_NEW(_ZnamRKSt9nothrow_t, (size_t size, const void *nothrow), (size, nothrow))
WRAP_NEW(_ZnwmSt11align_val_t, (size_t size, size_t align), (size, align))
WRAP_NEW(_ZnamSt11align_val_t, (size_t size, size_t align), (size, align))
WRAP_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t size, size_t align, const void *nothrow), (size, align, nothrow))
WRAP_NEW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t size, size_t align, const void *nothrow), (size, align, nothrow))

/* ---- stacks ---- */

static void report_stack(void) {
    pthread_attr_t attr;
    void *low;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    if (pthread_attr_getstack(&attr, &low, &size) == 0)
        report(SMQ_EV_STACK, (uint64_t)(uintptr_t)low, (uint64_t)(uintptr_t)low + size, 0, 0, 0);
    pthread_attr_destroy(&attr);
}

/* Take the shim out of the LD_PRELOAD the program's children inherit: a child runs untraced (a
 * forked one) or is another program (exec), and a host program an aarch64 program starts (system's
 * /bin/sh) cannot load the aarch64 shim: its loader would print an error. The user's own entries
 * stay. In place, in the environment's own string: setenv would copy the environment (traced). */
static void leave_children_alone(void) {
    char *given = getenv("LD_PRELOAD");
    if (given == NULL) return;
    char *to = given;
    for (const char *at = given; *at != '\0';) {
        size_t length = strcspn(at, ": ");
        const char *slash = memrchr(at, '/', length);
        const char *name = slash != NULL ? slash + 1 : at;
        if (length > 0 && strncmp(name, "sectormon-shim-", 15) != 0) {
            if (to != given) *to++ = ':';
            memmove(to, at, length);
            to += length;
        }
        at += length;
        if (*at != '\0') at++;
    }
    *to = '\0';
    if (to == given) unsetenv("LD_PRELOAD");
}

/* The main thread's stack, without pthread_getattr_np: for the main thread it reads and parses
 * /proc/self/maps, some 20,000 traced accesses at every start. The stack grows down from where
 * the program's start left it (__libc_stack_end, the dynamic loader's) by at most its limit; above
 * that are only the arguments and the environment. */
extern void *__libc_stack_end;

static void report_main_stack(void) {
    struct rlimit limit;
    uint64_t page = 4096, end = ((uint64_t)(uintptr_t)__libc_stack_end + page - 1) & ~(page - 1);
    uint64_t size = getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur
                                                                                             : UINT64_C(8) << 20;
    if (end == 0) return;
    report(SMQ_EV_STACK, end > size ? end - size : 0, end, 0, 0, 0);
}

__attribute__((constructor)) static void shim_start(void) {
    report(SMQ_EV_HELLO, 0, 0, 0, 0, 0);
    report_main_stack();
    leave_children_alone();
}

struct start {
    void *(*routine)(void *);
    void *arg;
};

static void *started(void *raw) {
    struct start s = *(struct start *)raw;
    next_free(raw); /* the shim's own, never reported; looked up by pthread_create */
    report_stack();
    return s.routine(s.arg);
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*routine)(void *), void *arg) {
    static create_fn real;
    if (real == NULL) real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (real == NULL) return EAGAIN;
    NEXT_OR(next, malloc, return EAGAIN, return EAGAIN);
    NEXT_OR(release, free, return EAGAIN, return EAGAIN); /* for started() and a failed create */
    struct start *s = next(sizeof *s);
    if (s == NULL) return EAGAIN;
    s->routine = routine;
    s->arg = arg;
    int rc = real(thread, attr, started, s);
    if (rc != 0) release(s);
    return rc;
}

/* ---- marks ---- */

/* Send region (name, number): its name in events of 40 bytes, the last 32 with the number. */
static void mark(uint64_t kind, const char *name, size_t length, int number) {
    if (name == NULL) length = 0;
    if (length > SMQ_MARK_NAME_MAX) length = SMQ_MARK_NAME_MAX;
    uint64_t w[5];
    size_t at = 0;
    while (length - at > 32) {
        memset(w, 0, sizeof w);
        size_t piece = length - at - 32 < 40 ? length - at - 32 : 40;
        memcpy(w, name + at, piece);
        report(SMQ_EV_MARK_NAME, w[0], w[1], w[2], w[3], w[4]);
        at += piece;
    }
    memset(w, 0, sizeof w);
    if (length > at) memcpy(w, name + at, length - at);
    report(kind, (uint64_t)(uint32_t)number, w[0], w[1], w[2], w[3]);
}

static size_t c_length(const char *name) { return name == NULL ? 0 : strnlen(name, SMQ_MARK_NAME_MAX); }

/* A Fortran CHARACTER argument: its declared length, trailing blanks not part of the name. */
static size_t fortran_length(const char *name, size_t length) {
    if (name == NULL) return 0;
    while (length > 0 && name[length - 1] == ' ') length--;
    return length;
}

EXPORT void fapp_start(const char *name, int number, int level) {
    (void)level;
    mark(SMQ_EV_MARK_START, name, c_length(name), number);
}

EXPORT void fapp_stop(const char *name, int number, int level) {
    (void)level;
    mark(SMQ_EV_MARK_STOP, name, c_length(name), number);
}

EXPORT void fapp_start_(const char *name, const int *number, const int *level, size_t name_length) {
    (void)level;
    mark(SMQ_EV_MARK_START, name, fortran_length(name, name_length), number ? *number : 0);
}

EXPORT void fapp_stop_(const char *name, const int *number, const int *level, size_t name_length) {
    (void)level;
    mark(SMQ_EV_MARK_STOP, name, fortran_length(name, name_length), number ? *number : 0);
}

EXPORT void sectormon_region_begin(const char *name) { mark(SMQ_EV_MARK_START, name, c_length(name), 0); }
EXPORT void sectormon_region_end(const char *name) { mark(SMQ_EV_MARK_STOP, name, c_length(name), 0); }

EXPORT void sectormon_region_begin_numbered(const char *name, int number, int level) {
    (void)level;
    mark(SMQ_EV_MARK_START, name, c_length(name), number);
}

EXPORT void sectormon_region_end_numbered(const char *name, int number, int level) {
    (void)level;
    mark(SMQ_EV_MARK_STOP, name, c_length(name), number);
}

/* Marks are seen whenever the shim is loaded: the traced program counts as measured. */
EXPORT int sectormon_markers_active(void) { return 1; }

EXPORT void likwid_markerInit(void) {}
EXPORT void likwid_markerThreadInit(void) {}
EXPORT void likwid_markerNextGroup(void) {}
EXPORT void likwid_markerClose(void) {}
EXPORT int likwid_markerRegisterRegion(const char *tag) {
    (void)tag;
    return 0;
}
EXPORT int likwid_markerStartRegion(const char *tag) {
    mark(SMQ_EV_MARK_START, tag, c_length(tag), 0);
    return 0;
}
EXPORT int likwid_markerStopRegion(const char *tag) {
    mark(SMQ_EV_MARK_STOP, tag, c_length(tag), 0);
    return 0;
}
EXPORT int likwid_markerResetRegion(const char *tag) {
    (void)tag;
    return 0;
}
EXPORT void likwid_markerGetRegion(const char *tag, int *nr_events, double *events, double *time, int *count) {
    (void)tag;
    (void)events;
    if (nr_events != NULL) *nr_events = 0;
    if (time != NULL) *time = 0.0;
    if (count != NULL) *count = 0;
}
