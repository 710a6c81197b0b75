"""labkit next to TRL: a callback that writes TRL runs as labkit run logs and maps configs
(``trl_bridge``), and the export of a labkit run to a multi-GPU TRL script (``export``).
"""
