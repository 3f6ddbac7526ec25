"""Stop 49: a command's speculative method priced as it runs (FrameworkProfile.draft_methods). MTP drafts with the
model's next-n layers; a lookup (vLLM's ngram: NgramGPUSpeculator's token-id scan, SGLang's NGRAM: a host-side
corpus) runs no draft forward, so its step is the target verifying 1 + N tokens a sequence with no next-n layers
loaded, and its acceptance, the prompts' own, must be given; a separate draft model is refused."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.compute import Work, factors_for
from solver.estimate.params import count_params
from solver.estimate.serving import decode_step
from solver.estimate.step import step_cost
from solver.launch.engine_flags import engine_flags
from solver.specs.deployment import Deployment
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

V32 = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{spec}'"
WORKLOAD = ["--hardware", "h200_sxm", "--isl", "4096", "--osl", "512", "--concurrency", "32"]


def _check(command: str, *extra: str):
    return CliRunner().invoke(main, ["check", "--command", command, *WORKLOAD, *extra, "--format", "json"])


def _spec(method: str, **more) -> str:
    return json.dumps({"method": method, "num_speculative_tokens": 3, **more})


def test_every_vllm_draft_method_is_one_its_parser_accepts() -> None:
    """The profile's methods are among --spec-method's choices as vLLM 0.34.0's parser records them."""
    known = set(engine_flags()["vllm"]["flags"]["--spec-method"]["known"])
    d = load_framework("vllm").draft_methods
    assert set(d.next_n) | set(d.lookup) | set(d.draft_model) <= known


def test_a_lookup_step_is_the_target_verifying_one_plus_n_tokens() -> None:
    """ngram at depth 3, 16 sequences: the step of 16 x 4 tokens through the target's layers (16 sequences' KV
    read), no draft pass; MTP's step at the same depth adds the next-n layers' passes on top."""
    m, hw = load_model("deepseek-v3"), load_hardware("h200_sxm")
    pc, prec, f = make_parallel_config(8, attn_tp_size=8, moe_tp_size=8), resolve_precision(m, hw), factors_for(hw)
    lookup = decode_step(m.without_next_n(), hw, pc, prec, f, 16, 4096, mtp=3)
    verify = step_cost(m, hw, pc, prec, f, Work("decode", new_tokens=64, context=4096, sequences=16,
                                                logits_tokens=64), mtp_layers=0)
    assert lookup.time_s == pytest.approx(verify.time_s)
    assert not [o for o in lookup.ops if o.name.startswith("mtp_")]
    assert decode_step(m, hw, pc, prec, f, 16, 4096, mtp=3).time_s > lookup.time_s


def test_a_lookup_draft_loads_no_next_n_weights() -> None:
    """DeepSeek-V3's one next-n module is in its parameters; the model as a lookup draft runs it has none."""
    m = load_model("deepseek-v3")
    assert m.num_mtp_layers == 1 and m.without_next_n().num_mtp_layers == 0
    assert count_params(m).mtp and not count_params(m.without_next_n()).mtp


def test_a_lookup_draft_without_an_acceptance_is_refused_naming_mtp_accept() -> None:
    r = _check(V32.format(spec=_spec("ngram", prompt_lookup_max=4)))
    assert r.exit_code == 2 and "--mtp-accept: missing" in r.output and len(r.output.strip().splitlines()) == 1


def test_a_draft_model_method_is_refused_in_one_line() -> None:
    r = _check(V32.format(spec=_spec("eagle3", model="/models/eagle3")))
    assert r.exit_code == 2 and "separate draft model" in r.output and len(r.output.strip().splitlines()) == 1


def test_a_method_the_profile_does_not_price_is_refused() -> None:
    r = _check(V32.format(spec=_spec("suffix")))
    assert r.exit_code == 2 and "does not price" in r.output


def test_a_lookup_draft_is_priced_below_mtp_at_the_same_acceptance_and_without_its_weights() -> None:
    """Same command, method mtp vs ngram at --mtp-accept 0.7: the lookup drops the next-n weights and passes."""
    mtp = json.loads(_check(V32.format(spec=_spec("mtp")), "--mtp-accept", "0.7").output)["estimation"]
    ngram = json.loads(_check(V32.format(spec=_spec("ngram")), "--mtp-accept", "0.7").output)["estimation"]
    assert ngram["params_per_card_gb"] < mtp["params_per_card_gb"]
    assert ngram["tpot_ms"] < mtp["tpot_ms"]


def test_an_mtp_alias_is_priced_as_mtp() -> None:
    """vLLM rewrites deepseek_mtp to mtp (config/speculative.py:1375-1379): the same figures."""
    a = json.loads(_check(V32.format(spec=_spec("mtp"))).output)["estimation"]
    b = json.loads(_check(V32.format(spec=_spec("deepseek_mtp"))).output)["estimation"]
    assert a == b


def test_a_lookup_draft_runs_on_a_model_without_next_n_layers() -> None:
    """Qwen3-8B has no next-n layers: method mtp is refused, ngram at a given acceptance is priced."""
    cmd = "vllm serve Qwen/Qwen3-8B --speculative-config '{spec}'"
    assert _check(cmd.format(spec=_spec("mtp")), "--cards", "1").exit_code == 2
    r = _check(cmd.format(spec=_spec("ngram")), "--cards", "1", "--mtp-accept", "0.6")
    assert r.exit_code == 0, r.output


def test_sglang_reads_its_algorithm_in_any_case() -> None:
    """SGLang upper-cases --speculative-algorithm (spec_info.py:50-65): ngram is its NGRAM, a lookup."""
    d = load_framework("sglang").draft_methods
    assert d.kind("ngram") == d.kind("NGRAM") == "lookup" and d.kind("nextn") == "next_n"
    assert load_framework("vllm").draft_methods.kind("NGRAM") is None  # vLLM reads it as written


def test_a_deployment_file_lookup_draft_needs_its_acceptance() -> None:
    with pytest.raises(ValueError, match="mtp_accept: missing"):
        Deployment(model="deepseek-v3", mtp=3, draft="lookup")
    assert Deployment(model="deepseek-v3", mtp=3, draft="lookup", mtp_accept=0.5).draft == "lookup"


def test_mtp_is_still_refused_on_a_model_without_next_n_layers_by_solve() -> None:
    """solve / launch emit MTP only where the model has next-n layers: --mtp on Qwen3-8B is one line, exit 2."""
    r = CliRunner().invoke(main, ["solve", "Qwen/Qwen3-8B", "--hardware", "h200_sxm", "--cards", "1", "--isl", "1024",
                                  "--osl", "256", "--concurrency", "8", "--mtp", "2", "--format", "launch"])
    assert r.exit_code == 2 and "--mtp" in r.output, r.output


def test_the_api_check_of_a_lookup_command_takes_its_acceptance() -> None:
    """solver.api.check(command=...) refuses an ngram command without mtp_accept, named as the keyword, and
    prices it with one."""
    from solver import api
    from solver.errors import InputError

    cmd = V32.format(spec=_spec("ngram"))
    with pytest.raises(InputError) as exc:
        api.check(hardware="h200_sxm", isl=4096, osl=512, concurrency=32, command=cmd)
    assert exc.value.field == "mtp_accept"
    assert api.check(hardware="h200_sxm", isl=4096, osl=512, concurrency=32, command=cmd, mtp_accept=0.7).valid
