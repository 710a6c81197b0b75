"""ipywidgets front-ends. The only place ipywidgets is imported."""
from labkit.widgets.api import *
