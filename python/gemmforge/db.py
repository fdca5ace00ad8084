"""The tuning database (SQLite; shared with the CLI and C++): inspect and clear it."""
from __future__ import annotations

import json
import os

from . import _gemmforge as _C


def path(db: str | os.PathLike | None = None) -> str:
    """The DB a call with this argument uses: the given file, else $GEMMFORGE_HOME/tuning.db."""
    return os.fspath(db) if db else _C.default_db_path()


def decisions(db: str | os.PathLike | None = None) -> list[dict]:
    """Every stored decision of every device: problem, backend, candidate, us, rate, search, device."""
    return json.loads(_C.db_dump(path(db)))


def clear(db: str | os.PathLike | None = None) -> int:
    """Deletes every decision; returns how many there were."""
    return _C.db_clear(path(db))
