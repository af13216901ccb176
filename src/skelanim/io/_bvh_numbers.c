/* The frame lines of a BVH MOTION block, scanned into a float64 array in one pass, and written back.

   Optional compiled part of skelanim (see skelanim/io/bvh_numbers.py, which falls back to its NumPy
   path, or to Python's % formatting for writing, when this module is missing). format_rows, which writes,
   is described where it is defined (below parse_motion). The scanner:

       parse_motion(text: bytes, start: int, out: writable float64 buffer, channels: int, stop: int = -1)
           -> (frame_lines, lines) | None

   scans text[start:stop] (the caller need not copy the block out of the file's bytes; stop -1 is the
   end of the text, and any other stop must follow a '\n', so that a chunk of the block ends with whole
   lines). The GIL is released while scanning, so that chunks of one block can be scanned by several
   threads at once (see bvh_numbers.parse_motion_values); it is taken back only for the rare token that
   needs PyOS_string_to_double.

   Lines end at '\n'; ' ', '\t', '\r', '\v', '\f' separate tokens (as bytes.split() does). Every
   non-blank line must hold exactly `channels` numbers of the grammar

       [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?

   with a finite value. The values of the first len(out) / channels frame lines are stored in `out`
   (row-major, one row per non-blank line); later lines are checked but not stored. The result is the
   number of non-blank lines and the number of lines. None means "something is not as expected" (a bad
   token, a wrong count, a value out of range, a token too long to copy): the caller then parses the
   block with its exact Python path, which reports the first problem with its line. So this scanner only
   ever accepts input that the Python path accepts, and gives the same values.

   Most tokens are "[-]digits[.digits]" followed by a separator: they are read first by two tight digit
   loops (at most 19 digits, leading zeros included); anything else goes through the general reader.
   Values equal Python's float(token) bit for bit: up to 19 significant digits are collected in an
   integer w with a decimal exponent e; when w <= 2^53 and |e| <= 22 both w and 10^|e| are exact
   doubles, so one IEEE multiply or divide gives the correctly rounded result (Clinger's fast path).
   Anything else goes through PyOS_string_to_double, the function behind float().

   Memory safety: reads stop at the NUL byte that ends every bytes object (a NUL inside the text is
   a bad token), or at the '\n' before `stop`; writes are checked against the size of `out`. No
   allocation, no recursion. The bytes object and `out` are held (reference, buffer) while the GIL is
   released; the caller must not resize `out` from another thread meanwhile (NumPy arrays cannot be
   resized while a buffer is exported).
*/

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_DIGITS 19            /* significant digits that always fit a uint64 */
#define TWO_POW_53 9007199254740992ULL
#define TOKEN_COPY 512           /* longest token handed to PyOS_string_to_double; longer: None */

static const double POW10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* 1: token separator within a line ('\n' is handled apart). */
static inline int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static inline int is_digit(unsigned char c) { return (unsigned char)(c - '0') < 10; }

/* Outcome of reading one token. */
enum { TOKEN_OK = 0, TOKEN_BAD = 1, TOKEN_ERROR = 2 };

/* Parse the number starting at *pp (a byte that is not a separator). The text is a bytes object, so
   end[0] == '\0': every loop below stops at that sentinel without a bounds check, and a '\0' before
   `end` is junk like any other byte. On TOKEN_OK, *value is set and *pp points just past the token.
   TOKEN_BAD: not a well-formed finite number (or too long to copy). TOKEN_ERROR: a Python exception.
   `released` is the thread state saved when the GIL was released: the slow path takes the GIL back
   for PyOS_string_to_double and releases it again. */
static int read_number(const unsigned char **pp, const unsigned char *end, double *value,
                       PyThreadState **released) {
    const unsigned char *start = *pp, *p = *pp;
    {   /* the common case, "[-]digits[.digits]" then a separator, in two tight loops */
        const unsigned char *q = p + (*p == '-');
        const unsigned char *digits_start = q;
        uint64_t m = 0;
        unsigned d;
        while ((d = (unsigned)(*q - '0')) < 10) {
            m = m * 10 + d;
            ++q;
        }
        const unsigned char *dot = q;
        if (*q == '.') {
            ++q;
            while ((d = (unsigned)(*q - '0')) < 10) {
                m = m * 10 + d;
                ++q;
            }
        }
        const long count = (long)(q - digits_start) - (*dot == '.');
        const long decimals = (long)(q - dot) - (*dot == '.');
        if (count > 0 && count <= MAX_DIGITS && m <= TWO_POW_53 && decimals <= 22 &&
            (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r' || q == end)) {
            double v = decimals ? (double)m / POW10[decimals] : (double)m;
            *value = *p == '-' ? -v : v;
            *pp = q;
            return TOKEN_OK;
        }
    }
    int negative = 0;
    uint64_t w = 0; /* the digits without leading zeros (wraps when there are more than 19: see `digits`) */
    long e10 = 0;   /* decimal exponent of w */

    if (*p == '+' || *p == '-') {
        negative = (*p == '-');
        ++p;
    }
    const unsigned char *int_start = p;
    while (*p == '0') {
        ++p;
    }
    const unsigned char *sig_start = p;
    while (is_digit(*p)) {
        w = w * 10 + (uint64_t)(*p - '0');
        ++p;
    }
    Py_ssize_t any_digits = p - int_start;
    Py_ssize_t digits = p - sig_start; /* significant digits so far */
    if (*p == '.') {
        const unsigned char *frac_start = ++p;
        if (digits == 0) { /* 0.000123: zeros after the dot are not significant either */
            while (*p == '0') {
                ++p;
            }
        }
        const unsigned char *frac_sig = p;
        while (is_digit(*p)) {
            w = w * 10 + (uint64_t)(*p - '0');
            ++p;
        }
        digits += p - frac_sig;
        any_digits += p - frac_start;
        e10 = -(long)(p - frac_start);
    }
    if (any_digits == 0) {
        return TOKEN_BAD;
    }
    if (*p == 'e' || *p == 'E') {
        int exp_negative = 0;
        long exponent = 0;
        ++p;
        if (*p == '+' || *p == '-') {
            exp_negative = (*p == '-');
            ++p;
        }
        if (!is_digit(*p)) {
            return TOKEN_BAD;
        }
        for (; is_digit(*p); ++p) {
            if (exponent < 100000) { /* saturate: such values go to PyOS_string_to_double anyway */
                exponent = exponent * 10 + (*p - '0');
            }
        }
        e10 += exp_negative ? -exponent : exponent;
    }
    if (!is_space(*p) && *p != '\n' && p != end) {
        return TOKEN_BAD; /* a number followed by something else: "1.2.3", "1x", "5-", "1\0" */
    }
    *pp = p;

    double v;
    if (digits <= MAX_DIGITS && w <= TWO_POW_53 && e10 >= -22 && e10 <= 22) {
        v = (double)w; /* exact */
        if (e10 < 0) {
            v /= POW10[-e10];
        } else if (e10 > 0) {
            v *= POW10[e10];
        }
        *value = negative ? -v : v;
        return TOKEN_OK;
    }
    if (digits == 0) { /* zero with any exponent */
        *value = negative ? -0.0 : 0.0;
        return TOKEN_OK;
    }
    /* the exact, slower path: what float() does */
    Py_ssize_t length = (Py_ssize_t)(p - start);
    char copy[TOKEN_COPY + 1];
    if (length > TOKEN_COPY) {
        return TOKEN_BAD; /* let the Python path deal with it */
    }
    memcpy(copy, start, (size_t)length);
    copy[length] = '\0';
    char *stop = NULL;
    PyEval_RestoreThread(*released);
    v = PyOS_string_to_double(copy, &stop, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            *released = PyEval_SaveThread();
            return TOKEN_BAD;
        }
        return TOKEN_ERROR; /* with the GIL held, as the caller expects for an exception */
    }
    *released = PyEval_SaveThread();
    if (stop != copy + length || !isfinite(v)) {
        return TOKEN_BAD;
    }
    *value = v;
    return TOKEN_OK;
}

/* Whether obj's buffer holds float64 items ('d', native or explicit byte order of this machine). The "w*" and
   "y*" arguments are asked for without their format, so an int64 or object array (8-byte items too) had passed the
   itemsize check and been read or written as doubles. */
static int holds_float64(PyObject *obj) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_FORMAT | PyBUF_ND) < 0) {
        PyErr_Clear();
        return 0;
    }
    const char *f = view.format ? view.format : "B";
#if PY_LITTLE_ENDIAN
    const char own = '<';
#else
    const char own = '>';
#endif
    if (*f == '@' || *f == '=' || *f == own) {
        f++;
    }
    const int ok = f[0] == 'd' && f[1] == '\0' && view.itemsize == (Py_ssize_t)sizeof(double);
    PyBuffer_Release(&view);
    return ok;
}

static PyObject *parse_motion(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_buffer out;
    Py_ssize_t start, channels, stop = -1;
    (void)self;
    if (!PyArg_ParseTuple(args, "Snw*n|n:parse_motion", &text, &start, &out, &channels, &stop)) {
        return NULL;
    }
    PyObject *out_object = PyTuple_GET_ITEM(args, 2);
    PyObject *result = NULL;
    if (channels <= 0) {
        PyErr_SetString(PyExc_ValueError, "parse_motion: channels must be positive");
        goto done;
    }
    if (stop == -1) {
        stop = PyBytes_GET_SIZE(text);
    }
    if (start < 0 || start > stop || stop > PyBytes_GET_SIZE(text)) {
        PyErr_SetString(PyExc_ValueError, "parse_motion: need 0 <= start <= stop <= len(text)");
        goto done;
    }
    if (stop < PyBytes_GET_SIZE(text) && stop > start && PyBytes_AS_STRING(text)[stop - 1] != '\n') {
        PyErr_SetString(PyExc_ValueError, "parse_motion: a stop before the end of the text must follow a newline");
        goto done;
    }
    if (!PyBuffer_IsContiguous(&out, 'C')) {
        PyErr_SetString(PyExc_ValueError, "parse_motion: out must be contiguous");
        goto done;
    }
    /* the values are written as doubles: a buffer of other items, or one not aligned for them, is refused */
    if (out.itemsize != (Py_ssize_t)sizeof(double) || ((uintptr_t)out.buf % sizeof(double)) != 0 ||
        !holds_float64(out_object)) {
        PyErr_SetString(PyExc_ValueError, "parse_motion: out must be an aligned float64 buffer");
        goto done;
    }
    {
        const Py_ssize_t length = stop - start;
        const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(text) + start;
        /* *end is '\0' (bytes objects are NUL-terminated), or the first byte after a '\n' */
        const unsigned char *end = p + length;
        double *values = (double *)out.buf;
        const Py_ssize_t rows = out.len / (Py_ssize_t)sizeof(double) / channels;
        Py_ssize_t frame_lines = 0, lines = 0, in_line = 0;
        double *row = rows > 0 ? values : NULL;
        int bad = 0, error = 0;
        PyThreadState *released = PyEval_SaveThread();

        for (;;) {
            if (p == end) {
                break;
            }
            unsigned char c = *p;
            if (c == ' ') {
                ++p;
                continue;
            }
            if (c == '\n') {
                if (in_line) {
                    if (in_line != channels) {
                        bad = 1;
                        break;
                    }
                    ++frame_lines;
                    row = frame_lines < rows ? values + frame_lines * channels : NULL;
                    in_line = 0;
                }
                ++lines;
                ++p;
                continue;
            }
            if (is_space(c)) {
                ++p;
                continue;
            }
            if (in_line == channels) { /* one value too many on this line */
                bad = 1;
                break;
            }
            double v;
            int status = read_number(&p, end, &v, &released);
            if (status == TOKEN_ERROR) {
                error = 1; /* the GIL is held again */
                break;
            }
            if (status == TOKEN_BAD) {
                bad = 1;
                break;
            }
            if (row != NULL) {
                row[in_line] = v;
            }
            ++in_line;
        }
        if (error) {
            goto done;
        }
        PyEval_RestoreThread(released);
        if (!bad && in_line) {
            if (in_line != channels) {
                bad = 1;
            } else {
                ++frame_lines;
            }
        }
        if (!bad && length > 0 && end[-1] != '\n') {
            ++lines; /* a last line without a newline */
        }
        result = bad ? Py_NewRef(Py_None) : Py_BuildValue("(nn)", frame_lines, lines);
    }
done:
    PyBuffer_Release(&out);
    return result;
}

/* ---- writing: format_rows ------------------------------------------------------------------------------ */

#define FAST_LIMIT 4503599627370496.0 /* 2^52: below it x * 10^p rounds to an integer exactly (see format_fixed) */
#define FAST_PRECISION 15              /* 10^p exact and the product within FAST_LIMIT for file-sized values */
#define FAST_WIDTH 40                  /* the most bytes format_fixed writes: sign, 17 digits, '.', 15 digits */

/* x as Python's "%.{precision}f" % x, into out (at least FAST_WIDTH bytes); the number of bytes, or -1 when x
   is outside the fast path (not finite, precision > FAST_PRECISION, |x| * 10^precision >= 2^52). The digits
   are those of the integer R nearest the exact product x * 10^precision, ties to even, as Python rounds the
   exact binary value: the double product p rounds it, but |p| < 2^52 makes d = p - nearbyint(p) exact, and
   as d is a multiple of ulp(p) <= 0.5 while the product's error e = fma(x, 10^p, -p) is at most ulp(p) / 2,
   only |d| == 0.5 (a tie in p) can hide the exact product's side of the tie: there e decides. */
static inline int format_fixed(double x, int precision, char *out) {
    if (precision > FAST_PRECISION || !isfinite(x)) {
        return -1;
    }
    const double scale = POW10[precision];
    const double product = x * scale;
    if (!(fabs(product) < FAST_LIMIT)) {
        return -1;
    }
    double rounded = nearbyint(product); /* the default rounding mode: to nearest, ties to even */
    const double d = product - rounded;
    if (d == 0.5 || d == -0.5) {
        const double e = fma(x, scale, -product);
        if (d == 0.5 && e > 0) {
            rounded += 1.0;
        } else if (d == -0.5 && e < 0) {
            rounded -= 1.0;
        }
    }
    uint64_t r = (uint64_t)fabs(rounded);
    char digits[24];
    int n = 0;
    for (int k = 0; k < precision; ++k) { /* fraction digits, last first */
        digits[n++] = (char)('0' + r % 10);
        r /= 10;
    }
    do { /* integer digits, at least one */
        digits[n++] = (char)('0' + r % 10);
        r /= 10;
    } while (r);
    char *o = out;
    if (signbit(x)) { /* Python keeps the sign of a negative value that rounds to zero: "-0.000000" */
        *o++ = '-';
    }
    for (int k = n - 1; k >= precision; --k) {
        *o++ = digits[k];
    }
    if (precision) {
        *o++ = '.';
        for (int k = precision - 1; k >= 0; --k) {
            *o++ = digits[k];
        }
    }
    return (int)(o - out);
}

static PyObject *format_rows(PyObject *self, PyObject *args) {
    Py_buffer values;
    Py_ssize_t columns;
    int precision;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*ni:format_rows", &values, &columns, &precision)) {
        return NULL;
    }
    PyObject *result = NULL;
    char *buffer = NULL;
    if (columns <= 0 || precision < 0 || precision > 17) {
        PyErr_SetString(PyExc_ValueError, "format_rows: need columns > 0 and 0 <= precision <= 17");
        goto done;
    }
    if (values.itemsize != (Py_ssize_t)sizeof(double) || ((uintptr_t)values.buf % sizeof(double)) != 0 ||
        !PyBuffer_IsContiguous(&values, 'C') || !holds_float64(PyTuple_GET_ITEM(args, 0))) {
        PyErr_SetString(PyExc_ValueError, "format_rows: values must be a contiguous, aligned float64 buffer");
        goto done;
    }
    {
        const Py_ssize_t count = values.len / (Py_ssize_t)sizeof(double);
        if (count % columns != 0) {
            PyErr_SetString(PyExc_ValueError, "format_rows: the number of values is not a multiple of columns");
            goto done;
        }
        const double *x = (const double *)values.buf;
        /* room for every value on the fast path; a value beyond it grows the buffer */
        size_t capacity = (size_t)count * (FAST_WIDTH + 1) + 1;
        size_t length = 0;
        buffer = (char *)PyMem_Malloc(capacity);
        if (buffer == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < count; ++i) {
            if (capacity - length < FAST_WIDTH + 2) {
                capacity = capacity * 2 + FAST_WIDTH + 2;
                char *grown = (char *)PyMem_Realloc(buffer, capacity);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                buffer = grown;
            }
            int n = format_fixed(x[i], precision, buffer + length);
            if (n < 0) { /* Python's own formatting, for the rare value beyond the fast path */
                char *text = PyOS_double_to_string(x[i], 'f', precision, 0, NULL);
                if (text == NULL) {
                    goto done;
                }
                size_t size = strlen(text);
                if (capacity - length < size + 2) {
                    capacity = capacity * 2 + size + 2;
                    char *grown = (char *)PyMem_Realloc(buffer, capacity);
                    if (grown == NULL) {
                        PyMem_Free(text);
                        PyErr_NoMemory();
                        goto done;
                    }
                    buffer = grown;
                }
                memcpy(buffer + length, text, size);
                PyMem_Free(text);
                n = (int)size;
            }
            length += (size_t)n;
            buffer[length++] = (i + 1) % columns ? ' ' : '\n';
        }
        result = PyUnicode_FromStringAndSize(buffer, (Py_ssize_t)length);
    }
done:
    PyMem_Free(buffer);
    PyBuffer_Release(&values);
    return result;
}

static PyMethodDef methods[] = {
    {"parse_motion", parse_motion, METH_VARARGS,
     "parse_motion(text, start, out, channels, stop=-1) -> (frame_lines, lines) or None.\n\n"
     "Scan the frame lines of a BVH MOTION block, text[start:stop], into `out` (a writable float64 buffer of\n"
     "rows * channels values): see the module source for the grammar. None when any line is not\n"
     "`channels` well-formed finite numbers (the caller then finds and reports the problem)."},
    {"format_rows", format_rows, METH_VARARGS,
     "format_rows(values, columns, precision) -> str.\n\n"
     "The text of frame lines: each row of `columns` float64 values (a contiguous buffer) as Python's\n"
     "'%.{precision}f' of each, separated by spaces, each row ending with a newline."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bvh_numbers",
    "Compiled scanner for the numbers of a BVH MOTION block (optional; see skelanim.io.bvh_numbers).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bvh_numbers(void) { return PyModule_Create(&module); }
