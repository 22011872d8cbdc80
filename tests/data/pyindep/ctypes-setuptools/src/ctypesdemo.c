/* The host side of buildkit-ctypesdemo: no Python.h, no PyInit_*: loaded with ctypes. */
int ctypesdemo_devices(void); /* kernel.hip: the GPUs the HIP runtime sees (0 without one) */

int ctypesdemo_add(int a, int b) { return a + b; }

const char *ctypesdemo_name(void) { return "ctypesdemo"; }

int ctypesdemo_gpus(void) { return ctypesdemo_devices(); }
