"""mtpsim: predict LLM decode speed with multi-token-prediction speculative decoding."""
