"""docs/engine-conformance.md: the engines.md statements a profile rule carries, one case each, named after the
statement. Each negative case breaks that statement alone (the violated rule ids are exactly the one named);
each positive case is a layout the statement allows (no error). 8 ranks per node."""
from __future__ import annotations

import pytest

from solver.specs.framework import load_framework
from solver.specs.model_catalog import load_model
from solver.specs.rule_env import model_env

DS = dict(dense_tp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8)
DPA = dict(dense_tp_size=1, moe_tp_size=1, embed_tp_size=1, lmhead_tp_size=8)

# (statement id, engine, model, world, knobs, violated rule ids: [] = accepted)
CASES = [
    ("vllm-ep-size-is-tp-x-dp-not-settable", "vllm", "deepseek-v3", 8,
     dict(attn_tp_size=8, **{**DS, "moe_tp_size": 2}), ["C.moe_tp_world_or_ep"]),
    ("vllm-dense-ffn-follows-tp", "vllm", "deepseek-v3", 8, dict(attn_tp_size=8, **{**DS, "dense_tp_size": 1}),
     ["C.dense_tp_is_tp"]),
    ("vllm-lm-head-follows-tp", "vllm", "deepseek-v3", 8, dict(attn_tp_size=8, **{**DS, "lmhead_tp_size": 1}),
     ["C.lmhead_tp_is_tp"]),
    ("vllm-dp-engine-over-whole-nodes", "vllm", "llama-3.1-70b", 32,
     dict(attn_tp_size=16, dense_tp_size=16, embed_tp_size=16, lmhead_tp_size=16), []),
    # TP4 x PP3 = an engine of 12, DP2 = 24 ranks on 3 nodes of 8: 12 neither divides 8 nor is whole nodes
    ("vllm-dp-engine-inside-a-node-or-over-whole-nodes", "vllm", "llama-3.1-70b", 24,
     dict(attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4, pp_size=3),
     ["C.dp_engine_inside_node_or_whole_nodes"]),
    ("vllm-dp-under-pp", "vllm", "llama-3.1-70b", 16,
     dict(attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4, pp_size=2), []),
    # each engine's stage (TP4) is half a node: the stage's MoE group spans both nodes, priced so (stage_ranks)
    ("vllm-dp-under-pp-moe", "vllm", "deepseek-v3", 16,
     dict(attn_tp_size=4, dense_tp_size=4, moe_tp_size=1, embed_tp_size=4, lmhead_tp_size=4, pp_size=2), []),
    ("vllm-pp-tp8-pp2", "vllm", "llama-3.1-70b", 16,
     dict(attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8, pp_size=2), []),
    # vLLM 0.23.0's launcher (nnodes_within_dp) runs DP engines of TP x PP ranks inside a node or over whole nodes:
    # TP4 x PP2 x DP2 on 8-rank nodes is two engines of 8; TP4 x PP3 x DP2 on 24 is engines of 12, neither
    ("vllm-ascend-dp-under-pp", "vllm-ascend", "deepseek-v3", 16,
     dict(attn_tp_size=4, dense_tp_size=4, moe_tp_size=1, embed_tp_size=4, lmhead_tp_size=4, pp_size=2), []),
    ("vllm-ascend-dp-engine-inside-a-node-or-over-whole-nodes", "vllm-ascend", "llama-3.1-70b", 24,
     dict(attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4, pp_size=3),
     ["C.dp_engine_inside_node_or_whole_nodes"]),
    ("vllm-ascend-finegrained-tp-under-attention-dp", "vllm-ascend", "deepseek-v3", 8,
     dict(attn_tp_size=1, o_proj_tp_size=4, dense_tp_size=4, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8), []),
    ("vllm-ascend-finegrained-tp-beside-tp-is-conservative", "vllm-ascend", "deepseek-v3", 8,
     dict(attn_tp_size=2, o_proj_tp_size=2, dense_tp_size=4, moe_tp_size=1, embed_tp_size=2, lmhead_tp_size=2),
     ["C.finegrained_tp_under_attention_dp"]),
    ("vllm-ascend-enable-dsa-cp-on-dsa", "vllm-ascend", "deepseek-v3.2", 8,
     dict(attn_tp_size=1, attn_sp_size=8, o_proj_tp_size=8, **DS), []),
    ("vllm-ascend-enable-dsa-cp-needs-dsa", "vllm-ascend", "deepseek-v3", 8,
     dict(attn_tp_size=1, attn_sp_size=8, o_proj_tp_size=8, **DS), ["C.dsa_cp"]),
    ("sglang-moe-dense-tp-size-1-or-unset", "sglang", "deepseek-v3", 8,
     dict(attn_tp_size=2, **{**DPA, "dense_tp_size": 2, "lmhead_tp_size": 2}), ["C.dense_tp_moe_dense_tp"]),
    ("sglang-embedding-replicated-under-dp-attention", "sglang", "deepseek-v3", 8,
     dict(attn_tp_size=2, **{**DPA, "embed_tp_size": 8}), ["C.embed_replicated_under_dp_attention"]),
    ("sglang-lm-head-attention-tp-or-tp", "sglang", "deepseek-v3", 8,
     dict(attn_tp_size=2, **{**DPA, "lmhead_tp_size": 4}), ["C.lmhead_tp_world_or_attn_tp"]),
    ("sglang-dp-lm-head-over-attention-tp", "sglang", "deepseek-v3", 8,
     dict(attn_tp_size=2, **{**DPA, "lmhead_tp_size": 2}), []),
    ("sglang-attn-tp-is-tp-over-dp-x-cp", "sglang", "deepseek-v3.2", 8,
     dict(attn_tp_size=4, attn_sp_size=4, **DPA),
     ["C.embed_replicated_under_dp_attention", "C.attn_sp_group_fits"]),  # a group of 16 in 8 ranks: no DP either
    ("trtllm-attention-tp-or-attention-dp", "trtllm", "deepseek-v3", 8,
     dict(attn_tp_size=2, dense_tp_size=2, moe_tp_size=1, embed_tp_size=2, lmhead_tp_size=2),
     ["C.attention_dp_all_or_none"]),
    ("trtllm-moe-tp-x-ep-any-split", "trtllm", "deepseek-v3", 8,
     dict(attn_tp_size=1, dense_tp_size=1, moe_tp_size=2, embed_tp_size=1, lmhead_tp_size=8), []),
    ("trtllm-dense-ffn-follows-attention", "trtllm", "deepseek-v3", 8,
     dict(attn_tp_size=8, dense_tp_size=1, moe_tp_size=8, embed_tp_size=8, lmhead_tp_size=8), ["C.dense_tp_is_attn_tp"]),
    ("trtllm-lm-head-attention-or-all-ranks", "trtllm", "deepseek-v3", 8,
     dict(attn_tp_size=1, dense_tp_size=1, moe_tp_size=8, embed_tp_size=1, lmhead_tp_size=4),
     ["C.lmhead_tp_attn_or_world"]),
    ("trtllm-attention-dp-documented-for-moe", "trtllm", "llama-3.1-70b", 8,
     dict(attn_tp_size=1, dense_tp_size=1, embed_tp_size=1, lmhead_tp_size=1), ["C.attention_dp_moe_only"]),
    ("atom-no-multi-node-flags", "atom", "deepseek-v3", 16,
     dict(attn_tp_size=8, dense_tp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8), ["C.single_node"]),
    ("atom-dp-attention-for-moe", "atom", "llama-3.1-70b", 8,
     dict(attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4), ["C.dp_attention_moe_only"]),
    ("atom-ep-on-or-off", "atom", "deepseek-v3", 8, dict(attn_tp_size=8, **{**DS, "moe_tp_size": 4}),
     ["C.moe_tp_world_or_ep"]),
]


@pytest.mark.parametrize("statement, engine, model, world, knobs, violated", CASES, ids=[c[0] for c in CASES])
def test_engines_md_statement(statement, engine, model, world, knobs, violated) -> None:
    """The case breaks the statement's rule and nothing else (or, where `violated` is empty, is one it allows)."""
    fw = load_framework(engine)
    env = model_env(knobs, load_model(model), 8, world=world, batch=world)
    assert [r.id for r in fw.violated(env, "error")] == violated
    assert fw.limits(env) == []


def test_the_conformance_tables_rule_references_point_at_their_rules() -> None:
    """Every 'C.rule file:line' of docs/engine-conformance.md names the line of the profile that defines that rule
    (a profile edited since shifts its lines: the table must follow)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = {"v": "vllm", "va": "vllm-ascend", "sg": "sglang", "trt": "trtllm", "at": "atom"}
    lines = {k: (root / "solver" / "frameworks" / f"{v}.yaml").read_text().splitlines() for k, v in files.items()}
    doc = (root / "docs" / "engine-conformance.md").read_text()
    refs = re.findall(r"([ABC]\.[a-z0-9_]+) (v|va|sg|trt|at):(\d+)", doc)
    assert refs
    stale = [f"{rid} {f}:{n}" for rid, f, n in refs
             if not re.search(r"\bid:\s*" + re.escape(rid) + r"\b", lines[f][int(n) - 1])]
    assert not stale, stale


def test_the_conformance_tables_line_ranges_run_forward_within_their_profile() -> None:
    """Every 'file:a-b' range of docs/engine-conformance.md runs forward (a < b: one line is written 'file:a') and
    ends inside the profile (va:220-198 or va:194-194 is a range left half-updated after the profile moved)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = {"v": "vllm", "va": "vllm-ascend", "sg": "sglang", "trt": "trtllm", "at": "atom"}
    lengths = {k: len((root / "solver" / "frameworks" / f"{v}.yaml").read_text().splitlines())
               for k, v in files.items()}
    doc = (root / "docs" / "engine-conformance.md").read_text()
    ranges = re.findall(r"\b(v|va|sg|trt|at):(\d+)-(\d+)\b", doc)
    assert ranges
    bad = [f"{f}:{a}-{b}" for f, a, b in ranges if not int(a) < int(b) <= lengths[f]]
    assert not bad, bad


def _refs_tool():
    """docs/remap_conformance_refs.py: the page's reference syntax (REF, ABBREV) and the remapping tool."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "remap_conformance_refs.py"
    spec = importlib.util.spec_from_file_location("remap_conformance_refs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_plain_line_reference_spells_what_its_row_names() -> None:
    """Each plain 'file:N' of a table row (one not right after a rule id, which the test above checks) is a
    profile line that spells a name the row gives it, and a range 'file:N-M' starts and ends on such lines. Its
    names: the identifiers in backticks in the row's statement column and in the ref's own cell (a flag
    `--tp-size` or `-H`, a key `kv_cache_config.dtype`, an env `DYNAMIC_EPLB`, a command `mpirun`, the key of
    `vendors: [amd]`); the identifiers (with '_', '.' or a leading '-') in the words right before the ref, back to
    the previous ref or ';' (a bare list 'v:115, va:136' shares its first ref's words; 'A.world_divisible_*' names
    every id it starts), and in the parenthesis right after it; in the knob table, the row's knob (attn_tp ->
    attn_tp_size). A kind word there also names a line: 'knob(s)' the knobs list, 'feature(s)' an entry of
    features:, 'document' a documents: spec. A name matches as a whole word ('-tp' is not in '--tp_size') in a
    line's data: comments are not read unless the words say 'comment'. A ref whose row names nothing fails too.
    E.g. A1's `finegrained_tp_config` sits on vllm-ascend.yaml 245-248; 'va:237-240' (the --max-num-batched-tokens
    comment and the --max-model-len arg) spells no name of A1's: stale."""
    import re
    from pathlib import Path

    tool = _refs_tool()
    root = Path(__file__).resolve().parents[1]
    ident = re.compile(r"(?<![\w-])(?:-{1,2}[a-z][a-z0-9_-]*[a-z0-9]|[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+)")
    # in backticks a flag or a hyphenated command is a name too (`-H`, `trtllm-llmapi-launch`)
    spelled = re.compile(r"(?<![\w-])(?:-{1,2}[A-Za-z][\w-]*|[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)+)")
    kinds = {"knob": r"knobs:", "knobs": r"knobs:", "document": r"\s+\w+: \{format:"}
    profiles = {}
    for abbr in tool.ABBREV:
        lines = tool.profile_path(abbr).read_text().splitlines()
        top, features = "", set()
        for n, line in enumerate(lines, 1):
            top = line.split(":")[0] if re.match(r"[a-z_]+:", line) else top
            if top == "features" and re.match(r"  [a-z_]+:", line):
                features.add(n)
        profiles[abbr] = (lines, features)

    def spells(abbr: str, n: int, names: set[str], kind_words: set[str], comments: bool) -> bool:
        lines, features = profiles[abbr]
        line = lines[n - 1]
        if "feature" in kind_words or "features" in kind_words:
            if n in features:
                return True
        if any(re.match(kinds[k], line) for k in kind_words if k in kinds):
            return True
        data = line if comments else re.sub(r"(^|\s)#.*$", "", line)
        return any(re.search(r"(?<![\w-])" + re.escape(name.rstrip("*"))
                             + (r"\w" if name.endswith("_*") else r"(?![\w-])"), data) for name in names)

    def backticked(text: str) -> set[str]:
        out = set()
        for span in re.findall(r"`([^`]+)`", text):
            out |= set(spelled.findall(span)) | set(re.findall(r"^(\w+):", span)) | set(re.findall(r"^\w+$", span))
        return out

    doc = (root / "docs" / "engine-conformance.md").read_text().splitlines()
    stale, checked = [], 0
    header: list[str] = []
    for i, row in enumerate(doc):
        if not row.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if i + 1 < len(doc) and doc[i + 1].startswith("|---"):
            header = cells
            continue
        if row.startswith("|---") or not header:
            continue
        row_names = set().union(*(backticked(c) for h, c in zip(header, cells) if "statement" in h))
        if "knob" in header:
            row_names.add(cells[header.index("knob")].split()[0] + "_size")
        for cell in cells:
            last_end, last_words = 0, ""
            for m in tool.REF.finditer(cell):
                before = cell[last_end:m.start()]
                before = before[before.rfind(";") + 1:]
                if re.search(r"\b[ABC]\.[a-z0-9_]+ $", before) and len(tool.spans(m.group(2))) == 1:
                    last_end, last_words = m.end(), before
                    continue  # 'C.rule v:120': the rule-id test's
                if not re.search(r"[A-Za-z`]", before):
                    before = last_words + before
                after = re.match(r"\s*\(([^)]*)\)", cell[m.end():])
                words = before + " " + (after.group(1) if after else "")
                names = row_names | backticked(cell) | set(ident.findall(words)) | set(re.findall(r"[\w.]+_\*", words))
                kind_words = set(re.findall(r"\b(knobs?|features?|document)\b", words))
                comments = "comment" in words
                abbr = m.group(1)
                for a, b in tool.spans(m.group(2)):
                    checked += 1
                    if b > len(profiles[abbr][0]) or not all(
                            spells(abbr, n, names, kind_words, comments) for n in {a, b}):
                        stale.append(f"{cells[0]}: {abbr}:{a}" + (f"-{b}" if b != a else "")
                                     + f" spells none of {sorted(names) or 'nothing (name it in the row)'}")
                last_end, last_words = m.end(), before
    assert checked > 100
    assert not stale, ("a plain line reference no longer points at what its row names (after a profile edit run "
                       "`python docs/remap_conformance_refs.py ABBR <rev before the edit>`, or re-point it by "
                       "hand):\n" + "\n".join(stale))
