"""The LLM side of kagent: an OpenAI-compatible client, prompts, answer parsing, repair.

The modules are listed in this folder's README.md; the records and seams it meets (ChatModel,
Completion, Plan, Proposer) are in `kernel_agent/seams.py`.
"""
