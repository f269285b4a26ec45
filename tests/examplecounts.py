"""Hypothesis example counts, by settings profile.

Each property test names its full count (`examples(200)`). The "thorough" profile runs the
full counts: `tests/run` (the README's test command, and CI) selects it with hypothesis' own
`--hypothesis-profile=thorough`. The default profile, which a bare `python -m pytest` uses,
runs a quarter of each count (at least 10), so the everyday suite stays quick; the
derandomized tests then run the first quarter of the same fixed examples.
"""

from __future__ import annotations

from hypothesis import settings

# max_examples of the two profiles, registered in conftest.py; a test's count scales with it.
THOROUGH = 100
QUICK = 25
# The fuzz tier on demand: twenty times the full counts, examples drawn anew at every run
# (`python -m pytest tests/test_fuzz.py --hypothesis-profile=fuzz`; docs/development.md).
FUZZ = 2000


def deterministic() -> bool:
    """Whether the examples are the same at every run: always, but in the fuzz profile."""
    return settings().max_examples < FUZZ


def examples(full: int) -> int:
    """`full` examples under the "thorough" profile; a quarter (at least 10) by default."""
    return max(min(full, 10), full * settings().max_examples // THOROUGH)
