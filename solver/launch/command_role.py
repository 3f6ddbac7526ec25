"""A disaggregated pool's role read back from a command: the profile's launch.disagg argument whose text is the
`{role}` name (SGLang's --disaggregation-mode, vLLM's and vllm-ascend's --kv-transfer-config kv_role) spells
prefill or decode, through its `map` where it has one (kv_producer / kv_consumer). That argument is the one home
of which value means which phase: the launch prints it, the reader inverts it; nothing here names an engine."""
from __future__ import annotations

from dataclasses import dataclass

from solver.launch.command_reading import Reading, Slot, slot_name, slot_of
from solver.specs.framework import FrameworkProfile
from solver.specs.launch_spec import DISAGG_ROLES, LaunchArg

ROLE_TEXT = "{role}"


def role_args(fw: FrameworkProfile) -> list[LaunchArg]:
    """The profile's arguments that print a pool worker's role (launch.disagg's `{role}` text)."""
    block = fw.launch.disagg if fw.launch else None
    return [a for a in (block.args if block else ()) if a.text == ROLE_TEXT]


def pool_slots(fw: FrameworkProfile) -> set[Slot]:
    """Every slot a pool worker's command adds to the aggregated launch (launch.disagg: its role, the KV transfer,
    the transfer's document flags)."""
    return pool_settings(fw) | pool_document_flags(fw)


def pool_settings(fw: FrameworkProfile) -> set[Slot]:
    """The slots of launch.disagg's arguments: a flag, a variable, a document key."""
    block = fw.launch.disagg if fw.launch else None
    return {s for a in (block.args if block else ()) if (s := slot_of(fw, a)) is not None}


def pool_document_flags(fw: FrameworkProfile) -> set[Slot]:
    """The flags that carry launch.disagg's documents (vLLM's --kv-transfer-config): read through their keys."""
    block = fw.launch.disagg if fw.launch else None
    return {("flag", d.flag) for d in (block.documents.values() if block else ()) if d.flag}


@dataclass(frozen=True)
class PoolRole:
    """The phase a command's role flag names (None: it names none the profile maps), and what was read."""

    role: str | None
    setting: str    # the role's flag (or document key) as the command writes it: `--disaggregation-mode`
    value: str      # its value as given: `decode`, `kv_consumer`
    why: str = ""   # where no phase is read: why

    @property
    def said(self) -> str:
        return f"{self.setting} {self.value}"


def read_role(fw: FrameworkProfile, user: Reading) -> PoolRole | None:
    """The pool role the command's role argument gives (None where it gives no role argument): the value read back
    through the argument's `map` (inverted), else as the role's own name."""
    for arg in role_args(fw):
        slot = slot_of(fw, arg)
        if slot is None or slot not in user.values:
            continue
        given = user.values[slot]
        spelt = arg.map or {r: r for r in DISAGG_ROLES}
        back = {v: k for k, v in spelt.items() if k in DISAGG_ROLES}
        if given in back:
            return PoolRole(back[given], slot_name(slot, fw), given)
        return PoolRole(None, slot_name(slot, fw), given,
                        f"neither pool's ({', '.join(f'{r}: {v}' for v, r in sorted(back.items()))})")
    return None
