"""Throughput plans at the memory edge, carried through the other commands as a user would: `solve --scenario
throughput --format yaml`, then for every candidate `check FILE --candidate X --format json`, `launch FILE
--candidate X --format json` and `estimate` of its knobs at its concurrency. A defect: check or estimate printing
another TTFT, TPOT, tok/s/rank or memory than solve did (to the yaml's rounding), or a launch whose batch flag is
not the planned concurrency (per DP engine where the profile's flag is per engine: --max-num-seqs,
--max_batch_size; the whole server's --max-running-requests, each --dp-size replica a server of its own /
cann-recipes' batch_size). Deployments: the
engines with a batch flag, quantized and looped configs (tests/data), the cann-recipes batch rule.

    python benchmarks/edge_roundtrip.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from solver.cli.main import main as cli  # noqa: E402

Q = ROOT / "tests" / "data" / "configs_quant"
U = ROOT / "tests" / "data" / "configs_unseen"
T = ["--scenario", "throughput", "--isl", "4096", "--osl", "1024"]
DEPLOYMENTS = [
    ["llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "4", "--framework", "vllm", *T],
    ["llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "4", "--framework", "sglang", *T],
    ["llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "4", "--framework", "trtllm", *T],
    ["qwen3-235b-a22b", "--hardware", "h100_sxm", "--cards", "8", "--framework", "vllm", "--scenario", "throughput",
     "--isl", "8192", "--osl", "1024"],
    ["gpt-oss-120b", "--hardware", "mi355x", "--cards", "8", "--framework", "atom", *T],
    ["deepseek-v3", "--hardware", "atlas_a3", "--cards", "48", "--framework", "cann-recipes", "--scenario",
     "throughput", "--isl", "8192", "--osl", "1024"],
    ["deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "32", "--framework", "vllm-ascend", "--weight-dtype", "int8",
     *T],
    [str(Q / "RedHatAI--Llama-3.3-70B-Instruct-FP8-dynamic.json"), "--hardware", "h100_sxm", "--cards", "2",
     "--framework", "vllm", *T],
    [str(Q / "Qwen--Qwen3-30B-A3B-GPTQ-Int4.json"), "--hardware", "h100_sxm", "--cards", "1", "--framework",
     "sglang", *T],
    [str(Q / "nvidia--Llama-3.3-70B-Instruct-FP4.json"), "--hardware", "b200_sxm", "--cards", "1", "--framework",
     "trtllm", *T],
    [str(U / "round26" / "sapientinc--HRM-Text-1B.json"), "--hardware", "l40s", "--cards", "1", "--framework",
     "vllm", *T],
    [str(U / "round27" / "nvidia--NVIDIA-Nemotron-Labs-Dory1.0-4B-BF16.json"), "--hardware", "l40s", "--cards", "2",
     "--framework", "vllm", *T],
    [str(U / "round14" / "Zyphra--Zamba2-2.7B.json"), "--hardware", "h100_sxm", "--cards", "1", "--framework",
     "sglang", *T],
]
FIGURES = {"ttft_ms": "ttft_ms", "tpot_ms": "tpot_ms", "output_tokens_per_s_per_rank": "output_tokens_per_s_per_rank",
           "memory_per_rank_gb": "memory_per_rank_gb"}
# the estimate flag of each parallel_config knob
FLAGS = {"attn_tp_size": "--attn-tp", "dense_tp_size": "--dense-tp", "moe_tp_size": "--moe-tp",
         "embed_tp_size": "--embed-tp", "lmhead_tp_size": "--lmhead-tp", "o_proj_tp_size": "--oproj-tp",
         "cp_size": "--cp", "kvp_size": "--kvp", "attn_sp_size": "--attn-sp", "pp_size": "--pp",
         "redundant_experts": "--redundant-experts"}
DTYPES = {"--weight-dtype", "--moe-weight-dtype", "--kv-dtype"}
# the launch's batch flags: per DP engine (the planned concurrency over the engines) or the whole server's
PER_ENGINE = {"--max-num-seqs", "--max_batch_size"}
WHOLE = {"--max-running-requests"}


def servers(argv: list[str]) -> int:
    """SGLang servers one command starts: sglang 0.5.23's --dp-size N is N whole-engine replicas, each taking
    --max-running-requests (attention DP is --attn-dp-size, one server); the deprecated `--dp-size N
    --enable-dp-attention` is attention DP N, one server (arg_groups/parallel_hook.py
    handle_deprecated_dp_attention)."""
    if "--dp-size" not in argv or "--enable-dp-attention" in argv:
        return 1
    return int(argv[argv.index("--dp-size") + 1])


def run(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(cli, args)
    return r.exit_code, r.stdout


def close(a: float, b: float) -> bool:
    """Equal to the yaml's rounding (the shown figures have 3-5 significant digits)."""
    return abs(a - b) <= 0.006 * max(abs(a), abs(b), 1e-9)


def batch_flag(launch: dict) -> tuple[str, int, int] | None:
    """(flag, value, servers that each take the value; 1 where the flag is per DP engine or the whole server's)."""
    for node in launch.get("nodes", []):
        argv = node.get("argv", [])
        for i, tok in enumerate(argv[:-1]):
            if tok in PER_ENGINE | WHOLE:
                return tok, int(argv[i + 1]), servers(argv) if tok in WHOLE else 1
    for text in launch.get("files", {}).values():  # cann-recipes: the model yaml's batch_size
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("batch_size"), int):
            return "batch_size", doc["batch_size"], 1
    return None


def main() -> None:
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="edge-roundtrip-"))
    defects, rows = [], 0
    for i, dep in enumerate(DEPLOYMENTS):
        code, out = run(["solve", *dep, "--format", "yaml"])
        name = Path(dep[0]).name.removesuffix(".json")
        if code != 0:
            print(f"{name}: solve exit {code}")
            continue
        f = folder / f"d{i}.yaml"
        f.write_text(out)
        doc = yaml.safe_load(out)
        hw, world, fw = doc["hardware"], doc["world_size"], doc["framework"]
        for key in sorted(k for k in doc if k.startswith("candidate_")):
            cand, x = doc[key], key.removeprefix("candidate_")
            est, conc, knobs = cand["estimation"], cand["workload"]["concurrency"], cand["parallel_config"]
            rows += 1
            problems = []
            code, out = run(["check", str(f), "--candidate", x, "--format", "json"])
            chk = json.loads(out)["estimation"] if code in (0, 1) and out.strip().startswith("{") else None
            if chk is None:
                problems.append(f"check exit {code}")
            else:
                problems += [f"check {k} {chk[k]} vs solve {est[k]}" for k in FIGURES if not close(chk[k], est[k])]
            flags = [a for k, v in knobs.items() if k in FLAGS for a in (FLAGS[k], str(v))]
            # the solve's number formats, as given
            flags += [a for j, a in enumerate(dep) if a in DTYPES or (j and dep[j - 1] in DTYPES)]
            code, out = run(["estimate", dep[0], "--hardware", hw, "--cards", str(world), "--framework", fw,
                             *flags, "--isl", str(cand["workload"]["isl"]), "--osl", str(cand["workload"]["osl"]),
                             "--concurrency", str(conc), "--format", "json"])
            if code != 0:
                problems.append(f"estimate exit {code}: {out.strip().splitlines()[-1:] }")
            else:
                e = json.loads(out)
                problems += [f"estimate {k} {e[k]:.4g} vs solve {est[k]}" for k in FIGURES if not close(e[k], est[k])]
            code, out = run(["launch", str(f), "--candidate", x, "--format", "json"])
            got = batch_flag(json.loads(out)) if code == 0 else None
            dp = world // knobs.get("pp_size", 1) // (knobs.get("attn_tp_size", 1) * knobs.get("kvp_size", 1)
                                                     * knobs.get("cp_size", 1) * knobs.get("attn_sp_size", 1))
            if code != 0:
                problems.append(f"launch exit {code}")
            elif got is None:
                problems.append("launch has no batch flag")
            else:
                flag, value, replicas = got
                # per DP engine: the engines' ceil(concurrency / DP); the profile's expression may count the
                # engine's ranks another way (KVP inside TP), so any value that runs the planned batch in the
                # fewest whole steps passes: value x engines >= conc > (value - 1) x engines
                if flag in PER_ENGINE:
                    engines = {dp, max(1, world // knobs.get("attn_tp_size", 1))}
                    if not any(value * n >= conc > (value - 1) * n for n in engines):
                        problems.append(f"launch {flag} {value} for {conc} over {sorted(engines)} engines")
                elif not value * replicas >= conc > (value - 1) * replicas:  # each replica server takes the value
                    over = f" over {replicas} servers" if replicas > 1 else ""
                    problems.append(f"launch {flag} {value} vs planned {conc}{over}")
            status = "ok" if not problems else "DEFECT: " + "; ".join(problems)
            print(f"{name} {hw} x{world} {fw} {x}: c{conc} {est['ttft_ms']:.0f}/{est['tpot_ms']:.2f} ms "
                  f"{est['memory_per_rank_gb']} GB: {status}", flush=True)
            if problems:
                defects.append((dep, x, problems))
    print(f"\n{rows} candidates, {len(defects)} with a defect")


if __name__ == "__main__":
    main()
