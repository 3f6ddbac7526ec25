"""OR-Tools' `cp_model`, imported without importing pandas.

`ortools.sat.python.cp_model` (9.15) imports pandas at module level for its `*_series` methods and for type
aliases (`Union[pd.Index, pd.Series]`); the planner never calls them, and pandas is about 0.3-0.5 s of a cold
CLI solve. While cp_model is imported, `pandas` resolves to a stand-in whose `Index` and `Series` act as the
real classes do for cp_model: `isinstance` asks the real pandas (an object can be a pandas Series only once
pandas is loaded), calling one imports pandas and builds the real object, and any other name is taken from
the real pandas. The stand-in leaves `sys.modules` as soon as cp_model is in, so `import pandas` anywhere
else gets pandas itself. A cp_model that needs more of pandas at import is imported the ordinary way.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any


class _StandIn(types.ModuleType):
    """`pandas` while cp_model is imported; afterwards a forwarder to the real module."""

    def __getattr__(self, name: str) -> Any:
        # cp_model reading more of pandas at import is not ours to fake (import_without_pandas falls back); a
        # dunder probe (__file__, __path__: import machinery, tools) is no reason to load pandas
        loaded = sys.modules.get("pandas")
        if loaded is self or (loaded is None and name.startswith("__") and name.endswith("__")):
            raise AttributeError(f"module 'pandas' (deferred by solver.ortools_cp) has no attribute {name!r}")
        return getattr(importlib.import_module("pandas"), name)

    def __repr__(self) -> str:
        return "<module 'pandas' (deferred by solver.ortools_cp)>"


class _PandasClass(type):
    """pandas.Index / pandas.Series as cp_model uses them, answered by the real class."""

    def __instancecheck__(cls, obj: Any) -> bool:
        pd = sys.modules.get("pandas")
        return pd is not None and not isinstance(pd, _StandIn) and isinstance(obj, getattr(pd, cls.__name__))

    def __subclasscheck__(cls, sub: type) -> bool:
        pd = sys.modules.get("pandas")
        return pd is not None and not isinstance(pd, _StandIn) and issubclass(sub, getattr(pd, cls.__name__))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if isinstance(sys.modules.get("pandas"), _StandIn):  # called while cp_model is imported: fall back
            raise AttributeError(f"pandas.{cls.__name__} called while cp_model is imported")
        return getattr(importlib.import_module("pandas"), cls.__name__)(*args, **kwargs)


def import_without_pandas(module: str) -> types.ModuleType:
    """`module` imported with `pandas` deferred as above (ordinarily when pandas is already loaded, or when the
    module reads more of pandas at import than Index and Series)."""
    if module in sys.modules or "pandas" in sys.modules:
        return importlib.import_module(module)
    # what cp_model imports besides pandas is imported first, so the stand-in is seen by cp_model alone
    import numpy  # noqa: F401
    from ortools.sat.python import cp_model_helper  # noqa: F401
    from ortools.util.python import sorted_interval_list  # noqa: F401

    stand_in = _StandIn("pandas", "stands for pandas while ortools' cp_model is imported (solver.ortools_cp)")
    stand_in.Index = _PandasClass("Index", (), {"__module__": "pandas"})
    stand_in.Series = _PandasClass("Series", (), {"__module__": "pandas"})
    sys.modules["pandas"] = stand_in
    try:
        return importlib.import_module(module)
    except AttributeError:
        sys.modules.pop(module, None)
    finally:
        if sys.modules.get("pandas") is stand_in:
            del sys.modules["pandas"]
    return importlib.import_module(module)


cp_model = import_without_pandas("ortools.sat.python.cp_model")
