"""Training data from kagent's own work: `kagent export` turns runs' trajectories and repair sessions'
transcripts into the datasets TRL reads (SFT, preference pairs, RL prompts), split by task, and
`rewards.py` scores a group of answers the way RL needs it."""
