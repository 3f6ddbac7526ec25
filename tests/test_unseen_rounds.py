"""The checks every round of configs outside the catalog shares (tests/test_unseen_configs_{multi2,
round4..round43}.py hold each round's hand counts, published figures and reading rules): every file has a hand
count, counts to it exactly, lies within 1% of a precisely published total, activates its hand count within 2% of
the card, holds the hand-computed K/V bytes per token (a round's KV_BYTES_PER_TOKEN), inspects end to end, and
solves end to end on 8 H100s under vLLM (16 where a round's SOLVE_CARDS says so; in CI's slow suite)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import test_unseen_configs_multi2 as multi2
import test_unseen_configs_round4 as round4
import test_unseen_configs_round5 as round5
import test_unseen_configs_round6 as round6
import test_unseen_configs_round7 as round7
import test_unseen_configs_round8 as round8
import test_unseen_configs_round9 as round9
import test_unseen_configs_round10 as round10
import test_unseen_configs_round11 as round11
import test_unseen_configs_round12 as round12
import test_unseen_configs_round13 as round13
import test_unseen_configs_round14 as round14
import test_unseen_configs_round15 as round15
import test_unseen_configs_round16 as round16
import test_unseen_configs_round17 as round17
import test_unseen_configs_round18 as round18
import test_unseen_configs_round19 as round19
import test_unseen_configs_round20 as round20
import test_unseen_configs_round21 as round21
import test_unseen_configs_round22 as round22
import test_unseen_configs_round23 as round23
import test_unseen_configs_round24 as round24
import test_unseen_configs_round25 as round25
import test_unseen_configs_round26 as round26
import test_unseen_configs_round27 as round27
import test_unseen_configs_round28 as round28
import test_unseen_configs_round29 as round29
import test_unseen_configs_round30 as round30
import test_unseen_configs_round31 as round31
import test_unseen_configs_round32 as round32
import test_unseen_configs_round34 as round34
import test_unseen_configs_round33 as round33
import test_unseen_configs_round35 as round35
import test_unseen_configs_round36 as round36
import test_unseen_configs_round37 as round37
import test_unseen_configs_round38 as round38
import test_unseen_configs_round39 as round39
import test_unseen_configs_round40 as round40
import test_unseen_configs_round41 as round41
import test_unseen_configs_round42 as round42
import test_unseen_configs_round43 as round43
from hand_counts import REFUSED
from solver.specs.dtypes import KV16
from solver.cli.main import main
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

ROUNDS = {"multi2": multi2, "round4": round4, "round5": round5, "round6": round6, "round7": round7,
          "round8": round8, "round9": round9, "round10": round10,
          "round11": round11, "round12": round12, "round13": round13,
          "round14": round14, "round15": round15, "round16": round16,
          "round17": round17, "round18": round18, "round19": round19,
          "round20": round20, "round21": round21,
          "round22": round22, "round23": round23, "round24": round24,
          "round25": round25, "round26": round26, "round27": round27,
          "round28": round28, "round29": round29,
          "round30": round30, "round31": round31,
          "round32": round32, "round33": round33, "round34": round34, "round35": round35,
          "round36": round36, "round37": round37, "round38": round38, "round39": round39,
          "round40": round40, "round41": round41, "round42": round42,
          "round43": round43}


def _cases(table: str) -> list[tuple[str, str]]:
    return [(r, name) for r, mod in ROUNDS.items() for name in sorted(getattr(mod, table, {}))]


@pytest.mark.parametrize("r", sorted(ROUNDS))
def test_every_config_has_a_hand_count(r: str) -> None:
    mod = ROUNDS[r]
    assert sorted(p.stem for p in mod.DATA.glob("*.json")) == sorted(mod.HAND)


@pytest.mark.parametrize("r, name", _cases("HAND"))
def test_every_config_counts_to_its_hand_computed_total(r: str, name: str) -> None:
    assert ROUNDS[r].ROUND.total(name) == ROUNDS[r].HAND[name]


@pytest.mark.parametrize("r, name", _cases("PUBLISHED"))
def test_every_config_is_within_one_percent_of_its_published_total(r: str, name: str) -> None:
    assert abs(ROUNDS[r].ROUND.total(name) / ROUNDS[r].PUBLISHED[name] - 1) < 0.01


@pytest.mark.parametrize("r, name", _cases("ACTIVE"))
def test_every_moe_config_activates_its_hand_count_within_two_percent_of_the_card(r: str, name: str) -> None:
    hand, published = ROUNDS[r].ACTIVE[name]
    assert count_params(ROUNDS[r].ROUND.spec(name)).active == hand
    assert published is None or abs(hand / published - 1) < 0.02


@pytest.mark.parametrize("r, name", _cases("KV_BYTES_PER_TOKEN"))
def test_kv_cache_per_token_is_the_hand_figure(r: str, name: str) -> None:
    """K/V bytes per token of context at bf16 over every block whose cache grows with the context (a window's
    cache stops at the window: not counted), shared blocks at each use."""
    blocks = [b for layer in ROUNDS[r].ROUND.spec(name).layers for b in layer.blocks
              if getattr(b, "window", None) is None]
    assert sum(b.state(KV16, 1).per_token_bytes for b in blocks) == ROUNDS[r].KV_BYTES_PER_TOKEN[name]


@pytest.mark.parametrize("r, name", _cases("HAND"))
def test_every_config_inspects_end_to_end(r: str, name: str) -> None:
    path = str(ROUNDS[r].DATA / f"{name}.json")
    out = CliRunner().invoke(main, ["inspect", path])
    assert out.exit_code == 0 and name in out.output, out.output


# ~0.25 s a config over some 200 configs: CI's slow suite runs it (the default suite keeps the inspect above)
@pytest.mark.slow
@pytest.mark.parametrize("r, name", _cases("HAND"))
def test_every_config_solves_end_to_end(r: str, name: str) -> None:
    path = str(ROUNDS[r].DATA / f"{name}.json")
    cards = str(getattr(ROUNDS[r], "SOLVE_CARDS", {}).get(name, 8))  # a round names a model 8 cards cannot hold
    # a round names the lengths of a model whose learned position table is shorter than the default request
    extra = getattr(ROUNDS[r], "SOLVE_ARGS", {}).get(name, [])
    out = CliRunner().invoke(main, ["solve", path, "--hardware", "h100_sxm", "--cards", cards, "--framework", "vllm",
                                    *extra])
    assert out.exit_code == 0 and "Traceback" not in out.output, out.output


@pytest.mark.parametrize("r, name", _cases("REFUSALS"))
def test_every_config_a_round_refuses_is_refused_in_one_line_naming_the_field(r: str, name: str) -> None:
    with pytest.raises(InputError, match=ROUNDS[r].REFUSALS[name]) as err:
        parse_model_config(ROUNDS[r].ROUND.load(name, REFUSED), name)
    assert "\n" not in str(err.value)
