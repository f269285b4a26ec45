"""`slicectl install` and `slicectl uninstall`: put slicectl's units, completion scripts, man
pages and command links where systemd, the shells and man look for them, or take exactly those
away again (slicectl.apply.install keeps the manifest and the rules).

Under PREFIX (default /usr/local, the FHS's place for software the administrator installs):

    bin/slicectl, bin/slicectl-generator        links to this slicectl's console scripts
    lib/systemd/system/slicectl-*.service       units/, ExecStart= pointing at this slicectl
    lib/sysusers.d/slicectl-exporter.conf       the exporter's user, for systemd-sysusers
    share/bash-completion/completions/slicectl  bash (bash-completion loads it on first TAB)
    share/zsh/site-functions/_slicectl          zsh (in zsh's default fpath)
    share/fish/vendor_completions.d/slicectl.fish  fish
    share/man/man1/slicectl*.1, man5/slicectl-tenants.5
    lib/slicectl/install-manifest.json          what was placed, with SHA-256s

systemd searches /usr/local/lib/systemd/system and /usr/local/lib/sysusers.d after /etc, so an
operator's own copy or drop-in in /etc/systemd/system still wins. The generator is not linked
into a generator folder: a generator found there runs at every boot and daemon-reload, and on a
files-mode host whose tenants.yaml is /etc/slicectl/tenants.yaml it would place the tenants
behind apply's back. `slicectl generator enable` is the switch that links it.
"""

from __future__ import annotations

import sys

from slicectl.cli.common import EXIT_OK

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from pathlib import Path

    from slicectl.apply.install import Entry, Step

PREFIX = "/usr/local"
SHIPPED_EXECUTABLE = "/usr/local/bin/slicectl"  # what units/*.service name in ExecStart=
SEARCHED_PREFIXES = ("/usr/local", "/usr")  # where systemd and the shells look
COMPLETIONS = {"bash": "share/bash-completion/completions/slicectl",
               "zsh": "share/zsh/site-functions/_slicectl",
               "fish": "share/fish/vendor_completions.d/slicectl.fish"}
MANIFEST = "lib/slicectl/install-manifest.json"


def _usage(message: str, hint: str) -> Exception:
    from slicectl.core.errors import UsageError

    return UsageError(message, hint)


def _root(args: Namespace) -> Path:
    from pathlib import Path

    root = Path(args.root or "/")
    if not root.is_dir():
        raise _usage(f"--root {args.root}: not a folder",
                     "give the root of the system to install into (it must exist)")
    return root


def _prefix(args: Namespace) -> str:
    import os

    prefix = args.prefix or PREFIX
    if not os.path.isabs(prefix):
        raise _usage(f"--prefix {prefix}: not an absolute path",
                     f"give the path on the target system, e.g. --prefix {PREFIX}")
    return os.path.normpath(prefix)


def _on_target(path: str, root: Path) -> str:
    """`path` as the target system sees it: without `root` when it lies under it (a venv in
    the image being built), else as it is."""
    import os

    if str(root) != "/" and path.startswith(str(root).rstrip("/") + "/"):
        return "/" + os.path.relpath(path, root)
    return path


def command(args: Namespace, root: Path) -> tuple[str, ...]:
    """How the installed units run slicectl: `--slicectl PATH`, else this slicectl. Refused
    when a word cannot be written into ExecStart= (slicectl.core.plan.exec_word)."""
    import os

    from slicectl.cli.schedule import this_slicectl
    from slicectl.core.plan import check_exec_word

    if args.slicectl:
        if not os.path.isabs(args.slicectl):
            raise _usage(f"--slicectl {args.slicectl}: not an absolute path",
                         "systemd runs ExecStart= by absolute path: give e.g. "
                         "/opt/slicectl/bin/slicectl")
        check_exec_word(args.slicectl, "--slicectl", first=True)
        return (args.slicectl,)
    words = tuple(_on_target(os.path.abspath(word), root) if os.path.isabs(word) else word
                  for word in this_slicectl())
    for i, word in enumerate(words):
        check_exec_word(word, "this slicectl's path (give --slicectl PATH)", first=not i)
    return words


def unit_text(text: str, executable: tuple[str, ...]) -> str:
    """A shipped unit with its ExecStart= lines running `executable` instead of
    /usr/local/bin/slicectl."""
    from slicectl.core.plan import exec_word

    start = f"ExecStart={SHIPPED_EXECUTABLE} "
    new = "ExecStart=" + " ".join(exec_word(word, "the units' slicectl", first=not i)
                                  for i, word in enumerate(executable)) + " "
    return "".join(new + line[len(start):] if line.startswith(start) else line
                   for line in text.splitlines(keepends=True))


def _shipped(package: str, suffixes: tuple[str, ...]) -> dict[str, bytes]:
    """The files a package-data package ships: from the checkout's folder (`units/`, `man/`;
    pyproject.toml maps them into the package) when slicectl runs from a checkout, which
    has no such package, else as pip installed them."""
    from pathlib import Path

    checkout = Path(__file__).resolve().parents[2]
    folder = checkout / package.removeprefix("slicectl.")
    if (checkout / "pyproject.toml").is_file() and folder.is_dir():
        return {item.name: item.read_bytes() for item in folder.iterdir()
                if item.name.endswith(suffixes)}
    from importlib.resources import files

    return {item.name: item.read_bytes() for item in files(package).iterdir()
            if item.name.endswith(suffixes)}


def entries(prefix: str, executable: tuple[str, ...]) -> list[Entry]:
    """Everything install places under `prefix` for units that run `executable`."""
    import os

    from slicectl.apply.install import Entry
    from slicectl.cli.completion import script

    placed = []
    units = _shipped("slicectl.units", (".service", ".sysusers"))
    for name, data in sorted(units.items()):
        if name.endswith(".sysusers"):
            path = f"{prefix}/lib/sysusers.d/{name.removesuffix('.sysusers')}.conf"
        else:
            path = f"{prefix}/lib/systemd/system/{name}"
            data = unit_text(data.decode(), executable).encode()
        placed.append(Entry(path, data))
    placed += [Entry(f"{prefix}/{where}", script(shell).encode())
               for shell, where in COMPLETIONS.items()]
    pages = _shipped("slicectl.man", (".1", ".5"))
    if not pages:
        from slicectl.core.errors import SlicectlError

        raise SlicectlError("this slicectl was built without its man pages",
                            "reinstall it from a clone or a wheel (pip install .)")
    placed += [Entry(f"{prefix}/share/man/man{name[-1]}/{name}", data)
               for name, data in sorted(pages.items())]
    if len(executable) == 1:  # a console script: link it, and the generator beside it
        for name in ("slicectl", "slicectl-generator"):
            target = os.path.join(os.path.dirname(executable[0]), name)
            if target != f"{prefix}/bin/{name}":  # it is on PATH there already
                placed.append(Entry(f"{prefix}/bin/{name}", link=target, optional=True))
    return placed


def _say(line: str) -> None:
    print(f"slicectl: {line}", file=sys.stderr)


def _notes(root: Path, prefix: str, steps: list[Step]) -> None:
    """What the operator should know: a folder systemd does not search, a copy in /etc that
    overrides an installed unit."""
    import os

    if prefix not in SEARCHED_PREFIXES:
        _say(f"note: systemd, man and the shells do not look under {prefix}; "
             f"--prefix {PREFIX} is where they do")
    from slicectl.core.errors import OutputError
    from slicectl.host.files.rootpath import under_root

    for step in steps:
        if "/lib/systemd/system/" in step.path:
            name = step.path.rsplit("/", 1)[1]
            try:  # looked for in the root, not through a link out of it
                there = os.path.lexists(under_root(root, f"/etc/systemd/system/{name}"))
            except OutputError:
                there = False
            if there:
                _say(f"note: /etc/systemd/system/{name} overrides the installed "
                     f"{step.path}: remove it to use the installed one")


def _reload(root: Path, steps: list[Step], dry_run: bool) -> None:
    """Reload systemd when a unit changed on this system; say why not otherwise."""
    import os

    changed = [s for s in steps if s.action in ("write", "replace", "remove")
               and "/lib/systemd/system/" in s.path]
    if not changed:
        return
    if root.resolve() != root.resolve().parent:  # not "/": another system's tree
        _say(f"not reloading systemd: --root {root} is not this system (the target's systemd "
             "reads the units when it starts)")
        return
    if not os.path.isdir("/run/systemd/system"):  # sd_booted(3)
        _say("not reloading systemd: it is not running here")
        return
    if dry_run:
        _say("would reload systemd")
        return
    import asyncio

    from slicectl.host.systemd.systemd import Systemd

    async def reload() -> None:
        async with await Systemd.connect() as sd:
            await sd.reload()

    _say("reloading systemd")
    asyncio.run(reload())


def _print(steps: list[Step], dry_run: bool) -> None:
    for step in steps:
        if step.action != "unchanged":
            print(step.line(dry_run))
    sys.stdout.flush()  # before the notes on stderr
    kept = [s for s in steps if s.action == "keep"]
    if kept:
        _say(f"warning: {len(kept)} file(s) changed since slicectl installed them were "
             "kept as they are: compare them with the shipped ones")


def cmd_install(args: Namespace) -> int:
    """`slicectl install [--prefix DIR] [--root DIR] [--slicectl PATH] [--dry-run]`."""
    from slicectl.apply.install import install

    root, prefix = _root(args), _prefix(args)
    executable = command(args, root)
    steps = install(root, entries(prefix, executable), f"{prefix}/{MANIFEST}", prefix=prefix,
                    dry_run=args.dry_run)
    _print(steps, args.dry_run)
    _notes(root, prefix, steps)
    _reload(root, steps, args.dry_run)
    if not args.dry_run:
        unchanged = sum(s.action == "unchanged" for s in steps)
        where = f" --prefix {prefix}" + (f" --root {root}" if args.root else "")
        print(f"Installed under {prefix} for {' '.join(executable)}"
              + (f" ({unchanged} file(s) already up to date)" if unchanged else "")
              + f"; uninstall with: slicectl uninstall{where}")
        units = [s.path.rsplit("/", 1)[1] for s in steps if "/lib/systemd/system/" in s.path]
        print("Next: systemd-sysusers, then systemctl enable --now the units you want: "
              + ", ".join(units))
    return EXIT_OK


def cmd_uninstall(args: Namespace) -> int:
    """`slicectl uninstall [--prefix DIR] [--root DIR] [--dry-run]`."""
    from slicectl.apply.install import uninstall

    root, prefix = _root(args), _prefix(args)
    steps = uninstall(root, f"{prefix}/{MANIFEST}", prefix=prefix, dry_run=args.dry_run)
    _print(steps, args.dry_run)
    _reload(root, steps, args.dry_run)
    if (root / "etc/systemd/system-generators/slicectl-generator").is_symlink():
        _say("note: generator mode stays on (its link points into the virtual environment); "
             "slicectl generator disable turns it off")
    return EXIT_OK
