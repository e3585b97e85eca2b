"""Developer tools for working on accelkit itself (not used by the notebooks or the package API).

- `accelkit.devtools.nbclean`: keep committed notebooks clean (no execution counts, no stray
  metadata, outputs only in golden cells) and regenerate golden outputs with papermill.
"""
