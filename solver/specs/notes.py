"""What reading the inputs noted: the one list every answer carries (solve, sweep, recommend, estimate, memory,
calibrate), so that none of them drops a note another shows. The model's warnings (a family read by convention,
a config field not read), the precision's notes (weights kept in the checkpoint's format), and, where figures
are timed, a device of a vendor no calibration row measured (its efficiencies are its file's, several of them
assumptions)."""
from __future__ import annotations

from solver.specs.fitted import calibrated_vendors
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.precision import Precision


def device_notes(hw: Hardware, prec: Precision, timed: bool = True) -> list[str]:
    """The notes of one device: the precision's, and (`timed`) whether calibration rows measured its vendor."""
    out = list(prec.notes)
    vendors = calibrated_vendors()
    if timed and vendors and hw.vendor not in vendors:
        who = f"{hw.vendor} device" if hw.vendor else "device of this vendor"
        out.append(f"the calibration rows measured no {who}: the figures on {hw.name} use its file's "
                   f"efficiencies (its sources say which are assumptions) and the grouped-GEMM fraction fitted "
                   f"on {', '.join(vendors)} devices")
    return out


def input_notes(model: ModelSpec, hw: Hardware, prec: Precision, timed: bool = True) -> tuple[str, ...]:
    """The model's warnings and the device's notes, in that order."""
    return (*model.warnings, *device_notes(hw, prec, timed))
