/* Integer dates and timestamps spelt as the decode task writes them (cdclake._native).
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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
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

/* The epoch speller: a JSON integer of ``kind`` units as its ISO text (0: not of the years 1000-9999). */
static int spell_epoch(const unsigned char *t, int64_t len, int kind, char *out, int64_t *written) {
    int64_t number, us;
    if (kind < DATE_DAYS || kind > TS_NANOS || !parse_integer(t, len, &number) || !micros_of(number, kind, &us))
        return 0;
    int64_t days = floor_div(us, DAY_US), rest = us - days * DAY_US;
    int year, month, day;
    civil(days, &year, &month, &day);
    if (kind == DATE_DAYS)
        *written = snprintf(out, 31, "\"%04d-%02d-%02d\"", year, month, day);
    else
        *written = snprintf(out, 31, "\"%04d-%02d-%02dT%02d:%02d:%02d.%06dZ\"", year, month, day,
                            (int)(rest / 3600000000LL), (int)(rest / 60000000LL % 60), (int)(rest / 1000000 % 60),
                            (int)(rest % 1000000));
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
    int count = snprintf(digits, sizeof digits, "%llu", (unsigned long long)magnitude);
    if (scale == 0) {
        *written = snprintf(out, 26, "%s%s", n < 0 ? "-" : "", digits);
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
    if (offs.len < 8 || offs.len % 8 != 0 || rows.len % 8 != 0 || params.len != m || o[0] < 0 || o[n] > data.len) {
        PyErr_SetString(PyExc_ValueError, "offsets, rows and their parameters do not fit the texts");
        goto end;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (o[i] > o[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets not ascending");
            goto end;
        }
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        if (r[i] < 0 || r[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "a row outside the column");
            goto end;
        }
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

static PyMethodDef methods[] = {
    {"epoch_texts", epoch_texts, METH_VARARGS, "Integer dates and timestamps spelt as ISO texts."},
    {"connect_decimals", connect_decimals, METH_VARARGS, "Kafka Connect decimals spelt as decimal texts."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_value_texts", NULL, -1, methods};

PyMODINIT_FUNC PyInit__value_texts(void) { return PyModule_Create(&module); }
