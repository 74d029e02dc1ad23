/* The reader of a captured thread's records file (records.h), the module's Reader type.
 *
 * One thread's file as chunks of packed engine records (int64 line, n, flags), the
 * flags of each record looked up from its line's data object (sorted starts, binary search) and a
 * per-object flags table the Python side computes (stream.flags: sector, tag, prefetch, object).
 * The compiled core's Thread.run consumes such a chunk without making a Python object per record.
 * Past the static ranges (globals), a record's object is the heap block or stack it is in: the
 * reader replays the program's events up to each sync record into the live blocks (blocks.h: a
 * new block replaces any stale one it overlaps, a free of an unknown address is ignored), naming
 * a block by its call site's object id and a stack by its thread's. A running program's reader
 * is given no sites: it asks Python (sim/qemu/live_objects.py) for the object of each site and
 * stack the first time it meets one. A marker call (marks.h) ends a chunk; the next chunk()
 * returns it as (start, name, number). So does an end record, as False: a live run ends the
 * thread's stream there, a run of the whole capture reads on.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "blocks.h"
#include "marks.h"
#include "records.h"
#include "ring.h"

typedef struct {
    PyObject_HEAD
    int fd;
    long long offset;
    Py_ssize_t nobjects;
    int64_t *starts, *ends, *ids; /* sorted by start */
    int64_t *flags;               /* per object id: [read flags, write flags] */
    Py_ssize_t nflags;
    int events;                     /* the program's events file (Capture.events()), -1 none */
    uint64_t applied;               /* events replayed into blocks */
    Event buffered[512];            /* events read ahead: from number buffered_from on */
    uint64_t buffered_from, nbuffered;
    int64_t *sites, *site_ids;      /* sorted call sites and their object ids */
    Py_ssize_t nsites;
    int64_t *stacks;                /* object id of each vCPU's stack */
    Py_ssize_t nstacks;
    Blocks blocks;                  /* live heap blocks and stacks (blocks.h) */
    MarkName name;                  /* the next mark's name so far */
    PyObject *live;                 /* names objects as they appear (a running program's), or NULL */
    int owns_events;                /* events is the reader's own descriptor (live) */
} Reader;

static void Reader_dealloc(Reader *r) {
    PyMem_Free(r->starts);
    PyMem_Free(r->ends);
    PyMem_Free(r->ids);
    PyMem_Free(r->flags);
    PyMem_Free(r->sites);
    PyMem_Free(r->site_ids);
    PyMem_Free(r->stacks);
    blocks_destroy(&r->blocks);
    Py_XDECREF(r->live);
    if (r->owns_events) close(r->events);
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

/* Reader(fd, starts, ends, ids, flags, events=-1, sites=(), site_ids=(), stacks=(), live=None):
 * starts/ends/ids the data objects sorted by start (byte addresses), flags[2 * id + write] the
 * engine flags; events the fd of the program's events (Capture.events()), sites its sorted call
 * sites and site_ids their objects, stacks[vcpu] the object of that vCPU's stack (ids without an
 * entry: 0, [other]). A running program's reader has live: its site(address) gives the object of
 * a call site the tables do not have (the reader keeps it), its stack(vcpu) that of a stack; it
 * reads events through a descriptor of its own (the run may close its one first); and at a sync
 * record whose events are not in the file yet, the reader waits (chunk() ends there). */
static int Reader_init(Reader *r, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fd", "starts", "ends", "ids", "flags", "events", "sites", "site_ids", "stacks", "live", NULL};
    PyObject *starts, *ends, *ids, *flags, *sites = NULL, *site_ids = NULL, *stacks = NULL, *live = Py_None;
    PyObject *empty = NULL;
    Py_ssize_t ns, ne, ni, nsi;
    if (r->starts != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Reader is initialised once");
        return -1;
    }
    blocks_init(&r->blocks);
    r->events = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOOOO|iOOOO", kwlist, &r->fd, &starts, &ends, &ids, &flags, &r->events,
                                     &sites, &site_ids, &stacks, &live))
        return -1;
    if (live != Py_None) {
        Py_INCREF(live);
        r->live = live;
        if (r->events >= 0) {
            if ((r->events = dup(r->events)) < 0) {
                PyErr_SetFromErrno(PyExc_OSError);
                return -1;
            }
            r->owns_events = 1;
        }
    }
    r->offset = 0;
    if (!(r->starts = int_array(starts, &ns)) || !(r->ends = int_array(ends, &ne)) || !(r->ids = int_array(ids, &ni)) ||
        !(r->flags = int_array(flags, &r->nflags)))
        return -1;
    if ((empty = PyTuple_New(0)) == NULL) return -1;
    int bad = !(r->sites = int_array(sites ? sites : empty, &r->nsites)) ||
              !(r->site_ids = int_array(site_ids ? site_ids : empty, &nsi)) ||
              !(r->stacks = int_array(stacks ? stacks : empty, &r->nstacks));
    Py_DECREF(empty);
    if (bad) return -1;
    if (ns != ne || ns != ni || r->nsites != nsi) {
        PyErr_SetString(PyExc_ValueError, "starts, ends and ids (sites and site_ids) must have one entry per object");
        return -1;
    }
    for (Py_ssize_t i = 0; i < r->nsites; i++) {
        if (r->site_ids[i] < 0 || 2 * r->site_ids[i] + 1 >= r->nflags || (i && r->sites[i] <= r->sites[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "sites must be sorted and every site id have flags");
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < r->nstacks; i++) {
        if (r->stacks[i] < 0 || 2 * r->stacks[i] + 1 >= r->nflags) {
            PyErr_SetString(PyExc_ValueError, "a stack's object id has no flags");
            return -1;
        }
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

static inline int64_t object_of(Reader *r, uint64_t address) {
    Py_ssize_t lo = 0, hi = r->nobjects; /* the first start > address */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if ((uint64_t)r->starts[mid] <= address) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0 && address < (uint64_t)r->ends[lo - 1]) return r->ids[lo - 1];
    return blocks_lookup(&r->blocks, address);
}

/* The first of the sorted sites >= site. */
static Py_ssize_t site_index(const Reader *r, uint64_t site) {
    Py_ssize_t lo = 0, hi = r->nsites;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if ((uint64_t)r->sites[mid] < site) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The object id live.METHOD(value) names, checked against the flags table; -1: an exception set. */
static int64_t live_object(Reader *r, const char *method, uint64_t value) {
    PyObject *got = PyObject_CallMethod(r->live, method, "K", (unsigned long long)value);
    if (got == NULL) return -1;
    long long id = PyLong_AsLongLong(got);
    Py_DECREF(got);
    if (id == -1 && PyErr_Occurred()) return -1;
    if (id < 0 || 2 * id + 1 >= r->nflags) {
        PyErr_Format(PyExc_ValueError, "live.%s(): object %lld has no flags", method, id);
        return -1;
    }
    return (int64_t)id;
}

/* The object of a block allocated at `site`: the tables', else (a running program) the one live
 * names, kept in the sorted tables from then on; 0 ([other]) for a site nobody named. -1: an
 * exception set. */
static int64_t site_object(Reader *r, uint64_t site) {
    Py_ssize_t at = site_index(r, site);
    if (at < r->nsites && (uint64_t)r->sites[at] == site) return r->site_ids[at];
    if (r->live == NULL) return 0;
    int64_t id = live_object(r, "site", site);
    if (id < 0) return -1;
    int64_t *sites = PyMem_Realloc(r->sites, (size_t)(r->nsites + 1) * sizeof(int64_t));
    if (sites != NULL) r->sites = sites;
    int64_t *ids = sites != NULL ? PyMem_Realloc(r->site_ids, (size_t)(r->nsites + 1) * sizeof(int64_t)) : NULL;
    if (ids == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    r->site_ids = ids;
    memmove(r->sites + at + 1, r->sites + at, (size_t)(r->nsites - at) * sizeof(int64_t));
    memmove(r->site_ids + at + 1, r->site_ids + at, (size_t)(r->nsites - at) * sizeof(int64_t));
    r->sites[at] = (int64_t)site;
    r->site_ids[at] = id;
    r->nsites++;
    return id;
}

/* The object of vCPU `vcpu`'s stack: the tables', or the one live names. -1: an exception set. */
static int64_t stack_object(Reader *r, uint64_t vcpu) {
    if (r->live != NULL) return live_object(r, "stack", vcpu);
    return vcpu < (uint64_t)r->nstacks ? r->stacks[vcpu] : 0;
}

/* Replay the program's events up to `upto` (a sync record's count) into the live blocks, reading
 * the events file ahead. -1: out of memory, the file could not be read or live failed (an
 * exception set); 1: the file ends before `upto` (a running program's events still to come). */
static int replay(Reader *r, uint64_t upto) {
    for (; r->applied < upto; r->applied++) {
        if (r->applied - r->buffered_from >= r->nbuffered) {
            ssize_t got = -1;
            if (r->events >= 0) {
                off_t at = (off_t)(r->applied * sizeof(Event));
                Py_BEGIN_ALLOW_THREADS
                got = pread(r->events, r->buffered, sizeof r->buffered, at);
                Py_END_ALLOW_THREADS
                if (got < 0) {
                    PyErr_SetFromErrno(PyExc_OSError);
                    return -1;
                }
            }
            r->buffered_from = r->applied;
            r->nbuffered = got > 0 ? (uint64_t)got / sizeof(Event) : 0;
            if (r->nbuffered == 0) return 1; /* fewer events than the sync record says (yet) */
        }
        const Event *e = r->buffered + (r->applied - r->buffered_from);
        uint64_t kind = e->kind_vcpu & 0xff, vcpu = e->kind_vcpu >> 8;
        uint64_t end = e->b > UINT64_MAX - e->a ? UINT64_MAX : e->a + e->b; /* ALLOC: a + size */
        int failed = 0;
        int64_t id = 0;
        if (kind == SMQ_EV_ALLOC) {
            if ((id = site_object(r, e->c)) < 0) return -1;
            failed = blocks_add(&r->blocks, e->a, end, id);
        } else if (kind == SMQ_EV_FREE) {
            blocks_free(&r->blocks, e->a);
        } else if (kind == SMQ_EV_STACK) {
            if ((id = stack_object(r, vcpu)) < 0) return -1;
            failed = blocks_add(&r->blocks, e->a, e->b, id);
        }
        if (failed) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* A marker event's records (KIND_EVENT, its arguments after it): NULL after a piece of name, else
 * the mark (start, name, number); the name shown escaped where it is not UTF-8. */
static PyObject *mark_of(Reader *r, const Stored *e) {
    uint64_t args[SMQ_EVENT_ARGS];
    for (int k = 0; k < SMQ_EVENT_ARGS; k++) args[k] = (uint64_t)e[1 + k].a;
    if (!mark_name_add(&r->name, (uint64_t)e->a, args)) return NULL;
    PyObject *name = PyUnicode_DecodeUTF8(r->name.bytes, (Py_ssize_t)r->name.length, "backslashreplace");
    r->name.length = 0;
    return name ? Py_BuildValue("(NNi)", PyBool_FromLong(e->a == SMQ_EV_MARK_START), name, (int)mark_number(args))
                : NULL;
}

/* chunk(max_records): the next records as packed int64 (line, n, flags) triples; a marker call as
 * (start, name, number) (it ends the chunk before it); False where the thread ended (SMQ_EV_END,
 * likewise: what follows is a later thread's on the same vCPU); None at the end. */
static PyObject *Reader_chunk(Reader *r, PyObject *arg) {
    Py_ssize_t max = PyLong_AsSsize_t(arg);
    if (max == -1 && PyErr_Occurred()) return NULL;
    if (max < 2 * SMQ_EVENT_WORDS) {
        PyErr_Format(PyExc_ValueError, "chunk(max_records): give %d or more", 2 * SMQ_EVENT_WORDS);
        return NULL;
    }
    Stored *in = PyMem_Malloc((size_t)max * sizeof(Stored));
    if (in == NULL) return PyErr_NoMemory();
    int64_t *packed = PyMem_Malloc((size_t)max * 3 * sizeof(int64_t));
    if (packed == NULL) {
        PyMem_Free(in);
        return PyErr_NoMemory();
    }
    Py_ssize_t out_n = 0;
    PyObject *result = NULL;
    int waiting = 0; /* at a sync record whose events are not in the file yet */
    for (;;) {
        ssize_t got;
        Py_BEGIN_ALLOW_THREADS
        got = pread(r->fd, in, (size_t)max * sizeof(Stored), (off_t)r->offset);
        Py_END_ALLOW_THREADS
        if (got < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            goto done;
        }
        Py_ssize_t n = got / (ssize_t)sizeof(Stored), i = 0;
        int64_t *o = packed;
        for (; i < n; i++) {
            const Stored *s = in + i;
            if (s->kind == KIND_INSNS) {
                o[0] = -1 - s->a;
                o[1] = 0;
                o[2] = FL_IFETCH;
                o += 3;
            } else if (s->kind == KIND_SYNC) {
                int short_of = replay(r, (uint64_t)s->a);
                if (short_of < 0) goto done;
                if (short_of && r->live != NULL) { /* its events are still to come: stop before it */
                    waiting = 1;
                    break;
                }
            } else if (s->kind == KIND_EVENT) {
                if (s->n != SMQ_EVENT_ARGS) continue; /* not an event the capture writes */
                if (i + SMQ_EVENT_ARGS >= n) {
                    if (n < max) i = n; /* the file ends inside it: nothing more */
                    break;              /* else its arguments are in the next read */
                }
                if (s->a == SMQ_EV_MARK_NAME) {
                    mark_of(r, s);
                    i += SMQ_EVENT_ARGS;
                } else if (s->a == SMQ_EV_MARK_START || s->a == SMQ_EV_MARK_STOP) {
                    if (o != packed) break; /* the accesses before it first */
                    result = mark_of(r, s);
                    i += SMQ_EVENT_ARGS + 1;
                    r->offset += (long long)i * (long long)sizeof(Stored);
                    goto done;
                } else {
                    i += SMQ_EVENT_ARGS;
                }
            } else if (s->kind == KIND_END) {
                if (o != packed) break; /* the accesses before it first */
                r->name.length = 0;
                r->offset += (long long)(i + 1) * (long long)sizeof(Stored);
                result = Py_False;
                Py_INCREF(result);
                goto done;
            } else if (s->kind == KIND_READ || s->kind == KIND_WRITE) {
                o[0] = (int64_t)((uint64_t)s->a >> LINE_SHIFT);
                o[1] = s->n;
                o[2] = r->flags[2 * object_of(r, (uint64_t)s->a) + (s->kind & 1)];
                o += 3;
            } /* any other kind (a stray argument record): skipped */
        }
        r->offset += (long long)i * (long long)sizeof(Stored);
        out_n = (o - packed) / 3;
        if (out_n > 0 || n < max || waiting) break; /* else only sync or name records so far: read on */
    }
    if (out_n == 0) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = PyBytes_FromStringAndSize((const char *)packed, out_n * 3 * (Py_ssize_t)sizeof(int64_t));
    }
done:
    PyMem_Free(in);
    PyMem_Free(packed);
    return result;
}

static PyMethodDef Reader_methods[] = {
    {"chunk", (PyCFunction)Reader_chunk, METH_O,
     "The next records as packed int64 (line, n, flags) triples, a mark, False at a thread's end, None at the end."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Reader_members[] = {
    {"offset", T_LONGLONG, offsetof(Reader, offset), 0,
     "Bytes of the records file read so far (a Reader of a thread that reuses an ended one's vCPU starts there)."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject ReaderType = { /* the module (_capture.c) adds it */
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sectormon.sim.qemu._capture.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A captured thread's records as packed engine records, flagged by data object.",
    .tp_methods = Reader_methods,
    .tp_members = Reader_members,
    .tp_init = (initproc)Reader_init,
    .tp_new = PyType_GenericNew,
};
