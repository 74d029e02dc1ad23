/* The simulated A64FX's compiled core: sector caches and a thread's run loop with compact state.
 *
 * A line-by-line translation of sectormon/sim/cache.py (SectorCache) and of SimThread.run and its
 * rare paths in sectormon/sim/engine.py, which stay the reference: the golden cases and the
 * equivalence tests run both and require the same numbers and the same final cache contents.
 * Why it exists: on a miss-bound stream the pure-Python model spends its time on dictionary and
 * list operations over scattered int objects (an L2 of 28,672 lines); here a set is 16 slots of
 * 8 bytes searched in place. docs/sim.md ("The compiled core") says how it is built and chosen.
 *
 * Integers: the Python model's values are Python ints; here they are int64. Clocks are ticks
 * << 4 | 15 and stay far below 2**60 (the prefetch mark) for any run this tool makes (2**54
 * cycles); a record's line or count outside int64 raises OverflowError. Shifts of negative
 * values are arithmetic (floor), as gcc and clang implement them and Python defines them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

typedef int64_t i64;

#define SECTOR_MASK 3
#define KIND_SHIFT 2
#define DIRTY 8
#define PF_MARK ((i64)1 << 60)
#define NO_VICTIM (-1)
#define FL_WRITE 1
#define FL_EXIT 32
#define FL_IFETCH 64
#define FL_SPECIAL (FL_EXIT | FL_IFETCH)
#define FLAG_SLOTS 128 /* one data object's flags values (stream.py) */
#define FROM_L2 0
#define FROM_MEMORY 1
#define BY_DEMAND 0
#define BY_PREFETCH 1
#define NEVER INT64_MAX

/* ------------------------------------------------------------------------------------------ */
/* Cache: one set-associative LRU cache with sector partitioning (cache.py's rules).            */

typedef struct {
    PyObject_HEAD
    Py_ssize_t nsets;
    int ways;
    int stride;      /* ways + 1: a fill appends before it evicts, as the reference does */
    i64 mask;
    i64 *lines;      /* per set, LRU first */
    i64 *states;
    int *n;          /* lines per set */
    int *counts;     /* lines per set and sector, always exact */
    int maxima[4];
    int enabled;
    Py_ssize_t total;
} Cache;

static PyTypeObject CacheType;

static inline int cache_find(const Cache *c, i64 line, Py_ssize_t si) {
    const i64 *l = c->lines + si * c->stride;
    int n = c->n[si];
    for (int i = n - 1; i >= 0; i--) {  /* MRU first: a hit is most often recent */
        if (l[i] == line) return i;
    }
    return -1;
}

static inline Py_ssize_t set_of(const Cache *c, i64 line) { return (Py_ssize_t)(line & c->mask); }

static inline void cache_touch_at(Cache *c, Py_ssize_t si, int i) {
    int n = c->n[si];
    if (i == n - 1) return;
    i64 *l = c->lines + si * c->stride;
    i64 *s = c->states + si * c->stride;
    i64 line = l[i], state = s[i];
    memmove(l + i, l + i + 1, (size_t)(n - 1 - i) * sizeof(i64));
    memmove(s + i, s + i + 1, (size_t)(n - 1 - i) * sizeof(i64));
    l[n - 1] = line;
    s[n - 1] = state;
}

/* Removes entry i of set si, returning its line and state; keeps the counts. */
static inline void cache_remove_at(Cache *c, Py_ssize_t si, int i, i64 *line, i64 *state) {
    int n = c->n[si];
    i64 *l = c->lines + si * c->stride;
    i64 *s = c->states + si * c->stride;
    *line = l[i];
    *state = s[i];
    memmove(l + i, l + i + 1, (size_t)(n - 1 - i) * sizeof(i64));
    memmove(s + i, s + i + 1, (size_t)(n - 1 - i) * sizeof(i64));
    c->n[si] = n - 1;
    c->counts[si * 4 + (*state & SECTOR_MASK)] -= 1;
    c->total -= 1;
}

static inline void cache_append(Cache *c, Py_ssize_t si, i64 line, i64 state) {
    int n = c->n[si];
    c->lines[si * c->stride + n] = line;
    c->states[si * c->stride + n] = state;
    c->n[si] = n + 1;
    c->counts[si * 4 + (state & SECTOR_MASK)] += 1;
    c->total += 1;
}

/* SectorCache.fill: insert ``line`` (absent) as MRU with ``state``. Returns 1 and the victim when
 * a line was evicted; 0 otherwise. *inserted says whether the line went in (a sector at maximum 0
 * with no line of its own cannot allocate). */
static int cache_fill(Cache *c, i64 line, i64 state, i64 *victim, i64 *vstate, int *inserted) {
    Py_ssize_t si = set_of(c, line);
    int sec = (int)(state & SECTOR_MASK);
    *inserted = 1;
    if (!c->enabled) {
        cache_append(c, si, line, state);
        if (c->n[si] <= c->ways) return 0;
        cache_remove_at(c, si, 0, victim, vstate);
        return 1;
    }
    int *counts = c->counts + si * 4;
    const int *maxima = c->maxima;
    if (counts[sec] >= maxima[sec]) {
        /* At its maximum the sector replaces its own LRU line; with a maximum of 0 and no line of
         * its own it cannot allocate at all. */
        const i64 *s = c->states + si * c->stride;
        int n = c->n[si];
        for (int i = 0; i < n; i++) {
            if ((s[i] & SECTOR_MASK) == sec) {
                cache_remove_at(c, si, i, victim, vstate);
                cache_append(c, si, line, state);
                return 1;
            }
        }
        *inserted = 0;
        return 0;
    }
    cache_append(c, si, line, state);
    int n = c->n[si];
    if (n <= c->ways) return 0;
    /* Under its maximum in a full set: the LRU line among the sectors over their maximum, else the
     * set's LRU line. */
    const i64 *s = c->states + si * c->stride;
    int pick = 0;
    for (int i = 0; i < n; i++) {
        int vsec = (int)(s[i] & SECTOR_MASK);
        if (counts[vsec] > maxima[vsec]) {
            pick = i;
            break;
        }
    }
    cache_remove_at(c, si, pick, victim, vstate);
    return 1;
}

/* The state of ``line`` or -1 (states are never negative). */
static inline i64 cache_get(const Cache *c, i64 line) {
    Py_ssize_t si = set_of(c, line);
    int i = cache_find(c, line, si);
    return i < 0 ? -1 : c->states[si * c->stride + i];
}

static inline int cache_has(const Cache *c, i64 line) { return cache_find(c, line, set_of(c, line)) >= 0; }

static inline void cache_touch(Cache *c, i64 line) {
    Py_ssize_t si = set_of(c, line);
    int i = cache_find(c, line, si);
    if (i >= 0) cache_touch_at(c, si, i);
}

/* Sets the state of a cached line (its sector unchanged: the reference only adds flags). */
static inline void cache_set_state(Cache *c, i64 line, i64 state) {
    Py_ssize_t si = set_of(c, line);
    int i = cache_find(c, line, si);
    if (i >= 0) c->states[si * c->stride + i] = state;
}

static int parse_maxima(PyObject *maxima, int out[4]) {
    PyObject *seq = PySequence_Fast(maxima, "the sector maxima must be a sequence of four ints");
    if (seq == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 4) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "the sector maxima must be four ints");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        out[i] = (int)v;
    }
    Py_DECREF(seq);
    return 0;
}

static void Cache_dealloc(Cache *c) {
    PyMem_Free(c->lines);
    PyMem_Free(c->states);
    PyMem_Free(c->n);
    PyMem_Free(c->counts);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int Cache_init(Cache *c, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"nsets", "ways", "maxima", "enabled", NULL};
    Py_ssize_t nsets;
    int ways, enabled;
    PyObject *maxima;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "niOp", kwlist, &nsets, &ways, &maxima, &enabled)) return -1;
    if (nsets <= 0 || (nsets & (nsets - 1))) {
        PyErr_SetString(PyExc_ValueError, "the number of sets must be a power of two");
        return -1;
    }
    if (ways < 1 || ways > 64) {
        PyErr_SetString(PyExc_ValueError, "the ways must be 1 to 64");
        return -1;
    }
    if (parse_maxima(maxima, c->maxima) < 0) return -1;
    PyMem_Free(c->lines);
    PyMem_Free(c->states);
    PyMem_Free(c->n);
    PyMem_Free(c->counts);
    c->nsets = nsets;
    c->ways = ways;
    c->stride = ways + 1;
    c->mask = (i64)nsets - 1;
    c->enabled = enabled;
    c->total = 0;
    c->lines = PyMem_Calloc((size_t)(nsets * c->stride), sizeof(i64));
    c->states = PyMem_Calloc((size_t)(nsets * c->stride), sizeof(i64));
    c->n = PyMem_Calloc((size_t)nsets, sizeof(int));
    c->counts = PyMem_Calloc((size_t)(nsets * 4), sizeof(int));
    if (!c->lines || !c->states || !c->n || !c->counts) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int as_i64(PyObject *o, i64 *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = (i64)v;
    return 0;
}

static PyObject *Cache_fill(Cache *c, PyObject *const *args, Py_ssize_t nargs) {
    i64 line, state, victim = NO_VICTIM, vstate = 0;
    int inserted;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "fill(line, state)");
        return NULL;
    }
    if (as_i64(args[0], &line) < 0 || as_i64(args[1], &state) < 0) return NULL;
    if (cache_has(c, line)) {
        PyErr_SetString(PyExc_ValueError, "fill: the line is cached already");
        return NULL;
    }
    if (!cache_fill(c, line, state, &victim, &vstate, &inserted)) {
        victim = NO_VICTIM;
        vstate = 0;
    }
    return Py_BuildValue("(LL)", (long long)victim, (long long)vstate);
}

/* The state slot of a cached line given as a Python int (its set and index in *si, *i); NULL with
 * KeyError when the line is not cached. */
static i64 *state_slot(Cache *c, PyObject *arg, Py_ssize_t *si, int *i) {
    i64 line;
    if (as_i64(arg, &line) < 0) return NULL;
    *si = set_of(c, line);
    *i = cache_find(c, line, *si);
    if (*i < 0) {
        PyErr_SetObject(PyExc_KeyError, arg);
        return NULL;
    }
    return c->states + *si * c->stride + *i;
}

static PyObject *Cache_touch(Cache *c, PyObject *arg) {
    Py_ssize_t si;
    int i;
    if (state_slot(c, arg, &si, &i) == NULL) return NULL;
    cache_touch_at(c, si, i);
    Py_RETURN_NONE;
}

static PyObject *Cache_sector_of(Cache *c, PyObject *arg) {
    Py_ssize_t si;
    int i;
    i64 *state = state_slot(c, arg, &si, &i);
    return state == NULL ? NULL : PyLong_FromLongLong(*state & SECTOR_MASK);
}

static PyObject *Cache_kind_of(Cache *c, PyObject *arg) {
    Py_ssize_t si;
    int i;
    i64 *state = state_slot(c, arg, &si, &i);
    return state == NULL ? NULL : PyLong_FromLongLong((*state >> KIND_SHIFT) & 1);
}

static PyObject *Cache_is_dirty(Cache *c, PyObject *arg) {
    Py_ssize_t si;
    int i;
    i64 *state = state_slot(c, arg, &si, &i);
    return state == NULL ? NULL : PyBool_FromLong((*state & DIRTY) != 0);
}

static PyObject *Cache_mark_dirty(Cache *c, PyObject *arg) {
    Py_ssize_t si;
    int i;
    i64 *state = state_slot(c, arg, &si, &i);
    if (state == NULL) return NULL;
    *state |= DIRTY;
    Py_RETURN_NONE;
}

static PyObject *Cache_occupancy(Cache *c, PyObject *arg) {
    Py_ssize_t si = PyLong_AsSsize_t(arg);
    if (si == -1 && PyErr_Occurred()) return NULL;
    if (si < 0 || si >= c->nsets) {
        PyErr_SetString(PyExc_IndexError, "set index out of range");
        return NULL;
    }
    const int *k = c->counts + si * 4;
    return Py_BuildValue("[iiii]", k[0], k[1], k[2], k[3]);
}

static PyObject *Cache_lines(Cache *c, PyObject *Py_UNUSED(ignored)) { return PyLong_FromSsize_t(c->total); }

static PyObject *Cache_set_maxima(Cache *c, PyObject *args) {
    PyObject *maxima;
    int enabled, parsed[4];
    if (!PyArg_ParseTuple(args, "Op", &maxima, &enabled)) return NULL;
    if (parse_maxima(maxima, parsed) < 0) return NULL;
    memcpy(c->maxima, parsed, sizeof parsed);
    c->enabled = enabled;
    Py_RETURN_NONE;
}

static int Cache_contains(Cache *c, PyObject *arg) {
    i64 line;
    if (!PyLong_Check(arg)) return 0;
    long long v = PyLong_AsLongLong(arg);
    if (v == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        return 0;
    }
    line = (i64)v;
    return cache_has(c, line);
}

static PyObject *Cache_get_sets(Cache *c, void *Py_UNUSED(closure)) {
    PyObject *out = PyList_New(c->nsets);
    if (out == NULL) return NULL;
    for (Py_ssize_t si = 0; si < c->nsets; si++) {
        PyObject *s = PyList_New(c->n[si]);
        if (s == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        for (int i = 0; i < c->n[si]; i++) {
            PyObject *v = PyLong_FromLongLong(c->lines[si * c->stride + i]);
            if (v == NULL) {
                Py_DECREF(s);
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(s, i, v);
        }
        PyList_SET_ITEM(out, si, s);
    }
    return out;
}

static PyObject *Cache_get_tags(Cache *c, void *Py_UNUSED(closure)) {
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    for (Py_ssize_t si = 0; si < c->nsets; si++) {
        for (int i = 0; i < c->n[si]; i++) {
            PyObject *k = PyLong_FromLongLong(c->lines[si * c->stride + i]);
            PyObject *v = PyLong_FromLongLong(c->states[si * c->stride + i]);
            int bad = k == NULL || v == NULL || PyDict_SetItem(out, k, v) < 0;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (bad) {
                Py_DECREF(out);
                return NULL;
            }
        }
    }
    return out;
}

static PyObject *Cache_get_counts(Cache *c, void *Py_UNUSED(closure)) {
    PyObject *out = PyList_New(c->nsets);
    if (out == NULL) return NULL;
    for (Py_ssize_t si = 0; si < c->nsets; si++) {
        const int *k = c->counts + si * 4;
        PyObject *row = Py_BuildValue("[iiii]", k[0], k[1], k[2], k[3]);
        if (row == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, si, row);
    }
    return out;
}

static PyObject *Cache_get_maxima(Cache *c, void *Py_UNUSED(closure)) {
    return Py_BuildValue("[iiii]", c->maxima[0], c->maxima[1], c->maxima[2], c->maxima[3]);
}

static PyObject *Cache_get_enabled(Cache *c, void *Py_UNUSED(closure)) { return PyBool_FromLong(c->enabled); }

static PyMethodDef Cache_methods[] = {
    {"fill", (PyCFunction)(void (*)(void))Cache_fill, METH_FASTCALL,
     "Insert an absent line as MRU; returns (victim, its state), (-1, 0) when nothing was evicted."},
    {"touch", (PyCFunction)Cache_touch, METH_O, "Make a cached line MRU."},
    {"sector_of", (PyCFunction)Cache_sector_of, METH_O, "The sector of a cached line."},
    {"kind_of", (PyCFunction)Cache_kind_of, METH_O, "The kind bit of a cached line."},
    {"is_dirty", (PyCFunction)Cache_is_dirty, METH_O, "Whether a cached line is dirty."},
    {"mark_dirty", (PyCFunction)Cache_mark_dirty, METH_O, "Mark a cached line dirty."},
    {"occupancy", (PyCFunction)Cache_occupancy, METH_O, "Lines per sector in one set."},
    {"lines", (PyCFunction)Cache_lines, METH_NOARGS, "Lines cached."},
    {"set_maxima", (PyCFunction)Cache_set_maxima, METH_VARARGS,
     "New maxima and enable; nothing is evicted now, fills converge to them."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Cache_getset[] = {
    {"sets", (getter)Cache_get_sets, NULL, "Per set, its lines in LRU order (a copy).", NULL},
    {"tags", (getter)Cache_get_tags, NULL, "Line -> packed state (a copy).", NULL},
    {"counts", (getter)Cache_get_counts, NULL, "Lines per sector in each set (a copy).", NULL},
    {"maxima", (getter)Cache_get_maxima, NULL, "Ways per sector (a copy).", NULL},
    {"enabled", (getter)Cache_get_enabled, NULL, "Whether the sector restriction is on.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef Cache_members[] = {
    {"nsets", T_PYSSIZET, offsetof(Cache, nsets), READONLY, "sets"},
    {"ways", T_INT, offsetof(Cache, ways), READONLY, "ways"},
    {"mask", T_LONGLONG, offsetof(Cache, mask), READONLY, "nsets - 1: a line's set is line & mask"},
    {NULL, 0, 0, 0, NULL},
};

static PySequenceMethods Cache_as_sequence = {
    .sq_contains = (objobjproc)Cache_contains,
};

static PyTypeObject CacheType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sectormon.sim._core.Cache",
    .tp_basicsize = sizeof(Cache),
    .tp_dealloc = (destructor)Cache_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A set-associative LRU cache with A64FX sector partitioning (cache.SectorCache's rules).",
    .tp_methods = Cache_methods,
    .tp_getset = Cache_getset,
    .tp_members = Cache_members,
    .tp_as_sequence = &Cache_as_sequence,
    .tp_init = (initproc)Cache_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------------------------ */
/* Thread: one simulated thread's state and thread.SimThread.run.                               */

typedef struct {
    i64 *v;
    Py_ssize_t len, cap;
} Vec;

static int vec_push(Vec *q, i64 x) {
    if (q->len == q->cap) {
        Py_ssize_t cap = q->cap ? q->cap * 2 : 64;
        i64 *v = PyMem_Realloc(q->v, (size_t)cap * sizeof(i64));
        if (v == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        q->v = v;
        q->cap = cap;
    }
    q->v[q->len++] = x;
    return 0;
}

static void vec_drop_front(Vec *q, Py_ssize_t h) {
    if (h <= 0) return;
    memmove(q->v, q->v + h, (size_t)(q->len - h) * sizeof(i64));
    q->len -= h;
}

typedef struct {
    PyObject_HEAD
    Cache *l1;
    Cache *l2;
    PyObject *spec;
    PyObject *gen;
    PyObject *chunk;     /* the current chunk as a fast sequence or packed bytes, or NULL */
    Py_ssize_t pos;      /* the next record's index in it */
    const i64 *packed;   /* a bytes chunk's int64 (line, n, flags) triples (sectormon/sim/qemu), else NULL */
    Py_ssize_t npacked;  /* records in it */
    PyObject *sampler;
    PyObject *mark;      /* a RegionMark or Idle run() met, until it returns it, else NULL */
    i64 tid, cpu, l2base;
    i64 l2_hit, memory, window, mib, mispredict, cpa;
    int prefetch;
    i64 pf_d1, pf_d2, pf_table;
    int loop;
    Py_ssize_t slots;
    i64 *fcount, *demand_misses, *memory_reads;
    i64 *recent;         /* the prefetcher's table, oldest first */
    Py_ssize_t nrecent;
    Vec qr, qc;          /* outstanding misses (see SimThread.q_ready / q_close) */
    char done;
    i64 passes, pass_start, cyc, acc;
    i64 l1_refill_pf, l1_wb, l1_miss_wait, l2_other, l2_refill_pf, l2_wb, swap_dm, mibmch_prf;
    i64 wait_l1, wait_l2, fe_stall, exits, ifetch;
} Thread;

static PyObject *str_demand, *str_prefetch, *str_stream;
static PyObject *region_mark_type; /* sectormon.sim.stream.RegionMark: a stop point in a stream */
static PyObject *idle_type;        /* sectormon.sim.stream.Idle: another */

static int thread_traverse(Thread *t, visitproc visit, void *arg) {
    Py_VISIT(t->l1);
    Py_VISIT(t->l2);
    Py_VISIT(t->spec);
    Py_VISIT(t->gen);
    Py_VISIT(t->chunk);
    Py_VISIT(t->sampler);
    Py_VISIT(t->mark);
    return 0;
}

static int thread_clear(Thread *t) {
    Py_CLEAR(t->l1);
    Py_CLEAR(t->l2);
    Py_CLEAR(t->spec);
    Py_CLEAR(t->gen);
    Py_CLEAR(t->chunk);
    Py_CLEAR(t->sampler);
    Py_CLEAR(t->mark);
    return 0;
}

static void free_arrays(Thread *t) {
    PyMem_Free(t->fcount);
    PyMem_Free(t->demand_misses);
    PyMem_Free(t->memory_reads);
    PyMem_Free(t->recent);
    PyMem_Free(t->qr.v);
    PyMem_Free(t->qc.v);
    t->fcount = t->demand_misses = t->memory_reads = t->recent = NULL;
    t->qr = (Vec){0};
    t->qc = (Vec){0};
}

static void Thread_dealloc(Thread *t) {
    PyObject_GC_UnTrack(t);
    thread_clear(t);
    free_arrays(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static int Thread_init(Thread *t, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"spec", "l1", "l2", "tid", "cpu", "l2base", "l2_hit", "memory", "window",
                             "mib", "mispredict", "cpa", "slots", "prefetch", "pf_d1", "pf_d2",
                             "pf_table", "loop", NULL};
    PyObject *spec, *l1, *l2;
    long long tid, cpu, l2base, l2_hit, memory, window, mib, mispredict, cpa, pf_d1, pf_d2, pf_table;
    Py_ssize_t slots;
    int prefetch, loop;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!LLLLLLLLLnpLLLp", kwlist, &spec, &CacheType, &l1,
                                     &CacheType, &l2, &tid, &cpu, &l2base, &l2_hit, &memory, &window, &mib,
                                     &mispredict, &cpa, &slots, &prefetch, &pf_d1, &pf_d2, &pf_table, &loop))
        return -1;
    if (slots < 1 || pf_table < 0) {
        PyErr_SetString(PyExc_ValueError, "slots must be >= 1 and the prefetch table >= 0");
        return -1;
    }
    PyObject *gen = PyObject_CallMethodNoArgs(spec, str_stream);
    if (gen == NULL) return -1;
    PyObject *it = PyObject_GetIter(gen);
    Py_DECREF(gen);
    if (it == NULL) return -1;
    thread_clear(t);
    free_arrays(t);
    Py_INCREF(spec);
    t->spec = spec;
    t->gen = it;
    Py_INCREF(l1);
    t->l1 = (Cache *)l1;
    Py_INCREF(l2);
    t->l2 = (Cache *)l2;
    Py_INCREF(Py_None);
    t->sampler = Py_None;
    t->pos = 0;
    t->tid = tid;
    t->cpu = cpu;
    t->l2base = l2base;
    t->l2_hit = l2_hit;
    t->memory = memory;
    t->window = window;
    t->mib = mib;
    t->mispredict = mispredict;
    t->cpa = cpa;
    t->slots = slots;
    t->prefetch = prefetch;
    t->pf_d1 = pf_d1;
    t->pf_d2 = pf_d2;
    t->pf_table = pf_table;
    t->loop = loop;
    t->fcount = PyMem_Calloc((size_t)slots, sizeof(i64));
    t->demand_misses = PyMem_Calloc((size_t)slots, sizeof(i64));
    t->memory_reads = PyMem_Calloc((size_t)slots, sizeof(i64));
    t->recent = PyMem_Calloc((size_t)pf_table + 1, sizeof(i64));
    if (!t->fcount || !t->demand_misses || !t->memory_reads || !t->recent) {
        PyErr_NoMemory();
        return -1;
    }
    t->nrecent = 0;
    t->done = 0;
    t->passes = t->pass_start = t->cyc = t->acc = 0;
    t->l1_refill_pf = t->l1_wb = t->l1_miss_wait = t->l2_other = t->l2_refill_pf = t->l2_wb = 0;
    t->swap_dm = t->mibmch_prf = t->wait_l1 = t->wait_l2 = t->fe_stall = t->exits = t->ifetch = 0;
    return 0;
}

/* The sampler's refill(), when a sampler is set and wants this kind (``which``). */
static int sample(Thread *t, PyObject *which, i64 line, i64 fl, i64 issued, i64 ready) {
    PyObject *sampler = t->sampler;
    if (sampler == Py_None) return 0;
    PyObject *wanted = PyObject_GetAttr(sampler, which);
    if (wanted == NULL) return -1;
    int yes = PyObject_IsTrue(wanted);
    Py_DECREF(wanted);
    if (yes <= 0) return yes;
    Py_INCREF(sampler);
    PyObject *r = PyObject_CallMethod(sampler, "refill", "LLLLLL", (long long)t->tid, (long long)t->cpu,
                                      (long long)line, (long long)fl, (long long)issued, (long long)ready);
    Py_DECREF(sampler);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* SimThread._l2_inflight: a request meets a refill of the same line still on its way. */
static i64 l2_inflight(Thread *t, i64 line, i64 v2, i64 cyc, int demand) {
    cache_touch(t->l2, line);
    i64 allocated_by = (v2 >> 2) & 1;
    if (demand && allocated_by == BY_PREFETCH) {
        t->swap_dm += 1;
    } else if (!demand && allocated_by == BY_DEMAND) {
        t->mibmch_prf += 1;
        t->l2_refill_pf += 1;
    }
    i64 a = v2 >> 4, b = cyc + t->l2_hit;
    return a > b ? a : b;
}

/* SimThread._l2_write: a dirty L1D victim written back to L2. */
static void l2_write(Thread *t, i64 line, i64 sec, i64 cyc) {
    Cache *l2 = t->l2;
    t->l2_other += 1;
    Py_ssize_t si = set_of(l2, line);
    int i = cache_find(l2, line, si);
    if (i >= 0) {
        cache_touch_at(l2, si, i);
        l2->states[si * l2->stride + l2->n[si] - 1] |= DIRTY;
        return;
    }
    i64 victim, vstate;
    int inserted;
    int evicted = cache_fill(l2, line, (cyc << 4) | DIRTY | (t->l2base + (sec & 1)), &victim, &vstate, &inserted);
    if (!inserted) t->l2_wb += 1; /* the sector may not allocate in L2 either: straight to memory */
    if (evicted && (vstate & DIRTY)) t->l2_wb += 1;
}

/* An L2 fill whose dirty victim is a memory write. */
static inline void l2_fill_counted(Thread *t, i64 line, i64 state) {
    i64 victim, vstate;
    int inserted;
    if (cache_fill(t->l2, line, state, &victim, &vstate, &inserted) && (vstate & DIRTY)) t->l2_wb += 1;
}

/* An L1D fill whose dirty victim goes to L2; returns whether the line went in. */
static inline int l1_fill_written(Thread *t, i64 line, i64 state, i64 cyc, i64 *l1_wb) {
    i64 victim, vstate;
    int inserted;
    if (cache_fill(t->l1, line, state, &victim, &vstate, &inserted) && (vstate & DIRTY)) {
        *l1_wb += 1;
        l2_write(t, victim, vstate & SECTOR_MASK, cyc);
    }
    return inserted;
}

/* SimThread._prefetch_l1: a prefetch into L1D. */
static int prefetch_l1(Thread *t, i64 line, i64 fl, i64 cyc) {
    i64 sec = (fl >> 1) & 3;
    t->l1_refill_pf += 1;
    Cache *l2 = t->l2;
    Py_ssize_t si = set_of(l2, line);
    int i = cache_find(l2, line, si);
    i64 ready, source;
    if (i < 0) {
        ready = cyc + t->memory;
        source = FROM_MEMORY;
        t->l2_refill_pf += 1;
        l2_fill_counted(t, line, (ready << 4) | (BY_PREFETCH << 2) | t->l2base | (sec & 1));
    } else {
        i64 v2 = l2->states[si * l2->stride + i];
        if ((v2 >> 4) <= cyc) {
            cache_touch_at(l2, si, i);
            ready = cyc + t->l2_hit;
            source = FROM_L2;
        } else {
            ready = l2_inflight(t, line, v2, cyc, 0);
            source = FROM_MEMORY;
        }
    }
    t->l1_miss_wait += ready - cyc;
    if (sample(t, str_prefetch, line, fl, cyc, ready) < 0) return -1;
    l1_fill_written(t, line, PF_MARK | (ready << 4) | (source << 2) | sec, cyc, &t->l1_wb);
    return 0;
}

/* SimThread._start_stream: misses to line - 1 and line start a stream. */
static int start_stream(Thread *t, i64 line, i64 fl, i64 cyc) {
    for (i64 x = line + 1; x < line + t->pf_d1 + 1; x++) {
        if (!cache_has(t->l1, x) && prefetch_l1(t, x, fl, cyc) < 0) return -1;
    }
    i64 state = ((cyc + t->memory) << 4) | (BY_PREFETCH << 2) | t->l2base | ((fl >> 1) & 1);
    i64 issued = 0;
    for (i64 x = line + t->pf_d1 + 1; x < line + t->pf_d2 + 1; x++) {
        if (cache_has(t->l2, x) || cache_has(t->l1, x)) continue;
        issued += 1;
        l2_fill_counted(t, x, state);
    }
    t->l2_other += issued;
    t->l2_refill_pf += issued;
    return 0;
}

/* SimThread._advance: a prefetched line was used; keep the stream the same distance ahead. */
static int advance(Thread *t, i64 line, i64 fl, i64 cyc) {
    i64 x = line + t->pf_d1;
    if (!cache_has(t->l1, x) && prefetch_l1(t, x, fl, cyc) < 0) return -1;
    if (t->pf_d2 > t->pf_d1) {
        x = line + t->pf_d2;
        if (!cache_has(t->l2, x) && !cache_has(t->l1, x)) {
            t->l2_other += 1;
            t->l2_refill_pf += 1;
            l2_fill_counted(t, x, ((cyc + t->memory) << 4) | (BY_PREFETCH << 2) | t->l2base | ((fl >> 1) & 1));
        }
    }
    return 0;
}

/* SimThread._rare for an access whose tag is in L1D but is not a plain hit. */
static int rare_hit(Thread *t, i64 line, i64 fl, i64 v, i64 clk, i64 acc) {
    if (v >= PF_MARK) {
        v -= PF_MARK;
        cache_set_state(t->l1, line, v);
        if (t->prefetch && advance(t, line, fl, clk >> 4) < 0) return -1;
    }
    cache_touch(t->l1, line);
    if (fl & FL_WRITE) cache_set_state(t->l1, line, v | DIRTY);
    if (v > clk) {
        i64 ready = v | 15;
        if (vec_push(&t->qr, ((v >> 2) & 1) == FROM_MEMORY ? ready : ready - 1) < 0) return -1;
        if (vec_push(&t->qc, acc + t->window) < 0) return -1;
    }
    return 0;
}

static inline i64 floor_shift4(i64 x) { return x >> 4; }

/* One record (line, n, fl) from the chunk; -1 with an exception when it is not three ints. */
static int unpack(PyObject *rec, i64 *line, i64 *n, i64 *fl) {
    if (PyTuple_CheckExact(rec) && PyTuple_GET_SIZE(rec) == 3) {
        if (as_i64(PyTuple_GET_ITEM(rec, 0), line) < 0 || as_i64(PyTuple_GET_ITEM(rec, 1), n) < 0 ||
            as_i64(PyTuple_GET_ITEM(rec, 2), fl) < 0)
            return -1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(rec, "a record is (line, n, flags)");
    if (seq == NULL) return -1;
    int bad = PySequence_Fast_GET_SIZE(seq) != 3;
    if (bad) PyErr_SetString(PyExc_ValueError, "a record is (line, n, flags)");
    else
        bad = as_i64(PySequence_Fast_GET_ITEM(seq, 0), line) < 0 || as_i64(PySequence_Fast_GET_ITEM(seq, 1), n) < 0 ||
              as_i64(PySequence_Fast_GET_ITEM(seq, 2), fl) < 0;
    Py_DECREF(seq);
    return bad ? -1 : 0;
}

/* SimThread.run: simulate until this core's clock reaches ``limit`` ticks or the stream ends. */
static PyObject *Thread_run(Thread *t, PyObject *const *args, Py_ssize_t nargs) {
    i64 limit;
    PyObject *next_limit = Py_None;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "run(limit, next_limit=None)");
        return NULL;
    }
    if (as_i64(args[0], &limit) < 0) return NULL;
    if (nargs == 2) next_limit = args[1];
    if (t->done) Py_RETURN_NONE;

    Cache *l1 = t->l1;
    Cache *l2 = t->l2;
    const i64 memory = t->memory << 4;
    const i64 l2_hit = t->l2_hit << 4;
    const i64 cpa = t->cpa << 4;
    const i64 window = t->window;
    const i64 mib = t->mib;
    const i64 l2base = t->l2base;
    const Py_ssize_t slots = t->slots;
    i64 *fcount = t->fcount;
    i64 *demand_misses = t->demand_misses;
    i64 *memory_reads = t->memory_reads;
    Vec *qr = &t->qr;
    Vec *qc = &t->qc;
    Py_ssize_t h = 0;
    i64 hc = qc->len ? qc->v[0] : NEVER;
    i64 clk = (t->cyc << 4) | 15;
    limit = (limit << 4) | 15;
    i64 acc = t->acc;
    const i64 clk0 = clk, acc0 = acc, fe0 = t->fe_stall;
    i64 wl1 = 0, l1_wb = 0, miss_wait = 0;
    i64 run_fl = 0, run_start = acc;
    int failed = 0;

    for (;;) {
        if (t->chunk == NULL || t->pos >= (t->packed ? t->npacked : PySequence_Fast_GET_SIZE(t->chunk))) {
            /* The chunk is done: the next one, or the stream's end. */
            vec_drop_front(qr, h);
            vec_drop_front(qc, h);
            h = 0;
            Py_CLEAR(t->chunk);
            PyObject *chunk = PyIter_Next(t->gen);
            if (chunk == NULL) {
                if (PyErr_Occurred()) {
                    failed = 1;
                    break;
                }
                t->passes += 1;
                if (t->loop && acc > t->pass_start) { /* an empty stream must not spin forever */
                    t->pass_start = acc;
                    PyObject *gen = PyObject_CallMethodNoArgs(t->spec, str_stream);
                    PyObject *it = gen == NULL ? NULL : PyObject_GetIter(gen);
                    Py_XDECREF(gen);
                    if (it == NULL) {
                        failed = 1;
                        break;
                    }
                    Py_SETREF(t->gen, it);
                    continue;
                }
                t->done = 1;
                /* The thread ends when its last outstanding miss has arrived. */
                for (Py_ssize_t k = 0; k < qr->len; k++) {
                    i64 r = qr->v[k];
                    if (r > clk) {
                        if (r & 1) {
                            clk = r;
                        } else {
                            wl1 += r + 1 - clk;
                            clk = r + 1;
                        }
                    }
                }
                qr->len = 0;
                qc->len = 0;
                break;
            }
            if ((PyObject *)Py_TYPE(chunk) == region_mark_type || (PyObject *)Py_TYPE(chunk) == idle_type) {
                /* The caller applies it, then calls run() again. Kept in the thread, not in a local
                 * of this loop: a local live across it made the miss-bound path 9 % slower. */
                t->mark = chunk;
                break;
            }
            t->pos = 0;
            t->packed = NULL;
            if (PyBytes_Check(chunk)) {
                /* Packed records (a traced program's, sectormon/sim/qemu): read in place. */
                if (PyBytes_GET_SIZE(chunk) % (Py_ssize_t)(3 * sizeof(i64))) {
                    Py_DECREF(chunk);
                    PyErr_SetString(PyExc_ValueError, "a packed chunk holds whole int64 (line, n, flags) triples");
                    failed = 1;
                    break;
                }
                t->chunk = chunk;
                t->packed = (const i64 *)PyBytes_AS_STRING(chunk);
                t->npacked = PyBytes_GET_SIZE(chunk) / (Py_ssize_t)(3 * sizeof(i64));
                continue;
            }
            t->chunk = PySequence_Fast(chunk, "a chunk is a list of records");
            Py_DECREF(chunk);
            if (t->chunk == NULL) {
                failed = 1;
                break;
            }
            continue;
        }
        i64 line, n, fl;
        if (t->packed) {
            const i64 *r = t->packed + 3 * t->pos;
            line = r[0];
            n = r[1];
            fl = r[2];
        } else if (unpack(PySequence_Fast_GET_ITEM(t->chunk, t->pos), &line, &n, &fl) < 0) {
            failed = 1;
            break;
        }
        t->pos += 1;
        if (fl < 0 || fl >= slots) {
            PyErr_Format(PyExc_IndexError, "record flags %lld outside the thread's %zd flag slots",
                         (long long)fl, slots);
            failed = 1;
            break;
        }
        if (fl != run_fl) {
            fcount[run_fl] += acc - run_start;
            run_fl = fl;
            run_start = acc;
        }
        Py_ssize_t si = set_of(l1, line);
        int li = cache_find(l1, line, si);
        if (li < 0) {
            if (fl & FL_SPECIAL) {
                i64 count = -1 - line;
                if (fl & FL_EXIT) {
                    t->exits += count;
                    t->fe_stall += count * t->mispredict;
                    clk += (count * t->mispredict) << 4;
                } else {
                    t->ifetch += count;
                }
            } else {
                /* An L1D demand miss. With the L1D miss buffers full, wait for the oldest. */
                Py_ssize_t last = qr->len - (Py_ssize_t)mib;
                while (h <= last) {
                    i64 r = qr->v[h++];
                    if (r > clk) {
                        if (r & 1) {
                            clk = r;
                        } else {
                            wl1 += r + 1 - clk;
                            clk = r + 1;
                        }
                    }
                }
                i64 ready, state;
                Py_ssize_t si2 = set_of(l2, line);
                int li2 = cache_find(l2, line, si2);
                if (li2 < 0) {
                    ready = clk + memory;
                    if (vec_push(qr, ready) < 0) {
                        failed = 1;
                        break;
                    }
                    demand_misses[fl] += 1;
                    memory_reads[fl] += 1;
                    miss_wait += memory;
                    state = ready + (FROM_MEMORY << 2) + ((fl >> 1) & 3) + ((fl & FL_WRITE) ? DIRTY : 0) - 15;
                    l2_fill_counted(t, line, ready + (l2base | ((fl >> 1) & 1)) - 15);
                } else {
                    i64 v2 = l2->states[si2 * l2->stride + li2];
                    if (v2 <= clk) {
                        cache_touch_at(l2, si2, li2);
                        ready = clk + l2_hit;
                        if (vec_push(qr, ready - 1) < 0) {
                            failed = 1;
                            break;
                        }
                        demand_misses[fl] += 1;
                        miss_wait += l2_hit;
                        state = ready + (FROM_L2 << 2) + ((fl >> 1) & 3) + ((fl & FL_WRITE) ? DIRTY : 0) - 15;
                    } else {
                        ready = (l2_inflight(t, line, v2, clk >> 4, 1) << 4) | 15;
                        if (vec_push(qr, ready) < 0) {
                            failed = 1;
                            break;
                        }
                        demand_misses[fl] += 1;
                        miss_wait += ready - clk;
                        state = ready + (FROM_MEMORY << 2) + ((fl >> 1) & 3) + ((fl & FL_WRITE) ? DIRTY : 0) - 15;
                    }
                }
                if (sample(t, str_demand, line, fl, clk >> 4, ready >> 4) < 0 || vec_push(qc, acc + window) < 0) {
                    failed = 1;
                    break;
                }
                hc = qc->v[h];
                i64 sec = (fl >> 1) & 3;
                int inserted = l1_fill_written(t, line, state, clk >> 4, &l1_wb);
                if (!inserted && (fl & FL_WRITE)) l2_write(t, line, sec, clk >> 4); /* write through */
                if (t->prefetch) {
                    /* The stream prefetcher: two misses to consecutive lines start a stream. */
                    i64 *rt = t->recent;
                    Py_ssize_t nr = t->nrecent, found = -1, have = -1;
                    for (Py_ssize_t k = nr - 1; k >= 0; k--) {
                        if (rt[k] == line - 1) {
                            found = k;
                            break;
                        }
                    }
                    if (found >= 0) {
                        memmove(rt + found, rt + found + 1, (size_t)(nr - 1 - found) * sizeof(i64));
                        t->nrecent = nr - 1;
                        if (start_stream(t, line, fl, clk >> 4) < 0) {
                            failed = 1;
                            break;
                        }
                    } else {
                        for (Py_ssize_t k = nr - 1; k >= 0; k--) {
                            if (rt[k] == line) {
                                have = k;
                                break;
                            }
                        }
                        if (have < 0) {
                            rt[nr++] = line;
                            if (nr > t->pf_table) {
                                memmove(rt, rt + 1, (size_t)(nr - 1) * sizeof(i64));
                                nr -= 1;
                            }
                            t->nrecent = nr;
                        }
                    }
                }
            }
        } else {
            i64 v = l1->states[si * l1->stride + li];
            if (v <= clk) {
                cache_touch_at(l1, si, li);
                if (fl & 1) l1->states[si * l1->stride + l1->n[si] - 1] = v | 8;
            } else {
                /* rare_hit pushes onto the queue: account for the entries already popped. */
                if (rare_hit(t, line, fl, v, clk, acc) < 0) {
                    failed = 1;
                    break;
                }
                hc = qc->len > h ? qc->v[h] : NEVER;
            }
        }
        acc += n;
        clk += n * cpa;
        if (acc >= hc) {
            /* Past the window of the oldest miss: arrived misses leave, the first one still
             * outstanding (if its window is closed) stalls the core. */
            while (qr->len > h) {
                i64 r = qr->v[h];
                if (r <= clk) {
                    h += 1;
                } else if (acc < qc->v[h]) {
                    break;
                } else {
                    h += 1;
                    if (r & 1) {
                        clk = r;
                    } else {
                        wl1 += r + 1 - clk;
                        clk = r + 1;
                    }
                }
            }
            hc = qc->len > h ? qc->v[h] : NEVER;
        }
        if (clk >= limit) {
            if (next_limit == Py_None) break;
            PyObject *now = PyLong_FromLongLong(clk >> 4);
            PyObject *r = now == NULL ? NULL : PyObject_CallOneArg(next_limit, now);
            Py_XDECREF(now);
            if (r == NULL || as_i64(r, &limit) < 0) {
                Py_XDECREF(r);
                failed = 1;
                break;
            }
            Py_DECREF(r);
            if (!limit) break;
            limit = (limit << 4) | 15;
        }
    }
    vec_drop_front(qr, h);
    vec_drop_front(qc, h);
    fcount[run_fl] += acc - run_start;
    t->cyc = floor_shift4(clk);
    t->acc = acc;
    /* The clock moved by the issue cycles, the loop exits' penalties and the stalls. */
    i64 stalls = clk - clk0 - cpa * (acc - acc0) - ((t->fe_stall - fe0) << 4);
    t->wait_l1 += floor_shift4(wl1);
    t->wait_l2 += floor_shift4(stalls - wl1);
    t->l1_wb += l1_wb;
    t->l1_miss_wait += floor_shift4(miss_wait);
    if (failed) return NULL;
    if (t->mark != NULL) { /* a RegionMark or Idle met between two chunks: returned with the state written back */
        PyObject *mark = t->mark;
        t->mark = NULL;
        return mark;
    }
    Py_RETURN_NONE;
}

static PyObject *list_of(const i64 *v, Py_ssize_t n) {
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

static PyObject *Thread_get_fcount(Thread *t, void *Py_UNUSED(c)) { return list_of(t->fcount, t->slots); }
static PyObject *Thread_get_demand_misses(Thread *t, void *Py_UNUSED(c)) {
    return list_of(t->demand_misses, t->slots);
}
static PyObject *Thread_get_memory_reads(Thread *t, void *Py_UNUSED(c)) { return list_of(t->memory_reads, t->slots); }
static PyObject *Thread_get_recent(Thread *t, void *Py_UNUSED(c)) { return list_of(t->recent, t->nrecent); }

static i64 total_of(const i64 *v, Py_ssize_t n) {
    i64 out = 0;
    for (Py_ssize_t i = 0; i < n; i++) out += v[i];
    return out;
}

static PyObject *Thread_get_demand_total(Thread *t, void *Py_UNUSED(c)) {
    return PyLong_FromLongLong(total_of(t->demand_misses, t->slots));
}
static PyObject *Thread_get_memory_total(Thread *t, void *Py_UNUSED(c)) {
    return PyLong_FromLongLong(total_of(t->memory_reads, t->slots));
}

/* low_fcount(): data accesses per low flags value (those below the object id), summed over every
 * object: what the derived counters read, without a copy of every object's slots. */
static PyObject *Thread_low_fcount(Thread *t, PyObject *Py_UNUSED(ignored)) {
    i64 low[FLAG_SLOTS] = {0};
    for (Py_ssize_t i = 0; i < t->slots; i++) low[i % FLAG_SLOTS] += t->fcount[i];
    return list_of(low, FLAG_SLOTS);
}

static PyGetSetDef Thread_getset[] = {
    {"fcount", (getter)Thread_get_fcount, NULL, "Data accesses per access flags (a copy).", NULL},
    {"demand_misses", (getter)Thread_get_demand_misses, NULL, "L1D demand refills per flags (a copy).", NULL},
    {"memory_reads", (getter)Thread_get_memory_reads, NULL, "Demand misses sent to memory per flags (a copy).", NULL},
    {"recent", (getter)Thread_get_recent, NULL, "The prefetcher's table, oldest line first.", NULL},
    {"demand_total", (getter)Thread_get_demand_total, NULL, "L1D demand refills over every flags value.", NULL},
    {"memory_total", (getter)Thread_get_memory_total, NULL, "Demand misses sent to memory over every flags value.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define COUNTER(name) {#name, T_LONGLONG, offsetof(Thread, name), 0, NULL}
#define FIXED(name) {#name, T_LONGLONG, offsetof(Thread, name), READONLY, NULL}
static PyMemberDef Thread_members[] = {
    {"l1", T_OBJECT, offsetof(Thread, l1), READONLY, "This core's L1D."},
    {"l2", T_OBJECT, offsetof(Thread, l2), READONLY, "The CMG's L2."},
    {"spec", T_OBJECT, offsetof(Thread, spec), READONLY, "What the thread runs."},
    {"sampler", T_OBJECT, offsetof(Thread, sampler), 0, "Sees every L1D refill when a session samples them."},
    {"done", T_BOOL, offsetof(Thread, done), 0, NULL},
    FIXED(tid), FIXED(cpu), FIXED(l2base), FIXED(window), FIXED(mib),
    COUNTER(passes), COUNTER(pass_start), COUNTER(cyc), COUNTER(acc),
    COUNTER(l1_refill_pf), COUNTER(l1_wb), COUNTER(l1_miss_wait), COUNTER(l2_other), COUNTER(l2_refill_pf),
    COUNTER(l2_wb), COUNTER(swap_dm), COUNTER(mibmch_prf), COUNTER(wait_l1), COUNTER(wait_l2),
    COUNTER(fe_stall), COUNTER(exits), COUNTER(ifetch),
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef Thread_methods[] = {
    {"run", (PyCFunction)(void (*)(void))Thread_run, METH_FASTCALL,
     "Simulate until the clock reaches limit ticks, the stream ends or yields a RegionMark or an Idle, "
     "which it returns (thread.SimThread.run)."},
    {"low_fcount", (PyCFunction)Thread_low_fcount, METH_NOARGS,
     "Data accesses per low flags value (below the object id), summed over the objects."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ThreadType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sectormon.sim._core.Thread",
    .tp_basicsize = sizeof(Thread),
    .tp_dealloc = (destructor)Thread_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One simulated thread's state and run loop (thread.SimThread's, compiled).",
    .tp_traverse = (traverseproc)thread_traverse,
    .tp_clear = (inquiry)thread_clear,
    .tp_methods = Thread_methods,
    .tp_members = Thread_members,
    .tp_getset = Thread_getset,
    .tp_init = (initproc)Thread_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sectormon.sim._core",
    .m_doc = "The simulated A64FX's compiled core (see sectormon/sim/native.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__core(void) {
    str_demand = PyUnicode_InternFromString("demand");
    str_prefetch = PyUnicode_InternFromString("prefetch");
    str_stream = PyUnicode_InternFromString("stream");
    if (!str_demand || !str_prefetch || !str_stream) return NULL;
    PyObject *stream = PyImport_ImportModule("sectormon.sim.stream");
    if (stream == NULL) return NULL;
    region_mark_type = PyObject_GetAttrString(stream, "RegionMark");
    idle_type = PyObject_GetAttrString(stream, "Idle");
    Py_DECREF(stream);
    if (region_mark_type == NULL || idle_type == NULL) return NULL;
    if (PyType_Ready(&CacheType) < 0 || PyType_Ready(&ThreadType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Cache", (PyObject *)&CacheType) < 0 ||
        PyModule_AddObjectRef(m, "Thread", (PyObject *)&ThreadType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
