"""`slicectl completion bash|zsh|fish`: shell completion generated from the parser by shtab.

shtab writes a static script, so a TAB costs the shell nothing and `slicectl` is started only
to list profile names; argcomplete would start Python and build the parser on every TAB
(BENCHMARKS.md, start-up). What each argument completes follows from its metavar: files for
FILE, CSV and TENANTS, directories for DIR and ROOT, and for `--profile P` the profiles of the
tenants file given on the command line so far, which the scripts ask
`slicectl completion SHELL --profiles WORDS…` for.
"""

from __future__ import annotations

from slicectl.cli.common import EXIT_OK

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from collections.abc import Sequence

FILES = ("FILE", "CSV", "TENANTS")
DIRECTORIES = ("DIR", "ROOT")
PROFILE = "P"

# The profile completer of each shell: it passes the words before the cursor to slicectl.
PROFILES = {
    "bash": """\
_slicectl_profiles() {
  compgen -W "$("${COMP_WORDS[0]}" completion bash --profiles \\
                "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$1"
}
""",
    "zsh": """\
_slicectl_profiles() {
  local -a profiles
  profiles=(${(f)"$(slicectl completion zsh --profiles ${words[1,CURRENT-1]} 2>/dev/null)"})
  compadd -a profiles
}
""",
    "fish": """\
function _slicectl_profiles
  set -l words (commandline -opc)
  $words[1] completion fish --profiles $words[2..-1] 2>/dev/null
end
""",
}
PROFILE_CALL = {"bash": "_slicectl_profiles", "zsh": "_slicectl_profiles",
                "fish": "(_slicectl_profiles)"}


def _actions(parser: ArgumentParser) -> list[object]:
    """Every action of the parser and of its sub-parsers."""
    import argparse

    found: list[object] = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _actions(sub)
    return found


def script(shell: str) -> str:
    """The completion script for `shell` (bash, zsh or fish)."""
    import shtab

    from slicectl.cli.parser import build_parser

    parser = build_parser()
    kinds = {**dict.fromkeys(FILES, shtab.FILE), **dict.fromkeys(DIRECTORIES, shtab.DIRECTORY),
             PROFILE: PROFILE_CALL}
    for action in _actions(parser):
        kind = kinds.get(str(getattr(action, "metavar", None)))
        if kind is not None:
            vars(action)["complete"] = kind  # shtab reads `action.complete`
    text: str = shtab.complete(parser, shell, preamble=PROFILES[shell])
    return text


def tenants_in(words: Sequence[str]) -> str | None:
    """The TENANTS argument of a (partial) command line: the first word after the verb that is
    neither an option nor an option's value."""
    from slicectl.cli.parser import VERBS, verb_parser

    at = next((i for i, w in enumerate(words) if w in VERBS), None)
    if at is None:
        return None
    takes_value = {flag for action in verb_parser(words[at])._actions if action.nargs != 0
                   for flag in action.option_strings}
    skip = False
    for word in words[at + 1:]:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in takes_value
        else:
            return word
    return None


def profiles(words: Sequence[str]) -> list[str]:
    """The profile names of the tenants file in `words`; none when it cannot be read."""
    from slicectl.core.errors import SlicectlError
    from slicectl.host.planning import load_tenants

    path = tenants_in(words)
    if path is None:
        return []
    try:
        return list(load_tenants(path, check_schedule=False).profiles)
    except SlicectlError:
        return []


def cmd_completion(args: Namespace) -> int:
    """`slicectl completion SHELL`: print the script (or, for the scripts, profile names)."""
    if args.profiles is not None:
        for name in profiles(args.profiles):
            print(name)
        return EXIT_OK
    print(script(args.shell), end="")
    return EXIT_OK
