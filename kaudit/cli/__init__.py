"""The command-line interface: parse, call a core, render, exit."""
