"""Metamorphic relations across the product: random deployments (catalog models, hardware, engines that run on it,
scenarios; seeded) and, for each, pairs of questions whose answers physics or a definition ties together. Prints
each relation's checked / violated counts and its first violating commands (shell lines to rerun).

Relations (R0-R7; a pair the product refuses on input, exit 2, is not checked):
  R0 no_internal_error: no command the relations run exits 3 (an internal error).
  R1 memory per rank of a fixed config (`memory`):
     tp_weights     weights per rank never grow when a TP knob doubles (same world: the DP size halves);
     tp_memory      memory per rank, communicator buffers aside, never grows when a dense, embedding or lm_head TP
                    knob doubles. Not for attention TP: at a fixed global batch it moves sequences onto fewer DP
                    groups, and a KV the TP group replicates (MLA's latent, KV heads fewer than TP) grows. Not for
                    MoE TP: at a fixed world it halves EP, not DP, and the TP group holds the hidden states of
                    every token it gathers, where EP receives the routed ones: weights only for those two;
     dtype          memory per rank never grows when the weight (bf16 -> fp8 -> fp4) or KV dtype (bf16 -> fp8)
                    narrows;
     shrink         memory per rank never grows when the batch or the sequence halves;
     max_batch      `memory`'s largest batch that fits fits, and one more does not.
  R2 figures of a fixed config (`estimate`, serving):
     ttft_isl       TTFT does not fall when the ISL doubles;
     tpot_conc      TPOT does not fall when the concurrency doubles;
     tpot_isl       nor when the ISL doubles, where every mixer's keys per query grow with the context
                    (ModelSpec.keys_monotone: chunked attention, Llama 4's, restarts at each chunk, so a decode at
                    8K + 256 reads 256 keys in those layers where one at 4K + 256 reads 4,352);
     tput_conc      throughput per rank does not fall when the concurrency doubles, both within the memory limit.
  R3 one answer, four commands: `solve --format json` figures equal the table's (to the table's digits);
     `sweep --cards W` candidate 1 equals solve's (figures equal as floats); `check` of candidate 1 written by
     `solve --format yaml` accepts it with the same figures; `estimate` with candidate 1's knobs gives them.
  R4 SLAs and size: an SLA candidate 1 meets (x1.5 its TTFT and TPOT) leaves candidate 1 as it was (keeps_first),
     except where the new candidate 1 stands at an SLA edge (sla_edge_from: a concurrency between the powers of two
     that the planner plans under an SLA or a batch rule, plan/sla_edge.edges_planned; moves_to_edge) or is another candidate
     within the tie band (ties are ordered by closeness to a verified deployment, and under SLAs every kind's
     candidates join; first_within_tie): neither may score worse than the old one past the band; an SLA looser than a feasible one stays feasible; a feasible
     deployment stays feasible at 2W under the throughput scenario (a refusal naming the node size or a
     divisibility rule is the stated exception).
     `sweep --format json` holds the CSV's rows with the same figures; `sweep --cards W,2W` holds the rows of
     `sweep --cards W` unchanged (sweep_rows_independent); the figures keep their definitions (total tok/s = per
     rank x ranks, tok/s per user = 1 / TPOT, fits = memory within the limit: figures_by_definition).
  R5 launch: every node's argv of candidate 1 passes engine_flags.argv_problems, and the knobs read back from it
     (tests/test_engine_roundtrip.py's parser, written from engines.md) are candidate 1's; `launch` of the file
     `solve --format yaml` wrote gives solve's own launch document (argv, env, files).
  R6 check --command: candidate 1's launch as the shell text `solve --format launch` prints reads back candidate
     1's knobs and (without a prefix hit, which check takes no flag for) its figures (command_roundtrip); the same
     command with its flags reordered, spelt --flag=value and two of the engine's site flags added reads the same
     (command_respelt).
  R7 the device as a file, at candidate 1's knobs and concurrency: the catalog device's YAML given by path answers
     as its name does (device_file=name); a variant of it (`fitted_as` the device, so its fitted factors carry)
     with twice the HBM never lowers `memory`'s largest batch (hbm_capacity_max_batch), and one with twice the HBM
     bandwidth never makes a request (TTFT + (OSL - 1) x TPOT) slower nor the throughput per rank lower
     (hbm_bandwidth_latency; not TTFT alone: in the closed loop a faster decode brings prompts sooner).

    python benchmarks/metamorphic.py                    # default: 60 cases, seed 0 (about 2-3 minutes)
    python benchmarks/metamorphic.py --cases 30 --seed 3
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from click.testing import CliRunner  # noqa: E402

from solver import api  # noqa: E402
from solver.cli.main import main as cli  # noqa: E402
from solver.errors import InputError  # noqa: E402
from solver.launch.engine_flags import argv_problems, engine_flags  # noqa: E402
from solver.specs.framework import list_frameworks, load_framework  # noqa: E402
from solver.specs.hardware_catalog import list_hardware, load_hardware  # noqa: E402
from solver.specs.model_catalog import list_models, load_model  # noqa: E402
from solver.specs.parallel import ParallelConfig, model_knobs  # noqa: E402
from solver.specs.scenario import TIE_SCORE, Scenario  # noqa: E402

REL = 1e-9  # float noise between two evaluations of the same formulas
CARDS = (1, 2, 4, 8, 16)
SEQS = ((512, 128), (1024, 256), (2048, 256), (4096, 512), (8192, 1024))
KINDS = ("throughput", "latency", "balanced")
FIGURES = ("memory_per_rank_gb", "ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank", "concurrency")
TP_KNOBS = ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size")
WEIGHT_LADDER = ("bf16", "fp8", "nvfp4", "mxfp4")  # narrower down the list (both fp4 forms: one per device line)
KNOB_FLAGS = {"attn_tp_size": "--attn-tp", "dense_tp_size": "--dense-tp", "moe_tp_size": "--moe-tp",
              "embed_tp_size": "--embed-tp", "lmhead_tp_size": "--lmhead-tp", "o_proj_tp_size": "--oproj-tp",
              "cp_size": "--cp", "kvp_size": "--kvp", "attn_sp_size": "--attn-sp", "pp_size": "--pp",
              "redundant_experts": "--redundant-experts"}


@dataclass
class Relation:
    checked: int = 0
    violated: int = 0
    examples: list[str] = field(default_factory=list)


RELATIONS: dict[str, Relation] = {}


def record(name: str, ok: bool, why: str, *commands: str) -> None:
    r = RELATIONS.setdefault(name, Relation())
    r.checked += 1
    if not ok:
        r.violated += 1
        if len(r.examples) < 3:
            r.examples.append(why + "".join(f"\n      $ {c}" for c in commands))


def shell(argv: list[str]) -> str:
    return "shardplan " + " ".join(shlex.quote(a) for a in argv)


RUNNER = CliRunner(env={"COLUMNS": "400"})


def run(argv: list[str]) -> tuple[int, str]:
    """(exit code, stdout): notes and errors go to stderr, which an exit other than 0 appends."""
    res = RUNNER.invoke(cli, argv, catch_exceptions=True)
    code = 3 if res.exception is not None and not isinstance(res.exception, SystemExit) else res.exit_code
    record("R0 no_internal_error", code != 3, f"exit 3: {res.output.strip()[-300:]}", shell(argv))
    if code == 3:
        return 3, f"{res.output}\n{res.exception!r}"
    return code, res.stdout if code == 0 else res.output


def _knob_args(knobs: dict[str, int]) -> list[str]:
    return [a for k, v in knobs.items() if k in KNOB_FLAGS for a in (KNOB_FLAGS[k], str(v))]


def _kw_shell(fn: str, args: tuple, kw: dict[str, Any]) -> str:
    return f"python -c \"from solver import api; print(api.{fn}({', '.join(map(repr, args))}, " \
           f"{', '.join(f'{k}={v!r}' for k, v in kw.items())}).as_dict())\""


# ---------------------------------------------------------------- cases


@dataclass
class Case:
    model: str
    hardware: str
    framework: str
    cards: int
    kind: str
    isl: int
    osl: int
    kv_dtype: str | None = None
    mtp: int = 0
    prefix_hit: float = 0.0

    @property
    def options(self) -> list[str]:
        """The options every command of the case takes (solve, sweep, estimate): KV dtype, MTP, prefix hit."""
        return [*(["--kv-dtype", self.kv_dtype] if self.kv_dtype else []), *(["--mtp", str(self.mtp)] if self.mtp else []),
                *(["--prefix-hit", str(self.prefix_hit)] if self.prefix_hit else [])]

    @property
    def api_options(self) -> dict[str, Any]:
        return {"kv_dtype": self.kv_dtype, "mtp": self.mtp, "prefix_hit": self.prefix_hit}

    def solve_argv(self, cards: int | None = None, kind: str | None = None, extra: tuple[str, ...] = ()) -> list[str]:
        return ["solve", self.model, "--hardware", self.hardware, "--cards", str(cards or self.cards), "--scenario",
                kind or self.kind, "--isl", str(self.isl), "--osl", str(self.osl), "--framework", self.framework,
                "--time-limit", "5", *self.options, *extra]


def draw(rng: random.Random) -> Case:
    models = [aliases[0] for _, aliases in list_models()]
    hws = list_hardware()
    if True:
        hw = rng.choice(hws)
        fws = [f for f in list_frameworks() if load_framework(f).runs_on(load_hardware(hw).vendor)]
        isl, osl = rng.choice(SEQS)
        model = rng.choice(models)
        # a third of the cases with an fp8 KV cache, MTP (where the checkpoint has MTP layers), a prefix hit
        kv = "fp8" if rng.random() < 1 / 3 else None
        mtp = 1 if load_model(model).num_mtp_layers and rng.random() < 1 / 3 else 0
        hit = 0.5 if rng.random() < 1 / 3 else 0.0
        return Case(model, hw, rng.choice(fws), rng.choice(CARDS), rng.choice(KINDS), isl, osl, kv, mtp, hit)


# ---------------------------------------------------------------- R1 memory


def _mem_opts(case: Case) -> dict[str, Any]:
    return {k: v for k, v in (("kv_dtype", case.kv_dtype), ("mtp", case.mtp)) if v}


def _mem(case: Case, knobs: dict[str, int], batch: int, seq: int, **dt: str) -> Any | None:
    opts = {"kv_dtype": case.kv_dtype, "mtp": case.mtp, **dt}
    try:
        return api.memory(case.model, case.hardware, case.cards, batch, seq, framework=case.framework, **opts,
                          **knobs).report
    except InputError:
        return None


def r1_memory(case: Case, knobs: dict[str, int], batch: int, seq: int, rng: random.Random) -> None:
    base = _mem(case, knobs, batch, seq)
    if base is None:
        return
    model = load_model(case.model)
    stage = case.cards // knobs.get("pp_size", 1)
    for k in TP_KNOBS:
        if k not in model_knobs(model) or stage % (2 * knobs.get(k, 1)):
            continue
        up = {**knobs, k: 2 * knobs.get(k, 1)}
        big = _mem(case, up, batch, seq)
        if big is None:
            continue
        cmd = (_kw_shell("memory", (case.model, case.hardware, case.cards, batch, seq),
                         {"framework": case.framework, **_mem_opts(case), **knobs}),
               _kw_shell("memory", (case.model, case.hardware, case.cards, batch, seq),
                         {"framework": case.framework, **_mem_opts(case), **up}))
        record("R1 tp_weights", big.weights_total <= base.weights_total * (1 + REL),
               f"{k} x2: weights {base.weights_total / 1e9:.4f} -> {big.weights_total / 1e9:.4f} GB", *cmd)
        if k not in ("attn_tp_size", "moe_tp_size"):
            a, b = base.total - base.comm_buffer_bytes, big.total - big.comm_buffer_bytes
            record("R1 tp_memory", b <= a * (1 + REL), f"{k} x2: memory less buffers {a / 1e9:.4f} -> {b / 1e9:.4f} GB",
                   *cmd)
    for key, ladder in (("weight_dtype", WEIGHT_LADDER), ("kv_dtype", ("bf16", "fp8"))):
        reports = [(d, _mem(case, knobs, batch, seq, **{key: d})) for d in ladder]
        reports = [(d, r) for d, r in reports if r is not None]
        for (d1, r1), (d2, r2) in zip(reports, reports[1:]):
            record("R1 dtype", r2.total <= r1.total * (1 + REL),
                   f"{key} {d1} -> {d2}: memory {r1.total / 1e9:.4f} -> {r2.total / 1e9:.4f} GB",
                   _kw_shell("memory", (case.model, case.hardware, case.cards, batch, seq),
                             {"framework": case.framework, **_mem_opts(case), key: d1, **knobs}),
                   _kw_shell("memory", (case.model, case.hardware, case.cards, batch, seq),
                             {"framework": case.framework, **_mem_opts(case), key: d2, **knobs}))
    for b2, s2 in ((max(1, batch // 2), seq), (batch, max(1, seq // 2))):
        small = _mem(case, knobs, b2, s2)
        if small is not None:
            record("R1 shrink", small.total <= base.total * (1 + REL),
                   f"batch {batch} seq {seq} -> batch {b2} seq {s2}: memory {base.total / 1e9:.4f} -> "
                   f"{small.total / 1e9:.4f} GB",
                   _kw_shell("memory", (case.model, case.hardware, case.cards, batch, seq),
                             {"framework": case.framework, **_mem_opts(case), **knobs}),
                   _kw_shell("memory", (case.model, case.hardware, case.cards, b2, s2),
                             {"framework": case.framework, **_mem_opts(case), **knobs}))


def r1_max_batch(case: Case, knobs: dict[str, int], seq: int) -> None:
    """`memory`'s max_batch is the largest batch that fits: it fits, one more does not (where it is below the
    command's bound)."""
    try:
        res = api.memory(case.model, case.hardware, case.cards, 1, seq, framework=case.framework, **_mem_opts(case),
                         **knobs)
    except InputError:
        return
    top = res.max_batch
    if not top:
        return
    at, past = _mem(case, knobs, top, seq), _mem(case, knobs, top + 1, seq)
    if at is None or past is None:
        return
    record("R1 max_batch_is_the_edge", at.feasible and not past.feasible,
           f"max_batch {top}: fits {at.feasible}, {top + 1} fits {past.feasible}",
           _kw_shell("memory", (case.model, case.hardware, case.cards, top, seq),
                     {"framework": case.framework, **_mem_opts(case), **knobs}),
           _kw_shell("memory", (case.model, case.hardware, case.cards, top + 1, seq),
                     {"framework": case.framework, **_mem_opts(case), **knobs}))


# ---------------------------------------------------------------- R2 figures of one config


def _est(case: Case, knobs: dict[str, int], isl: int, osl: int, conc: int) -> dict | None:
    try:
        return api.estimate(case.model, case.hardware, case.cards, isl=isl, osl=osl, concurrency=conc,
                            framework=case.framework, **case.api_options, **knobs).as_dict()
    except InputError:
        return None


def _est_cmd(case: Case, knobs: dict[str, int], isl: int, osl: int, conc: int) -> str:
    return shell(["estimate", case.model, "--hardware", case.hardware, "--cards", str(case.cards), *_knob_args(knobs),
                  "--isl", str(isl), "--osl", str(osl), "--concurrency", str(conc), "--framework", case.framework,
                  *case.options, "--format", "json"])


def r2_figures(case: Case, knobs: dict[str, int], conc: int) -> None:
    base = _est(case, knobs, case.isl, case.osl, conc)
    longer = _est(case, knobs, 2 * case.isl, case.osl, conc)
    more = _est(case, knobs, case.isl, case.osl, 2 * conc)
    c0 = _est_cmd(case, knobs, case.isl, case.osl, conc)
    if base and longer:
        c1 = _est_cmd(case, knobs, 2 * case.isl, case.osl, conc)
        record("R2 ttft_isl", longer["ttft_ms"] >= base["ttft_ms"] * (1 - REL),
               f"ISL x2: TTFT {base['ttft_ms']:.4f} -> {longer['ttft_ms']:.4f} ms", c0, c1)
        if load_model(case.model).keys_monotone:  # chunked attention restarts its keys at each chunk
            record("R2 tpot_isl", longer["tpot_ms"] >= base["tpot_ms"] * (1 - REL),
                   f"ISL x2: TPOT {base['tpot_ms']:.4f} -> {longer['tpot_ms']:.4f} ms", c0, c1)
    if base and more:
        c2 = _est_cmd(case, knobs, case.isl, case.osl, 2 * conc)
        record("R2 tpot_conc", more["tpot_ms"] >= base["tpot_ms"] * (1 - REL),
               f"concurrency x2: TPOT {base['tpot_ms']:.4f} -> {more['tpot_ms']:.4f} ms", c0, c2)
        if base["feasible"] and more["feasible"]:
            a, b = base["output_tokens_per_s_per_rank"], more["output_tokens_per_s_per_rank"]
            record("R2 tput_conc", b >= a * (1 - REL), f"concurrency x2: tok/s/rank {a:.3f} -> {b:.3f}", c0, c2)


# ---------------------------------------------------------------- R3 one answer, four commands

_NUM = re.compile(r"^-?[\d,]*\.?\d+$")


def _table_row(out: str) -> dict[str, str] | None:
    """Candidate 1's cells of solve's table, by header."""
    rows = [[c.strip() for c in line.split("┃" if "┃" in line else "│")[1:-1]] for line in out.splitlines()
            if line.startswith(("┃", "│"))]
    head = next((r for r in rows if r and r[0] == "#"), None)
    first = next((r for r in rows if r and r[0] == "1"), None)
    return dict(zip(head, first)) if head and first else None


def _same_digits(table: str, value: float) -> bool:
    """`value` printed to the table cell's own digits gives the cell."""
    text = table.replace(",", "")
    digits = len(text.split(".")[1]) if "." in text else 0
    return abs(float(text) - value) <= 0.5 * 10 ** -digits + 1e-9 * abs(value)


def _close(a: float, b: float, printed: float) -> bool:
    """Equal to the digits solve prints `printed` with (the estimate's figures come unrounded)."""
    s = repr(float(printed))
    digits = len(s.split(".")[1]) if "." in s else 0
    return abs(a - b) <= 0.5 * 10 ** -digits + 1e-9 * abs(b)


def r3_agree(case: Case, doc: dict, table_out: str, workdir: Path) -> None:
    c1 = doc["candidates"][0]
    est, pc = c1["estimation"], c1["parallel_config"]
    argv = case.solve_argv()
    # the figures' definitions: total = per rank x ranks; per user = 1 / TPOT; fits = within the limit
    bad = []
    # each figure printed rounded: per rank to 3 decimals (x ranks), the total to 2
    if abs(est["output_tokens_per_s_per_rank"] * case.cards - est["output_tokens_per_s"]) > \
            5e-4 * case.cards + 5e-3 + 1e-9 * est["output_tokens_per_s"]:
        bad.append(f"tok/s {est['output_tokens_per_s']} vs {est['output_tokens_per_s_per_rank']} x {case.cards}")
    if abs(est["tokens_per_s_per_user"] - 1e3 / est["tpot_ms"]) > 1e-3 * est["tokens_per_s_per_user"]:
        bad.append(f"tok/s/user {est['tokens_per_s_per_user']} vs 1000 / TPOT {1e3 / est['tpot_ms']:.4f}")
    if est["memory_feasible"] != (est["memory_per_rank_gb"] <= est["memory_limit_gb"] + 1e-3):
        bad.append(f"fits {est['memory_feasible']} at {est['memory_per_rank_gb']} GB of {est['memory_limit_gb']}")
    record("R3 figures_by_definition", not bad, "; ".join(bad), shell([*argv, "--format", "json"]))
    row = _table_row(table_out)
    if row is not None:
        pairs = (("mem GB", "memory_per_rank_gb"), ("TTFT ms", "ttft_ms"), ("TPOT ms", "tpot_ms"),
                 ("tok/s/rank", "output_tokens_per_s_per_rank"), ("conc.", "concurrency"))
        bad = [f"{h} {row[h]} vs {est[k]}" for h, k in pairs if h in row and _NUM.match(row[h].replace(",", ""))
               and not _same_digits(row[h], float(est[k]))]
        record("R3 json=table", not bad, "; ".join(bad), shell(argv), shell([*argv, "--format", "json"]))
    # sweep at the same W and scenario
    sw = ["sweep", case.model, "--hardware", case.hardware, "--cards", str(case.cards), "--scenario", case.kind,
          "--isl", str(case.isl), "--osl", str(case.osl), "--framework", case.framework, "--time-limit", "5",
          *case.options]
    code, out = run(sw)
    if code == 0:
        rows = [r for r in csv.DictReader(io.StringIO(out[out.index("hardware,"):])) if r["candidate"] == "1"]
        if rows:
            r = rows[0]
            bad = [f"{k} {r[k]} vs {est[k]}" for k in FIGURES if r[k] == "" or float(r[k]) != float(est[k])]
            bad += [f"{k} {r[k]} vs {v}" for k, v in pc.items() if k in r and r[k] != str(v)]
            record("R3 sweep=solve", not bad, "; ".join(bad), shell(sw), shell([*argv, "--format", "json"]))
        else:
            record("R3 sweep=solve", False, "sweep marks no candidate 1", shell(sw), shell([*argv, "--format", "json"]))
        both = [*sw]
        both[both.index("--cards") + 1] = f"{case.cards},{2 * case.cards}"
        code_b, out_b = run(both)
        if code_b == 0:
            alone = [r for r in csv.DictReader(io.StringIO(out[out.index("hardware,"):]))]
            together = [r for r in csv.DictReader(io.StringIO(out_b[out_b.index("hardware,"):]))
                        if r["cards"] == str(case.cards)]
            record("R3 sweep_rows_independent", alone == together,
                   f"{len(alone)} rows alone, {len(together)} beside {2 * case.cards} cards"
                   + next((f"; row {i}: {a} vs {b}" for i, (a, b) in enumerate(zip(alone, together)) if a != b), ""),
                   shell(sw), shell(both))
        code_j, out_j = run([*sw, "--format", "json"])
        if code_j == 0:
            recs = json.loads(out_j[out_j.index("["):])
            table = list(csv.DictReader(io.StringIO(out[out.index("hardware,"):])))
            bad = [f"row {i} {k}: csv {r[k]!r} vs json {j.get(k)!r}" for i, (r, j) in enumerate(zip(table, recs))
                   for k in FIGURES if r[k] != "" and (j.get(k) is None or float(r[k]) != float(j[k]))]
            if len(table) != len(recs):
                bad.insert(0, f"{len(table)} csv rows vs {len(recs)} json records")
            record("R3 sweep_json=csv", not bad, "; ".join(bad[:3]), shell(sw), shell([*sw, "--format", "json"]))
    # check of the yaml's candidate a
    code, out = run([*argv, "--format", "yaml"])
    if code == 0:
        path = workdir / f"{case.model}-{case.hardware}-{case.cards}.yaml"
        path.write_text(out)
        ck = ["check", str(path), "--candidate", "a", "--format", "json"]
        code, out = run(ck)
        try:
            got = json.loads(out[out.index("{"):])
        except ValueError:
            got = None
        ok = code == 0 and got is not None and got["valid"]
        bad = [] if ok else [f"exit {code}: {out.strip()[-300:]}"]
        if ok:
            bad = [f"{k} {got['estimation'].get(k)} vs {v}" for k, v in est.items() if got["estimation"].get(k) != v]
        record("R3 check=solve", not bad, "; ".join(bad),
               f"{shell([*argv, '--format', 'yaml'])} > {path.name}", shell(ck))
        la = ["launch", str(path), "--candidate", "a", "--format", "json"]
        code, out = run(la)
        if code == 0 and c1.get("launch"):
            got = json.loads(out[out.index("{"):])
            want = c1["launch"]
            bad = [f"node {a.get('node_rank')}: {a.get('argv')} vs {b.get('argv')}"
                   for a, b in zip(got.get("nodes", []), want["nodes"]) if a.get("argv") != b.get("argv")
                   or a.get("env") != b.get("env")]
            if len(got.get("nodes", [])) != len(want["nodes"]) or got.get("files") != want.get("files"):
                bad.insert(0, f"nodes {len(got.get('nodes', []))} vs {len(want['nodes'])}, files "
                              f"{'equal' if got.get('files') == want.get('files') else 'differ'}")
            record("R5 launch_file=solve", not bad, "; ".join(bad[:2]),
                   f"{shell([*argv, '--format', 'yaml'])} > {path.name}", shell(la), shell([*argv, "--format", "json"]))
    # estimate with the knobs
    knobs = {k: v for k, v in pc.items() if k not in ("attn_dp_size", "moe_ep_size")}
    conc = int(est["concurrency"])
    e = _est(case, knobs, case.isl, case.osl, conc)
    if e is not None:
        bad = [f"{k} {e[k]} vs {est[k]}" for k in FIGURES[:-1] if not _close(e[k], est[k], est[k])]
        record("R3 estimate=solve", not bad, "; ".join(bad), _est_cmd(case, knobs, case.isl, case.osl, conc),
               shell([*argv, "--format", "json"]))


# ---------------------------------------------------------------- R4 SLAs and size


def _solve_json(argv: list[str]) -> tuple[int, dict | None, str]:
    code, out = run([*argv, "--format", "json"])
    if code != 0:
        return code, None, out
    return code, json.loads(out[out.index("{"):]), out


def _ident(c: dict) -> tuple:
    return tuple(sorted(c["parallel_config"].items())), c["estimation"]["concurrency"]


def _score(case: Case, est: dict) -> float:
    """The scenario's score of a candidate's figures, lower is better (Scenario.score against fixed references:
    a difference of two scores does not depend on them)."""
    sc = Scenario(kind=case.kind, isl=case.isl, osl=case.osl)
    return sc.score(sc.request_latency(est["ttft_ms"] / 1e3, est["tpot_ms"] / 1e3),
                    1.0 / est["output_tokens_per_s_per_rank"], 1.0, 1.0)


def r4_slas(case: Case, doc: dict) -> None:
    est = doc["candidates"][0]["estimation"]
    argv = case.solve_argv()
    sla = ("--ttft-ms", f"{est['ttft_ms'] * 1.5:.3f}", "--tpot-ms", f"{est['tpot_ms'] * 1.5:.4f}")
    code, met, out = _solve_json(case.solve_argv(extra=sla))
    if code in (0, 1):
        same = met is not None and _ident(met["candidates"][0]) == _ident(doc["candidates"][0])
        if not same and met is not None and met["candidates"][0]["estimation"].get("sla_edge_from") is not None:
            new = met["candidates"][0]["estimation"]
            # the edge's point is one the plan without SLAs never visits: it may beat the old candidate 1, and
            # must not lose to it beyond the tie band (the old one meets the SLA, so the planner had it)
            gain = _score(case, est) - _score(case, new)
            record("R4 met_sla_moves_to_edge", gain >= -TIE_SCORE,
                   f"candidate 1 moves to the SLA edge {new['concurrency']} (from {new['sla_edge_from']}): "
                   f"score {gain:+.4f}, tok/s/rank {est['output_tokens_per_s_per_rank']} -> "
                   f"{new['output_tokens_per_s_per_rank']}",
                   shell([*argv, "--format", "json"]), shell([*case.solve_argv(extra=sla), "--format", "json"]))
            return
        if not same and met is not None:
            # candidates within the tie band are ordered by closeness to a verified deployment, among the
            # candidates of every scenario kind where SLA edges are planned (plan.solve): a swap inside the band is
            # that order, one past it a worse answer
            new = met["candidates"][0]["estimation"]
            gain = _score(case, est) - _score(case, new)
            record("R4 met_sla_first_within_tie", gain >= -TIE_SCORE,
                   f"candidate 1 {_ident(doc['candidates'][0])} -> {_ident(met['candidates'][0])}: score {gain:+.4f}",
                   shell([*argv, "--format", "json"]), shell([*case.solve_argv(extra=sla), "--format", "json"]))
            return
        record("R4 met_sla_keeps_first", same,
               "candidate 1 " + (f"{_ident(doc['candidates'][0])} -> {_ident(met['candidates'][0])}" if met else
                                 f"-> infeasible: {out.strip()[-200:]}"),
               shell([*argv, "--format", "json"]), shell([*case.solve_argv(extra=sla), "--format", "json"]))
    tight = ("--ttft-ms", f"{est['ttft_ms'] * 0.9:.3f}", "--tpot-ms", f"{est['tpot_ms'] * 0.9:.4f}")
    code_t, _, _ = _solve_json(case.solve_argv(extra=tight))
    if code_t == 0:
        loose = ("--ttft-ms", f"{est['ttft_ms'] * 1.2:.3f}", "--tpot-ms", f"{est['tpot_ms'] * 1.2:.4f}")
        code_l, _, out = _solve_json(case.solve_argv(extra=loose))
        record("R4 looser_sla_stays_feasible", code_l == 0, f"exit {code_l}: {out.strip()[-200:]}",
               shell(case.solve_argv(extra=tight)), shell(case.solve_argv(extra=loose)))


def r4_more_cards(case: Case, feasible: bool) -> None:
    if not feasible or 2 * case.cards > 1024:
        return
    argv = case.solve_argv(cards=2 * case.cards, kind="throughput")
    code, out = run(argv)
    ok = code == 0 or (code == 1 and re.search(r"node|divid|divisib", out) is not None)
    record("R4 more_cards_stays_feasible", ok, f"exit {code}: {out.strip()[-300:]}", shell(case.solve_argv()),
           shell(argv))


# ---------------------------------------------------------------- R5 launch


def r5_launch(case: Case, doc: dict) -> None:
    from test_engine_roundtrip import _expected, parse_launch

    c1 = doc["candidates"][0]
    launch = c1.get("launch")
    argv = case.solve_argv()
    if not launch:
        return
    engine = launch["engine"]
    if engine in engine_flags():
        probs = [p for node in launch["nodes"] for p in argv_problems(engine, node["argv"])]
        record("R5 argv_parses", not probs, "; ".join(probs[:3]), shell([*argv, "--format", "json"]))
    model = load_model(case.model)
    knobs = {k: v for k, v in c1["parallel_config"].items() if k not in ("attn_dp_size", "moe_ep_size")}
    pc = ParallelConfig(world_size=case.cards, **knobs)
    want = _expected(pc, model, load_framework(case.framework).kvp_splits_attention_weights)
    try:
        got = parse_launch(launch, model)
    except (AssertionError, KeyError, ValueError) as exc:
        record("R5 launch_reads_back", False, f"unreadable launch: {exc!r}", shell([*argv, "--format", "json"]))
        return
    got = {k: got.get(k, 0 if k == "redundant_experts" else 1) for k in want}
    bad = [f"{k} {got[k]} vs {want[k]}" for k in want if got[k] != want[k]]
    record("R5 launch_reads_back", not bad, "; ".join(bad), shell([*argv, "--format", "json"]))


# ---------------------------------------------------------------- R6 check --command


def _command_check(case: Case, text: str) -> tuple[list[str], int, dict | None, str]:
    ck = ["check", "--command", text, "--hardware", case.hardware, "--model", case.model, "--framework",
          case.framework, "--isl", str(case.isl), "--osl", str(case.osl),
          *(["--kv-dtype", case.kv_dtype] if case.kv_dtype else []), *(["--mtp", str(case.mtp)] if case.mtp else []),
          "--format", "json"]
    code, out = run(ck)
    try:
        return ck, code, json.loads(out[out.index("{"):]) if code in (0, 1) else None, out
    except ValueError:
        return ck, code, None, out


def _respelt(argv: list[str], site: list[str], rng: random.Random) -> list[str]:
    """The command with its --flag groups in another order, every value flag as --flag=value, and the engine's
    site flags it does not give appended (an address, a rank 0, a port)."""
    first = next((i for i, t in enumerate(argv) if t.startswith("--")), len(argv))
    groups: list[list[str]] = []
    for t in argv[first:]:
        if t.startswith("--"):
            groups.append([t])
        else:
            groups[-1].append(t)
    if any(len(g) > 2 for g in groups):  # a flag of several values: left as written
        return argv
    rng.shuffle(groups)
    spelt = [f"{g[0]}={g[1]}" if len(g) == 2 else g[0] for g in groups]
    given = {t.partition("=")[0] for t in argv}
    spelt += [a for flag in site if flag.startswith("--") and flag not in given and flag != "--headless"
              for a in (flag, "10.0.0.9" if "addr" in flag or flag == "--host" else "0" if "rank" in flag
                        else "18123")]
    return [*argv[:first], *spelt]


def r6_command(case: Case, doc: dict) -> None:
    """check --command of candidate 1's launch as shell text (solve --format launch's) reads back candidate 1's
    knobs and, without a prefix hit (check takes none), its figures (command_roundtrip); the same command with its
    flags reordered, spelt --flag=value and the site's flags added reads the same (command_respelt)."""
    from solver.launch.shell import render_shell

    from solver.launch.command_engine import program

    c1 = doc["candidates"][0]
    launch = c1.get("launch")
    fw = load_framework(case.framework)
    if not launch or "error" in launch or not program(fw):  # no engine command (generic's file, a recipe script)
        return
    text = render_shell(launch, "candidate 1")
    ck, code, got, out = _command_check(case, text)
    want = {k: v for k, v in c1["parallel_config"].items() if k not in ("attn_dp_size", "moe_ep_size")}
    argv = [*case.solve_argv(), "--format", "json"]
    if got is None:
        record("R6 command_roundtrip", False, f"exit {code}: {out.strip()[-300:]}", shell(ck), shell(argv))
        return
    read = got["command"]["parallel_config"]
    bad = [f"{k} {read.get(k)} vs {v}" for k, v in want.items() if read.get(k, v) != v]
    if not case.prefix_hit:
        bad += [f"{k} {got['estimation'].get(k)} vs {c1['estimation'][k]}" for k in FIGURES
                if got["estimation"].get(k) != c1["estimation"][k]]
    record("R6 command_roundtrip", not bad, "; ".join(bad[:4]), shell(ck), shell(argv))
    site = list(fw.launch.site_flags) if fw.launch else []
    rng = random.Random(repr(case))  # its own stream: the seed's later cases stay as they were drawn
    head = launch["nodes"][0]
    other = render_shell({**launch, "nodes": [{**head, "argv": _respelt(head["argv"], rng.sample(
        site, min(2, len(site))), rng)}]}, "candidate 1, respelt")
    ck2, code2, got2, out2 = _command_check(case, other)
    same = got2 is not None and got2["command"]["parallel_config"] == got["command"]["parallel_config"] \
        and got2["estimation"] == got["estimation"]
    record("R6 command_respelt", same, f"exit {code2} against {code}: {out2.strip()[-300:]}" if got2 is None else
           "another reading: " + "; ".join(f"{k} {got2['estimation'].get(k)} vs {v}" for k, v in
                                           got["estimation"].items() if got2["estimation"].get(k) != v)[:300],
           shell(ck), shell(ck2))


# ---------------------------------------------------------------- R7 the device as a file


def _device_file(case: Case, workdir: Path, tag: str = "", **changes: float) -> str:
    """The catalog device's YAML written to `workdir` as a user's file: as shipped (no tag), or renamed
    <device>_<tag> with `changes` applied and `fitted_as` the catalog device (its fitted factors carried over)."""
    import yaml

    from solver.catalog import catalog_dir

    data = yaml.safe_load((catalog_dir("hardware") / f"{case.hardware}.yaml").read_text())
    if tag:
        data.update(name=f"{case.hardware}_{tag}", fitted_as=case.hardware, **changes)
    path = workdir / f"{case.hardware}{'_' + tag if tag else ''}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _est_on(case: Case, hardware: str, knobs: dict[str, int], conc: int) -> dict | None:
    try:
        return api.estimate(case.model, hardware, case.cards, isl=case.isl, osl=case.osl, concurrency=conc,
                            framework=case.framework, **case.api_options, **knobs).as_dict()
    except InputError:
        return None


def r7_device(case: Case, knobs: dict[str, int], conc: int, workdir: Path) -> None:
    """The catalog device given as a file by path answers as its name does (device_file=name); with twice the HBM
    (a variant carrying its factors) `memory`'s largest batch does not fall (hbm_capacity_max_batch); with twice the
    HBM bandwidth a request (TTFT + (OSL - 1) x TPOT) is not slower nor the throughput per rank lower
    (hbm_bandwidth_latency)."""
    seq = case.isl + case.osl
    name_est = _est_on(case, case.hardware, knobs, conc)
    if name_est is None:
        return
    same = _device_file(case, workdir)
    file_est = _est_on(case, same, knobs, conc)
    c0 = _est_cmd(case, knobs, case.isl, case.osl, conc)
    c_file = c0.replace(f"--hardware {case.hardware}", f"--hardware {same}")
    drop = ("hardware", "notes")  # the device's spelling, and the notes that quote it
    bad = ["refused"] if file_est is None else [
        f"{k} {file_est[k]!r:.80} vs {name_est[k]!r:.80}" for k in name_est if k not in drop
        and file_est.get(k) != name_est[k]]
    record("R7 device_file=name", not bad, "; ".join(bad[:3]), c0, c_file)
    hw = load_hardware(case.hardware)
    big = _device_file(case, workdir, "2xhbm", memory_bytes=2 * hw.memory_bytes)
    try:
        one = api.memory(case.model, case.hardware, case.cards, 1, seq, framework=case.framework, **_mem_opts(case),
                         **knobs).max_batch
        two = api.memory(case.model, big, case.cards, 1, seq, framework=case.framework, **_mem_opts(case),
                         **knobs).max_batch
    except InputError:
        one = two = None
    if one is not None and two is not None:
        record("R7 hbm_capacity_max_batch", two >= one, f"HBM x2: max batch {one} -> {two}",
               _kw_shell("memory", (case.model, case.hardware, case.cards, 1, seq),
                         {"framework": case.framework, **_mem_opts(case), **knobs}),
               _kw_shell("memory", (case.model, big, case.cards, 1, seq),
                         {"framework": case.framework, **_mem_opts(case), **knobs}))
    fast = _device_file(case, workdir, "2xbw", hbm_bandwidth_Bps=2 * hw.hbm_bandwidth_Bps)
    fast_est = _est_on(case, fast, knobs, conc)
    if fast_est is not None:
        # not TTFT alone: at a fixed concurrency a faster decode returns each user sooner, so prompts arrive more
        # often and one may wait longer behind the others' (closed loop); the request as a whole is not slower
        def latency(e: dict) -> float:
            return e["ttft_ms"] + (case.osl - 1) * e["tpot_ms"]

        bad = [f"request latency {latency(name_est):.4f} -> {latency(fast_est):.4f} ms"] \
            if latency(fast_est) > latency(name_est) * (1 + REL) else []
        a, b = name_est["output_tokens_per_s_per_rank"], fast_est["output_tokens_per_s_per_rank"]
        bad += [f"tok/s/rank {a:.3f} -> {b:.3f}"] if b < a * (1 - REL) else []
        record("R7 hbm_bandwidth_latency", not bad, "HBM bandwidth x2: " + "; ".join(bad), c0,
               c0.replace(f"--hardware {case.hardware}", f"--hardware {fast}"))


# ---------------------------------------------------------------- driver


def one_case(case: Case, rng: random.Random, workdir: Path) -> str:
    argv = case.solve_argv()
    code, doc, _ = _solve_json(argv)
    if code == 2:
        return "refused"
    if code == 0 and doc and doc.get("candidates"):
        _, table = run(argv)
        r3_agree(case, doc, table, workdir)
        r4_slas(case, doc)
        r5_launch(case, doc)
        r6_command(case, doc)
        c1 = doc["candidates"][0]
        knobs = {k: v for k, v in c1["parallel_config"].items() if k not in ("attn_dp_size", "moe_ep_size")}
        conc = int(c1["estimation"]["concurrency"])
        r1_memory(case, knobs, max(1, conc), case.isl + case.osl, rng)
        r1_max_batch(case, knobs, case.isl + case.osl)
        r2_figures(case, knobs, max(1, conc // 2))
        r7_device(case, knobs, max(1, conc), workdir)
    r4_more_cards(case, code == 0)
    return "solved" if code == 0 else f"exit {code}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    outcomes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="shardplan-meta-") as tmp:
        for i in range(args.cases):
            case = draw(rng)
            t = time.perf_counter()
            what = one_case(case, rng, Path(tmp))
            outcomes[what] = outcomes.get(what, 0) + 1
            print(f"[{i + 1}/{args.cases}] {case.model} {case.hardware} x{case.cards} {case.framework} {case.kind} "
                  f"{case.isl}/{case.osl} {' '.join(case.options)}: {what} ({time.perf_counter() - t:.1f} s)",
                  flush=True)
    print(f"\n{args.cases} cases, seed {args.seed}, {time.perf_counter() - t0:.0f} s; "
          + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    print(f"{'relation':32} {'checked':>8} {'violated':>9}")
    for name in sorted(RELATIONS):
        r = RELATIONS[name]
        print(f"{name:32} {r.checked:8d} {r.violated:9d}")
    for name in sorted(RELATIONS):
        for ex in RELATIONS[name].examples:
            print(f"\n{name}: {ex}")


if __name__ == "__main__":
    main()
