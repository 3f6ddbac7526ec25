"""A launch (emit.emit_launch) as shell text a user pastes: files as heredocs, one command per node."""
from __future__ import annotations

import re
import shlex
from typing import Any

_PLACEHOLDER = re.compile(r"^[A-Za-z0-9_./:,=-]*(\$\{[A-Z0-9_]+\}[A-Za-z0-9_./:,=-]*)+$")


def _quote(token: str) -> str:
    # placeholders stay unquoted so the shell expands them; everything else is quoted as needed
    return token if _PLACEHOLDER.match(token) else shlex.quote(token)


def render_shell(launch: dict[str, Any], title: str = "") -> str:
    out = [f"# {title}" if title else f"# {launch['engine']}"]
    if launch.get("missing"):  # what the facts do not give is said, never invented
        out.append(f"# missing: {launch['missing']}")
    out += [f"# note: {n}" for n in launch.get("notes", ())]
    for name, text in launch["files"].items():
        out.append(f"cat > {shlex.quote(name)} <<'SHARDPLAN_EOF'\n{text.rstrip()}\nSHARDPLAN_EOF")
    many = len(launch["nodes"]) > 1
    placed = {p["node_rank"]: p for p in launch.get("placement", ())}
    if placed and not many:  # one command for every node (an MPI world): where its ranks go, up front
        out.append("# placement: " + ", ".join(_where(p) for p in placed.values()))
    for node in launch["nodes"]:
        if not node["argv"] and not node["env"]:
            continue
        if many:
            rank = node["node_rank"]
            out.append(f"# node {rank}" + (" (head)" if rank == 0 else "")
                       + (f": {_where(placed[rank], named=False)}" if rank in placed else ""))
        prefix = " ".join(f"{k}={_quote(v)}" for k, v in node["env"].items())
        out.append((prefix + " " if prefix else "") + " ".join(_quote(t) for t in node["argv"]))
    return "\n".join(out) + "\n"


def _where(p: dict[str, Any], named: bool = True) -> str:
    first, last = p["ranks"]
    ranks = f"rank {first} (1 device)" if first == last else f"ranks {first}-{last} ({p['devices']} devices)"
    return (f"node {p['node_rank']} " if named else "") + ranks
