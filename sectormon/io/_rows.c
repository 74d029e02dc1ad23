/* The recording reader's row check and build in C: a slice's readings as checked Row records.
 *
 * sectormon/io/jsonl.py's _rows (the Python path) stays the reference and the fallback; this is
 * the same check, one row at a time, without the Python interpreter's cost per statement and per
 * field (bench_replay in docs/perf-tuning.md, "The row check in C"). It only ever says yes or no:
 * on any problem it returns None and the Python side names the problem (_row_problem), so an
 * error reads the same on both paths. sectormon/io/native_rows.py decides which path runs.
 *
 * A reading is a list of 8: [unit str, core None|int, cmg None|int, group str, te int, tr int,
 * layout int, values list], ints exact (a bool is not a count), 0 <= tr <= te < 2**64, layout an
 * index into the slice's layouts, values as many ints in [0, 2**64) as the layout has names.
 *
 * Safety: every object a row is built from is held by a strong reference before anything is
 * allocated (an allocation may run the garbage collector, whose finalizers could change the
 * lists), the values are copied into their tuple before they are checked, and nothing here calls
 * back into Python code (exact types only: no __index__, no __eq__).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>

#if ULONG_MAX == 0xFFFFFFFFFFFFFFFFUL
/* The loop over the digits, cheaper than PyLong_AsUnsignedLongLong's byte-array path. */
#define AS_U64 PyLong_AsUnsignedLong
typedef unsigned long u64;
#else
#define AS_U64 PyLong_AsUnsignedLongLong
typedef unsigned long long u64;
#endif

#define FIELDS 8
enum { UNIT, CORE, CMG, GROUP, TE, TR, LAYOUT, VALUES };

/* Whether an exact int is in [0, 2**64), its value in *out. A failed conversion's OverflowError
 * is cleared: a count out of range is a bad row, not an exception. */
static int u64_of(PyObject *value, u64 *out) {
    if (!PyLong_CheckExact(value)) {
        return 0;
    }
    u64 v = AS_U64(value);
    if (v == (u64)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

static int int_or_none(PyObject *value) { return value == Py_None || PyLong_CheckExact(value); }

/* Whether every count of a values tuple (owned: it cannot change) is in [0, 2**64). */
static int counts_ok(PyObject *values) {
    u64 ignored;
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!u64_of(PyTuple_GET_ITEM(values, i), &ignored)) {
            return 0;
        }
    }
    return 1;
}

/* The layout a reading names (a new reference), or NULL when its index is not one. */
static PyObject *layout_of(PyObject *index, PyObject *layouts) {
    if (!PyLong_CheckExact(index)) {
        return NULL;
    }
    Py_ssize_t i = PyLong_AsSsize_t(index);
    if (i == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (i < 0 || i >= PyList_GET_SIZE(layouts)) {
        return NULL;
    }
    PyObject *names = PyList_GET_ITEM(layouts, i);
    if (!PyTuple_Check(names)) {
        return NULL;
    }
    Py_INCREF(names);
    return names;
}

/* One reading as a Row: a new reference; Py_None (a new reference) when the reading is bad; NULL
 * with an exception set when memory ran out. */
static PyObject *one_row(PyObject *reading, PyObject *layouts, PyTypeObject *row_type) {
    if (!PyList_CheckExact(reading) || PyList_GET_SIZE(reading) != FIELDS) {
        Py_RETURN_NONE;
    }
    PyObject *field[FIELDS];
    for (int f = 0; f < FIELDS; f++) {
        field[f] = PyList_GET_ITEM(reading, f);
        Py_INCREF(field[f]);
    }
    PyObject *result = Py_None;
    PyObject *names = NULL;
    PyObject *values = NULL;
    u64 te, tr;
    if (!PyUnicode_CheckExact(field[UNIT]) || !PyUnicode_CheckExact(field[GROUP]) ||
        !int_or_none(field[CORE]) || !int_or_none(field[CMG]) || !u64_of(field[TE], &te) ||
        !u64_of(field[TR], &tr) || tr > te || !PyList_CheckExact(field[VALUES])) {
        goto done;
    }
    names = layout_of(field[LAYOUT], layouts);
    if (names == NULL) {
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (PyList_GET_SIZE(field[VALUES]) != n) {
        goto done;
    }
    values = PyTuple_New(n);
    if (values == NULL) {
        result = NULL;
        goto done;
    }
    if (PyList_GET_SIZE(field[VALUES]) != n) { /* changed by a finalizer the allocation ran */
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *count = PyList_GET_ITEM(field[VALUES], i);
        Py_INCREF(count);
        PyTuple_SET_ITEM(values, i, count);
    }
    if (!counts_ok(values)) {
        goto done;
    }
    PyObject *row = row_type->tp_alloc(row_type, FIELDS);
    if (row == NULL) {
        result = NULL;
        goto done;
    }
    /* The row takes over the references held since the start, the values list's excepted. */
    PyTuple_SET_ITEM(row, 0, field[UNIT]);
    PyTuple_SET_ITEM(row, 1, field[CORE]);
    PyTuple_SET_ITEM(row, 2, field[CMG]);
    PyTuple_SET_ITEM(row, 3, field[GROUP]);
    PyTuple_SET_ITEM(row, 4, field[TE]);
    PyTuple_SET_ITEM(row, 5, field[TR]);
    PyTuple_SET_ITEM(row, 6, names);
    PyTuple_SET_ITEM(row, 7, values);
    Py_DECREF(field[LAYOUT]);
    Py_DECREF(field[VALUES]);
    return row;

done:
    for (int f = 0; f < FIELDS; f++) {
        Py_DECREF(field[f]);
    }
    Py_XDECREF(names);
    Py_XDECREF(values);
    if (result == Py_None) {
        Py_RETURN_NONE;
    }
    return NULL;
}

PyDoc_STRVAR(slice_rows_doc,
             "slice_rows(raw, layouts, row_type, /)\n--\n\n"
             "The readings ``raw`` (a list) as a tuple of ``row_type`` records (a tuple subclass of 8\n"
             "fields), ``names`` the very tuple of ``layouts`` (a list of tuples) each row's index\n"
             "names; ``None`` when any reading is malformed (the caller finds which).");

static PyObject *slice_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "slice_rows() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *raw = args[0];
    PyObject *layouts = args[1];
    PyObject *row_type = args[2];
    if (!PyList_CheckExact(raw) || !PyList_CheckExact(layouts)) {
        PyErr_SetString(PyExc_TypeError, "slice_rows() takes the readings and the layouts as lists");
        return NULL;
    }
    if (!PyType_Check(row_type) || !PyType_IsSubtype((PyTypeObject *)row_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "slice_rows() needs a tuple subclass as the row type");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(raw);
    PyObject *rows = PyTuple_New(n);
    if (rows == NULL) {
        return NULL;
    }
    /* Held: a finalizer run by an allocation below could otherwise drop the last references. */
    Py_INCREF(raw);
    Py_INCREF(layouts);
    PyObject *result = rows;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_SIZE(raw) != n) { /* changed by a finalizer: say no, the caller re-checks */
            Py_INCREF(Py_None);
            result = Py_None;
            break;
        }
        PyObject *reading = PyList_GET_ITEM(raw, i);
        Py_INCREF(reading);
        PyObject *row = one_row(reading, layouts, (PyTypeObject *)row_type);
        Py_DECREF(reading);
        if (row == NULL || row == Py_None) {
            result = row;
            break;
        }
        PyTuple_SET_ITEM(rows, i, row);
    }
    Py_DECREF(raw);
    Py_DECREF(layouts);
    if (result != rows) {
        Py_DECREF(rows); /* its unset items are NULL, which a tuple's deallocation skips */
    }
    return result; /* Py_None arrives with the reference one_row returned */
}

static PyMethodDef rows_methods[] = {
    {"slice_rows", (PyCFunction)(void (*)(void))slice_rows, METH_FASTCALL, slice_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef rows_module = {
    PyModuleDef_HEAD_INIT,
    "sectormon.io._rows",
    "The recording reader's row check in C (sectormon/io/native_rows.py chooses it).",
    0,
    rows_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__rows(void) { return PyModule_Create(&rows_module); }
