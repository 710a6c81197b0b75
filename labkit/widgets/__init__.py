"""ipywidgets front-ends. The only place ipywidgets is imported."""
