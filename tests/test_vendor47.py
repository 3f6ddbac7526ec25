"""vLLM on an Ascend device is vllm-ascend (stop 47): vLLM's profile runs on nvidia/amd devices; on a huawei die the
plugin's profile, whose rules refuse what the CUDA build allows (C.pcp_no_dp: no prefill context parallel with
DP > 1, vllm-ascend 0.23.0.post1 platform.py:349-358), is the engine. `--framework vllm` there is refused, and the
refusal names the shipped profiles that do run on that vendor, read from their vendor lists."""
from __future__ import annotations

from click.testing import CliRunner

import solver.specs.framework as framework
from solver.cli.main import main
from solver.launch.read_command import read_command
from solver.specs.framework import list_frameworks, load_framework, profiles_for_vendor
from solver.specs.hardware_catalog import load_hardware

VLLM_SERVE = "vllm serve Qwen/Qwen3-235B-A22B --tensor-parallel-size 16 --enable-expert-parallel --max-num-seqs 16"


def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args))


def test_vllm_on_an_ascend_device_is_refused_naming_the_profiles_that_run_there() -> None:
    """The planner printed `-tp 2 --prefill-context-parallel-size 8 -dp 4` for vllm on 64 A3 dies, a command
    vllm-ascend refuses at start-up; now solve stops at the flag, exit 2, one line, naming huawei's profiles (the
    huawei-only ones, sglang's cross-vendor one and generic, which names no vendor and runs anywhere)."""
    r = _run("solve", "qwen3-30b-a3b", "--hardware", "atlas_a3", "--cards", "8", "--framework", "vllm")
    assert r.exit_code == 2
    assert r.stderr == ("error: --framework: vllm runs on nvidia/amd devices; atlas_a3 is huawei: the profiles for "
                        "huawei devices are cann-recipes, generic, sglang, vllm-ascend\n")


def test_the_profiles_for_a_vendor_are_those_whose_vendor_list_names_it_or_is_empty() -> None:
    for vendor in ("nvidia", "amd", "huawei"):
        expected = [n for n in list_frameworks() if not load_framework(n).vendors
                    or vendor in load_framework(n).vendors]
        assert profiles_for_vendor(vendor) == expected
    assert "vllm" not in profiles_for_vendor("huawei") and "vllm-ascend" in profiles_for_vendor("huawei")
    assert "generic" in profiles_for_vendor("huawei") and "trtllm" not in profiles_for_vendor("huawei")


def test_vllm_serve_on_an_ascend_device_reads_as_vllm_ascend_without_a_note() -> None:
    """`check --command "vllm serve ..." --hardware atlas_a3`: one profile runs the program there, so the command
    is read as it, with no note of another reading."""
    r = _run("check", "--command", VLLM_SERVE, "--hardware", "atlas_a3", "--isl", "1024", "--osl", "1024")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("read: vllm-ascend command, 16 ranks")
    assert "--framework vllm" not in r.stdout and "also runs" not in r.stdout


def test_vllm_serve_named_as_vllm_on_an_ascend_device_is_refused_as_solve_refuses_it() -> None:
    r = _run("check", "--command", VLLM_SERVE, "--hardware", "atlas_a3", "--isl", "1024", "--osl", "1024",
             "--framework", "vllm")
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --framework: vllm runs on nvidia/amd devices; atlas_a3 is huawei: the "
                               "profiles for huawei devices are ")
    assert len(r.stderr.splitlines()) == 1


def test_a_vendors_own_build_is_read_over_a_cross_vendor_profile_that_runs_the_program_there(monkeypatch) -> None:
    """Where two profiles run `vllm serve` on a huawei die (a vLLM profile that lists huawei, as vllm.yaml did
    before), the one whose vendors are [huawei] alone is the reading, with a note naming the other."""
    shipped = framework.load_framework
    everywhere = shipped("vllm").model_copy(update={"vendors": ["nvidia", "amd", "huawei"]})
    monkeypatch.setattr(framework, "load_framework", lambda name: everywhere if name == "vllm" else shipped(name))
    r = read_command(VLLM_SERVE, load_hardware("atlas_a3"))
    assert r.framework == "vllm-ascend"
    assert any("the profile for huawei devices alone" in n and "--framework vllm" in n for n in r.notes)
