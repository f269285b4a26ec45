"""Screens of the slicectl TUI."""
