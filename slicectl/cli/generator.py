"""`slicectl generator enable|disable`: switch this host between files mode and generator mode
(slicectl.apply.generator_mode), and what `apply`, `plan` and `status` do in generator mode."""

from __future__ import annotations

import sys

from slicectl.cli.common import EXIT_OK, apply_options, load_topology, require_unified

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace

    from slicectl.apply.generator_mode import GeneratorPaths


def paths_of(args: Namespace) -> GeneratorPaths:
    from pathlib import Path

    from slicectl.apply.generator_mode import GeneratorPaths

    return GeneratorPaths(Path(getattr(args, "root", None) or "/"))


def generator_executable() -> str:
    """The installed `slicectl-generator`: beside this slicectl, else on PATH."""
    import os
    import shutil

    from slicectl.core.errors import SlicectlError

    for folder in (os.path.dirname(os.path.realpath(sys.argv[0])),
                   os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, "slicectl-generator")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("slicectl-generator")
    if found is None:
        raise SlicectlError("slicectl-generator is not installed beside slicectl",
                            "install the package (pip install .): it brings both commands")
    return os.path.abspath(found)


def _progress(line: str) -> None:
    print(f"slicectl: {line}", file=sys.stderr, flush=True)


def cmd_generator(args: Namespace) -> int:
    """`slicectl generator enable [TENANTS]` / `slicectl generator disable`."""
    import asyncio

    from slicectl.apply import generator_mode

    require_unified(args)
    paths = paths_of(args)
    options = apply_options(args)
    if args.action == "disable":
        for line in asyncio.run(generator_mode.disable(options, paths, _progress)):
            print(line)
        print("Files mode: the generator is off.")
        return EXIT_OK
    source = args.tenants or str(paths.tenants)
    report = asyncio.run(generator_mode.enable(
        source, load_topology(args), args.sysfs or "/sys", options, paths,
        generator_executable(), _progress))
    print(f"Generator mode: {paths.link} places {paths.tenants} at every boot and "
          f"daemon-reload; {len(report.verified)} unit(s) verified.")
    return EXIT_OK


def generator_note(args: Namespace) -> None:
    """On a host in generator mode, say so, and why the generator's last run fell back."""
    from slicectl.apply.generator_mode import enabled, generator_error

    paths = paths_of(args)
    if not enabled(paths):
        return
    error = generator_error(paths)
    if error is not None:
        print(f"warning: the generator's last run failed: {error}", file=sys.stderr)
