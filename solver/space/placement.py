"""Where a deployment's ranks run: the nodes its engine's launch puts them on.

A device file gives full nodes (ranks_per_node). Ranks that do not fill whole nodes are placed in one of two
ways, by the engine profile's `equal_ranks_per_node`:

- one launcher for all ranks (an MPI world; the generic profile): nodes fill in rank order, the last one
  part-filled (12 ranks on 8-GPU nodes: 8 + 4);
- a launcher that runs the same number of ranks on every node (vLLM's --nnodes: world_size / nnodes ranks a
  node; SGLang's --nnodes likewise): the ranks spread evenly over the fewest nodes that hold them, when they
  divide (12 on 8-GPU nodes: 2 nodes x 6; 24: 3 x 8). Eleven do not (2 nodes would take 5.5 each): no placement,
  and the profile's rule refuses the size.

The second is planned as the device with `ranks_per_node` set to that share (as_launched): the TP domain, the
intra-node tier, the groups that must not straddle a node, the rules' `ranks_per_node` and the launch's per-node
counts all read it, so the planner places and prices the deployment as the engine runs it.
"""
from __future__ import annotations

from solver.memo import IdentityMemo
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.topology import check_reach

_PLACED = IdentityMemo(256)  # one placed device per (device, share): the estimate's caches key on identity


def device_of(hw: Hardware) -> Hardware:
    """The device as its file gives it (full nodes), whether or not `hw` was placed."""
    return hw._placed_from or hw


def equal_share(ranks: int, ranks_per_node: int) -> int | None:
    """Ranks a node runs when `ranks` spread evenly over the fewest nodes that hold them (12 on 8: 6); None
    when that many nodes do not divide them (11 on 8: 2 nodes, 5.5 each)."""
    nodes = -(-ranks // ranks_per_node)
    return ranks // nodes if ranks % nodes == 0 else None


def as_launched(hw: Hardware, fw: FrameworkProfile, ranks: int) -> Hardware:
    """The device as `fw`'s launch uses it for `ranks` ranks: its own file (whole nodes, or an engine that fills
    nodes in rank order), or, for an engine whose launch runs equal ranks on every node and ranks that leave a
    node part-filled, the same device with `share` ranks a node (the tiers' spans and the scale-up domain in
    those nodes follow). Where no equal share exists the device is returned as is and the profile's rule (the
    launch's own check) refuses the size. More ranks than the outermost tier connects: InputError
    (topology.check_reach). Idempotent: a placed device is placed again from its file."""
    dev = device_of(hw)
    check_reach(dev, ranks)  # a deployment its fabric does not connect is not placed at all
    rpn = dev.ranks_per_node
    if not fw.equal_ranks_per_node or ranks <= rpn or ranks % rpn == 0:
        return dev
    share = equal_share(ranks, rpn)
    return dev if share is None else _PLACED.get((dev,), share, lambda: _with_share(dev, share))


def _with_share(dev: Hardware, share: int) -> Hardware:
    nodes_in_domain = dev.scale_up_domain // dev.ranks_per_node
    tiers = dict(dev.tiers)
    tiers["intra_node"] = tiers["intra_node"].model_copy(update={"span_ranks": share})
    if "scale_up" in tiers:
        tiers["scale_up"] = tiers["scale_up"].model_copy(update={"span_ranks": nodes_in_domain * share})
    placed = dev.model_copy(update={"ranks_per_node": share, "scale_up_domain": nodes_in_domain * share,
                                    "tiers": tiers})
    placed._placed_from = dev
    return placed


def equal_split_sizes(ranks: int, ranks_per_node: int) -> tuple[int, int]:
    """The nearest rank counts below and above `ranks` (past one node) that spread evenly over their fewest
    nodes (11 on 8-GPU nodes: 10 = 2 x 5 and 12 = 2 x 6; 9: 8, one node, and 10); `ranks_per_node` itself at
    the lowest."""
    below = next(w for w in range(ranks - 1, ranks_per_node - 1, -1) if equal_share(w, ranks_per_node))
    above = next(w for w in range(ranks + 1, 2 * ranks + ranks_per_node) if equal_share(w, ranks_per_node))
    return below, above


def launchable_sizes(hw: Hardware, fw: FrameworkProfile, ranks: int) -> tuple[int, int] | None:
    """None where `fw`'s launch can run `ranks` ranks on this device, else the nearest counts below and above that
    it can: an engine whose launch runs equal ranks on every node, and ranks with no equal share (11 on 8-GPU
    nodes: 10 and 12)."""
    rpn = device_of(hw).ranks_per_node
    if not fw.equal_ranks_per_node or ranks <= rpn or equal_share(ranks, rpn):
        return None
    return equal_split_sizes(ranks, rpn)


def split_text(ranks: int, ranks_per_node: int) -> str:
    """'12 (2 nodes x 6)', how a rank count spreads over its fewest nodes."""
    nodes = -(-ranks // ranks_per_node)
    return f"{ranks} ({nodes} node{'s' if nodes > 1 else ''} x {ranks // nodes})"


def placement_label(hw: Hardware, fw: FrameworkProfile, ranks: int) -> str:
    """The nodes a deployment runs on where they are not whole nodes, in a table's few words: '2 nodes x 6' (an
    engine that runs equal ranks on every node), '2 nodes: 8 + 4' (one that fills nodes in rank order), 'none'
    (an equal-share engine and ranks with no share; the size is refused); '' for whole nodes or one node, as
    placement_note is None there."""
    rpn = device_of(hw).ranks_per_node
    if ranks <= rpn or ranks % rpn == 0:
        return ""
    nodes = -(-ranks // rpn)
    if not fw.equal_ranks_per_node:
        return f"{nodes} nodes: {' + '.join([str(rpn)] * (nodes - 1))} + {ranks % rpn}"
    share = equal_share(ranks, rpn)
    return "none" if share is None else f"{nodes} nodes x {share}"


def placement_note(hw: Hardware, fw: FrameworkProfile, ranks: int) -> str | None:
    """One line naming the placement where it is not whole nodes, None where it is (or one node): the equal
    share an engine's launch runs, or the part-filled last node of one that fills nodes in order; where an
    equal-share launcher has no share for `ranks`, the sizes that have one."""
    dev = device_of(hw)
    rpn = dev.ranks_per_node
    if ranks <= rpn or ranks % rpn == 0:
        return None
    nodes = -(-ranks // rpn)
    if not fw.equal_ranks_per_node:
        return (f"placement: {ranks} ranks fill {nodes} nodes in rank order, {' + '.join([str(rpn)] * (nodes - 1))} "
                f"+ {ranks % rpn} ({fw.name}'s launch takes any count per node): a TP group or stage that does not "
                f"tile {rpn} ranks crosses a node boundary")
    share = equal_share(ranks, rpn)
    if share is None:
        sizes = " or ".join(split_text(w, rpn) for w in equal_split_sizes(ranks, rpn))
        return (f"placement: none; {fw.name}'s multi-node launch runs the same number of ranks on every node, and "
                f"{ranks} ranks do not divide over {nodes} nodes of {rpn}: {sizes} ranks do")
    return (f"placement: {ranks} ranks as {nodes} nodes x {share} ({fw.name}'s multi-node launch runs world / "
            f"nnodes ranks on every node, on its first {share} of {rpn} devices): a TP group or pipeline stage that does "
            f"not tile {share} ranks crosses a node boundary")
