"""Pure maths in integer bytes: no file, network, env or clock access."""
