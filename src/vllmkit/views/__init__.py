"""How each command's result looks to people: one module per command, each a `render(console, data)`.
Part of the output room (with output.py): the only code that prints; commands never print."""
