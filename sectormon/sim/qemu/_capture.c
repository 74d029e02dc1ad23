/* The consumer side of the QEMU plugin's ring (ring.h), with the reader (reader.c) the module
 * sectormon.sim.qemu._capture: the compiled path that keeps every traced access out of Python.
 *
 * Capture: drains the ring (the GIL released while it waits and works) and writes, per traced
 * thread (vCPU), its accesses as run-length records to an anonymous temporary file: consecutive
 * accesses to one 256-byte line become one record (first address, n, write) - only the first can
 * miss, as in sectormon/sim/stream.py, and the record belongs to the data object of its first
 * access - and each batch's instruction count a record of its own. An access
 * that straddles two lines is an access to each. The files are the capture: a run of the model,
 * or every run of the advisor, reads them again.
 * Events (ring.h) come in order with the accesses. Heap blocks and stacks go to one file of the
 * whole program's events, in the order the ring brought them (a thread's events end its batch,
 * so another thread's later accesses come after them); a thread's file gets a sync record (the
 * events so far) wherever that list has grown since its previous batch, and after its own
 * event. The capture counts the allocation sites (a hash table: sites are few, blocks many) and
 * which threads reported a stack, so nothing grows in memory with the number of blocks. Marker
 * calls are the thread's own: they go, as event records, into its file. A thread's end (the
 * plugin's SMQ_EV_END) is an end record in its file; a later thread QEMU gives the same vCPU index
 * writes on after it.
 *
 * The record files' format is records.h; their reader is reader.c (the module's Reader type).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "marks.h"
#include "ring.h"
#include "records.h"

/* A marked region a thread entered, and how often (the summary's regions per thread). */
typedef struct {
    MarkName name;
    int32_t number;
    long long calls;
} Region;

#define MAX_REGIONS 1024 /* per thread: more distinct regions are counted, not listed */

typedef struct {
    FILE *file;
    Stored run; /* the record being grown (n == 0: none) */
    long long records, accesses, instructions;
    uint64_t synced; /* the program's events this thread's file has a sync record for */
    int seen, stack; /* stack: it reported its stack */
    MarkName name; /* the next mark's name so far */
    Region *regions;
    size_t nregions;
    long long unlisted; /* region entries past MAX_REGIONS */
} Vcpu;

typedef struct {
    uint64_t site, blocks, bytes;
    int used;
} Site;

typedef struct {
    PyObject_HEAD
    struct smq_header *ring;
    size_t map_size;
    Vcpu *vcpus;
    Py_ssize_t nvcpus;
    long long max_records, records, truncated;
    int failed_errno;
    FILE *events; /* the program's heap and stack events, in order */
    uint64_t nevents;
    Site *sites; /* open addressing by site; capacity a power of two, at most half full */
    size_t nsites, cap_sites;
    int shim; /* the shim said it is loaded */
} Capture;

static void capture_release(Capture *c) {
    if (c->ring != NULL) {
        __atomic_store_n(&c->ring->consumer_gone, 1, __ATOMIC_RELEASE);
        munmap(c->ring, c->map_size);
        c->ring = NULL;
    }
    for (Py_ssize_t i = 0; i < c->nvcpus; i++) {
        if (c->vcpus[i].file != NULL) fclose(c->vcpus[i].file);
        PyMem_RawFree(c->vcpus[i].regions);
    }
    PyMem_RawFree(c->vcpus);
    c->vcpus = NULL;
    c->nvcpus = 0;
    if (c->events != NULL) fclose(c->events);
    c->events = NULL;
    c->nevents = 0;
    PyMem_RawFree(c->sites);
    c->sites = NULL;
    c->nsites = c->cap_sites = 0;
    c->shim = 0;
}

static void Capture_dealloc(Capture *c) {
    capture_release(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* Capture(fd, words, max_records): initialise the ring in the memfd `fd` (sized by the caller
 * to hold the header and `words` data words) and map it. */
static int Capture_init(Capture *c, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fd", "words", "max_records", NULL};
    int fd;
    unsigned long long words;
    long long max_records;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iKL", kwlist, &fd, &words, &max_records)) return -1;
    if (words < 2 * SMQ_BATCH || (words & (words - 1))) {
        PyErr_SetString(PyExc_ValueError, "the ring's words must be a power of two of at least two batches");
        return -1;
    }
    capture_release(c);
    c->map_size = sizeof(struct smq_header) + words * sizeof(uint64_t);
    void *map = mmap(NULL, c->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    c->ring = map;
    memset(c->ring, 0, sizeof *c->ring);
    c->ring->magic = SMQ_MAGIC;
    c->ring->version = SMQ_VERSION;
    c->ring->words = words;
    c->max_records = max_records;
    c->records = c->truncated = 0;
    c->failed_errno = 0;
    /* The events file from the start: a live reader holds its descriptor before any event. */
    if ((c->events = tmpfile()) == NULL) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    setvbuf(c->events, NULL, _IOFBF, 1 << 16);
    return 0;
}

static Vcpu *vcpu_at(Capture *c, Py_ssize_t index) {
    if (index >= c->nvcpus) {
        Py_ssize_t n = index + 16;
        Vcpu *grown = PyMem_RawRealloc(c->vcpus, (size_t)n * sizeof(Vcpu));
        if (grown == NULL) return NULL;
        memset(grown + c->nvcpus, 0, (size_t)(n - c->nvcpus) * sizeof(Vcpu));
        c->vcpus = grown;
        c->nvcpus = n;
    }
    Vcpu *v = c->vcpus + index;
    if (v->file == NULL) {
        v->file = tmpfile();
        if (v->file == NULL) return NULL;
        setvbuf(v->file, NULL, _IOFBF, 1 << 20);
    }
    v->seen = 1;
    return v;
}

static void store(Capture *c, Vcpu *v, const Stored *r) {
    if (c->records >= c->max_records) {
        if (r->kind != KIND_INSNS) c->truncated += r->n;
        return;
    }
    if (fwrite(r, sizeof *r, 1, v->file) != 1 && !c->failed_errno) c->failed_errno = errno ? errno : EIO;
    c->records += 1;
    v->records += 1;
}

/* Event and sync records are kept past the cap: they are few, and the accesses kept need them. */
static void store_always(Capture *c, Vcpu *v, const Stored *r) {
    if (fwrite(r, sizeof *r, 1, v->file) != 1 && !c->failed_errno) c->failed_errno = errno ? errno : EIO;
    v->records += 1;
}

static void end_run(Capture *c, Vcpu *v) {
    if (v->run.n) store(c, v, &v->run);
    v->run.n = 0;
}

static void sync_events(Capture *c, Vcpu *v) {
    if (v->synced == c->nevents) return;
    end_run(c, v);
    Stored r = {(int64_t)c->nevents, 0, KIND_SYNC};
    store_always(c, v, &r);
    v->synced = c->nevents;
}

/* A marker event: at a start, count the region's entry. -1: out of memory. */
static int count_mark(Vcpu *v, uint64_t kind, const uint64_t *args) {
    if (!mark_name_add(&v->name, kind, args)) return 0;
    MarkName name = v->name;
    v->name.length = 0;
    if (kind != SMQ_EV_MARK_START) return 0;
    int32_t number = mark_number(args);
    for (size_t i = 0; i < v->nregions; i++) {
        Region *r = v->regions + i;
        if (r->number == number && r->name.length == name.length &&
            memcmp(r->name.bytes, name.bytes, name.length) == 0) {
            r->calls++;
            return 0;
        }
    }
    if (v->nregions == MAX_REGIONS) {
        v->unlisted++;
        return 0;
    }
    if ((v->nregions & (v->nregions - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to twice */
        Region *grown = PyMem_RawRealloc(v->regions, (v->nregions ? 2 * v->nregions : 1) * sizeof(Region));
        if (grown == NULL) return -1;
        v->regions = grown;
    }
    v->regions[v->nregions++] = (Region){name, number, 1};
    return 0;
}

/* Count a block of `bytes` at `site`. -1: out of memory. */
static int count_site(Capture *c, uint64_t site, uint64_t bytes) {
    if (2 * (c->nsites + 1) > c->cap_sites) {
        size_t n = c->cap_sites ? 2 * c->cap_sites : 256;
        Site *grown = PyMem_RawCalloc(n, sizeof(Site));
        if (grown == NULL) return -1;
        for (size_t i = 0; i < c->cap_sites; i++) {
            if (!c->sites[i].used) continue;
            size_t at = (size_t)(c->sites[i].site * UINT64_C(0x9e3779b97f4a7c15) >> 32) & (n - 1);
            while (grown[at].used) at = (at + 1) & (n - 1);
            grown[at] = c->sites[i];
        }
        PyMem_RawFree(c->sites);
        c->sites = grown;
        c->cap_sites = n;
    }
    size_t mask = c->cap_sites - 1, at = (size_t)(site * UINT64_C(0x9e3779b97f4a7c15) >> 32) & mask;
    while (c->sites[at].used && c->sites[at].site != site) at = (at + 1) & mask;
    Site *s = c->sites + at;
    if (!s->used) {
        *s = (Site){site, 0, 0, 1};
        c->nsites++;
    }
    s->blocks++;
    s->bytes = bytes > UINT64_MAX - s->bytes ? UINT64_MAX : s->bytes + bytes;
    return 0;
}

/* The thread on this vCPU ended: its last run of accesses, then an end record. A mark's name cut
 * short by the end is dropped: the index's next thread starts its own. Its first batch starts
 * with a sync record (synced: none yet), so a live reader starting there has the blocks allocated
 * before it. */
static void thread_ended(Capture *c, Vcpu *v) {
    end_run(c, v);
    Stored r = {0, 0, KIND_END};
    store_always(c, v, &r);
    v->name.length = 0;
    v->synced = UINT64_MAX;
}

/* One event of vCPU `vcpu` (kind, args: SMQ_EVENT_ARGS words). -1: out of memory. */
static int event(Capture *c, Vcpu *v, uint64_t vcpu, uint64_t kind, const uint64_t *args) {
    switch (kind) {
    case SMQ_EV_ALLOC:
    case SMQ_EV_FREE:
    case SMQ_EV_STACK:
    {
        Event e = {kind | vcpu << 8, args[0], args[1], args[2]};
        if (fwrite(&e, sizeof e, 1, c->events) != 1 && !c->failed_errno) c->failed_errno = errno ? errno : EIO;
        c->nevents++;
        if (kind == SMQ_EV_ALLOC && count_site(c, args[2], args[1]) < 0) return -1;
        if (kind == SMQ_EV_STACK) v->stack = 1;
        sync_events(c, v);
        return 0;
    }
    case SMQ_EV_MARK_NAME:
    case SMQ_EV_MARK_START:
    case SMQ_EV_MARK_STOP: {
        end_run(c, v);
        Stored r = {(int64_t)kind, SMQ_EVENT_ARGS, KIND_EVENT};
        store_always(c, v, &r);
        for (int i = 0; i < SMQ_EVENT_ARGS; i++) {
            Stored a = {(int64_t)args[i], 0, KIND_ARG};
            store_always(c, v, &a);
        }
        return count_mark(v, kind, args);
    }
    case SMQ_EV_HELLO:
        c->shim = 1;
        return 0;
    case SMQ_EV_END:
        thread_ended(c, v);
        return 0;
    default: /* not one the shim sends: a program making our system call itself */
        return 0;
    }
}

static inline void access_line(Capture *c, Vcpu *v, uint64_t addr, int write) {
    if (v->run.n && (uint64_t)v->run.a >> LINE_SHIFT == addr >> LINE_SHIFT) {
        v->run.n += 1;
        v->run.kind |= write;
        return;
    }
    if (v->run.n) store(c, v, &v->run);
    v->run.a = (int64_t)addr;
    v->run.n = 1;
    v->run.kind = write;
}

/* A batch's instruction count (none: no record). */
static void store_instructions(Capture *c, Vcpu *v, uint64_t insns) {
    if (!insns) return;
    end_run(c, v);
    Stored r = {(int64_t)insns, 0, KIND_INSNS};
    store(c, v, &r);
    v->instructions += (long long)insns;
}

/* One batch: its header words are at data[at], its accesses follow (wrapping at mask). -1 when
 * it cannot be kept (no memory or file), -2 when it is not a batch the plugin writes: the guest
 * shares QEMU's address space, so a program that scribbles over the ring must not crash sectormon. */
static int batch(Capture *c, const uint64_t *data, uint64_t at, uint64_t mask) {
    uint64_t head = data[at & mask];
    uint64_t n = head & 0xffffffffu, insns = data[(at + 1) & mask];
    if (n > SMQ_BATCH || (head >> 32) >= SMQ_MAX_VCPUS) return -2;
    Vcpu *v = vcpu_at(c, (Py_ssize_t)(head >> 32));
    if (v == NULL) return -1;
    sync_events(c, v);
    at += 2;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t w = data[(at + i) & mask];
        if (w & SMQ_EVENT) {
            if (i + SMQ_EVENT_ARGS >= n) return -2; /* an event cut short */
            if ((w & 0xff) == SMQ_EV_END) { /* the batch's instructions are the ended thread's */
                store_instructions(c, v, insns);
                insns = 0;
            }
            uint64_t args[SMQ_EVENT_ARGS];
            for (int k = 0; k < SMQ_EVENT_ARGS; k++) args[k] = data[(at + i + 1 + (uint64_t)k) & mask];
            if (event(c, v, head >> 32, w & 0xff, args) < 0) return -1;
            i += SMQ_EVENT_ARGS;
            continue;
        }
        uint64_t addr = w & SMQ_ADDR_MASK, size = (uint64_t)1 << ((w >> SMQ_SIZE_SHIFT) & 15);
        int write = (w & SMQ_STORE) != 0;
        uint64_t last = (addr + size - 1) >> LINE_SHIFT;
        int straddles = last != addr >> LINE_SHIFT;
        access_line(c, v, addr, write);
        if (straddles) access_line(c, v, last << LINE_SHIFT, write);
        v->accesses += 1 + straddles;
    }
    store_instructions(c, v, insns);
    return 0;
}

/* pump(timeout): wait up to `timeout` seconds for batches and consume all there are. Returns the
 * words consumed, 0 when none came, -1 once the plugin has closed the ring and it is empty. */
static PyObject *Capture_pump(Capture *c, PyObject *arg) {
    double timeout = PyFloat_AsDouble(arg);
    if (timeout == -1.0 && PyErr_Occurred()) return NULL;
    if (c->ring == NULL) {
        PyErr_SetString(PyExc_ValueError, "the capture is closed");
        return NULL;
    }
    struct smq_header *ring = c->ring;
    const uint64_t *data = smq_data(ring);
    const uint64_t mask = ring->words - 1;
    long long consumed = 0;
    int failed = 0, closed = 0;  /* failed: batch()'s -1 or -2 */
    Py_BEGIN_ALLOW_THREADS
    struct timespec start, now, nap = {0, 200000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        uint64_t tail = ring->tail;
        uint64_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
        if (head != tail) {
            if (head - tail > ring->words) {
                failed = -2;
                break;
            }
            while (tail != head) {
                uint64_t n = data[tail & mask] & 0xffffffffu;
                int done = n + 2 <= head - tail ? batch(c, data, tail, mask) : -2;
                if (done < 0) {
                    failed = done;
                    break;
                }
                tail += n + 2;
                consumed += (long long)n + 2;
            }
            __atomic_store_n(&ring->tail, tail, __ATOMIC_RELEASE);
            if (failed) break;
            continue; /* more may have come meanwhile */
        }
        if (consumed) break;
        if (__atomic_load_n(&ring->closed, __ATOMIC_ACQUIRE)) {
            /* closed is set after the last batch's head: one more look finds anything left */
            if (__atomic_load_n(&ring->head, __ATOMIC_ACQUIRE) == tail) closed = 1;
            if (closed) break;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) >= timeout) break;
        nanosleep(&nap, NULL);
    }
    Py_END_ALLOW_THREADS
    if (failed == -2) {
        PyErr_SetString(PyExc_ValueError, "the plugin's ring holds no valid batch (the program wrote over it?)");
        return NULL;
    }
    if (failed) {
        PyErr_SetString(PyExc_OSError, "the capture could not keep a traced thread (out of memory or temporary files)");
        return NULL;
    }
    return PyLong_FromLongLong(closed ? -1 : consumed);
}

/* threads(): after the last pump, every traced thread in vCPU order as (vcpu, fd, records,
 * accesses, instructions); the fd is a new descriptor of its records file, owned by the caller. */
static PyObject *Capture_threads(Capture *c, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < c->nvcpus; i++) {
        Vcpu *v = c->vcpus + i;
        if (!v->seen) continue;
        end_run(c, v);
        if (fflush(v->file) != 0 && !c->failed_errno) c->failed_errno = errno ? errno : EIO;
        if (c->failed_errno) {
            Py_DECREF(out);
            errno = c->failed_errno;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        int fd = dup(fileno(v->file));
        if (fd < 0) {
            Py_DECREF(out);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        PyObject *row = Py_BuildValue("(niLLL)", i, fd, v->records, v->accesses, v->instructions);
        if (row == NULL || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            close(fd);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(row);
    }
    return out;
}

/* events(): a new descriptor of the program's heap and stack events file (packed uint64
 * kind | vcpu << 8, a, b, c), owned by the caller; -1 when there were none. */
static PyObject *Capture_events(Capture *c, PyObject *Py_UNUSED(ignored)) {
    if (c->events == NULL || c->nevents == 0) return PyLong_FromLong(-1);
    if (fflush(c->events) != 0 && !c->failed_errno) c->failed_errno = errno ? errno : EIO;
    if (c->failed_errno) {
        errno = c->failed_errno;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    int fd = dup(fileno(c->events));
    return fd < 0 ? PyErr_SetFromErrno(PyExc_OSError) : PyLong_FromLong(fd);
}

/* live_events(): a new descriptor of the events file as it grows (sync() writes it out before the
 * threads' files, so the events a thread's sync record counts are there when it is read). */
static PyObject *Capture_live_events(Capture *c, PyObject *Py_UNUSED(ignored)) {
    if (c->events == NULL) {
        PyErr_SetString(PyExc_ValueError, "the capture is closed");
        return NULL;
    }
    int fd = dup(fileno(c->events));
    return fd < 0 ? PyErr_SetFromErrno(PyExc_OSError) : PyLong_FromLong(fd);
}

static int by_site(const void *a, const void *b) {
    uint64_t x = ((const Site *)a)->site, y = ((const Site *)b)->site;
    return (x > y) - (x < y);
}

/* sites(): the distinct call sites of the heap blocks, sorted, as (site, blocks, bytes). */
static PyObject *Capture_sites(Capture *c, PyObject *Py_UNUSED(ignored)) {
    Site *sorted = PyMem_RawMalloc((c->nsites ? c->nsites : 1) * sizeof(Site));
    if (sorted == NULL) return PyErr_NoMemory();
    size_t n = 0;
    for (size_t i = 0; i < c->cap_sites; i++)
        if (c->sites[i].used) sorted[n++] = c->sites[i];
    qsort(sorted, n, sizeof(Site), by_site);
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out != NULL && i < n; i++) {
        PyObject *row = Py_BuildValue("(KKK)", (unsigned long long)sorted[i].site, (unsigned long long)sorted[i].blocks,
                                      (unsigned long long)sorted[i].bytes);
        if (row == NULL || PyList_Append(out, row) < 0) Py_CLEAR(out);
        Py_XDECREF(row);
    }
    PyMem_RawFree(sorted);
    return out;
}

/* regions(): per traced thread in vCPU order, the regions it entered: (vcpu, name, number, calls),
 * and (vcpu, None, 0, entries) for the entries of regions past the list's limit. */
static PyObject *Capture_regions(Capture *c, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < c->nvcpus; i++) {
        Vcpu *v = c->vcpus + i;
        for (size_t k = 0; out != NULL && k <= v->nregions; k++) {
            PyObject *row;
            if (k < v->nregions) {
                Region *r = v->regions + k;
                PyObject *name = PyUnicode_DecodeUTF8(r->name.bytes, (Py_ssize_t)r->name.length, "backslashreplace");
                row = name ? Py_BuildValue("(nNiL)", i, name, (int)r->number, r->calls) : NULL;
            } else if (v->unlisted) {
                row = Py_BuildValue("(nOiL)", i, Py_None, 0, v->unlisted);
            } else {
                continue;
            }
            if (row == NULL || PyList_Append(out, row) < 0) Py_CLEAR(out);
            Py_XDECREF(row);
        }
    }
    return out;
}

/* stacks(): the vCPUs that reported their stack, in order. */
static PyObject *Capture_stacks(Capture *c, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < c->nvcpus; i++) {
        if (!c->vcpus[i].stack) continue;
        PyObject *vcpu = PyLong_FromSsize_t(i);
        if (vcpu == NULL || PyList_Append(out, vcpu) < 0) Py_CLEAR(out);
        Py_XDECREF(vcpu);
    }
    return out;
}

/* sync(): while the program runs, write the events so far and then every traced thread's records
 * so far to its file, so a live reader sees them (the run being grown stays: it may still grow),
 * and list the threads seen so far by vCPU. Called from the thread that pumps, like pump(). */
static PyObject *Capture_sync(Capture *c, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    if (c->events != NULL && fflush(c->events) != 0 && !c->failed_errno) c->failed_errno = errno ? errno : EIO;
    for (Py_ssize_t i = 0; i < c->nvcpus; i++) {
        Vcpu *v = c->vcpus + i;
        if (!v->seen) continue;
        if (fflush(v->file) != 0 && !c->failed_errno) c->failed_errno = errno ? errno : EIO;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(out, index) < 0) {
            Py_XDECREF(index);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(index);
    }
    if (c->failed_errno) {
        Py_DECREF(out);
        errno = c->failed_errno;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return out;
}

/* records_fd(vcpu): a new descriptor of a seen thread's records file, owned by the caller (a live
 * reader reads it while the capture appends). */
static PyObject *Capture_records_fd(Capture *c, PyObject *arg) {
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= c->nvcpus || !c->vcpus[i].seen) {
        PyErr_SetString(PyExc_ValueError, "records_fd(vcpu): no such traced thread");
        return NULL;
    }
    int fd = dup(fileno(c->vcpus[i].file));
    if (fd < 0) return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLong(fd);
}

static PyObject *Capture_close(Capture *c, PyObject *Py_UNUSED(ignored)) {
    capture_release(c);
    Py_RETURN_NONE;
}

static PyObject *Capture_get_dropped(Capture *c, void *Py_UNUSED(closure)) {
    return PyLong_FromUnsignedLongLong(c->ring ? __atomic_load_n(&c->ring->dropped, __ATOMIC_RELAXED) : 0);
}

static PyObject *Capture_get_start_code(Capture *c, void *Py_UNUSED(closure)) {
    return PyLong_FromUnsignedLongLong(c->ring ? __atomic_load_n(&c->ring->start_code, __ATOMIC_ACQUIRE) : 0);
}

static PyObject *Capture_get_sve(Capture *c, void *Py_UNUSED(closure)) {
    if (c->ring == NULL) return Py_BuildValue("(KK)", 0ULL, 0ULL);
    return Py_BuildValue("(KK)", (unsigned long long)__atomic_load_n(&c->ring->sve_insns, __ATOMIC_RELAXED),
                         (unsigned long long)__atomic_load_n(&c->ring->sve_accesses, __ATOMIC_RELAXED));
}

static PyObject *Capture_get_shim(Capture *c, void *Py_UNUSED(closure)) { return PyBool_FromLong(c->shim); }

static PyObject *Capture_get_truncated(Capture *c, void *Py_UNUSED(closure)) { return PyLong_FromLongLong(c->truncated); }

static PyMethodDef Capture_methods[] = {
    {"pump", (PyCFunction)Capture_pump, METH_O,
     "Wait up to timeout seconds for batches and consume them: words consumed, 0 none, -1 closed and empty."},
    {"threads", (PyCFunction)Capture_threads, METH_NOARGS,
     "Every traced thread: (vcpu, fd of its records file, records, accesses, instructions)."},
    {"sync", (PyCFunction)Capture_sync, METH_NOARGS,
     "Write the records so far to the threads' files (a live reader sees them); the vCPUs seen."},
    {"records_fd", (PyCFunction)Capture_records_fd, METH_O, "A new descriptor of a seen thread's records file."},
    {"close", (PyCFunction)Capture_close, METH_NOARGS, "Tell the plugin nobody reads any more; unmap the ring."},
    {"events", (PyCFunction)Capture_events, METH_NOARGS,
     "A new fd of the program's heap and stack events (packed uint64 kind | vcpu << 8, a, b, c); -1: none."},
    {"live_events", (PyCFunction)Capture_live_events, METH_NOARGS,
     "A new fd of the events file as it grows while the program runs (a live reader's)."},
    {"stacks", (PyCFunction)Capture_stacks, METH_NOARGS, "The vCPUs that reported their stack."},
    {"sites", (PyCFunction)Capture_sites, METH_NOARGS, "The heap blocks' distinct call sites: (site, blocks, bytes)."},
    {"regions", (PyCFunction)Capture_regions, METH_NOARGS,
     "The marked regions each thread entered: (vcpu, name, number, calls); name None: past the limit."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Capture_getset[] = {
    {"dropped", (getter)Capture_get_dropped, NULL, "Accesses the plugin could not hand over.", NULL},
    {"start_code", (getter)Capture_get_start_code, NULL, "Where the program's code was loaded (0: unknown).", NULL},
    {"sve", (getter)Capture_get_sve, NULL,
     "(SVE memory instructions executed, accesses QEMU reported for them), aarch64.", NULL},
    {"truncated", (getter)Capture_get_truncated, NULL, "Accesses past the records cap, not kept.", NULL},
    {"shim", (getter)Capture_get_shim, NULL, "Whether the preloaded shim (shim.c) said it is loaded.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CaptureType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sectormon.sim.qemu._capture.Capture",
    .tp_basicsize = sizeof(Capture),
    .tp_dealloc = (destructor)Capture_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The consumer of the QEMU plugin's ring: per traced thread, a file of run-length records.",
    .tp_methods = Capture_methods,
    .tp_getset = Capture_getset,
    .tp_init = (initproc)Capture_init,
    .tp_new = PyType_GenericNew,
};

extern PyTypeObject ReaderType; /* reader.c */

static struct PyModuleDef capture_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sectormon.sim.qemu._capture",
    .m_doc = "The QEMU plugin's ring consumer and the captured threads' record reader (sectormon/sim/qemu).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__capture(void) {
    if (PyType_Ready(&CaptureType) < 0 || PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&capture_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Capture", (PyObject *)&CaptureType) < 0 ||
        PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddIntConstant(m, "HEADER_BYTES", (long)sizeof(struct smq_header)) < 0 ||
        PyModule_AddIntConstant(m, "BATCH", SMQ_BATCH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
