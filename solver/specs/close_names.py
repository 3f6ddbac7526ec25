"""The names an unknown catalog name may have meant, for the one-line error: the entries it is the start of (a
family name such as "h200" or "qwen3.5" names each of them), then difflib's near spellings."""
from __future__ import annotations

import difflib
from typing import Mapping


def close_names(key: str, names: Mapping[str, str], limit: int, cutoff: float) -> list[str]:
    """Up to `limit` names of `names` (name -> the entry it resolves to) close to the normalised `key`, one per
    entry: the names `key` starts (the shortest of each entry's), then difflib's matches at `cutoff`, best first."""
    out: dict[str, str] = {}  # entry -> the name shown for it
    for name in sorted((n for n in names if key and n.startswith(key)), key=lambda n: (len(n), n)):
        out.setdefault(names[name], name)
    prefix = sorted(out.values())
    for name in difflib.get_close_matches(key, list(names), n=len(names), cutoff=cutoff):
        if len(out) >= limit + len(prefix):
            break
        out.setdefault(names[name], name)
    return (prefix + [n for n in out.values() if n not in prefix])[:limit]
