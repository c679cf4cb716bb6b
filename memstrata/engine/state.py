"""One tree's shared state: root, settings, catalog, watcher, lock, clock, model and vector index."""
from __future__ import annotations

import gc
import weakref

from memstrata import clock
from memstrata.storage import tree
from memstrata.storage.catalog import Catalog
from memstrata.storage.config import Settings, load_settings
from memstrata.storage.lock import TreeLock


class TreeState:
    """Everything the parts of a `Memory` share, created once and handed to each part.

    Heavy things (catalog, watcher, model, LanceDB table) are opened on first use, so
    building a `Memory` stays cheap for `mem --help` and `mem read`.
    """

    def __init__(self, root=None, *, embedder=None):
        self.root = tree.resolve_root(root)
        self._embedder = embedder
        self._model_error = None
        self._settings: Settings | None = None
        self._catalog: Catalog | None = None
        self._watcher = None
        self._watcher_opened = False
        self._vector_index = None
        # (watcher generation, model name) at which the vector index was last in step with the tree
        self.index_in_step: tuple | None = None
        # (watcher generation, settings) at which sync last wrote every INDEX.md from the tree
        self.indexes_in_step: tuple | None = None
        self._journal = None  # storage.journal_tail.JournalTail, made on first use

    # -- settings ----------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.root)
        return self._settings

    def use_settings(self, settings: Settings | None) -> None:
        """Adopt settings just written (or None: read config.md again on next use)."""
        self._settings = settings

    @property
    def vault(self) -> bool:
        """Whether the tree is an adopted vault (its top-level notes are entries; storage/layout.py)."""
        from memstrata.storage import layout

        return layout.is_adopted(self.root)

    # -- catalog and watcher -----------------------------------------------------------
    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            tree.require_initialised(self.root)
            self._catalog = Catalog(self.root, watcher=self.watcher())
        return self._catalog

    def replace_catalog(self, catalog: Catalog | None) -> None:
        """Swap in a rebuilt catalog (the doctor), closing the old one."""
        if self._catalog is not None and self._catalog is not catalog:
            self._catalog.close()
        self._catalog = catalog

    def watcher(self):
        """The inotify watcher of the tree (None where inotify cannot run)."""
        if not self._watcher_opened:
            from memstrata.storage.watcher import TreeWatcher

            self._watcher_opened = True
            watcher = TreeWatcher(self.root)
            if watcher.out_of_instances:  # trees this process let go hold theirs until collected (their finalizers close them)
                gc.collect()
                watcher = TreeWatcher(self.root)
            if watcher.ok:
                weakref.finalize(self, watcher.close)
                self._watcher = watcher
            else:
                watcher.close()
        return self._watcher

    # -- the access journal -----------------------------------------------------------
    def accesses(self) -> dict:
        """Accesses the journal holds that are not folded into the entries yet, per id (read as it grows)."""
        return self._journal_tail().accesses(self.now())

    def journal_days(self, now) -> frozenset:
        """The UTC days of the journal's reads not yet folded, none after `now`'s (read as it grows)."""
        return self._journal_tail().days(now)

    def _journal_tail(self):
        if self._journal is None:
            from memstrata.storage.journal_tail import JournalTail

            self._journal = JournalTail(self.root)
        return self._journal

    # -- lock and clock ----------------------------------------------------------------
    def lock(self, timeout: float | None = None) -> TreeLock:
        """The tree's write lock; NotFound for a folder that is not a tree (nothing is written there)."""
        tree.require_initialised(self.root)
        return TreeLock(self.root) if timeout is None else TreeLock(self.root, timeout=timeout)

    def now(self):
        return clock.now()

    # -- the model ---------------------------------------------------------------------
    @property
    def embedder(self):
        """The embedding model (loaded on first use; ModelUnavailable when it cannot load)."""
        if self._embedder is None:
            from memstrata.models.embedder import get_embedder

            self._embedder = get_embedder(self.settings.embedding_model)
        return self._embedder

    @property
    def token_counter(self):
        """The model's token counts without the model (its tokenizer alone: models/tokens.py)."""
        from memstrata.models.tokens import counter_for

        return counter_for(self.settings.embedding_model)

    @property
    def loaded_embedder(self):
        """The model if it is loaded already, else None (never loads it)."""
        return self._embedder

    def model_identity(self) -> tuple[str, int]:
        """(name, dimension) of the model: the loaded one's, else its cached export's (no session
        built: 0.3 s a cold `mem sync` with nothing to embed need not spend), else the loaded model's."""
        from memstrata.models.embedder import identity

        known = identity(self.settings.embedding_model) if self._embedder is None else None
        if known is None:
            embedder = self.model()
            known = (embedder.name, embedder.dim)
        return known

    def model(self):
        """The embedder; a model that failed to load is not tried again by this state."""
        if self._model_error is not None:
            raise self._model_error
        from memstrata.models.embedder import ModelUnavailable

        try:
            return self.embedder
        except ModelUnavailable as exc:
            self._model_error = exc
            raise

    # -- the vector index --------------------------------------------------------------
    def vector_index(self):
        """The LanceDB index of this tree (re-opened when the settings object changed)."""
        from memstrata.retrieval.table import VectorIndex

        current = self._vector_index
        if current is None:
            tree.require_initialised(self.root)  # no .vectors/ in a folder that is not a tree
        if current is None or current.settings is not self.settings:
            current = VectorIndex(self.root, self.settings)
            self._vector_index = current
        return current

    def close(self) -> None:
        """Release the watcher, the catalog connection and the open table with its frame (a warm
        service closing an idle tree); anything used afterwards opens again on demand."""
        if self._watcher is not None:
            self._watcher.close()
        self._watcher, self._watcher_opened = None, False
        self.indexes_in_step = None
        if self._catalog is not None:
            self._catalog.close()
        self._catalog = None
        self.forget_vector_index()

    def forget_vector_index(self) -> None:
        """Drop the open index (its files were removed: the next use opens them anew)."""
        self._vector_index = None
        self.index_in_step = None
