/* Integer dates and timestamps spelt as the decode task writes them (cdclake.native).
 *
 * epoch_texts(data, offsets, rows, kinds): for each row of an Arrow string column (``data``, its n + 1 int64
 * ``offsets``) listed in ``rows`` (int64), a JSON integer of at most 16 characters counting days, milli-, micro-
 * or nanoseconds since the epoch (``kinds``, one int8 a row: 6, 7, 8, 9, ``_json_columns``' DATE_DAYS..TS_NANOS),
 * its text as ``_json_columns._with_epoch_texts`` spells it: ``"YYYY-MM-DD"`` or ``"YYYY-MM-DDTHH:MM:SS.ffffffZ"``,
 * for instants of the years 1000-9999 only (nanoseconds rounded down to the microsecond, as Python's floor
 * division does). Returns (done: a bytearray of 0 or 1 a row, the done rows' texts as int64 offsets and data).
 *
 * connect_decimals(data, offsets, rows, scales): likewise for Kafka Connect decimals, a quoted base64 text of 1-8
 * two's-complement bytes and a scale (int8 a row, 0-63): the number as ``str(Decimal)`` writes it, where it
 * writes no exponent (``_connect_decimals.with_connect_decimals``).
 *
 * splice(data, offsets, rows, new_offsets, new_data): the column with those rows' texts replaced (below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DAY_US 86400000000LL
#define MIN_US (-30610224000000000LL) /* 1000-01-01T00:00:00 */
#define MAX_US 253402300799999999LL   /* 9999-12-31T23:59:59.999999 */
#define DATE_DAYS 6
#define TS_MILLIS 7
#define TS_MICROS 8
#define TS_NANOS 9

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* -?[0-9]+ of at most 16 characters, as Arrow's cast reads it (the caller passes JSON integers only). */
static int parse_integer(const unsigned char *t, int64_t len, int64_t *out) {
    if (len < 1 || len > 16) return 0;
    int64_t p = 0, n = 0;
    int negative = t[0] == '-';
    if (negative) p++;
    if (p >= len) return 0;
    for (; p < len; p++) {
        if (t[p] < '0' || t[p] > '9') return 0;
        n = n * 10 + (t[p] - '0');
    }
    *out = negative ? -n : n;
    return 1;
}

/* Howard Hinnant's civil_from_days: the proleptic Gregorian date of a day count since 1970-01-01. */
static void civil(int64_t z, int *year, int *month, int *day) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = (int)(yoe + era * 400 + (*month <= 2));
}

/* The instant in microseconds, or 0 when outside the years 1000-9999 (or the kind's safe range). */
static int micros_of(int64_t n, int kind, int64_t *us) {
    switch (kind) {
    case DATE_DAYS:
        if (n > 4000000 || n < -4000000) return 0;
        *us = n * DAY_US;
        break;
    case TS_MILLIS:
        if (n > MAX_US / 1000 + 1 || n < MIN_US / 1000 - 1) return 0;
        *us = n * 1000;
        break;
    case TS_MICROS:
        *us = n;
        break;
    case TS_NANOS:
        *us = floor_div(n, 1000);
        break;
    default:
        return 0;
    }
    return *us >= MIN_US && *us <= MAX_US;
}

/* ``value`` (0 <= value < 10 ** width) as exactly ``width`` decimal digits, zero-padded: what ``%0*d`` writes,
 * without ``snprintf``'s format parsing, which was most of a timestamp's cost. Returns the end of the digits. */
static char *digits(char *out, int value, int width) {
    for (int i = width - 1; i >= 0; i--, value /= 10) out[i] = (char)('0' + value % 10);
    return out + width;
}

/* The epoch speller: a JSON integer of ``kind`` units as its ISO text (0: not of the years 1000-9999). */
static int spell_epoch(const unsigned char *t, int64_t len, int kind, char *out, int64_t *written) {
    int64_t number, us;
    if (kind < DATE_DAYS || kind > TS_NANOS || !parse_integer(t, len, &number) || !micros_of(number, kind, &us))
        return 0;
    int64_t days = floor_div(us, DAY_US), rest = us - days * DAY_US;
    int year, month, day;
    civil(days, &year, &month, &day);
    char *p = out;
    *p++ = '"';
    p = digits(p, year, 4);
    *p++ = '-';
    p = digits(p, month, 2);
    *p++ = '-';
    p = digits(p, day, 2);
    if (kind != DATE_DAYS) {
        *p++ = 'T';
        p = digits(p, (int)(rest / 3600000000LL), 2);
        *p++ = ':';
        p = digits(p, (int)(rest / 60000000LL % 60), 2);
        *p++ = ':';
        p = digits(p, (int)(rest / 1000000 % 60), 2);
        *p++ = '.';
        p = digits(p, (int)(rest % 1000000), 6);
        *p++ = 'Z';
    }
    *p++ = '"';
    *written = p - out;
    return 1;
}

/* The six bits of a base64 character (64: the pad '=', 255: not base64). */
static unsigned char six(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return (unsigned char)(c - 'A');
    if (c >= 'a' && c <= 'z') return (unsigned char)(c - 'a' + 26);
    if (c >= '0' && c <= '9') return (unsigned char)(c - '0' + 52);
    if (c == '+') return 62;
    if (c == '/') return 63;
    if (c == '=') return 64;
    return 255;
}

/* The signed number of a quoted canonical base64 text of 1-8 bytes (4, 8 or 12 characters, the unused bits of
 * its last character zero; not the int64 minimum), as ``_connect_decimals._base64_numbers`` reads it. */
static int base64_number(const unsigned char *t, int64_t len, int64_t *out) {
    int64_t width = len - 2;
    if ((width != 4 && width != 8 && width != 12) || t[0] != '"' || t[len - 1] != '"') return 0;
    const unsigned char *c = t + 1;
    for (int64_t i = 0; i < width - 2; i++)
        if (six(c[i]) >= 64) return 0;
    unsigned char last2 = six(c[width - 2]), last1 = six(c[width - 1]);
    if (last1 == 255 || last2 == 255 || (last2 == 64 && last1 != 64)) return 0;
    int pad = last1 != 64 ? 0 : (last2 != 64 ? 1 : 2);
    int64_t used = width - pad, size = 6 * used / 8, spare = 6 * used % 8;
    if (size > 8) return 0;
    unsigned char last = six(c[used - 1]);
    if ((last & ((1 << spare) - 1)) != 0) return 0;
    uint64_t value = 0;
    for (int64_t i = 0; i < used - 1; i++) value = (value << 6) | six(c[i]);
    value = (value << (6 - spare)) | (uint64_t)(last >> spare);
    if (size == 8) {
        if (value == (uint64_t)1 << 63) return 0; /* its magnitude is no int64 */
        *out = (int64_t)value;
    } else {
        int64_t signed_value = (int64_t)value;
        if (signed_value >= (int64_t)1 << (8 * size - 1)) signed_value -= (int64_t)1 << (8 * size);
        *out = signed_value;
    }
    return 1;
}

/* ``str(Decimal(f"{n}E-{scale}"))`` where it has no exponent (``_connect_decimals._spelt``); 0: it has one. */
static int decimal_text(int64_t n, int scale, char *out, int64_t *written) {
    char digits[24];
    uint64_t magnitude = n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n;
    int count = 0;
    char reversed[24];
    do {
        reversed[count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    for (int i = 0; i < count; i++) digits[i] = reversed[count - 1 - i];
    if (scale == 0) {
        int p = 0;
        if (n < 0) out[p++] = '-';
        memcpy(out + p, digits, (size_t)count);
        *written = p + count;
        return 1;
    }
    if (count - 1 - scale < -6) return 0;
    char padded[96];
    int width = count > scale + 1 ? count : scale + 1, zeros = width - count, p = 0;
    for (int i = 0; i < zeros; i++) padded[i] = '0';
    memcpy(padded + zeros, digits, (size_t)count);
    if (n < 0) out[p++] = '-';
    memcpy(out + p, padded, (size_t)(width - scale));
    p += width - scale;
    out[p++] = '.';
    memcpy(out + p, padded + width - scale, (size_t)scale);
    *written = p + scale;
    return 1;
}

/* The decimal speller: a Connect decimal's base64 text and ``scale`` as its number's text (0: not read here). */
static int spell_decimal(const unsigned char *t, int64_t len, int scale, char *out, int64_t *written) {
    int64_t number;
    return scale >= 0 && scale <= 63 && base64_number(t, len, &number) && decimal_text(number, scale, out, written);
}

/* Longest text a speller writes, with its NUL: a sign, 64 digits, a point. */
#define SPELT_MAX 96

/* Whether ``offs`` holds n + 1 ascending int64 offsets into ``data`` (ValueError set when not). */
static int texts_fit(const int64_t *o, const Py_buffer *offs, const Py_buffer *data) {
    Py_ssize_t n = offs->len / 8 - 1;
    if (offs->len < 8 || offs->len % 8 != 0 || o[0] < 0 || o[n] > data->len) {
        PyErr_SetString(PyExc_ValueError, "offsets do not fit the texts");
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (o[i] > o[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets not ascending");
            return 0;
        }
    }
    return 1;
}

/* Whether the m ``rows`` are rows of a column of n (and, if ``ascending``, each after the one before it). */
static int rows_fit(const int64_t *r, Py_ssize_t m, Py_ssize_t n, int ascending) {
    for (Py_ssize_t i = 0; i < m; i++) {
        if (r[i] < 0 || r[i] >= n || (ascending && i > 0 && r[i] <= r[i - 1])) {
            PyErr_SetString(PyExc_ValueError, ascending ? "rows not ascending inside the column" : "a row outside the column");
            return 0;
        }
    }
    return 1;
}

/* ``speller`` over the ``rows`` of a column, each with its parameter (int8): (done per row, the done rows'
 * texts as int64 offsets and data). */
static PyObject *spell(PyObject *args, int (*speller)(const unsigned char *, int64_t, int, char *, int64_t *)) {
    Py_buffer data, offs, rows, params;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &data, &offs, &rows, &params)) return NULL;
    PyObject *result = NULL, *done = NULL, *out_offsets = NULL, *out_data = NULL;
    const int64_t *o = (const int64_t *)offs.buf;
    const int64_t *r = (const int64_t *)rows.buf;
    const int8_t *param = (const int8_t *)params.buf;
    Py_ssize_t n = offs.len / 8 - 1, m = rows.len / 8;
    if (rows.len % 8 != 0 || params.len != m || !texts_fit(o, &offs, &data) || !rows_fit(r, m, n, 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "rows and their parameters do not fit the texts");
        goto end;
    }
    done = PyByteArray_FromStringAndSize(NULL, m);
    out_offsets = PyBytes_FromStringAndSize(NULL, (m + 1) * 8);
    out_data = PyBytes_FromStringAndSize(NULL, m * SPELT_MAX + 1);
    if (!done || !out_offsets || !out_data) goto end;
    char *d = PyByteArray_AS_STRING(done);
    int64_t *oo = (int64_t *)PyBytes_AS_STRING(out_offsets);
    char *od = PyBytes_AS_STRING(out_data);
    int64_t k = 0, len = 0;
    oo[0] = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t written = 0;
        const unsigned char *t = (const unsigned char *)data.buf + o[r[i]];
        d[i] = (char)speller(t, o[r[i] + 1] - o[r[i]], param[i], od + len, &written);
        if (!d[i]) continue;
        len += written;
        oo[++k] = len;
    }
    if (_PyBytes_Resize(&out_offsets, (k + 1) * 8) < 0 || _PyBytes_Resize(&out_data, len) < 0) goto end;
    result = Py_BuildValue("(OOO)", done, out_offsets, out_data);
end:
    Py_XDECREF(done);
    Py_XDECREF(out_offsets);
    Py_XDECREF(out_data);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&params);
    return result;
}

static PyObject *epoch_texts(PyObject *self, PyObject *args) { return spell(args, spell_epoch); }

static PyObject *connect_decimals(PyObject *self, PyObject *args) { return spell(args, spell_decimal); }

/* splice(data, offsets, rows, new_offsets, new_data): the column (``data``, its n + 1 int64 ``offsets``) with the
 * texts of ``rows`` (ascending int64) replaced by the m texts of ``new_offsets`` / ``new_data``, as (n + 1 int64
 * offsets from 0, data): what ``pc.replace_with_mask`` gives, in one copy where it builds the column a value at a
 * time. */
static PyObject *splice(PyObject *self, PyObject *args) {
    Py_buffer data, offs, rows, new_offs, new_data;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &data, &offs, &rows, &new_offs, &new_data)) return NULL;
    PyObject *result = NULL, *out_offsets = NULL, *out_data = NULL;
    const int64_t *o = (const int64_t *)offs.buf, *r = (const int64_t *)rows.buf, *no = (const int64_t *)new_offs.buf;
    Py_ssize_t n = offs.len / 8 - 1, m = rows.len / 8;
    if (rows.len % 8 != 0 || new_offs.len != (m + 1) * 8 || !texts_fit(o, &offs, &data) ||
        !texts_fit(no, &new_offs, &new_data) || !rows_fit(r, m, n, 1)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "rows and their new texts do not fit");
        goto end;
    }
    int64_t size = (o[n] - o[0]) + (no[m] - no[0]);
    for (Py_ssize_t i = 0; i < m; i++) size -= o[r[i] + 1] - o[r[i]];
    out_offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 8);
    out_data = PyBytes_FromStringAndSize(NULL, size);
    if (!out_offsets || !out_data) goto end;
    int64_t *oo = (int64_t *)PyBytes_AS_STRING(out_offsets);
    char *od = PyBytes_AS_STRING(out_data);
    const char *src = (const char *)data.buf, *new_src = (const char *)new_data.buf;
    int64_t at = 0;
    Py_ssize_t row = 0;
    oo[0] = 0;
    for (Py_ssize_t k = 0; k <= m; k++) {
        Py_ssize_t stop = k < m ? r[k] : n; /* rows [row, stop) are kept: one copy */
        int64_t kept = o[stop] - o[row];
        memcpy(od + at, src + o[row], (size_t)kept);
        for (Py_ssize_t i = row; i < stop; i++) oo[i + 1] = at + (o[i + 1] - o[row]);
        at += kept;
        if (k == m) break;
        int64_t len = no[k + 1] - no[k];
        memcpy(od + at, new_src + no[k], (size_t)len);
        at += len;
        oo[stop + 1] = at;
        row = stop + 1;
    }
    result = Py_BuildValue("(OO)", out_offsets, out_data);
end:
    Py_XDECREF(out_offsets);
    Py_XDECREF(out_data);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&new_offs);
    PyBuffer_Release(&new_data);
    return result;
}

static PyMethodDef methods[] = {
    {"epoch_texts", epoch_texts, METH_VARARGS, "Integer dates and timestamps spelt as ISO texts."},
    {"connect_decimals", connect_decimals, METH_VARARGS, "Kafka Connect decimals spelt as decimal texts."},
    {"splice", splice, METH_VARARGS, "A string column with some rows' texts replaced."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_value_texts", NULL, -1, methods};

PyMODINIT_FUNC PyInit__value_texts(void) { return PyModule_Create(&module); }
