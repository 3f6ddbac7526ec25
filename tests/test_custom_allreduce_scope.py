"""The engines' custom all-reduce runs only where their code builds it: the group sizes it lists, the device
vendors it is built for, inside one node where it does not span nodes (serving.allreduce_custom_*; comm.py).

Figures: a 16 KiB message (8 decode tokens x 1024 hidden x 2 bytes). GB200 (hardware/gb200.yaml): 4 GPUs a tray,
one NVLink fabric over the NVL72 rack at 900 GB/s x 0.82 = 738 GB/s, 10 us a hop; H100 node: 8 GPUs, 450 GB/s x
0.82 = 369 GB/s, 10 us. Ring = 2 x (10 us + (n-1)/n x bytes / bw) over one level; one-shot = L + (n-1) x bytes /
bw with L the kernel's fitted latency (read from the profile's factors, as the estimator does).
"""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from solver.estimate.comm import CustomAllReduce, all_reduce_s
from solver.estimate.factors import factors_for
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.profile_serving import FrameworkServing

GB200, H100, A3 = load_hardware("gb200"), load_hardware("h100_sxm"), load_hardware("atlas_a3")
NBYTES = 16 * 1024
BW_GB200 = 900e9 * 0.82
BW_H100 = 450e9 * 0.82


def kernel(framework: str, hw) -> CustomAllReduce | None:  # type: ignore[no-untyped-def]
    """The kernel the estimator prices with for this engine on this device."""
    return CustomAllReduce.of(factors_for(hw, load_framework(framework).efficiency_for(hw)))


def latency(k: CustomAllReduce | None) -> float:
    assert k is not None and k.latency_s is not None
    return k.latency_s


def test_sglang_tp8_across_two_gb200_trays_runs_the_ring() -> None:
    # SGLang's kernel stays inside one node by default: 8 ranks = 2 trays -> 2 x (10 us + 7/8 x 16 KiB / 738 GB/s)
    ring = 2 * (10e-6 + 7 / 8 * NBYTES / BW_GB200)
    assert all_reduce_s(GB200, 8, NBYTES, custom=kernel("sglang", GB200)) == pytest.approx(ring)


def test_sglang_tp4_inside_one_gb200_tray_runs_one_shot() -> None:
    k = kernel("sglang", GB200)
    # L + 3 x 16 KiB / 738 GB/s (16 KiB <= the 512 KB one-shot limit on <= 4 ranks)
    assert all_reduce_s(GB200, 4, NBYTES, custom=k) == pytest.approx(latency(k) + 3 * NBYTES / BW_GB200)


def test_sglang_tp16_inside_one_gb200_rack_runs_the_ring() -> None:
    ring = 2 * (10e-6 + 15 / 16 * NBYTES / BW_GB200)
    assert all_reduce_s(GB200, 16, NBYTES, custom=kernel("sglang", GB200)) == pytest.approx(ring)


def test_vllm_tp16_inside_one_gb200_rack_keeps_the_kernel() -> None:
    # vLLM lists 16 and spans the trays (MNNVL): L + 15 x 16 KiB / 738 GB/s
    k = kernel("vllm", GB200)
    assert all_reduce_s(GB200, 16, NBYTES, custom=k) == pytest.approx(latency(k) + 15 * NBYTES / BW_GB200)


def test_vllm_tp3_a_size_it_does_not_list_runs_the_ring() -> None:
    # vLLM's sizes are 2, 4, 6, 8, 16: 3 ranks in an H100 node -> 2 x (10 us + 2/3 x 16 KiB / 369 GB/s)
    ring = 2 * (10e-6 + 2 / 3 * NBYTES / BW_H100)
    assert all_reduce_s(H100, 3, NBYTES, custom=kernel("vllm", H100)) == pytest.approx(ring)


def test_sglang_tp3_a_size_it_lists_runs_one_shot() -> None:
    # SGLang's default CUDA kernel runs 2-8: L + 2 x 16 KiB / 369 GB/s
    k = kernel("sglang", H100)
    assert all_reduce_s(H100, 3, NBYTES, custom=k) == pytest.approx(latency(k) + 2 * NBYTES / BW_H100)


# SGLang runs on Ascend; vLLM's profile does not (vllm-ascend is vLLM there), so its kernel list is read as a user's
# copy of it that names huawei among its vendors would carry it
ON_ASCEND = {"sglang": load_framework("sglang"),
             "vllm": load_framework("vllm").model_copy(update={"vendors": ["nvidia", "amd", "huawei"]})}


@pytest.mark.parametrize("framework", sorted(ON_ASCEND))
def test_no_custom_kernel_on_a_vendor_the_engine_does_not_build_it_for(framework: str) -> None:
    # on Ascend both run HCCL: no kernel, so a TP 8 all-reduce inside an A3 node is priced as the ring
    fw = ON_ASCEND[framework]
    assert CustomAllReduce.of(factors_for(A3, fw.efficiency_for(A3))) is None
    assert "allreduce_custom_max_bytes" not in fw.serving_factors("huawei")


def test_a_profile_that_lists_nothing_keeps_the_kernel_at_any_size_and_span() -> None:
    # trtllm's serving block names no sizes or vendors: TP 16 over the NVL72 rack stays L + 15 x bytes / bw
    k = kernel("trtllm", GB200)
    assert k is not None and k.ranks == () and k.spans_nodes
    assert all_reduce_s(GB200, 16, NBYTES, custom=k) == pytest.approx(latency(k) + 15 * NBYTES / BW_GB200)


def test_an_unknown_vendor_keeps_the_kernel() -> None:
    # a device the catalog does not know has no vendor: nothing to rule the kernel out with
    assert load_framework("sglang").serving_factors("")["allreduce_custom_max_bytes"] == 8 * 2**20


def test_a_group_size_below_two_is_refused() -> None:
    with pytest.raises(ValidationError, match="allreduce_custom_ranks"):
        FrameworkServing(allreduce_custom_ranks=[1, 2])


def test_a_vendor_not_written_as_the_device_files_write_it_is_refused() -> None:
    with pytest.raises(ValidationError, match="allreduce_custom_vendors"):
        FrameworkServing(allreduce_custom_vendors=["NVIDIA"])
