"""kvtui: a KV-cache-aware LLM serving control plane you can watch and step through."""

__version__ = "0.1.0"
