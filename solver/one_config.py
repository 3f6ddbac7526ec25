"""The entry points for one given parallel_config, shared by `shardplan estimate / memory / check` and the Python
API (solver.api.estimate / memory / check): each returns a typed result whose `as_dict()` is the command's JSON.
A refusal names the command line's flag (--attn-tp); solver.api re-names it by the keyword (attn_tp_size)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from solver.catalog import DEFAULT_FRAMEWORK
from solver.errors import InputError
from solver.specs.knobs import CONFIG_FLAGS, DERIVED, KNOB_FLAGS, KNOBS

if TYPE_CHECKING:
    from solver.estimate.memory import MemoryReport
    from solver.estimate.memory_options import MemoryOptions
    from solver.estimate.serving import Estimate, Workload
    from solver.rank.review import Review
    from solver.specs.deployment import Deployment
    from solver.specs.framework import FrameworkProfile
    from solver.specs.hardware import Hardware
    from solver.specs.model import ModelSpec
    from solver.specs.parallel import ParallelConfig
    from solver.specs.precision import Precision


def load_from(loader: Callable[[str], Any], value: str, key: str, flag: str | None, config: str) -> Any:
    """`loader(value)` for a deployment file's model / hardware / framework, a refusal of the name itself named by
    where it came from: `flag` where the command line gave it (--model, --engine, ...), else the file's key
    ("FILE: model"). A refusal inside a file the value names keeps that file's own field."""
    try:
        return loader(value)
    except InputError as exc:
        if exc.field != key:
            raise
        raise InputError(flag or f"{config}: {key}", exc.problem) from None


def check_mtp(model: "ModelSpec | str", mtp: int, field: str = "--mtp") -> None:
    """MTP N > 0 needs MTP (next-n) layers in the model's config: nothing else says how big they are, and no engine
    drafts with layers the checkpoint lacks. (The library still plans a reference whose published deployment ran
    MTP on a config that omits them.) `field`: the flag or file field that gave N."""
    if mtp:
        if isinstance(model, str):
            from solver.specs.model_catalog import load_model

            model = load_model(model)
        if not model.num_mtp_layers:
            from solver.specs.config.read import no_mtp_layers

            fix = "use --mtp 0" if field.startswith("--") else "set it to 0"
            raise InputError(field, f"{no_mtp_layers(model.name)}; {fix}")


# the flag that sets each name a refusal of the knobs may use: a knob's own, a derived size's knob's (EP = cards /
# --moe-tp), the world's, the MTP depth's (a profile's max_mtp)
_FLAG_OF = {**CONFIG_FLAGS, **{d: KNOB_FLAGS[k] for d, k in DERIVED.items()}, "world_size": "--cards",
            "world": "--cards", "mtp": "--mtp"}


def flags_named(problem: str, among: frozenset[str] | None = None) -> str:
    """The flags of the knobs a refusal names, in its order ("--attn-tp, --kvp"): the single-config commands take
    knobs as flags, so their refusal names those, not the file key parallel_config (which it stays for a
    problem that names no knob). `among`: only the knobs in it (a rule's own; None: all)."""
    import re

    at = {flag: m.start() for name, flag in _FLAG_OF.items() if among is None or name in among
          for m in [re.search(rf"(?<![a-z_]){name}(?![a-z_])", problem)] if m}
    return ", ".join(sorted(at, key=at.get)) or "parallel_config"


def _rule_of(fw, env, problem: str):
    """The broken error rule a problem line of fw.check is ("[id] message"); None for a limit or a KV-head split."""
    return next((r for r in fw.violated(env, "error") if problem.startswith(f"[{r.id}]")), None)


def _flags_refused(fw, env, first: str) -> str:
    """The flags a framework's refusal is about: the knobs its text names that its first broken rule reads (a
    rule's message may suggest another knob as the way out: vLLM's prefill-CP rule names kvp_size); all the knobs
    the text names where no rule reads them."""
    rule = _rule_of(fw, env, first)
    named = flags_named(first, frozenset(rule.names)) if rule is not None else "parallel_config"
    return named if named != "parallel_config" else flags_named(first)


def knob_rules(fw, model, hw, pc: ParallelConfig, batch: int, mtp: int,
               given: frozenset[str] | None = None) -> list[str]:
    """The model's rules (specs.model_rules: a knob of a module the model lacks, more stages than layers) and the
    framework profile's (the planner's own rule machinery) on a user's knobs: an error (TP64 on 32 heads, EP256
    on 128 experts, a knob the framework lacks) is bad input; warnings come back as notes. `given`: the knobs the
    user gave (None: all were); a broken rule that reads none of them is the default layout's, and its refusal
    names the knobs to give."""
    from solver.specs.model_rules import model_problems
    from solver.specs.rule_env import device_facts, model_env

    problems = model_problems(model, pc, fw)
    if problems:
        raise InputError(flags_named(problems[0]), f"not runnable on {model.name}: {'; '.join(problems)}")

    env = model_env(pc.settings(), model, **device_facts(hw), world=pc.world_size, batch=batch, mtp=mtp)
    warnings = [f"[{r.id}] {r.message}" for r in fw.violated(env, "warning")]
    errors = fw.check(env, "error")
    if errors:
        first = _rule_of(fw, env, errors[0])
        read = [k for k in CONFIG_FLAGS if first is not None and k in first.names and k in fw.knobs]
        if given is not None and read and not given & set(read):
            flags = ", ".join(CONFIG_FLAGS[k] for k in read)
            raise InputError(flags, f"the default layout (each knob not given at 1: {pc.attn_replicas} attention "
                                    f"replicas of {pc.attn_group_size} card{'s' * (pc.attn_group_size > 1)}) is "
                                    f"{fw.refusal(errors)}; give {flags} so that "
                                    "the rule holds")
        raise InputError(_flags_refused(fw, env, errors[0]), fw.refusal(errors))
    return [f"framework {fw.name}: {w} (slow path)" for w in warnings]


def given_knobs(knobs: dict[str, Any]) -> frozenset[str]:
    """The knobs of a single-config command's options the user gave (the others are None)."""
    return frozenset(k for k, v in knobs.items() if v is not None)


def tied_config(fw, model, hw, cards: int, knobs: dict[str, Any], batch: int, mtp: int
                ) -> tuple[ParallelConfig, list[str]]:
    """The parallel_config of the knobs given, each knob not given that the engine's rules tie to them set to its
    tied value (specs.knob_ties: ATOM's --dense-tp = its TP), with a note naming what was derived and by which rule."""
    from solver.specs.knob_ties import tie_knobs
    from solver.specs.rule_env import device_facts, model_env

    def env_of(current: dict[str, int]):
        pc = parallel_from_options(cards, current)
        return model_env(pc.settings(), model, **device_facts(hw), world=cards, batch=batch, mtp=mtp)

    tied, said = tie_knobs(fw, knobs, env_of)
    notes = [f"framework {fw.name} ties knobs not given to those given: {'; '.join(said)} (give a knob to set it)"
             ] if said else []
    return parallel_from_options(cards, tied), notes


def parallel_from_options(cards: int, opts: dict[str, Any]) -> ParallelConfig:
    from solver.specs.parallel import make_parallel_config

    return make_parallel_config(cards, **{k: opts.get(k) for k in CONFIG_FLAGS})


def _positive(value: int | None, flag: str, minimum: int = 1) -> None:
    if value is not None and value < minimum:
        raise InputError(flag, f"must be >= {minimum}, got {value}")


def workload_from_options(isl: int | None, osl: int | None, concurrency: int | None, phase: str | None,
                          batch: int | None, seq_len: int | None, mtp: int, mtp_accept: float) -> Workload:
    """Exactly one complete workload: serving (--isl --osl --concurrency), a phase (--phase --batch --seq-len), or
    a decode over the output of its prompts (--phase decode --batch --isl --osl: costed at ISL + OSL/2, memory
    holding ISL + OSL, as a decode solve judges it)."""
    from solver.estimate.serving import Workload

    _positive(mtp, "--mtp", 0)
    if not 0.0 <= mtp_accept <= 1.0:
        raise InputError("--mtp-accept", f"must be in [0, 1], got {mtp_accept}")
    if phase == "decode" and (isl is not None or osl is not None) and concurrency is None and seq_len is None:
        missing = [f for f, v in (("--batch", batch), ("--isl", isl), ("--osl", osl)) if v is None]
        if missing:
            raise InputError("workload", f"--phase decode over --isl/--osl also needs {', '.join(missing)}")
        for flag, value in (("--batch", batch), ("--isl", isl), ("--osl", osl)):
            _positive(value, flag)
        return Workload.decode_of(batch, isl, osl, mtp, mtp_accept)  # type: ignore[arg-type]
    serving = {"--isl": isl, "--osl": osl, "--concurrency": concurrency}
    single = {"--phase": phase, "--batch": batch, "--seq-len": seq_len}
    s_given = [k for k, v in serving.items() if v is not None]
    p_given = [k for k, v in single.items() if v is not None]
    if s_given and p_given:
        raise InputError("workload", f"give either {'/'.join(serving)} or {'/'.join(single)}, not both "
                                     f"(got {', '.join(s_given + p_given)})")
    if not s_given and not p_given:
        raise InputError("workload", "missing: give --isl N --osl N --concurrency C (serving) or "
                                     "--phase prefill|decode --batch B --seq-len S")
    given, group = (s_given, serving) if s_given else (p_given, single)
    missing = [k for k in group if k not in given]
    if missing:
        raise InputError("workload", f"{', '.join(given)} also needs {', '.join(missing)}")
    for flag, value in {**serving, "--batch": batch, "--seq-len": seq_len}.items():
        _positive(value, flag)
    if s_given:
        return Workload("serving", isl=isl, osl=osl, concurrency=concurrency, mtp=mtp,  # type: ignore[arg-type]
                        mtp_accept=mtp_accept)
    return Workload(phase, batch=batch, seq_len=seq_len, mtp=mtp, mtp_accept=mtp_accept)  # type: ignore[arg-type]


# why an acceptance rate on a prefill-only workload is refused (estimate --phase prefill, check's prefill workload)
PREFILL_ACCEPT_UNREAD = ("a prefill-only workload decodes nothing, so it accepts no draft token (its step runs the "
                         "MTP layer once over the prompts, whatever the rate); drop the acceptance rate, or give a "
                         "decode or serving workload")


def workload_of(isl: int | None, osl: int | None, concurrency: int | None, phase: str | None, batch: int | None,
                seq_len: int | None, mtp: int, mtp_accept: float | None, prefix_hit: float = 0.0) -> Workload:
    """`estimate`'s workload with its acceptance rate checked: None is the default rate (DEFAULT_MTP_ACCEPT); a
    rate given is refused where nothing reads it (no MTP depth, a prefill step). `prefix_hit`: the share of each
    prompt's tokens in the prefix cache (Workload.prompt_tokens), refused on a decode step, which has no prompt."""
    from dataclasses import replace

    from solver.specs.scenario import DEFAULT_MTP_ACCEPT, accept_unread, hit_unread, prefix_hit_of

    unread = accept_unread(mtp, mtp_accept)
    if unread:
        raise InputError("--mtp-accept", unread)
    if mtp_accept is not None and phase == "prefill":
        raise InputError("--mtp-accept", PREFILL_ACCEPT_UNREAD)
    hit = prefix_hit_of(prefix_hit)
    wl = workload_from_options(isl, osl, concurrency, phase, batch, seq_len, mtp,
                               DEFAULT_MTP_ACCEPT if mtp_accept is None else mtp_accept)
    if not hit:
        return wl
    unread = hit_unread(wl.kind, hit)
    if unread:
        raise InputError("--prefix-hit", unread)
    return replace(wl, prefix_hit=hit)


@dataclass
class EstimateResult:
    """One parallel_config estimated: `estimate` (memory, TTFT, TPOT, throughput, per-step breakdowns) and what
    it was estimated on (the hardware as the engine's launch places it); `notes`: what the inputs noted."""

    model: ModelSpec
    hardware: Hardware
    framework: FrameworkProfile
    parallel_config: ParallelConfig
    precision: Precision
    workload: Workload
    estimate: Estimate
    notes: list[str] = field(default_factory=list)
    asked: str | None = None  # the model as the caller named it (model_catalog.model_names); None: the config's name
    # attention-FFN disaggregated over these cards: parallel_config is then one half's (its derived sizes a side's)
    afd_cards: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """What `shardplan estimate --format json` prints."""
        from solver.report.estimate_view import estimate_data
        from solver.specs.model_catalog import with_model_names

        data = estimate_data(self.model, self.hardware, self.parallel_config, self.precision, self.framework,
                             self.workload, self.estimate, self.notes)
        if self.afd_cards is not None:  # the deployment's cards, both halves; `afd` says the knobs are a half's
            data["cards"], data["afd"] = self.afd_cards, True
        return data if self.asked is None else with_model_names(data, self.asked)


def estimate_config(model: str, hardware: str, cards: int, knobs: dict[str, Any], wl: Workload,
                    weight_dtype: str | None = None, moe_weight_dtype: str | None = None,
                    kv_dtype: str | None = None, framework: str = DEFAULT_FRAMEWORK, afd: bool = False
                    ) -> EstimateResult:
    """`shardplan estimate` of one config: `knobs` by their parallel_config names (unset: the knob's default).
    `afd`: attention-FFN disaggregated (estimate.afd): the knobs hold within each half of the `cards`."""
    from solver.estimate.compute import factors_for
    from solver.estimate.serving import estimate
    from solver.estimate.workload import one_token_note, prefix_hit_note
    from solver.entry import refuse_unlaunchable_kv
    from solver.rank.review import hardware_placement
    from solver.space.placement import as_launched, placement_note
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.notes import input_notes
    from solver.specs.precision import resolve_precision

    spec = load_model(model)
    fw = load_framework(framework)
    fw.check_model(spec, vendor=load_hardware(hardware).vendor)
    no_hit = fw.prefix_hit_refusal(spec, wl.prefix_hit)
    if no_hit:
        raise InputError("--prefix-hit", no_hit)
    if afd:
        from solver.specs.afd import check_afd

        check_afd(fw, spec, load_hardware(hardware), {k: v for k, v in knobs.items() if v is not None}, cards,
                  wl.kind, wl.sequences, wl.mtp, _afd_flag)
    hw = as_launched(load_hardware(hardware), fw, cards)  # the nodes as the engine's launch uses them
    # AFD: each half's config
    pc, tied = tied_config(fw, spec, hw, cards // 2 if afd else cards, knobs, wl.sequences, wl.mtp)
    # a KV format the engine's command cannot ask for is refused here as solve refuses it (one rule): an estimate
    # under an engine's profile prices what that engine runs
    refuse_unlaunchable_kv(fw, kv_dtype, model=spec, hw=hw)
    prec = resolve_precision(spec, hw, weight_dtype, moe_weight_dtype, kv_dtype)
    check_mtp(spec, wl.mtp)
    notes = [*input_notes(spec, hw, prec, max_len=wl.context_len, fw=fw),
             *tied, *knob_rules(fw, spec, hw, pc, wl.sequences, wl.mtp, given_knobs(knobs)),
             *filter(None, [placement_note(hw, fw, pc.world_size)]),
             # the seed's class B placement (TP past the node, experts past the dispatch path's cap): figures the
             # estimate computes all the same, said as `check` reports them and `launch` notes them
             *(f"placement: {p}" for p in hardware_placement(spec, hw, pc, fw.kvp_splits_attention_weights)[1])]
    f = factors_for(hw, fw.efficiency_for(hw))
    if afd:
        from solver.estimate.afd import afd_estimator, afd_notes

        est = afd_estimator(cards)(spec, hw, pc, prec, f, wl)
        notes += afd_notes(est)
    else:
        est = estimate(spec, hw, pc, prec, f, wl)
    if not est.memory.feasible:
        notes.append(est.memory.misfit())
    notes += filter(None, [prefix_hit_note(wl.prefix_hit, wl.kind), one_token_note(wl.osl, wl.kind)])
    return EstimateResult(spec, hw, fw, pc, prec, wl, est, notes, asked=str(model), afd_cards=cards if afd else None)


@dataclass
class MemoryResult:
    """Per-rank memory of one parallel_config: `report` (feasible or not, the breakdown), `max_batch` (the largest
    batch that fits at `seq_len`); `notes`: what the inputs noted (the report's own notes are in it)."""

    model: ModelSpec
    hardware: Hardware
    parallel_config: ParallelConfig
    precision: Precision
    options: MemoryOptions
    report: MemoryReport
    max_batch: int
    batch: int
    seq_len: int
    notes: list[str] = field(default_factory=list)
    asked: str | None = None  # as EstimateResult.asked

    def as_dict(self) -> dict[str, Any]:
        """What `shardplan memory --format json` prints."""
        from solver.report.model_view import memory_data

        from solver.specs.model_catalog import with_model_names

        data = memory_data(self.model, self.hardware, self.parallel_config, self.precision, self.report,
                           self.max_batch, self.batch, self.seq_len, self.options)
        # what the inputs noted (the config's class defaults, the context, the engine's rules) before the report's
        data["notes"] = [*self.notes, *(n for n in data["notes"] if n not in self.notes)]
        return data if self.asked is None else with_model_names(data, self.asked)


def memory_config(model: str, hardware: str, cards: int, knobs: dict[str, Any], batch: int, seq_len: int,
                  mtp: int = 0, prefill_chunk: int | None = None, mem_fraction: float | None = None,
                  framework: str = DEFAULT_FRAMEWORK, weight_dtype: str | None = None,
                  moe_weight_dtype: str | None = None, kv_dtype: str | None = None) -> MemoryResult:
    """`shardplan memory` of one config (`mem_fraction` None: MemoryOptions' default usable fraction)."""
    from solver.estimate.memory import drafting_options, max_batch, memory_per_rank
    from solver.estimate.memory_options import MemoryOptions, framework_options
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.notes import input_notes
    from solver.specs.precision import resolve_precision

    spec = load_model(model)
    hw = load_hardware(hardware)
    check_mtp(spec, mtp)
    fw = load_framework(framework)
    fw.check_model(spec, vendor=hw.vendor)
    pc, tied = tied_config(fw, spec, hw, cards, knobs, batch, mtp)
    notes = [*tied, *knob_rules(fw, spec, hw, pc, batch, mtp, given_knobs(knobs))]
    prec = resolve_precision(spec, hw, weight_dtype, moe_weight_dtype, kv_dtype)
    # the engine's KVP layout decides the attention weights' split, its step budget on the device the chunk
    opts = framework_options(fw, MemoryOptions(**{k: v for k, v in (("prefill_chunk", prefill_chunk),
                                                                    ("total_fraction", mem_fraction))
                                                  if v is not None}), hw)
    rep = memory_per_rank(spec, hw, pc, prec, batch, seq_len, opts, mtp_layers=mtp)
    best = max_batch(spec, hw, pc, prec, seq_len, opts, mtp_layers=mtp)
    # the options the report was sized under (the drafts' state pages), which its cache line describes
    opts = drafting_options(opts, spec, mtp)
    return MemoryResult(spec, hw, pc, prec, opts, rep, best, batch, seq_len,
                        [*input_notes(spec, hw, prec, timed=False, max_len=seq_len, served_by=fw), *notes], asked=str(model))


def _est(e, concurrency: int, cross_node: bool | None, prompt_len: int | None = None) -> dict:
    """The figures of one estimate in solve's `estimation` keys (report.candidates.estimate_figures), so a
    candidate checked back compares key by key; `prompt_len`: a prefill-only workload's prompt length, whose
    throughput is the prompt tokens. {} where there is no estimate (a config the review refused)."""
    from solver.report.candidates import estimate_figures

    return {} if e is None else estimate_figures(e, concurrency, cross_node, prompt_len)


def review_dict(r: Review, pc: ParallelConfig, concurrency: int, cross_node: bool | None,
                knobs: tuple[str, ...] = KNOBS, prompt_len: int | None = None) -> dict:
    """`cross_node`: whether the config's TP groups leave the node (the estimate's `cross_node_comm`); the
    comparisons' configs are others, so theirs is not given."""
    return {"valid": r.valid, "parallel_config": pc.model_view(knobs),
            "violations": r.violations, "warnings": r.warnings, "common_errors": r.common_errors,
            "notes": r.notes, "estimation": _est(r.estimate, concurrency, cross_node, prompt_len),
            "comparisons": {k: _est(v, concurrency, None, prompt_len) for k, v in r.comparisons.items()}}


@dataclass
class CheckResult:
    """A parallel_config reviewed (seed Step 4): `review` (class A/B/C violations and warnings, common errors,
    notes, the estimate and its comparisons); `valid` is False where a hard constraint is violated."""

    model: ModelSpec
    hardware: Hardware
    framework: FrameworkProfile
    parallel_config: ParallelConfig
    workload: Workload
    review: Review

    @property
    def valid(self) -> bool:
        return self.review.valid

    def as_dict(self) -> dict[str, Any]:
        """What `shardplan check --format json` prints."""
        from solver.rank.select import cross_node
        from solver.space.placement import as_launched
        from solver.specs.parallel import model_knobs

        pc = self.parallel_config
        placed = as_launched(self.hardware, self.framework, pc.world_size)  # as the review estimated it
        return review_dict(self.review, pc, self.workload.sequences,
                           cross_node(pc, placed, self.framework.kvp_splits_attention_weights),
                           model_knobs(self.model), self.workload.seq_len if self.workload.kind == "prefill" else None)


def deployment_workload(dep: Deployment) -> Workload:
    """The workload a deployment states (its `workload` block and MTP), as `check` estimates it and `launch`
    sizes a prefill-only instance's prompts."""
    from solver.estimate.serving import Workload

    w = dep.workload
    mtp = {"mtp": dep.mtp, **({"mtp_accept": dep.mtp_accept} if dep.mtp_accept is not None else {}),
           **({"verify_tokens": dep.verify_tokens} if dep.verify_tokens is not None else {})}
    if w.phase == "serving":
        return Workload("serving", isl=w.isl, osl=w.osl, concurrency=w.concurrency, prefix_hit=w.prefix_hit, **mtp)
    if w.phase == "decode" and w.isl is not None:
        return Workload.decode_of(w.batch, w.isl, w.osl, **mtp)  # type: ignore[arg-type]
    # a decode's prefix_hit is refused by WorkloadSpec
    return Workload(w.phase, batch=w.batch, seq_len=w.seq_len, prefix_hit=w.prefix_hit, **mtp)


def check_deployment(dep: Deployment, model: str, hardware: str, world: int, framework: str | None,
                     origin: str | None, given_as: dict[str, str | None], role: str | None = None) -> CheckResult:
    """`shardplan check` of a deployment (a file's, or one built from keywords), with `model` / `hardware` / `world`
    / `framework` as given or the deployment's own. `origin`: the file, whose keys a refusal names as "FILE: mtp";
    None: the deployment was built from keywords, named as themselves ("mtp"). `given_as`: the flag (or keyword)
    that overrode model / hardware / framework, None where the deployment's key named it. `role`: the
    disaggregated pool the deployment is a worker of (a command's role, check --command), which the engine's rules
    read (prefill_role); None: one aggregated server."""
    from solver.rank.review import review
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.estimate.workload import one_token_note, prefix_hit_note
    from solver.specs.notes import context_notes, engine_notes
    from solver.specs.parallel import ParallelConfig, make_parallel_config
    from solver.specs.precision import resolve_precision

    def at(key: str) -> str:  # built from keywords, a knob is named by its keyword (api.check's lmhead_tp_size)
        return f"{origin}: {key}" if origin else key.removeprefix("parallel_config.")

    if dep.workload is None:
        raise InputError("workload", f"missing{f' in {origin}' if origin else ''}: phase/batch/seq_len or "
                                     "isl/osl/concurrency")
    spec = load_from(load_model, model, "model", given_as.get("model"), origin or "")
    hw = load_from(load_hardware, hardware, "hardware", given_as.get("hardware"), origin or "")
    fw = load_from(load_framework, framework or dep.framework, "framework", given_as.get("framework"),
                   origin or "").for_role(role)
    # a pairing the engine does not run on, named where the framework came from (the flag or the file's key)
    fw.check_vendor(hw.name, hw.vendor, given_as.get("framework") or at("framework"))
    fw.check_model(spec, given_as.get("framework") or at("framework"), hw.vendor)
    dep.check_derived(world, origin or "parallel_config", fw.replica_knobs)  # attn_dp_size may be the engine's DP
    odd = [t for t in dep.unloaded_towers if t not in {e.name for e in spec.encoders}]
    if odd:
        raise InputError(at("unloaded_towers"), f"{', '.join(odd)}: not a tower of {spec.name} (its towers: "
                                                f"{', '.join(e.name for e in spec.encoders) or 'none'})")
    # the towers as the command runs them (whole, or none loaded, or some not loaded)
    spec = spec.towers_as(dep.towers, tuple(dep.unloaded_towers))
    if dep.stage_layers is not None:  # the pipeline stages as the command splits them
        from solver.specs.model_rules import stage_split

        spec = spec.with_stage_layers(stage_split(dep.stage_layers, spec, dep.parallel_config.get("pp_size", 1),
                                                  at("stage_layers"), split=fw.pp_default_split))
    if dep.draft == "lookup":  # the drafts are looked up, not drafted: the target alone verifies 1 + mtp tokens
        spec = spec.without_next_n()
    else:
        check_mtp(spec, dep.mtp, at("mtp"))
    w = dep.workload
    no_hit = fw.prefix_hit_refusal(spec, w.prefix_hit)
    if no_hit:
        raise InputError(at("workload.prefix_hit"), no_hit)
    if w.phase == "prefill" and dep.mtp_accept is not None:  # as estimate --phase prefill refuses --mtp-accept
        raise InputError(at("mtp_accept"), PREFILL_ACCEPT_UNREAD)
    wl = deployment_workload(dep)
    estimator, side = None, world  # AFD: each half is a config of world/2 ranks, estimated by estimate.afd
    if dep.afd:
        from solver.estimate.afd import afd_estimator
        from solver.specs.afd import check_afd

        check_afd(fw, spec, hw, dep.parallel_config, world, wl.kind, wl.sequences, dep.mtp, at)
        estimator, side = afd_estimator(world), world // 2
    try:
        pc = make_parallel_config(side, fields=dep.fields, **dep.parallel_config)
    except InputError as exc:
        # a knob that does not divide the world is a class A violation to report, not bad input
        pc = ParallelConfig(world_size=side, **dep.parallel_config)
        note = str(exc)
    else:
        note = None
    prev = ParallelConfig(world_size=world, **dep.previous_parallel_config) if dep.previous_parallel_config else None
    if dep.running_cap is not None and wl.kind == "serving":  # one replica's share of the cap (serving_shape)
        wl = replace(wl, max_running=math.ceil(dep.running_cap / pc.attn_replicas))
    prec = resolve_precision(spec, hw, dep.quant.weights, dep.quant.moe_weights, dep.quant.kv_cache,
                             fields=dep.fields)
    # a prefill pool's worker sizes its own command's buffers and step budget (memory_options.role_options)
    from solver.estimate.memory_options import MemoryOptions, role_options

    worker = role_options(MemoryOptions(), fw) if fw.prefill_role else None
    r = review(spec, hw, fw, pc, prec, wl, dep.mtp, dep.enable_online_split_weight, prev, mem_opts=worker,
               estimator=estimator)
    if dep.afd and r.estimate is not None:
        from solver.estimate.afd import afd_notes

        r.notes += afd_notes(r.estimate)
    # what runs in which precision (weight-only W4A16 / W8A16, a format served as bf16), as estimate and memory say
    # the config's own warnings (a field read at its class default) first, as every other command says them
    r.notes[:0] = [n for n in spec.warnings if n not in r.notes]
    r.notes += [n for n in prec.notes if n not in r.notes] + list(context_notes(spec, wl.context_len, fw)) \
        + [n for n in engine_notes(fw) if n not in r.notes] \
        + list(filter(None, [prefix_hit_note(wl.prefix_hit, wl.kind), one_token_note(wl.osl, wl.kind)]))
    kv_refusal = fw.kv_dtype_refusal(dep.quant.kv_cache, spec, hw)  # the engine cannot run it: launch refuses, solve too
    if kv_refusal:
        r.violations["C"].append(f"quant.kv_cache: {kv_refusal}; launch refuses it and solve does not plan it")
    ckpt_kv = fw.checkpoint_kv_refusal(spec)  # the engine stops loading the checkpoint: nothing runs
    if ckpt_kv:
        r.violations["C"].append(f"{ckpt_kv[0]}: {ckpt_kv[1]}")
    from solver.entry import chosen_by_flags

    chosen = chosen_by_flags(dep.quant.weights, dep.quant.moe_weights, ("quant.weights", "quant.moe_weights"))
    for key, w_refusal in fw.priced_weight_refusals(prec, spec, hw, chosen):  # the format priced, a checkpoint's too
        r.violations["C"].append(f"{key}: {w_refusal}; solve does not plan it")
    if note and not r.violations["A"]:  # else the model check already names it, in the file's own keys
        r.violations["A"].insert(0, note)
    return CheckResult(spec, hw, fw, pc, wl, r)


def check_command_deployment(r: Any, dep: Any, hardware: str) -> Any:
    """`check` of the deployment a command was read as (one_config.CheckResult), with the violations the command's
    own settings raise against the workload checked (CommandReading.violations) in class C."""
    from solver.launch.check_command import GIVEN_AS

    res = check_deployment(dep, r.model, hardware, r.world, r.framework, None, GIVEN_AS,
                           r.role.role if r.role is not None else None)
    res.review.violations["C"] += r.violations
    return res


def _afd_flag(key: str) -> str:
    """The command-line flag of a key an AFD refusal names (specs.afd.check_afd)."""
    knob = key.removeprefix("parallel_config.")
    return {"afd": "--afd", "mtp": "--mtp", "world_size": "--cards"}.get(key) or CONFIG_FLAGS.get(knob, key)
