"""Where things are, for tests in any folder of tests/: the project's root and tests/ itself
(fixtures, golden files and case files live under tests/, whichever folder a test is in)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
