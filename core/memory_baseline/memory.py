"""`open_memory`: the library in one handle — an index you can fill, search and ask.

Everything a program needs from this package goes through `Memory`: it owns the
database connection and the models it loaded, so a caller never imports the
stages, builds a `Retriever` or remembers to close its second connection. The
stages stay available to the lab (which measures them one by one); a user's
program does not need them.

    from memory_baseline import open_memory

    with open_memory("demo") as memory:
        memory.refresh("fixtures/history")
        print(memory.ask("What event store should new services use?").text)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config, validate_index_name

if TYPE_CHECKING:  # the heavy modules load on first use, so `import memory_baseline` stays cheap
    import psycopg

    from .baseline import AskResult, Baseline, Search
    from .health import HealthReport
    from .refresh import SyncReport


def _config(index: str | None, config: Config | str | Path | None, overrides: dict[str, Any]) -> Config:
    loaded = config if isinstance(config, Config) else Config.load(config)
    if index is not None:
        loaded = loaded.with_overrides(index=validate_index_name(index))
    return loaded.with_overrides(**overrides) if overrides else loaded


class Memory:
    """One index with one configuration: `ingest`, `refresh`, `search`, `ask`, `health`.

    Made by `open_memory`; use it as a context manager (or call `close`). Models
    load on the first call that needs them and stay loaded for the next.
    """

    def __init__(self, config: Config, database_url: str | None = None) -> None:
        self.config = config
        self._database_url = database_url
        self._conn: psycopg.Connection | None = None
        self._baseline: Baseline | None = None

    # -- lifecycle -----------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections and worker thread this handle opened (idempotent)."""
        if self._baseline is not None and self._baseline._retriever is not None:
            self._baseline._retriever.close()
        self._baseline = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def connection(self) -> psycopg.Connection:
        """The open connection (reopened if the server went away since the last call)."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            from .server import connect

            self.close()
            self._conn = connect(self._database_url)
        return self._conn

    def _pipeline(self) -> Baseline:
        if self._baseline is None or self._baseline.conn is not self.connection:
            from .baseline import Baseline

            self._baseline = Baseline(self.connection, self.config)
        return self._baseline

    # -- writing -------------------------------------------------------------

    def ingest(self, path: str | Path, *, git: bool = False,
               on_progress: Callable[[str], None] | None = None) -> SyncReport:
        """Add and update the sources under `path` (with `git`, every committed version too)."""
        return self._sync(path, remove_missing=False, git=git, prune=False, on_progress=on_progress)

    def refresh(self, path: str | Path, *, git: bool = False, prune: bool = False,
                on_progress: Callable[[str], None] | None = None) -> SyncReport:
        """Bring the index in line with `path`: also remove what is gone (guarded; see README)."""
        return self._sync(path, remove_missing=True, git=git, prune=prune, on_progress=on_progress)

    def _sync(self, path: str | Path, *, remove_missing: bool, git: bool, prune: bool,
              on_progress: Callable[[str], None] | None) -> SyncReport:
        from .refresh import sync

        root = Path(path)
        if not root.is_dir():
            raise ValueError(f"{path} is not a directory")
        report = sync(self.connection, self.config, str(root), remove_missing=remove_missing, git=git,
                      prune=prune, on_progress=on_progress)
        self._baseline = None  # the next search sees the new representation and rows
        return report

    # -- reading -------------------------------------------------------------

    def search(self, query: str, *, as_of: str | None = None) -> Search:
        """Every retrieval stage and the admitted passages (`.passages`), without reading."""
        return self._pipeline().search(query, as_of)

    def ask(self, query: str, *, as_of: str | None = None) -> AskResult:
        """The answer (`.text`, `.citations`) with every trace behind it."""
        return self._pipeline().ask(query, as_of)

    def health(self) -> HealthReport:
        """The index's integrity checks (`.ok`, `.checks`)."""
        from .health import check_health
        from .representation import expected_representation_id

        return check_health(self.connection, self.config.index, expected_representation_id(self.config),
                            expect_hnsw=self.config.hnsw_build)


def open_memory(index: str | None = None, *, config: Config | str | Path | None = None,
                database_url: str | None = None, **overrides: Any) -> Memory:
    """A handle on index `index` (default: the config's, "default").

    `config` is a `Config` or a TOML file; keyword `overrides` replace sections of
    it (`reader={"name": "extractive"}`). The store is `database_url`, else
    `DATABASE_URL`, else the embedded PostgreSQL (started on first use).
    """
    return Memory(_config(index, config, overrides), database_url)
