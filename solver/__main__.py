"""`python -m solver ...` runs the `shardplan` command (the same entry point the installed script calls)."""
from solver.cli.main import main

main(prog_name="shardplan")
