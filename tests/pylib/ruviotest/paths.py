"""Where things are: the repository and the binary under test."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def ruvio_bin():
    """RUVIO_BIN when set (and not empty), else <repo>/build/ruvio."""
    return os.environ.get("RUVIO_BIN") or str(REPO / "build" / "ruvio")
