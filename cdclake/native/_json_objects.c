/* Split JSON object texts into Arrow buffers of their member names and value texts (cdclake.native).
 *
 * split_objects(texts, offsets): ``texts`` holds n JSON texts back to back, ``offsets`` their n + 1 bounds
 * (int64). Each text must be ``null`` or an object as a writer with no blanks spells it: ``{"name":value,...}``,
 * no blank between members, no escape in a name. The texts are valid JSON already (msgspec read them as
 * ``Raw``), so a value is found by its brackets and quotes alone; a value keeps its own bytes, blanks inside a
 * nested value included, as msgspec's ``Raw`` does.
 *
 * Returns None when a text is not in that shape, else a tuple:
 *   counts       int32 per text: its member count (-1: null)
 *   layouts      int32 per text: its layout, the index of its list of names among the distinct lists (-1: null)
 *   name offsets int64 (members + 1), name data: the names, unquoted, in text order (an Arrow large_string)
 *   value offsets int64 (members + 1), value data: the value texts (an Arrow large_string)
 *   firsts       per layout, (index of its first name, its member count)
 *   members      the member count of all texts
 * A name twice in one object is not checked here (the caller checks each distinct layout once).
 *
 * bracket_counts(data, froms, tos): per range [froms[i], tos[i]) of ``data`` (int64 bounds), how many bytes
 * of it are ``{`` or ``[`` (int64): the bound on a record's depth that the JSON paths hold to the limit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int64_t first; /* the index of the layout's first name */
    int32_t count;
    uint64_t hash;
} Layout;

/* The end of the JSON value at p, or NULL when there is none before end. */
static const char *value_end(const char *p, const char *end) {
    if (p >= end) return NULL;
    char c = *p;
    if (c == '"') {
        p++;
        while (p < end) {
            char d = *p;
            if (d == '"') return p + 1;
            p += (d == '\\') ? 2 : 1;
        }
        return NULL;
    }
    if (c == '{' || c == '[') {
        int64_t depth = 0;
        while (p < end) {
            char d = *p;
            if (d == '"') {
                p = value_end(p, end);
                if (!p) return NULL;
                continue;
            }
            if (d == '{' || d == '[') depth++;
            else if (d == '}' || d == ']') {
                if (--depth == 0) return p + 1;
            }
            p++;
        }
        return NULL;
    }
    /* a number or a literal: up to the next delimiter or blank */
    while (p < end) {
        char d = *p;
        if (d == ',' || d == '}' || d == ']' || d == ':' || d == ' ' || d == '\n' || d == '\r' || d == '\t') break;
        p++;
    }
    return p;
}

/* Whether the names from a and from b (count each) are the same names in the same order. */
static int same_names(const int64_t *ko, const char *kd, int64_t a, int64_t b, int32_t count) {
    int64_t alen = ko[a + count] - ko[a], blen = ko[b + count] - ko[b];
    if (alen != blen || memcmp(kd + ko[a], kd + ko[b], (size_t)alen) != 0) return 0;
    for (int32_t j = 1; j < count; j++)
        if (ko[a + j] - ko[a] != ko[b + j] - ko[b]) return 0;
    return 1;
}

static PyObject *split_objects(PyObject *self, PyObject *args) {
    Py_buffer data, offs;
    if (!PyArg_ParseTuple(args, "y*y*", &data, &offs)) return NULL;
    PyObject *result = NULL, *counts = NULL, *layout_of = NULL, *key_offsets = NULL, *value_offsets = NULL;
    PyObject *key_data = NULL, *value_data = NULL, *firsts = NULL;
    Layout *layouts = NULL;
    int64_t *table = NULL;
    const char *base = (const char *)data.buf;
    const int64_t *bounds = (const int64_t *)offs.buf;
    if (offs.len < 8 || offs.len % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "offsets: n + 1 int64 bounds");
        goto done;
    }
    Py_ssize_t n = offs.len / 8 - 1;
    if (bounds[0] < 0 || bounds[n] > data.len) {
        PyErr_SetString(PyExc_ValueError, "offsets out of the texts");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (bounds[i] > bounds[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets not ascending");
            goto done;
        }
    }
    /* a member takes at least 5 bytes ("":0 and a comma or brace): the offsets fit data.len / 4 + 2 entries */
    Py_ssize_t cap = data.len / 4 + 2;
    counts = PyBytes_FromStringAndSize(NULL, n * 4);
    layout_of = PyBytes_FromStringAndSize(NULL, n * 4);
    key_offsets = PyBytes_FromStringAndSize(NULL, cap * 8);
    value_offsets = PyBytes_FromStringAndSize(NULL, cap * 8);
    key_data = PyBytes_FromStringAndSize(NULL, data.len);
    value_data = PyBytes_FromStringAndSize(NULL, data.len);
    /* at most one layout per text; an open-addressing table of at least twice as many slots finds them */
    size_t slots = 16;
    while (slots < (size_t)n * 2) slots <<= 1;
    size_t mask = slots - 1;
    layouts = PyMem_Malloc(sizeof(Layout) * (size_t)(n + 1));
    table = PyMem_Malloc(sizeof(int64_t) * slots);
    if (!counts || !layout_of || !key_offsets || !value_offsets || !key_data || !value_data) goto done;
    if (!layouts || !table) {
        PyErr_NoMemory();
        goto done;
    }
    memset(table, 0xff, sizeof(int64_t) * slots); /* every slot -1: empty */
    int32_t *cnt = (int32_t *)PyBytes_AS_STRING(counts);
    int32_t *lay = (int32_t *)PyBytes_AS_STRING(layout_of);
    int64_t *ko = (int64_t *)PyBytes_AS_STRING(key_offsets);
    int64_t *vo = (int64_t *)PyBytes_AS_STRING(value_offsets);
    char *kd = PyBytes_AS_STRING(key_data);
    char *vd = PyBytes_AS_STRING(value_data);
    int64_t nlayouts = 0, entries = 0, klen = 0, vlen = 0;
    int ok = 1;
    ko[0] = 0;
    vo[0] = 0;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        const char *p = base + bounds[i], *end = base + bounds[i + 1];
        if (end - p == 4 && memcmp(p, "null", 4) == 0) {
            cnt[i] = -1;
            lay[i] = -1;
            continue;
        }
        if (end - p < 2 || *p != '{' || end[-1] != '}') {
            ok = 0;
            break;
        }
        int64_t first = entries;
        p++;
        if (*p == '}') p++;
        else {
            for (;;) {
                if (*p != '"') { ok = 0; break; }
                const char *k = ++p;
                while (p < end && *p != '"' && *p != '\\') p++;
                if (p >= end || *p != '"') { ok = 0; break; }
                memcpy(kd + klen, k, (size_t)(p - k));
                klen += p - k;
                p++;
                if (p >= end || *p != ':') { ok = 0; break; }
                const char *v = ++p;
                p = value_end(p, end);
                if (!p || p == v) { ok = 0; break; }
                memcpy(vd + vlen, v, (size_t)(p - v));
                vlen += p - v;
                entries++;
                ko[entries] = klen;
                vo[entries] = vlen;
                if (p < end && *p == ',') { p++; continue; }
                if (p < end && *p == '}') { p++; break; }
                ok = 0;
                break;
            }
        }
        if (!ok || p != end) {
            ok = 0;
            break;
        }
        int32_t count = (int32_t)(entries - first);
        cnt[i] = count;
        /* the layout: the same names in the same order as a text before (a hash of the names and lengths) */
        uint64_t h = 1469598103934665603ULL ^ (uint64_t)count;
        for (int64_t j = first; j < entries; j++) {
            h = (h ^ (uint64_t)(ko[j + 1] - ko[j])) * 1099511628211ULL;
            for (int64_t b = ko[j]; b < ko[j + 1]; b++) h = (h ^ (unsigned char)kd[b]) * 1099511628211ULL;
        }
        size_t slot = (size_t)h & mask;
        int64_t found = -1;
        for (;;) {
            int64_t l = table[slot];
            if (l < 0) break;
            if (layouts[l].hash == h && layouts[l].count == count && same_names(ko, kd, layouts[l].first, first, count)) {
                found = l;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (found < 0) {
            layouts[nlayouts].first = first;
            layouts[nlayouts].count = count;
            layouts[nlayouts].hash = h;
            table[slot] = nlayouts;
            found = nlayouts++;
        }
        lay[i] = (int32_t)found;
    }
    if (!ok) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    firsts = PyList_New((Py_ssize_t)nlayouts);
    if (!firsts) goto done;
    for (int64_t l = 0; l < nlayouts; l++) {
        PyObject *pair = Py_BuildValue("(Li)", (long long)layouts[l].first, layouts[l].count);
        if (!pair) goto done;
        PyList_SET_ITEM(firsts, l, pair);
    }
    if (_PyBytes_Resize(&key_offsets, (entries + 1) * 8) < 0 || _PyBytes_Resize(&value_offsets, (entries + 1) * 8) < 0
        || _PyBytes_Resize(&key_data, klen) < 0 || _PyBytes_Resize(&value_data, vlen) < 0)
        goto done;
    result = Py_BuildValue("(OOOOOOOL)", counts, layout_of, key_offsets, key_data, value_offsets, value_data, firsts,
                           (long long)entries);
done:
    PyMem_Free(layouts);
    PyMem_Free(table);
    Py_XDECREF(counts);
    Py_XDECREF(layout_of);
    Py_XDECREF(key_offsets);
    Py_XDECREF(value_offsets);
    Py_XDECREF(key_data);
    Py_XDECREF(value_data);
    Py_XDECREF(firsts);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    return result;
}

static PyObject *bracket_counts(PyObject *self, PyObject *args) {
    Py_buffer data, froms, tos;
    if (!PyArg_ParseTuple(args, "y*y*y*", &data, &froms, &tos)) return NULL;
    PyObject *out = NULL;
    if (froms.len != tos.len || froms.len % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "froms and tos: n int64 bounds each");
        goto done;
    }
    Py_ssize_t n = froms.len / 8;
    const int64_t *from = (const int64_t *)froms.buf, *to = (const int64_t *)tos.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (from[i] < 0 || from[i] > to[i] || to[i] > data.len) {
            PyErr_SetString(PyExc_ValueError, "a range out of the data or reversed");
            goto done;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!out) goto done;
    int64_t *counts = (int64_t *)PyBytes_AS_STRING(out);
    const unsigned char *base = (const unsigned char *)data.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t count = 0;
        for (int64_t b = from[i]; b < to[i]; b++) count += (base[b] == '{') | (base[b] == '[');
        counts[i] = count;
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&froms);
    PyBuffer_Release(&tos);
    return out;
}

static PyMethodDef methods[] = {
    {"split_objects", split_objects, METH_VARARGS, "Split JSON object texts into member names and value texts."},
    {"bracket_counts", bracket_counts, METH_VARARGS, "Count the opening brackets of ranges of bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_json_objects", NULL, -1, methods};

PyMODINIT_FUNC PyInit__json_objects(void) { return PyModule_Create(&module); }
