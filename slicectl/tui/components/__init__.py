"""Widgets of the slicectl TUI."""
