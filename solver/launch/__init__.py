"""Engine launch commands: a parallel_config spelled as one engine's argv, environment and config files,
from the profile's `launch` section (solver.specs.launch_spec). The emitter decides nothing: the profile
says how each knob is spelled, the planner chose the knobs."""
from solver.launch.emit import HEAD_ADDR, MODEL_PATH, LaunchInputs, emit_launch, model_len
from solver.launch.shell import render_shell

__all__ = ["HEAD_ADDR", "MODEL_PATH", "LaunchInputs", "emit_launch", "model_len", "render_shell"]
