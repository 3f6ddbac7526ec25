"""Every remedy the CLI names, applied: seeded random requests no plan meets (solve, solve --serving disagg,
recommend, memory; catalog models small to huge, devices A100 to GB200 and Ascend, engines that run there, tight
SLAs, long contexts, fixed loads); for each remedy an answer names, the request is rerun with the remedy applied (the
flag it names at the value it names, or the card count) and recorded: whether the rerun succeeds, and whether the
figure the remedy quotes is the figure the product prints for what it names.

Remedy kinds (the text each is read from):
  cards           "N cards fit (the planner found a configuration there[, SLAs aside])": --cards N (SLAs dropped
                  where the remedy sets them aside) -> exit 0
  sla_cards       "or N cards (the planner meets the SLA there)": --cards N, SLAs kept -> exit 0
  sla_concurrency "or --concurrency N (the planner meets the SLA there)": --concurrency N -> exit 0
  concurrency     "--concurrency N [or fewer] (the most requests ...[, SLAs aside])": --concurrency N (SLAs dropped
                  where set aside) -> exit 0
  isl             "--isl N or shorter": --isl N -> exit 0
  weight_dtype    "smaller weights (--weight-dtype a/b/c)" (memory the only binding family): each format named ->
                  the flag takes it (exit != 2), and the narrowest one named plans (exit 0)
  sla_relax       "relax --F: the configuration with the least TPOT (both SLAs: the fastest configuration) at
                  concurrency C on W cards (knobs) shows TPOT X ms": the
                  SLA flags set to the figures as quoted -> exit 0; and `estimate` of those knobs at concurrency C
                  prints the figures quoted (rounded up to three significant figures: a cap that passes)
  relax_bare      "relax --F" with no figure (not in a "relaxed together" line): --F dropped -> exit 0
  disagg_lowest   "with them set aside, ... the lowest TPOT is X ms [and the lowest TTFT is Y ms]": each flag alone
                  at its quoted figure, the other SLA dropped -> exit 0
  disagg_cross_node_cards "N cards with --allow-cross-node (a prefill worker of P ranks and a decode worker of D:
                  the planner found a configuration for each[, ... aside])": --cards N --allow-cross-node, what it
                  sets aside dropped -> exit 0
  disagg_cards    "what would fit: N cards or more": --cards N -> exit 0
  disagg_concurrency "what would fit: --concurrency N": -> exit 0
  disagg_fewest_cards "M cards (x prefill worker(s) of P ranks and y decode worker(s) of D)", the other alternative
                  of "--concurrency N, or M cards (...)": --cards M -> exit 0 (M past RERUN_CARDS: counted, not
                  rerun, unless --large: then rerun in a child process within --large-timeout s, a time-out a
                  failure)
  disagg_fewer_workers "--cards N, or --decode-workers D (the most workers up to xPyD the planner finds a
                  deployment at on C cards)", the other alternative (fixed counts, --workers): the counts -> exit 0
  disagg_fixed_cards "what would fit: --cards N[ (room for them, SLAs aside)][, or ...]" (fixed worker counts):
                  --cards N (the SLAs dropped where set aside) -> exit 0
  disagg_rate_match "--prefill-workers / --decode-workers left to the rate match": both dropped -> exit 0
  serving_agg     "--serving agg (the planner found an aggregated configuration on ...)": --serving agg -> exit 0
  launchable_cards "A (n nodes x r) or B (...) ranks spread evenly over their nodes": each, --cards A -> exit 0
  (recommend: a remedy said "what would fit (a configuration on W cards, the load target aside)" works where the
  rerun has a configuration: exit 0, or a shortfall of the load rather than "no configuration fits or meets the
  SLA")
  cross_node_cards "N cards with --allow-cross-node (the planner found a configuration there[, SLAs aside])":
                  --cards N --allow-cross-node -> exit 0
  smaller_concurrency "a smaller --concurrency" (no value; not in a "relaxed together" line): --concurrency 1 -> exit 0
  (sweep: the remedies of its infeasible rows' notes, the sweep rerun with each; it works where a row is feasible)
  target          recommend "what would fit: a target up to X": --target-output-tokens-per-s X -> exit 0
  more_cards      recommend "--cards N (C copies of N cards carry X output tokens/s: the planner found it there)":
                  --cards N -> exit 0
  more_copies     recommend "--max-copies N (N copies of W cards carry X output tokens/s)": --max-copies N -> exit 0
  looser_sla      recommend "--tpot-ms V (the TPOT SLA binds on W cards: ...)" (and --ttft-ms, or both): the SLA
                  flags set to the values -> exit 0
  max_batch       memory "max batch at S tokens: N" (N >= 1): --batch N -> the answer says it fits

    python benchmarks/remedies.py --cases 40 --seed 0
    python benchmarks/remedies.py --cases 40 --seed 2 --disagg     # solve --serving disagg only
    python benchmarks/remedies.py --cases 40 --seed 2 --disagg --workers   # with fixed worker counts
    python benchmarks/remedies.py --cases 20 --seed 18 --disagg --large    # remedies past 1,024 cards rerun too
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import re
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from click.testing import CliRunner  # noqa: E402

from solver.cli.main import main as cli  # noqa: E402
from solver.errors import three_figures  # noqa: E402
from solver.specs.framework import list_frameworks, load_framework  # noqa: E402
from solver.specs.hardware_catalog import list_hardware, load_hardware  # noqa: E402
from solver.specs.model_catalog import list_models  # noqa: E402

RUNNER = CliRunner(env={"COLUMNS": "400"})
KNOB_FLAGS = {"attn_tp_size": "--attn-tp", "dense_tp_size": "--dense-tp", "moe_tp_size": "--moe-tp",
              "embed_tp_size": "--embed-tp", "lmhead_tp_size": "--lmhead-tp", "o_proj_tp_size": "--oproj-tp",
              "cp_size": "--cp", "kvp_size": "--kvp", "attn_sp_size": "--attn-sp", "pp_size": "--pp",
              "redundant_experts": "--redundant-experts", "moe_ep_size": None, "attn_dp_size": None}
SLA_FLAG = {"TTFT": "--ttft-ms", "TPOT": "--tpot-ms"}
TIME_LIMIT = "3"
# the most cards a remedy is rerun at in this process: a disaggregated plan on tens of thousands of cards plans its
# pools at every worker size those cards allow (minutes and GBs a rerun); such remedies are counted, or with --large
# rerun in a child process (LARGE, set by main)
RERUN_CARDS = 1024
SKIPPED: collections.Counter = collections.Counter()
LARGE: dict[str, float] = {}  # {"timeout": s} where --large was given


def run_apart(argv: list[str], timeout: float) -> tuple[int, str]:
    """run(argv) in a child process (a large plan's memory is returned when it ends), within `timeout` s: a
    time-out is exit 124, as timeout(1) gives."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    try:
        res = subprocess.run([sys.executable, "-m", "solver", *argv], capture_output=True, text=True,
                             timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return 124, f"no answer within {timeout:g} s"
    return res.returncode, res.stdout + res.stderr


def run(argv: list[str]) -> tuple[int, str]:
    """(exit code, stdout and stderr together; a --format json answer's stdout alone); an internal error is
    exit 3."""
    res = RUNNER.invoke(cli, argv, catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return 3, f"{res.output}\n{res.exception!r}"
    return res.exit_code, res.stdout if res.exit_code == 0 and "json" in argv else res.output


def shell(argv: list[str]) -> str:
    return "shardplan " + " ".join(shlex.quote(a) for a in argv)


def with_flag(argv: list[str], flag: str, value: str | None) -> list[str]:
    """argv with `flag` set to `value` (None: removed); a flag not there is appended."""
    out, i, done = [], 0, False
    while i < len(argv):
        if argv[i] == flag:
            if value is not None and not done:
                out += [flag, value]
                done = True
            i += 2
            continue
        out.append(argv[i])
        i += 1
    if value is not None and not done:
        out += [flag, value]
    return out


def number(text: str) -> str:
    return text.replace(",", "")


# ---------------------------------------------------------------- cases

SEQS = ((4096, 256), (8192, 1024), (32768, 512), (131072, 256), (500000, 256))
CARDS = (1, 2, 4, 8, 16)
TTFTS = (None, None, 30.0, 150.0, 800.0)
TPOTS = (None, None, 4.0, 12.0, 40.0)


def draw(rng: random.Random, disagg: bool = False) -> tuple[str, list[str]]:
    """One request likely to be infeasible: (command kind, argv); `disagg`: every one `solve --serving disagg`."""
    models = [aliases[0] for _, aliases in list_models()]
    hw = rng.choice(list_hardware())
    fws = [f for f in list_frameworks() if load_framework(f).runs_on(load_hardware(hw).vendor)]
    model, fw = rng.choice(models), rng.choice(fws)
    isl, osl = rng.choice(SEQS)
    ttft, tpot = rng.choice(TTFTS), rng.choice(TPOTS)
    sla = [*(["--ttft-ms", f"{ttft:g}"] if ttft else []), *(["--tpot-ms", f"{tpot:g}"] if tpot else [])]
    kind = rng.choices(("solve", "disagg", "recommend", "memory", "sweep"), (5, 2, 1.5, 1, 1.5))[0]
    kind = "disagg" if disagg else kind
    common = ["--hardware", hw, "--isl", str(isl), "--osl", str(osl), "--framework", fw]
    if kind == "solve":
        conc = ["--concurrency", str(rng.choice((64, 256, 1000)))] if rng.random() < 0.25 else []
        return kind, ["solve", model, *common, "--cards", str(rng.choice(CARDS)), *sla, *conc,
                      "--time-limit", TIME_LIMIT]
    if kind == "disagg":
        conc = ["--concurrency", str(rng.choice((64, 512)))] if rng.random() < 0.25 else []
        return kind, ["solve", model, *common, "--cards", str(rng.choice((2, 4, 8, 16))), "--serving", "disagg",
                      *sla, *conc, "--time-limit", TIME_LIMIT]
    if kind == "recommend":
        copies = ["--max-copies", "1"] if rng.random() < 0.5 else []
        return kind, ["recommend", model, *common, "--target-output-tokens-per-s", str(rng.choice((2000, 50000))),
                      "--cards", "1..16", *sla, *copies, "--time-limit", TIME_LIMIT]
    if kind == "sweep":  # one size and scenario: its row's note is the remedy, a rerun's row its test
        return kind, ["sweep", model, *common, "--cards", str(rng.choice(CARDS)), "--scenarios",
                      rng.choice(("throughput", "latency", "balanced")), *sla, "--format", "json",
                      "--time-limit", TIME_LIMIT]
    cards = rng.choice((1, 2, 4, 8))
    tp = [a for f in ("--attn-tp", "--dense-tp", "--lmhead-tp") for a in (f, str(cards))]
    return kind, ["memory", model, "--hardware", hw, "--cards", str(cards), *tp, "--batch",
                  str(rng.choice((16, 128, 1024))), "--seq-len", str(isl + osl), "--framework", fw]


# ---------------------------------------------------------------- remedies


@dataclass
class Trial:
    kind: str
    works: bool
    figure_ok: bool | None  # None: the remedy quotes no figure
    why: str = ""
    commands: list[str] = field(default_factory=list)


def _sla_relax(argv: list[str], text: str, aside: bool = False) -> list[Trial]:
    out = []
    for m in re.finditer(r"relax (--[\w-]+(?:(?: and |/)--[\w-]+)?)(?: together)?: the (?:fastest configuration|"
                         r"configuration with the least (?:TTFT|TPOT)) at "
                         r"concurrency (\d+) on (\d+) cards? \(([^)]*)\) shows ((?:(?:TPOT|TTFT) [\d,.]+ ms(?:, )?)+)",
                         text):
        conc, world, knobs, shown = m.group(2), m.group(3), m.group(4), m.group(5)
        figs = dict((n, v) for n, v in re.findall(r"(TPOT|TTFT) ([\d,.]+) ms", shown))
        new = argv
        for n, v in figs.items():
            new = with_flag(new, SLA_FLAG[n], number(v))
        code, res = run(new)
        if new[0] == "sweep" and code == 0:
            code = 0 if any(r["feasible"] for r in _rows(res)) else 1
        # the quoted configuration's figures, by `estimate` of its knobs at the quoted concurrency
        est = ["estimate", argv[1], *_opts(argv, ("--hardware", "--isl", "--osl", "--framework", "--kv-dtype",
                                                  "--weight-dtype", "--moe-weight-dtype", "--mtp")),
               "--cards", world, "--concurrency", conc, "--format", "json"]
        for k, v in re.findall(r"(\w+)=(\d+)", knobs):
            if KNOB_FLAGS.get(k):
                est += [KNOB_FLAGS[k], v]
        ecode, eout = run(est)
        fig_ok, why = None, ""
        if ecode == 0:
            d = json.loads(eout[eout.index("{"):eout.rindex("}") + 1])
            # a quoted cap is the figure rounded up to three significant figures (so it passes as the SLA)
            got = {"TTFT": three_figures(d["ttft_ms"], up=True), "TPOT": three_figures(d["tpot_ms"], up=True)}
            fig_ok = all(got[n] == v for n, v in figs.items())
            why = f"quoted {figs}, estimate {({n: got[n] for n in figs})}"
        else:
            fig_ok, why = False, f"estimate exit {ecode}: {eout.strip()[-200:]}"
        works = code == 0 or (aside and code == 1 and "fits or meets the SLA up to" not in res)
        out.append(Trial("sla_relax", works, fig_ok, (why + "; " if not fig_ok else "")
                         + (f"rerun exit {code}: {res.strip()[-250:]}" if not works else ""), [shell(new), shell(est)]))
    return out


def _opts(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    return [a for i, a in enumerate(argv) if a in flags or (i and argv[i - 1] in flags)]


LOAD_ASIDE = "the load target aside)"  # recommend: a remedy for a configuration on the cards, not for the load


def _simple_run(kind: str, new: list[str], expect: str | None = None, load_aside: bool = False) -> Trial:
    code, res = run(new)
    if new[0] == "sweep" and code == 0:  # a sweep answers every row: the remedy works where a row is feasible
        code = 0 if any(r["feasible"] for r in _rows(res)) else 1
    # where the remedy sets the load aside, it works when the rerun has a configuration (meets the target, or
    # falls short of it: no longer "no configuration fits or meets the SLA")
    ok = (code == 0 and (expect is None or expect in res)) or (
        load_aside and code == 1 and "fits or meets the SLA up to" not in res)
    return Trial(kind, ok, None, "" if ok else f"rerun exit {code}: {res.strip()[-300:]}", [shell(new)])


def _rows(out: str) -> list[dict]:
    return json.loads(out[out.index("["):out.rindex("]") + 1])


def _no_sla(argv: list[str]) -> list[str]:
    return with_flag(with_flag(argv, "--ttft-ms", None), "--tpot-ms", None)


def trials(kind: str, argv: list[str], code: int, text: str) -> list[Trial]:
    """The remedies `text` (the answer to argv) names, each applied and rerun."""
    out: list[Trial] = []
    if kind == "memory":
        m = re.search(r"does not fit;.*?max batch at ([\d,]+) tokens: ([\d,]+)", text, re.S)
        if m and int(number(m.group(2))) >= 1:
            new = with_flag(argv, "--batch", number(m.group(2)))
            c, r = run(new)
            ok = c == 0 and "does not fit" not in r
            out.append(Trial("max_batch", ok, None, "" if ok else f"rerun exit {c}: {r.strip()[-300:]}", [shell(new)]))
        return out
    if code == 0 or ("what would fit" not in text and LOAD_ASIDE not in text):
        return out
    aside = LOAD_ASIDE in text

    def _simple(kind: str, new: list[str], expect: str | None = None) -> Trial:  # noqa: F811 - the load aside
        return _simple_run(kind, new, expect, aside)

    for m in re.finditer(r"(\d+) cards fit \(the planner found a configuration there(, SLAs aside)?\)", text):
        base = _no_sla(argv) if m.group(2) else argv
        out.append(_simple("cards", with_flag(base, "--cards", m.group(1))))
    for m in re.finditer(r"or ([\d,]+) cards \(the planner meets the SLA there\)", text):
        out.append(_simple("sla_cards", with_flag(argv, "--cards", number(m.group(1)))))
    for m in re.finditer(r"--concurrency ([\d,]+) \(the planner meets the SLA there\)", text):
        out.append(_simple("sla_concurrency", with_flag(argv, "--concurrency", number(m.group(1)))))
    for m in re.finditer(r"--concurrency ([\d,]+)(?: or fewer)? \(the most requests ([^()]*)\)", text):
        base = _no_sla(argv) if "SLAs aside" in m.group(2) else argv
        out.append(_simple("concurrency", with_flag(base, "--concurrency", number(m.group(1)))))
    for m in re.finditer(r"--isl (\d+) or shorter \(([^()]*)\)", text):
        disagg = "rate match" in m.group(2)
        base = _no_sla(argv) if "SLAs aside" in m.group(2) else argv
        base = with_flag(base, "--concurrency", None) if disagg and "--concurrency" in m.group(2) else base
        out.append(_simple("disagg_isl" if disagg else "isl", with_flag(base, "--isl", m.group(1))))
    binding_memory_only = re.search(r"B\.memory_per_rank binds \(", text) is not None
    for m in re.finditer(r"smaller weights \(((?:--[\w-]+ [\w/]+(?:, )?)+)\)", text):
        for flag, values in re.findall(r"(--[\w-]+) ([\w/]+)", m.group(1)):
            named = values.split("/")
            for v in named:
                c, r = run(with_flag(argv, flag, v))
                if c == 2:
                    out.append(Trial("weight_dtype", False, None, f"{flag} {v} refused: {r.strip()[-200:]}",
                                     [shell(with_flag(argv, flag, v))]))
            if binding_memory_only and kind == "solve":
                out.append(_simple("weight_dtype", with_flag(argv, flag, named[-1])))
    for m in re.finditer(r"(\d+) cards with --allow-cross-node \(the planner found a configuration there(, SLAs aside)?\)",
                         text):
        base = _no_sla(argv) if m.group(2) else argv
        out.append(_simple("cross_node_cards", [*with_flag(base, "--cards", m.group(1)), "--allow-cross-node"]))
    if re.search(r"a smaller --concurrency(?! \d)", text) and "--concurrency" in argv and "relaxed together" not in text:
        out.append(_simple("smaller_concurrency", with_flag(argv, "--concurrency", "1")))
    out += _sla_relax(argv, text, aside)
    if "relaxed together" not in text:  # a bare "relax --F" (no figure quoted): the SLA dropped frees a plan
        for m in re.finditer(r"relax (--[\w-]+)(?:(?: and |/)(--[\w-]+))?(?: together)?(?=;|\)|$)", text):
            new = argv
            for flag in filter(None, m.groups()):
                new = with_flag(new, flag, None)
            out.append(_simple("relax_bare", new))
    m = re.search(r"with (?:it|them) set aside, of the \d+ deployments evaluated the lowest ((?:(?:TPOT|TTFT) is [\d,.]+ ms"
                  r"(?: and the lowest )?)+)", text)
    if m:
        named = re.findall(r"(TPOT|TTFT) is ([\d,.]+) ms", m.group(1))
        for n, v in named:  # each floor alone: the other SLA named dropped, one not named kept
            new = argv
            for other, _ in named:
                new = with_flag(new, SLA_FLAG[other], None)
            out.append(_simple("disagg_lowest", with_flag(new, SLA_FLAG[n], number(v))))
    for m in re.finditer(r"([\d,]+) cards (in total|with --allow-cross-node) \([^:]*: the planner found a "
                         r"configuration for each([^)]*)\)?\)", text):
        base = _no_sla(argv) if "SLAs aside" in m.group(3) else argv
        base = with_flag(base, "--concurrency", None) if "--concurrency" in m.group(3) else base
        wide = ["--allow-cross-node"] if "cross" in m.group(2) and "--allow-cross-node" not in argv else []
        out.append(_simple("disagg_cross_node_cards" if wide else "disagg_total_cards",
                           [*with_flag(base, "--cards", number(m.group(1))), *wide]))
    for m in re.finditer(r"what would fit: ([\d,]+) cards or more", text):
        out.append(_simple("disagg_cards", with_flag(argv, "--cards", number(m.group(1)))))
    for m in re.finditer(r"what would fit: --concurrency ([\d,]+)", text):
        out.append(_simple("disagg_concurrency", with_flag(argv, "--concurrency", number(m.group(1)))))
    # the other alternative of "--concurrency N, or M cards (...)" (each alternative applied on its own)
    for m in re.finditer(r"([\d,]+) cards \(\d+ prefill worker\(s\) of \d+ ranks and \d+ decode worker\(s\) of",
                         text):
        new = with_flag(argv, "--cards", number(m.group(1)))
        if int(number(m.group(1))) > RERUN_CARDS:  # a plan on that many cards: apart, or counted
            if not LARGE:
                SKIPPED["disagg_fewest_cards"] += 1
                continue
            start = time.perf_counter()
            c, r = run_apart(new, LARGE["timeout"])
            out.append(Trial("disagg_fewest_cards", c == 0, None,
                             "" if c == 0 else f"rerun exit {c} after {time.perf_counter() - start:.0f} s: "
                                               f"{r.strip()[-300:]}", [shell(new)]))
            continue
        out.append(_simple("disagg_fewest_cards", new))
    for m in re.finditer(r"or ((?:--(?:prefill|decode)-workers \d+ ?)+) \(the most workers up to", text):
        new = argv
        for flag, n in re.findall(r"(--(?:prefill|decode)-workers) (\d+)", m.group(1)):
            new = with_flag(new, flag, n)
        out.append(_simple("disagg_fewer_workers", new))
    for m in re.finditer(r"what would fit: --cards ([\d,]+)( \(room for them, SLAs aside\))?(?=, or --|;|\)|\s*$)",
                         text):
        base = _no_sla(argv) if m.group(2) else argv
        out.append(_simple("disagg_fixed_cards", with_flag(base, "--cards", number(m.group(1)))))
    if "--prefill-workers / --decode-workers left to the rate match" in text:
        out.append(_simple("disagg_rate_match", with_flag(with_flag(argv, "--prefill-workers", None),
                                                          "--decode-workers", None)))
    if re.search(r"--serving agg \(the planner found an aggregated configuration", text):
        out.append(_simple("serving_agg", with_flag(argv, "--serving", "agg")))
    m = re.search(r"what would fit(?: \([^()]*\))?: ((?:\d+ \(\d+ nodes? x \d+\)(?: or )?)+) ranks spread evenly",
                  text)
    for n in re.findall(r"(\d+) \(\d+ nodes? x", m.group(1)) if m else ():
        out.append(_simple("launchable_cards", with_flag(argv, "--cards", n)))
    for m in re.finditer(r"what would fit: a target up to ([\d,.]+)", text):
        out.append(_simple("target", with_flag(argv, "--target-output-tokens-per-s", number(m.group(1)))))
    for m in re.finditer(r"--cards ([\d,]+) \([\d,]+ cop(?:y|ies) of [\d,]+ cards? carr(?:y|ies)", text):
        out.append(_simple("more_cards", with_flag(argv, "--cards", number(m.group(1)))))
    for m in re.finditer(r"--max-copies ([\d,]+) \([\d,]+ copies of [\d,]+ cards? carry", text):
        out.append(_simple("more_copies", with_flag(argv, "--max-copies", number(m.group(1)))))
    for m in re.finditer(r"((?:--(?:ttft|tpot)-ms [\d,.]+(?:, )?)+) \(the (?:TTFT|TPOT)(?: and TPOT)? SLAs? binds?", text):
        new = argv
        for flag, v in re.findall(r"(--(?:ttft|tpot)-ms) ([\d,.]+)", m.group(1)):
            new = with_flag(new, flag, number(v))
        out.append(_simple("looser_sla", new))
    return out


# ---------------------------------------------------------------- the run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--disagg", action="store_true",
                    help="draw disaggregated requests only (solve --serving disagg), the same draws otherwise")
    ap.add_argument("--workers", action="store_true",
                    help="with --disagg: fix worker counts (--prefill-workers / --decode-workers, drawn apart so the "
                         "requests are --disagg's own otherwise)")
    ap.add_argument("--large", action="store_true",
                    help=f"rerun the remedies past {RERUN_CARDS:,} cards too, each in a child process (minutes and "
                         "GBs each)")
    ap.add_argument("--large-timeout", type=float, default=1200.0,
                    help="seconds each such rerun may take (a time-out is a failure)")
    ap.add_argument("--messages", type=Path, default=None,
                    help="write each request and its answer (exit code, text) here, to diff two trees' messages")
    args = ap.parse_args()
    log = args.messages.open("w") if args.messages else None
    if args.large:
        LARGE["timeout"] = args.large_timeout
    rng = random.Random(args.seed)
    start = time.perf_counter()
    results: list[Trial] = []
    unnamed = collections.Counter()  # infeasible answers with a "what would fit" this checker reads none of
    outcomes = collections.Counter()
    by_command: dict = collections.defaultdict(collections.Counter)  # command -> remedy kind -> remedies tried
    for i in range(args.cases):
        kind, argv = draw(rng, args.disagg)
        if args.workers and kind == "disagg":  # its own generator: the draws above stay --disagg's
            wr = random.Random(args.seed * 7919 + i)
            for flag in ("--prefill-workers", "--decode-workers"):
                n = wr.choice((None, 1, 2, 3, 4, 6))
                argv = with_flag(argv, flag, str(n)) if n else argv
        code, text = run(argv)
        outcomes[(kind, code)] += 1
        if log:
            log.write(f"$ {shell(argv)}\nexit {code}\n{text.rstrip()}\n\n")
        if code == 3:
            results.append(Trial("internal_error", False, None, text.strip()[-300:], [shell(argv)]))
            continue
        if kind == "sweep" and code == 0:
            notes = [r.get("note") or "" for r in _rows(text) if not r["feasible"]]
            code, text = (1, "\n".join(notes)) if notes else (0, text)
        got = trials(kind, argv, code, text)
        if code == 1 and "what would fit" in text and not got:
            unnamed[kind] += 1
            print(f"  (no remedy read) {shell(argv)}\n      {text.strip()[-300:]}", flush=True)
        for t in got:
            t.commands.insert(0, shell(argv) + "   # the original")
            by_command[kind][t.kind] += 1
        results += got
        print(f"  {i + 1}/{args.cases} {kind} exit {code}: {len(got)} remedies, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    report(results, outcomes, unnamed, time.perf_counter() - start, args)
    print("\nremedies tried by command: " + "; ".join(f"{c}: " + ", ".join(f"{k} {n}" for k, n in sorted(v.items()))
                                                    for c, v in sorted(by_command.items())))


def report(results: list[Trial], outcomes: collections.Counter, unnamed: collections.Counter, wall: float,
           args: argparse.Namespace) -> None:
    print(f"\n{args.cases} {'disaggregated ' * args.disagg}requests (seed {args.seed}) in {wall:.0f} s; exits: "
          + ", ".join(f"{k} {c}: {n}" for (k, c), n in sorted(outcomes.items())))
    print(f"\n{'remedy kind':<20}{'tried':>6}{'works':>7}{'figure quoted':>15}{'matches':>9}")
    by = collections.defaultdict(list)
    for t in results:
        by[t.kind].append(t)
    for k, ts in sorted(by.items()):
        quoted = [t for t in ts if t.figure_ok is not None]
        print(f"{k:<20}{len(ts):>6}{sum(t.works for t in ts):>7}{len(quoted):>15}"
              f"{sum(bool(t.figure_ok) for t in quoted):>9}")
    if unnamed:
        print(f"infeasible answers whose remedies this checker reads none of: {dict(unnamed)}")
    if SKIPPED:
        print(f"remedies read but not rerun (past {RERUN_CARDS:,} cards; --large reruns them): {dict(SKIPPED)}")
    fails = [t for t in results if not t.works or t.figure_ok is False]
    print(f"\nfailures: {len(fails)}")
    for t in fails[:40]:
        print(f"  [{t.kind}] {t.why}" + "".join(f"\n      $ {c}" for c in t.commands))


if __name__ == "__main__":
    main()
