/* libsectormon-markers: region markers (fapp, LIKWID, sectormon's own) that count exactly.
 *
 * A marked program links this library. Outside sectormon (no SECTORMON_MARKERS in the environment)
 * every call tests one flag and returns, so a marked program behaves as an unmarked one. Under
 * sectormon a thread's first marker asks sectormon, over the unix socket the environment names, for
 * its own counter groups: sectormon opens them on that thread alone (no inherit, so a region never
 * includes its children's counts) and passes the group leaders' file descriptors back (SCM_RIGHTS).
 * From then on each start and stop read()s the thread's groups in the thread itself, so a region's
 * counts are exactly what the thread counted between its two calls, with each group's
 * time_enabled/time_running for scaling under rotation.
 *
 * The deltas go to a table in shared memory (a file sectormon created, named in the environment):
 * one slot per (region, thread), written only by that thread, guarded by a sequence counter so
 * sectormon reads it at any time without ever blocking the program (odd: being written; the reader
 * retries). Bounds are fixed by the table's header; what does not fit is counted and flagged,
 * never written out of bounds. The layout is mirrored, field by field, by
 * sectormon/regions/layout.py (structs in markers_internal.h); sectormon_markers_layout() lets the
 * tests check both agree. This file is the machinery; api.c holds the entry points programs call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "markers_internal.h"

SM_HIDDEN _Atomic int sm_state = SM_UNKNOWN;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static struct sm_header *g_table;
static size_t g_table_bytes;
static int g_level;
static int g_rank = -1;
static _Atomic pid_t g_pid;
static char g_socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
static _Atomic uint32_t g_warned; /* overflow bits already said on stderr */
static __thread struct sm_thread *tls;

/* ---- table access ---- */

static struct sm_thread_record *record_at(uint32_t index) {
    return (struct sm_thread_record *)((char *)g_table + g_table->header_size + (size_t)index * g_table->thread_size);
}

SM_HIDDEN struct sm_slot *sm_slot_at(uint32_t index) {
    size_t threads = (size_t)g_table->max_threads * g_table->thread_size;
    return (struct sm_slot *)((char *)g_table + g_table->header_size + threads + (size_t)index * g_table->slot_size);
}

SM_HIDDEN void sm_write_begin(_Atomic uint32_t *seq) {
    uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);
    atomic_store_explicit(seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

SM_HIDDEN void sm_write_end(_Atomic uint32_t *seq) {
    uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);
    atomic_store_explicit(seq, s + 1, memory_order_release);
}

static void flag_overflow(uint32_t bit, const char *what) {
    atomic_fetch_or(&g_table->overflow, bit);
    if (!(atomic_fetch_or(&g_warned, bit) & bit))
        fprintf(stderr, "sectormon markers: %s\n", what);
}

/* ---- set-up: once per process, and again in a forked child ---- */

static int rank_from_environment(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
                                        "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = getenv(names[i]);
        if (value && *value)
            return atoi(value);
    }
    return -1;
}

static void thread_exit(void *state);

static void after_fork_in_child(void) {
    /* The child's copies of the parent's descriptors count the parent's thread: its first
     * marker asks for its own (thread_state compares the pid). */
    atomic_store(&g_pid, getpid());
}

static int map_table(const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= SM_HEADER_BYTES)
        map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    struct sm_header *h = map;
    size_t need = (size_t)h->header_size + (size_t)h->max_threads * h->thread_size + (size_t)h->max_slots * h->slot_size;
    if (h->magic != SM_MAGIC || h->version != SM_VERSION || h->header_size < sizeof(struct sm_header) ||
        h->thread_size != sizeof(struct sm_thread_record) || h->slot_size != sizeof(struct sm_slot) ||
        h->max_groups != SM_MAX_GROUPS || h->max_events != SM_MAX_EVENTS || need > (size_t)st.st_size) {
        munmap(map, (size_t)st.st_size);
        errno = EPROTO;
        return -1;
    }
    g_table = h;
    g_table_bytes = (size_t)st.st_size;
    return 0;
}

static void global_init(void) {
    const char *socket_path = getenv("SECTORMON_MARKERS");
    const char *table_path = getenv("SECTORMON_MARKERS_TABLE");
    if (!socket_path || !*socket_path || !table_path || !*table_path) {
        atomic_store(&sm_state, SM_INACTIVE);
        return;
    }
    if (strlen(socket_path) >= sizeof g_socket || map_table(table_path) != 0 ||
        pthread_key_create(&g_key, thread_exit) != 0) {
        fprintf(stderr, "sectormon markers: cannot use the region table %s (%s): regions are not counted\n",
                table_path, strerror(errno));
        atomic_store(&sm_state, SM_INACTIVE);
        return;
    }
    strcpy(g_socket, socket_path);
    const char *level = getenv("SECTORMON_REGION_LEVEL");
    g_level = level && *level ? atoi(level) : 0;
    g_rank = rank_from_environment();
    atomic_store(&g_pid, getpid());
    pthread_atfork(NULL, NULL, after_fork_in_child);
    atomic_store_explicit(&sm_state, SM_ACTIVE, memory_order_release);
}

SM_HIDDEN int sm_active(void) {
    int state = atomic_load_explicit(&sm_state, memory_order_acquire);
    if (__builtin_expect(state == SM_ACTIVE, 1))
        return 1;
    if (state == SM_INACTIVE)
        return 0;
    pthread_once(&g_once, global_init);
    return atomic_load_explicit(&sm_state, memory_order_acquire) == SM_ACTIVE;
}

/* ---- the handshake: this thread's counter groups from sectormon ---- */

static int read_group(struct sm_thread *t, unsigned g, uint64_t row[SM_ROW]);

static void learn_order(struct sm_thread *t, unsigned g, const uint64_t *buf) {
    for (unsigned k = 0; k < t->nevents[g]; k++) {
        uint64_t id = buf[3 + 2 * k + 1];
        t->order[g][k] = k;
        for (unsigned i = 0; i < t->nevents[g]; i++)
            if (t->ids[g][i] == id)
                t->order[g][k] = i;
    }
}

static void handshake(struct sm_thread *t) {
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0)
        return;
    struct timeval timeout = {SM_HANDSHAKE_SECONDS, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    /* "@name" is an abstract socket (no file, so nothing is left behind): a NUL, then the name. */
    size_t name_length = strlen(g_socket);
    memcpy(addr.sun_path, g_socket, name_length);
    if (g_socket[0] == '@')
        addr.sun_path[0] = '\0';
    socklen_t addr_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + name_length);
    struct sm_request request = {SM_MAGIC, t->tid, t->pid};
    struct sm_reply reply;
    union {
        char buf[CMSG_SPACE(sizeof(int) * SM_MAX_GROUPS)];
        struct cmsghdr align;
    } control;
    struct iovec iov = {&reply, sizeof reply};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    ssize_t got = -1;
    if (connect(s, (struct sockaddr *)&addr, addr_length) == 0 &&
        send(s, &request, sizeof request, MSG_NOSIGNAL) == (ssize_t)sizeof request)
        got = recvmsg(s, &msg, MSG_CMSG_CLOEXEC);
    close(s);
    int fds[SM_MAX_GROUPS];
    unsigned nfds = 0;
    if (got > 0) {
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            unsigned n = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (unsigned i = 0; i < n; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (nfds < SM_MAX_GROUPS)
                    fds[nfds++] = fd;
                else
                    close(fd);
            }
        }
    }
    int valid = got == (ssize_t)sizeof reply && reply.magic == SM_MAGIC && reply.status == 0 &&
                reply.ngroups == nfds && !(msg.msg_flags & MSG_CTRUNC);
    for (unsigned g = 0; valid && g < nfds; g++)
        valid = reply.nevents[g] >= 1 && reply.nevents[g] <= SM_MAX_EVENTS;
    if (!valid) {
        for (unsigned i = 0; i < nfds; i++)
            close(fds[i]);
        if (got == (ssize_t)sizeof reply && reply.status == 0)
            flag_overflow(SM_BAD_GROUPS, "sectormon sent counter groups this library cannot read: a thread is not counted");
        else
            flag_overflow(SM_NO_COUNTERS, "sectormon gave no counters to a thread: its regions count calls only");
        return;
    }
    t->ngroups = nfds;
    t->timed = (reply.flags & SM_ROTATED) != 0;
    for (unsigned g = 0; g < nfds; g++) {
        t->fds[g] = fds[g];
        t->nevents[g] = reply.nevents[g];
        memcpy(t->ids[g], reply.ids[g], sizeof t->ids[g]);
        for (unsigned k = 0; k < SM_MAX_EVENTS; k++)
            t->order[g][k] = k;
        uint64_t row[SM_ROW];
        read_group(t, g, row); /* learns the kernel's order of the events */
    }
}

static void publish_thread(struct sm_thread *t) {
    uint32_t index = atomic_fetch_add(&g_table->nthreads, 1);
    if (index >= g_table->max_threads) {
        flag_overflow(SM_FULL_THREADS, "more marking threads than the region table holds: the others are not listed");
        t->record = SM_NONE;
        return;
    }
    struct sm_thread_record *r = record_at(index);
    sm_write_begin(&r->seq);
    r->tid = t->tid;
    r->pid = t->pid;
    r->rank = g_rank;
    r->ngroups = t->ngroups;
    r->state = t->ngroups ? SM_THREAD_COUNTING : SM_THREAD_UNCOUNTED;
    for (unsigned g = 0; g < SM_MAX_GROUPS; g++)
        r->nevents[g] = g < t->ngroups ? t->nevents[g] : 0;
    sm_write_end(&r->seq);
    t->record = index;
}

static void forget(struct sm_thread *t) {
    for (unsigned g = 0; g < t->ngroups; g++)
        close(t->fds[g]);
    for (size_t i = 0; i < t->capacity; i++)
        free(t->entries[i].name);
    free(t->entries);
    free(t);
}

static void thread_exit(void *state) {
    struct sm_thread *t = state;
    if (t->record != SM_NONE && t->pid == atomic_load(&g_pid)) {
        struct sm_thread_record *r = record_at(t->record);
        sm_write_begin(&r->seq);
        r->state = SM_THREAD_EXITED;
        sm_write_end(&r->seq);
    }
    if (tls == t)
        tls = NULL;
    forget(t);
}

SM_HIDDEN struct sm_thread *sm_thread_state(void) {
    struct sm_thread *t = tls;
    pid_t pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
    if (__builtin_expect(t != NULL && t->pid == pid, 1))
        return t;
    if (t) /* inherited through fork: the parent's thread, not this one */
        forget(t);
    tls = NULL;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->capacity = 16;
    t->entries = calloc(t->capacity, sizeof *t->entries);
    if (!t->entries) {
        free(t);
        return NULL;
    }
    t->pid = pid;
    t->tid = (pid_t)syscall(SYS_gettid);
    handshake(t);
    publish_thread(t);
    tls = t;
    pthread_setspecific(g_key, t);
    return t;
}

/* ---- reading the groups ---- */

static int read_group(struct sm_thread *t, unsigned g, uint64_t row[SM_ROW]) {
    uint64_t buf[3 + 2 * SM_MAX_EVENTS];
    unsigned n = t->nevents[g];
    ssize_t want = (ssize_t)(sizeof(uint64_t) * (3 + 2 * n));
    if (read(t->fds[g], buf, (size_t)want) != want || buf[0] != n) {
        memset(row, 0, sizeof(uint64_t) * SM_ROW);
        return -1;
    }
    for (unsigned k = 0; k < n; k++) {
        if (t->ids[g][t->order[g][k]] != buf[3 + 2 * k + 1]) {
            learn_order(t, g, buf);
            break;
        }
    }
    for (unsigned k = 0; k < n; k++)
        row[t->order[g][k]] = buf[3 + 2 * k];
    row[SM_MAX_EVENTS] = buf[1];
    row[SM_MAX_EVENTS + 1] = buf[2];
    return 0;
}

static uint64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- regions of a thread: an open-addressing table keyed by name and number ---- */

static uint64_t hash_of(const char *name, size_t length, int number) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uint32_t)number;
    for (size_t i = 0; i < length; i++)
        h = (h ^ (unsigned char)name[i]) * 1099511628211ULL;
    return h;
}

static int grow(struct sm_thread *t) {
    size_t capacity = t->capacity * 2;
    struct sm_entry *entries = calloc(capacity, sizeof *entries);
    if (!entries)
        return -1;
    for (size_t i = 0; i < t->capacity; i++) {
        if (!t->entries[i].name)
            continue;
        size_t j = t->entries[i].hash & (capacity - 1);
        while (entries[j].name)
            j = (j + 1) & (capacity - 1);
        entries[j] = t->entries[i];
    }
    free(t->entries);
    t->entries = entries;
    t->capacity = capacity;
    return 0;
}

static struct sm_entry *lookup(struct sm_thread *t, const char *name, size_t length, int number) {
    uint64_t h = hash_of(name, length, number);
    size_t mask = t->capacity - 1;
    size_t i = h & mask;
    for (; t->entries[i].name; i = (i + 1) & mask) {
        struct sm_entry *e = &t->entries[i];
        if (e->hash == h && e->number == number && e->length == length && memcmp(e->name, name, length) == 0)
            return e;
    }
    if ((t->used + 1) * 2 > t->capacity) {
        if (grow(t) != 0)
            return NULL;
        return lookup(t, name, length, number);
    }
    struct sm_entry *e = &t->entries[i];
    e->name = malloc(length + 1);
    if (!e->name)
        return NULL;
    memcpy(e->name, name, length);
    e->name[length] = '\0';
    e->length = length;
    e->hash = h;
    e->number = number;
    e->slot = SM_LAZY;
    e->warned = 0;
    t->used++;
    return e;
}

SM_HIDDEN struct sm_slot *sm_slot_of(struct sm_thread *t, struct sm_entry *e) {
    if (e->slot == SM_LAZY) {
        uint32_t index = atomic_fetch_add(&g_table->nslots, 1);
        if (index >= g_table->max_slots) {
            flag_overflow(SM_FULL_SLOTS, "more regions x threads than the region table holds: the others are not counted");
            e->slot = SM_NONE;
        } else {
            struct sm_slot *s = sm_slot_at(index);
            size_t length = e->length;
            sm_write_begin(&s->seq);
            /* Touch the whole slot now: its first-write page faults stay out of the region. */
            memset(s->acc, 0, sizeof s->acc + sizeof s->start);
            s->thread = t->record;
            s->number = e->number;
            s->cpu = -1;
            s->tid = t->tid;
            s->pid = t->pid;
            if (length >= SM_NAME_BYTES) {
                length = SM_NAME_BYTES - 1;
                s->flags |= SM_LONG_NAME;
                atomic_fetch_or(&g_table->overflow, SM_LONG_NAME);
            }
            memcpy(s->name, e->name, length);
            s->name[length] = '\0';
            sm_write_end(&s->seq);
            e->slot = index;
        }
    }
    if (e->slot == SM_NONE) {
        atomic_fetch_add(&g_table->dropped, 1);
        return NULL;
    }
    return sm_slot_at(e->slot);
}

static void unpaired(struct sm_entry *e, const char *what) {
    atomic_fetch_add(&g_table->unpaired, 1);
    if (!e->warned) {
        e->warned = 1;
        fprintf(stderr, "sectormon markers: region \"%s\" (number %d) %s in thread %ld (ignored)\n", e->name,
                e->number, what, (long)syscall(SYS_gettid));
    }
}

SM_HIDDEN struct sm_entry *sm_entry_for(const char *name, size_t length, int number, int level, struct sm_thread **out) {
    if (!sm_active() || level > g_level)
        return NULL;
    struct sm_thread *t = sm_thread_state();
    if (!t)
        return NULL;
    if (!name) {
        name = "(null)";
        length = 6;
    }
    *out = t;
    return lookup(t, name, length, number);
}

SM_HIDDEN void sm_begin(const char *name, size_t length, int number, int level) {
    struct sm_thread *t;
    struct sm_entry *e = sm_entry_for(name, length, number, level, &t);
    if (!e)
        return;
    struct sm_slot *s = sm_slot_of(t, e);
    if (!s)
        return;
    if (s->open) {
        unpaired(e, "started again before its stop");
        return;
    }
    uint64_t rows[SM_MAX_GROUPS][SM_ROW];
    uint64_t wall = now_ns(CLOCK_MONOTONIC);
    for (unsigned g = 0; g < t->ngroups; g++)
        read_group(t, g, rows[g]);
    /* Where sectormon rotates the groups by enabling them, the thread's CPU time inside the region
     * is what each group's enabled time is a share of. Read after the groups here (and before them
     * at the stop), its span lies inside theirs: a group enabled throughout is never scaled. */
    uint64_t cpu = t->timed ? now_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    sm_write_begin(&s->seq);
    s->calls++;
    s->open = 1;
    s->start_wall_ns = wall;
    s->start_cpu_ns = cpu;
    memcpy(s->start, rows, sizeof rows[0] * t->ngroups);
    sm_write_end(&s->seq);
}

SM_HIDDEN void sm_end(const char *name, size_t length, int number, int level) {
    uint64_t rows[SM_MAX_GROUPS][SM_ROW];
    struct sm_thread *t = tls;
    uint64_t cpu = t && t->timed ? now_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    /* Read before anything else: the marker's own work stays out of the region. */
    int ready = t && t->pid == atomic_load_explicit(&g_pid, memory_order_relaxed) &&
                atomic_load_explicit(&sm_state, memory_order_relaxed) == SM_ACTIVE;
    if (ready && level > g_level)
        return;
    for (unsigned g = 0; ready && g < t->ngroups; g++)
        read_group(t, g, rows[g]);
    uint64_t wall = now_ns(CLOCK_MONOTONIC);
    struct sm_entry *e = sm_entry_for(name, length, number, level, &t);
    if (!e)
        return;
    if (e->slot == SM_LAZY) {
        unpaired(e, "stopped without a start");
        return;
    }
    struct sm_slot *s = sm_slot_of(t, e);
    if (!s)
        return;
    if (!s->open) {
        unpaired(e, "stopped without a start");
        return;
    }
    if (!ready) /* the thread's groups came with this call's lookup: nothing was open to read */
        memcpy(rows, s->start, sizeof rows[0] * t->ngroups);
    sm_write_begin(&s->seq);
    for (unsigned g = 0; g < t->ngroups; g++)
        for (unsigned k = 0; k < SM_ROW; k++)
            s->acc[g][k] += rows[g][k] - s->start[g][k];
    s->wall_ns += wall - s->start_wall_ns;
    s->cpu_ns += ready ? cpu - s->start_cpu_ns : 0;
    s->open = 0;
    s->cpu = sched_getcpu();
    sm_write_end(&s->seq);
}

SM_HIDDEN size_t sm_c_length(const char *name) {
    return name ? strnlen(name, 4096) : 0;
}

/* Fortran passes blank-padded text: the name ends at its last non-blank character. */
SM_HIDDEN size_t sm_fortran_length(const char *name, size_t length) {
    while (length > 0 && name[length - 1] == ' ')
        length--;
    return length;
}
