"""What depends on the installed vLLM: version, flags, how to launch it."""
