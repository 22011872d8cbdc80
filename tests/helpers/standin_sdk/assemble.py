"""Lay out the stand-in ROCm SDK's wheels from unpacked Debian packages (runs inside the container
build.sh prepares: Python's standard library and patchelf, nothing else).

    python3 assemble.py --lock debs.lock --trees /x --template template --out /out

``/x/<package>/`` holds each .deb of the lock unpacked. Writes, byte for byte the same on every run
(sorted members, fixed dates and modes):

    rocm-7.2.4-py3-none-any.whl                      rocm_sdk (the selector, extras, `rocm-sdk`)
    rocm_sdk_core-7.2.4-py3-none-linux_x86_64.whl     _rocm_sdk_core/lib/ (+ lib/rocm_sysdeps/lib/)
    rocm_sdk_libraries-7.2.4-py3-none-linux_x86_64.whl _rocm_sdk_libraries/lib/
    rocm_sdk_devel-7.2.4-py3-none-linux_x86_64.whl    _rocm_sdk_devel/_devel.tar
    rocm_sdk_device_gfx942-7.2.4-py3-none-linux_x86_64.whl (and gfx950) _rocm_sdk_device_gfxNNN/

Each library is stored under its SONAME (no symlinks in a wheel), with a RUNPATH that reaches its
dependencies in the SDK as TheRock's do ($ORIGIN, $ORIGIN/../../_rocm_sdk_core/lib); every DT_NEEDED
must resolve in the SDK or be a base-system library, or assembly fails.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

VERSION = "7.2.4"
TARGETS = ("gfx942", "gfx950")
MULTIARCH = "usr/lib/x86_64-linux-gnu"
PLATFORM_TAG = "py3-none-linux_x86_64"
ZIP_DATE = (2026, 1, 1, 0, 0, 0)
TAR_MTIME = 1767225600  # 2026-01-01
#: what every system with glibc >= 2.38 has (the SDK needs no more of the system)
BASE_SYSTEM = re.compile(
    r"^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libz|libzstd|ld-linux-x86-64)\.so"
)
#: shortname -> (package, pattern, folder in the package, SDK libraries it needs loaded first)
LIBRARIES: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "hsa-runtime64": ("core", "libhsa-runtime64.so*", "lib", ()),
    "amdhip64": ("core", "libamdhip64.so*", "lib", ("hsa-runtime64",)),
    "hiprtc": ("core", "libhiprtc.so*", "lib", ()),
    "roctx64": ("core", "libroctx64.so*", "lib", ()),
    "rocfft": ("libraries", "librocfft.so*", "lib", ("amdhip64", "hiprtc")),
    "hipfft": ("libraries", "libhipfft.so*", "lib", ("rocfft",)),
}
RUNPATHS = {
    "core": "$ORIGIN:$ORIGIN/rocm_sysdeps/lib",
    "sysdeps": "$ORIGIN",
    "libraries": "$ORIGIN:$ORIGIN/../../_rocm_sdk_core/lib:$ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib",
}


def read_lock(path: Path) -> list[tuple[str, str, str, str]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pkg, ver, sha, part = line.split()
            rows.append((pkg, ver, sha, part))
    return rows


def patchelf(*args: str) -> str:
    return subprocess.run(["patchelf", *args], check=True, capture_output=True, text=True).stdout.strip()


def shared_objects(tree: Path) -> list[tuple[str, Path]]:
    """(SONAME, real file) of each shared library a runtime package ships in the multiarch folder."""
    found = []
    folder = tree / MULTIARCH
    for path in sorted(folder.glob("*.so*")) if folder.is_dir() else []:
        if path.is_symlink() or not path.is_file():
            continue
        soname = patchelf("--print-soname", str(path))
        if soname:  # libelf-0.196.so is libelf.so.1
            found.append((soname, path))
    return found


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(
    out: Path,
    dist: str,
    tag: str,
    files: dict[str, tuple[bytes, int]],
    metadata: list[str],
    entry_points: str = "",
) -> Path:
    """A wheel of ``files`` (member -> (bytes, mode)), deterministic: sorted, one date, given modes."""
    normalized = dist.replace("-", "_")
    dist_info = f"{normalized}-{VERSION}.dist-info"
    members = dict(files)
    purelib = "true" if tag.endswith("-any") else "false"
    members[f"{dist_info}/WHEEL"] = (
        (
            "Wheel-Version: 1.0\nGenerator: rocm-buildkit-standin-sdk\n"
            f"Root-Is-Purelib: {purelib}\nTag: {tag}\n"
        ).encode(),
        0o644,
    )
    head = ["Metadata-Version: 2.1", f"Name: {dist}", f"Version: {VERSION}", "Requires-Python: >=3.10"]
    summary = "Summary: STAND-IN of AMD's ROCm SDK wheel, made from Debian's ROCm 7.2.4 packages (tests only)"
    members[f"{dist_info}/METADATA"] = ("\n".join([*head, summary, *metadata]) + "\n").encode(), 0o644
    if entry_points:
        members[f"{dist_info}/entry_points.txt"] = entry_points.encode(), 0o644
    record = f"{dist_info}/RECORD"
    lines = [record_line(name, data) for name, (data, _) in sorted(members.items())] + [f"{record},,"]
    members[record] = ("\n".join(lines) + "\n").encode(), 0o644
    path = out / f"{normalized}-{VERSION}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name in sorted(members):
            data, mode = members[name]
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def library_files(trees: Path, lock: list[tuple[str, str, str, str]]) -> dict[str, dict[str, Path]]:
    """part ("core", "sysdeps", "libraries") -> SONAME -> the real file in the unpacked package."""
    parts: dict[str, dict[str, Path]] = {}
    for pkg, _ver, _sha, part in lock:
        if part in RUNPATHS:
            for soname, path in shared_objects(trees / pkg):
                parts.setdefault(part, {})[soname] = path
    return parts


def check_closure(parts: dict[str, dict[str, Path]]) -> None:
    """Every DT_NEEDED of the SDK's libraries is in the SDK or the base system."""
    sdk = {soname for part in parts.values() for soname in part}
    missing = []
    for part in parts.values():
        for soname, path in part.items():
            for needed in patchelf("--print-needed", str(path)).split():
                if needed not in sdk and not BASE_SYSTEM.match(needed):
                    missing.append(f"{soname} needs {needed}")
    if missing:
        sys.exit("stand-in SDK incomplete: " + "; ".join(missing))


def staged_library(path: Path, runpath: str, work: Path) -> tuple[bytes, int]:
    copy = work / path.name
    copy.write_bytes(path.read_bytes())
    patchelf("--set-rpath", runpath, str(copy))
    return copy.read_bytes(), 0o755


def dist_info_module(sonames: dict[str, str]) -> str:
    packages = {
        "meta": ("rocm", "rocm_sdk"),
        "core": ("rocm-sdk-core", "_rocm_sdk_core"),
        "libraries": ("rocm-sdk-libraries", "_rocm_sdk_libraries"),
        "devel": ("rocm-sdk-devel", "_rocm_sdk_devel"),
    }
    lines = [
        '"""Distribution information of the STAND-IN SDK (generated by assemble.py)."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        f'__version__ = "{VERSION}"',
        f"AVAILABLE_TARGETS: tuple[str, ...] = {TARGETS!r}",
        "",
        "",
        "class PackageEntry(NamedTuple):",
        "    dist_name: str",
        "    py_package: str",
        "",
        "",
        "class LibraryEntry(NamedTuple):",
        "    package: str",
        "    so_pattern: str",
        "    posix_relpath: str",
        "    deps: tuple[str, ...]",
        "    soname: str",
        "",
        "",
        "ALL_PACKAGES: dict[str, PackageEntry] = {",
        *(f"    {k!r}: PackageEntry({d!r}, {p!r})," for k, (d, p) in packages.items()),
        *(f"    'device-{t}': PackageEntry('rocm-sdk-device-{t}', '_rocm_sdk_device_{t}')," for t in TARGETS),
        "}",
        "ALL_LIBRARIES: dict[str, LibraryEntry] = {",
        *(
            f"    {short!r}: LibraryEntry({pkg!r}, {pattern!r}, {rel!r}, {deps!r}, {sonames[short]!r}),"
            for short, (pkg, pattern, rel, deps) in LIBRARIES.items()
        ),
        "}",
    ]
    return "\n".join(lines) + "\n"


def devel_tar(trees: Path, lock: list[tuple[str, str, str, str]], parts: dict[str, dict[str, Path]]) -> bytes:
    """_devel.tar: headers, relocated CMake files, device libraries, and lib/ links into the runtime
    packages (as TheRock's: everything in the devel root, runtime files as relative symlinks)."""
    entries: dict[str, tuple[bytes | None, str | None, int]] = {}  # name -> (data, link target, mode)
    for pkg, _ver, _sha, part in lock:
        if part != "devel":
            continue
        root = trees / pkg
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_dir() or "/share/" in f"/{rel}":
                continue
            if rel.startswith("usr/include/"):
                name = "include/" + rel.removeprefix("usr/include/")
            elif rel.startswith(f"{MULTIARCH}/cmake/"):
                name = "lib/cmake/" + rel.removeprefix(f"{MULTIARCH}/cmake/")
            elif "/amdgcn/bitcode/" in rel:
                name = "amdgcn/bitcode/" + path.name
            elif rel.startswith(f"{MULTIARCH}/") and path.is_symlink():
                name = "lib/" + path.name  # libamdhip64.so -> libamdhip64.so.7
                entries[name] = (None, os.readlink(path), 0o777)
                continue
            else:
                continue
            if path.is_symlink():
                continue
            data = path.read_bytes()
            if name.startswith("lib/cmake/"):
                data = data.replace(b"lib/x86_64-linux-gnu", b"lib")
            entries[name] = (data, None, 0o644)
    folders = {"core": "_rocm_sdk_core/lib", "libraries": "_rocm_sdk_libraries/lib"}
    for part, folder in folders.items():
        for soname in parts.get(part, {}):
            entries[f"lib/{soname}"] = (None, f"../../{folder}/{soname}", 0o777)
    entries["bin/.keep"] = (b"", None, 0o644)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            data, link, mode = entries[name]
            info = tarfile.TarInfo(name)
            info.mtime, info.mode, info.uid, info.gid = TAR_MTIME, mode, 0, 0
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                assert data is not None
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--trees", type=Path, required=True)
    parser.add_argument("--template", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    lock = read_lock(args.lock)
    parts = library_files(args.trees, lock)
    check_closure(parts)
    sonames = {}
    for short, (pkg, pattern, _rel, _deps) in LIBRARIES.items():
        (soname,) = [s for s in parts[pkg] if Path(s).match(pattern)]
        sonames[short] = soname
    work = args.out / ".work"
    work.mkdir(parents=True, exist_ok=True)
    blank = b"", 0o644
    pin = f"=={VERSION}"

    core: dict[str, tuple[bytes, int]] = {"_rocm_sdk_core/__init__.py": blank}
    for soname, path in parts["core"].items():
        core[f"_rocm_sdk_core/lib/{soname}"] = staged_library(path, RUNPATHS["core"], work)
    for soname, path in parts["sysdeps"].items():
        core[f"_rocm_sdk_core/lib/rocm_sysdeps/lib/{soname}"] = staged_library(
            path, RUNPATHS["sysdeps"], work
        )
    write_wheel(args.out, "rocm-sdk-core", PLATFORM_TAG, core, [])

    libraries: dict[str, tuple[bytes, int]] = {"_rocm_sdk_libraries/__init__.py": blank}
    for soname, path in parts["libraries"].items():
        libraries[f"_rocm_sdk_libraries/lib/{soname}"] = staged_library(path, RUNPATHS["libraries"], work)
    for pkg, _ver, _sha, part in lock:  # rocFFT's run-time compiler helper, beside its library
        for helper in sorted((args.trees / pkg / MULTIARCH).glob("*/*/*")) if part == "libraries" else []:
            rel = helper.relative_to(args.trees / pkg / MULTIARCH).as_posix()
            libraries[f"_rocm_sdk_libraries/lib/{rel}"] = helper.read_bytes(), 0o755
    write_wheel(
        args.out, "rocm-sdk-libraries", PLATFORM_TAG, libraries, [f"Requires-Dist: rocm-sdk-core{pin}"]
    )

    devel = {
        "_rocm_sdk_devel/__init__.py": blank,
        "_rocm_sdk_devel/_devel.tar": (devel_tar(args.trees, lock, parts), 0o644),
    }
    write_wheel(args.out, "rocm-sdk-devel", PLATFORM_TAG, devel, [f"Requires-Dist: rocm-sdk-core{pin}"])

    bitcode = next((args.trees / "rocm-device-libs-22").rglob("amdgcn/bitcode"))
    for target in TARGETS:
        isa = bitcode / f"oclc_isa_version_{target.removeprefix('gfx')}.bc"
        files = {
            f"_rocm_sdk_device_{target}/__init__.py": blank,
            f"_rocm_sdk_device_{target}/targets.txt": (f"{target}\n".encode(), 0o644),
            f"_rocm_sdk_device_{target}/lib/amdgcn/bitcode/{isa.name}": (isa.read_bytes(), 0o644),
        }
        write_wheel(args.out, f"rocm-sdk-device-{target}", PLATFORM_TAG, files, [])

    meta: dict[str, tuple[bytes, int]] = {}
    for path in sorted(args.template.rglob("*.py")):
        meta[path.relative_to(args.template).as_posix()] = path.read_bytes(), 0o644
    meta["rocm_sdk/_dist_info.py"] = dist_info_module(sonames).encode(), 0o644
    extras = {
        "libraries": ["rocm-sdk-libraries"],
        "devel": ["rocm-sdk-devel"],
        **{f"device-{t}": [f"rocm-sdk-device-{t}"] for t in TARGETS},
        "device-all": [f"rocm-sdk-device-{t}" for t in TARGETS],
    }
    requires = [f"Requires-Dist: rocm-sdk-core{pin}"]
    for extra, dists in extras.items():
        requires.append(f"Provides-Extra: {extra}")
        requires += [f'Requires-Dist: {d}{pin}; extra == "{extra}"' for d in dists]
    entry = "[console_scripts]\nrocm-sdk = rocm_sdk.__main__:main\n"
    write_wheel(args.out, "rocm", "py3-none-any", meta, requires, entry)
    for path in work.iterdir():
        path.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
