"""The plan: model + GPU + vLLM version -> parallelism, precision, context, KV capacity, flags."""
