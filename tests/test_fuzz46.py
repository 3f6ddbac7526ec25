"""Rules the fuzz run over attention-FFN disaggregation found wanting (benchmarks/fuzz.py, tests/fuzz_cases.py
afd_estimate_cases / afd_check_cases): each AFD refusal is one line naming the field at fault."""
from __future__ import annotations

import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.catalog import catalog_dir

LC_AFD = str(catalog_dir("references") / "lc-afd.yaml")
# lc-afd's knobs and decode as estimate flags (tests/test_afd46g.py ESTIMATE), the cards and --lmhead-tp left out
LC_AFD_ESTIMATE = ["estimate", "longcat-flash", "--hardware", "atlas_a3", "--framework", "cann-recipes",
                   "--dense-tp", "8", "--oproj-tp", "8", "--weight-dtype", "int8", "--kv-dtype", "bf16", "--phase",
                   "decode", "--batch", "256", "--isl", "4608", "--osl", "128", "--afd"]


def _error(*argv: str) -> str:
    r = CliRunner().invoke(main, list(argv))
    assert r.exit_code == 2, r.output
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


def test_an_odd_world_under_afd_is_refused_naming_the_cards() -> None:
    """3 cards cannot split into two halves: the world size is at fault (--cards), not the parallel_config the
    cann-recipes rule on half the world would have named ("3 is odd" under parallel_config before)."""
    assert _error("estimate", "qwen3-30b-a3b", "--hardware", "atlas_a3", "--cards", "3", "--framework",
                  "cann-recipes", "--phase", "decode", "--batch", "8", "--seq-len", "1024", "--afd") == \
        "error: --cards: attention-FFN disaggregation splits the world in two halves: 3 is odd"


def test_an_odd_world_in_an_afd_file_is_refused_naming_world_size() -> None:
    """check of lc-afd on 127 cards: 127 = 2 x 63 + 1."""
    assert _error("check", LC_AFD, "--cards", "127").endswith(
        "world_size: attention-FFN disaggregation splits the world in two halves: 127 is odd")


def test_a_tp_over_half_the_world_is_named_without_the_redundant_experts_beside_it() -> None:
    """128 cards, halves of 64: lmhead TP 128 does not divide 64; redundant_experts 3 is a count of expert copies,
    not a TP size, so the C.afd_tp_divides_half_world line names lmhead_tp_size alone."""
    line = _error(*LC_AFD_ESTIMATE, "--cards", "128", "--lmhead-tp", "128", "--redundant-experts", "3")
    assert line.startswith("error: --lmhead-tp: [C.afd_tp_divides_half_world]"), line
    assert line.endswith(": lmhead_tp_size 128 of 64"), line


def test_an_unread_head_address_is_refused_counting_the_nodes_the_placement_spans(tmp_path) -> None:
    """cann-recipes starts DeepSeek-V3 on 32 A3 dies (2 nodes of 16) with one command that reads no head address:
    the refusal counts the 2 nodes and the 1 command (it said "launches on 1 node", counting commands)."""
    dep = {"model": "deepseek-v3", "hardware": "atlas_a3", "framework": "cann-recipes", "world_size": 32,
           "parallel_config": {"attn_tp_size": 1, "dense_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1,
                               "moe_tp_size": 1},
           "workload": {"isl": 4096, "osl": 256, "concurrency": 64}}
    path = tmp_path / "dsv3-a3-32.yaml"
    path.write_text(yaml.safe_dump(dep))
    assert _error("launch", str(path), "--head-addr", "10.0.0.1").endswith(
        "launches on 2 nodes from 1 command: no command reads a head node address; drop --head-addr")
