"""The STAND-IN ROCm SDK wheels (tests/helpers/standin_sdk: TheRock's layout, Debian's ROCm 7.2.4
binaries; AMD's index is unreachable here, and AMD's packages differ in version, compiler, rocBLAS
and device contents) installed with real pip from a local index into a runtime with no system ROCm,
and libamdhip64.so.7 loaded through ``rocm_sdk.initialize_process`` (no GPU here: hipGetDeviceCount
answers an error, which is what a machine without one does)."""

from __future__ import annotations

import zipfile
from typing import Any

from tests.helpers.standin_sdk import (
    DISTRIBUTIONS,
    SERVE_INDEX,
    STANDIN_NOTE,
    ensure_runtime_image,
    ensure_standin_sdk,
    run_offline,
)


def test_standin_wheels_have_therocks_layout(docker_client: Any) -> None:
    print(STANDIN_NOTE)
    sdk = ensure_standin_sdk(docker_client)
    names = {dist: set(zipfile.ZipFile(sdk.wheel(dist)).namelist()) for dist in DISTRIBUTIONS}
    assert "_rocm_sdk_core/lib/libamdhip64.so.7" in names["rocm-sdk-core"]
    assert "_rocm_sdk_core/lib/libhsa-runtime64.so.1" in names["rocm-sdk-core"]
    assert "_rocm_sdk_core/lib/rocm_sysdeps/lib/libnuma.so.1" in names["rocm-sdk-core"]
    assert "_rocm_sdk_libraries/lib/libhipfft.so.0" in names["rocm-sdk-libraries"]
    assert "_rocm_sdk_devel/_devel.tar" in names["rocm-sdk-devel"]
    assert {"rocm_sdk/__init__.py", "rocm_sdk/_dist_info.py", "rocm_sdk/__main__.py"} <= names["rocm"]
    for target in ("gfx942", "gfx950"):
        assert f"_rocm_sdk_device_{target}/targets.txt" in names[f"rocm-sdk-device-{target}"]
    # only SONAME files, no versioned real names (TheRock's runtime packages hold no symlinks)
    assert not [n for n in names["rocm-sdk-core"] if n.endswith(".so.7.2.53211")]
    meta = zipfile.ZipFile(sdk.wheel("rocm")).read("rocm-7.2.4.dist-info/METADATA").decode()
    assert "Requires-Dist: rocm-sdk-core==7.2.4" in meta
    assert 'Requires-Dist: rocm-sdk-libraries==7.2.4; extra == "libraries"' in meta
    assert 'Requires-Dist: rocm-sdk-device-gfx942==7.2.4; extra == "device-all"' in meta


def test_rocm_libraries_from_local_index_loads_hip_without_system_rocm(docker_client: Any) -> None:
    print(STANDIN_NOTE)
    sdk = ensure_standin_sdk(docker_client)
    image = ensure_runtime_image(docker_client)
    script = (
        "! ldconfig -p | grep -q amdhip64\ntest ! -e /opt/rocm\n"
        + SERVE_INDEX
        + """python3 -m venv /venv
/venv/bin/pip install -q --no-cache-dir --index-url http://127.0.0.1:8000/simple/ \\
  'rocm[libraries,devel]==7.2.*'
/venv/bin/pip list --format=freeze | grep -i rocm
echo "version=$(/venv/bin/rocm-sdk version) targets=$(/venv/bin/rocm-sdk targets)"
/venv/bin/rocm-sdk test
root=$(/venv/bin/rocm-sdk path --root)
echo "root=$root cmake=$(/venv/bin/rocm-sdk path --cmake)"
test -f "$root/include/hip/hip_runtime.h"
test -f "$(readlink -f "$root/lib/libamdhip64.so")"
/venv/bin/python - <<'PY'
import ctypes
import rocm_sdk
rocm_sdk.initialize_process(preload_shortnames=["amdhip64", "hipfft"], check_version="7.2.*",
                            fail_on_version_mismatch=True)
hip = ctypes.CDLL("libamdhip64.so.7")  # by SONAME: already in the process, from the wheel
count = ctypes.c_int(-1)
err = hip.hipGetDeviceCount(ctypes.byref(count))
maps = open("/proc/self/maps").read()
loaded = sorted({line.split()[-1] for line in maps.splitlines() if "_rocm_sdk_" in line})
print("hipGetDeviceCount", err, count.value)
print("loaded", *loaded, sep="\\n  ")
assert any(p.endswith("/_rocm_sdk_core/lib/libamdhip64.so.7") for p in loaded), loaded
assert any(p.endswith("/_rocm_sdk_libraries/lib/libhipfft.so.0") for p in loaded), loaded
assert err != 0, "no GPU here: hipGetDeviceCount must fail"
print("paths", rocm_sdk.find_libraries("amdhip64", "rocfft"))
PY
"""
    )
    out = run_offline(docker_client, image, script, {"/index": sdk.index})
    print(out)
    for dist in DISTRIBUTIONS[:4]:
        assert f"{dist}==7.2.4" in out
    assert "version=7.2.4 targets=gfx942;gfx950" in out
    assert "hipGetDeviceCount" in out
