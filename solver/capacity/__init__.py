"""Capacity planning: cluster-size sweeps (the Pareto front of every combination), the fewest cards for a
load, and plots. `solver.api.sweep` / `solver.api.recommend` are the entry points."""
from solver.capacity.recommend import Option, Recommendation, recommend
from solver.capacity.sweep import COLUMNS, parse_cards, read_table, sweep, write_table

__all__ = ["COLUMNS", "Option", "Recommendation", "parse_cards", "read_table", "recommend", "sweep", "write_table"]
