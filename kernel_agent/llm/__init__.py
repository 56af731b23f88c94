"""The LLM side of kagent: an OpenAI-compatible client, prompt templates, answer parsing, repair.

Modules: settings (where the LLM is: arguments, environment, config file; credentials), client (chat
calls with retries, deadlines and a token budget), reply (a reply body checked field by field),
deadline (a blocking call abandoned at a deadline), prompts (the Jinja2 templates), context (what
fills them), answers (an answer made a kernel file), proposer (the LLM inside `kagent optimize`: it
carries out the planner's rewrite and repair plans). The records and seams it meets (ChatModel,
Completion, Plan, Proposer) are in `kernel_agent/seams.py`; compile errors become rules in the one
knowledge base (`optimize/knowledge.py`).
"""
