/* sectormon's QEMU TCG plugin: every load and store of the traced program, per thread, handed to
 * sectormon in batches through a shared-memory ring (ring.h), with the thread's instruction count.
 *
 * Loaded by `sectormon sim -- CMD` as `qemu-<arch> -plugin <this>.so,ring_fd=N`: QEMU inherits the
 * ring's descriptor N, and the plugin maps it and closes it before the program starts, so the
 * program never sees it.
 * Each vCPU (a guest thread in user mode) fills its own buffer without a lock; a full buffer, the
 * thread's exit (with an event saying it ended) and QEMU's exit copy it into the ring under one
 * mutex. A full ring makes the thread wait for sectormon (back pressure: nothing is lost); a
 * consumer that has gone makes it drop. A forked child (same plugin state, same ring) traces nothing: its batches would interleave
 * with the parent's.
 * The preloaded shim (shim.c) reports heap blocks, stacks and marker calls with a system call no
 * kernel has (SMQ_SYSCALL): the plugin sees it before QEMU answers ENOSYS and puts it in the
 * thread's buffer as an event (ring.h), in order with the thread's accesses. Once the program has
 * more than one thread, the buffer is handed over at once after each event, and a thread's
 * buffer before it creates another (clone): so an event reaches sectormon before any access
 * another thread makes after it.
 *
 * Debian's qemu-user 7.2 ships no plugin header, so the declarations of the documented plugin API
 * (include/qemu/qemu-plugin.h, API version 1) that this file uses are written out below.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

/* ---- The QEMU plugin API used here (qemu-plugin.h, QEMU 7.2) --------------------------------- */
#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
typedef struct qemu_info_t {
    const char *target_name; /* the first member; the others are not read here */
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                                          void *userdata);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num, uint64_t a1,
                                              uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                                              uint64_t a7, uint64_t a8);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_cb_t cb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_exit_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
void qemu_plugin_outs(const char *string);
uint64_t qemu_plugin_start_code(void);
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;
/* ---------------------------------------------------------------------------------------------- */

#define MAX_VCPUS SMQ_MAX_VCPUS /* vCPU indexes past this are counted in the ring's `dropped` */

struct vcpu {
    uint64_t n;     /* accesses buffered */
    uint64_t insns; /* instructions since the last batch */
    uint64_t sve_insns, sve_accesses; /* since the last batch: SVE memory instructions, their accesses */
    uint64_t words[SMQ_BATCH];
};

static struct vcpu *vcpus[MAX_VCPUS];
static unsigned int vcpus_seen; /* vCPU slots made so far: more than one, events are handed over at once */
static struct smq_header *ring;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t owner;
static int aarch64;

static struct vcpu *vcpu_of(unsigned int index) {
    if (index >= MAX_VCPUS) return NULL;
    struct vcpu *v = vcpus[index];
    if (v == NULL) { /* only the vCPU's own thread reaches its slot */
        v = calloc(1, sizeof *v);
        vcpus[index] = v;
        if (v != NULL) __atomic_fetch_add(&vcpus_seen, 1, __ATOMIC_RELAXED);
    }
    return v;
}

static void wait_a_little(void) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

/* Copy vCPU `index`'s buffer into the ring as one batch (waits while the ring is full). */
static void flush(unsigned int index, struct vcpu *v) {
    if (v->n == 0 && v->insns == 0) return;
    if (getpid() != owner) { /* a forked child: its accesses are not the traced process's */
        v->n = 0;
        v->insns = 0;
        return;
    }
    __atomic_fetch_add(&ring->sve_insns, v->sve_insns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ring->sve_accesses, v->sve_accesses, __ATOMIC_RELAXED);
    v->sve_insns = v->sve_accesses = 0;
    uint64_t need = v->n + 2, size = ring->words, mask = size - 1;
    pthread_mutex_lock(&ring_lock);
    for (;;) {
        uint64_t tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
        if (ring->head + need - tail <= size) break;
        if (__atomic_load_n(&ring->consumer_gone, __ATOMIC_ACQUIRE)) {
            __atomic_fetch_add(&ring->dropped, v->n, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&ring_lock);
            v->n = 0;
            v->insns = 0;
            return;
        }
        wait_a_little();
    }
    uint64_t *data = smq_data(ring), at = ring->head;
    data[at & mask] = ((uint64_t)index << 32) | v->n;
    data[(at + 1) & mask] = v->insns;
    at += 2;
    uint64_t first = size - (at & mask); /* words before the data area wraps */
    if (first >= v->n) {
        memcpy(data + (at & mask), v->words, v->n * sizeof(uint64_t));
    } else {
        memcpy(data + (at & mask), v->words, first * sizeof(uint64_t));
        memcpy(data, v->words + first, (v->n - first) * sizeof(uint64_t));
    }
    __atomic_store_n(&ring->head, at + v->n, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ring_lock);
    v->n = 0;
    v->insns = 0;
}

static void on_mem(unsigned int index, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    struct vcpu *v = vcpu_of(index);
    if (v == NULL) {
        __atomic_fetch_add(&ring->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    if (udata != NULL) v->sve_accesses += 1;
    uint64_t word = (vaddr & SMQ_ADDR_MASK) | ((uint64_t)qemu_plugin_mem_size_shift(info) << SMQ_SIZE_SHIFT);
    if (qemu_plugin_mem_is_store(info)) word |= SMQ_STORE;
    v->words[v->n++] = word;
    if (v->n == SMQ_BATCH) flush(index, v);
}

static void on_syscall(qemu_plugin_id_t id, unsigned int index, int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                       uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8) {
    (void)id;
    (void)a7;
    (void)a8;
    if (num != SMQ_SYSCALL) {
        /* A new thread: what this one did before, its events included, reaches the ring first. */
        if (num == (aarch64 ? 220 : 56) || num == 435) { /* clone, clone3 */
            struct vcpu *v = vcpu_of(index);
            if (v != NULL) flush(index, v);
        }
        return;
    }
    if ((a1 & 0xff) == SMQ_EV_END) return; /* the plugin's own event: a program cannot say a thread ended */
    struct vcpu *v = vcpu_of(index);
    if (v == NULL) {
        __atomic_fetch_add(&ring->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    if (v->n + SMQ_EVENT_WORDS > SMQ_BATCH) flush(index, v);
    uint64_t *w = v->words + v->n;
    w[0] = SMQ_EVENT | (a1 & 0xff);
    w[1] = a2;
    w[2] = a3;
    w[3] = a4;
    w[4] = a5;
    w[5] = a6;
    v->n += SMQ_EVENT_WORDS;
    /* With one thread its buffer keeps the order; with more, another thread may read the block
     * next, so the event must not wait behind this thread's next 4,096 accesses. */
    if (__atomic_load_n(&vcpus_seen, __ATOMIC_RELAXED) > 1 || v->n == SMQ_BATCH) flush(index, v);
}

static void on_tb_exec(unsigned int index, void *udata) {
    struct vcpu *v = vcpu_of(index);
    if (v != NULL) v->insns += (uint64_t)(uintptr_t)udata;
}

static void on_sve_exec(unsigned int index, void *udata) {
    (void)udata;
    struct vcpu *v = vcpu_of(index);
    if (v != NULL) v->sve_insns += 1;
}

/* Whether an aarch64 instruction is in SVE's memory groups (bits 28:25 = 0010, bits 31:29 = 1xx:
 * gathers, contiguous loads, stores, LDR/STR of vectors, prefetches). QEMU 7.2 reports no
 * accesses to plugins for its contiguous loads and stores: counting these instructions lets
 * sectormon say so instead of showing counts that silently miss them. */
static int is_sve_memory(const struct qemu_plugin_insn *insn) {
    if (qemu_plugin_insn_size(insn) != 4) return 0;
    const uint8_t *b = qemu_plugin_insn_data(insn);
    uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return ((w >> 25) & 0xf) == 0x2 && (w >> 29) >= 4;
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    /* Where the program was loaded (a PIE's bias), read once a vCPU exists: its global variables
     * are found at ELF address + bias. Not the entry point: with an ELF interpreter, QEMU's is
     * the interpreter's. */
    if (ring->start_code == 0) __atomic_store_n(&ring->start_code, qemu_plugin_start_code(), __ATOMIC_RELEASE);
    size_t n = qemu_plugin_tb_n_insns(tb);
    /* Instructions per executed block: a block left early (a fault) counts in full. */
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        int sve = aarch64 && is_sve_memory(insn);
        qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                         sve ? (void *)1 : NULL);
        if (sve) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_sve_exec, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
}

/* A guest thread's end: QEMU 7.2's linux-user calls this on the exiting thread itself, at its exit
 * system call, for every thread but the program's last (whose end is the ring's close). The thread's
 * buffer goes over with an SMQ_EV_END event after its last access, before QEMU can give the index
 * to a thread created later (it does so under the lock this callback runs in). */
static void on_vcpu_exit(qemu_plugin_id_t id, unsigned int index) {
    (void)id;
    if (index >= MAX_VCPUS || vcpus[index] == NULL) return;
    struct vcpu *v = vcpus[index];
    if (v->n + SMQ_EVENT_WORDS > SMQ_BATCH) flush(index, v);
    uint64_t *w = v->words + v->n;
    w[0] = SMQ_EVENT | SMQ_EV_END;
    memset(w + 1, 0, SMQ_EVENT_ARGS * sizeof(uint64_t));
    v->n += SMQ_EVENT_WORDS;
    flush(index, v);
}

static void on_qemu_exit(qemu_plugin_id_t id, void *udata) {
    (void)id;
    (void)udata;
    if (getpid() != owner) return;
    for (unsigned int i = 0; i < MAX_VCPUS; i++) {
        if (vcpus[i] != NULL) flush(i, vcpus[i]);
    }
    __atomic_store_n(&ring->closed, 1, __ATOMIC_RELEASE);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    aarch64 = info != NULL && info->target_name != NULL && strcmp(info->target_name, "aarch64") == 0;
    int fd = -1;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "ring_fd=", 8) == 0) fd = atoi(argv[i] + 8);
    }
    if (fd < 0) {
        qemu_plugin_outs("sectormon plugin: give ring_fd=N (sectormon sim -- CMD starts it so)\n");
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct smq_header)) {
        qemu_plugin_outs("sectormon plugin: ring_fd is not sectormon's ring\n");
        return -1;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        qemu_plugin_outs("sectormon plugin: cannot map the ring\n");
        return -1;
    }
    ring = map;
    if (ring->magic != SMQ_MAGIC || ring->version != SMQ_VERSION ||
        (size_t)st.st_size < sizeof(struct smq_header) + ring->words * sizeof(uint64_t)) {
        qemu_plugin_outs("sectormon plugin: the ring is not sectormon's (version mismatch?)\n");
        return -1;
    }
    owner = getpid();
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_vcpu_exit_cb(id, on_vcpu_exit);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
    return 0;
}
