"""A run's facts (`run:<id>` in `meta`) as this store object last wrote them, so the next write of them
needs no read (issue #34).

A writer updates a run's facts with its first checkpoint, its run.started and how it ended. Read
first inside the write's transaction, that was BEGIN, a SELECT and COMMIT around the write, four round
trips more on PostgreSQL at a run's start and at its end. Now the text this object committed is kept,
the facts are written once at the end of the write (`FactsWritten.write`), and the write says which
text it replaces: a compare-and-set. So a read is needed only for a run this object has not written
yet (and that read may go before the transaction: the write checks it still holds), and a write made
with a text another writer replaced meanwhile (another process took the run over) changes nothing:
the run's facts stay the new writer's, where the read-modify-write before put this writer's back.
"""

from __future__ import annotations

from .sql_plan import Query

KEPT = 4096  # runs whose facts a store object keeps (the oldest let go: read again when next written)


class FactsWritten:
    """The facts text this object committed of each run it wrote lately, by `meta` key."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self._texts.get(key)

    def kept(self, written: dict[str, tuple[str | None, str]]) -> None:
        """A write committed: `written` is key -> (the text it replaced, its own)."""
        for key, (_, text) in written.items():
            self._texts.pop(key, None)
            self._texts[key] = text
        while len(self._texts) > KEPT:
            del self._texts[next(iter(self._texts))]

    def forget(self, key: str) -> None:
        """Facts written another way (`release`, `take_over`): read again before the next write."""
        self._texts.pop(key, None)

    @staticmethod
    def write(key: str, seen: str | None, text: str) -> Query:
        """The statement making `key`'s facts `text` if they are still `seen` (None: no row yet)."""
        if seen is None:
            return Query("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, text))
        return Query("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value "
                     "WHERE meta.value = ?", (key, text, seen))


__all__ = ["FactsWritten"]
