/* refkernels._C: the CPython binding of the HIP kernels (plain C API, no pybind11/torch).
 *
 * Errors from the HIP runtime become refkernels.errors.HipError; hipErrorNoDevice (no AMD GPU
 * visible, the normal case on build machines) becomes refkernels.errors.NoDeviceError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "refkernels.h"

static PyObject *hip_error_type = NULL;
static PyObject *no_device_error_type = NULL;

static PyObject *raise_hip(int code, const char *what) {
    PyObject *type = code == REFK_ERROR_NO_DEVICE ? no_device_error_type : hip_error_type;
    PyObject *args = Py_BuildValue("(isss)", code, refk_error_name(code), refk_error_string(code), what);
    if (args != NULL) {
        PyErr_SetObject(type, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int get_f32_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t count, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    if (view->itemsize != 4 || view->format == NULL || strcmp(view->format, "f") != 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous float32 buffer (format 'f'), got format '%s'",
                     name, view->format == NULL ? "B" : view->format);
        PyBuffer_Release(view);
        return -1;
    }
    if (view->len != count * 4) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd float32 values, expected %zd", name, view->len / 4, count);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int check_dims(int a, int b, int c) {
    if (a <= 0 || b <= 0 || c <= 0) {
        PyErr_SetString(PyExc_ValueError, "dimensions must be positive");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(device_count_doc, "device_count() -> int\n\nNumber of visible AMD GPUs (raises NoDeviceError when none).");

static PyObject *py_device_count(PyObject *self, PyObject *unused) {
    int count = 0;
    int err;
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    err = refk_device_count(&count);
    Py_END_ALLOW_THREADS
    if (err != 0) {
        return raise_hip(err, "hipGetDeviceCount");
    }
    return PyLong_FromLong(count);
}

PyDoc_STRVAR(device_info_doc, "device_info(device: int) -> tuple[str, int]\n\n(gcnArchName, compute units) of a device.");

static PyObject *py_arch_number(PyObject *self, PyObject *args) {
    const char *target;
    long number = 0;
    double weight = 0.0;
    int err;
    (void)self;
    if (!PyArg_ParseTuple(args, "s", &target)) {
        return NULL;
    }
    err = refk_arch_number(target, &number, &weight);
    if (err != 0) {
        PyErr_Format(PyExc_ValueError, "%s: %s", target, refk_error_string(err));
        return NULL;
    }
    return Py_BuildValue("(ld)", number, weight);
}

PyDoc_STRVAR(arch_number_doc,
             "arch_number(target) -> (number, weight)\n\n"
             "The processor number of a target id ('gfx942' -> 0x942) and its occupancy weight.");

static PyObject *py_device_info(PyObject *self, PyObject *args) {
    int device = 0;
    int cu_count = 0;
    int err;
    char arch[256];
    (void)self;
    if (!PyArg_ParseTuple(args, "i", &device)) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = refk_device_info(device, arch, sizeof arch, &cu_count);
    Py_END_ALLOW_THREADS
    if (err != 0) {
        return raise_hip(err, "hipGetDeviceProperties");
    }
    return Py_BuildValue("(si)", arch, cu_count);
}

PyDoc_STRVAR(gemm_kernels_doc, "gemm_kernels() -> tuple[str, ...]\n\nNames of the GEMM kernels compiled in.");

static PyObject *py_gemm_kernels(PyObject *self, PyObject *unused) {
    const char *const *names = refk_gemm_kernels();
    Py_ssize_t n = 0;
    PyObject *result;
    (void)self;
    (void)unused;
    while (names[n] != NULL) {
        ++n;
    }
    result = PyTuple_New(n);
    if (result == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, i, s);
    }
    return result;
}

PyDoc_STRVAR(gemm_doc,
             "gemm(kernel: str, a, b, m: int, n: int, k: int) -> bytes\n\n"
             "Row-major float32 C[m,n] = A[m,k] @ B[k,n] with the named kernel; a and b are float32\n"
             "buffers (array('f'), memoryview, numpy). Returns the m*n float32 values as bytes.");

static PyObject *py_gemm(PyObject *self, PyObject *args) {
    const char *kernel = NULL;
    PyObject *a_obj = NULL;
    PyObject *b_obj = NULL;
    int m = 0, n = 0, k = 0;
    int err;
    Py_buffer a, b;
    PyObject *out;
    (void)self;
    if (!PyArg_ParseTuple(args, "sOOiii", &kernel, &a_obj, &b_obj, &m, &n, &k)) {
        return NULL;
    }
    if (check_dims(m, n, k) < 0) {
        return NULL;
    }
    if (get_f32_buffer(a_obj, &a, (Py_ssize_t)m * k, "a") < 0) {
        return NULL;
    }
    if (get_f32_buffer(b_obj, &b, (Py_ssize_t)k * n, "b") < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)m * n * 4);
    if (out == NULL) {
        PyBuffer_Release(&a);
        PyBuffer_Release(&b);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = refk_gemm_f32(kernel, (const float *)a.buf, (const float *)b.buf, (float *)PyBytes_AS_STRING(out), m, n, k);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    if (err != 0) {
        Py_DECREF(out);
        return raise_hip(err, kernel);
    }
    return out;
}

PyDoc_STRVAR(rowsum_doc,
             "rowsum(x, rows: int, cols: int) -> bytes\n\n"
             "Row-wise sums of a row-major float32 [rows, cols] buffer, as rows float32 values in bytes.");

static PyObject *py_rowsum(PyObject *self, PyObject *args) {
    PyObject *x_obj = NULL;
    int rows = 0, cols = 0;
    int err;
    Py_buffer x;
    PyObject *out;
    (void)self;
    if (!PyArg_ParseTuple(args, "Oii", &x_obj, &rows, &cols)) {
        return NULL;
    }
    if (check_dims(rows, cols, 1) < 0) {
        return NULL;
    }
    if (get_f32_buffer(x_obj, &x, (Py_ssize_t)rows * cols, "x") < 0) {
        return NULL;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)rows * 4);
    if (out == NULL) {
        PyBuffer_Release(&x);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = refk_rowsum_f32((const float *)x.buf, (float *)PyBytes_AS_STRING(out), rows, cols);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x);
    if (err != 0) {
        Py_DECREF(out);
        return raise_hip(err, "rowsum");
    }
    return out;
}

static PyMethodDef methods[] = {
    {"device_count", py_device_count, METH_NOARGS, device_count_doc},
    {"device_info", py_device_info, METH_VARARGS, device_info_doc},
    {"arch_number", py_arch_number, METH_VARARGS, arch_number_doc},
    {"gemm_kernels", py_gemm_kernels, METH_NOARGS, gemm_kernels_doc},
    {"gemm", py_gemm, METH_VARARGS, gemm_doc},
    {"rowsum", py_rowsum, METH_VARARGS, rowsum_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "refkernels._C", "HIP kernels of refkernels (compiled with hipcc).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *errors = PyImport_ImportModule("refkernels.errors");
    if (errors == NULL) {
        return NULL;
    }
    hip_error_type = PyObject_GetAttrString(errors, "HipError");
    no_device_error_type = PyObject_GetAttrString(errors, "NoDeviceError");
    Py_DECREF(errors);
    if (hip_error_type == NULL || no_device_error_type == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
