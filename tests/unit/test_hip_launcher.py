"""The HIP compile launcher (buildkit/building/hip_launcher.sh, as the build stages it): which command
lines get a ``-cuid=``, what value, and what it runs next.

The script itself runs here, under /bin/sh, in front of a stand-in compiler that prints the arguments
it gets (the real clang is the docker tier's: tests/docker/test_hip_cuid_e2e.py); the value is checked
against a sha256 computed here, not by the script.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from buildkit.building import ccache


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """The staged launcher, a compiler that prints its arguments and a ccache that says it ran."""
    launcher = tmp_path / "hip-launcher"
    launcher.write_text(ccache.launcher_script())
    launcher.chmod(0o755)
    compiler = tmp_path / "clang++"
    compiler.write_text(
        "#!/bin/sh\nprintf 'compiler:%s\\n' \"$0\"\nprintf 'disable:%s\\n' \"${CCACHE_DISABLE:-}\"\n"
        "printf 'arg:%s\\n' \"$@\"\n"
    )
    compiler.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_ccache = bin_dir / "ccache"
    fake_ccache.write_text('#!/bin/sh\necho via-ccache\nexec "$@"\n')
    fake_ccache.chmod(0o755)
    return tmp_path


def _run(tools: Path, *args: str, cached: bool = False) -> list[str]:
    env = {"PATH": f"{tools / 'bin'}:{os.environ['PATH']}"}
    if cached:
        env[ccache.CCACHE_SWITCH] = "1"
    proc = subprocess.run(
        [str(tools / "hip-launcher"), str(tools / "clang++"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _args(lines: list[str]) -> list[str]:
    return [line.removeprefix("arg:") for line in lines if line.startswith("arg:")]


#: the options naming a file the compile writes or an include folder: left out of the hash with
#: their value (separate or joined), as ccache leaves them out of its preprocessor-mode hash
LEFT_OUT = ("-o", "-MF", "-MT", "-MQ", "-I", "-isystem", "-iquote", "-idirafter")


def _cuid(args: list[str]) -> str:
    """What the launcher should add: the first 16 hex of the sha256 of the NUL-ended arguments,
    without the output files and include folders."""
    hashed, rest = [], iter(args)
    for arg in rest:
        if arg in LEFT_OUT:
            next(rest)
        elif not arg.startswith(LEFT_OUT):
            hashed.append(arg)
    return "-cuid=" + hashlib.sha256(b"".join(a.encode() + b"\0" for a in hashed)).hexdigest()[:16]


#: CMake's HIP compile line (ggml's .cu files with LANGUAGE HIP), and compiled hipcc's of a .hip file
CMAKE = ["-DGGML_USE_HIP", "-O3", "--offload-arch=gfx942", "-x", "hip", "-c", "/project/ggml.cu", "-o", "a.o"]
HIPCC = ["--offload-arch=gfx90a", "-O2", "-fPIC", "-c", "-x", "hip", "k.hip", "-o", "/project/build/k.o"]


@pytest.mark.parametrize(
    "args",
    [
        CMAKE,
        HIPCC,
        ["-c", "kernels.hip", "-o", "k.o"],  # a .hip file is HIP without -x
        ["-xhip", "-c", "a.cu", "-o", "a.o"],
        ["-c", "-x", "none", "k.hip", "-o", "k.o"],
        ["-c", "-include", "pre.h", "-x", "hip", "a with space.cpp", "-o", "a.o"],
    ],
)
def test_a_hip_compile_gets_a_cuid_of_its_arguments(tools: Path, args: list[str]) -> None:
    got = _args(_run(tools, *args))
    assert got == [*args, _cuid(args)]


def test_the_cuid_is_the_arguments_and_not_the_compiler_nor_the_run(tools: Path) -> None:
    first = _args(_run(tools, *CMAKE))[-1]
    assert _args(_run(tools, *CMAKE))[-1] == first  # the same compile: the same ID, every build
    # the same file with other flags is another translation unit (-fgpu-rdc links them together)
    other = _args(_run(tools, *CMAKE[:1], "-O2", *CMAKE[2:]))[-1]
    assert other.startswith("-cuid=") and other != first


def test_the_files_a_compile_writes_are_left_out_of_the_hash(tools: Path) -> None:
    """CMake's try_compile writes ``CMakeFiles/cmTC_<random>.dir/...``: ccache does not hash the
    output's name and hits; the same compile gets the same ID, or it would miss every configure."""
    one = ["-v", "-o", "CMakeFiles/cmTC_27971.dir/ABI.hip.o", "-x", "hip", "-c", "/m/ABI.hip"]
    two = ["-v", "-o", "CMakeFiles/cmTC_5aa01.dir/ABI.hip.o", "-x", "hip", "-c", "/m/ABI.hip"]
    assert _args(_run(tools, *one))[-1] == _args(_run(tools, *two))[-1] == _cuid(one)
    deps = ["-MD", "-MT", "x.o", "-MF", "x.o.d", "-oout.o", "-MFjoined.d", "-x", "hip", "-c", "k.hip"]
    assert _args(_run(tools, *deps))[-1] == _cuid(["-MD", "-x", "hip", "-c", "k.hip"])


def test_the_include_folders_are_left_out_of_the_hash(tools: Path) -> None:
    """The jobs of a matrix compile a kernel with ``-I/usr/include/python3.X`` and pip's isolated
    environment is at a random path: ccache's preprocessor mode hashes the text instead and serves
    job 1's object to job 2, so both must get one ID (as an uncached job 2 then does)."""
    base = ["-x", "hip", "-c", "k.hip", "-o", "k.o"]
    one = _args(_run(tools, "-I/usr/include/python3.13", "-isystem", "/tmp/pip-build-env-a/include", *base))
    two = _args(_run(tools, "-I/usr/include/python3.14", "-isystem", "/tmp/pip-build-env-b/include", *base))
    assert one[-1] == two[-1] == _cuid(base)
    assert one[:-1] == ["-I/usr/include/python3.13", "-isystem", "/tmp/pip-build-env-a/include", *base]
    # a macro is not an include folder: another -D is another translation unit
    assert _args(_run(tools, "-DFLOAT=double", *base))[-1] == _cuid(["-DFLOAT=double", *base]) != one[-1]


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "a.cpp", "-o", "a.o"],  # C++: clang would warn that -cuid is unused (-Werror fails)
        ["--offload-arch=gfx942", "-c", "a.cpp", "-o", "a.o"],  # an arch does not make C++ HIP
        ["-x", "c++", "-c", "k.hip", "-o", "k.o"],  # -x wins over the extension
        ["-c", "a.cpp", "-x", "hip", "-o", "a.o"],  # -x applies to the inputs after it only
        ["-c", "-include", "pre.hip", "a.cpp", "-o", "a.o"],  # an option's value is no input
        ["--offload-arch=gfx942", "-x", "hip", "k.hip", "-o", "k"],  # compile and link: ccache runs it
        ["--hip-link", "--offload-arch=gfx942", "k.o", "-o", "k.so"],  # a link
        ["-x", "hip", "-c", "k.hip", "-cuid=mine", "-o", "k.o"],  # the project's own ID
        ["-x", "hip", "-c", "k.hip", "-fuse-cuid=random", "-o", "k.o"],  # the project's choice
        ["--version"],
    ],
)
def test_other_command_lines_pass_unchanged(tools: Path, args: list[str]) -> None:
    assert _args(_run(tools, *args)) == args


def test_with_the_cache_the_compile_runs_through_ccache(tools: Path) -> None:
    uncached = _run(tools, *HIPCC)
    cached = _run(tools, *HIPCC, cached=True)
    assert uncached[0] == f"compiler:{tools / 'clang++'}"
    assert cached[0] == "via-ccache" and cached[1:] == uncached  # the same compile, the same -cuid
    assert _args(cached)[-1] == _cuid(HIPCC)


#: CMake's configure probes: a source in a scratch folder named anew at every configure
PROBES = [
    ["-DHAVE_X", "-o", "CMakeFiles/cmTC_d6bd6.dir/src.c.o", "-c",
     "/project/build/temp/CMakeFiles/CMakeScratch/TryCompile-2UVgzB/src.c"],
    ["-x", "hip", "--offload-arch=gfx942", "-o", "CMakeFiles/cmTC_1.dir/src.hip.o", "-c",
     "/project/b/CMakeFiles/CMakeScratch/TryCompile-i0RpeL/src.hip"],
]  # fmt: skip


@pytest.mark.parametrize("args", PROBES)
def test_a_configure_probe_is_never_cached(tools: Path, args: list[str]) -> None:
    # with the cache on, it runs the compiler itself, and with ccache turned off for what the
    # compiler runs (a sysroot wrapper's gcc through the masquerade): a random path can never hit
    out = _run(tools, *args, cached=True)
    assert out[0] == f"compiler:{tools / 'clang++'}" and "via-ccache" not in out
    assert out[1] == "disable:1"
    assert _args(out)[: len(args)] == args


def test_other_compiles_keep_the_cache(tools: Path) -> None:
    # CMake's compiler-identification compile reads its source from CMake's own modules (a fixed
    # path: it hits), and the project's compiles: through ccache, nothing turned off
    for args in (
        ["-o", "CMakeFiles/cmTC_f749c.dir/CMakeCCompilerABI.c.o", "-c",
         "/usr/share/cmake-4.3/Modules/CMakeCCompilerABI.c"],
        ["-O2", "-c", "/project/src/TryCompile-like-name.c", "-o", "x.o"],
    ):  # fmt: skip
        out = _run(tools, *args, cached=True)
        assert out[:3] == ["via-ccache", f"compiler:{tools / 'clang++'}", "disable:"], out


def test_without_a_compiler_it_says_how_to_call_it(tools: Path) -> None:
    proc = subprocess.run(
        [str(tools / "hip-launcher")], capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 2 and "usage: hip-launcher COMPILER ARG..." in proc.stderr


def test_the_staged_script_is_shellcheck_clean(tmp_path: Path) -> None:
    text = ccache.launcher_script()
    assert text.startswith("#!/bin/sh\n")
    found = shutil.which("shellcheck")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("shellcheck is not installed (./dev installs it)")
        pytest.skip("shellcheck is not installed")
    script = tmp_path / "hip-launcher"
    script.write_text(text)
    proc = subprocess.run([found, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout
