"""labkit next to TRL.

trl_bridge  TRL runs in labkit's run log (``RunLogCallback``); labkit configs as TRL configs
export      ``python -m labkit export-trl``: a GRPO run as a folder to launch on N GPUs
trl_script  the exported ``train_grpo.py``: its template, the rewards' code, model folders
"""
