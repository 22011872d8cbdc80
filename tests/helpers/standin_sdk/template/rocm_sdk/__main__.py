"""``rocm-sdk``: path --root|--cmake|--bin, version, targets, test (a subset of TheRock's CLI)."""

from __future__ import annotations

import argparse
import sys

from . import ALL_LIBRARIES, ALL_PACKAGES, __version__, find_libraries
from ._dist_info import AVAILABLE_TARGETS


def _path(args: argparse.Namespace) -> int:
    from ._devel import devel_root

    root = devel_root()
    if args.cmake:
        print(root / "lib" / "cmake")
    elif args.bin:
        print(root / "bin")
    else:
        print(root)
    return 0


def _test(_args: argparse.Namespace) -> int:
    failed = 0
    for shortname, entry in sorted(ALL_LIBRARIES.items()):
        try:
            (path,) = find_libraries(shortname)
        except ModuleNotFoundError:
            print(f"SKIP {shortname}: {ALL_PACKAGES[entry.package].dist_name} not installed")
            continue
        except FileNotFoundError as exc:
            print(f"FAIL {shortname}: {exc}")
            failed += 1
            continue
        print(f"OK   {shortname}: {path}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rocm-sdk")
    sub = parser.add_subparsers(dest="command", required=True)
    path = sub.add_parser("path", help="print a path of the SDK (expands rocm-sdk-devel)")
    which = path.add_mutually_exclusive_group(required=True)
    which.add_argument("--root", action="store_true")
    which.add_argument("--cmake", action="store_true")
    which.add_argument("--bin", action="store_true")
    sub.add_parser("version", help="print the SDK's version")
    sub.add_parser("targets", help="print the GPU targets the release has device packages for")
    sub.add_parser("test", help="check that every library of the installed packages is found")
    args = parser.parse_args(argv)
    if args.command == "path":
        return _path(args)
    if args.command == "version":
        print(__version__)
        return 0
    if args.command == "targets":
        print(";".join(AVAILABLE_TARGETS))
        return 0
    return _test(args)


if __name__ == "__main__":
    sys.exit(main())
