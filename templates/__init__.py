"""Unit-file templates shipped with slicectl (package data; override with --templates DIR)."""
