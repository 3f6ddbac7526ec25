"""`shardplan calibrate`: read profiler traces of a running configuration, judge them (seed Step 5) against the
estimate of the same configuration, and optionally fit the hardware's efficiency factors to them."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import click

from solver.cli.options import MODEL, GB, NAME, format_option
from solver.errors import InputError
from solver.report.render import console, dump

if TYPE_CHECKING:  # solver.calibrate (pandas, numpy) loads when the command runs
    from solver.calibrate.compare import Setup
    from solver.calibrate.fit import Observation
    from solver.calibrate.metrics import TraceSummary
    from solver.calibrate.trace import RankTrace


def _trace_world(traces: Sequence[RankTrace]) -> int | None:
    worlds = {t.world_size for t in traces if t.world_size is not None}
    if len(worlds) > 1:
        raise InputError("traces", f"the rank traces record different world sizes ({', '.join(map(str, sorted(worlds)))})"
                                   "; pass one run's files only")
    return next(iter(worlds), None)


def _label(paths: Sequence[str], traces: Sequence[RankTrace]) -> str:
    """Trace files for the YAML's sources: the paths given, with the rank-file count of a folder."""
    if len(paths) == 1 and len(traces) > 1:
        return f"{paths[0]} ({len(traces)} rank files)"
    return ", ".join(paths)


def _load_run(paths: Sequence[str], step_marker: str | None) -> tuple[list[RankTrace], TraceSummary]:
    from solver.calibrate.metrics import summarize
    from solver.calibrate.trace import load_traces

    try:
        traces = load_traces(list(paths), step_marker)
    except InputError as exc:  # the library names its keyword; the command line, the flag that gave it
        if exc.field != "step_marker":
            raise
        raise InputError("--step-marker", exc.problem) from None
    return traces, summarize(traces)


def _observation(paths: Sequence[str], config: str, model: str, hw, step_marker: str | None,
                 traces: list[RankTrace] | None = None, summary: TraceSummary | None = None,
                 flag: str = "--config") -> tuple[Observation, TraceSummary]:
    from solver.calibrate.compare import make_setup, measured_classes
    from solver.calibrate.config import load_profiled_config
    from solver.calibrate.fit import Observation
    from solver.calibrate.report import backward_kernels

    if traces is None or summary is None:
        traces, summary = _load_run(paths, step_marker)
    count, example = backward_kernels(traces)
    if count:
        raise InputError("--recalibrate", f"{_label(paths, traces)} is a training step ({count} backward kernels, "
                                          f"e.g. {example[:60]}); the inference estimate cannot be fitted to it")
    cfg = load_profiled_config(config, _trace_world(traces), len(traces), flag)
    if not cfg.has_workload:
        raise InputError(config, "--recalibrate needs the workload: phase, batch and seq_len (or isl/osl)")
    setup = make_setup(model, hw, cfg)
    return Observation(setup, measured_classes(summary), _label(paths, traces)), summary


@click.command("calibrate")
@click.argument("traces", nargs=-1, type=NAME, metavar="TRACE...")
@click.option("--config", "config", type=NAME, default=None, metavar="CONFIG.yaml",
              help="the parallel_config (and workload) the traces were profiled under; see docs/calibration-example.md")
@click.option("--model", "model", type=MODEL, default=None, help="model of the profiled run (with --config)")
@click.option("--hardware", "hardware", type=NAME, default=None, help="hardware name or YAML path (with --config; alone: "
                                                           "memory capacity check)")
@click.option("--peak-memory-gb", "peak_gb", type=GB, default=None,
              help="peak memory per rank in GB (torch.*.max_memory_allocated() / 1e9) when the trace has no "
                   "memory events")
@click.option("--step-marker", type=NAME, default=None,
              help="annotation name prefix that marks a step (default ProfilerStep#N)")
@click.option("--run", "runs", type=(NAME, NAME), multiple=True, metavar="TRACE CONFIG",
              help="another profiled run (trace file or folder, its CONFIG.yaml) to fit with --recalibrate; repeatable")
@click.option("--recalibrate", "recal_out", type=NAME, default=None, metavar="OUT.yaml",
              help="fit the hardware's efficiency factors to the traces and write a calibrated hardware YAML")
@click.option("--from-csv", "from_csv", type=NAME, default=None, metavar="ROWS.csv",
              help="measured serving rows (the columns estimate --from-csv reads, with ttft_ms and tpot_ms) to fit "
                   "the factors of the (framework, hardware) pairs they measured; with --fit, instead of TRACE")
@click.option("--fit", "fit_out", type=NAME, default=None, metavar="OUT.yaml",
              help="where --from-csv writes the fitted factors; give it to solve/estimate/... as --factors OUT.yaml")
@format_option()
def calibrate_cmd(traces, config, model, hardware, peak_gb, step_marker, runs, recal_out, from_csv, fit_out,
                  fmt) -> None:
    """Judge profiler traces of a running parallel_config (seed Step 5): communication ratio (raw and exposed),
    peak memory, rank variance, and the deviation from the estimate of the same config, module by module.

    TRACE is one run: a Chrome-trace JSON (.json or .json.gz, PyTorch profiler or torch_npu), one file per rank,
    or a folder of them.

    \b
    shardplan calibrate prof/                                   # metrics and verdicts only
    shardplan calibrate prof/ --config run.yaml --model qwen3-30b-a3b --hardware h200_sxm
    shardplan calibrate pre/ --config pre.yaml --run dec/ dec.yaml --model M --hardware H --recalibrate H-cal.yaml
    shardplan calibrate --from-csv mine.csv --fit mine-factors.yaml     # then: solve ... --factors mine-factors.yaml
    """
    if from_csv is not None or fit_out is not None:
        given = [f for f, v in (("TRACE", traces), ("--config", config), ("--model", model), ("--hardware", hardware),
                                ("--peak-memory-gb", peak_gb), ("--step-marker", step_marker), ("--run", runs),
                                ("--recalibrate", recal_out)) if v]
        if given:
            raise InputError("--from-csv" if from_csv is not None else "--fit",
                             f"fits measured rows, not traces: drop {', '.join(given)}")
        _fit_csv(from_csv, fit_out, fmt)
        return
    from solver.calibrate.advice import communication_findings, deviation_findings, memory_findings, variance_finding
    from solver.calibrate.compare import compare, make_setup
    from solver.calibrate.config import load_profiled_config, named_target
    from solver.calibrate.fit import recalibrate, write_hardware_yaml
    from solver.calibrate.report import Report, RunErrors, backward_kernels, render
    from solver.calibrate.trace import left_out_notes
    from solver.specs.hardware_catalog import load_hardware

    if not traces:
        raise InputError("TRACE", "give at least one trace file or folder (or --from-csv ROWS.csv --fit OUT.yaml "
                                 "to fit measured serving rows)")
    if config is not None and (model is None or hardware is None):
        named_model, named_hardware = named_target(config)
        model, hardware = model or named_model, hardware or named_hardware
    if config is not None and (model is None or hardware is None):
        missing = " and ".join(f for f, v in (("--model", model), ("--hardware", hardware)) if v is None)
        raise InputError("--config", f"also needs {missing} (the estimate of the profiled config needs both)")
    if model is not None and config is None:
        raise InputError("--model", "only used with --config CONFIG.yaml (the parallel_config that was profiled)")
    if (recal_out is not None or runs) and config is None:
        raise InputError("--recalibrate" if recal_out is not None else "--run",
                         "needs --config CONFIG.yaml, --model and --hardware")
    if runs and recal_out is None:
        raise InputError("--run", "adds runs to a fit: use it with --recalibrate OUT.yaml")
    if recal_out is not None:  # before the traces are read and fitted: a bad target fails at once
        from solver.outfile import check_extension, check_writable

        check_extension(recal_out, "--recalibrate", (".yaml", ".yml"))
        check_writable(recal_out, "--recalibrate")

    rank_traces, summary = _load_run(traces, step_marker)
    hw = load_hardware(hardware) if hardware is not None else None
    notes: list[str] = left_out_notes(rank_traces)
    if peak_gb is not None:
        peak, peak_source = peak_gb * 1e9, "--peak-memory-gb"
        if summary.peak_memory_bytes is not None:
            notes.append(f"--peak-memory-gb {peak_gb} overrides the trace's {summary.peak_memory_bytes / 1e9:.2f} GB")
    elif summary.peak_memory_bytes is not None:
        peak, peak_source = float(summary.peak_memory_bytes), "trace memory events"
    else:
        peak, peak_source = None, None
        notes.append("no peak memory: the trace has no [memory] events (profile_memory=False); pass "
                     "--peak-memory-gb from torch.cuda/npu.max_memory_allocated()")
    if peak is not None and hw is None:
        notes.append(f"peak memory {peak / 1e9:.2f} GB ({peak_source}) is not judged against a capacity: pass "
                     "--hardware")
    if len(summary.ranks) < 2:
        world = _trace_world(rank_traces)
        notes.append("rank variance needs the traces of several ranks (one file per rank)"
                     + (f"; this run has world_size {world}" if world else ""))
    n_bwd, bwd_example = backward_kernels(rank_traces)
    training = n_bwd > 0
    if training:
        notes.append(f"training step: {n_bwd} backward kernels (e.g. {bwd_example[:60]}...); the inference "
                     "estimate (forward only, serving workload) does not describe it, so only the trace's metrics "
                     "and verdicts are reported")

    rep = Report(list(traces), rank_traces, summary, peak, peak_source, notes=notes,
                 hardware=hw.name if hw is not None else None, training=training)
    setup: Setup | None = None
    if config is not None:
        cfg = load_profiled_config(config, _trace_world(rank_traces), len(rank_traces))
        setup = make_setup(model, hw, cfg)
        rep.config, rep.model = cfg, setup.model.name
        notes.extend(setup.notes)
        if cfg.world_from == "traces":
            notes.append(f"world_size {cfg.parallel.world_size} taken from the traces")
        if not cfg.has_workload:
            notes.append(f"{config}: no workload (phase, batch, seq_len): the estimate comparison is skipped")
        elif not training:
            rep.comparison = compare(summary, setup, peak)
        if len(rank_traces) < cfg.parallel.world_size:
            notes.append(f"{len(rank_traces)} of {cfg.parallel.world_size} ranks traced")

    pc = setup.pc if setup is not None else None
    findings = communication_findings(summary, pc, hw, rep.comparison)
    var = variance_finding(summary, pc, setup.model if setup is not None else None)
    if var is not None:
        findings.append(var)
    findings += memory_findings(peak, hw, rep.comparison, setup.cfg.batch if setup else None,
                                setup.cfg.phase if setup else None)
    if rep.comparison is not None and setup is not None:
        findings += deviation_findings(rep.comparison, setup.pc, setup.hw, setup.model)
        other = rep.comparison.by_kind()["other"]
        if rep.comparison.measured_step_s > 0 and other.measured_s > 0.2 * rep.comparison.measured_step_s:
            notes.append(f"{other.measured_s / rep.comparison.measured_step_s:.0%} of the step is in kernels the "
                         "estimate does not model (norms, activations, casts, copies): class 'other'")
    rep.findings = findings

    if recal_out is not None:
        assert hw is not None and model is not None and config is not None
        if training:
            raise InputError("--recalibrate", f"{_label(traces, rank_traces)} is a training step; the inference "
                                              "estimate cannot be fitted to it")
        first, _ = _observation(traces, config, model, hw, step_marker, rank_traces, summary)
        obs = [first]
        summaries = [summary]
        configs = [config]
        for path, cfg_path in runs:
            run_traces, s = _load_run([path], step_marker)
            notes += left_out_notes(run_traces)
            o, s = _observation([path], cfg_path, model, hw, step_marker, run_traces, s, "--run")
            obs.append(o)
            summaries.append(s)
            configs.append(cfg_path)
        frameworks = {o.setup.cfg.framework for o in obs}
        if len(frameworks) > 1:
            raise InputError("--run", f"the runs use different frameworks ({', '.join(sorted(frameworks))}); "
                                      "fit one framework's runs at a time")
        label = "; ".join(o.label for o in obs)
        fit, data = recalibrate(obs, hw, label)
        header = (f"Calibrated by `shardplan calibrate --recalibrate` from {label}.\n"
                  "Fitted: " + ", ".join(f"{f.key} {f.before:.4g} -> {f.after:.4g}" for f in fit.factors
                                         if f.changed) + ".")
        write_hardware_yaml(data, recal_out, header)
        cal = load_hardware(_as_path(recal_out))  # what solve/estimate will read
        rep.fit, rep.fit_output = fit, recal_out
        for o, s, cfg_path in zip(obs, summaries, configs):
            before = compare(s, o.setup, None)
            after = compare(s, o.setup, None, hw=cal)
            rep.fit_runs.append(RunErrors(o.label, cfg_path, o.setup.cfg.phase or "", before, after))

    for line in notes:
        click.echo(f"note: {line}", err=True)
    if fmt != "table":
        click.echo(dump(rep.data(), fmt))
        return
    render(rep, console())
    if recal_out is not None:
        click.echo(f"wrote {recal_out}: use it as --hardware {recal_out} with solve/estimate")


def _fit_csv(from_csv: str | None, fit_out: str | None, fmt: str) -> None:
    """`calibrate --from-csv ROWS.csv --fit OUT.yaml`: the factors of the pairs the rows measured (user_fit)."""
    from solver.calibrate.user_fit import fit_csv, render, summary_lines
    from solver.outfile import atomic_write, check_extension, check_writable

    if from_csv is None:
        raise InputError("--fit", "needs --from-csv ROWS.csv (the measured rows to fit)")
    if fit_out is None:
        raise InputError("--from-csv", "needs --fit OUT.yaml (where the fitted factors go)")
    check_extension(fit_out, "--fit", (".yaml", ".yml"))  # before the rows are fitted: a bad target fails at once
    check_writable(fit_out, "--fit")
    fit = fit_csv(from_csv)
    text = render(fit, Path(from_csv))

    def write(tmp: str) -> None:
        Path(tmp).write_text(text, encoding="utf-8")

    atomic_write(fit_out, write, "--fit")
    if fit.skipped:
        line, why = fit.skipped[0]
        click.echo(f"note: {len(fit.skipped)} of {fit.rows} rows not fitted (first: line {line}: {why[:200]})", err=True)
    if fmt != "table":
        click.echo(dump({"output": fit_out, "rows": fit.rows, "skipped": len(fit.skipped), "pairs": [
            {"framework": f.framework, "hardware": f.hardware, "rows": f.rows, "fitted": list(f.fitted),
             "kept": list(f.kept), "before": f.before, "after": f.after,
             "ttft_median_abs_err": {"before": f.ttft_before, "after": f.ttft_after},
             "tpot_median_abs_err": {"before": f.tpot_before, "after": f.tpot_after}} for f in fit.pairs]}, fmt))
        return
    for line in summary_lines(fit):
        click.echo(line)
    click.echo(f"wrote {fit_out}: give it as --factors {fit_out} to solve / estimate / sweep / recommend / check / "
               "launch")


def _as_path(path: str) -> str:
    """load_hardware treats a value as a file when it looks like one; make sure a bare name does."""
    p = Path(path)
    return str(p) if ("/" in path or path.lower().endswith((".yaml", ".yml"))) else f"./{path}"


COMMANDS: list[Any] = [calibrate_cmd]
