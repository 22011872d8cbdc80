/* buildkit-abi3demo: an extension module of the limited API of CPython 3.12 (Py_LIMITED_API is set
   by CMake's USE_SABI 3.12). */
#include <Python.h>

int abi3demo_devices(void); /* kernel.hip: the GPUs the HIP runtime sees (0 without one) */

static PyObject *gpus(PyObject *self, PyObject *unused) { return PyLong_FromLong(abi3demo_devices()); }

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) {
        return NULL;
    }
    return PyLong_FromLong(a + b);
}

static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, "a + b"},
    {"gpus", gpus, METH_NOARGS, "the AMD GPUs the HIP runtime sees"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_abi3demo", NULL, -1, methods};

PyMODINIT_FUNC PyInit__abi3demo(void) { return PyModule_Create(&module); }
