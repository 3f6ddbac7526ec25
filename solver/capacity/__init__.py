"""Capacity planning: cluster-size sweeps (the Pareto front of every combination), the fewest cards for a
load, and plots. `solver.api.sweep` / `solver.api.recommend` are the entry points."""
from solver.capacity.recommend import Option, Recommendation, recommend
from solver.capacity.inputs import parse_cards
from solver.capacity.sweep import sweep
from solver.capacity.table import COLUMNS, read_table, write_table

__all__ = ["COLUMNS", "Option", "Recommendation", "parse_cards", "read_table", "recommend", "sweep", "write_table"]
