"""systemd units shipped with slicectl (package data; `slicectl install` places them)."""
