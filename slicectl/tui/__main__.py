"""`python -m slicectl.tui ARGS`: `slicectl tui ARGS`, its parser and its checks."""

import sys

from slicectl.cli import main

if __name__ == "__main__":
    sys.exit(main(["tui", *sys.argv[1:]]))
