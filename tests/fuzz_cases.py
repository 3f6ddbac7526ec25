"""The fuzz generator behind tests/test_fuzz_cli.py (a fast subset) and benchmarks/fuzz.py (the long run).

A case is one command line as a user would type it, over every subcommand, with option values drawn from pools
of good and bad values and with files (hardware, framework, model configs, deployment and profiled configs,
traces, CSVs, output targets) built here and mutated the way a user's mistakes mutate them. Each value and
file carries the generator's own label, and a case's label follows from them:

- "valid": every value is good; the command must exit 0 or 1 (1 = infeasible or, for `check`, a hard
  constraint the config breaks).
- "invalid": at least one value is bad by the rules below; the command must exit 2 with one error line.
- "any": the generator cannot tell (a truncated file may still parse); only no traceback and no hang count.

Outcomes: ok, traceback (exit 3, a Python traceback, or an exception out of the CLI), hang (over the time-out),
accepted-invalid (exit 0 on an invalid case), rejected-valid (exit 2 on a valid case), exit1-invalid.
Cases whose only bad part is a mutated model config carry family "model-config": model-field parsing belongs
to the layers work, so their failures are reported under that name.
"""
from __future__ import annotations

import copy
import gzip
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]

SUBCOMMANDS = ("models", "hardware", "inspect", "memory", "estimate", "solve", "check", "launch", "sweep", "recommend",
               "calibrate")


@dataclass(frozen=True)
class Case:
    cmd: str
    argv: tuple[str, ...]
    label: str  # valid | invalid | any
    family: str = "options"  # options | model-config | file | output
    why: str = ""  # the bad value, for the report
    slow: bool = False  # a valid solve/sweep/recommend: kept out of the fast subset
    unmet: bool = False  # valid input no plan meets: exit 1, naming what binds and what would fit


@dataclass
class Outcome:
    case: Case
    exit_code: int | None
    stderr_tail: str
    seconds: float
    kind: str = field(default="")


# ------------------------------------------------------------------------------------------------ outcomes


def classify(case: Case, exit_code: int | None, output: str, exception: BaseException | None = None,
             hung: bool = False) -> str:
    if hung:
        return "hang"
    if exit_code == 3 or "Traceback (most recent call last)" in output or exception is not None:
        return "traceback"
    if exit_code not in (0, 1, 2):
        return f"exit{exit_code}"
    if exit_code == 2 and not one_error_line(output):
        return "unclear-refusal"
    if case.unmet and exit_code == 0:
        return "met-unmeetable"
    if case.unmet and exit_code == 1 and not explains_infeasible(output):
        return "unexplained-infeasible"
    if case.label == "invalid":
        return {0: "accepted-invalid", 1: "exit1-invalid", 2: "ok"}[exit_code]
    if case.label == "valid" and exit_code == 2:
        return "rejected-valid"
    return "ok"


FAILURES = ("traceback", "hang", "accepted-invalid", "unclear-refusal", "met-unmeetable", "unexplained-infeasible")
# the issue's "Must show", bad input refused in more or less than one "error: WHAT: problem" line, and a request no
# plan meets answered as met or without saying which constraint binds and what would fit


def explains_infeasible(output: str) -> bool:
    """An infeasible answer's error line names the binding constraint ("X binds" / "binding: X") and a remedy
    ("what would fit: ...")."""
    errors = [ln for ln in output.splitlines() if ln.startswith("error:")]
    return len(errors) == 1 and "bind" in errors[0] and "what would fit" in errors[0]


def one_error_line(output: str) -> bool:
    """Bad input's refusal: exactly one line "error: <field or file>: <problem>"."""
    errors = [ln for ln in output.splitlines() if ln.startswith("error:")]
    return len(errors) == 1 and ": " in errors[0].removeprefix("error: ")


# ------------------------------------------------------------------------------------------------ fixtures


@dataclass
class Fixtures:
    folder: Path
    hardware: list[tuple[str, str, str]]  # (path, label, why)
    frameworks: list[tuple[str, str, str]]
    models: list[tuple[str, str, str]]
    deployments: list[tuple[str, str, str]]
    traces: list[tuple[str, str, str]]
    csvs: list[tuple[str, str, str]]
    configs: list[tuple[str, str, str]]
    solve_files: list[tuple[str, str, str]]  # solve --format yaml output, edited by hand (check/launch --candidate a)
    outs: list[tuple[str, str, str]]  # table targets (.csv/.json)
    csv_outs: list[tuple[str, str, str]]
    topologies: list[tuple[str, str, str]] = field(default_factory=list)  # device files of other node shapes
    config_dirs: list[tuple[str, str, str]] = field(default_factory=list)  # a model as a config.json path / folder
    families: list[tuple[str, str, str]] = field(default_factory=list)  # quantized and looped configs, and variants
    no_layers: list[tuple[str, str, str]] = field(default_factory=list)  # catalog configs without num_hidden_layers
    engine_solves: list[tuple[str, str, str]] | None = None  # solve's yaml per engine (path, engine, why), lazily
    afd_files: list[tuple[str, str, str]] = field(default_factory=list)  # lc-afd as a deployment file, edited
    multinode_files: list[tuple[str, str, str, str]] = field(default_factory=list)  # (path, engine, label, why)
    vllm_wide_solves: list[tuple[str, str]] | None = None  # solve --framework vllm past a node (path, why), lazily
    launch_scripts: list[tuple[str, str, str]] | None = None  # solve --format launch (text, model, hardware), lazily
    device_texts: list[tuple[str, str, str]] | None = None  # a user's device file edited by hand (stop 48), lazily
    factors_files: list[tuple[str, str, str]] | None = None  # --factors files, written and edited (stop 48), lazily
    fit_csvs: list[tuple[str, str, str]] | None = None  # calibrate --from-csv ROWS --fit rows, edited (stop 48), lazily
    quant_folders: list[tuple[str, str, str]] | None = None  # a folder with hf_quant_config.json (stop 50), lazily


def _dump_yaml(path: Path, data: Any) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _set(data: dict, dotted: str, value: Any) -> dict:
    data = copy.deepcopy(data)
    node = data
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node[part]
    if value is _DELETE:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
    return data


_DELETE = object()
_BAD_NUMBERS = [float("inf"), float("nan"), -1, 0, True, "fast", 1e300, None, [1, 2]]


def _mutations(base: dict, fields: list[str], bad: list[Any]) -> list[tuple[dict, str]]:
    out = []
    for f in fields:
        for v in bad:
            out.append((_set(base, f, v), f"{f}={v!r}"))
        out.append((_set(base, f, _DELETE), f"{f} missing"))
    return out


def _write_bad_texts(folder: Path, stem: str, text: str, suffix: str) -> list[tuple[str, str, str]]:
    """Encoding, nesting, truncation and size mutations of any JSON/YAML file."""
    out = []
    p = folder / f"{stem}-latin1{suffix}"
    p.write_bytes(text.encode("utf-8")[:40] + b"\xff\xfe\xe9" + text.encode("utf-8")[40:])
    out.append((str(p), "invalid", "not UTF-8"))
    p = folder / f"{stem}-deep{suffix}"
    p.write_text("[" * 50_000 + "]" * 50_000)
    out.append((str(p), "invalid", "nested 50,000 deep"))
    p = folder / f"{stem}-deepmap{suffix}"
    p.write_text("{\"a\": " * 3000 + "1" + "}" * 3000)
    out.append((str(p), "invalid", "mapping nested 3,000 deep"))
    p = folder / f"{stem}-empty{suffix}"
    p.write_text("")
    out.append((str(p), "invalid", "empty file"))
    p = folder / f"{stem}-list{suffix}"
    p.write_text("[1, 2, 3]\n")
    out.append((str(p), "invalid", "a list, not a mapping"))
    for cut in (0.3, 0.7):
        p = folder / f"{stem}-cut{int(cut * 100)}{suffix}"
        p.write_text(text[: int(len(text) * cut)])
        out.append((str(p), "any", f"truncated at {cut:.0%}"))
    p = folder / f"{stem}-gz{suffix}"
    p.write_bytes(gzip.compress(text.encode())[:30])
    out.append((str(p), "invalid", "corrupt gzip"))
    return out


def build_fixtures(folder: Path) -> Fixtures:
    folder.mkdir(parents=True, exist_ok=True)
    # ---- hardware
    hw_text = (REPO / "hardware" / "h100_sxm.yaml").read_text()
    hw = yaml.safe_load(hw_text)
    hardware = [(_dump_yaml(folder / "hw-ok.yaml", hw), "valid", "")]
    numeric = ["memory_bytes", "hbm_bandwidth_Bps", "peak_flops.bf16", "ranks_per_node", "reserved_bytes",
               "tiers.intra_node.bandwidth_Bps", "tiers.inter_node.latency_s", "efficiency.gemm",
               "efficiency.kernel_overhead_s"]
    for i, (data, why) in enumerate(_mutations(hw, numeric, _BAD_NUMBERS)):
        if why.startswith("reserved_bytes=0"):
            continue  # zero reserve is allowed
        if why == "efficiency.kernel_overhead_s=0" or why == "tiers.inter_node.latency_s=0":
            continue
        hardware.append((_dump_yaml(folder / f"hw-bad{i}.yaml", data), "invalid", why))
    hardware.append((_dump_yaml(folder / "hw-nobf16.yaml", _set(hw, "peak_flops", {"fp8": 1.9e15})), "invalid",
                     "no bf16 peak"))
    hardware.append((_dump_yaml(folder / "hw-extra.yaml", _set(hw, "colour", "blue")), "invalid", "unknown key"))
    hardware += _write_bad_texts(folder, "hw", hw_text, ".yaml")
    # ---- frameworks
    fw = yaml.safe_load((REPO / "solver" / "frameworks" / "generic.yaml").read_text())
    frameworks = [(_dump_yaml(folder / "fw-ok.yaml", fw), "valid", "")]
    for i, (data, why) in enumerate(_mutations(fw, ["efficiency.gemm", "efficiency.hbm", "max_mtp"],
                                               [float("inf"), float("nan"), -1, 0, "x", 1e300])):
        if why in ("max_mtp=0", "efficiency.gemm missing", "efficiency.hbm missing"):
            continue  # max_mtp 0 is a legal profile; a missing multiplier defaults to 1.0
        frameworks.append((_dump_yaml(folder / f"fw-bad{i}.yaml", data), "invalid", why))
    frameworks += _write_bad_texts(folder, "fw", yaml.safe_dump(fw), ".yaml")
    # ---- model configs (family model-config)
    cfg_text = (REPO / "models" / "Qwen--Qwen3-8B.json").read_text()
    cfg = json.loads(cfg_text)
    models = []
    p = folder / "model-ok.json"
    p.write_text(cfg_text)
    models.append((str(p), "valid", ""))
    for i, (data, why) in enumerate(_mutations(cfg, ["hidden_size", "num_hidden_layers", "num_attention_heads",
                                                     "vocab_size"],
                                               [float("inf"), float("nan"), -4, 0, "big", 1e300, 7.5])):
        p = folder / f"model-bad{i}.json"
        p.write_text(json.dumps(data))
        # num_hidden_layers left out is read at Qwen3Config's class default (family_defaults.yaml's qwen3 line), as
        # transformers reads it, with a note naming it (tests/test_config_default_notes.py); the other fields left
        # out, and every bad value, are refused
        models.append((str(p), "valid" if why == "num_hidden_layers missing" else "invalid", why))
    p = folder / "model-bigint.json"
    p.write_text(cfg_text.replace('"num_hidden_layers": 36', '"num_hidden_layers": ' + "9" * 5000))
    models.append((str(p), "invalid", "a 5,000-digit integer"))
    models += _write_bad_texts(folder, "model", cfg_text, ".json")
    # ---- check deployments
    base_dep = {"model": "qwen3-30b-a3b", "hardware": "h100_sxm", "world_size": 8,
                "parallel_config": {"attn_tp_size": 4, "moe_tp_size": 1},
                "workload": {"phase": "decode", "batch": 16, "seq_len": 2048}}
    deployments = [(_dump_yaml(folder / "dep-ok.yaml", base_dep), "valid", "")]
    # one rank, no knob: every model a --model override names runs it (memory may not fit: check's exit 1)
    deployments.append((_dump_yaml(folder / "dep-min.yaml", {
        "model": "qwen3-8b", "hardware": "h200_sxm", "world_size": 1, "parallel_config": {},
        "workload": {"phase": "decode", "batch": 8, "seq_len": 2048}}), "valid", "one rank"))
    deployments.append((_dump_yaml(folder / "dep-tp64.yaml", _set(_set(base_dep, "world_size", 64),
                                                                  "parallel_config.attn_tp_size", 64)),
                        "valid", "TP64 on 32 heads: a class-A violation, exit 1"))
    bad_deps = [
        (_set(base_dep, "attn_tp_size", 8), "top-level attn_tp_size 8 vs parallel_config 4"),
        (_set(base_dep, "parallel_config.attn_dp_size", 4), "attn_dp_size 4 but 8 // 4 = 2"),
        (_set(base_dep, "parallel_config.attn_tp_size", True), "attn_tp_size: true"),
        (_set(base_dep, "parallel_config.attn_tp_size", 2.5), "attn_tp_size: 2.5"),
        (_set(base_dep, "parallel_config.attn_tp_size", 0), "attn_tp_size: 0"),
        (_set(base_dep, "parallel_config.attn_tp_size", 2**40), "attn_tp_size: 2**40"),
        (_set(base_dep, "parallel_config.tp", 2), "unknown knob"),
        (_set(base_dep, "world_size", 2**31), "world_size 2**31"),
        (_set(base_dep, "world_size", "eight"), "world_size: eight"),
        (_set(base_dep, "workload.batch", float("nan")), "batch: nan"),
        (_set(base_dep, "workload.batch", 0), "batch: 0"),
        (_set(base_dep, "workload.seq_len", 10**30), "seq_len 1e30"),
        (_set(base_dep, "workload", _DELETE), "no workload"),
        (_set(base_dep, "mtp", -1), "mtp -1"),
        (_set(base_dep, "model", _DELETE), "no model"),
        (_set(base_dep, "model", "no-such-model"), "unknown model"),
        (_set(base_dep, "hardware", "no-such-hw"), "unknown hardware"),
        (_set(base_dep, "framework", "nope"), "unknown framework"),
    ]
    for i, (data, why) in enumerate(bad_deps):
        deployments.append((_dump_yaml(folder / f"dep-bad{i}.yaml", data), "invalid", why))
    deployments += _write_bad_texts(folder, "dep", yaml.safe_dump(base_dep), ".yaml")
    # ---- traces
    ex = REPO / "docs" / "examples" / "trace-decode"
    traces = [(str(ex), "valid", ""), (str(ex / "rank_0.pt.trace.json"), "valid", "")]
    one = json.loads((ex / "rank_0.pt.trace.json").read_text())
    events = one["traceEvents"]

    def tr(name: str, evs: list, label: str, why: str, **top: Any) -> None:
        p = folder / name
        p.write_text(json.dumps({**{k: v for k, v in one.items() if k != "traceEvents"}, **top,
                                 "traceEvents": evs}))
        traces.append((str(p), label, why))

    tr("tr-pidlist.json", [dict(e, pid=[1, 2]) if e.get("ph") == "X" else e for e in events], "any",
       "pid as a list on every event")
    tr("tr-somepidlist.json", [dict(e, pid=[1]) if i == 3 else e for i, e in enumerate(events)], "valid",
       "one event with a list pid")
    tr("tr-nants.json", [dict(e, ts=float("nan")) if i % 2 else e for i, e in enumerate(events)], "any",
       "NaN timestamps")
    tr("tr-infdur.json", [dict(e, dur=float("inf")) if e.get("ph") == "X" else e for e in events], "invalid",
       "infinite durations everywhere")
    tr("tr-hugets.json", [dict(e, ts="1e999999") if i % 3 == 0 else e for i, e in enumerate(events)], "any",
       "a 1e999999 timestamp")
    tr("tr-none.json", [], "invalid", "no events")
    tr("tr-dist.json", events, "any", "distributedInfo with a list rank", distributedInfo={"rank": [0]})
    p = folder / "tr-ok.json.gz"
    p.write_bytes(gzip.compress(json.dumps(one).encode()))
    traces.append((str(p), "valid", "gzip"))
    traces += _write_bad_texts(folder, "tr", json.dumps(one)[:20000], ".json")
    traces = [t for t in traces if "cut" not in t[0]] + [t for t in traces if "cut" in t[0]]
    # ---- profiled configs for calibrate --config
    prof = yaml.safe_load((REPO / "docs" / "examples" / "qwen3-30b-decode.yaml").read_text())
    configs = [(_dump_yaml(folder / "cfg-ok.yaml", prof), "valid", "")]
    for i, (data, why) in enumerate(_mutations(prof, ["batch", "seq_len", "attn_tp_size", "world_size"],
                                               [float("nan"), -1, 0, True, "x", 10**40])):
        if why.endswith(" missing") and why.split()[0] in ("attn_tp_size", "world_size", "batch", "seq_len"):
            continue  # optional keys (batch/seq_len only with phase: those are checked below)
        configs.append((_dump_yaml(folder / f"cfg-bad{i}.yaml", data), "invalid", why))
    # ---- CSVs for estimate --from-csv
    src = (Path(os.environ.get("SHARDPLAN_FACTS", REPO.parent / "shared" / "facts")) / "calibration"
           / "measured_agg_calibration.csv")
    lines = src.read_text().splitlines() if src.is_file() else []
    header = lines[0] if lines else "model,system,isl,osl,concurrency,tp"
    body = [ln for ln in lines[1:] if ",h100_sxm," in ln or ",h200_sxm," in ln][:4]
    csvs = []
    p = folder / "rows-ok.csv"
    p.write_text("\n".join([header, *body]) + "\n")
    csvs.append((str(p), "valid" if body else "any", ""))
    p = folder / "rows-nomodel.csv"
    p.write_text("\n".join([",".join(c for c in header.split(",") if c != "model")]) + "\n")
    csvs.append((str(p), "invalid", "no model column"))
    p = folder / "rows-latin1.csv"
    p.write_bytes(("\n".join([header, *body]) + "\n").encode() + b"\xff\xfe")
    csvs.append((str(p), "invalid", "not UTF-8"))
    p = folder / "rows-empty.csv"
    p.write_text("")
    csvs.append((str(p), "invalid", "empty"))
    p = folder / "rows-junk.csv"
    p.write_text(header + "\n" + ",".join(["nan"] * len(header.split(","))) + "\n")
    csvs.append((str(p), "invalid", "every row junk (nothing can be evaluated)"))
    # ---- output targets
    outdir = folder / "out"
    outdir.mkdir(exist_ok=True)
    real = outdir / "real.csv"
    real.write_text("old\n")
    link = outdir / "link.csv"
    if not link.is_symlink():
        link.symlink_to(real)
    dangling = outdir / "dangling.csv"
    if not dangling.is_symlink():
        dangling.symlink_to(outdir / "created-through-link.csv")
    fifo = outdir / "fifo.csv"
    if not fifo.exists():
        os.mkfifo(fifo)
    fifo_link = outdir / "to-fifo.csv"
    if not fifo_link.is_symlink():
        fifo_link.symlink_to(fifo)
    chardev = outdir / "full.csv"
    made_dev = False
    if not chardev.exists():
        try:  # a copy of /dev/full's node inside the fixture folder: harmless if a bug replaced it
            os.mknod(chardev, stat.S_IFCHR | 0o666, os.makedev(1, 7))
            made_dev = True
        except (PermissionError, OSError):
            pass
    else:
        made_dev = stat.S_ISCHR(os.stat(chardev).st_mode)
    (outdir / "adir.csv").mkdir(exist_ok=True)
    outs = [(str(outdir / "t1.csv"), "valid", ""), (str(outdir / "t2.json"), "valid", ""),
            (str(link), "valid", "through a symlink"), (str(dangling), "valid", "dangling symlink"),
            (str(outdir / "t3.xlsx"), "invalid", ".xlsx"), (str(outdir / "noext"), "invalid", "no extension"),
            (str(fifo), "invalid", "a FIFO"), (str(fifo_link), "invalid", "a symlink to a FIFO"),
            (str(outdir / "adir.csv"), "invalid", "a folder"), (str(outdir / "nofolder" / "x.csv"), "invalid",
                                                               "missing folder")]
    if made_dev:
        outs.append((str(chardev), "invalid", "a character device"))
    csv_outs = [o for o in outs if not o[0].endswith(".json")] + [(str(outdir / "t4.json"), "invalid",
                                                                   ".json for a CSV writer")]
    csvs += _odd_csvs(folder, header, body)
    return Fixtures(folder, hardware, frameworks, models, deployments, traces, csvs, configs, _solve_files(folder),
                    outs, csv_outs, _topologies(folder, hw), _config_dirs(folder),
                    _family_configs(folder), _no_layer_configs(folder), afd_files=_afd_files(folder),
                    multinode_files=_multinode_files(folder))


def _topologies(folder: Path, hw: dict) -> list[tuple[str, str, str]]:
    """A user's device file for a machine unlike the HGX node: 1, 3, 6 or 12 cards a node, a PCIe-only node (no
    peer access), a node inside a larger scale-up domain, only an inter-rack tier beyond the node (valid); and the
    topology written inconsistently: a span that is not the node, a domain that is not whole nodes, a tier missing
    or reaching nothing (invalid)."""
    hw = {k: v for k, v in hw.items() if k != "sources"}
    intra, inter = hw["tiers"]["intra_node"], hw["tiers"]["inter_node"]

    def node(n: int, domain: int | None = None, **tiers: Any) -> dict:
        d = dict(hw, ranks_per_node=n, scale_up_domain=domain or n,
                 tiers={"intra_node": dict(intra, span_ranks=n), "inter_node": inter})
        d["tiers"].update(tiers)
        return d

    good = [(node(n), f"{n} cards a node") for n in (1, 3, 6, 12)]
    good += [(node(8, intra_node=dict(intra, span_ranks=8, peer_access=False, bandwidth_Bps=32e9)),
              "PCIe-only node (no peer access)"),
             (node(6, 24, scale_up=dict(intra, span_ranks=24)), "6-card nodes in a 24-rank scale-up domain"),
             (dict(node(8), tiers={"intra_node": dict(intra, span_ranks=8), "inter_rack": inter}),
              "inter_rack the only tier beyond the node")]
    bad = [(node(6, intra_node=dict(intra, span_ranks=8)), "intra_node.span_ranks 8 on a 6-card node"),
           (node(6, 9), "scale_up_domain 9 on 6-card nodes"),
           (node(6, 24), "scale_up_domain 24 with no scale_up tier"),
           (node(8, scale_up=dict(intra, span_ranks=8)), "a scale_up tier that reaches no rank beyond the node"),
           (node(6, 24, scale_up=dict(intra, span_ranks=12)), "scale_up.span_ranks 12 in a 24-rank domain"),
           (dict(node(8), tiers={"inter_node": inter}), "no intra_node tier"),
           (dict(node(8), tiers={"intra_node": dict(intra, span_ranks=8)}), "no tier beyond the node"),
           (node(8, inter_node=dict(inter, span_ranks=4)), "inter_node.span_ranks 4 inside the node"),
           (node(8, intra_node=dict(intra, span_ranks=8, peer_access="no")), "peer_access 'no'"),
           (node(0), "ranks_per_node 0")]
    out = []
    for i, (data, why) in enumerate(good):
        out.append((_dump_yaml(folder / f"topo-ok{i}.yaml", dict(data, name=f"topo-ok{i}")), "valid", why))
    for i, (data, why) in enumerate(bad):
        out.append((_dump_yaml(folder / f"topo-bad{i}.yaml", dict(data, name=f"topo-bad{i}")), "invalid", why))
    return out


def _config_dirs(folder: Path) -> list[tuple[str, str, str]]:
    """Catalog models given as a user has them: a folder holding config.json, or the config.json itself."""
    out = []
    for name, stem in (("Qwen--Qwen3-8B.json", "q8"), ("Qwen--Qwen3-30B-A3B.json", "q30")):
        d = folder / f"cfgdir-{stem}"
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text((REPO / "models" / name).read_text())
        out += [(str(d), "valid", f"{name} as a folder"), (str(d / "config.json"), "valid", f"{name} as a path")]
    return out


def _odd_csvs(folder: Path, header: str, body: list[str]) -> list[tuple[str, str, str]]:
    """Calibration CSVs as a spreadsheet or a hand edit leaves them: encodings, line ends, quoting, a repeated
    header, a row with a cell lost or a knob no engine runs. A file with one good row is evaluated (exit 0, the
    bad rows' error column says why); a file with none is refused."""
    cols = header.split(",")
    if not body or not {"tp", "concurrency", "attention_dp", "isl"} <= set(cols):
        return []
    row = body[0].split(",")

    def put(name: str, value: str) -> str:
        return ",".join(value if c == name else v for c, v in zip(cols, row))

    out = []
    for name, text, label, why in (
            ("bom", "\ufeff" + "\n".join([header, *body]) + "\n", "valid", "a UTF-8 byte-order mark"),
            ("crlf", "\r\n".join([header, *body]) + "\r\n", "valid", "CRLF line ends"),
            ("blank", "\n".join([header, "", body[0], "", ""]) + "\n", "valid", "blank lines"),
            ("quoted", "\n".join([header, ",".join(f'"{v}"' for v in row)]) + "\n", "valid", "every cell quoted"),
            ("rehead", "\n".join([header, body[0], header]) + "\n", "valid", "the header repeated as a row"),
            ("mixed", "\n".join([header, body[0], ",".join(row[:3])]) + "\n", "valid", "one row lost cells"),
            ("short", "\n".join([header, ",".join(row[:3])]) + "\n", "invalid", "the only row lost cells"),
            ("tpfrac", "\n".join([header, put("tp", "8.5")]) + "\n", "invalid", "tp 8.5"),
            ("concneg", "\n".join([header, put("concurrency", "-3")]) + "\n", "invalid", "concurrency -3"),
            ("worldodd", "\n".join([header, put("attention_dp", "3")]) + "\n", "invalid",
             "tp x attention_dp differs from moe_tp x moe_ep"),
            ("islblank", "\n".join([header, put("isl", "")]) + "\n", "invalid", "isl blank"),
            ("pponly", "\n".join([header, put("pp", "3")]) + "\n", "invalid", "the only row has pipeline stages"),
            ("engine", "\n".join([header, put("backend", "lmdeploy")]) + "\n", "invalid", "an engine with no profile"),
            ("oneodd", "\n".join([header, put("backend", "lmdeploy"), body[0]]) + "\n", "valid",
             "one row of an engine with no profile beside a good one"),
            ("cfgpath", "\n".join([header, put("model", str(REPO / "models" / "Qwen--Qwen3-8B.json"))]) + "\n",
             "any", "a config.json path for the model"),
            ("hwpath", "\n".join([header, put("system", str(REPO / "hardware" / "h200_sxm.yaml"))]) + "\n", "any",
             "a device file path for the system"),
            ("trailing", "\n".join([header + ",", body[0] + ","]) + "\n", "any", "a trailing comma on each line")):
        p = folder / f"rows-{name}.csv"
        p.write_bytes(text.encode("utf-8"))
        out.append((str(p), label, why))
    return out


def _solve_files(folder: Path) -> list[tuple[str, str, str]]:
    """`solve --format yaml` (three candidate blocks under the deployment's model, hardware and world size), as
    written and edited by hand; each is read with --candidate a. Labels: a knob or key the deployment takes is
    valid (check exits 0 or 1); a key no reader takes, a bad value, or a malformed candidate block is invalid."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["solve", "qwen3-30b-a3b", "--hardware", "h100_sxm", "--cards", "8",
                                  "--max-concurrency", "16", "--time-limit", "2", "--format", "yaml"])
    if r.exit_code != 0:
        return []
    text = r.stdout
    data = yaml.safe_load(text)
    a = "candidate_a"
    p = folder / "solve-asis.yaml"
    p.write_text(text)
    out = [(str(p), "valid", "as solve wrote it")]
    edits = [
        ("ws16", _set(data, "world_size", 16), "valid", "world_size 16 (attention DP 2)"),
        ("est", _set(data, f"{a}.estimation.ttft_ms", 1.0), "valid", "solve's estimate edited (output, not read)"),
        ("kvtop", _set(data, "kv_dtype", "fp8"), "valid", "kv_dtype fp8 at the top level"),
        ("epok", _set(data, f"{a}.parallel_config.moe_ep_size", 8), "valid", "moe_ep_size stated, agreeing"),
        ("kvblock", _set(data, f"{a}.kv_dtype", "fp8"), "invalid", "kv_dtype inside the candidate block"),
        ("wsblock", _set(data, f"{a}.world_size", 16), "invalid", "world_size inside the candidate block"),
        ("eplie", _set(data, f"{a}.parallel_config.moe_ep_size", 4), "invalid", "moe_ep_size 4 but 8 // 1 = 8"),
        ("dplie", _set(data, f"{a}.parallel_config.attn_dp_size", 2), "invalid", "attn_dp_size 2 but 8 // 8 = 1"),
        ("list", _set(data, a, [1, 2]), "invalid", "candidate block a list"),
        ("typo", _set(_set(data, f"{a}.parallel_conifg", data[a]["parallel_config"]), f"{a}.parallel_config",
                      _DELETE), "invalid", "parallel_config misspelt"),
        ("conc0", _set(data, f"{a}.workload.concurrency", 0), "invalid", "concurrency 0"),
        ("islf", _set(data, f"{a}.workload.isl", 4096.5), "invalid", "isl 4096.5"),
        ("wsstr", _set(data, "world_size", "8"), "invalid", "world_size '8'"),
        ("kvint8", _set(data, "kv_dtype", "int8"), "any", "kv_dtype int8 on H100 (one byte the device holds; an "
         "engine whose command cannot spell it refuses it)"),
        ("mtp", _set(data, "mtp", 1), "invalid", "mtp 1 on a model without MTP layers"),
        ("extra", _set(data, "colour", "blue"), "invalid", "an unknown top-level key"),
        ("phase", _set(data, f"{a}.workload.phase", "decode"), "invalid", "phase beside concurrency"),
        # a knob edited by hand: out of range, misspelt, removed (its default of 1), not dividing the world
        ("pp0", _set(data, f"{a}.parallel_config.pp_size", 0), "invalid", "pp_size 0"),
        ("rexpneg", _set(data, f"{a}.parallel_config.redundant_experts", -1), "invalid", "redundant_experts -1"),
        ("cpsize", _set(data, f"{a}.parallel_config.cpsize", 2), "invalid", "cpsize (misspelt cp_size)"),
        ("moedel", _set(data, f"{a}.parallel_config.moe_tp_size", _DELETE), "valid", "moe_tp_size removed"),
        ("attn3", _set(data, f"{a}.parallel_config.attn_tp_size", 3), "any",
         "attn_tp_size 3 on 8 cards (check: a class-A finding, exit 1; launch: refused)"),
        ("tpstr", _set(data, f"{a}.parallel_config.attn_tp_size", "8"), "invalid", "attn_tp_size '8'"),
        ("conc1e9", _set(data, f"{a}.workload.concurrency", 10**9), "invalid", "concurrency 1e9"),
        ("fwbad", _set(data, "framework", "vllmm"), "invalid", "framework vllmm"),
        ("hwtopo", _set(data, "hardware", "h200_sxm"), "valid", "another catalog device"),
    ]
    for name, d, label, why in edits:
        p = folder / f"solve-{name}.yaml"
        p.write_text(yaml.safe_dump(d, sort_keys=False))
        out.append((str(p), label, why))
    p = folder / "solve-dupkey.yaml"
    p.write_text(text.replace("world_size: 8", "world_size: 8\nworld_size: 16", 1))
    out.append((str(p), "invalid", "world_size given twice"))
    return out


# --------------------------------------------------------------------------------------------- value pools

# (text, good?) per kind of option value
GOOD_BAD = {
    "cards": ([("1", True), ("2", True), ("4", True), ("8", True)],
              [("0", False), ("-8", False), ("abc", False), ("2147483648", False),
               ("99999999999999999999999", False), ("8.0", False), ("", False), ("1e3", False), ("9" * 5000, False)]),
    "tokens": ([("1", True), ("128", True), ("1024", True), ("4096", True)],
               [("0", False), ("-5", False), ("12345678901234567890123", False), ("16777217", False),
                ("nan", False), ("4k", False)]),
    "conc": ([("1", True), ("8", True), ("32", True)],
             [("0", False), ("-1", False), ("1048577", False), ("x", False)]),
    "ms": ([("50", True), ("2000", True), ("0.5", True)],
           [("0", False), ("-1", False), ("nan", False), ("inf", False), ("-inf", False), ("1e400", False),
            ("1e30", False), ("fast", False)]),
    "mtp0": ([("0", True)], [("-1", False), ("1", False), ("3", False), ("17", False), ("x", False)]),
    "time": ([("1", True), ("3", True)],
             [("0", False), ("-1", False), ("nan", False), ("inf", False), ("1e-400", False), ("3601", False),
              ("none", False)]),
    "top": ([("1", True), ("2", True), ("3", True)], [("0", False), ("11", False), ("1000", False), ("-3", False)]),
    "seed": ([("0", True), ("7", True), ("2147483647", True)],
             [("-1", False), ("2147483648", False), ("1e9", False)]),
    "workers": ([("1", True)], [("0", False), ("257", False), ("-2", False)]),
    "jobs": ([("1", True)], [("0", False), ("300", False)]),
    "fraction": ([("0.9", True), ("1", True)], [("0", False), ("1.5", False), ("nan", False), ("-0.1", False)]),
    "rate": ([("500", True), ("2000", True)], [("0", False), ("-5", False), ("nan", False), ("inf", False),
                                               ("1e400", False)]),
    "gb": ([("40", True)], [("0", False), ("-3", False), ("nan", False), ("inf", False)]),
    "format": ([("table", True), ("json", True), ("yaml", True)], [("xml", False), ("", False)]),
    "fw": ([("generic", True), ("vllm", True)], [("nope", False), ("x" * 300, False)]),
    # memory/estimate check the user's knobs against the profile: only the generic one accepts every knob
    "fw_generic": ([("generic", True)], [("nope", False), ("x" * 300, False)]),
    "phase_solve": ([("serving", True), ("decode", True), ("prefill", True)], [("both", False)]),
    "method": ([("cpsat", True)], [("milp", False)]),
    "scenario": ([("latency", True), ("throughput", True), ("balanced", True)], [("fastest", False)]),
    "dtype": ([("bf16", True)], [("fp3", False), ("", False), ("int8x", False), ("z" * 300, False)]),
}


def _pick(draw, kind: str, bad_rate: float = 0.5) -> tuple[str, bool]:
    good, bad = GOOD_BAD[kind]
    if draw(st.floats(0, 1)) < bad_rate:
        return draw(st.sampled_from(bad))
    return draw(st.sampled_from(good))


def _file(draw, pool: list[tuple[str, str, str]], clean: bool = False) -> tuple[str, str, str]:
    if clean:
        pool = [p for p in pool if p[1] == "valid"] or pool
    return draw(st.sampled_from(pool))


def _combine(labels: list[str]) -> str:
    if "invalid" in labels:
        return "invalid"
    if "any" in labels:
        return "any"
    return "valid"


QUANT = REPO / "tests" / "data" / "configs_quant"
UNSEEN = REPO / "tests" / "data" / "configs_unseen"
# looped and shared-block stacks: HRM-Text (32 stored layers run 128 passes), Dory (36 stored, 56 passes a loop),
# Zamba / Zamba2 (one shared attention block called from many places)
LOOPED = ("round26/sapientinc--HRM-Text-1B.json", "round27/nvidia--NVIDIA-Nemotron-Labs-Dory1.0-4B-BF16.json",
          "round14/Zyphra--Zamba-7B-v1.json", "round14/Zyphra--Zamba2-2.7B.json")


def _family_configs(folder: Path) -> list[tuple[str, str, str]]:
    """Today's new readers as a user meets them: every quantized checkpoint config (tests/data/configs_quant; the
    refused ones invalid), the looped / shared-block stacks, and hand edits of a quantization_config: a field
    missing or odd, an ignore list naming no module (a warning: applied to nothing), a KV-cache scheme."""
    out = [(str(p), "valid", f"quantized {p.stem}") for p in sorted(QUANT.glob("*.json"))]
    out += [(str(p), "invalid", f"refused quantization {p.stem}") for p in sorted((QUANT / "refused").glob("*.json"))]
    out += [(str(UNSEEN / rel), "valid", f"looped {Path(rel).stem}") for rel in LOOPED]
    dory = json.loads((UNSEEN / LOOPED[1]).read_text())
    p = folder / "fam-dory-lastloop.json"
    p.write_text(json.dumps({**dory, "recurrent_kv_cache_mode": "last_loop"}))
    out.append((str(p), "invalid", "Dory recurrent_kv_cache_mode last_loop (refused)"))
    ct = json.loads((QUANT / "RedHatAI--Meta-Llama-3.1-8B-Instruct-FP8-dynamic.json").read_text())
    g0 = "quantization_config.config_groups.group_0"
    awq = json.loads((QUANT / "Qwen--Qwen3-8B-AWQ.json").read_text())
    mo = json.loads((QUANT / "nvidia--Llama-3.1-8B-Instruct-FP8.json").read_text())
    kv8 = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}
    edits = [
        (ct, "quantization_config.ignore", ["model.layers.99.mlp.nothing"], "valid", "ignore names no module"),
        (ct, "quantization_config.ignore", [], "valid", "ignore empty"),
        (ct, "quantization_config.ignore", "lm_head", "invalid", "ignore a string, not a list"),
        (ct, "quantization_config.kv_cache_scheme", kv8, "valid", "kv_cache_scheme fp8"),
        (ct, "quantization_config.kv_cache_scheme", {**kv8, "num_bits": 3}, "invalid", "kv_cache_scheme 3-bit"),
        (ct, "quantization_config.kv_cache_scheme", "fp8", "invalid", "kv_cache_scheme a string"),
        (ct, "quantization_config.quant_method", _DELETE, "invalid", "no quant_method"),
        (ct, "quantization_config.quant_method", "zipq", "invalid", "unknown quant_method"),
        (ct, "quantization_config.config_groups", {}, "invalid", "config_groups empty"),
        (ct, "quantization_config.config_groups", _DELETE, "invalid", "no config_groups"),
        (ct, f"{g0}.targets", [], "invalid", "targets empty"),
        (ct, f"{g0}.targets", ["Conv9d"], "invalid", "a target class with no module group"),
        (ct, f"{g0}.weights.num_bits", 3, "invalid", "3-bit float weights"),
        (ct, f"{g0}.weights.num_bits", "eight", "invalid", "num_bits 'eight'"),
        (ct, f"{g0}.weights.num_bits", _DELETE, "invalid", "weights without num_bits"),
        (ct, f"{g0}.weights.type", _DELETE, "valid", "weights without type (the library's default: int)"),
        (ct, f"{g0}.input_activations.num_bits", 2, "invalid", "2-bit activations"),
        (ct, f"{g0}.weights.block_structure", [128], "any", "block_structure one number under channel strategy"),
        (ct, "quantization_config", [], "invalid", "quantization_config a list"),
        (awq, "quantization_config.bits", 5, "invalid", "AWQ 5-bit"),
        (awq, "quantization_config.bits", _DELETE, "invalid", "AWQ without bits (not guessed)"),
        (awq, "quantization_config.group_size", 0, "invalid", "AWQ group_size 0"),
        (awq, "quantization_config.zero_point", "yes", "invalid", "AWQ zero_point 'yes'"),
        (awq, "quantization_config.modules_to_not_convert", ["nothing.here"], "valid", "AWQ skips no module"),
        (mo, "quantization_config.quant_algo", "FP3", "invalid", "modelopt quant_algo FP3"),
        (mo, "quantization_config.kv_cache_quant_algo", "INT2", "invalid", "modelopt kv_cache_quant_algo INT2"),
        (mo, "quantization_config.exclude_modules", ["nothing"], "valid", "modelopt excludes no module"),
    ]
    for i, (base, dotted, value, label, why) in enumerate(edits):
        p = folder / f"fam-quant{i}.json"
        p.write_text(json.dumps(_set(base, dotted, value)))
        out.append((str(p), label, why))
    return out


SMALL_MODELS = ("qwen3-8b", "llama-3.1-8b", "qwen3-30b-a3b")
SMALL_HW = ("h100_sxm", "h200_sxm")


def _model_arg(draw, fx: Fixtures, bad_rate: float) -> tuple[str, str, str, str]:
    """(model, label, why, family)"""
    r = draw(st.floats(0, 1))
    if r < bad_rate * 0.6:
        path, label, why = _file(draw, fx.models)
        return path, label, why, "model-config"
    if r < bad_rate * 0.8:
        return draw(st.sampled_from(["no-such-model", "x" * 300, "", "../../etc/passwd"])), "invalid", "bad name", \
            "options"
    return draw(st.sampled_from(SMALL_MODELS)), "valid", "", "options"


def _hardware_arg(draw, fx: Fixtures, bad_rate: float) -> tuple[str, str, str]:
    r = draw(st.floats(0, 1))
    if r < bad_rate * 0.7:
        return _file(draw, fx.hardware)
    if r < bad_rate * 0.8:
        return draw(st.sampled_from(["h999", "y" * 300])), "invalid", "unknown hardware"
    return draw(st.sampled_from(SMALL_HW)), "valid", ""


CLEAN_SHARE = 0.45  # cases drawn with only good values, so valid inputs are exercised as much as bad ones


class _Builder:
    def __init__(self, cmd: str, draw=None):
        self.cmd, self.argv, self.parts = cmd, [cmd], []
        self.clean = draw is not None and draw(st.floats(0, 1)) < CLEAN_SHARE

    def rate(self, bad_rate: float) -> float:
        return 0.0 if self.clean else bad_rate

    def file(self, draw, pool):
        return _file(draw, pool, self.clean)

    def add(self, args: list[str], label: str, why: str = "", family: str = "options") -> None:
        self.argv += args
        self.parts.append((label, family, why))

    def opt(self, draw, flag: str, kind: str, bad_rate: float) -> None:
        value, good = _pick(draw, kind, self.rate(bad_rate))
        self.add([flag, value], "valid" if good else "invalid", f"{flag} {value[:30]!r}")

    def case(self, slow: bool = False) -> Case:
        label = _combine([lab for lab, _, _ in self.parts])
        bad = [(fam, why) for lab, fam, why in self.parts if lab != "valid"]
        fams = [fam for fam, _ in bad]
        # every command loads the model before the hardware, framework and files (option values are checked
        # before either), so a case with a mutated model config fails on it: the layers branch's part
        fam = "model-config" if "model-config" in fams else (fams[0] if fams else "options")
        why = "; ".join(w for _, w in bad if w)
        return Case(self.cmd, tuple(self.argv), label, fam, why, slow and label == "valid")


@st.composite
def catalog_cases(draw) -> Case:
    b = _Builder(draw(st.sampled_from(["models", "hardware"])), draw)
    b.opt(draw, "--format", "format", 0.3)
    return b.case()


@st.composite
def inspect_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("inspect", draw)
    m, label, why, fam = _model_arg(draw, fx, b.rate(0.7))
    b.add([m], label, why, fam)
    if draw(st.booleans()):
        b.opt(draw, "--format", "format", 0.2)
    return b.case()


def _divisors(n: int) -> list[int]:
    return [d for d in (1, 2, 4, 8, 16, 32, 64) if n % d == 0 and d <= 8]


@st.composite
def _knobs(draw, b: _Builder, model: str, cards: int, bad_rate: float) -> None:
    """Valid knobs: divisors of the world (<= 8, so TP stays in a node) whose attention group divides it; for
    the MoE model EP = cards / moe_tp divides its 128 experts. Invalid: a non-divisor, 0/-1/junk, or the
    model's limits (TP64 on 32 heads; EP 256 on 128 experts)."""
    r = draw(st.floats(0, 1))
    if r < bad_rate:
        bad = draw(st.sampled_from([("--attn-tp", "3"), ("--moe-tp", "0"), ("--dense-tp", "-2"),
                                    ("--cp", "x"), ("--kvp", "99999999999999999999"), ("--embed-tp", "1.5"),
                                    ("--attn-tp", "16")]))
        if bad == ("--attn-tp", "16") and cards % 16 == 0:
            bad = ("--attn-tp", "3")
        b.add(list(bad), "invalid", " ".join(bad))
        return
    attn = draw(st.sampled_from(_divisors(cards)))
    b.add(["--attn-tp", str(attn)], "valid")
    absent = _absent_flags(model)
    for flag in draw(st.lists(st.sampled_from(["--dense-tp", "--moe-tp", "--embed-tp", "--lmhead-tp"]),
                              max_size=3, unique=True)):
        value = str(draw(st.sampled_from(_divisors(cards))))
        # a knob of a module the model lacks (dense FFN, routed experts) is bad input unless left at 1
        label = "invalid" if flag in absent and value != "1" else "valid"
        b.add([flag, value], label, f"{flag} on a model without its module" if label == "invalid" else "")
    if draw(st.booleans()) and cards // attn >= 2:
        b.add(["--cp", "2"], "valid")


def _absent_flags(model: str) -> set[str]:
    """The knob flags of modules `model` lacks (specs.parallel.absent_knobs); none for a model file that does not
    load (the case is invalid for that already)."""
    from solver.errors import ShardplanError
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import absent_knobs

    try:
        spec = load_model(model)
    except (ShardplanError, OSError):  # the CLI refuses such a name before it reads a path (a 300-character one)
        return set()
    return {"--" + k.removesuffix("_size").replace("_", "-") for k in absent_knobs(spec)}


def _model_limit_case(b: _Builder, draw) -> bool:
    """The issue's accepted-nonsense knobs: TP64 on a 32-head model, EP256 on 128 experts."""
    which = draw(st.sampled_from(["tp64", "ep256"]))
    if which == "tp64":
        b.add(["llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "64", "--attn-tp", "64"], "invalid",
              "TP64 on 32 heads")
    else:
        b.add(["qwen3-30b-a3b", "--hardware", "h100_sxm", "--cards", "256", "--moe-tp", "1"], "invalid",
              "EP256 on 128 experts")
    return True


@st.composite
def memory_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("memory", draw)
    if not b.clean and draw(st.floats(0, 1)) < 0.1:
        _model_limit_case(b, draw)
    else:
        m, label, why, fam = _model_arg(draw, fx, b.rate(0.3))
        b.add([m], label, why, fam)
        hw, label, why = _hardware_arg(draw, fx, b.rate(0.3))
        b.add(["--hardware", hw], label, why)
        cards_txt, good = _pick(draw, "cards", b.rate(0.15))
        b.add(["--cards", cards_txt], "valid" if good else "invalid", f"--cards {cards_txt[:20]!r}")
        if good:
            draw(_knobs(b, m, int(cards_txt), b.rate(0.2)))
    b.opt(draw, "--batch", "conc", 0.15)
    b.opt(draw, "--seq-len", "tokens", 0.15)
    for flag, kind in draw(st.lists(st.sampled_from([("--mtp", "mtp0"), ("--prefill-chunk", "tokens"),
                                                     ("--mem-fraction", "fraction"), ("--format", "format"),
                                                     ("--framework", "fw_generic"), ("--weight-dtype", "dtype"),
                                                     ("--kv-dtype", "dtype")]), max_size=2, unique=True)):
        b.opt(draw, flag, kind, 0.4)
    return b.case()


@st.composite
def estimate_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("estimate", draw)
    if draw(st.floats(0, 1)) < 0.25:  # CSV mode
        path, label, csv_why = b.file(draw, fx.csvs)
        b.add(["--from-csv", path], label, csv_why, "file")
        out, label, why = b.file(draw, fx.csv_outs)
        b.add(["--out", out], label, why, "output")
        if draw(st.booleans()):
            b.opt(draw, "--framework", "fw_generic", 0.5)
            if b.parts[-1][0] == "valid" and csv_why == "an engine with no profile":
                # a good --framework stands for every row's backend column (measured.case_from_row)
                b.parts[0] = ("valid", "file", csv_why + ", overridden by --framework")
        return b.case()
    if not b.clean and draw(st.floats(0, 1)) < 0.08:
        _model_limit_case(b, draw)
        cards = None
    else:
        m, label, why, fam = _model_arg(draw, fx, b.rate(0.3))
        b.add([m], label, why, fam)
        hw, label, why = _hardware_arg(draw, fx, b.rate(0.3))
        b.add(["--hardware", hw], label, why)
        cards_txt, good = _pick(draw, "cards", b.rate(0.15))
        b.add(["--cards", cards_txt], "valid" if good else "invalid", f"--cards {cards_txt[:20]!r}")
        if good:
            draw(_knobs(b, m, int(cards_txt), b.rate(0.15)))
    mode = draw(st.sampled_from(["serving", "phase"] if b.clean else ["serving", "phase", "both", "partial"]))
    if mode in ("serving", "both"):
        b.opt(draw, "--isl", "tokens", 0.1)
        b.opt(draw, "--osl", "tokens", 0.1)
        b.opt(draw, "--concurrency", "conc", 0.1)
    if mode in ("phase", "both"):
        b.add(["--phase", draw(st.sampled_from(["prefill", "decode"]))], "valid")
        b.opt(draw, "--batch", "conc", 0.1)
        b.opt(draw, "--seq-len", "tokens", 0.1)
    if mode == "both":
        b.add([], "invalid", "serving and phase options together")
    if mode == "partial":
        b.add(["--isl", "128"], "invalid", "--isl without --osl/--concurrency")
    for flag, kind in draw(st.lists(st.sampled_from([("--mtp", "mtp0"), ("--mtp-accept", "fraction"),
                                                     ("--format", "format")]), max_size=2, unique=True)):
        if flag == "--mtp-accept":  # the valid --mtp here is 0: an acceptance rate has no draft to accept
            value, _ = _pick(draw, kind, b.rate(0.4))
            b.add([flag, value], "invalid", "--mtp-accept without --mtp N > 0")
            continue
        b.opt(draw, flag, kind, 0.4)
    if draw(st.floats(0, 1)) < 0.2:
        path, label, why = b.file(draw, fx.frameworks)
        b.add(["--framework", path], label, why, "file")
    return b.case()


def _solve_base(draw, b: _Builder, fx: Fixtures, bad_rate: float) -> None:
    m, label, why, fam = _model_arg(draw, fx, b.rate(bad_rate))
    b.add([m], label, why, fam)
    hw, label, why = _hardware_arg(draw, fx, b.rate(bad_rate))
    b.add(["--hardware", hw], label, why)


@st.composite
def solve_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("solve", draw)
    _solve_base(draw, b, fx, 0.3)
    b.opt(draw, "--cards", "cards", 0.2)
    # small searches keep valid solves in seconds
    max_conc = int(draw(st.sampled_from(["16", "64"])))
    b.add(["--max-concurrency", str(max_conc), "--time-limit", "2"], "valid")
    picks = draw(st.lists(st.sampled_from([
        ("--isl", "tokens"), ("--osl", "tokens"), ("--concurrency", "conc"), ("--ttft-ms", "ms"),
        ("--tpot-ms", "ms"), ("--mtp", "mtp0"), ("--time-limit", "time"), ("--top", "top"), ("--seed", "seed"),
        ("--workers", "workers"), ("--phase", "phase_solve"), ("--method", "method"), ("--format", "format"),
        ("--framework", "fw"), ("--scenario", "scenario"), ("--weight-dtype", "dtype"), ("--kv-dtype", "dtype")]),
        max_size=3, unique=True))
    drawn = {}
    for flag, kind in picks:
        value, good = _pick(draw, kind, b.rate(0.5))
        drawn[flag] = value if good else None
        label = "valid" if good else "invalid"
        if flag == "--concurrency" and good and int(value) > max_conc:
            label = "invalid"  # over --max-concurrency
        b.add([flag, value], label, f"{flag} {value[:30]!r}")
    if "--time-limit" in drawn:  # the drawn one stands for the fixed 2 s: an option given twice is refused (stop 48)
        at = b.argv.index("--time-limit")
        del b.argv[at:at + 2]
    # an SLA on a figure the phase does not have (decode: no TTFT; prefill: no TPOT) is bad input
    lacks = {"decode": "--ttft-ms", "prefill": "--tpot-ms"}.get(drawn.get("--phase") or "")
    if lacks and drawn.get(lacks):
        b.add([], "invalid", f"{lacks} with --phase {drawn['--phase']}")
    # a prefill-only plan yields one token per prompt: a longer --osl would be read by nothing
    if drawn.get("--phase") == "prefill" and drawn.get("--osl") not in (None, "1"):
        b.add([], "invalid", "--osl past 1 with --phase prefill")
    if "--framework" not in b.argv and draw(st.floats(0, 1)) < 0.1:  # an option given twice is refused (stop 48)
        path, label, why = b.file(draw, fx.frameworks)
        b.add(["--framework", path], label, why, "file")
    if draw(st.floats(0, 1)) < 0.1:
        b.add(["--explain"], "valid")
    return b.case(slow=True)


@st.composite
def check_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("check", draw)
    if not b.clean and draw(st.floats(0, 1)) < 0.05:
        b.add(["c" * 300 + ".yaml"], "invalid", "a 300-character file name")
        return b.case()
    path, label, why = b.file(draw, fx.deployments)
    dep_at = len(b.parts)
    b.add([path], label, why, "file")
    picks = draw(st.lists(st.sampled_from([("--cards", "cards"), ("--format", "format"), ("--framework", "fw")]),
                          max_size=2, unique=True))
    for flag, kind in picks:
        value, good = _pick(draw, kind, b.rate(0.5))
        label = "valid" if good else "invalid"
        if flag == "--cards" and good and "dep-ok" in path and int(value) % 4:
            label = "valid"  # attn_tp 4 not dividing the world: a class-A finding (exit 1), not bad input
        if flag == "--framework" and good and why == "unknown framework":
            b.parts[dep_at] = ("valid", "file", "")  # the override replaces the file's unknown framework
        b.add([flag, value], label, f"{flag} {value[:30]!r}")
    return b.case()


@st.composite
def launch_cases(draw, fx: Fixtures) -> Case:
    """`launch DEPLOYMENT --engine E`: a good file under a real engine may still be one the engine cannot express
    (exit 2 naming the knob) or break a class-A rule, so it is "any"; a bad file, engine or format is invalid."""
    b = _Builder("launch", draw)
    path, label, why = b.file(draw, fx.deployments)
    engines = [("generic", "any"), ("vllm", "any"), ("sglang", "any"), ("trtllm", "any"), ("atom", "any"),
               ("vllm-ascend", "any"), ("cann-recipes", "any")]
    engine = draw(st.sampled_from(engines + ([] if b.clean else [("nope", "invalid"), ("e" * 300, "invalid")])))
    # the good deployment under the generic profile (every knob, no tie) is one the engine expresses: valid
    expressible = label == "valid" and path.endswith("dep-ok.yaml") and engine[0] == "generic"
    if why == "unknown framework":
        label = "valid"  # --engine overrides the file's framework (as check's --framework does)
    b.add([path], "valid" if expressible else "any" if label == "valid" else label, why, "file")
    b.add(["--engine", engine[0]], "valid" if expressible else engine[1], f"--engine {engine[0][:20]!r}")
    if draw(st.floats(0, 1)) < 0.4:
        fmt = draw(st.sampled_from([("shell", "valid"), ("json", "valid"), ("yaml", "valid")]
                                   + ([] if b.clean else [("table", "invalid"), ("xml", "invalid")])))
        b.add(["--format", fmt[0]], fmt[1], f"--format {fmt[0]}")
    if draw(st.floats(0, 1)) < 0.2:
        value, good = _pick(draw, "cards", b.rate(0.5))
        # a good size may still not hold the file's knobs (attn_tp 4 on 2 cards): only 8 keeps the file valid
        b.add(["--cards", value], ("valid" if value == "8" else "any") if good else "invalid", f"--cards {value!r}")
    return b.case()


@st.composite
def sweep_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("sweep", draw)
    _solve_base(draw, b, fx, 0.25)
    cards = draw(st.sampled_from([("1,2", "valid"), ("1..2", "valid"), ("3", "valid"), ("6..10", "valid"),
                                  ("6..7", "valid"), ("2,1", "valid"), ("1,1", "valid"), (" 1, 2", "valid")] + ([] if b.clean else [
        ("1,,2", "invalid"), ("1..2..4", "invalid"), ("1,2,", "invalid"), ("0..2", "invalid"),
        ("0", "invalid"), ("8..2147483648", "invalid"), ("99999999999999999999", "invalid"), ("abc", "invalid"),
        ("2..1", "invalid"), ("9" * 5000, "invalid")])))
    b.add(["--cards", cards[0], "--scenarios", "latency", "--max-concurrency", "16", "--time-limit", "2"], cards[1],
          f"--cards {cards[0][:20]!r}")
    r = draw(st.floats(0, 1))
    if r < 0.6:
        out, label, why = b.file(draw, fx.outs)
        b.add(["--out", out], label, why, "output")
        if not b.clean and draw(st.floats(0, 1)) < 0.2:
            fmt = draw(st.sampled_from(["csv", "json"]))
            b.add(["--format", fmt], "invalid", "--format with --out")
    elif r < 0.8:
        fmt = draw(st.sampled_from([("csv", "valid"), ("json", "valid"), ("table", "valid")]
                                   + ([] if b.clean else [("xml", "invalid")])))
        b.add(["--format", fmt[0]], fmt[1], f"--format {fmt[0]}")
    if draw(st.floats(0, 1)) < 0.15:
        plot = draw(st.sampled_from([(str(fx.folder / "out" / "p.png"), "valid")] + ([] if b.clean else [
            (str(fx.folder / "out" / "p.bmpx"), "invalid"), (str(fx.folder / "out" / "fifo.csv"), "invalid")])))
        b.add(["--plot", plot[0]], plot[1], f"--plot {Path(plot[0]).name}", "output")
    for flag, kind in draw(st.lists(st.sampled_from([("--jobs", "jobs"), ("--top", "top"), ("--seed", "seed"),
                                                     ("--isl", "tokens"), ("--tpot-ms", "ms"), ("--mtp", "mtp0")]),
                                    max_size=2, unique=True)):
        b.opt(draw, flag, kind, 0.6)
    return b.case(slow=True)


@st.composite
def recommend_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("recommend", draw)
    _solve_base(draw, b, fx, 0.25)
    b.add(["--cards", "1,2", "--max-concurrency", "16", "--time-limit", "2"], "valid")
    which = draw(st.sampled_from(["--target-output-tokens-per-s", "--target-requests-per-s"]
                                 + ([] if b.clean else ["both", "none"])))
    if which in ("both", "none"):
        b.add(["--target-output-tokens-per-s", "500", "--target-requests-per-s", "1"] if which == "both" else [],
              "invalid", f"targets: {which}")
    else:
        b.opt(draw, which, "rate", 0.5)
    if not b.clean and draw(st.floats(0, 1)) < 0.3:
        price = draw(st.sampled_from([("h100_sxm=2.5", None), ("h100_sxm=cheap", "invalid"),
                                      ("h100_sxm=nan", "invalid"), ("h100_sxm=-1", "invalid"),
                                      ("nowhere=3", "invalid")]))
        label = price[1] or ("valid" if "h100_sxm" in b.argv else "any" if any(a.endswith("hw-ok.yaml")
                                                                               for a in b.argv) else "invalid")
        b.add(["--price", price[0]], label, f"--price {price[0]}")
    for flag, kind in draw(st.lists(st.sampled_from([("--tpot-ms", "ms"), ("--isl", "tokens"), ("--mtp", "mtp0"),
                                                     ("--format", "format")]), max_size=2, unique=True)):
        b.opt(draw, flag, kind, 0.6)
    return b.case(slow=True)


@st.composite
def calibrate_cases(draw, fx: Fixtures) -> Case:
    b = _Builder("calibrate", draw)
    if not b.clean and draw(st.floats(0, 1)) < 0.05:
        b.add(["t" * 300 + ".json"], "invalid", "a 300-character trace name")
        return b.case()
    path, label, why = b.file(draw, fx.traces)
    b.add([path], label, why, "file")
    if draw(st.floats(0, 1)) < 0.4:
        cfg, label, why = b.file(draw, fx.configs)
        b.add(["--config", cfg, "--model", "qwen3-30b-a3b", "--hardware", "h200_sxm"], label, why, "file")
        if label == "valid" and path.endswith(("tr-ok.json.gz", "rank_0.pt.trace.json")):
            pass  # one rank of an 8-rank config: allowed (a note)
    if draw(st.floats(0, 1)) < 0.3:
        b.opt(draw, "--peak-memory-gb", "gb", 0.5)
    if draw(st.floats(0, 1)) < 0.2:
        b.opt(draw, "--format", "format", 0.3)
    return b.case()


# weight and KV formats by the rules of hardware/h100_sxm.yaml and h200_sxm.yaml (peak_flops bf16, fp8 and int8;
# fp4 and int4 weight-only) and of the KV cache (16-bit or one byte), under the generic profile these cases run
# (no engine whose command cannot spell a format): (value, good?)
WEIGHT_FORMATS = [("bf16", True), ("fp16", True), ("fp8", True), ("fp8_block", True), ("int4", True),
                  ("mxfp4", True), ("nvfp4", True), ("int8", True), ("fp3", False)]
KV_FORMATS = [("bf16", True), ("fp16", True), ("fp8", True), ("FP8", True), ("int8", True), ("int4", False),
              ("mxfp4", False)]
DENSE_MODELS = ("qwen3-8b", "llama-3.1-8b")  # no routed experts: --moe-weight-dtype is bad input


def _formats(draw, b: _Builder, model: str) -> None:
    """Weight / routed-expert / KV formats in combination; routed-expert weights on a dense model are bad input."""
    pools = {"--weight-dtype": WEIGHT_FORMATS, "--moe-weight-dtype": WEIGHT_FORMATS, "--kv-dtype": KV_FORMATS}
    for flag in draw(st.lists(st.sampled_from(list(pools)), min_size=1, max_size=3, unique=True)):
        pool = pools[flag]
        value, good = draw(st.sampled_from([v for v in pool if v[1]] if b.clean else pool))
        if flag == "--moe-weight-dtype" and model in DENSE_MODELS:
            good = False
        b.add([flag, value], "valid" if good else "invalid", f"{flag} {value}")


@st.composite
def solve_edge_cases(draw) -> Case:
    """What solve_cases never draws: cards that are not a power of two, both SLAs at once (one the phase lacks is
    bad input), format combinations, a fixed concurrency against the range's bound, disaggregated serving."""
    b = _Builder("solve", draw)
    model = draw(st.sampled_from(SMALL_MODELS))
    max_conc = draw(st.sampled_from([16, 64]))
    b.add([model, "--hardware", draw(st.sampled_from(SMALL_HW)), "--cards", draw(st.sampled_from(["3", "6", "12"])),
           "--max-concurrency", str(max_conc), "--time-limit", "2"], "valid")
    phase = draw(st.sampled_from(["serving", "decode", "prefill"]))
    if phase != "serving":
        b.add(["--phase", phase], "valid")
    if draw(st.booleans()):
        conc = draw(st.sampled_from([8, 16, 32, 128]))
        b.add(["--concurrency", str(conc)], "valid" if conc <= max_conc else "invalid",
              f"--concurrency {conc} over --max-concurrency {max_conc}")
    if draw(st.booleans()):
        b.add(["--ttft-ms", draw(st.sampled_from(["50", "2000"])), "--tpot-ms", draw(st.sampled_from(["5", "50"]))],
              "valid" if phase == "serving" else "invalid", f"both SLAs with --phase {phase}")
    if draw(st.booleans()):
        _formats(draw, b, model)
    if phase == "serving" and draw(st.floats(0, 1)) < 0.15:
        b.add(["--serving", "disagg"], "valid")
    return b.case(slow=True)


@st.composite
def format_cases(draw, fx: Fixtures) -> Case:
    """memory / estimate of one configuration under format combinations."""
    b = _Builder(draw(st.sampled_from(["memory", "estimate"])), draw)
    model = draw(st.sampled_from(SMALL_MODELS))
    b.add([model, "--hardware", draw(st.sampled_from(SMALL_HW)), "--cards", "8", "--attn-tp", "8"], "valid")
    if b.cmd == "memory":
        b.add(["--batch", "8", "--seq-len", "4096"], "valid")
    else:
        b.add(["--isl", "4096", "--osl", "256", "--concurrency", "16"], "valid")
    _formats(draw, b, model)
    return b.case()


@st.composite
def solve_file_cases(draw, fx: Fixtures) -> Case:
    """check / launch on `solve --format yaml` output edited by hand (tests/fuzz_cases._solve_files). A file of
    three candidates read without --candidate, or with one it does not hold, is bad input."""
    b = _Builder(draw(st.sampled_from(["check", "launch"])), draw)
    path, label, why = b.file(draw, fx.solve_files)
    if b.cmd == "launch" and path.endswith("solve-fwbad.yaml"):
        label = "valid"  # --engine, which launch always gets here, overrides the file's framework
    b.add([path], label, why, "file")
    pick = draw(st.sampled_from([("a", "valid"), ("1", "valid"), ("candidate_a", "valid")]
                                + ([] if b.clean else [(None, "invalid"), ("d", "invalid"), ("0", "invalid")])))
    if pick[0] is not None:
        b.add(["--candidate", pick[0]], pick[1], f"--candidate {pick[0]}")
    else:
        b.add([], "invalid", "three candidates, none named")
    if b.cmd == "launch":
        # candidate a (generic planner, Attn TP8 + EP) under the generic profile is expressible; another engine
        # may refuse its knobs (exit 2 naming the rule)
        engine = draw(st.sampled_from(["generic", "vllm", "sglang"]))
        b.add(["--engine", engine], "valid" if engine == "generic" else "any", f"--engine {engine}")
    return b.case()


ODD_CARDS = (1, 2, 3, 6, 8, 12, 24)  # whole nodes of some topology, and not of others


def _moe_model(model: str) -> bool:
    return model == "qwen3-30b-a3b" or "cfgdir-q30" in model


@st.composite
def topology_cases(draw, fx: Fixtures) -> Case:
    """Every command that takes a device, on a user's device file of another node shape (fx.topologies), with the
    model by catalog name or as a config.json path / folder, at card counts that are not powers of two; solve also
    disaggregated under SLAs. Valid knobs keep TP a power of two and, on the MoE model, EP = cards / --moe-tp a
    power of two (so it divides the 128 experts)."""
    b = _Builder(draw(st.sampled_from(["memory", "estimate", "solve", "sweep", "recommend", "check", "launch"])),
                 draw)
    hw, hw_label, hw_why = b.file(draw, fx.topologies)
    model = draw(st.sampled_from([*SMALL_MODELS, *(p for p, _, _ in fx.config_dirs)]))
    cards = draw(st.sampled_from(ODD_CARDS))
    if b.cmd in ("check", "launch"):
        dep = next(p for p, lab, _ in fx.deployments if lab == "valid" and p.endswith("dep-ok.yaml"))
        # the file's qwen3-30b-a3b, attn_tp 4 and moe_tp 1 on the cards given: EP = cards must divide 128 and
        # attn_tp 4 the cards, else a class-A finding (check: exit 1; launch: exit 2 naming it)
        cards = draw(st.sampled_from([4, 8, 12, 24]))
        same = [p for p, _, _ in fx.config_dirs if "q30" in p] + ["qwen3-30b-a3b"]
        b.add([dep, "--model", draw(st.sampled_from(same)), "--cards", str(cards)], "valid")
        b.add(["--hardware", hw], hw_label if b.cmd == "check" or hw_label == "invalid" else "any", hw_why, "file")
        if b.cmd == "launch":
            b.add(["--engine", draw(st.sampled_from(["generic", "vllm", "sglang", "trtllm"]))], "any")
        return b.case()
    b.add([model, "--hardware", hw], hw_label, hw_why, "file")
    p2 = cards & -cards
    if b.cmd in ("memory", "estimate"):
        attn = draw(st.sampled_from([d for d in (1, 2, 4, 8) if p2 % d == 0]))
        b.add(["--cards", str(cards), "--attn-tp", str(attn)], "valid")
        if _moe_model(model):
            b.add(["--moe-tp", str(draw(st.sampled_from(sorted({cards, cards // p2}))))], "valid")
        b.add(["--batch", "8", "--seq-len", "2048"] if b.cmd == "memory"
              else ["--isl", "2048", "--osl", "256", "--concurrency", "16"], "valid")
        return b.case()
    b.add(["--max-concurrency", "16", "--time-limit", "2"], "valid")
    if b.cmd == "sweep":
        b.add(["--cards", draw(st.sampled_from(["3,6", "6..12", "12,24", "1..3"])), "--scenarios", "latency"], "valid")
        return b.case(slow=True)
    if b.cmd == "recommend":
        b.add(["--cards", draw(st.sampled_from(["1..12", "6,12,24"])), "--target-output-tokens-per-s",
               draw(st.sampled_from(["500", "20000"]))], "valid")
        return b.case(slow=True)
    b.add(["--cards", str(cards)], "valid")
    b.add(["--framework", draw(st.sampled_from(["generic", "vllm", "sglang"]))], "valid")
    if draw(st.booleans()):
        b.add(["--serving", "disagg"], "valid" if cards > 1 else "invalid", "disagg on 1 card (one per pool)")
        slas = draw(st.sampled_from([[], ["--ttft-ms", "2000"], ["--tpot-ms", "50"], ["--ttft-ms", "1"],
                                     ["--ttft-ms", "500", "--tpot-ms", "20"], ["--tpot-ms", "0.5"]]))
        b.add(slas, "valid")  # an SLA nothing meets is exit 1 with the binding SLA and a remedy
    return b.case(slow=True)


FAMILY_HW = ("h100_sxm", "h200_sxm", "b200_sxm", "mi355x")


@st.composite
def family_cases(draw, fx: Fixtures) -> Case:
    """Today's new readers through every subcommand: a quantized checkpoint config, a looped / shared-block stack
    or a hand edit of either (fx.families) as the model of inspect, memory, estimate, solve (aggregated, throughput
    at the memory edge, disaggregated under SLAs), sweep, recommend, check and launch (a deployment file with
    --model). A good model is valid where the command has no other reason to refuse: a launch under an engine may
    not express the file's knobs ("any")."""
    b = _Builder(draw(st.sampled_from(["inspect", "memory", "estimate", "solve", "solve", "sweep", "recommend",
                                       "check", "launch"])), draw)
    model, label, why = draw(st.sampled_from(fx.families))
    hw = draw(st.sampled_from(FAMILY_HW))
    if b.cmd == "inspect":
        b.add([model], label, why, "model-config")
        return b.case()
    if b.cmd in ("check", "launch"):
        dep = next(p for p, lab, _ in fx.deployments if lab == "valid" and p.endswith("dep-min.yaml"))
        b.add([dep, "--model", model, "--hardware", hw], label, why, "model-config")
        if b.cmd == "launch":
            b.add(["--engine", draw(st.sampled_from(["generic", "vllm", "sglang"]))], "any")
        return b.case()
    b.add([model, "--hardware", hw], label, why, "model-config")
    cards = draw(st.sampled_from([1, 2, 8]))
    if b.cmd in ("memory", "estimate"):
        b.add(["--cards", str(cards), "--attn-tp", "1"], "valid")
        b.add(["--batch", "8", "--seq-len", "2048"] if b.cmd == "memory"
              else ["--isl", "2048", "--osl", "256", "--concurrency", "16"], "valid")
        return b.case()
    b.add(["--time-limit", "2"], "valid")
    if b.cmd == "sweep":
        b.add(["--cards", draw(st.sampled_from(["1,2", "2..8"])), "--scenarios", "throughput"], "valid")
        return b.case(slow=True)
    if b.cmd == "recommend":
        b.add(["--cards", "1..8", "--target-output-tokens-per-s", draw(st.sampled_from(["500", "20000"]))],
              "valid")
        return b.case(slow=True)
    b.add(["--cards", str(cards), "--framework", draw(st.sampled_from(["generic", "vllm", "sglang"]))], "valid")
    mode = draw(st.sampled_from(["throughput", "latency", "disagg"]))
    if mode == "disagg":
        b.add(["--serving", "disagg", "--max-concurrency", "16"], "valid" if cards > 1 else "invalid",
              "disagg on 1 card (one per pool)")
        b.add(draw(st.sampled_from([[], ["--ttft-ms", "2000"], ["--tpot-ms", "30"], ["--tpot-ms", "0.5"]])),
              "valid")
    else:  # throughput: the concurrencies run to the memory edge
        b.add(["--scenario", mode, "--isl", "4096", "--osl", "1024"], "valid")
    return b.case(slow=True)


@st.composite
def batch_rule_cases(draw) -> Case:
    """An engine whose rules read the batch (cann-recipes: a multiple of the attention DP size) on Atlas A3 worlds
    with an odd factor: a fixed --concurrency its layouts may refuse (exit 1 with the nearest it runs), a range,
    or a throughput plan whose memory edge must be a batch it runs; and the same through sweep."""
    b = _Builder(draw(st.sampled_from(["solve", "solve", "sweep"])), draw)
    b.add([draw(st.sampled_from(["qwen3-30b-a3b", "deepseek-v3"])), "--hardware", "atlas_a3", "--framework",
           "cann-recipes", "--isl", draw(st.sampled_from(["1024", "8192"])), "--osl", "256", "--time-limit", "2"],
          "valid")
    load = draw(st.sampled_from([["--concurrency", str(c)] for c in (3, 7, 25, 97, 100, 1996, 2893)]
                                + [["--max-concurrency", "100"], ["--scenario", "throughput"]]))
    b.add(load, "valid")
    if b.cmd == "sweep":
        b.add(["--cards", draw(st.sampled_from(["6,12", "24,48", "16..48"])), "--scenarios", "balanced"], "valid")
    else:
        b.add(["--cards", str(draw(st.sampled_from([6, 12, 24, 48])))], "valid")
    return b.case(slow=True)


# ------------------------------------------------------------------------------------ this session's inputs

PRICE_MODELS = ("qwen3-8b", "llama-3.1-8b")


@st.composite
def _price_items(draw, b: _Builder, swept: list[str]) -> None:
    """--price items for a sweep of `swept` (README, sweep --help: "one for every hardware swept"; recommend
    --help: HARDWARE=PRICE, a price per card-hour). Valid: each swept hardware priced once (or twice alike), by
    its catalog name in another case, comma-separated in one --price. Invalid: a hardware not swept, one swept
    left unpriced, a price not a number, <= 0, inf (1e400 too) or nan, two different prices for one hardware, an
    item without '=' or without a hardware, an empty item."""
    items = [[f"{h}={draw(st.sampled_from(['2.5', '3', '0.75', '12']))}"] for h in swept]
    fault = None if b.clean else draw(st.sampled_from(
        [None, "not-swept", "missing", "word", "negative", "zero", "inf", "nan", "twice-differ", "twice-same",
         "no-equals", "upper", "comma", "empty-key", "overflow", "empty-item"]))
    why = f"--price {fault}"
    label = "invalid"
    if fault == "not-swept":
        other = "b200_sxm" if "h200_sxm" in swept else "h200_sxm"
        items.append([f"{other}=4"])
    elif fault == "missing":
        items = items[:-1] if len(items) > 1 else []
        if not items:  # no --price at all is a sweep without prices: valid; price another hardware instead
            items = [["mi355x=2"]]
    elif fault in ("word", "negative", "zero", "inf", "nan", "overflow"):
        value = {"word": "cheap", "negative": "-1", "zero": "0", "inf": "inf", "nan": "nan",
                 "overflow": "1e400"}[fault]
        items[-1] = [f"{swept[-1]}={value}"]
    elif fault in ("twice-differ", "twice-same"):
        first = items[0][0]
        again = first if fault == "twice-same" else first.split("=")[0] + "=99"
        items.append([again])
        label = "valid" if fault == "twice-same" else "invalid"  # the same price twice says one thing
    elif fault == "no-equals":
        items[-1] = [swept[-1]]
    elif fault == "upper":  # a catalog name in another case names the same hardware
        items[0] = [items[0][0].upper()]
        label = "valid"
    elif fault == "comma":  # HARDWARE=PRICE items comma-separated in one --price
        items = [[",".join(i[0] for i in items)]]
        label = "valid"
    elif fault == "empty-key":
        items[-1] = ["=3"]
    elif fault == "empty-item":  # a trailing comma: an item meant and not written
        items[-1] = [items[-1][0] + ","]
    else:
        label = "valid"
    for item in items:
        b.add(["--price", *item], "valid")
    b.add([], label, why if label == "invalid" else "")


@st.composite
def sweep_price_cases(draw, fx: Fixtures) -> Case:
    """sweep --price over one or two hardware, aggregated or disaggregated (--serving disagg prices its rows
    too); a bad price is refused before any solve."""
    b = _Builder("sweep", draw)
    swept = draw(st.sampled_from([["h100_sxm"], ["h100_sxm", "h200_sxm"], ["h200_sxm"]]))
    b.add([draw(st.sampled_from(PRICE_MODELS)), *[a for h in swept for a in ("--hardware", h)], "--cards",
           draw(st.sampled_from(["1,2", "2"])), "--scenarios", "latency", "--max-concurrency", "16", "--time-limit",
           "2"], "valid")
    if draw(st.floats(0, 1)) < 0.3:  # a card per pool: the sizes swept start at 2
        b.argv[b.argv.index("--cards") + 1] = draw(st.sampled_from(["2,4", "2"]))
        b.add(["--serving", "disagg", "--format", "json"], "valid")
    draw(_price_items(b, swept))
    return b.case(slow=True)


GOOD_BAD["copies"] = ([("1", True), ("2", True), ("4", True), ("65536", True)],
                      [("0", False), ("-1", False), ("x", False), ("65537", False), ("1.5", False), ("", False)])
GOOD_BAD["prefix"] = ([("0", True), ("0.5", True), ("0.9", True), ("0.999", True)],
                      [("1", False), ("1.0", False), ("-0.1", False), ("nan", False), ("inf", False), ("x", False),
                       ("2", False)])


@st.composite
def disagg_copies_cases(draw, fx: Fixtures) -> Case:
    """recommend --serving disagg --max-copies N (recommend --help: "most copies of one deployment behind a load
    balancer", an integer >= 1 up to the largest cluster), with a target, SLAs and prices now and then."""
    b = _Builder("recommend", draw)
    b.add([draw(st.sampled_from(SMALL_MODELS)), "--hardware", draw(st.sampled_from(SMALL_HW)), "--cards",
           draw(st.sampled_from(["2..8", "2,4", "4"])), "--serving", "disagg", "--max-concurrency", "16",
           "--time-limit", "2", "--target-output-tokens-per-s", draw(st.sampled_from(["500", "5000", "50000"]))],
          "valid")
    b.opt(draw, "--max-copies", "copies", 0.5)
    if draw(st.booleans()):
        b.add(draw(st.sampled_from([["--ttft-ms", "2000"], ["--tpot-ms", "50"], ["--tpot-ms", "0.5"]])), "valid")
    if draw(st.floats(0, 1)) < 0.3:
        b.opt(draw, "--prefix-hit", "prefix", 0.4)
    return b.case(slow=True)


@st.composite
def disagg_sla_cases(draw, fx: Fixtures) -> Case:
    """solve / sweep --serving disagg under SLAs and --prefix-hit (--help: a share in [0, 1)); disaggregated
    serving needs a card per pool (solve on 1 card is bad input)."""
    b = _Builder(draw(st.sampled_from(["solve", "sweep"])), draw)
    b.add([draw(st.sampled_from(SMALL_MODELS)), "--hardware", draw(st.sampled_from(SMALL_HW)), "--serving", "disagg",
           "--max-concurrency", "16", "--time-limit", "2"], "valid")
    if b.cmd == "solve":
        cards = draw(st.sampled_from([1, 2, 4, 8]))
        b.add(["--cards", str(cards)], "valid" if cards > 1 else "invalid", "disagg on 1 card (one per pool)")
        b.add(["--framework", draw(st.sampled_from(["generic", "vllm", "sglang"]))], "valid")
    else:
        b.add(["--cards", draw(st.sampled_from(["2,4", "2..8", "4"])), "--scenarios",
               draw(st.sampled_from(["latency", "throughput", "balanced"])), "--format", "json"], "valid")
    b.add(draw(st.sampled_from([[], ["--ttft-ms", "2000"], ["--tpot-ms", "30"], ["--ttft-ms", "1"],
                                ["--ttft-ms", "500", "--tpot-ms", "20"], ["--tpot-ms", "0.5"]])), "valid")
    b.opt(draw, "--prefix-hit", "prefix", 0.4)
    if draw(st.booleans()):
        b.add(["--isl", draw(st.sampled_from(["1024", "8192"])), "--osl", "256"], "valid")
    return b.case(slow=True)


# catalog configs whose class defaults num_hidden_layers (transformers' config classes, as the reader's notes
# name them), and gpt-oss, whose layer_types list then disagrees with the class's 36 (refused, README: nothing
# guessed)
NO_LAYERS = (("Qwen--Qwen3-8B", "valid"), ("meta-llama--Meta-Llama-3.1-8B", "valid"),
             ("mistralai--Mixtral-8x7B-v0.1", "valid"), ("deepseek-ai--DeepSeek-V3", "valid"),
             ("google--gemma-3-4b-it", "valid"), ("zai-org--GLM-5", "valid"), ("openai--gpt-oss-20b", "invalid"))


def _drop_layers(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("num_hidden_layers", None)
        for v in node.values():
            _drop_layers(v)


def _no_layer_configs(folder: Path) -> list[tuple[str, str, str]]:
    out = []
    for stem, label in NO_LAYERS:
        data = json.loads((REPO / "models" / f"{stem}.json").read_text())
        _drop_layers(data)
        p = folder / f"nolayers-{stem}.json"
        p.write_text(json.dumps(data))
        out.append((str(p), label, f"{stem} without num_hidden_layers"))
    return out


@st.composite
def no_layers_cases(draw, fx: Fixtures) -> Case:
    """A config without num_hidden_layers (fx.no_layers) through inspect, memory, estimate and solve: read at its
    class's default where the class has one and nothing contradicts it."""
    b = _Builder(draw(st.sampled_from(["inspect", "memory", "estimate", "solve"])), draw)
    path, label, why = draw(st.sampled_from(fx.no_layers))
    b.add([path], label, why, "model-config")
    if b.cmd == "inspect":
        return b.case()
    hw = draw(st.sampled_from(["h200_sxm", "b200_sxm"]))
    b.add(["--hardware", hw, "--cards", "8"], "valid")
    if b.cmd == "memory":
        b.add(["--attn-tp", "8", "--batch", "8", "--seq-len", "4096"], "valid")
    elif b.cmd == "estimate":
        b.add(["--attn-tp", "8", "--isl", "2048", "--osl", "256", "--concurrency", "16"], "valid")
    else:
        b.add(["--max-concurrency", "16", "--time-limit", "2"], "valid")
    return b.case(slow=b.cmd == "solve")


DSA_MODELS = ("deepseek-v3.2", "glm-5", "deepseek-v4-pro")
ENGINES = ("generic", "vllm", "sglang", "trtllm", "atom", "vllm-ascend", "cann-recipes")


@st.composite
def long_dsa_memory_cases(draw, fx: Fixtures) -> Case:
    """memory at 128K to 1M tokens on the sparse-attention (DSA) models under every --framework, with every
    module TP over one node's 8 cards (a layout each engine runs on one node; on two, "any"); a context past the
    model's is the user's to ask (memory reports; exit 1 where it does not fit)."""
    b = _Builder("memory", draw)
    cards = draw(st.sampled_from([8, 16]))
    engine = draw(st.sampled_from(ENGINES))
    b.add([draw(st.sampled_from(DSA_MODELS)), "--hardware", draw(st.sampled_from(["h200_sxm", "b200_sxm"])),
           "--cards", str(cards), "--attn-tp", "8", "--dense-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8",
           "--batch", draw(st.sampled_from(["1", "4", "32"])),
           "--seq-len", draw(st.sampled_from(["131072", "163840", "262144", "524288", "1048576"])),
           "--framework", engine], "valid")
    if cards > 8 and engine != "generic":  # two nodes, TP within one: an engine's rules may refuse the layout
        b.add([], "any", f"{engine} on two nodes")
    if draw(st.booleans()):
        b.add(["--kv-dtype", draw(st.sampled_from(["bf16", "fp8"]))], "valid")
    if draw(st.floats(0, 1)) < 0.3:
        b.add(["--format", "json"], "valid")
    return b.case()


# solve --format yaml under each engine, the file read by launch (built on first use: a solve each); the DSA
# model on the fewest cards of each device that hold its 1.34 TB of bf16 weights (solve's remedy on atlas_a3: 24)
ENGINE_SOLVES = (("qwen3-30b-a3b", "8"), ("llama-3.1-8b", "2"), ("deepseek-v3.2", None))
ENGINE_HW = {"vllm-ascend": "atlas_a3", "cann-recipes": "atlas_a3", "atom": "mi355x"}
DSA_CARDS = {"h200_sxm": "16", "atlas_a3": "32", "mi355x": "8"}
DISAGG_ENGINES = ("sglang", "vllm", "generic")  # solve --serving disagg: a plan of two pools, which launch refuses


def _engine_solves(fx: Fixtures) -> list[tuple[str, str, str]]:
    if fx.engine_solves is None:
        from click.testing import CliRunner

        from solver.cli.main import main

        fx.engine_solves = []
        for engine in ENGINES:
            hw = ENGINE_HW.get(engine, "h200_sxm")
            for model, cards in ENGINE_SOLVES:
                cards = cards or DSA_CARDS[hw]
                for serving in ("agg", "disagg") if engine in DISAGG_ENGINES else ("agg",):
                    r = CliRunner().invoke(main, ["solve", model, "--hardware", hw, "--cards", cards, "--framework",
                                                  engine, "--max-concurrency", "16", "--time-limit", "2", "--format",
                                                  "yaml", "--serving", serving])
                    if r.exit_code != 0:
                        continue  # nothing to launch (an infeasible plan): no case
                    p = fx.folder / f"solved-{engine}-{model}-{cards}-{serving}.yaml"
                    p.write_text(r.stdout)
                    fx.engine_solves.append((str(p), engine, f"solve {model} on {cards} {hw} under {engine}"
                                             + (", disaggregated" if serving == "disagg" else "")))
    return fx.engine_solves


@st.composite
def launch_solved_cases(draw, fx: Fixtures) -> Case:
    """launch of a file solve wrote under an engine: each candidate solve planned under that engine is one it
    expresses (valid, with --engine E or none); under another engine "any" (its rules may refuse the knobs); a
    disaggregated plan (two pools, not a deployment) is refused."""
    b = _Builder("launch", draw)
    solved = _engine_solves(fx)
    if not solved:
        b.add(["no-solve-output.yaml"], "invalid", "no solve output to launch")
        return b.case()
    path, engine, why = draw(st.sampled_from(solved))
    if why.endswith("disaggregated"):  # README: launch reads a deployment; a two-pool plan's commands are solve's
        b.add([path], "invalid", why, "file")
        if draw(st.booleans()):
            b.add(["--engine", engine], "valid")
        return b.case()
    held = sorted(k.removeprefix("candidate_") for k in yaml.safe_load(Path(path).read_text())
                  if k.startswith("candidate_"))
    b.add([path, "--candidate", draw(st.sampled_from(held))], "valid", why)
    other = draw(st.sampled_from([None, engine, *ENGINES]))
    if other is not None:
        b.add(["--engine", other], "valid" if other == engine else "any", f"--engine {other}")
    if draw(st.booleans()):
        b.add(["--format", draw(st.sampled_from(["shell", "json", "yaml"]))], "valid")
    return b.case()


# ------------------------------------------------------------------- session 46: AFD, wide vLLM DP, multi-node launch

AFD_REF = REPO / "references" / "lc-afd.yaml"
# estimate's form of lc-afd (tests/test_afd46g.py ESTIMATE): its knobs and workload over both halves' 128 cards
AFD_ESTIMATE = ["longcat-flash", "--hardware", "atlas_a3", "--framework", "cann-recipes", "--dense-tp", "8",
                "--oproj-tp", "8", "--weight-dtype", "int8", "--kv-dtype", "bf16"]
AFD_DECODE = ["--phase", "decode", "--batch", "256", "--isl", "4608", "--osl", "128"]
# world sizes for lc-afd's knobs (dense 8, o_proj 8, lmhead 16): every TP must divide half the world
# (cann-recipes C.afd_tp_divides_half_world) and the world (so no class-A finding comes first)
AFD_GOOD_CARDS = ("32", "64", "128")  # halves 16, 32, 64: 16 divides each, and the EP of a half the 512 experts
AFD_BAD_CARDS = ("48", "80")  # halves 24, 40: lmhead_tp 16 divides neither (it divides 48 and 80)


def _afd_files(folder: Path) -> list[tuple[str, str, str]]:
    """lc-afd (the verified AFD deployment) as a deployment file, and edited by the rules docs/bring-your-own.md
    and specs/afd.py state: a framework whose profile lacks the feature, a workload other than a decode, MTP, a TP
    not dividing half the world, an afd value not a boolean are refused; half the world still divided by every TP,
    afd false, another TP that divides the half are valid."""
    if not AFD_REF.is_file():
        return []
    from solver.specs.reference import Reference, deployment_data

    dep = deployment_data(Reference(**yaml.safe_load(AFD_REF.read_text())))
    pc = "parallel_config"
    edits = [
        ("asis", dep, "valid", "lc-afd as it ran"),
        ("ws64", _set(dep, "world_size", 64), "valid", "world_size 64 (halves of 32: every TP divides them)"),
        ("lm64", _set(dep, f"{pc}.lmhead_tp_size", 64), "valid", "lmhead_tp_size 64 (divides the half, 64)"),
        ("off", _set(dep, "afd", False), "valid", "afd false (one world, not two halves)"),
        ("nokey", _set(dep, "afd", _DELETE), "valid", "afd left out (false)"),
        ("vllm-ascend", _set(dep, "framework", "vllm-ascend"), "invalid", "afd under vllm-ascend (no AFD)"),
        ("generic", _set(dep, "framework", "generic"), "invalid", "afd under generic (no AFD)"),
        ("sglang", _set(dep, "framework", "sglang"), "invalid", "afd under sglang (no AFD)"),
        ("prefill", _set(dep, "workload", {"phase": "prefill", "batch": 64, "seq_len": 4096}), "invalid",
         "afd on a prefill"),
        ("serving", _set(dep, "workload", {"isl": 4608, "osl": 128, "concurrency": 256}), "invalid",
         "afd on a serving workload"),
        ("mtp", _set(dep, "mtp", 1), "invalid", "afd with mtp 1"),
        ("lm128", _set(dep, f"{pc}.lmhead_tp_size", 128), "invalid", "lmhead_tp_size 128 of a 64-rank half"),
        ("op128", _set(dep, f"{pc}.o_proj_tp_size", 128), "invalid", "o_proj_tp_size 128 of a 64-rank half"),
        ("ws48", _set(dep, "world_size", 48), "invalid", "world_size 48: lmhead_tp_size 16 of a 24-rank half"),
        ("yes", _set(dep, "afd", "yes"), "invalid", "afd: 'yes'"),
        ("one", _set(dep, "afd", 1), "invalid", "afd: 1"),
        ("null", _set(dep, "afd", None), "invalid", "afd: null"),
        ("list", _set(dep, "afd", [True]), "invalid", "afd: [true]"),
    ]
    out = []
    for name, data, label, why in edits:
        out.append((_dump_yaml(folder / f"afd-{name}.yaml", data), label, why))
    return out


@st.composite
def afd_check_cases(draw, fx: Fixtures) -> Case:
    """`check` of an AFD deployment file (fx.afd_files), now and then with --cards (a world size whose half every
    TP divides: valid; else, or an odd one, invalid), --framework (only cann-recipes runs AFD), --format."""
    b = _Builder("check", draw)
    if not fx.afd_files:
        b.add(["no-afd-reference.yaml"], "invalid", "no lc-afd reference")
        return b.case()
    path, label, why = draw(st.sampled_from(fx.afd_files))
    b.add([path], label, why, "file")
    afd_on = path.endswith(("afd-asis.yaml", "afd-lm64.yaml", "afd-ws64.yaml"))
    if afd_on and draw(st.floats(0, 1)) < 0.3:
        cards = draw(st.sampled_from(AFD_GOOD_CARDS + AFD_BAD_CARDS + ("127",)))
        lm = 64 if path.endswith("afd-lm64.yaml") else 16
        ok = int(cards) % 2 == 0 and (int(cards) // 2) % lm == 0
        b.add(["--cards", cards], "valid" if ok else "invalid", f"--cards {cards}: lmhead_tp_size {lm} of a "
              f"{int(cards) // 2}-rank half")
    if afd_on and draw(st.floats(0, 1)) < 0.2:
        fw = draw(st.sampled_from(["cann-recipes", "vllm-ascend", "generic"]))
        b.add(["--framework", fw], "valid" if fw == "cann-recipes" else "invalid", f"afd under --framework {fw}")
    if draw(st.booleans()):
        b.add(["--format", draw(st.sampled_from(["table", "json", "yaml"]))], "valid")
    return b.case()


@st.composite
def afd_estimate_cases(draw) -> Case:
    """`estimate --afd` (its --help: half the cards attention, half FFN, the knobs within each half; a decode; the
    framework's profile must support it) on lc-afd's knobs: cards whose half lmhead TP divides (valid) or not, an
    lmhead TP over the half, an odd world, a framework without AFD, a prefill or serving workload, MTP, --from-csv
    (invalid)."""
    b = _Builder("estimate", draw)
    fault = draw(st.sampled_from([None, None, None, "cards", "lmhead", "framework", "prefill", "serving", "mtp",
                                  "csv", "odd"]))
    lm = draw(st.sampled_from(["16", "32"]))
    cards = draw(st.sampled_from(AFD_BAD_CARDS if fault == "cards" else AFD_GOOD_CARDS))
    argv = [*AFD_ESTIMATE, "--cards", cards, "--lmhead-tp", lm, *AFD_DECODE, "--afd"]
    # every TP divides the world and its half (dense and o_proj 8 divide every half drawn)
    tiles = int(cards) % int(lm) == 0 and (int(cards) // 2) % int(lm) == 0
    label, why = ("valid", "") if tiles else ("invalid", f"--lmhead-tp {lm} of a {int(cards) // 2}-rank half")
    if fault == "cards":
        pass
    elif fault == "lmhead":
        argv[argv.index("--lmhead-tp") + 1] = cards
        label, why = "invalid", f"--lmhead-tp {cards} of a {int(cards) // 2}-rank half"
    elif fault == "framework":  # a CUDA engine on atlas_a3 is refused too: invalid either way
        fw = draw(st.sampled_from(["vllm-ascend", "generic", "vllm", "sglang"]))
        argv[argv.index("--framework") + 1] = fw
        label, why = "invalid", f"--afd under {fw}"
    elif fault == "prefill":
        i = argv.index("--phase")
        argv[i:i + 8] = ["--phase", "prefill", "--batch", "8", "--seq-len", "4096"]
        label, why = "invalid", "--afd on a prefill"
    elif fault == "serving":
        i = argv.index("--phase")
        argv[i:i + 8] = ["--isl", "4608", "--osl", "128", "--concurrency", "256"]
        label, why = "invalid", "--afd on a serving workload"
    elif fault == "mtp":
        argv += ["--mtp", "1"]
        label, why = "invalid", "--afd with --mtp 1"
    elif fault == "odd":  # no two halves (whatever the profile's rules on a half say)
        cards = draw(st.sampled_from(["127", "3", "1"]))
        argv[argv.index("--cards") + 1] = cards
        label, why = "invalid", f"--afd on {cards} cards (odd)"
    elif fault == "csv":
        argv = ["--from-csv", "rows.csv", "--out", "-", "--afd"]
        label, why = "invalid", "--afd with --from-csv"
    b.add(argv, label, why)
    if draw(st.booleans()):
        b.add(["--format", draw(st.sampled_from(["table", "json", "yaml"]))], "valid")
    return b.case()


@st.composite
def afd_launch_cases(draw, fx: Fixtures) -> Case:
    """`launch` of an AFD deployment file: README/launch refuses afd (no profile writes AFD commands) under every
    engine; afd false is an ordinary deployment the engine may or may not express ("any")."""
    b = _Builder("launch", draw)
    if not fx.afd_files:
        b.add(["no-afd-reference.yaml"], "invalid", "no lc-afd reference")
        return b.case()
    path, label, why = draw(st.sampled_from(fx.afd_files))
    if label == "valid":
        label = "any" if path.endswith(("afd-off.yaml", "afd-nokey.yaml")) else "invalid"
        why = why if label == "any" else f"launch of an AFD deployment ({why})"
    b.add([path], label, why, "file")
    b.add(["--engine", draw(st.sampled_from(["cann-recipes", "vllm-ascend", "generic"]))], "any")
    if draw(st.booleans()):
        b.add(["--format", draw(st.sampled_from(["shell", "json", "yaml"]))], "valid")
    return b.case()


def _tp_knobs(tp: int, pp: int = 1, moe_tp: int | None = None) -> dict:
    knobs = {"attn_tp_size": tp, "dense_tp_size": tp, "embed_tp_size": tp, "lmhead_tp_size": tp, "pp_size": pp}
    return knobs if moe_tp is None else {**knobs, "moe_tp_size": moe_tp}


# (engine, model, hardware, world, knobs, label, why): the multi-node shapes tests/test_launch46d.py and
# tests/test_feat46f.py pin as commands each engine starts (valid), the one vLLM refuses (invalid)
MULTINODE = [
    ("vllm", "deepseek-v3", "h200_sxm", 16, _tp_knobs(1, moe_tp=1), "valid", "vLLM attention DP16 + EP16, 2 nodes"),
    ("vllm", "llama-3.1-405b", "h100_sxm", 16, _tp_knobs(8, pp=2), "valid", "vLLM TP8 x PP2, --nnodes 2"),
    ("vllm", "llama-3.1-70b", "h100_sxm", 12, _tp_knobs(2), "valid", "vLLM TP2 x DP6 on 12 cards"),
    ("vllm", "deepseek-v3", "gb200", 16, _tp_knobs(1, moe_tp=1), "valid", "vLLM DP16 + EP on GB200 trays"),
    ("vllm", "llama-3.1-70b", "gb200", 16, _tp_knobs(8), "valid", "vLLM TP8 x DP2 over GB200 trays"),
    ("vllm", "llama-3.1-70b", "h100_sxm", 32, _tp_knobs(16), "valid", "vLLM TP16 x DP2 on 4 nodes"),
    ("vllm", "llama-3.1-70b", "h100_sxm", 32, _tp_knobs(8, pp=2), "valid", "vLLM TP8 x PP2 x DP2"),
    ("vllm", "llama-3.1-70b", "h100_sxm", 16, _tp_knobs(4, pp=2), "valid", "vLLM TP4 x PP2 x DP2, engine a node"),
    ("vllm", "deepseek-v3", "h100_sxm", 32, _tp_knobs(8, pp=2, moe_tp=1), "valid", "vLLM MoE TP8 x PP2 x DP2"),
    ("vllm", "llama-3.1-70b", "h100_sxm", 12, _tp_knobs(4, pp=3), "valid", "vLLM TP4 x PP3 on 2 x 6"),
    ("vllm", "llama-3.1-70b", "h100_sxm", 24, _tp_knobs(4, pp=3), "invalid",
     "vLLM TP4 x PP3 x DP2 on 3 nodes (--nnodes not divisible)"),
    # vLLM refuses PP only with elastic EP: the shape launches since stop 46's rank order (tests/test_place46h.py)
    ("vllm", "deepseek-v3", "h100_sxm", 16, _tp_knobs(4, pp=2, moe_tp=1), "valid",
     "vLLM MoE TP4 x PP2 x DP2 (a stage's MoE group over two nodes)"),
    ("sglang", "llama-3.1-405b", "gb200", 16, _tp_knobs(8, pp=2), "valid", "SGLang TP8 x PP2 on 4 trays"),
    ("sglang", "llama-3.1-70b", "gb200", 12, _tp_knobs(4, pp=3), "valid", "SGLang TP4 x PP3 on 3 trays"),
    ("sglang", "deepseek-v3", "gb200", 16, _tp_knobs(1, moe_tp=1), "valid", "SGLang attention DP16 on 4 trays"),
    ("sglang", "llama-3.1-70b", "h100_sxm", 16, _tp_knobs(4, pp=4), "valid", "SGLang TP4 x PP4 on 2 nodes"),
    ("trtllm", "llama-3.1-70b", "h100_sxm", 12, _tp_knobs(4, pp=3), "valid", "TRT-LLM TP4 x PP3, one MPI world"),
    ("cann-recipes", "deepseek-v3", "atlas_a3", 32, _tp_knobs(1, moe_tp=1), "valid", "cann-recipes DP32 + EP32"),
]
# the shapes whose commands read no head address (launch refuses --head-addr there): cann-recipes' one command
# names no host list (tests/test_launch46d.py)
HEAD_UNREAD = ("cann-recipes DP32 + EP32",)
MULTINODE_WORKLOAD = {"isl": 4096, "osl": 256, "concurrency": 64}


def _multinode_files(folder: Path) -> list[tuple[str, str, str, str]]:
    out = []
    for i, (engine, model, hw, world, knobs, label, why) in enumerate(MULTINODE):
        data = {"model": model, "hardware": hw, "framework": engine, "world_size": world, "parallel_config": knobs,
                "workload": MULTINODE_WORKLOAD}
        out.append((_dump_yaml(folder / f"multinode-{i}.yaml", data), engine, label, why))
    return out


@st.composite
def multinode_launch_cases(draw, fx: Fixtures) -> Case:
    """`launch` of a deployment past one node (fx.multinode_files) under its engine (--engine E or the file's):
    the shapes pinned as commands are valid, the shapes vLLM refuses invalid; under another engine "any" (its rules
    may refuse the knobs); --head-addr other than a host, an IP address or a shell variable, or where no command
    reads it, is invalid."""
    b = _Builder("launch", draw)
    path, engine, label, why = draw(st.sampled_from(fx.multinode_files))
    b.add([path], label, why, "file")
    other = draw(st.sampled_from([None, engine, engine, *ENGINES]))
    if other not in (None, engine) and label == "invalid":
        b.parts[-1] = ("any", "file", why + f", under {other}")  # refused by vLLM's rules, not necessarily another's
    if other is not None:
        b.add(["--engine", other], "valid" if other == engine else "any", f"--engine {other}")
    if draw(st.floats(0, 1)) < 0.3:
        # launch --help: a host name, an IP address or a shell variable; no port, nothing empty or flag-like
        head = draw(st.sampled_from([("10.0.0.1", "valid"), ("node-0.cluster", "valid"), ("${MY_HEAD}", "valid"),
                                     ("", "invalid"), ("a b", "invalid"), ("$(hostname)", "invalid"),
                                     ("10.0.0.1:80", "invalid"), ("-x", "invalid")]))
        unread = why in HEAD_UNREAD and other in (None, engine)
        b.add(["--head-addr", head[0]], "invalid" if unread else head[1],
              f"--head-addr {head[0]!r}" + (" read by no command" if unread else ""))
    if draw(st.floats(0, 1)) < 0.2:
        b.add(["--model-path", draw(st.sampled_from(["/models/x", "org/model"]))], "valid")
    if draw(st.booleans()):
        b.add(["--format", draw(st.sampled_from(["shell", "json", "yaml"]))], "valid")
    return b.case()


WIDE_MODELS = ("llama-3.1-70b", "qwen3-30b-a3b", "qwen3-8b")


@st.composite
def vllm_wide_solve_cases(draw) -> Case:
    """`solve --framework vllm` at 12-64 cards on H100 nodes of 8 and GB200 trays of 4, where DP engines wider than
    a node and DP x PP are in the search: valid (exit 0, or 1 with a reason)."""
    b = _Builder("solve", draw)
    b.add([draw(st.sampled_from(WIDE_MODELS)), "--hardware", draw(st.sampled_from(["h100_sxm", "gb200"])),
           "--framework", "vllm", "--cards", draw(st.sampled_from(["12", "16", "24", "32", "48", "64"])),
           "--max-concurrency", "64", "--time-limit", "2"], "valid")
    if draw(st.booleans()):
        b.add(["--isl", draw(st.sampled_from(["1024", "4096"])), "--osl", "256"], "valid")
    if draw(st.floats(0, 1)) < 0.3:
        b.add(["--scenario", draw(st.sampled_from(["latency", "throughput", "balanced"]))], "valid")
    if draw(st.floats(0, 1)) < 0.3:
        b.add(["--format", draw(st.sampled_from(["json", "yaml"]))], "valid")
    return b.case(slow=True)


# solve --framework vllm past one node, the file launch reads (built on first use)
WIDE_SOLVES = (("llama-3.1-70b", "h100_sxm", "16"), ("llama-3.1-70b", "h100_sxm", "32"),
               ("llama-3.1-70b", "gb200", "16"), ("qwen3-30b-a3b", "h100_sxm", "24"))


def _vllm_wide_solves(fx: Fixtures) -> list[tuple[str, str]]:
    if fx.vllm_wide_solves is None:
        from click.testing import CliRunner

        from solver.cli.main import main

        fx.vllm_wide_solves = []
        for model, hw, cards in WIDE_SOLVES:
            r = CliRunner().invoke(main, ["solve", model, "--hardware", hw, "--cards", cards, "--framework", "vllm",
                                          "--max-concurrency", "64", "--time-limit", "2", "--format", "yaml"])
            if r.exit_code != 0:
                continue
            p = fx.folder / f"wide-vllm-{model}-{hw}-{cards}.yaml"
            p.write_text(r.stdout)
            fx.vllm_wide_solves.append((str(p), f"solve {model} on {cards} {hw} under vllm"))
    return fx.vllm_wide_solves


@st.composite
def vllm_wide_launch_cases(draw, fx: Fixtures) -> Case:
    """`launch` of what `solve --framework vllm` wrote past one node: every candidate is one vLLM starts (valid),
    with --engine vllm or none; --cards other than the file's is "any" (the knobs may not tile it)."""
    b = _Builder("launch", draw)
    solved = _vllm_wide_solves(fx)
    if not solved:
        b.add(["no-solve-output.yaml"], "invalid", "no solve output to launch")
        return b.case()
    path, why = draw(st.sampled_from(solved))
    held = sorted(k.removeprefix("candidate_") for k in yaml.safe_load(Path(path).read_text())
                  if k.startswith("candidate_"))
    b.add([path, "--candidate", draw(st.sampled_from(held))], "valid", why)
    if draw(st.booleans()):
        b.add(["--engine", "vllm"], "valid")
    if draw(st.floats(0, 1)) < 0.2:
        b.add(["--cards", draw(st.sampled_from(["8", "24", "64"]))], "any", "--cards other than the plan's")
    if draw(st.booleans()):
        b.add(["--format", draw(st.sampled_from(["shell", "json", "yaml"]))], "valid")
    return b.case()


# ---------------------------------------------------------------------------- stop 47: check --command, memory --pp

DSV3 = "deepseek-ai/DeepSeek-V3"
MTP2_JSON = '{"method":"mtp","num_speculative_tokens":2}'
# (engine, hardware, program tokens, model tokens, flags [(flag, value or None for a switch)], MTP depth, world):
# commands as engineers write them that read back (tests/test_cmd47.py, test_cmd46u.py)
COMMANDS = [
    ("vllm", "h100_sxm", ["vllm", "serve"], ["Qwen/Qwen3-8B"],
     [("--tensor-parallel-size", "2"), ("--max-num-seqs", "32")], 0, 2),
    ("vllm", "h100_sxm", ["vllm", "serve"], ["meta-llama/Llama-3.1-70B-Instruct"],
     [("--tensor-parallel-size", "4"), ("--pipeline-parallel-size", "2"), ("--max-num-seqs", "32")], 0, 8),
    ("vllm", "h100_sxm", ["vllm", "serve"], ["Qwen/Qwen3-30B-A3B"],
     [("--data-parallel-size", "4"), ("--enable-expert-parallel", None), ("--max-num-seqs", "16")], 0, 4),
    ("vllm", "h200_sxm", ["vllm", "serve"], [DSV3],
     [("--tensor-parallel-size", "8"), ("--max-num-seqs", "64"), ("--speculative-config", MTP2_JSON)], 2, 8),
    ("sglang", "h100_sxm", ["python3", "-m", "sglang.launch_server"], ["--model-path", "Qwen/Qwen3-8B"],
     [("--tp-size", "2"), ("--max-running-requests", "32")], 0, 2),
    ("sglang", "h200_sxm", ["python3", "-m", "sglang.launch_server"], ["--model-path", DSV3],
     [("--tp-size", "8"), ("--attn-dp-size", "8"), ("--max-running-requests", "64")], 0, 8),
    ("sglang", "h200_sxm", ["python3", "-m", "sglang.launch_server"], ["--model-path", DSV3],
     [("--tp-size", "8"), ("--max-running-requests", "64"), ("--speculative-algorithm", "NEXTN"),
      ("--speculative-num-steps", "3"), ("--speculative-eagle-topk", "1"),
      ("--speculative-num-draft-tokens", "4")], 3, 8),
    ("trtllm", "h200_sxm", ["trtllm-serve"], [DSV3],
     [("--tp_size", "8"), ("--ep_size", "8"), ("--max_batch_size", "8")], None, 8),
]
# the site's own settings per engine (the profiles' launch.site_flags): read and compared with nothing
SITE = {"vllm": [("--host", "0.0.0.0"), ("--port", "8001"), ("--data-parallel-rpc-port", "13399"),
                 ("--data-parallel-address", "10.0.0.1")],
        "sglang": [("--host", "0.0.0.0"), ("--port", "30001"), ("--dist-init-addr", "10.0.0.1:5000"),
                   ("--node-rank", "0")],
        "trtllm": []}
TRT_OPTIONS = {"good": "enable_attention_dp: true\nmoe_expert_parallel_size: 8\nmoe_tensor_parallel_size: 1\n",
               "short": "enable_attention_dp: true\n"}
LAUNCH_SOLVES = (("llama-3.1-8b", "h100_sxm", "2", "vllm"), ("qwen3-30b-a3b", "h100_sxm", "4", "sglang"),
                 ("llama-3.1-8b", "h100_sxm", "2", "trtllm"))


def _launch_scripts(fx: Fixtures) -> list[tuple[str, str, str]]:
    """`solve --format launch` scripts (text, model, hardware), built on first use: check --command reads them."""
    if fx.launch_scripts is None:
        from click.testing import CliRunner

        from solver.cli.main import main

        fx.launch_scripts = []
        for model, hw, cards, fw in LAUNCH_SOLVES:
            r = CliRunner().invoke(main, ["solve", model, "--hardware", hw, "--cards", cards, "--framework", fw,
                                          "--max-concurrency", "64", "--time-limit", "2", "--format", "launch"])
            if r.exit_code == 0:
                fx.launch_scripts.append((r.stdout, model, hw))
    return fx.launch_scripts


def _trt_options(fx: Fixtures) -> dict[str, str]:
    out = {}
    for name, text in TRT_OPTIONS.items():
        p = fx.folder / f"trt-extra-{name}.yaml"
        p.write_text(text)
        out[name] = str(p)
    p = fx.folder / "trt-extra-binary.yaml"
    p.write_bytes(b"\xff\xfe\x00bad")
    out["binary"] = str(p)
    out["missing"] = str(fx.folder / "trt-extra-nope.yaml")
    return out


def _quote(token: str) -> str:
    import shlex

    return shlex.quote(token)


@st.composite
def command_check_cases(draw, fx: Fixtures) -> Case:
    """`check --command "<pasted engine command>" --hardware H --isl --osl`: commands that read back (COMMANDS, or
    solve's --format launch script) respelt as engineers paste them (flags reordered, `--flag=value`, vLLM's
    underscores, argparse prefixes, `\\` lines, environment prefixes, the site's flags, vLLM's --model and
    api_server module, SGLang's --dp-size --enable-dp-attention) are valid; SGLang underscores, unknown flags,
    unbalanced quotes, the model twice, TensorRT-LLM without its options file, an --mtp against the command's
    depth, a missing --hardware / --isl are invalid."""
    b = _Builder("check", draw)
    if draw(st.floats(0, 1)) < 0.15:
        scripts = _launch_scripts(fx)
        if scripts:
            text, model, hw = draw(st.sampled_from(scripts))
            b.add(["--command", text, "--hardware", hw, "--model", model], "valid", "solve --format launch")
            b.add(["--isl", draw(st.sampled_from(["512", "1024"])), "--osl", "256"], "valid")
            return b.case()
    engine, hw, prog, model, flags, depth, world = draw(st.sampled_from(COMMANDS))
    flags, prog, model = list(flags), list(prog), list(model)
    pre: list[str] = []
    text_pre = ""

    def bad(why: str, label: str = "invalid") -> None:
        b.add([], label, why)

    if engine == "vllm" and draw(st.floats(0, 1)) < 0.25:  # vLLM's --model beside / for the positional model
        how = draw(st.sampled_from(["flag", "module", "both", "module-positional"]))
        if how in ("flag", "both"):
            flags.insert(draw(st.integers(0, len(flags))), ("--model", model[0]))
            model = [] if how == "flag" else model
            if how == "both":
                bad("the model both positional and by --model")
        else:
            prog = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
            if how == "module":
                flags.insert(0, ("--model", model[0]))
                model = []
            else:
                bad("the api_server module with a positional model")
    if engine == "sglang" and ("--attn-dp-size", "8") in flags and draw(st.booleans()):
        flags[flags.index(("--attn-dp-size", "8"))] = ("--dp-size", "8")
        flags.append(("--enable-dp-attention", None))
    if engine == "trtllm":
        opt = draw(st.sampled_from(["good", "good", "heredoc", "none", "short", "binary", "missing"]))
        files = _trt_options(fx)
        if opt == "heredoc":
            text_pre = f"cat > extra.yaml <<'EOF'\n{TRT_OPTIONS['good']}EOF\n"
            flags.append(("--extra_llm_api_options", "extra.yaml"))
        elif opt != "none":
            flags.append(("--extra_llm_api_options", files[opt]))
        if opt not in ("good", "heredoc"):
            bad(f"TensorRT-LLM options file {opt}")
    if draw(st.floats(0, 1)) < 0.3:  # the site's settings, compared with nothing
        for flag, value in draw(st.lists(st.sampled_from(SITE[engine] or [("", "")]), max_size=3, unique=True)):
            if flag:
                flags.insert(draw(st.integers(0, len(flags))), (flag, value))
    if draw(st.booleans()):  # flags in another order
        flags = draw(st.permutations(flags))
    spell = draw(st.sampled_from(["plain", "plain", "equals", "underscore", "prefix"]))
    written = []
    for flag, value in flags:
        f = flag
        if spell == "underscore" and engine in ("vllm", "sglang") and flag.startswith("--") and "-" in flag[2:] \
                and draw(st.booleans()):
            f = "--" + flag[2:].replace("-", "_")
            if engine == "sglang":
                bad(f"SGLang's parser takes no {f}")
        if spell == "prefix" and engine == "sglang" and flag == "--tp-size":
            f = "--tp"
        if spell == "prefix" and engine == "vllm" and flag == "--max-num-seqs":
            f = "--max-num-seq"
        if value is None:
            written.append(f)
        elif spell == "equals" and draw(st.booleans()):
            written.append(f"{f}={value}")
        else:
            written += [f, value]
    tokens = prog + model + written
    # garbage: a mistyped flag, a stray word, a value of the wrong type (refused by vLLM's / SGLang's parsers)
    if not b.clean and draw(st.floats(0, 1)) < 0.25:
        junk = draw(st.sampled_from([("--enfroce-eager", "a flag the parser lacks"), ("--max-num-seqs", "lots"),
                                     ("--tp-size", "x"), ("@@", "a stray word"), ("--", "a bare --")]))
        at = draw(st.integers(len(prog) + len(model), len(tokens)))
        tokens.insert(at, junk[0])
        bad(junk[1], "invalid" if engine != "trtllm" else "any")
    text = " ".join(_quote(t) if t not in ("${MODEL_PATH}",) else t for t in tokens)
    if draw(st.floats(0, 1)) < 0.3:  # pasted over lines
        parts = text.split(" --")
        text = " \\\n  --".join(parts)
    if draw(st.floats(0, 1)) < 0.25:
        pre = draw(st.lists(st.sampled_from(["CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "VLLM_USE_V1=1",
                                             "NCCL_DEBUG=INFO", "HF_HOME=/data/hf"]), min_size=1, max_size=2,
                            unique=True))
        text = " ".join(pre) + " " + text
    if not b.clean and draw(st.floats(0, 1)) < 0.1:
        cut = draw(st.sampled_from(["'", '"']))
        text = text + f" --served-model-name {cut}oops"
        bad("an unbalanced quote")
    if not b.clean and draw(st.floats(0, 1)) < 0.03:
        text, _ = draw(st.sampled_from([("", ""), ("   \n ", ""), ("x" * 20000, "")]))
        bad("an empty or overlong command")
    b.add(["--command", text_pre + text], "valid")
    if b.clean or draw(st.floats(0, 1)) > 0.05:
        b.add(["--hardware", hw], "valid")
    else:
        bad("no --hardware")
    if b.clean or draw(st.floats(0, 1)) > 0.05:
        b.add(["--isl", draw(st.sampled_from(["512", "1024", "4096"])), "--osl", draw(st.sampled_from(["1", "256"]))],
              "valid")
    else:
        b.add(["--isl", "1024"], "invalid", "--isl without --osl")
    if draw(st.floats(0, 1)) < 0.25:
        m = draw(st.sampled_from(["0", "1", "2", "3"]))
        label = "any" if depth is None else "valid" if int(m) == depth else "invalid"
        b.add(["--mtp", m], label, f"--mtp {m} against the command's depth {depth}")
    if draw(st.floats(0, 1)) < 0.15:
        b.opt(draw, "--concurrency", "conc", 0.3)
    if draw(st.floats(0, 1)) < 0.1:
        c = draw(st.sampled_from([str(world), str(world * 2), "3"]))
        b.add(["--cards", c], "valid" if c == str(world) else "invalid", f"--cards {c} against a world of {world}")
    if draw(st.floats(0, 1)) < 0.2:
        b.add(["--format", draw(st.sampled_from(["table", "json", "yaml"]))], "valid")
    if not b.clean and draw(st.floats(0, 1)) < 0.03:
        path, _, _ = b.file(draw, fx.deployments)
        b.add([path], "invalid", "a deployment file beside --command")
    return b.case()


PP_MODELS = (("llama-3.1-8b", 32), ("qwen3-8b", 36), ("qwen3-30b-a3b", 48))


@st.composite
def pp_stage_cases(draw) -> Case:
    """`memory` / `estimate` under `--pp P` (the stage line, stop 47): P dividing --cards is valid with the other
    knobs dividing one stage's ranks; 0, junk, P not dividing --cards, or more stages than layers are invalid."""
    b = _Builder(draw(st.sampled_from(["memory", "estimate"])), draw)
    model, layers = draw(st.sampled_from(PP_MODELS))
    cards = draw(st.sampled_from([2, 4, 8, 16]))
    b.add([model, "--hardware", draw(st.sampled_from(SMALL_HW)), "--cards", str(cards)], "valid")
    if not b.clean and draw(st.floats(0, 1)) < 0.3:
        pp, why = draw(st.sampled_from([("0", "--pp 0"), ("-2", "--pp -2"), ("x", "--pp x"), ("3", "--pp 3"),
                                        ("64", "--pp 64")]))
        if pp == "64":
            b.parts[0] = ("valid", "options", "")
            b.argv[b.argv.index("--cards") + 1] = "64"
            why = f"--pp 64 on {layers} layers"
        b.add(["--pp", pp], "invalid" if pp != "3" or cards % 3 else "any", why + f" on {b.argv[5]} cards")
        stage = None
    else:
        pp = draw(st.sampled_from([p for p in (1, 2, 4) if cards % p == 0]))
        b.add(["--pp", str(pp)], "valid")
        stage = cards // pp
    if stage is not None:
        tp = draw(st.sampled_from([d for d in (1, 2, 4, 8) if stage % d == 0]))
        b.add(["--attn-tp", str(tp)], "valid")
        for flag in draw(st.lists(st.sampled_from(["--dense-tp", "--embed-tp", "--lmhead-tp"]), max_size=2,
                                  unique=True)):
            v = draw(st.sampled_from([d for d in (1, 2, 4, 8) if stage % d == 0]))
            b.add([flag, str(v)], "invalid" if flag in _absent_flags(model) and v != 1 else "valid", f"{flag} {v}")
        if draw(st.floats(0, 1)) < 0.2 and stage % 16:
            b.add(["--moe-tp", str(stage * 2)], "invalid", f"--moe-tp {stage * 2} over one stage's {stage} ranks")
    if b.cmd == "memory":
        b.add(["--batch", draw(st.sampled_from(["1", "16", "64"])), "--seq-len",
               draw(st.sampled_from(["1024", "8192"]))], "valid")
    elif draw(st.booleans()):
        b.add(["--isl", "1024", "--osl", "256", "--concurrency", draw(st.sampled_from(["1", "16", "64"]))], "valid")
    else:
        b.add(["--phase", draw(st.sampled_from(["prefill", "decode"])), "--batch", "8", "--seq-len", "2048"],
              "valid")
    if draw(st.floats(0, 1)) < 0.3:
        b.add(["--format", draw(st.sampled_from(["table", "json", "yaml"]))], "valid")
    if draw(st.floats(0, 1)) < 0.2:
        b.add(["--framework", draw(st.sampled_from(["generic", "vllm", "sglang"]))], "any", "an engine's rules")
    return b.case()


# ------------------------------------------------------------------------------------------------ stop 48


def _quick_base(draw, b: _Builder) -> dict[str, str]:
    """A good `memory` or `estimate` line on a small model; its options by flag (to repeat or respell one)."""
    opts = {"--hardware": draw(st.sampled_from(SMALL_HW)), "--cards": draw(st.sampled_from(["1", "2"]))}
    if b.cmd == "memory":
        opts |= {"--batch": draw(st.sampled_from(["1", "8"])), "--seq-len": draw(st.sampled_from(["1024", "4096"]))}
    else:
        opts |= {"--isl": draw(st.sampled_from(["512", "2048"])), "--osl": draw(st.sampled_from(["64", "256"])),
                 "--concurrency": draw(st.sampled_from(["1", "16"]))}
    if draw(st.booleans()):
        opts["--format"] = draw(st.sampled_from(["table", "json", "yaml"]))
    b.add([draw(st.sampled_from(SMALL_MODELS)), *(a for kv in opts.items() for a in kv)], "valid")
    return opts


OTHER_VALUE = {"--hardware": {"h100_sxm": "h200_sxm", "h200_sxm": "h100_sxm"}, "--format": {"table": "json"}}


@st.composite
def repeats_cases(draw, fx: Fixtures) -> Case:
    """A single-valued option given twice (stop 48): the same value again drops nothing (valid); another value would
    be dropped silently, the last kept (invalid: refused naming both), spelt `--flag value` or `--flag=value`; and
    `check FILE --cards` twice. sweep's --hardware takes several (multiple): repeating it is valid, and slow."""
    which = draw(st.sampled_from(["memory", "estimate", "check", "sweep"]))
    b = _Builder(which, draw)
    if which == "check":
        b.add([str(fx.folder / "dep-ok.yaml"), "--cards", "8"], "valid")
        flag, value = "--cards", "8"
    elif which == "sweep":
        b.add(["qwen3-8b", "--hardware", "h100_sxm", "--hardware", "h200_sxm", "--cards", "1", "--scenarios",
               "latency", "--max-concurrency", "16", "--time-limit", "2"], "valid", "sweep over two devices")
        return b.case(slow=True)
    else:
        opts = _quick_base(draw, b)
        flag = draw(st.sampled_from(sorted(opts)))
        value = opts[flag]
    same = b.clean or draw(st.booleans())
    again = value if same else OTHER_VALUE.get(flag, {}).get(value, str(int(value) * 2) if value.isdigit() else "")
    if not again:
        again, same = value, True
    spelt = [f"{flag}={again}"] if draw(st.booleans()) else [flag, again]
    b.add(spelt, "valid" if same else "invalid", "" if same else f"{flag} {value} then {again}")
    return b.case()


# (text, label) per option: the integer forms Python's int reads (a sign, leading zeros, spaces, digit separators,
# other scripts' digits: the number as written, nothing guessed) and the ones it does not
SPELT = {
    "--cards": [("+2", "valid"), ("0002", "valid"), (" 2 ", "valid"), ("\uff12", "valid"), ("2.0", "invalid"),
                ("2e0", "invalid"), ("0x2", "invalid"), ("-0", "invalid"), ("", "invalid"), ("\u00b2", "invalid")],
    "--seq-len": [("1_024", "valid"), ("\u0661\u0660\u0662\u0664", "valid"), ("8k", "invalid"), ("32K", "invalid"),
                  ("1,024", "invalid"), ("1e3", "invalid"), ("1024.0", "invalid"), ("nan", "invalid")],
    "--batch": [("+8", "valid"), ("\uff18", "valid"), ("8.", "invalid"), ("1e30", "invalid"), ("9" * 40, "invalid"),
                ("-8", "invalid"), ("inf", "invalid")],
    "--mem-fraction": [(".9", "valid"), ("9e-1", "valid"), ("0.9 ", "valid"), ("90%", "invalid"), ("0,9", "invalid"),
                       ("nan", "invalid"), ("-0", "invalid"), ("1e-400", "invalid"), ("1.0000001", "invalid"),
                       ("0x1p-1", "invalid")],
}


@st.composite
def spelt_numbers_cases(draw) -> Case:
    """`memory` with one number spelt at its type's edges (stop 48): SPELT's forms."""
    b = _Builder("memory", draw)
    opts = {"--cards": "2", "--batch": "8", "--seq-len": "2048"}
    flag = draw(st.sampled_from(sorted(SPELT)))
    text, label = draw(st.sampled_from([s for s in SPELT[flag] if s[1] == "valid"] if b.clean else SPELT[flag]))
    opts[flag] = text
    b.add([draw(st.sampled_from(SMALL_MODELS)), "--hardware", draw(st.sampled_from(SMALL_HW)),
           *(a for kv in opts.items() for a in kv)], label, f"{flag} {text!r}")
    return b.case()


def _written(fx: Fixtures, texts: list[tuple[str, str, str]], stem: str, suffix: str) -> list[tuple[str, str, str]]:
    """(path, label, why) of each (text, label, why), the text written to the fixtures' folder as stem-i.suffix."""
    out = []
    for i, (t, label, why) in enumerate(texts):
        p = fx.folder / f"{stem}-{i}{suffix}"
        p.write_text(t)
        out.append((str(p), label, why))
    return out


def _device_texts(fx: Fixtures) -> list[tuple[str, str, str]]:
    """A user's device file written by hand from the catalog's H100 (stop 48): renamed (valid), a number with its
    unit, beyond any device, infinite, fractional, a key given twice, a key misspelt or in a look-alike letter, a
    name with a space or a non-Latin letter, the catalog's own name over other figures."""
    if fx.device_texts is None:
        text = (REPO / "hardware" / "h100_sxm.yaml").read_text().replace("name: h100_sxm", "name: my_h100", 1)
        mem = "memory_bytes: 85899345920"
        edits = [
            (text, "valid", "renamed copy"),
            (text.replace("description: ", "description: \u2603 caf\u00e9 ", 1), "valid", "unicode description"),
            (text.replace(mem, "memory_bytes: 80_000_000_000"), "any", "memory_bytes 80_000_000_000 (YAML 1.1 int)"),
            (text.replace(mem, 'memory_bytes: "80GB"'), "invalid", "memory_bytes '80GB'"),
            (text.replace(mem, "memory_bytes: 1.0e+30"), "invalid", "memory_bytes 1e30"),
            (text.replace(mem, "memory_bytes: .inf"), "invalid", "memory_bytes .inf"),
            (text.replace(mem, "memory_bytes: 85899345920.5"), "invalid", "memory_bytes fractional"),
            (text.replace(mem, mem + "\nmemory_bytes: 171798691840"), "invalid", "memory_bytes given twice"),
            (text.replace(mem, "m\u0435mory_bytes: 85899345920"), "invalid", "memory_bytes with a Cyrillic e"),
            (text.replace("hbm_bandwidth_Bps", "hbm_bandwidth_bps"), "invalid", "hbm_bandwidth_bps misspelt"),
            (text.replace("bf16: 989.0e+12", 'bf16: "989 TFLOPS"'), "invalid", "peak bf16 with a unit"),
            (text.replace("ranks_per_node: 8", "ranks_per_node: 8.5"), "invalid", "ranks_per_node 8.5"),
            (text.replace("name: my_h100", 'name: "my h100"'), "invalid", "a name with a space"),
            (text.replace("name: my_h100", "name: my_h100_\u0394"), "invalid", "a name with a Greek letter"),
            (text.replace("name: my_h100", "name: h100_sxm").replace(mem, "memory_bytes: 171798691840"), "invalid",
             "the catalog's name over other figures"),
        ]
        out = _written(fx, edits, "dev48", ".yaml")
        fx.device_texts = out
    return fx.device_texts


@st.composite
def device_file_cases(draw, fx: Fixtures) -> Case:
    b = _Builder(draw(st.sampled_from(["memory", "estimate"])), draw)
    _quick_base(draw, b)
    path, label, why = b.file(draw, _device_texts(fx))
    at = b.argv.index("--hardware") + 1
    b.argv[at] = path
    b.parts[-1] = (label, "file", why)
    return b.case()


UNMET = [  # (options, why): requests no configuration meets on any catalog device
    (["--tpot-ms", "0.05"], "TPOT 0.05 ms"), (["--ttft-ms", "0.05"], "TTFT 0.05 ms"),
    (["--ttft-ms", "0.05", "--tpot-ms", "0.05"], "TTFT and TPOT 0.05 ms"),
    (["--phase", "decode", "--tpot-ms", "0.05"], "decode TPOT 0.05 ms"),
]


@st.composite
def unmet_cases(draw) -> Case:
    """Valid requests no plan meets (stop 48): an SLA below any device's reach, a model whose weights exceed the
    cards. `solve` and `recommend` must exit 1 with one line naming what binds and what would fit."""
    cmd = draw(st.sampled_from(["solve", "solve", "recommend"]))
    b = _Builder(cmd, draw)
    hw = draw(st.sampled_from(SMALL_HW))
    if cmd == "solve" and draw(st.floats(0, 1)) < 0.3:
        b.add(["qwen3-235b-a22b", "--hardware", hw, "--cards", draw(st.sampled_from(["1", "2"]))], "valid",
              "470 GB of weights on 1-2 cards")
    else:
        opts, why = draw(st.sampled_from(UNMET if cmd == "solve" else UNMET[:3]))
        b.add([draw(st.sampled_from(SMALL_MODELS)), "--hardware", hw, *opts], "valid", why)
        if cmd == "solve":
            b.add(["--cards", draw(st.sampled_from(["1", "2", "4"]))], "valid")
        else:
            b.add(["--cards", "1,2", "--target-requests-per-s", "1"], "valid")
    b.add(["--max-concurrency", "16", "--time-limit", "2"], "valid")
    c = b.case()
    return Case(c.cmd, c.argv, c.label, c.family, c.why, slow=True, unmet=True)


# ------------------------------------------------------------------ stop 48's merged inputs (fuzz48b)

FIT_ROWS = REPO / "docs" / "examples" / "vllm-h100-rows-a.csv"


def _factors_files(fx: Fixtures) -> list[tuple[str, str, str]]:
    """`--factors FILE` as a user writes or edits it (calibrate/factors_file.py: {factors: {framework: {hardware:
    {factor: value}}}}, each factor within rows.BOUNDS, strict numbers as every other spec file reads them)."""
    if fx.factors_files is None:
        pair = "factors:\n  vllm:\n    h100_sxm: {%s}\n"
        texts = [
            (pair % "gemm: 0.95, hbm: 0.9", "valid", "a vllm x h100_sxm pair"),
            (pair % "gemm: 1", "valid", "gemm 1 (an integer)"),
            ((REPO / "solver" / "frameworks" / "fitted" / "factors.yaml").read_text(), "valid", "the shipped fit"),
            ("factors:\n  sglang:\n    h200_sxm: {hbm: 0.9}\n", "valid", "a pair the command may not price"),
            (pair % "gemm: 5", "invalid", "gemm 5, past its bound"),
            (pair % "gemm: -0.1", "invalid", "gemm negative"),
            (pair % "gemm: .nan", "invalid", "gemm nan"),
            (pair % "gemn: 0.9", "invalid", "gemn misspelt"),
            (pair % "gemm: true", "invalid", "gemm true"),
            (pair % 'gemm: "0.9"', "invalid", "gemm a quoted number"),
            (pair % "gemm: 0.9, gemm: 0.8", "invalid", "gemm given twice"),
            (pair % "", "invalid", "a pair that sets no factor"),
            ("factors:\n  nope:\n    h100_sxm: {gemm: 0.9}\n", "invalid", "a framework that does not exist"),
            ("factors: {}\n", "invalid", "no pair"),
            ("factor:\n  vllm:\n    h100_sxm: {gemm: 0.9}\n", "invalid", "the top key misspelt"),
            ("- gemm: 0.9\n", "invalid", "a list"),
            ((pair % "gemm: 0.95, hbm: 0.9")[:30], "invalid", "truncated"),
            ("", "invalid", "empty"),
        ]
        out = _written(fx, texts, "factors48", ".yaml")
        out.append((str(fx.folder / "no-such-factors.yaml"), "invalid", "a file that does not exist"))
        out.append((str(fx.folder), "invalid", "a folder"))
        fx.factors_files = out
    return fx.factors_files


@st.composite
def factors_cases(draw, fx: Fixtures) -> Case:
    """`--factors FILE` on estimate (its --help: the file's pairs replace the shipped fit), under the generic, vllm
    or sglang profile; `memory` takes none (no memory figure reads a fitted factor)."""
    which = draw(st.sampled_from(["estimate", "estimate", "estimate", "memory"]))
    b = _Builder(which, draw)
    _quick_base(draw, b)
    if which == "estimate":
        b.add(["--framework", draw(st.sampled_from(["generic", "vllm", "sglang"]))], "valid")
    path, label, why = b.file(draw, _factors_files(fx))
    if which == "memory":
        label, why = "invalid", "memory takes no --factors"
    b.add(["--factors", path], label, why, "file")
    return b.case()


def _fit_csvs(fx: Fixtures) -> list[tuple[str, str, str]]:
    """Measured rows for `calibrate --from-csv ROWS --fit OUT` (docs/examples/vllm-h100-rows-a.csv and edits)."""
    if fx.fit_csvs is None:
        lines = FIT_ROWS.read_text().splitlines()
        head, rows = lines[0], lines[1:]
        col = head.split(",")

        def edit(row: str, name: str, value: str) -> str:
            cells = row.split(",")
            cells[col.index(name)] = value
            return ",".join(cells)

        texts = [
            ("\n".join(lines) + "\n", "valid", "19 measured rows"),
            (f"{head}\n{rows[0]}\n", "valid", "one row"),
            (f"{head}\n", "invalid", "a header, no row"),
            (f"{head}\n{edit(rows[0], 'backend', 'nope')}\n", "invalid", "a framework that does not exist"),
            (f"{head}\n{edit(rows[0], 'ttft_ms', '-5')}\n", "invalid", "a negative TTFT"),
            (f"{head}\n{edit(rows[0], 'tpot_ms', 'nan')}\n", "invalid", "a nan TPOT"),
            (f"{head}\n{edit(rows[0], 'tpot_ms', '')}\n", "invalid", "no TPOT"),
            (head.replace(",ttft_ms", "") + "\n" + "\n".join(",".join(r.split(",")[:-2] + r.split(",")[-1:])
                                                             for r in rows[:3]) + "\n", "invalid", "no ttft_ms column"),
        ]
        out = _written(fx, texts, "fitrows48", ".csv")
        fx.fit_csvs = out
    return fx.fit_csvs


@st.composite
def calibrate_fit_cases(draw, fx: Fixtures) -> Case:
    """`calibrate --from-csv ROWS.csv --fit OUT.yaml` (calibrate --help): each flag needs the other, a TRACE beside
    them is refused, OUT goes to an existing folder with a YAML extension."""
    b = _Builder("calibrate", draw)
    path, label, why = b.file(draw, _fit_csvs(fx))
    b.add(["--from-csv", path], label, why, "file")
    out = fx.folder / f"fit48-{draw(st.integers(0, 9))}.yaml"
    shape = "fit" if b.clean else draw(st.sampled_from(["fit", "fit", "none", "nofolder", "noext", "trace"]))
    if shape == "fit":
        b.add(["--fit", str(out)], "valid")
    elif shape == "none":
        b.add([], "invalid", "--from-csv without --fit")
    elif shape == "nofolder":
        b.add(["--fit", str(fx.folder / "no-such-folder" / "f.yaml")], "invalid", "--fit into a missing folder")
    elif shape == "noext":
        b.add(["--fit", str(fx.folder / "fit48")], "invalid", "--fit without an extension")
    else:
        b.argv.insert(1, fx.traces[0][0])
        b.add(["--fit", str(out)], "invalid", "a TRACE beside --from-csv")
    if draw(st.floats(0, 1)) < 0.2:
        b.opt(draw, "--format", "format", 0.3)
    return b.case()


# (model, framework, options, label, why): models an engine refuses by model type (the profile's
# unserved_model_types; features.pipeline_parallel.refused_model_types), and --mtp on a model without MTP layers
REFUSED_MODELS = [
    ("minimax-m1", "vllm", [], "invalid", "vllm serves no minimax_m1"),
    ("minimax-m1", "sglang", [], "invalid", "sglang serves no minimax_m1"),
    ("minimax-m1", "generic", [], "valid", "minimax_m1 under generic"),
    ("longcat-flash", "sglang", ["--pp", "2"], "invalid", "sglang runs no PP for longcat_flash"),
    ("longcat-flash", "sglang", ["--pp", "1"], "valid", "longcat_flash without PP"),
    ("mimo-7b", "sglang", ["--pp", "2"], "invalid", "sglang runs no PP for mimo"),
    ("mimo-7b", "vllm", ["--pp", "2"], "valid", "vllm runs PP for mimo"),
    ("qwen3-8b", "generic", ["--mtp", "1"], "invalid", "--mtp 1 on a model without MTP layers"),
    ("llama-3.1-8b", "vllm", ["--mtp", "2"], "invalid", "--mtp 2 on a model without MTP layers"),
]


@st.composite
def refused_model_cases(draw) -> Case:
    """`estimate` (quick) or `solve` (slow) of a model an engine refuses by type, or with --pp / --mtp the model or
    engine cannot run: one error line naming the option, exit 2."""
    model, fw, opts, label, why = draw(st.sampled_from(REFUSED_MODELS))
    cmd = draw(st.sampled_from(["estimate", "estimate", "estimate", "solve"]))
    b = _Builder(cmd, draw)
    if cmd == "solve":  # solve takes no --pp (its search picks PP): the model under the engine alone
        if "--pp" in opts:
            opts, label, why = [], "valid", why + " (no --pp: valid)"
        b.add([model, "--hardware", "h200_sxm", "--cards", "16" if model == "longcat-flash" else "8", "--framework", fw,
               "--isl", "1024", "--osl", "128", "--max-concurrency", "16", "--time-limit", "2", *opts], label, why)
        return b.case(slow=True)
    cards = "16" if model == "longcat-flash" else "8"
    b.add([model, "--hardware", "h200_sxm", "--cards", cards, "--framework", fw, "--isl", "1024", "--osl", "128",
           "--concurrency", "8", *opts], label, why)
    return b.case()


# ------------------------------------------------------------------ stop 49: draft methods, long context, disagg

# (method, what it is to the check): vLLM's --speculative-config methods (the profile's draft_methods) and SGLang's
# --speculative-algorithm, read upper-cased (tests/test_spec49.py)
VLLM_METHODS = [("mtp", "next_n"), ("deepseek_mtp", "next_n"), ("ngram", "lookup"), ("ngram_gpu", "lookup"),
                ("eagle3", "draft_model"), ("eagle", "draft_model"), ("draft_model", "draft_model"),
                ("suffix", "unpriced"), ("NGRAM", "unpriced"), ("bogus", "unpriced")]
SGLANG_METHODS = [("NEXTN", "next_n"), ("EAGLE", "next_n"), ("nextn", "next_n"), ("NGRAM", "lookup"),
                  ("ngram", "lookup"), ("EAGLE3", "draft_model"), ("STANDALONE", "draft_model"), ("FOO", "unpriced")]
# a depth in vLLM's JSON as a user writes it: valid where pydantic (lax) reads a whole number >= 1 (speculative.py:455)
DEPTHS = [(3, True), ("3", True), (3.0, True), (2, True), (0, False), (-1, False), (3.5, False), (17, False)]


@st.composite
def draft_command_cases(draw) -> Case:
    """`check --command` of a speculative command: next-n methods on DeepSeek-V3 (it has next-n layers) are valid,
    on Qwen3-8B invalid; a lookup (vLLM ngram / ngram_gpu, SGLang NGRAM in any case) needs --mtp-accept; a
    separate draft model, a method the profile does not price, a depth that is no whole number >= 1, or a bad
    --mtp-accept is invalid."""
    b = _Builder("check", draw)
    engine = draw(st.sampled_from(["vllm", "sglang"]))
    model = draw(st.sampled_from([DSV3, "Qwen/Qwen3-8B"]))
    tp = "8" if model == DSV3 else "1"
    if engine == "vllm":
        method, kind = draw(st.sampled_from(VLLM_METHODS))
        depth, good_depth = draw(st.sampled_from(DEPTHS))
        doc = {"method": method, "num_speculative_tokens": depth}
        if kind == "draft_model" and draw(st.booleans()):
            doc["model"] = "/models/draft"
        cmd = f"vllm serve {model} -tp {tp} --speculative-config '{json.dumps(doc)}'"
    else:
        method, kind = draw(st.sampled_from(SGLANG_METHODS))
        good_depth = True
        cmd = (f"python3 -m sglang.launch_server --model-path {model} --tp-size {tp} --speculative-algorithm {method}"
               " --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4")
        if kind == "draft_model" and draw(st.booleans()):
            cmd += " --speculative-draft-model-path /models/draft"
    b.add(["--command", cmd, "--hardware", "h200_sxm", "--isl", "2048", "--osl", "256", "--concurrency", "16"],
          "valid", f"{engine} {method} on {model}")
    if kind in ("draft_model", "unpriced"):
        b.add([], "invalid", f"method {method}: {kind.replace('_', ' ')}")
    elif not good_depth:
        b.add([], "invalid", f"num_speculative_tokens {depth!r}")
    elif kind == "next_n" and model != DSV3:
        b.add([], "invalid", f"{method} on a model without next-n layers")
    accept = draw(st.sampled_from([None, None, "0.6", "0.9", "1", "0", "1.5", "nan", "-0.1"]))
    if accept is None:
        if kind == "lookup":
            b.add([], "invalid", "a lookup without --mtp-accept")
    else:
        b.add(["--mtp-accept", accept], "valid" if accept in ("0.6", "0.9", "1") else "invalid",
              f"--mtp-accept {accept}")
    if draw(st.floats(0, 1)) < 0.2:
        b.add(["--format", "json"], "valid")
    return b.case()


# past Qwen3-8B's 40,960 context: (engine, switch variable, its values the engine reads as on, as off), from
# vLLM 0.34.0 envs.py:1177-1180 and sglang 0.5.23 environ.py EnvBool
PAST_CONTEXT = [("vllm", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", ["1", "true", "TRUE"], ["0", "false", "yes"]),
                ("sglang", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", ["1", "true", "yes", "y", "Y"],
                 ["0", "false", "no", "2"])]


@st.composite
def long_command_cases(draw) -> Case:
    """`check --command` with a model length past the config's context: the engine starts only with its switch set
    to a value it reads as on (valid), else refuses (invalid); within the context any switch is valid, and a length
    below ISL + OSL is a note (valid)."""
    b = _Builder("check", draw)
    engine, var, on, off = draw(st.sampled_from(PAST_CONTEXT))
    length = draw(st.sampled_from(["200000", "65536", "32768", "1000"]))
    past = int(length) > 40960
    value = draw(st.sampled_from([None, *on, *off]))
    env = "" if value is None else f"{var}={value} "
    flag = "--max-model-len" if engine == "vllm" else "--context-length"
    prog = "vllm serve Qwen/Qwen3-8B -tp 1" if engine == "vllm" else \
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1"
    b.add(["--command", f"{env}{prog} {flag} {length}", "--hardware", "h200_sxm", "--isl",
           draw(st.sampled_from(["2048", "30000"])), "--osl", "512", "--concurrency", "4"], "valid",
          f"{flag} {length}, {env or 'no switch'}")
    if past and value not in on:
        b.add([], "invalid", f"{flag} {length} past 40,960 with {env or 'no switch'}")
    return b.case()


@st.composite
def draft_deployment_cases(draw, fx: Fixtures) -> Case:
    """`check FILE` of a deployment with `draft: lookup` (needs mtp_accept), `next_n` (the default; DeepSeek-V3 has
    next-n layers), or another word (invalid)."""
    b = _Builder("check", draw)
    draft = draw(st.sampled_from(["lookup", "next_n", None, "ngram", "eagle3"]))
    accept = draw(st.sampled_from([None, 0.6, 1, 0, 1.5, "0.6"]))
    mtp = draw(st.sampled_from([0, 2]))
    dep = {"model": "deepseek-v3", "hardware": "h200_sxm", "world_size": 8, "parallel_config": {"attn_tp_size": 8},
           "workload": {"phase": "decode", "batch": 16, "seq_len": 2048}, "mtp": mtp}
    if draft is not None:
        dep["draft"] = draft
    if accept is not None:
        dep["mtp_accept"] = accept
    name = f"dep49-{draft}-{type(accept).__name__}{accept}-{mtp}.yaml"
    path = _dump_yaml(fx.folder / name, dep)
    label, why = "valid", f"draft {draft}, mtp {mtp}, mtp_accept {accept!r}"
    if draft not in (None, "lookup", "next_n") or accept in (0, 1.5, "0.6") \
            or (accept is not None and mtp == 0) or (draft == "lookup" and mtp and accept is None):
        label = "invalid"
    b.add([path], label, why, "file")
    return b.case()


@st.composite
def workers_cases(draw) -> Case:
    """`solve --serving disagg --prefill-workers X --decode-workers Y` (either, both; counts are COPIES: integers
    >= 1); without --serving disagg they are refused; a ratio the cards cannot hold is valid input no plan meets."""
    b = _Builder("solve", draw)
    b.add(["qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "8", "--framework", "sglang", "--isl", "2048",
           "--osl", "1024", "--tpot-ms", "50", "--max-concurrency", "16", "--time-limit", "2"], "valid")
    disagg = draw(st.floats(0, 1)) < 0.85
    if disagg:
        b.add(["--serving", "disagg"], "valid")
    which = draw(st.sampled_from(["--prefill-workers", "--decode-workers", "both"]))
    for flag in (["--prefill-workers", "--decode-workers"] if which == "both" else [which]):
        value, good = draw(st.sampled_from([("1", True), ("2", True), ("9", True), ("0", False), ("-1", False),
                                            ("1.5", False), ("x", False)]))
        b.add([flag, value], "valid" if good else "invalid", f"{flag} {value}")
    if not disagg:
        b.add([], "invalid", "worker counts without --serving disagg")
    return b.case(slow=True)


@st.composite
def dsa_pool_command_cases(draw) -> Case:
    """`check --command` of an SGLang DeepSeek-V3.2 command with --dcp-size 8: refused in a prefill or decode pool
    (sglang 0.5.23 deepseek_v2.py:18-24), valid as one aggregated server; DeepSeek-R1's pool (no DSA) is valid."""
    b = _Builder("check", draw)
    model = draw(st.sampled_from(["deepseek-v3.2", "deepseek-r1"]))
    role = draw(st.sampled_from([None, "prefill", "decode"]))
    pool = "" if role is None else f" --disaggregation-mode {role} --disaggregation-transfer-backend mooncake"
    cmd = f"python3 -m sglang.launch_server --model-path x --tp-size 8 --dcp-size 8{pool}"
    b.add(["--command", cmd, "--model", model, "--hardware", "h200_sxm", "--isl", "8192", "--osl", "1024",
           "--concurrency", "8"], "valid", f"{model} {role or 'aggregated'} DCP8")
    if role is not None and model == "deepseek-v3.2":
        b.add([], "invalid", f"DCP on a DSA model in a {role} pool")
    return b.case()


# ------------------------------------------------------------- stop 50: precisions, workers, commands, files

# hf_quant_config.json beside a config.json without quantization_config (ModelOpt <= 0.29's layout; the folder is read
# as vLLM reads it, specs/model_catalog.with_quant_config_beside): (the file's JSON or text, label, why)
QUANT_BESIDE = [
    ({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8",
                                                         "exclude_modules": ["lm_head"]}}, "valid", "FP8, FP8 KV"),
    ({"quantization": {"quant_algo": "fp8"}}, "valid", "quant_algo lower-case (vLLM upper-cases it)"),
    ({"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "INT8"}}, "valid", "INT8 KV (served 16-bit)"),
    ({"quantization": {"quant_algo": "NVFP4", "group_size": 16}}, "valid", "NVFP4 g16"),
    ({"quantization": {"quant_algo": "W4A16_AWQ", "group_size": 128}}, "valid", "W4A16_AWQ g128"),
    ({"quantization": {"quant_algo": "W4A8_AWQ", "group_size": 128}}, "valid", "W4A8_AWQ"),
    ({"quantization": {"quant_algo": "MXFP8"}}, "valid", "MXFP8"),
    ({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}}}}, "valid", "MIXED_PRECISION, one layer"),
    ({"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, "valid", "flat (no quantization block)"),
    ({"producer": "modelopt", "quantization": {"quant_algo": "FP8"}}, "valid", "producer as a string"),
    ({"quantization": {"quant_algo": "NVFP4", "group_size": 32}}, "invalid", "NVFP4 group_size 32"),
    ({"quantization": {"quant_algo": "W4A16_AWQ", "group_size": "128"}}, "invalid", "group_size '128'"),
    ({"quantization": {"quant_algo": "W4A16_AWQ", "group_size": 0}}, "invalid", "group_size 0"),
    ({"quantization": {"quant_algo": "W4A16_AWQ", "group_size": True}}, "invalid", "group_size true"),
    ({"quantization": {"quant_algo": 8}}, "invalid", "quant_algo 8"),
    ({"quantization": {"quant_algo": None}}, "invalid", "quant_algo null"),
    ({"quantization": {"quant_algo": "FP16"}}, "invalid", "quant_algo FP16"),
    ({"quantization": {"kv_cache_quant_algo": "FP8"}}, "invalid", "no quant_algo"),
    ({"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "NVFP4"}}, "invalid", "NVFP4 KV"),
    ({"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": 8}}, "invalid", "kv_cache_quant_algo 8"),
    ({"quantization": {"quant_algo": "FP8", "exclude_modules": "lm_head"}}, "invalid", "exclude_modules a string"),
    ({"quantization": {"quant_algo": "FP8", "exclude_modules": [1]}}, "invalid", "exclude_modules [1]"),
    ({"quantization": {"quant_algo": "MIXED_PRECISION"}}, "invalid", "MIXED_PRECISION without quantized_layers"),
    ({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {"x": "FP8"}}}, "invalid",
     "a quantized layer as a string"),
    ({"quantization": "FP8"}, "invalid", "quantization a string"),
    ({"quantization": ["FP8"]}, "invalid", "quantization a list"),
    ({"producer": {"name": "bogus"}, "quantization": {"quant_algo": "FP8"}}, "invalid", "producer bogus"),
    ({"producer": {"name": 5}, "quantization": {"quant_algo": "FP8"}}, "invalid", "producer name 5"),
    ({}, "invalid", "empty object"),
    ([1, 2], "invalid", "a JSON array"),
    ('{"quantization": {', "invalid", "cut JSON"),
    ("", "invalid", "empty file"),
]


def _quant_folders(fx: Fixtures) -> list[tuple[str, str, str]]:
    """Llama-3.1-8B's config.json in a folder with each QUANT_BESIDE file beside it (stop 50)."""
    if fx.quant_folders is None:
        cfg = json.loads((REPO / "models" / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
        cfg.pop("quantization_config", None)
        out = []
        for i, (doc, label, why) in enumerate(QUANT_BESIDE):
            folder = fx.folder / f"hfq50-{i}"
            folder.mkdir(exist_ok=True)
            (folder / "config.json").write_text(json.dumps(cfg))
            (folder / "hf_quant_config.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
            out.append((str(folder), label, why))
        fx.quant_folders = out
    return fx.quant_folders


@st.composite
def quant_beside_cases(draw, fx: Fixtures) -> Case:
    """`memory` / `estimate` of a model folder whose quantization is in hf_quant_config.json: the ModelOpt formats
    are read, a field missing, of the wrong type or out of range is one error line (naming that file)."""
    b = _Builder(draw(st.sampled_from(["memory", "estimate"])), draw)
    path, label, why = b.file(draw, _quant_folders(fx))
    b.add([path, "--hardware", draw(st.sampled_from(["h100_sxm", "b200_sxm", "mi300x"])), "--cards", "1"], label,
          why, "file")
    if b.cmd == "memory":
        b.add(["--batch", "1", "--seq-len", "1024"], "valid")
    else:
        b.add(["--isl", "1024", "--osl", "128", "--concurrency", "8"], "valid")
        if draw(st.booleans()):
            b.add(["--framework", draw(st.sampled_from(["vllm", "sglang", "trtllm"]))], "any",
                  "a framework (on mi300x trtllm is refused)")
    if draw(st.floats(0, 1)) < 0.3:
        b.add(["--format", draw(st.sampled_from(["json", "yaml"]))], "valid")
    return b.case()


# --kv-dtype under each engine (its launch map in solver/frameworks/*.yaml; fp8_e4m3 is fp8 in specs/dtypes.py):
# (engine, hardware, the values its plans take, the values refused)
KV_BY_ENGINE = [("vllm", "h100_sxm", ["fp8", "FP8", "Fp8", "bf16", "fp16", "fp8_e4m3", "int8", "bfloat16"],
                 ["int4", "auto", "nvfp4", "", "fp8e4"]),
                ("sglang", "h100_sxm", ["fp8", "bf16", "fp16", "fp8_e4m3", "FP8"], ["int8", "int4", "auto", "nvfp4"]),
                ("trtllm", "h100_sxm", ["fp8", "bf16", "fp16", "fp8_e4m3"], ["int8", "int4", "auto"]),
                ("atom", "mi300x", ["fp8", "bf16", "fp8_e4m3", "BF16"], ["int8", "fp16", "auto"]),
                ("vllm-ascend", "atlas_a3", ["int8", "bf16", "fp16"], ["fp8", "fp8_e4m3", "auto", "int4"])]


@st.composite
def kv_engine_cases(draw) -> Case:
    """`solve` (slow) or `estimate --format yaml` with --kv-dtype spelled oddly under each engine: what its launch
    can spell is planned, what it cannot is refused in one line; estimate prices any KV format the device holds."""
    fw, hw, good, bad = draw(st.sampled_from(KV_BY_ENGINE))
    kv_good = draw(st.booleans())
    kv = draw(st.sampled_from(good if kv_good else bad))
    cmd = draw(st.sampled_from(["solve", "estimate"]))
    b = _Builder(cmd, draw)
    model = draw(st.sampled_from(["llama-3.1-8b", "qwen3-8b"]))
    b.add([model, "--hardware", hw, "--cards", "1", "--framework", fw, "--isl", "1024", "--osl", "128"], "valid")
    if cmd == "solve":
        b.add(["--max-concurrency", "8", "--time-limit", "1", "--kv-dtype", kv], "valid" if kv_good else "invalid",
              f"{fw} --kv-dtype {kv!r}")
        if draw(st.booleans()):
            b.add(["--format", "launch"], "valid")
        return b.case(slow=True)
    # estimate: no engine refusal (a what-if); an unknown name is refused, a format the device holds priced
    names = {"int4": "invalid", "auto": "invalid", "nvfp4": "invalid", "": "invalid", "fp8e4": "invalid"}
    b.add(["--concurrency", "8", "--kv-dtype", kv, "--format", "yaml"], names.get(kv, "any"), f"--kv-dtype {kv!r}")
    return b.case()


@st.composite
def workers_elsewhere_cases(draw) -> Case:
    """`--prefill-workers` / `--decode-workers` with `--serving agg` (or none) under solve, sweep and recommend:
    refused (a pool's count needs two pools); under `--serving disagg` sweep and recommend take them."""
    cmd = draw(st.sampled_from(["solve", "sweep", "recommend"]))
    b = _Builder(cmd, draw)
    base = ["qwen3-30b-a3b", "--hardware", "h200_sxm", "--isl", "2048", "--osl", "1024"]
    if cmd != "recommend":
        base += ["--cards", "8"]
    else:
        base += ["--target-output-tokens-per-s", "5000"]
    if cmd == "solve":
        base += ["--framework", "sglang", "--max-concurrency", "16", "--time-limit", "2"]
    b.add(base, "valid")
    serving = draw(st.sampled_from([None, "agg", "disagg", "disagg"]))
    if serving:
        b.add(["--serving", serving], "valid")
    flag = draw(st.sampled_from(["--prefill-workers", "--decode-workers"]))
    value, good = draw(st.sampled_from([("1", True), ("2", True), ("0", False), ("-2", False), ("two", False)]))
    b.add([flag, value], "valid" if good else "invalid", f"{flag} {value}")
    if serving != "disagg":
        b.add([], "invalid", f"{flag} with --serving {serving or 'agg (default)'}")
    return b.case(slow=True)


# --max-model-len / --context-length as a user pastes them: (value, how the engine's parser reads it). vLLM 0.34.0
# parses its --max-model-len with human_readable_int_or_auto (engine/arg_utils.py:403-405; utils/argparse_utils.py
# 30-95: 32k = 32,000, 32K = 32,768, -1 / auto = the model's own); SGLang's --context-length is a plain int, and a
# negative one is taken as the context unchecked (configs/model_config.py:1295-1318): None, "any"
LENGTHS = [("32768", True, True), ("1000", True, True), ("32k", True, False), ("32K", True, False),
           ("auto", True, False), ("-1", True, None), ("abc", False, False), ("3.5", False, False)]


@st.composite
def ngram_length_cases(draw) -> Case:
    """`check --command` of a lookup (ngram) speculative command with a maximum model length, per engine."""
    b = _Builder("check", draw)
    engine = draw(st.sampled_from(["vllm", "sglang"]))
    value, vllm_ok, sglang_ok = draw(st.sampled_from(LENGTHS))
    if engine == "vllm":
        spec = {"method": draw(st.sampled_from(["ngram", "ngram_gpu"])), "num_speculative_tokens": 3}
        if draw(st.booleans()):
            spec["prompt_lookup_max"] = 4
        cmd = f"vllm serve Qwen/Qwen3-8B -tp 1 --max-model-len {value} --speculative-config '{json.dumps(spec)}'"
        ok = vllm_ok
    else:
        cmd = ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1 --context-length "
               f"{value} --speculative-algorithm NGRAM --speculative-num-steps 3 --speculative-num-draft-tokens 4")
        ok = sglang_ok
    b.add(["--command", cmd, "--hardware", "h200_sxm", "--isl", "2048", "--osl", "256", "--concurrency", "16",
           "--mtp-accept", "0.6"], "any" if ok is None else "valid" if ok else "invalid",
          f"{engine} ngram, model length {value}")
    return b.case()


# every deployment field once with a value of the wrong type or out of range (specs/deployment.Deployment): the file
# is refused in one line naming the field
DEP_BASE = {"model": "qwen3-8b", "hardware": "h200_sxm", "world_size": 1, "parallel_config": {},
            "workload": {"phase": "decode", "batch": 8, "seq_len": 2048}}
DEP_WRONG = [("model", 5), ("model", ["qwen3-8b"]), ("hardware", {"a": 1}), ("framework", 3), ("framework", ""),
             ("world_size", "1"), ("world_size", 1.5), ("world_size", -1), ("world_size", True),
             ("parallel_config", [1]), ("parallel_config", "tp1"), ("parallel_config.attn_tp_size", "1"),
             ("parallel_config.attn_tp_size", 1.0), ("workload", "decode"), ("workload.phase", "both"),
             ("workload.phase", 1), ("workload.batch", "8"), ("workload.batch", -8), ("workload.batch", 1e30),
             ("workload.seq_len", [2048]), ("workload.isl", 0), ("workload.osl", "x"), ("workload.concurrency", -1),
             ("workload.prefix_hit", 1.5), ("workload.prefix_hit", "half"), ("quant", "fp8"), ("quant.weights", 8),
             ("quant.weights", "fp9"), ("quant.moe_weights", ["fp8"]), ("quant.kv_cache", "int4"),
             ("quant.kv_cache", True), ("mtp", "2"), ("mtp", -1), ("mtp", 1.5), ("mtp_accept", 2),
             ("mtp_accept", "x"), ("draft", "eagle"), ("draft", 1), ("enable_online_split_weight", "yes please"),
             ("afd", "sometimes"), ("previous_parallel_config", "x"), ("previous_parallel_config.foo", 1),
             ("derived", {"a": 1}), ("attn_dp_size", 3), ("moe_ep_size", "x"), ("foo", 1)]


@st.composite
def deployment_field_cases(draw, fx: Fixtures) -> Case:
    """`check FILE` (or `launch FILE`) of a deployment with one field wrong: exit 2, one line."""
    b = _Builder(draw(st.sampled_from(["check", "check", "launch"])), draw)
    i = draw(st.integers(0, len(DEP_WRONG) - 1))
    field_, value = DEP_WRONG[i]
    dep = copy.deepcopy(DEP_BASE)
    *parents, last = field_.split(".")
    node = dep
    for part in parents:  # a block the base leaves out (quant, previous_parallel_config) is written for it
        node = node.setdefault(part, {})
    node[last] = value
    path = _dump_yaml(fx.folder / f"dep50-{i}.yaml", dep)
    # launch --engine names the engine over the file's framework
    b.add([path], "any" if b.cmd == "launch" and field_ == "framework" else "invalid", f"{field_}: {value!r}", "file")
    if b.cmd == "launch":
        b.add(["--engine", draw(st.sampled_from(["vllm", "sglang"]))], "valid")
    return b.case()


# ------------------------------------------------------------- stop 51: offload, partitions, switches, AMD, aliases

QWEN3_LAYERS = 36  # Qwen/Qwen3-8B's num_hidden_layers (models/Qwen--Qwen3-8B.json)
CHECK_WORKLOAD = ["--isl", "1024", "--osl", "128", "--concurrency", "8"]
# vLLM's --kv-offloading-size (a float GiB, config/cache.py:407) as pasted: (value, label). 0 stops vLLM (spec.py
# :100-103, cpu_bytes_to_use falsy), nan and inf too (int() at spec.py:122), a negative one sizes no tier: the check
# reads the flag and notes it without judging its size, so those are "any" (the run's findings say why)
VLLM_OFFLOAD_SIZES = [("8", "valid"), ("0.5", "valid"), ("1e3", "valid"), ("0", "any"), ("-4", "any"),
                      ("nan", "any"), ("inf", "any"), ("abc", "invalid"), ("8GiB", "invalid")]
# SGLang's --hicache-ratio (float) and --hicache-size (int GB; 0 = use the ratio), memory.py:109-116
SGLANG_HICACHE = [("--hicache-ratio", "2", "valid"), ("--hicache-ratio", "0.5", "valid"),
                  ("--hicache-ratio", "0", "any"), ("--hicache-ratio", "-1", "any"), ("--hicache-ratio", "abc", "invalid"),
                  ("--hicache-size", "4", "valid"), ("--hicache-size", "0", "valid"), ("--hicache-size", "-3", "any"),
                  ("--hicache-size", "1.5", "invalid"), ("--hicache-size", "x", "invalid")]


@st.composite
def offload_command_cases(draw) -> Case:
    """`check --command` with the engine's KV offload flags (profile kv_offload): with or without the flag that
    builds the tier (kv_offload.built_by), sizes of the wrong type refused by the parser (vLLM's float, SGLang's
    float ratio and int size), a backend outside vLLM's choices refused; read and noted, not priced."""
    b = _Builder("check", draw)
    engine = draw(st.sampled_from(["vllm", "sglang"]))
    extra: list[str] = []
    if engine == "vllm":
        prog = "vllm serve Qwen/Qwen3-8B -tp 1"
        if draw(st.floats(0, 1)) < 0.8:
            size, label = draw(st.sampled_from(VLLM_OFFLOAD_SIZES))
            extra.append(f"--kv-offloading-size {size}")
            b.add([], label, f"--kv-offloading-size {size}")
        if draw(st.booleans()):
            backend = draw(st.sampled_from(["native", "lmcache", "lmcache", "disk"]))
            extra.append(f"--kv-offloading-backend {backend}")
            b.add([], "invalid" if backend == "disk" else "valid", f"--kv-offloading-backend {backend}")
    else:
        prog = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1"
        switch = draw(st.sampled_from([None, "--enable-hierarchical-cache", "--enable-hicache"]))
        if switch:
            extra.append(switch)
        for flag, value, label in draw(st.lists(st.sampled_from(SGLANG_HICACHE), min_size=0 if switch else 1,
                                                max_size=2, unique_by=lambda t: t[0])):
            extra.append(f"{flag} {value}")
            b.add([], label, f"{flag} {value}")
    extra = draw(st.permutations(extra))
    b.add(["--command", " ".join([prog, *extra]), "--hardware", draw(st.sampled_from(["h100_sxm", "mi300x"])),
           *CHECK_WORKLOAD], "valid", f"{engine} offload: {' '.join(extra)}")
    return b.case()


def _partition_label(value: str, pp: int, engine: str) -> tuple[str, str]:
    """How the engine reads a partition variable (vLLM 0.34.0 distributed/utils.py:228-239, at any PP size through
    make_layers; sglang 0.5.23 srt/distributed/utils.py:118-137, dropped at pp_size 1, no check of a negative
    count): (label, why)."""
    if engine == "sglang" and pp == 1:
        return "valid", "SGLang drops its partition at pp 1"
    try:
        counts = [int(n) for n in value.split(",")]  # int() takes " 18" and "+18", as the engines' parsers do
    except ValueError:
        return "invalid", f"{value!r} not a list of counts"
    if len(counts) != pp:
        return "invalid", f"{len(counts)} counts for pp {pp}"
    if sum(counts) != QWEN3_LAYERS:
        return "invalid", f"{sum(counts)} layers, not {QWEN3_LAYERS}"
    if any(n < 0 for n in counts):  # vLLM refuses; SGLang builds a stage from layer -1 (refused here: "any")
        return ("invalid" if engine == "vllm" else "any"), "a negative count"
    return "valid", f"{value!r} over pp {pp}"


PARTITIONS = ["18,18", "20,16", "0,36", "36,0", "-2,38", "18,17", "12,12,12", "36", "12,12,12,0", " 18,18 ", "18, 18",
              "+18,18", "18,,18", "a,b", "", "18;18", "1e1,26", "18.0,18", "12,12,12", "0,0,36", "10,14,12"]


@st.composite
def partition_env_cases(draw) -> Case:
    """`check --command` with VLLM_PP_LAYER_PARTITION / SGLANG_PP_LAYER_PARTITION over pp 1, 2, 3 for Qwen3-8B's 36
    layers: zeros, negatives, wrong counts, wrong sums, spaces (quoted: int() strips them; unquoted: the shell splits
    the value off), junk; the engine's check (or, SGLang at pp 1, its dropping the variable) decides."""
    b = _Builder("check", draw)
    engine = draw(st.sampled_from(["vllm", "sglang"]))
    pp = draw(st.sampled_from([1, 2, 2, 3]))
    value = draw(st.sampled_from(PARTITIONS))
    quoted = draw(st.booleans()) or value == ""
    var = "VLLM_PP_LAYER_PARTITION" if engine == "vllm" else "SGLANG_PP_LAYER_PARTITION"
    prog = (f"vllm serve Qwen/Qwen3-8B -tp 1 -pp {pp}" if engine == "vllm" else
            f"python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1 --pp-size {pp}")
    # unquoted, `VAR=18, 18 prog` sets VAR to "18," and leaves `18` before the program (read as a wrapper's word)
    label, why = _partition_label(value if quoted else value.strip().split(" ")[0], pp, engine)
    text = f"{var}={_quote(value) if quoted else value.strip()} {prog}"
    b.add(["--command", text, "--hardware", "h100_sxm", *CHECK_WORKLOAD], label, why)
    return b.case()


# odd spellings of the past-context switches: vLLM strips and lower-cases (envs.py:1177-1180: on = 1 / true),
# SGLang lower-cases without stripping (environ.py:143-150 EnvBool: true / 1 / yes / y on, an unparsed value warns
# and falls back to the default, off)
ODD_SWITCH_VALUES = [" 1 ", " true", "True", "TRUE ", "1.0", "01", "on", "", "y", "Y", " yes", "yes", "tRuE", "2"]


def _switch_on(engine: str, value: str) -> bool:
    if engine == "vllm":
        return value.strip().lower() in ("1", "true")
    return value.lower() in ("true", "1", "yes", "y")


@st.composite
def env_switch_cases(draw) -> Case:
    """`check --command` past Qwen3-8B's 40,960 context with the engine's allow-longer switch spelt oddly: started
    (valid) only where the engine reads the value as on, else refused; within the context any value is valid."""
    b = _Builder("check", draw)
    engine = draw(st.sampled_from(["vllm", "sglang"]))
    value = draw(st.sampled_from(ODD_SWITCH_VALUES))
    length = draw(st.sampled_from(["65536", "32768"]))
    var, prog, flag = (("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "vllm serve Qwen/Qwen3-8B -tp 1", "--max-model-len")
                       if engine == "vllm" else
                       ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
                        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1", "--context-length"))
    past = int(length) > 40960
    on = _switch_on(engine, value)
    b.add(["--command", f"{var}={_quote(value)} {prog} {flag} {length}", "--hardware", "h200_sxm", "--isl", "2048",
           "--osl", "512", "--concurrency", "4"], "valid" if on or not past else "invalid",
          f"{var}={value!r} ({'on' if on else 'off'}), {flag} {length}")
    return b.case()


# tower flags on a text-only model (Qwen3-8B) and a vision one (Qwen3-VL-30B-A3B): (engine, flag text, label)
TOWER_TEXT = [("vllm", "--mm-encoder-tp-mode data", "valid"), ("vllm", "--mm-encoder-tp-mode weights", "valid"),
              ("vllm", "--mm-encoder-tp-mode=data", "valid"), ("vllm", "--mm-encoder-tp-mode DATA", "invalid"),
              ("vllm", "--mm-encoder-tp-mode bogus", "invalid"), ("vllm", "--mm-encoder-tp-mode", "invalid"),
              ("vllm", "--language-model-only", "valid"), ("vllm", "--limit-mm-per-prompt '{\"image\": 0}'", "valid"),
              ("vllm", "--limit-mm-per-prompt '{\"image\": '", "invalid"),
              ("sglang", "--mm-enable-dp-encoder", "valid"), ("sglang", "--no-mm-enable-dp-encoder", "valid"),
              ("sglang", "--mm-enable-dp-encoder true", "invalid")]


@st.composite
def tower_text_cases(draw) -> Case:
    """`check --command` with a tower flag (profile tower_flags) on a text-only model (noted: it places nothing) or
    a vision model (its tower placed); a value outside the parser's choices, or one given a switch, is refused."""
    b = _Builder("check", draw)
    engine, flag, label = draw(st.sampled_from(TOWER_TEXT))
    model = draw(st.sampled_from(["Qwen/Qwen3-8B", "Qwen/Qwen3-8B", "Qwen/Qwen3-VL-30B-A3B-Instruct"]))
    tp = draw(st.sampled_from(["1", "2"]))
    prog = (f"vllm serve {model} -tp {tp}" if engine == "vllm" else
            f"python3 -m sglang.launch_server --model-path {model} --tp-size {tp}")
    b.add(["--command", f"{prog} {flag}", "--hardware", "h100_sxm", *CHECK_WORKLOAD], label, f"{flag} on {model}")
    return b.case()


# ATOM's --kv_cache_dtype (engines.md: bf16 / fp8; its parser is not recorded here): a value the profile spells is
# read, another is noted as not read (valid), a bare flag is refused
ATOM_KV = [("fp8", "valid"), ("bf16", "valid"), ("FP8", "valid"), ("fp16", "valid"), ("int8", "valid"),
           ("auto", "valid"), ("fp8_e4m3", "valid"), ("bfloat16", "valid"), (None, "invalid")]


@st.composite
def atom_dtype_cases(draw) -> Case:
    """`check --command` of an ATOM server on MI300X / MI355X with --kv_cache_dtype spelt oddly (or given no value,
    last or before another flag), maybe beside flags its profile does not print (--dtype, --quantization)."""
    b = _Builder("check", draw)
    value, label = draw(st.sampled_from(ATOM_KV))
    model = draw(st.sampled_from(["Qwen/Qwen3-8B", "Qwen/Qwen3-30B-A3B"]))
    # -tp always: the facts give no ATOM default for it, so a command without it is read as no configuration
    parts = [f"--kv_cache_dtype {value}" if value is not None else "--kv_cache_dtype", "-tp 1"]
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(["--dtype float16", "--dtype fp8", "--quantization fp8"])))
    parts = draw(st.permutations(parts))  # a flag after the bare one still leaves it no value
    b.add(["--command", f"python -m atom.entrypoints.openai_server --model {model} {' '.join(parts)}", "--hardware",
           draw(st.sampled_from(["mi300x", "mi355x"])), *CHECK_WORKLOAD], label,
          f"ATOM --kv_cache_dtype {value!r}")
    return b.case()


# short model names: the catalog's aliases in any case and with underscores (valid), near misses (invalid: one
# line naming the close names)
ALIASES = [("qwen3.5-122b", "valid"), ("Qwen3.5-122B", "valid"), ("qwen3.5_122b", "valid"),
           ("qwen3.5-122b-a10b", "valid"), ("QWEN3.5-122B-A10B", "valid"), ("qwen3.5-122", "invalid"),
           ("qwen3.5-12b", "invalid"), ("qwen35-122b", "invalid"), ("qwen3.5-122bb", "invalid"),
           ("qwen3.5 122b", "invalid"), ("qwen3.5-122b.json", "invalid"), ("", "invalid"), ("llama3.1-8b", "valid"),
           ("llama-3.1-8B", "valid"), ("dsv3", "valid"), ("ds-v3", "invalid"), ("deepseekv3", "invalid")]


@st.composite
def model_alias_cases(draw) -> Case:
    """`memory` / `estimate` / `inspect` with a short model name or a near miss."""
    cmd = draw(st.sampled_from(["memory", "estimate", "inspect"]))
    b = _Builder(cmd, draw)
    name, label = draw(st.sampled_from(ALIASES))
    b.add([name], label, f"model {name!r}")
    if cmd != "inspect":
        b.add(["--hardware", "h200_sxm", "--cards", "8"], "valid")
        b.add(["--batch", "1", "--seq-len", "1024"] if cmd == "memory" else CHECK_WORKLOAD, "valid")
    return b.case()


AMD_ENGINES = [("generic", True), ("vllm", True), ("sglang", True), ("atom", True), ("trtllm", False),
               ("vllm-ascend", False), ("cann-recipes", False)]


@st.composite
def amd_engine_cases(draw) -> Case:
    """`estimate` / `solve` (slow) / `sweep` (slow) on MI300X or MI355X under every engine: the ROCm ones plan, the
    others are refused in one line naming the engines for AMD devices."""
    cmd = draw(st.sampled_from(["estimate", "estimate", "solve", "sweep"]))
    b = _Builder(cmd, draw)
    fw, runs = draw(st.sampled_from(AMD_ENGINES))
    model = draw(st.sampled_from(["qwen3-30b-a3b", "llama-3.1-8b"]))
    hw = draw(st.sampled_from(["mi300x", "mi355x"]))
    cards = draw(st.sampled_from(["1", "8"]))
    b.add([model, "--hardware", hw, "--cards", cards, "--isl", "1024", "--osl", "256"], "valid")
    b.add(["--framework", fw], "valid" if runs else "invalid", f"{fw} on {hw}")
    if cmd == "estimate":
        # estimate prices the layout given, by default every card a replica: ATOM runs a dense model TP over all
        # ranks (its rule C.dp_attention_moe_only), so 8 replicas of Llama-3.1-8B are refused there
        b.add(["--concurrency", "8"], "invalid" if fw == "atom" and model == "llama-3.1-8b" and cards == "8"
              else "valid", "ATOM's DP attention is for MoE models")
    elif cmd == "solve":
        b.add(["--max-concurrency", "16", "--time-limit", "2"], "valid")
    else:
        b.add(["--scenarios", "latency", "--max-concurrency", "16", "--time-limit", "2"], "valid")
    return b.case(slow=cmd != "estimate")


# A long run's cases by strategy group, in the order benchmarks/fuzz.py draws them: (group, share, seed offset,
# batch share). Each group's cases are a prefix of what it drew when it was last "new" or the whole run: "old" in
# batches of the whole run (its first 40% are the first 40% it drew at 70%), "s45" and "s46" (stop 45's and 46's) in
# batches of 30% of the run under the seed offsets they were drawn with then; "s47" (stop 47's) and "new" (stop 48's:
# repeated options, numbers spelt at their type's edges, a user's device file, requests no plan meets; the merged
# stop's --factors files, calibrate --from-csv --fit, models an engine refuses by type; now "s48") and "new" (stop 49's:
# speculative commands by method and depth, past-context switches by value, deployment files' draft, worker counts,
# SGLang DCP on a DSA pool; now "s49", its share cut from 0.2 to 0.1) and "new" (stop 50's: a folder's
# hf_quant_config.json, --kv-dtype spelled oddly per engine, worker counts without two pools, pasted model lengths
# with a lookup draft, a deployment file with one field wrong; now "s50", its share cut from 0.2 to 0.1) and "new"
# (stop 51's: KV offload flags per engine, partition variables over pp 1-3, past-context switches spelt oddly, tower
# flags on text-only models, ATOM's --kv_cache_dtype, short model names and near misses, AMD devices under every
# engine) after them; "old" cut from 0.3 to 0.25 to 0.2, "s47" from 0.15 to 0.1 and "s48" from 0.15 to 0.1, their
# batches as before (each still a prefix of what it drew).
GROUPS = (("old", 0.2, 0, 1.0), ("s45", 0.1, 500, 0.3), ("s46", 0.1, 700, 0.3), ("s47", 0.1, 900, 0.3),
          ("s48", 0.1, 1100, 0.2), ("s49", 0.1, 1300, 0.2), ("s50", 0.1, 1500, 0.2), ("new", 0.2, 1700, 0.2))


def cases(fx: Fixtures, fast: bool = False, only: str | None = None, group: str | None = None
          ) -> st.SearchStrategy[Case]:
    """Every subcommand; `fast` leaves out the valid solves, sweeps and recommends (seconds each); `only` draws
    from one strategy (its function's name without _cases: "family", "topology", ...); `group` "old" draws from
    the strategies earlier runs drew from (so a seed's cases stay as they were), "s45" / "s46" / "s47" / "s48" /
    "s49" / "s50" from stop 45's / 46's / 47's / 48's / 49's / 50's, "new" from the ones added since, None from all
    (GROUPS)."""
    strategies = {"catalog": catalog_cases(), "inspect": inspect_cases(fx), "memory": memory_cases(fx),
                  "estimate": estimate_cases(fx), "solve": solve_cases(fx), "check": check_cases(fx),
                  "launch": launch_cases(fx), "sweep": sweep_cases(fx), "recommend": recommend_cases(fx),
                  "calibrate": calibrate_cases(fx), "solve_edge": solve_edge_cases(), "format": format_cases(fx),
                  "solve_file": solve_file_cases(fx), "topology": topology_cases(fx), "family": family_cases(fx),
                  "batch_rule": batch_rule_cases()}
    s45 = {"sweep_price": sweep_price_cases(fx), "disagg_copies": disagg_copies_cases(fx),
           "disagg_sla": disagg_sla_cases(fx), "no_layers": no_layers_cases(fx),
           "long_dsa_memory": long_dsa_memory_cases(fx), "launch_solved": launch_solved_cases(fx)}
    s46 = {"afd_check": afd_check_cases(fx), "afd_estimate": afd_estimate_cases(), "afd_launch": afd_launch_cases(fx),
           "vllm_wide_solve": vllm_wide_solve_cases(), "vllm_wide_launch": vllm_wide_launch_cases(fx),
           "multinode_launch": multinode_launch_cases(fx)}
    s47 = {"command_check": command_check_cases(fx), "pp_stage": pp_stage_cases()}
    s48 = {"repeats": repeats_cases(fx), "spelt_numbers": spelt_numbers_cases(), "device_file": device_file_cases(fx),
           "unmet": unmet_cases(), "factors": factors_cases(fx), "calibrate_fit": calibrate_fit_cases(fx),
           "refused_model": refused_model_cases()}
    s49 = {"draft_command": draft_command_cases(), "long_command": long_command_cases(),
           "draft_deployment": draft_deployment_cases(fx), "workers": workers_cases(),
           "dsa_pool_command": dsa_pool_command_cases()}
    s50 = {"quant_beside": quant_beside_cases(fx), "kv_engine": kv_engine_cases(),
           "workers_elsewhere": workers_elsewhere_cases(), "ngram_length": ngram_length_cases(),
           "deployment_field": deployment_field_cases(fx)}
    new = {"offload_command": offload_command_cases(), "partition_env": partition_env_cases(),
           "env_switch": env_switch_cases(), "tower_text": tower_text_cases(), "atom_dtype": atom_dtype_cases(),
           "model_alias": model_alias_cases(), "amd_engine": amd_engine_cases()}
    strategies_all = {**strategies, **s45, **s46, **s47, **s48, **s49, **s50, **new}
    if only is not None and only not in strategies_all:
        raise ValueError(f"unknown strategy {only!r} (known: {', '.join(strategies_all)})")
    pools = {"old": strategies, "s45": s45, "s46": s46, "s47": s47, "s48": s48, "s49": s49, "s50": s50, "new": new,
             None: strategies_all}
    s = strategies_all[only] if only else st.one_of(*pools[group].values())
    return s.filter(lambda c: not c.slow) if fast else s


# ------------------------------------------------------------------------------------------------ running


def run_in_process(case: Case) -> tuple[int | None, str, BaseException | None]:
    """Run one case through the real entry point (solver.cli.main, as /work/bin/shardplan does) in this
    process: (exit code, stdout + stderr, an exception that escaped)."""
    from click.testing import CliRunner

    from solver.cli.main import main

    env = {k: None for k in ("SHARDPLAN_DEBUG",)}
    res = CliRunner().invoke(main, list(case.argv[0:]), env=env, catch_exceptions=True)
    exc = res.exception if res.exception is not None and not isinstance(res.exception, SystemExit) else None
    out = (res.stdout or "") + (res.stderr or "")
    return res.exit_code, out, exc


def stderr_tail(output: str) -> str:
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    return lines[-1][:240] if lines else ""
