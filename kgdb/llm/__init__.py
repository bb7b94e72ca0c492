"""LLM access, only through the OpenAI-compatible API (OpenAI, vLLM, Ollama...)."""

from kgdb.llm.client import ChatClient, LlmSettings, LlmUsage, OutputParseError

__all__ = ["ChatClient", "LlmSettings", "LlmUsage", "OutputParseError"]
