"""Write solver/launch/engine_flags.yaml: each engine's command-line flags as its own parser builds them (flag ->
kind, value type, choices, nargs), and the keys each JSON-valued flag's document takes (the fields of the engine's
config dataclass it is parsed into), which tests/test_launch_parse.py checks every printed command against.

    VLLM_TARGET_DEVICE=cpu PYTHONPATH=DEPS:VLLM34_SRC python docs/engine_flags_from_wheels.py vllm
    PYTHONPATH=DEPS python docs/engine_flags_from_wheels.py sglang
    PYTHONPATH=VLLM023:DEPS python docs/engine_flags_from_wheels.py vllm-ascend --vllm-ascend VLLM_ASCEND_SDIST

Each run rewrites one engine's entry. Run it in a throwaway environment (never the project's venv) where `vllm`
(the 0.34.0 sdist's source tree; for vllm-ascend 0.23.0.post1 the vLLM 0.23.0 wheel it is released against: their
argument modules need no compiled part) or `sglang` (the 0.5.23 wheel) imports, with torch CPU, transformers and
the pure-Python packages their argument modules import installed `--no-deps` in DEPS; the script names the CPU
platform so vLLM's config defaults resolve on a machine without a GPU.

- vLLM: EngineArgs.add_cli_args on a FlexibleArgumentParser (the parser `vllm serve` uses, less the frontend's
  server flags, which are added from entrypoints/common/cli_args.py (openai/cli_args.py before) make_arg_parser).
- SGLang: ServerArgs.add_cli_args on an argparse.ArgumentParser (srt/server_args.py).
- Environment variables (`env`): vLLM's envs.environment_variables, SGLang's srt/environ.py Envs attributes plus
  the SGLANG_* names its code reads from os.environ directly (_getenv_names, ast), and for vllm-ascend vLLM's plus
  vllm_ascend/envs.py env_variables (ast).
- vllm-ascend: the parser of the vLLM it is released against (docs/source/community/versioning_policy.md; the
  plugin adds no flag) and the --additional-config keys the plugin reads: every
  `additional_config.get("<key>")` / `additional_config["<key>"]` in vllm_ascend/ (read with ast).

A value type is what the parser's `type` callable returns for probe strings (int, float, str, json, bool, and
human_int / human_int_or_auto where it takes "2k" (vLLM's human_readable_int[_or_auto])), so a
converter of the engine's own (vLLM's optional_type, a JSON loader) is classified by what it accepts. `choices`
are what the parser refuses anything else of; `known` (vLLM's Literal | str fields, shown as the metavar) the values
the engine's config knows, another string passing the parser to fail the config's own check (or name a plugin's).
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "solver" / "launch" / "engine_flags.yaml"


def _value_type(action: argparse.Action) -> str:
    """The type of value a flag takes, probed through its parser's converter."""
    t = action.type
    if t is None:
        return "str"
    if t in (int, float, str):
        return t.__name__
    results = {}
    for probe in ("7", "1.5", '{"a": 1}', "abc", "true", "2k", "auto"):
        try:
            results[probe] = t(probe)
        except Exception:  # the converter refuses the probe: that is what is being measured
            results[probe] = None
    if isinstance(results['{"a": 1}'], dict):
        return "json"
    if isinstance(results["7"], bool) or isinstance(results["true"], bool):
        return "bool"
    if isinstance(results["7"], int) and isinstance(results["2k"], int) and not isinstance(results["7"], bool):
        # vLLM's human_readable_int (2k = 2,000, 2K = 2,048) and human_readable_int_or_auto (auto / -1 too)
        return "human_int_or_auto" if isinstance(results["auto"], int) else "human_int"
    if isinstance(results["7"], int) and results["1.5"] is None:
        return "int"
    if isinstance(results["1.5"], float):
        return "float"
    return "str"


def _kind(action: argparse.Action) -> str:
    if isinstance(action, argparse.BooleanOptionalAction):
        return "boolean_optional"
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction)):
        return "switch"
    if action.nargs == 0:  # an engine's own zero-argument action (a deprecated switch)
        return "switch"
    return "value"


def _flags(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        kind = _kind(action)
        entry: dict[str, Any] = {"kind": kind, "dest": action.dest}
        if kind == "value":
            entry["type"] = _value_type(action)
            if action.choices is not None:
                entry["choices"] = sorted(str(c) for c in action.choices)
            elif isinstance(action.metavar, (list, tuple)):  # vLLM: a Literal | str field lists its known values
                entry["known"] = sorted(str(c) for c in action.metavar)
            if action.nargs not in (None, 1):
                entry["nargs"] = str(action.nargs)
        for flag in action.option_strings:  # a negation (--no-x, vLLM's --disable-x) sets the value to False
            if kind == "boolean_optional" and flag.startswith(("--no-", "--disable-")):
                out[flag] = {"kind": "switch", "dest": action.dest}
            else:
                out[flag] = entry
    return dict(sorted(out.items()))


def _fields(cls: type) -> list[str]:
    return sorted(f.name for f in dataclasses.fields(cls))


def _vllm() -> dict[str, Any]:
    import vllm.platforms

    # the argument defaults resolve a platform; an older vLLM finds the CPU one only in a CPU build: name it
    vllm.platforms.builtin_platform_plugins["cpu"] = lambda: "vllm.platforms.cpu.CpuPlatform"
    from vllm import __version__
    from vllm.config import CompilationConfig, EPLBConfig, KVTransferConfig, SpeculativeConfig
    from vllm.engine.arg_utils import EngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    source = "vllm/engine/arg_utils.py EngineArgs.add_cli_args"
    import importlib

    for module in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.openai.cli_args"):
        try:  # the server's own flags (--port, --headless ...): their module moved between versions
            parser = importlib.import_module(module).make_arg_parser(parser)
            source += f" + {module.replace('.', '/')}.py make_arg_parser"
            break
        except ModuleNotFoundError:
            continue
    else:  # the engine flags stand alone; the file says which parser it read
        EngineArgs.add_cli_args(parser)
        source += " (server flags not read)"
    import vllm.envs

    return {
        "version": __version__, "read": "parser object", "source": source,
        "env": sorted(vllm.envs.environment_variables),
        # the `serve` subcommand (entrypoints/cli/serve.py) parses the rest with make_arg_parser's parser
        "program": ["vllm", "serve"],
        "flags": _flags(parser),
        "json_keys": {
            "--speculative-config": {"class": "vllm/config/speculative.py SpeculativeConfig",
                                     "keys": _fields(SpeculativeConfig)},
            "--kv-transfer-config": {"class": "vllm/config/kv_transfer.py KVTransferConfig",
                                     "keys": _fields(KVTransferConfig)},
            "--compilation-config": {"class": "vllm/config/compilation.py CompilationConfig",
                                     "keys": _fields(CompilationConfig)},
            "--eplb-config": {"class": "vllm/config/parallel.py EPLBConfig", "keys": _fields(EPLBConfig)},
        },
    }


def _sglang() -> dict[str, Any]:
    from sglang.srt.server_args import ServerArgs
    from sglang.version import __version__

    from sglang.srt.environ import Envs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    pkg = Path(sys.modules["sglang"].__file__).parent
    env = sorted({k for k in vars(Envs) if k.isupper()} | set(_getenv_names(pkg)))
    # launch_server.py parses its argv with prepare_server_args (ServerArgs.add_cli_args' parser)
    return {"version": __version__, "read": "parser object",
            "source": "sglang/srt/server_args.py ServerArgs.add_cli_args",
            "program": ["python3", "-m", "sglang.launch_server"], "env": env, "flags": _flags(parser)}


def _additional_config_keys(pkg: Path) -> list[str]:
    """Every key the plugin reads off additional_config: `<x>.additional_config.get("k")`, `additional_config["k"]`;
    and a sub-document's keys as "k.sub": `.get("sub")` on a variable named k, or, where k's dict is handed to a
    class of the same file (`EplbConfig(eplb_config)`), that class's `_defaults` keys and its __init__'s
    `<param>.get("sub")` reads."""
    top: set[str] = set()
    sub: dict[str, set[str]] = {}
    handed: list[tuple[str, ast.ClassDef]] = []

    def named(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "additional_config") or \
            (isinstance(node, ast.Attribute) and node.attr == "additional_config")

    def get_key(node: ast.AST) -> tuple[ast.AST, str] | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            return node.func.value, node.args[0].value
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)):
            return node.value, node.slice.value
        return None

    trees = [ast.parse(path.read_text(), str(path)) for path in sorted(pkg.rglob("*.py"))]
    for tree in trees:
        for node in ast.walk(tree):
            got = get_key(node)
            if got is not None and named(got[0]):
                top.add(got[1])
    for tree in trees:
        classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            got = get_key(node)
            if got is not None and isinstance(got[0], ast.Name) and got[0].id in top:
                sub.setdefault(got[0].id, set()).add(got[1])
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes \
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in top:
                handed.append((node.args[0].id, classes[node.func.id]))
    for key, cls in handed:
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_defaults" \
                    and isinstance(node.value, ast.Dict):
                sub.setdefault(key, set()).update(k.value for k in node.value.keys if isinstance(k, ast.Constant))
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                params = {a.arg for a in node.args.args[1:]}
                for inner in ast.walk(node):
                    got = get_key(inner)
                    if got is not None and isinstance(got[0], ast.Name) and got[0].id in params:
                        sub.setdefault(key, set()).add(got[1])
    return sorted(top) + sorted(f"{k}.{s}" for k, subs in sub.items() for s in subs)


def _getenv_names(pkg: Path) -> list[str]:
    """The SGLANG_* variables the package reads straight from the environment, past srt/environ.py:
    `os.getenv("<name>"...)`, `os.environ.get("<name>"...)`, `os.environ["<name>"]` (ast), e.g. get_pp_indices'
    SGLANG_PP_LAYER_PARTITION (srt/distributed/utils.py)."""
    out: set[str] = set()

    def environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    for path in pkg.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) and (
                    node.func.attr == "getenv" or (node.func.attr == "get" and environ(node.func.value))):
                key = node.args[0]
            elif isinstance(node, ast.Subscript) and environ(node.value):
                key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("SGLANG_"):
                out.add(key.value)
    return sorted(out)


def _ascend_env(path: Path) -> list[str]:
    """The keys of vllm_ascend/envs.py's env_variables dict: the variables the plugin reads."""
    for node in ast.parse(path.read_text()).body:
        target = (node.target if isinstance(node, ast.AnnAssign)
                  else node.targets[0] if isinstance(node, ast.Assign) else None)
        if getattr(target, "id", "") == "env_variables" and isinstance(node.value, ast.Dict):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    raise SystemExit(f"env_variables not found in {path}")


def _paired_vllm(tree: Path, version: str) -> str:
    """The vLLM version vllm-ascend `version` is released against (docs/source/community/versioning_policy.md,
    its release table's row: | v<version> | v<vLLM> | ...)."""
    table = (tree / "docs" / "source" / "community" / "versioning_policy.md").read_text()
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and cells[0] == f"v{version}":
            return cells[1].lstrip("v")
    raise SystemExit(f"vllm-ascend {version}: no row in versioning_policy.md")


def _vllm_ascend(tree: Path) -> dict[str, Any]:
    """vllm-ascend's parser is vLLM's (the plugin adds no flag), of the vLLM it is released against: this process
    must import that one (a second run of the script, its wheel first on the path)."""
    version = next((line.split(":", 1)[1].strip() for line in (tree / "PKG-INFO").read_text().splitlines()
                    if line.startswith("Version:")), "unknown")
    vllm = _vllm()
    paired = _paired_vllm(tree, version)
    if vllm["version"] != paired:
        raise SystemExit(f"vllm-ascend {version} runs on vLLM {paired}; this process imports vLLM {vllm['version']}")
    return {
        "version": version, "vllm": paired,
        "read": f"vLLM {paired}'s parser object (the plugin adds no flag) + ast of vllm_ascend/ for "
                "--additional-config and envs.py",
        "source": vllm["source"] + "; vllm_ascend/**/*.py additional_config.get(...)",
        "program": vllm["program"],
        "env": sorted(set(vllm["env"]) | set(_ascend_env(tree / "vllm_ascend" / "envs.py"))),
        "flags": vllm["flags"],
        "json_keys": {**vllm["json_keys"],
                      "--additional-config": {
                          "class": "vllm_ascend (ascend_config.py and others) additional_config keys",
                          "keys": _additional_config_keys(tree / "vllm_ascend")}},
    }


class _NoAliases(yaml.SafeDumper):
    """Every flag's entry written out in full (an alias's too), no YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("engine", choices=["vllm", "sglang", "vllm-ascend"], help="the entry to (re)write")
    ap.add_argument("--vllm-ascend", type=Path, help="an unpacked vllm-ascend sdist (engine vllm-ascend)")
    a = ap.parse_args(argv)
    doc = yaml.safe_load(OUT.read_text()) if OUT.exists() else {}
    if a.engine == "vllm":
        doc["vllm"] = _vllm()
    elif a.engine == "sglang":
        doc["sglang"] = _sglang()
    else:
        if a.vllm_ascend is None:
            raise SystemExit("vllm-ascend: give --vllm-ascend TREE (an unpacked sdist)")
        doc["vllm-ascend"] = _vllm_ascend(a.vllm_ascend)
    doc = {k: doc[k] for k in ("vllm", "sglang", "vllm-ascend") if k in doc}
    header = ("# Written by docs/engine_flags_from_wheels.py (its docstring says how to rerun it): each engine's\n"
              "# flags as its own parser builds them, and the keys its JSON-valued flags take. Do not edit.\n")
    OUT.write_text(header + yaml.dump(doc, Dumper=_NoAliases, sort_keys=False, width=120))
    print(f"wrote {OUT} {a.engine}: {doc[a.engine]['version']} ({len(doc[a.engine]['flags'])} flags)")


if __name__ == "__main__":
    main(sys.argv[1:])
