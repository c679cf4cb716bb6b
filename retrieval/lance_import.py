"""Importing LanceDB without the REST namespace client's API classes it never uses here (half its import)."""
from __future__ import annotations

import importlib.util
import os
import sys
import threading

# `import lancedb` imports lance_namespace, whose client package imports every generated REST API
# class at once (pydantic-validated methods: ~0.9 of the 1.8 CPU s the import costs, measured
# 2026-12-02 with lancedb 0.40 / lance_namespace 0.13). LanceDB itself only needs the package's
# `models`. The package is put in sys.modules unexecuted, with its real path, so its submodules
# import as usual; the first use of any name the package itself defines (an API class: a REST
# namespace, which memstrata never opens) runs its real __init__ then, so nothing changes but when
# that cost is paid.
_CLIENT = "lance_namespace_urllib3_client"
_LOCK = threading.Lock()  # the adopt's preload thread and the main thread may both come here


def _lazy_package(name: str) -> None:
    """Put package `name` in sys.modules without running its __init__ until a name it defines is asked for."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)

    def __getattr__(attr: str):  # PEP 562: called only for names the module does not have yet
        module.__dict__.pop("__getattr__", None)
        spec.loader.exec_module(module)
        return getattr(module, attr)

    module.__getattr__ = __getattr__
    sys.modules[name] = module


def import_lancedb():
    """`import lancedb`, its namespace client's API classes left until something uses them."""
    # Lance's own log at errors only, unless said otherwise: each delta of the vector index
    # (retrieval/ann.py) warned once per partition its few rows leave empty, 256 lines in service.log
    os.environ.setdefault("LANCE_LOG", "error")
    # index statistics (ann.py asks for unindexed rows) without the vector index's centroids, never
    # read here: Lance 14 otherwise warns that it will stop including them
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    if "lancedb" not in sys.modules:
        with _LOCK:
            try:
                _lazy_package(_CLIENT)
            except Exception:  # noqa: BLE001 - any surprise: the plain import below does the work
                sys.modules.pop(_CLIENT, None)
    import lancedb

    return lancedb


def preload() -> None:
    """Import LanceDB and pyarrow now (in a background thread while files are read and the model
    embeds: ~2 s of a fresh process's start otherwise spent waiting at the first table write)."""
    import pyarrow  # noqa: F401

    import_lancedb()
