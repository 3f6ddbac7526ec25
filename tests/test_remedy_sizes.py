"""The sizes a memory remedy offers are sizes the engine runs: a size at which the engine's rules leave no attention
layout, whatever the flags, is said as such and never offered (nor is --allow-cross-node, which cannot help there)."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main
from solver.plan.memory_remedies import rules_leaving_no_layout
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.scenario import Scenario


def test_a_size_past_a_single_node_engines_node_is_ruled_out_by_its_rule():
    """ATOM runs on one node (C.single_node: world x pp <= ranks per node, 8 on MI300X): 16 ranks run no attention
    layout at any placement, 8 do."""
    model, hw, fw = load_model("kimi-k3"), load_hardware("mi300x"), load_framework("atom")
    assert rules_leaving_no_layout(model, hw, fw, 16, Scenario()) == ["C.single_node"]
    assert rules_leaving_no_layout(model, hw, fw, 8, Scenario()) == []


def test_a_memory_remedy_names_the_rule_for_sizes_the_engine_cannot_run():
    """Kimi-K3 (about 1T parameters in BF16) on 8 MI300X under ATOM: memory binds; more cards would be the remedy,
    but ATOM runs no size past one node (the least that holds 1,560.8 GB is 10), so the line says so instead of
    offering 10-25 cards and --allow-cross-node; the smaller weight formats stay."""
    r = CliRunner().invoke(main, ["solve", "kimi-k3", "--hardware", "mi300x", "--cards", "8", "--framework", "atom"])
    assert r.exit_code == 1
    assert "atom runs no larger size (C.single_node at 10 to 25 cards)" in r.stderr
    assert "--allow-cross-node" not in r.stderr and "the planner found none" not in r.stderr
    assert "smaller weights" in r.stderr
