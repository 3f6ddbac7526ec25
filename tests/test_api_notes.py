"""The Python API answers what the command line answers: solve()'s notes are the ones `solve` prints, its
as_dict() is `solve --format json` byte for byte (a model directory and a hardware YAML path included), and a
wrong argument is one InputError naming its keyword."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver import api
from solver.cli.main import main as cli
from solver.errors import InputError
from solver.report.render import dump

ROOT = Path(__file__).resolve().parents[1]

# the notes of `solve --format json`, each under its key, in the order the command prints them on stderr
_NOTE_KEYS = ("time_limit_note", "cut_loop_note", "concurrency_note", "edge_note", "copies_note", "prefix_hit_note")


def _json_notes(data: dict) -> list[str]:
    notes = [*data["input_notes"], *(data.get(k) for k in _NOTE_KEYS)]
    return [n for n in notes if n]


def _cli_json(argv: list[str]) -> tuple[str, list[str]]:
    """stdout of `solve ... --format json`, and its note lines on stderr."""
    r = CliRunner().invoke(cli, ["solve", *argv, "--format", "json"])
    assert r.exit_code == 0, r.output
    return r.stdout, [line.removeprefix("note: ") for line in r.stderr.splitlines() if line.startswith("note: ")]


def _model_without_layers(tmp_path: Path) -> str:
    """Qwen3-30B-A3B's config with num_hidden_layers deleted: read at Qwen3MoeConfig's default (a note)."""
    cfg = json.loads((ROOT / "models" / "Qwen--Qwen3-30B-A3B.json").read_text())
    del cfg["num_hidden_layers"]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path / "m")


def _hardware_file(tmp_path: Path) -> str:
    path = tmp_path / "my_h200.yaml"
    shutil.copy(ROOT / "hardware" / "h200_sxm.yaml", path)
    return str(path)


QUESTIONS = {
    # a prefix-cache hit: the note says what it assumed
    "prefix-hit": (["qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--framework", "vllm",
                    "--prefix-hit", "0.5"],
                   lambda tmp: (("qwen3-8b", "h100_sxm", 2), {"framework": "vllm", "prefix_hit": 0.5})),
    # a config directory leaving a field to its class's default, on a hardware YAML path
    "class-default": (None, lambda tmp: ((_model_without_layers(tmp), _hardware_file(tmp), 8),
                                         {"framework": "sglang", "isl": 2048, "osl": 128})),
    # a TPOT SLA and a KV format: the deployment's fields and the engine's notes
    "sla-kv": (["qwen3-8b", "--hardware", "h100_sxm", "--cards", "4", "--framework", "sglang", "--tpot-ms", "20",
                 "--scenario", "throughput", "--kv-dtype", "fp8"],
                lambda tmp: (("qwen3-8b", "h100_sxm", 4), {"framework": "sglang", "tpot_ms": 20,
                                                           "scenario": "throughput", "kv_dtype": "fp8"})),
}


def _argv(name: str, tmp_path: Path) -> tuple[list[str], tuple, dict]:
    argv, api_args = QUESTIONS[name]
    args, kwargs = api_args(tmp_path)
    if argv is None:  # the command line of the API's arguments
        argv = [args[0], "--hardware", args[1], "--cards", str(args[2]),
                *(x for k, v in kwargs.items() for x in (f"--{k.replace('_', '-')}", str(v)))]
    return argv, args, kwargs


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_api_notes_are_the_commands_notes(name, tmp_path):
    """solve().notes == the notes `solve` prints on stderr == the notes its JSON carries, in one order."""
    argv, args, kwargs = _argv(name, tmp_path)
    stdout, printed = _cli_json(argv)
    sol = api.solve(*args, **kwargs)
    assert sol.notes == printed == _json_notes(json.loads(stdout))
    assert sol.notes  # each question has a note to carry


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_api_answer_is_the_commands_json_byte_for_byte(name, tmp_path):
    """solve().as_dict() dumped as the command dumps it is `solve --format json`'s stdout, and the Solution is
    the list of the JSON's candidates."""
    argv, args, kwargs = _argv(name, tmp_path)
    stdout, _ = _cli_json(argv)
    sol = api.solve(*args, **kwargs)
    assert dump(sol.as_dict(), "json") + "\n" == stdout
    assert [c.pattern for c in sol] == [c["pattern"] for c in json.loads(stdout)["candidates"]]


def test_the_class_default_note_is_said_once(tmp_path):
    """A config read at its class default says so once in the answer (not once per planned world size)."""
    sol = api.solve(_model_without_layers(tmp_path), "h200_sxm", 8, framework="sglang", isl=2048, osl=128)
    said = [n for n in sol.notes if "num_hidden_layers absent from config.json" in n]
    assert said == ["num_hidden_layers absent from config.json: read at Qwen3MoeConfig's default 24 "
                    "(transformers 5.25.0 configuration_qwen3_moe.py)"]


def test_the_prefix_hit_note_is_in_the_json_only_at_a_hit():
    """No hit, no prefix_hit_note key (the JSON of a question without one is unchanged)."""
    assert "prefix_hit_note" not in api.solve("qwen3-8b", "h100_sxm", 1, framework="vllm").as_dict()


@pytest.mark.parametrize("call, field", [
    (lambda: api.solve("qwen3-8b", "h100_sxm", "8"), "cards"),
    (lambda: api.solve("qwen3-8b", "h100_sxm", 8, isl=4096.0), "isl"),
    (lambda: api.solve("qwen3-8b", "h100_sxm", None), "cards"),
    (lambda: api.solve(None, "h100_sxm", 8), "model"),
    (lambda: api.solve("qwen3-8b", "h100_sxm", 8, isll=4096), "isll"),
    (lambda: api.solve("qwen3-8b", "h100_sxm", 8, scenario={"isl": 4096}), "scenario"),
    (lambda: api.solve("qwen3-8b", "h100_sxm", 8, prefix_hit=None), "prefix_hit"),
    (lambda: api.solve("qwen3-8b", "h100_sxm", 8, copies_hint="yes"), "copies_hint"),
    (lambda: api.solve("qwen3-8b", "h100_sxm", 8, diagnose=None), "diagnose"),
    (lambda: api.solve("qwen3-8b", "/nonexistent/h100.yaml", 8), "hardware"),
    (lambda: api.estimate("qwen3-8b", "h100_sxm", 1, isl=4096.5, osl=1, concurrency=1), "isl"),
    (lambda: api.check(config={"model": "qwen3-8b"}), "config"),
    (lambda: api.recommend("qwen3-8b", "h100_sxm", target_output_tokens_per_s="100"), "target_output_tokens_per_s"),
    (lambda: api.recommend("qwen3-8b", "h100_sxm", target_output_tokens_per_s=100, prefix_hit=None), "prefix_hit"),
])
def test_a_wrong_argument_is_one_input_error_naming_its_keyword(call, field):
    """A string for an integer, a float for tokens, None where no default is meant, an unknown keyword, a dict for
    a Scenario or a deployment file: refused under the keyword the caller wrote (before: prefix_hit=None reached
    run_solve as an unknown argument, a TypeError; copies_hint / diagnose took any value)."""
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field


def test_the_deployment_keeps_the_acceptance_rate_given_as_the_command_does():
    """MTP with an acceptance rate: the JSON's deployment carries both (check and launch read them), the API's as
    the command's; without a rate given, none is written (the Scenario's default is not the caller's)."""
    stdout, _ = _cli_json(["qwen3.5-9b", "--hardware", "h100_sxm", "--cards", "2", "--framework", "sglang",
                           "--mtp", "1", "--mtp-accept", "0.7"])
    got = api.solve("qwen3.5-9b", "h100_sxm", 2, framework="sglang", mtp=1, mtp_accept=0.7).as_dict()
    assert dump(got, "json") + "\n" == stdout
    assert got["deployment"]["mtp"] == 1 and got["deployment"]["mtp_accept"] == 0.7
    assert "mtp_accept" not in api.solve("qwen3.5-9b", "h100_sxm", 2, framework="sglang", mtp=1).as_dict()["deployment"]


def test_sweep_and_recommend_carry_the_notes_their_commands_print(tmp_path):
    """sweep()'s df.attrs["notes"] and recommend()'s .notes are the note lines of `sweep` and the JSON notes of
    `recommend` for the same question (the class default read and the prefix cache assumed)."""
    model = _model_without_layers(tmp_path)
    common = [model, "--hardware", "h200_sxm", "--cards", "8", "--isl", "2048", "--osl", "128", "--prefix-hit", "0.5"]
    r = CliRunner().invoke(cli, ["sweep", *common, "--scenarios", "balanced", "--format", "json"])
    assert r.exit_code == 0, r.output
    printed = [line.removeprefix("note: ") for line in r.stderr.splitlines() if line.startswith("note: ")]
    df = api.sweep(model, "h200_sxm", [8], "balanced", isl=2048, osl=128, prefix_hit=0.5)
    assert df.attrs["notes"] == printed and len(printed) == 2
    r = CliRunner().invoke(cli, ["recommend", *common, "--target-output-tokens-per-s", "5000", "--format", "json"])
    assert r.exit_code == 0, r.output
    rec = api.recommend(model, "h200_sxm", cards=[8], isl=2048, osl=128, prefix_hit=0.5,
                        target_output_tokens_per_s=5000)
    assert rec.notes == json.loads(r.stdout)["notes"] == printed
