"""The tuning database (SQLite; shared with the CLI and C++): inspect, export, import and clear it."""
from __future__ import annotations

import json
import os

from . import _gemmforge as _C


def _where(db: str | os.PathLike | None) -> str:
    # What `--db` takes: a file or a redis:// URL; "" leaves the choice to GEMMFORGE_DB, else the default.
    return os.fspath(db) if db else ""


def path(db: str | os.PathLike | None = None) -> str:
    """The local DB file a call with this argument uses: the given file, else GEMMFORGE_DB's (a file,
    or a redis:// URL, whose local DB is the default), else $GEMMFORGE_HOME/tuning.db."""
    return _C.db_local_path(_where(db))


def decisions(db: str | os.PathLike | None = None) -> list[dict]:
    """Every stored decision of every device: problem, backend, candidate, us, rate, search, device."""
    return json.loads(_C.db_dump(_where(db)))


def clear(db: str | os.PathLike | None = None) -> int:
    """Deletes every decision; returns how many there were."""
    return _C.db_clear(_where(db))


def export(db: str | os.PathLike | None = None) -> dict:
    """Every decision in the versioned export format (what `gemmforge db export` writes)."""
    return json.loads(_C.db_export(_where(db)))


def import_(exported: dict | str | os.PathLike, db: str | os.PathLike | None = None) -> int:
    """Adds an export's decisions (a dict, or the path of an exported file); where the DB has a
    decision for the same problem and device, the faster stays. With a redis:// store, it is offered
    them too. Returns how many the local DB stored."""
    if not isinstance(exported, dict):
        with open(exported) as f:
            exported = json.load(f)
    return _C.db_import(_where(db), json.dumps(exported))
