"""ipywidgets front-ends, the only place ipywidgets is imported (``lk.widgets.Dashboard(trainer)``).

dashboard      ``Dashboard``: start, pause, resume, stop a GRPO run and watch it live
live           ``LiveFigure``: the dashboard's one figure, redrawn from a run log
reward_editor  ``RewardEditor``: write a reward, try it on cached completions, swap it into a run
code_editor    ``CodeEditor``: CodeMirror 6 with Python (an anywidget; bundle in static/)
sandbox        a user's reward code run safely: ``compile_reward``, ``evaluate_reward``, ``Bank``
tables         HTML tables of completions (the dashboard's group, the editor's best and worst)
frontend       JupyterLab, Colab or VS Code: Colab's widget manager, static figures as fallback
explorers      the core labs' ``KLExplorer`` (a mu slider) and ``AdvantageExplorer``
classic        the classic labs' explorers: value iteration, TD control, prediction, PG
api            the names exported here, for the live labs
"""

from labkit.widgets.api import *
