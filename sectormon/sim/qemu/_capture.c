/* The consumer side of the QEMU plugin's ring (ring.h), and the reader that turns a captured thread
 * into the simulator's records: the compiled path that keeps every traced access out of Python.
 *
 * Capture: drains the ring (the GIL released while it waits and works) and writes, per traced
 * thread (vCPU), its accesses as run-length records to an anonymous temporary file: consecutive
 * accesses to one 256-byte line become one record (first address, n, write) - only the first can
 * miss, as in sectormon/sim/stream.py, and the record belongs to the data object of its first
 * access - and each batch's instruction count a record of its own. An access
 * that straddles two lines is an access to each. The files are the capture: a run of the model,
 * or every run of the advisor, reads them again.
 *
 * Reader: one thread's file as chunks of packed engine records (int64 line, n, flags), the
 * flags of each record looked up from its line's data object (sorted starts, binary search) and a
 * per-object flags table the Python side computes (stream.flags: sector, tag, prefetch, object).
 * The compiled core's Thread.run consumes such a chunk without making a Python object per record.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define LINE_SHIFT 8
#define KIND_READ 0
#define KIND_WRITE 1
#define KIND_INSNS 2
#define FL_IFETCH 64

typedef struct {
    int64_t a; /* the address of the record's first access, or a KIND_INSNS record's instructions */
    int32_t n;
    int32_t kind;
} Stored;

typedef struct {
    FILE *file;
    Stored run; /* the record being grown (n == 0: none) */
    long long records, accesses, instructions;
    int seen;
} Vcpu;

typedef struct {
    PyObject_HEAD
    struct smq_header *ring;
    size_t map_size;
    Vcpu *vcpus;
    Py_ssize_t nvcpus;
    long long max_records, records, truncated;
    int failed_errno;
} Capture;

static void capture_release(Capture *c) {
    if (c->ring != NULL) {
        __atomic_store_n(&c->ring->consumer_gone, 1, __ATOMIC_RELEASE);
        munmap(c->ring, c->map_size);
        c->ring = NULL;
    }
    for (Py_ssize_t i = 0; i < c->nvcpus; i++) {
        if (c->vcpus[i].file != NULL) fclose(c->vcpus[i].file);
    }
    PyMem_RawFree(c->vcpus);
    c->vcpus = NULL;
    c->nvcpus = 0;
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

/* One batch: its header words are at data[at], its accesses follow (wrapping at mask). -1 when
 * it cannot be kept (no memory or file), -2 when it is not a batch the plugin writes: the guest
 * shares QEMU's address space, so a program that scribbles over the ring must not crash sectormon. */
static int batch(Capture *c, const uint64_t *data, uint64_t at, uint64_t mask) {
    uint64_t head = data[at & mask];
    uint64_t n = head & 0xffffffffu, insns = data[(at + 1) & mask];
    if (n > SMQ_BATCH || (head >> 32) >= SMQ_MAX_VCPUS) return -2;
    Vcpu *v = vcpu_at(c, (Py_ssize_t)(head >> 32));
    if (v == NULL) return -1;
    at += 2;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t w = data[(at + i) & mask];
        uint64_t addr = w & SMQ_ADDR_MASK, size = (uint64_t)1 << ((w >> SMQ_SIZE_SHIFT) & 15);
        int write = (w & SMQ_STORE) != 0;
        uint64_t last = (addr + size - 1) >> LINE_SHIFT;
        int straddles = last != addr >> LINE_SHIFT;
        access_line(c, v, addr, write);
        if (straddles) access_line(c, v, last << LINE_SHIFT, write);
        v->accesses += 1 + straddles;
    }
    if (insns) {
        if (v->run.n) store(c, v, &v->run);
        v->run.n = 0;
        Stored r = {(int64_t)insns, 0, KIND_INSNS};
        store(c, v, &r);
        v->instructions += (long long)insns;
    }
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
        if (v->run.n) store(c, v, &v->run);
        v->run.n = 0;
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

/* sync(): while the program runs, write every traced thread's records so far to its file, so a
 * live reader sees them (the run being grown stays: it may still grow), and list the threads seen
 * so far by vCPU. Called from the thread that pumps, like pump(). */
static PyObject *Capture_sync(Capture *c, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
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
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Capture_getset[] = {
    {"dropped", (getter)Capture_get_dropped, NULL, "Accesses the plugin could not hand over.", NULL},
    {"start_code", (getter)Capture_get_start_code, NULL, "Where the program's code was loaded (0: unknown).", NULL},
    {"sve", (getter)Capture_get_sve, NULL,
     "(SVE memory instructions executed, accesses QEMU reported for them), aarch64.", NULL},
    {"truncated", (getter)Capture_get_truncated, NULL, "Accesses past the records cap, not kept.", NULL},
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

/* ------------------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    int fd;
    long long offset;
    Py_ssize_t nobjects;
    int64_t *starts, *ends, *ids; /* sorted by start */
    int64_t *flags;               /* per object id: [read flags, write flags] */
    Py_ssize_t nflags;
} Reader;

static void Reader_dealloc(Reader *r) {
    PyMem_Free(r->starts);
    PyMem_Free(r->ends);
    PyMem_Free(r->ids);
    PyMem_Free(r->flags);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static int64_t *int_array(PyObject *seq_in, Py_ssize_t *len) {
    PyObject *seq = PySequence_Fast(seq_in, "expected a sequence of ints");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *out = PyMem_Calloc((size_t)(n ? n : 1), sizeof(int64_t));
    if (out == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(out);
            Py_DECREF(seq);
            return NULL;
        }
        out[i] = v;
    }
    Py_DECREF(seq);
    *len = n;
    return out;
}

/* Reader(fd, starts, ends, ids, flags): starts/ends/ids the data objects sorted by start (byte
 * addresses), flags[2 * id + write] the engine flags. */
static int Reader_init(Reader *r, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fd", "starts", "ends", "ids", "flags", NULL};
    PyObject *starts, *ends, *ids, *flags;
    Py_ssize_t ns, ne, ni;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOOOO", kwlist, &r->fd, &starts, &ends, &ids, &flags)) return -1;
    r->offset = 0;
    if (!(r->starts = int_array(starts, &ns)) || !(r->ends = int_array(ends, &ne)) || !(r->ids = int_array(ids, &ni)) ||
        !(r->flags = int_array(flags, &r->nflags)))
        return -1;
    if (ns != ne || ns != ni) {
        PyErr_SetString(PyExc_ValueError, "starts, ends and ids must have one entry per object");
        return -1;
    }
    r->nobjects = ns;
    for (Py_ssize_t i = 0; i < ns; i++) {
        if (r->ids[i] < 0 || 2 * r->ids[i] + 1 >= r->nflags) {
            PyErr_SetString(PyExc_ValueError, "an object id has no flags");
            return -1;
        }
    }
    if (r->nflags < 2) {
        PyErr_SetString(PyExc_ValueError, "flags must hold at least object 0's two entries");
        return -1;
    }
    return 0;
}

static inline int64_t object_of(const Reader *r, uint64_t address) {
    Py_ssize_t lo = 0, hi = r->nobjects; /* the first start > address */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if ((uint64_t)r->starts[mid] <= address) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0 && address < (uint64_t)r->ends[lo - 1]) return r->ids[lo - 1];
    return 0;
}

/* chunk(max_records): the next records as packed int64 (line, n, flags) triples; None at the end. */
static PyObject *Reader_chunk(Reader *r, PyObject *arg) {
    Py_ssize_t max = PyLong_AsSsize_t(arg);
    if (max == -1 && PyErr_Occurred()) return NULL;
    if (max < 1) {
        PyErr_SetString(PyExc_ValueError, "chunk(max_records): give 1 or more");
        return NULL;
    }
    Stored *in = PyMem_Malloc((size_t)max * sizeof(Stored));
    if (in == NULL) return PyErr_NoMemory();
    ssize_t got;
    Py_BEGIN_ALLOW_THREADS
    got = pread(r->fd, in, (size_t)max * sizeof(Stored), (off_t)r->offset);
    Py_END_ALLOW_THREADS
    if (got < 0) {
        PyMem_Free(in);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_ssize_t n = got / (ssize_t)sizeof(Stored);
    if (n == 0) {
        PyMem_Free(in);
        Py_RETURN_NONE;
    }
    r->offset += (long long)n * (long long)sizeof(Stored);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 3 * (Py_ssize_t)sizeof(int64_t));
    if (out == NULL) {
        PyMem_Free(in);
        return NULL;
    }
    int64_t *o = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++, o += 3) {
        const Stored *s = in + i;
        if (s->kind == KIND_INSNS) {
            o[0] = -1 - s->a;
            o[1] = 0;
            o[2] = FL_IFETCH;
        } else {
            o[0] = (int64_t)((uint64_t)s->a >> LINE_SHIFT);
            o[1] = s->n;
            o[2] = r->flags[2 * object_of(r, (uint64_t)s->a) + (s->kind & 1)];
        }
    }
    PyMem_Free(in);
    return out;
}

static PyMethodDef Reader_methods[] = {
    {"chunk", (PyCFunction)Reader_chunk, METH_O,
     "The next records as packed int64 (line, n, flags) triples, None at the end."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sectormon.sim.qemu._capture.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A captured thread's records as packed engine records, flagged by data object.",
    .tp_methods = Reader_methods,
    .tp_init = (initproc)Reader_init,
    .tp_new = PyType_GenericNew,
};

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
