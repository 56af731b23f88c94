"""The LLM side of kagent: an OpenAI-compatible client, prompt templates, answer parsing, repair.

Modules: config (where the LLM is: arguments, environment, config file; credentials), client (chat
calls with retries, deadlines and a token budget; `ChatModel`, the seam the proposer uses), reply
(a reply body checked field by field), deadline (a blocking call abandoned at a deadline), prompts
(the Jinja2 templates), context (what fills them), answers (an answer made a kernel file), error_rules
(compile errors distilled into "do not ..." rules), proposer (the LLM inside `kagent optimize`).
"""
