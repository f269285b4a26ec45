"""slicectl.host.cgroup.inotify: which watched files were written since the last look."""

from __future__ import annotations

from pathlib import Path

from slicectl.host.cgroup.inotify import Modified


def test_says_which_files_were_written_since_the_last_look(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("populated 0\n")
    b.write_text("populated 0\n")
    watch = Modified()
    try:
        wa, wb = watch.add(str(a)), watch.add(str(b))
        assert wa >= 0 and wb >= 0 and wa != wb
        assert watch.changed() == set()
        a.write_text("populated 1\n")  # in place, as the kernel rewrites cgroup.events
        a.write_text("populated 0\n")
        assert watch.changed() == {wa}
        assert watch.changed() == set()  # each write told once
        watch.remove(wb)
        b.write_text("populated 1\n")
        assert watch.changed() == set()
        assert watch.add(str(tmp_path / "gone")) == -1
    finally:
        watch.close()
    assert watch.changed() == set() and watch.add(str(a)) == -1  # closed: harmless
