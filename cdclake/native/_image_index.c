/* Where each column's value is in an image map column, for every column at once (cdclake.native).
 *
 * The driver fold (``compaction/arrow_fold.py``, ``_Image``) looks up each column of a table in an image
 * map column: per sorted event, the flat index of the column's value. In numpy that is a scan of every
 * map entry per column (the entries' name codes compared with the column's), then two gathers into the
 * sorted order: a quarter of a 400k-event fold for a table of 20 columns. One pass over the entries gives
 * every column's answer.
 *
 * first_entries(codes, row_offsets, sorted_of_row, low, high, m):
 *   codes: E int64 name codes (0 or more) of the entries, in flat order; only the codes low .. high - 1 are
 *   answered (a block of names: the answer of every name of a wide table at once would not fit);
 *   row_offsets: n + 1 ascending int64 bounds of each row's entries (the first 0, the last E);
 *   sorted_of_row: n int64, the sorted event (0 .. m - 1) reading each row (-1: none; each sorted event reads
 *   one row, and no two rows have the same one, which the caller checks);
 *   returns a bytearray of (high - low) * m int64, row ``code - low`` holding per sorted event the flat index of
 *   its row's first entry of that name, -1 where its row has none (a name's answers side by side: each lookup
 *   reads them as one contiguous array, which the fold's gathers read faster than every m-th value).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *first_entries(PyObject *self, PyObject *args) {
    Py_buffer codes, offs, sorted;
    Py_ssize_t low, high, m;
    if (!PyArg_ParseTuple(args, "y*y*y*nnn", &codes, &offs, &sorted, &low, &high, &m)) return NULL;
    PyObject *out = NULL;
    const int64_t *c = (const int64_t *)codes.buf;
    const int64_t *o = (const int64_t *)offs.buf;
    const int64_t *s = (const int64_t *)sorted.buf;
    Py_ssize_t entries = codes.len / 8, rows = sorted.len / 8;
    if (codes.len % 8 || offs.len % 8 || sorted.len % 8 || offs.len / 8 != rows + 1 || low < 0 || high < low || m < 0) {
        PyErr_SetString(PyExc_ValueError, "codes, offsets, sorted: int64; n + 1 offsets for n rows");
        goto done;
    }
    if (o[0] != 0 || o[rows] != entries) {
        PyErr_SetString(PyExc_ValueError, "offsets must run from 0 to the number of entries");
        goto done;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (o[r] > o[r + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets not ascending");
            goto done;
        }
        if (s[r] < -1 || s[r] >= m) {
            PyErr_SetString(PyExc_ValueError, "a sorted event out of range");
            goto done;
        }
    }
    for (Py_ssize_t e = 0; e < entries; e++) {
        if (c[e] < 0) {
            PyErr_SetString(PyExc_ValueError, "a negative name code");
            goto done;
        }
    }
    Py_ssize_t names = high - low;
    if (names && m > PY_SSIZE_T_MAX / 8 / names) {
        PyErr_SetString(PyExc_MemoryError, "too many names and events");
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, names * m * 8);
    if (!out) goto done;
    int64_t *at = (int64_t *)PyByteArray_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS /* plain C over buffers the caller holds: the other tables' threads run meanwhile */
    memset(at, 0xff, (size_t)(names * m * 8)); /* every int64 -1 */
    for (Py_ssize_t r = 0; r < rows; r++) {
        int64_t p = s[r];
        if (p < 0) continue;
        for (int64_t e = o[r]; e < o[r + 1]; e++) {
            if (c[e] < low || c[e] >= high) continue;
            int64_t *slot = at + (c[e] - low) * m + p;
            if (*slot < 0) *slot = e; /* a name twice in a map: its first value, as a map lookup gives */
        }
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&codes);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&sorted);
    return out;
}

static PyMethodDef methods[] = {
    {"first_entries", first_entries, METH_VARARGS, "Per name and sorted event, the flat index of its first entry."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_image_index", NULL, -1, methods};

PyMODINIT_FUNC PyInit__image_index(void) { return PyModule_Create(&module); }
