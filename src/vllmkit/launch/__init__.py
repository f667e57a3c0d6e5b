"""launch: builds `vllm serve` argv + env from a plan, exports it, supervises the server."""
