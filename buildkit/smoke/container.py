"""The container a smoke test runs in: its runtime image, the throwaway container with the payload
copied in, the environment its steps run with (:class:`Box`), and its Python."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from buildkit import image as images
from buildkit.docker_engine import Throwaway, throwaway
from buildkit.errors import DockerUnavailable, UsageError
from buildkit.image.builder import with_packages
from buildkit.smoke.payload import VENV, WORKDIR, copy_payload
from buildkit.smoke.report import OUTPUT_LIMIT, Step
from buildkit.smoke.spec import GpuAccess, SmokeSpec, wheel_python


class Box:
    """A running throwaway container and the environment its steps run with."""

    def __init__(self, container: Throwaway, env: dict[str, str], timeout_prefix: list[str]) -> None:
        self.container = container
        self.env = env
        self.timeout_prefix = timeout_prefix

    def run(self, kind: str, what: str, argv: list[str], *, timeout: bool = True) -> Step:
        command = [*self.timeout_prefix, *argv] if timeout else argv
        result = self.container.exec_run(command, environment=self.env, workdir="/", demux=False)
        raw: bytes = result.output or b""
        output = raw[-OUTPUT_LIMIT:].decode("utf-8", errors="replace")
        code = int(result.exit_code if result.exit_code is not None else 1)
        if code == 124 and self.timeout_prefix:
            output += f"\n(timed out after {self.timeout_prefix[-1]} s)"
        return Step(kind, what, code, output)

    def has(self, shell_test: str) -> bool:
        """``sh -c shell_test`` succeeds in the container (run bare, before any step)."""
        return bool(self.container.exec_run(["sh", "-c", shell_test]).exit_code == 0)


def _image_env(client: Any, image: str) -> dict[str, str]:
    try:
        attrs = client.images.get(image).attrs
    except Exception:
        try:
            attrs = client.images.pull(image).attrs
        except Exception as exc:
            raise DockerUnavailable(
                f"runtime image {image!r} is neither present nor pullable: {exc}"
            ) from None
    env: dict[str, str] = {}
    for item in (attrs.get("Config") or {}).get("Env") or []:
        key, _, value = str(item).partition("=")
        env[key] = value
    return env


def resolve_image(
    client: Any,
    ref: str,
    progress: Callable[[str], None],
    packages: tuple[str, ...] = (),
    rocm: str | None = None,
) -> str:
    """``rocm-buildkit/<profile>`` (no tag) names one of our image profiles: build or reuse it, with
    ``packages`` in a generated layer over it (:func:`buildkit.image.builder.with_packages`). A
    profile with one image per ROCm release gives the image of ``rocm`` (the wheel's, from its
    manifest) when it has one."""
    if ref.startswith(images.REPOSITORY_PREFIX) and ":" not in ref:
        name = ref[len(images.REPOSITORY_PREFIX) :]
        if name in images.PROFILES:
            # a profile that installs AMD's packages gets its newest release, as `buildkit image build` does
            profile = images.PROFILES[name]
            releases = profile.releases
            args = images.profile_rocm_args(profile, rocm if rocm in releases else None, {})
            base = images.ensure_image(profile, build_args=args, client=client, progress=progress)
            if packages:
                return with_packages(client, base, profile, packages, progress).tag
            return base.tag
    if packages:
        raise UsageError(f"smoke packages need a profile's image (rocm-buildkit/<profile>), not {ref!r}")
    return ref


@contextlib.contextmanager
def started(
    client: Any,
    spec: SmokeSpec,
    wheel: Path,
    *,
    wheelhouse: Path | None,
    ca_bundle: Path | None,
    index_url: str | None,
    gpu: GpuAccess | None,
    gpu_note: str,
    timeout: int,
    progress: Callable[[str], None],
) -> Iterator[Box]:
    """A throwaway container of ``spec.image`` (removed in every case), the payload copied in, started;
    the network only with an index. Its steps run with the image's environment, pip's settings, a
    ``TMPDIR`` when the image has no usable ``/tmp``, and ``timeout`` seconds each when it has
    ``timeout``."""
    image_env = _image_env(client, spec.image)
    with throwaway(
        client,
        spec.image,
        ["infinity"],
        purpose="smoke",
        entrypoint=["sleep"],
        network=bool(index_url),
        devices=gpu.devices if gpu is not None else (),
        group_add=gpu.groups if gpu is not None else (),
        warn=lambda line: progress(f"[{spec.name}] {line}"),
    ) as container:
        copy_payload(container, spec, wheel, wheelhouse, ca_bundle)
        container.start()
        box = Box(container, {**image_env}, [])
        progress(f"[{spec.name}] container {container.short_id} of {spec.image}; {gpu_note}")
        if box.has("command -v timeout"):
            box.timeout_prefix = ["timeout", "-k", "10", str(timeout)]
        if "TMPDIR" not in box.env and not box.has("test -d /tmp -a -w /tmp"):
            box.env["TMPDIR"] = f"{WORKDIR}/tmp"  # an image without a usable /tmp (pip needs a temp dir)
        if ca_bundle is not None:
            box.env["PIP_CERT"] = f"{WORKDIR}/ca-bundle.crt"
        box.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        box.env["PIP_NO_INPUT"] = "1"
        yield box


def prepare_python(box: Box, python: str, wheel: Path, steps: list[Step]) -> tuple[str, list[str]] | str:
    """The Python the wheel is installed for (the ``setup`` step), its steps added to ``steps`` and
    ``box.env`` set for it; the reason, a string, when the image has no usable ``python`` with venv or pip."""
    if python == "python3":  # the wheel's own CPython when the image has several (python3.14)
        own = wheel_python(wheel)
        if own and box.has(f"command -v {own}"):
            python = own
    base_env = box.env
    setup = box.run("setup", f"{python} -m venv", [python, "-m", "venv", "--system-site-packages", VENV])
    steps.append(setup)
    if not setup.passed:
        # a Python without ensurepip (Debian's, without its -venv package) still makes a venv without
        # pip, whose interpreter runs the image's own pip from the system site into the venv
        bare = box.run(
            "setup",
            f"{python} -m venv --without-pip",
            [python, "-m", "venv", "--system-site-packages", "--without-pip", "--clear", VENV],
        )
        if (
            bare.passed
            and box.run("setup", "venv pip", [f"{VENV}/bin/python", "-m", "pip", "--version"]).passed
        ):
            steps[-1] = setup = bare
    if setup.passed:
        path = f"{VENV}/bin:" + base_env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        box.env = {**base_env, "VIRTUAL_ENV": VENV, "PATH": path}
        return f"{VENV}/bin/python", []
    pip_check = box.run("setup", f"{python} -m pip", [python, "-m", "pip", "--version"])
    steps.append(pip_check)
    if not pip_check.passed:
        return f"the runtime image has no usable {python} with venv or pip"
    box.env = {**base_env, "PYTHONPATH": f"{WORKDIR}/site"}
    return python, ["--target", f"{WORKDIR}/site"]
