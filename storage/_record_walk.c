/*
 * The Produce validator's record walk at C speed: minibroker.storage._record_walk, the twin of
 * the Python walk of protocol/records/walk.py (``walk_records`` with consecutive offset deltas),
 * which storage/log_validator.py hands it to (``check_records``).
 *
 * walk(records, count) reads the record area of a magic-2 batch (the bytes after its 61-byte
 * header, decompressed) the way Kafka's DefaultRecord.readFrom does, and returns
 * (smallest timestamp delta, largest timestamp delta, [indexes of null-key records]) when the
 * area is exactly `count` well-formed records filling it; None otherwise. It accepts exactly
 * what the Python walk (protocol/records/walk.py, the definition) accepts, with the same
 * values; on None the caller runs the reference, which refuses with Kafka's error and message.
 * (It bounds a header count by the rest of the record, the reference by the rest of the
 * batch: a header takes at least two bytes, so the verdicts agree.)
 *
 * keys(records, count, base_offset) walks the same way without requiring consecutive offset
 * deltas (a compacted batch has gaps) and returns [(offset, key or None, has a value)] of every
 * record, or None: the log cleaner's offset map (protocol/records/walk.py ``record_keys``).
 *
 * Every read is bounded by the end of the record being read, itself bounded by the end of the
 * buffer: any bytes, hostile ones included, are safe to pass (tests/unit/test_record_walkers.py
 * compares it with the reference on random and mutated batches).
 *
 * Why C: this walk is the per-record cost of a Produce. In Python it costs about 0.9 us per
 * 100 B record, four times the rest of the Produce path, and no package on PyPI walks Kafka's
 * v2 records in compiled code. The extension is optional: without a compiler the package installs
 * and the reference walk does the work (README, "Bad input").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* A varint of at most max_bytes bytes in [*pos, end), its raw (zig-zag) bits in *raw.
 * Returns 0, or -1 when it runs past end or its last allowed byte still has the high bit. */
static inline int
read_raw_varint(const uint8_t **pos, const uint8_t *end, int max_bytes, uint64_t *raw)
{
    const uint8_t *p = *pos;
    uint64_t value = 0;
    for (int shift = 0; shift < 7 * max_bytes; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        value |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *pos = p;
            *raw = value;
            return 0;
        }
    }
    return -1;
}

/* Kafka's ByteUtils.readVarint: at most 5 bytes, the bits above 32 dropped. */
static inline int
read_varint32(const uint8_t **pos, const uint8_t *end, int32_t *out)
{
    uint64_t raw;
    if (read_raw_varint(pos, end, 5, &raw) < 0)
        return -1;
    uint32_t bits = (uint32_t)raw;
    *out = (int32_t)((bits >> 1) ^ (0u - (bits & 1u)));
    return 0;
}

/* Kafka's ByteUtils.readVarlong: at most 10 bytes. */
static inline int
read_varint64(const uint8_t **pos, const uint8_t *end, int64_t *out)
{
    uint64_t raw;
    if (read_raw_varint(pos, end, 10, &raw) < 0)
        return -1;
    *out = (int64_t)((raw >> 1) ^ (0ull - (raw & 1ull)));
    return 0;
}

/* A key or value: its length (-1 is null, other negatives are refused) and its bytes. Sets
 * *data and *length (-1: null). Returns 0, or -1 when refused or past end. */
static inline int
skip_bytes(const uint8_t **pos, const uint8_t *end, const uint8_t **data, int32_t *length)
{
    int32_t n;
    if (read_varint32(pos, end, &n) < 0)
        return -1;
    if (n < -1 || n > end - *pos)
        return -1;
    *data = *pos;
    *length = n;
    if (n > 0)
        *pos += n;
    return 0;
}

/* Consumers decode header keys as UTF-8 and fail on anything else. */
static int
is_utf8(const uint8_t *p, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (p[i] >= 0x80) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)p, n, "strict");
            if (text == NULL) {
                PyErr_Clear();
                return 0;
            }
            Py_DECREF(text);
            return 1;
        }
    }
    return 1;
}

static int
skip_headers(const uint8_t **pos, const uint8_t *end)
{
    int32_t count;
    if (read_varint32(pos, end, &count) < 0 || count < 0 || count > end - *pos)
        return -1;
    for (int32_t h = 0; h < count; h++) {
        int32_t n, value_length;
        const uint8_t *value;
        if (read_varint32(pos, end, &n) < 0 || n < 0 || n > end - *pos)
            return -1;
        if (!is_utf8(*pos, n))
            return -1;
        *pos += n;
        if (skip_bytes(pos, end, &value, &value_length) < 0)
            return -1;
    }
    return 0;
}

enum walk_result { WALKED, DECLINED, FAILED /* a Python exception is set */ };

/* What a walk collects besides the timestamp deltas; a NULL list is not collected. */
struct sinks {
    PyObject *null_keys;   /* walk(): indexes of the records without a key */
    PyObject *keys;        /* keys(): (offset, key or None, has a value) of every record */
    long long base_offset; /* keys(): added to each offset delta */
};

static int
append_index(PyObject *list, long long i)
{
    PyObject *index = PyLong_FromLongLong(i);
    if (index == NULL)
        return -1;
    int appended = PyList_Append(list, index);
    Py_DECREF(index);
    return appended;
}

static int
append_key(PyObject *list, long long offset, const uint8_t *key, int32_t length, int has_value)
{
    PyObject *row = PyTuple_New(3);
    if (row == NULL)
        return -1;
    PyObject *key_object = Py_None;
    if (length >= 0)
        key_object = PyBytes_FromStringAndSize((const char *)key, length);
    else
        Py_INCREF(Py_None);
    PyObject *offset_object = PyLong_FromLongLong(offset);
    PyObject *flag = has_value ? Py_True : Py_False;
    Py_INCREF(flag);
    /* the tuple owns what it holds, NULLs included, from here on */
    PyTuple_SET_ITEM(row, 0, offset_object);
    PyTuple_SET_ITEM(row, 1, key_object);
    PyTuple_SET_ITEM(row, 2, flag);
    int appended = -1;
    if (key_object != NULL && offset_object != NULL)
        appended = PyList_Append(list, row);
    Py_DECREF(row);
    return appended;
}

/* The count records in [p, end): Kafka's rules, with consecutive offset deltas 0, 1, 2, ...
 * when `consecutive` (the validator's), any offset deltas otherwise (compacted batches).
 * Inlined into walk() and keys(), so each gets a copy without the other's branches: the
 * validator's walk costs what it did before keys() shared it (0.029 us per 100 B record). */
static inline Py_ALWAYS_INLINE enum walk_result
walk_records(const uint8_t *p, const uint8_t *end, long long count, int consecutive, int64_t *low,
             int64_t *high, const struct sinks *out)
{
    *low = INT64_MAX;
    *high = INT64_MIN;
    if (count <= 0)
        return DECLINED;
    for (long long i = 0; i < count; i++) {
        int32_t length, offset_delta, key_length, value_length;
        int64_t delta;
        const uint8_t *key, *value;
        if (read_varint32(&p, end, &length) < 0 || length < 0 || length > end - p)
            return DECLINED;
        const uint8_t *record_end = p + length;
        if (p >= record_end || *p >= 0x80) /* attributes: none defined, kafka-python reads a varint */
            return DECLINED;
        p++;
        if (read_varint64(&p, record_end, &delta) < 0)
            return DECLINED;
        if (delta < *low)
            *low = delta;
        if (delta > *high)
            *high = delta;
        if (read_varint32(&p, record_end, &offset_delta) < 0 || (consecutive && offset_delta != i))
            return DECLINED;
        if (skip_bytes(&p, record_end, &key, &key_length) < 0)
            return DECLINED;
        if (skip_bytes(&p, record_end, &value, &value_length) < 0)
            return DECLINED;
        if (p < record_end && *p == 0 && p + 1 == record_end) /* no headers: the common case */
            p++;
        else if (skip_headers(&p, record_end) < 0)
            return DECLINED;
        if (p != record_end)
            return DECLINED;
        if (out->null_keys != NULL && key_length == -1 && append_index(out->null_keys, i) < 0)
            return FAILED;
        if (out->keys != NULL
            && append_key(out->keys, out->base_offset + offset_delta, key, key_length, value_length != -1) < 0)
            return FAILED;
    }
    return p == end ? WALKED : DECLINED;
}

/* Runs a walk over args[0] (a buffer) for args[1] records; returns its result, with the
 * Python exception set on FAILED. */
static inline Py_ALWAYS_INLINE enum walk_result
walk_buffer(PyObject *records, long long count, int consecutive, int64_t *low, int64_t *high,
            const struct sinks *out)
{
    Py_buffer view;
    if (PyObject_GetBuffer(records, &view, PyBUF_SIMPLE) < 0)
        return FAILED;
    const uint8_t *start = (const uint8_t *)view.buf;
    enum walk_result result = walk_records(start, start + view.len, count, consecutive, low, high, out);
    PyBuffer_Release(&view);
    return result;
}

/* walk() (for_keys 0) and keys() (for_keys 1): parse the arguments, walk, and return the
 * result, None when the walk declines. Inlined into both, so each is specialised. */
static inline Py_ALWAYS_INLINE PyObject *
run(PyObject *const *args, Py_ssize_t nargs, int for_keys)
{
    if (nargs != 2 + for_keys) {
        PyErr_SetString(PyExc_TypeError, for_keys ? "keys(records, count, base_offset) takes exactly 3 arguments"
                                                  : "walk(records, count) takes exactly 2 arguments");
        return NULL;
    }
    long long ints[2] = {0, 0}; /* count, base_offset */
    for (Py_ssize_t i = 1; i < nargs; i++) {
        ints[i - 1] = PyLong_AsLongLong(args[i]);
        if (ints[i - 1] == -1 && PyErr_Occurred())
            return NULL;
    }
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    struct sinks out = {for_keys ? NULL : list, for_keys ? list : NULL, ints[1]};
    int64_t low, high;
    enum walk_result result = walk_buffer(args[0], ints[0], !for_keys, &low, &high, &out);
    if (result != WALKED) {
        Py_DECREF(list);
        if (result == FAILED)
            return NULL;
        Py_RETURN_NONE;
    }
    if (for_keys)
        return list;
    return Py_BuildValue("(LLN)", (long long)low, (long long)high, list);
}

static PyObject *
walk(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return run(args, nargs, 0);
}

static PyObject *
keys(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return run(args, nargs, 1);
}

/*
 * tune_malloc(mmap_threshold, trim_threshold) -> bool: glibc's mallopt(M_MMAP_THRESHOLD) and
 * mallopt(M_TRIM_THRESHOLD), for broker/cli.py (why: see its tune_malloc). Here because this is
 * the broker's one compiled module, already loaded at startup (ctypes costs 0.4 MB of idle RSS
 * and 3 ms). False where the C library is not glibc, or where it refused a value.
 */
static PyObject *
tune_malloc(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "tune_malloc(mmap_threshold, trim_threshold)");
        return NULL;
    }
    long mmap_threshold = PyLong_AsLong(args[0]);
    if (mmap_threshold == -1 && PyErr_Occurred())
        return NULL;
    long trim_threshold = PyLong_AsLong(args[1]);
    if (trim_threshold == -1 && PyErr_Occurred())
        return NULL;
    if (mmap_threshold < 0 || mmap_threshold > INT32_MAX || trim_threshold < 0 || trim_threshold > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "thresholds must be between 0 and 2**31 - 1");
        return NULL;
    }
#if defined(__GLIBC__)
    return PyBool_FromLong(mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold) == 1 &&
                           mallopt(M_TRIM_THRESHOLD, (int)trim_threshold) == 1);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL,
     "walk(records, count) -> (low delta, high delta, null-key indexes) or None"},
    {"keys", (PyCFunction)(void (*)(void))keys, METH_FASTCALL,
     "keys(records, count, base_offset) -> [(offset, key or None, has a value)] or None"},
    {"tune_malloc", (PyCFunction)(void (*)(void))tune_malloc, METH_FASTCALL,
     "tune_malloc(mmap_threshold, trim_threshold) -> bool: glibc's mallopt for both"},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_GIL_DISABLED
    {Py_mod_gil, Py_MOD_GIL_NOT_USED}, /* no state: walk() only reads its buffer */
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "minibroker.storage._record_walk",
    "Kafka's record walk at C speed, for the Produce validator and the log cleaner (see protocol/records/walk.py).",
    0,
    methods,
    slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__record_walk(void)
{
    return PyModuleDef_Init(&module_def);
}
