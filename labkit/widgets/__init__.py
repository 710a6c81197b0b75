"""ipywidgets front-ends, the only place ipywidgets is imported (``lk.widgets.Dashboard(trainer)``).

dashboard      ``Dashboard``: start, pause, resume, stop a GRPO run and watch it live
reward_editor  ``RewardEditor``: write a reward, try it on cached completions, swap it into a run
sandbox        a user's reward code run safely: ``compile_reward``, ``evaluate_reward``, ``Bank``
explorers      the core labs' ``KLExplorer`` (a mu slider) and ``AdvantageExplorer``
classic        the classic labs' explorers: value iteration, TD control, prediction, PG
api            the names exported here, for the live labs
"""

from labkit.widgets.api import *
