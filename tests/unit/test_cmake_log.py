"""What CMake looked for and did not find, from a job's build log, in the summary (issue 39: an
OpenMP backend that vanished under a sysroot with only a CMake status line in the job log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildkit.building import cmake_log
from buildkit.building.job import JobResult
from buildkit.building.summary import render_summary

pytestmark = pytest.mark.unit

# lines as pywhispercpp's ggml configure printed them through scikit-build-core in cibuildwheel's output
LOG = """\
  *** Configuring CMake...
  -- The C compiler identification is Clang 22.1.0
  -- Could NOT find OpenMP_C (missing: OpenMP_C_FLAGS OpenMP_C_LIB_NAMES)
  -- Could NOT find OpenMP_CXX (missing: OpenMP_CXX_FLAGS OpenMP_CXX_LIB_NAMES)
  -- Could NOT find OpenMP (missing: OpenMP_C_FOUND OpenMP_CXX_FOUND)
  CMake Warning at ggml/src/ggml-cpu/CMakeLists.txt:53 (message):
    OpenMP not found
  -- Could NOT find CURL
  -- Found Threads: TRUE
  -- Could NOT find Threads (missing: Threads_FOUND)
"""


def test_each_package_cmake_did_not_find_is_listed_once_in_order() -> None:
    assert cmake_log.not_found(LOG) == (
        "OpenMP_C (missing: OpenMP_C_FLAGS OpenMP_C_LIB_NAMES)",
        "OpenMP_CXX (missing: OpenMP_CXX_FLAGS OpenMP_CXX_LIB_NAMES)",
        "OpenMP (missing: OpenMP_C_FOUND OpenMP_CXX_FOUND)",
        "CURL",
    )  # Threads was found by another find_package: not missing
    assert cmake_log.not_found('-- Found OpenMP_CXX: -fopenmp (found version "4.5")\n') == ()


def test_the_summary_lists_them_under_the_job() -> None:
    result = JobResult(job="cp313-rocm7.2", status="passed", log=Path("/tmp/logs/cp313-rocm7.2.log"))
    result.not_found = cmake_log.not_found(LOG)
    text = render_summary([result], cwd=Path("/tmp"))
    assert (
        "  not found OpenMP_CXX (missing: OpenMP_CXX_FLAGS OpenMP_CXX_LIB_NAMES) (CMake; built without it)"
        in text
    )
    assert "  not found CURL (CMake; built without it)" in text
