"""Capacity planning on rack-scale systems: without --cards, recommend tries the powers of two up to 1024 and each
hardware's whole scale-up domains (a GB200 NVL72 rack of 72 GPUs, a CloudMatrix384 SuperPoD of 768 A3 dies), the
sizes such systems are bought and cabled in; a hardware whose domain is a power of two adds none."""
from __future__ import annotations

import importlib

from solver.capacity.inputs import default_cards

rec = importlib.import_module("solver.capacity.recommend")  # the module (the package exports its function)


def test_default_sizes_are_the_powers_of_two_and_whole_scale_up_domains():
    powers = [1 << k for k in range(11)]  # 1..1024
    assert default_cards(8) == powers  # an 8-GPU NVLink node: nothing to add
    assert default_cards(72) == sorted(powers + [72, 144, 288, 576])  # 72 x 2^k <= 1024
    assert default_cards(768) == sorted(powers + [768])  # one SuperPoD; two (1,536) are past the range


def test_recommend_tries_each_hardwares_own_default_sizes(monkeypatch):
    """Two hardware in one call: GB200's tasks include its racks, H100's do not (each keeps its own sizes)."""
    seen: dict[str, list[int]] = {}

    def fewest(hw_name, tasks, *args, **kwargs):
        seen[hw_name] = [t.cards for t in tasks]
        return rec.Option(hardware=hw_name, met=False)

    monkeypatch.setattr(rec, "_fewest_cards", fewest)
    rec.recommend("llama-3.1-8b", ["gb200", "h100_sxm"], target_output_tokens_per_s=1000.0)
    assert seen["gb200"] == default_cards(72)
    assert seen["h100_sxm"] == default_cards(8)
    rec.recommend("llama-3.1-8b", ["gb200"], target_output_tokens_per_s=1000.0, cards="64..128")
    assert seen["gb200"] == [64, 128]  # a range the user gives is theirs: ends and powers of two only
