"""The LLM side of kagent: an OpenAI-compatible client, prompt templates, answer parsing, repair."""
