/* Which texts of an Arrow string column have one of a few fixed forms (cdclake.native).
 *
 * The merge's routing and typing judge every image value by a regular expression of its column type
 * (``compaction/arrow_typing.py``: a JSON integer of at most 18 digits, a plain decimal, a string without
 * escapes...). Arrow's regex kernel took a third of a bulk batch's compact step; these are the same forms as
 * hand-written scanners, held to the regular expressions by tests.
 *
 * number_forms(data, offsets, int_max, frac_max, exp_max, neg_zero):
 *   per text, whether it is  -?(0|[1-9][0-9]{0,int_max-1})(\.[0-9]{1,frac_max})?([eE][+-]?[0-9]{1,exp_max})?
 *   (frac_max 0: no fraction; -1: any number of fraction digits; exp_max 0: no exponent); neg_zero 0 refuses
 *   "-0" with neither fraction nor exponent.
 * quoted_forms(data, offsets, controls):
 *   per text, whether it is  "[^"\\]*"  (controls 0: no byte below 0x20 inside either).
 * iso_forms(data, offsets, with_time):
 *   per text, whether it is ``arrow_typing._ISO_DATE`` (with_time 0) or ``_ISO_TIMESTAMP`` (1).
 * judge(data, offsets, columns, kinds, params):
 *   per text, routing's judgement of it by its column's type (``judge`` below).
 * kind_codes(data, offsets):
 *   per text, the kind normalize's survey reads in it (``kind_form`` below), as an int8.
 * shape_bits(data, offsets):
 *   per text (a valid JSON value), its ``formats/_json_shapes.JsonShapes`` as bits (``shape_form`` below).
 * crc32_buckets(data, offsets, buckets):
 *   per text, ``zlib.crc32(text) % buckets`` (``merge.bucket_of`` of a key text), as n int64 (a bytearray of 8n).
 * Each takes the column's data bytes and its n + 1 int64 offsets; they return a bytearray of n values
 * (0s or 1s for the forms; writable: numpy reads it in place). The scans run without the GIL: a compact step's
 * tables run in threads, whose Python then runs beside them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int digits(const unsigned char *t, int64_t *p, int64_t len) {
    int64_t start = *p;
    while (*p < len && t[*p] >= '0' && t[*p] <= '9') (*p)++;
    return (int)(*p - start > INT32_MAX ? INT32_MAX : *p - start);
}

static int number_form(const unsigned char *t, int64_t len, int int_max, int frac_max, int exp_max, int neg_zero) {
    int64_t p = 0;
    int negative = 0;
    if (p < len && t[p] == '-') {
        negative = 1;
        p++;
    }
    if (p >= len) return 0;
    int zero = 0;
    if (t[p] == '0') {
        zero = 1;
        p++;
    } else if (t[p] >= '1' && t[p] <= '9') {
        if (digits(t, &p, len) > int_max) return 0;
    } else {
        return 0;
    }
    int tail = 0;
    if (p < len && t[p] == '.') {
        if (frac_max == 0) return 0;
        p++;
        int n = digits(t, &p, len);
        if (n < 1 || (frac_max > 0 && n > frac_max)) return 0;
        tail = 1;
    }
    if (p < len && (t[p] == 'e' || t[p] == 'E')) {
        if (exp_max == 0) return 0;
        p++;
        if (p < len && (t[p] == '+' || t[p] == '-')) p++;
        int n = digits(t, &p, len);
        if (n < 1 || n > exp_max) return 0;
        tail = 1;
    }
    if (p != len) return 0;
    if (negative && zero && !tail && !neg_zero) return 0;
    return 1;
}

static int quoted_form(const unsigned char *t, int64_t len, int controls) {
    if (len < 2 || t[0] != '"' || t[len - 1] != '"') return 0;
    for (int64_t i = 1; i < len - 1; i++) {
        unsigned char c = t[i];
        if (c == '"' || c == '\\' || (!controls && c < 0x20)) return 0;
    }
    return 1;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Two digits of ``first`` (the first digit's highest value) then any, or of ``first`` + 1 and at most ``last``. */
static int two_digits(const unsigned char *t, char low_first, char high_first, char high_last) {
    if (!is_digit(t[0]) || !is_digit(t[1]) || t[0] < low_first || t[0] > high_first) return 0;
    return t[0] < high_first || t[1] <= high_last;
}

/* ``arrow_typing._ISO_DATE`` (``with_time`` 0) or ``_ISO_TIMESTAMP`` (1): a quoted ISO date of the years
 * 1900-2999, with a time of day, at most six fraction digits and an optional ``Z`` or ``+HH:MM`` zone. */
static int iso_form(const unsigned char *t, int64_t len, int with_time) {
    if (len < 12 || t[0] != '"' || t[len - 1] != '"') return 0;
    if (!((t[1] == '1' && t[2] == '9') || (t[1] == '2' && is_digit(t[2]))) || !is_digit(t[3]) || !is_digit(t[4]))
        return 0;
    if (t[5] != '-' || t[8] != '-') return 0;
    if (!two_digits(t + 6, '0', '1', '2') || (t[6] == '0' && t[7] == '0')) return 0; /* 01-12 */
    if (!two_digits(t + 9, '0', '3', '1') || (t[9] == '0' && t[10] == '0')) return 0;  /* 01-31 */
    if (!with_time) return len == 12;
    if (len < 21 || (t[11] != 'T' && t[11] != ' ')) return 0;
    if (!two_digits(t + 12, '0', '2', '3') || t[14] != ':' || !two_digits(t + 15, '0', '5', '9') || t[17] != ':' ||
        !two_digits(t + 18, '0', '5', '9'))
        return 0;
    int64_t p = 20, end = len - 1; /* the closing quote */
    if (p < end && t[p] == '.') {
        int64_t start = ++p;
        while (p < end && is_digit(t[p])) p++;
        if (p - start < 1 || p - start > 6) return 0;
    }
    if (p < end && t[p] == 'Z') {
        p++;
    } else if (p < end && (t[p] == '+' || t[p] == '-')) {
        if (end - p < 6 || !two_digits(t + p + 1, '0', '2', '3') || t[p + 3] != ':' || !two_digits(t + p + 4, '0', '5', '9'))
            return 0;
        p += 6;
    }
    return p == end;
}

/* The column's buffers, checked: n + 1 ascending int64 offsets within the data. */
static int column(Py_buffer *data, Py_buffer *offs, Py_ssize_t *n) {
    if (offs->len < 8 || offs->len % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "offsets: n + 1 int64 bounds");
        return 0;
    }
    const int64_t *o = (const int64_t *)offs->buf;
    *n = offs->len / 8 - 1;
    if (o[0] < 0 || o[*n] > data->len) {
        PyErr_SetString(PyExc_ValueError, "offsets out of the texts");
        return 0;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (o[i] > o[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets not ascending");
            return 0;
        }
    }
    return 1;
}

/* The form of each text: ``form(text, length, params)`` into a bytearray of n 0s or 1s. */
static PyObject *scan(Py_buffer *data, Py_buffer *offs, int (*form)(const unsigned char *, int64_t, const int *),
                      const int *params) {
    PyObject *out = NULL;
    Py_ssize_t n;
    if (column(data, offs, &n)) {
        out = PyByteArray_FromStringAndSize(NULL, n);
        if (out) {
            const unsigned char *t = (const unsigned char *)data->buf;
            const int64_t *o = (const int64_t *)offs->buf;
            char *r = PyByteArray_AS_STRING(out);
            Py_BEGIN_ALLOW_THREADS /* plain C over buffers the caller holds: other threads run meanwhile */
            for (Py_ssize_t i = 0; i < n; i++) r[i] = (char)form(t + o[i], o[i + 1] - o[i], params);
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(data);
    PyBuffer_Release(offs);
    return out;
}

static int number_params(const unsigned char *t, int64_t len, const int *p) {
    return number_form(t, len, p[0], p[1], p[2], p[3]);
}

static int quoted_params(const unsigned char *t, int64_t len, const int *p) { return quoted_form(t, len, p[0]); }

static PyObject *number_forms(PyObject *self, PyObject *args) {
    Py_buffer data, offs;
    int params[4];
    if (!PyArg_ParseTuple(args, "y*y*iiii", &data, &offs, &params[0], &params[1], &params[2], &params[3])) return NULL;
    return scan(&data, &offs, number_params, params);
}

static PyObject *quoted_forms(PyObject *self, PyObject *args) {
    Py_buffer data, offs;
    int params[1];
    if (!PyArg_ParseTuple(args, "y*y*i", &data, &offs, &params[0])) return NULL;
    return scan(&data, &offs, quoted_params, params);
}

/* The kind a JSON text suggests, as ``batch_events._kind_codes`` judges it: -1 ``null``, 4 ``true`` / ``false``,
 * 3 a text opening with a quote or a bracket, 1 ``-?[0-9]+`` of at most 18 digits, 5 a longer one (the caller
 * judges those), else 0. */
static int kind_form(const unsigned char *t, int64_t len, const int *unused) {
    (void)unused;
    if (len == 4 && memcmp(t, "null", 4) == 0) return -1;
    if ((len == 4 && memcmp(t, "true", 4) == 0) || (len == 5 && memcmp(t, "false", 5) == 0)) return 4;
    if (len > 0 && (t[0] == '"' || t[0] == '{' || t[0] == '[')) return 3;
    int64_t p = len > 0 && t[0] == '-' ? 1 : 0;
    if (p >= len) return 0;
    for (int64_t i = p; i < len; i++)
        if (t[i] < '0' || t[i] > '9') return 0;
    return len - p > 18 ? 5 : 1;
}

/* The shape of a valid JSON text, as ``_json_shapes.json_shapes`` reads it from the bytes: 1 ``null``, 2 a boolean,
 * 4 a string, 8 a number the builder writes as it is, 16 such a number without a point, 32 a text the builder writes
 * another way (a backslash, a nested value, a number with an exponent, ``-0``, or one starting ``0.000000`` /
 * ``-0.000000``), 64 a backslash; 0 for an empty text. */
static int shape_form(const unsigned char *t, int64_t len, const int *unused) {
    (void)unused;
    if (len <= 0) return 0;
    unsigned char c = t[0];
    int bits = memchr(t, '\\', (size_t)len) ? 64 | 32 : 0;
    if (c == 'n' && len == 4) return bits | 1;
    if (c == 't' || c == 'f') return bits | 2;
    if (c == '"') return bits | 4;
    if (c == '{' || c == '[') return bits | 32;
    if (c != '-' && (c < '0' || c > '9')) return bits;
    int exponent = 0, point = 0;
    for (int64_t i = 0; i < len; i++) {
        if (t[i] == 'e' || t[i] == 'E') exponent = 1;
        else if (t[i] == '.') point = 1;
    }
    int tiny = (c == '-' && len == 2 && t[1] == '0') || (len >= 8 && memcmp(t, "0.000000", 8) == 0)
               || (len >= 9 && memcmp(t, "-0.000000", 9) == 0);
    if (bits || exponent || tiny) return bits | 32;
    return point ? 8 : 8 | 16;
}

static PyObject *shape_bits(PyObject *self, PyObject *args) {
    Py_buffer data, offs;
    if (!PyArg_ParseTuple(args, "y*y*", &data, &offs)) return NULL;
    return scan(&data, &offs, shape_form, NULL);
}

static int iso_params(const unsigned char *t, int64_t len, const int *p) { return iso_form(t, len, p[0]); }

static PyObject *iso_forms(PyObject *self, PyObject *args) {
    Py_buffer data, offs;
    int params[1];
    if (!PyArg_ParseTuple(args, "y*y*i", &data, &offs, &params[0])) return NULL;
    return scan(&data, &offs, iso_params, params);
}

static PyObject *kind_codes(PyObject *self, PyObject *args) {
    Py_buffer data, offs;
    if (!PyArg_ParseTuple(args, "y*y*", &data, &offs)) return NULL;
    return scan(&data, &offs, kind_form, NULL);
}

/* judge(data, offsets, columns, kinds, params): routing's judgement of each value of its column's type
 * (``arrow_typing._valid_values``). ``columns``: each text's column (int64; outside 0..m-1: a column the table
 * lacks); ``kinds``: each column's judgement (int8: 0 none, 1 a number form of its four ``params`` (int32, four a
 * column: ``number_forms``' arguments), 2 a string, 3 a boolean, 4 asked of the caller). Per text, an int8:
 * 3 the text ``null``; 1 accepted; 2 the caller judges it (a string that is not plain, a calendar type); else 0
 * (the reference does). */
static PyObject *judge(PyObject *self, PyObject *args) {
    Py_buffer data, offs, cols, kinds, params;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &data, &offs, &cols, &kinds, &params)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n, m = kinds.len;
    if (!column(&data, &offs, &n)) goto end;
    if (cols.len != n * 8 || params.len != m * 16) {
        PyErr_SetString(PyExc_ValueError, "columns, kinds and params do not fit the texts");
        goto end;
    }
    out = PyByteArray_FromStringAndSize(NULL, n);
    if (!out) goto end;
    const unsigned char *t = (const unsigned char *)data.buf;
    const int64_t *o = (const int64_t *)offs.buf, *c = (const int64_t *)cols.buf;
    const int8_t *k = (const int8_t *)kinds.buf;
    const int32_t *p = (const int32_t *)params.buf;
    char *r = PyByteArray_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *text = t + o[i];
        int64_t len = o[i + 1] - o[i];
        int64_t col = c[i];
        int verdict = 0;
        if (len == 4 && memcmp(text, "null", 4) == 0) {
            verdict = 3;
        } else if (col >= 0 && col < m) {
            const int32_t *q = p + 4 * col;
            switch (k[col]) {
            case 1:
                verdict = number_form(text, len, q[0], q[1], q[2], q[3]);
                break;
            case 2:
                verdict = quoted_form(text, len, 1) ? 1 : 2;
                break;
            case 3:
                verdict = (len == 4 && memcmp(text, "true", 4) == 0) || (len == 5 && memcmp(text, "false", 5) == 0);
                break;
            case 4:
                verdict = 2;
                break;
            default:
                verdict = 0;
            }
        }
        r[i] = (char)verdict;
    }
    Py_END_ALLOW_THREADS
end:
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&cols);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&params);
    return out;
}

/* zlib's CRC-32 (reflected, polynomial 0xEDB88320), a byte at a time: key texts are a few dozen bytes. */
static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static PyObject *crc32_buckets(PyObject *self, PyObject *args) {
    Py_buffer data, offs;
    long long buckets;
    PyObject *out = NULL;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*y*L", &data, &offs, &buckets)) return NULL;
    if (buckets < 1) {
        PyErr_SetString(PyExc_ValueError, "buckets: at least 1");
    } else if (column(&data, &offs, &n)) {
        out = PyByteArray_FromStringAndSize(NULL, n * 8);
        if (out) {
            const unsigned char *t = (const unsigned char *)data.buf;
            const int64_t *o = (const int64_t *)offs.buf;
            int64_t *r = (int64_t *)PyByteArray_AS_STRING(out);
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t i = 0; i < n; i++) {
                uint32_t c = 0xFFFFFFFFu;
                for (int64_t j = o[i]; j < o[i + 1]; j++) c = crc_table[(c ^ t[j]) & 0xFF] ^ (c >> 8);
                r[i] = (int64_t)((c ^ 0xFFFFFFFFu) % (uint64_t)buckets);
            }
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    return out;
}

static PyMethodDef methods[] = {
    {"number_forms", number_forms, METH_VARARGS, "Which texts are JSON numbers of a bounded form."},
    {"quoted_forms", quoted_forms, METH_VARARGS, "Which texts are JSON strings without escapes."},
    {"kind_codes", kind_codes, METH_VARARGS, "The kind each JSON text suggests (normalize's survey)."},
    {"judge", judge, METH_VARARGS, "Routing's judgement of each value by its column's type."},
    {"iso_forms", iso_forms, METH_VARARGS, "Which texts are quoted ISO dates (or timestamps) of 1900-2999."},
    {"shape_bits", shape_bits, METH_VARARGS, "The JSON shape of each text, as bits."},
    {"crc32_buckets", crc32_buckets, METH_VARARGS, "zlib.crc32 of each text modulo a bucket count."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_text_forms", NULL, -1, methods};

PyMODINIT_FUNC PyInit__text_forms(void) {
    crc_init();
    return PyModule_Create(&module);
}
