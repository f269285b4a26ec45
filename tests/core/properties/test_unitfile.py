"""systemd's unit-file syntax (slicectl.core.properties.unitfile), on the cases of
systemd.syntax(7): whitespace around `=`, sections, comments, continuations and resets."""

from __future__ import annotations

import pytest

from slicectl.core.properties.live_values import override_source
from slicectl.core.properties.unitfile import Assignment, assigned, assignments


@pytest.mark.parametrize(("text", "value"), [
    ("[Slice]\nCPUWeight=5\n", "5"),
    ("[Slice]\nCPUWeight = 5\n", "5"),  # spaces around `=`: valid for systemd
    ("[Slice]\n  CPUWeight\t=\t5  \n", "5"),
    ("[Slice]\nCPUWeight=5\nCPUWeight=7\n", "7"),  # the last one wins
    ("[Slice]\nCPUWeight=5\nCPUWeight=\n", ""),  # an empty assignment resets
    ("[Slice]\n# CPUWeight=5\n; CPUWeight=6\n", None),  # comments
    ("[Unit]\nCPUWeight=5\n", None),  # not read from [Unit]
    ("CPUWeight=5\n[Slice]\n", None),  # outside any section
    ("[Slice]\nCPUWeightX=5\nXCPUWeight=6\n", None),
    ("[Slice]\ncpuweight=5\n", None),  # keys are case-sensitive
    ("[Service]\nCPUWeight=5\n[Install]\nCPUWeight=9\n", "5"),
    ("[Slice]\nAllowedCPUs=0-3 \\\n  8-11\n", "0-3  8-11"),  # joined: `\\` becomes a space
    ("[Slice]\nAllowedCPUs=0-3 \\\n# a comment inside\n  8-11\n", "0-3  8-11"),
    ("[Slice]\nAllowedCPUs=0-3\\\\\nMemoryMax=4\n", "0-3\\\\"),  # `\\\\`: no continuation
    ("[Slice]\nCPUWeight=\\\n", ""),  # a continuation at the end of the file
])
def test_the_value_systemd_reads(text: str, value: str | None) -> None:
    assert assigned(text, "CPUWeight" if "CPUWeight" in text or "cpuweight" in text
                    else "AllowedCPUs") == value


def test_assignments_know_their_section_and_line() -> None:
    text = "[Unit]\nDescription=x\n\n[Service]\nExecStart=/bin/a \\\n  --b\nCPUQuota = 50%\n"
    assert list(assignments(text)) == [
        Assignment("Unit", "Description", "x", 2),
        Assignment("Service", "ExecStart", "/bin/a  --b", 5),
        Assignment("Service", "CPUQuota", "50%", 7),
    ]


def test_a_drop_in_with_spaces_is_named_as_the_override() -> None:
    """`CPUWeight = 5` was not seen: apply named the wrong file as overriding the value."""
    ours = "/etc/systemd/system/web.service.d/50-slicectl.conf"
    later = "/etc/systemd/system/web.service.d/60-local.conf"
    texts = [(ours, "[Service]\nCPUWeight=400\n"), (later, "[Service]\nCPUWeight = 5\n")]
    assert override_source("CPUWeight", ours, texts) == \
        f"drop-in {later} sorts after slicectl's and sets CPUWeight"
