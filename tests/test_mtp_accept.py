"""--mtp-accept: the acceptance rate of each MTP draft token, given to the planning commands (solve, sweep, recommend)
as `estimate` already takes it, and priced by the same serving formulas."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from solver import api
from solver.cli.main import main
from solver.estimate.workload import mtp_tokens_per_step
from solver.specs.parallel import KNOBS

MODEL = ["deepseek-v3.2", "--hardware", "h200_sxm", "--cards", "8"]
LOAD = ["--isl", "1024", "--osl", "1024", "--concurrency", "64", "--mtp", "1"]


def _json(args: list[str]) -> dict:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _first(accept: str | None) -> dict:
    extra = ["--mtp-accept", accept] if accept is not None else []
    return _json(["solve", *MODEL, *LOAD, *extra, "--format", "json"])["candidates"][0]


def _estimate_of(cand: dict, accept: str) -> dict:
    knobs = {k: v for k, v in cand["parallel_config"].items() if k in KNOBS}  # not the derived DP / EP
    args = [a for k, v in knobs.items()
            for a in (f"--{k.removesuffix('_size').replace('_', '-').replace('o-proj', 'oproj')}", str(v))]
    return _json(["estimate", *MODEL, *args, *LOAD, "--mtp-accept", accept, "--format", "json"])


def test_mtp1_emits_one_plus_the_acceptance_tokens_per_step() -> None:
    # one verified token and one draft accepted at rate a: 1 + a tokens per decode step
    assert mtp_tokens_per_step(1, 0.9) == pytest.approx(1.9)
    assert mtp_tokens_per_step(1, 0.5) == pytest.approx(1.5)


def test_solve_prices_the_acceptance_it_is_given() -> None:
    """The recommendation's TPOT at --mtp-accept 0.9 is `estimate`'s for the same configuration at 0.9, and below
    the default acceptance's (0.7): more tokens per step of the same cost."""
    given = _first("0.9")
    assert given["estimation"]["tpot_ms"] == pytest.approx(_estimate_of(given, "0.9")["tpot_ms"], rel=1e-3)
    assert given["estimation"]["tpot_ms"] < _estimate_of(given, "0.7")["tpot_ms"]


@pytest.mark.parametrize("command", [
    ["solve", *MODEL],
    ["sweep", "deepseek-v3.2", "--hardware", "h200_sxm", "--cards", "8"],
    ["recommend", "deepseek-v3.2", "--hardware", "h200_sxm", "--target-output-tokens-per-s", "1000"],
])
def test_an_acceptance_rate_without_mtp_is_refused(command: list[str]) -> None:
    """Given without --mtp it would be dropped: exit 2 naming the flag."""
    r = CliRunner().invoke(main, [*command, "--mtp-accept", "0.9"])
    assert r.exit_code == 2, r.output
    assert "--mtp-accept" in r.output and "--mtp N > 0" in r.output


def test_an_acceptance_rate_outside_0_1_is_refused() -> None:
    r = CliRunner().invoke(main, ["solve", *MODEL, "--mtp", "1", "--mtp-accept", "1.5"])
    assert r.exit_code == 2 and "--mtp-accept" in r.output


def test_the_sweep_plans_the_acceptance_it_is_given() -> None:
    """api.sweep's row for a fixed concurrency shows the same TPOT as solve's at that acceptance."""
    df = api.sweep("deepseek-v3.2", "h200_sxm", 8, ["balanced"], isl=1024, osl=1024, concurrency=64, mtp=1,
                   mtp_accept=0.9)
    best = df[df["rank"] == 1].iloc[0]
    assert best["tpot_ms"] == pytest.approx(_first("0.9")["estimation"]["tpot_ms"], rel=1e-3)


def test_check_reads_the_acceptance_solve_wrote(tmp_path) -> None:
    """solve --format yaml writes mtp_accept beside mtp, and `check` of candidate a shows solve's TPOT."""
    r = CliRunner().invoke(main, ["solve", *MODEL, *LOAD, "--mtp-accept", "0.9", "--format", "yaml"])
    assert r.exit_code == 0, r.output
    path = tmp_path / "plan.yaml"
    path.write_text(r.stdout)
    assert "mtp_accept: 0.9" in r.stdout
    shown = _first("0.9")["estimation"]["tpot_ms"]
    checked = _json(["check", str(path), "--candidate", "a", "--format", "json"])
    assert checked["estimation"]["tpot_ms"] == pytest.approx(shown, rel=1e-3)


@pytest.mark.parametrize("extra, workload, said", [
    ("", "{isl: 1024, osl: 1024, concurrency: 8}", "mtp N > 0"),  # no draft tokens to accept
    ("mtp: 1\n", "{phase: prefill, batch: 1, seq_len: 4096}", "decodes nothing"),  # a prefill decodes nothing
])
def test_a_deployment_acceptance_read_by_nothing_is_refused(tmp_path, extra: str, workload: str, said: str) -> None:
    """mtp_accept without mtp, or on a prefill-only workload (as estimate --phase prefill refuses --mtp-accept), is
    read by nothing: exit 2 naming the field."""
    path = tmp_path / "dep.yaml"
    path.write_text(f"model: deepseek-v3.2\nhardware: h200_sxm\nworld_size: 8\n{extra}mtp_accept: 0.9\n"
                    f"parallel_config: {{attn_tp_size: 8}}\nworkload: {workload}\n")
    r = CliRunner().invoke(main, ["check", str(path)])
    assert r.exit_code == 2, r.output
    assert "mtp_accept" in r.output and said in r.output
