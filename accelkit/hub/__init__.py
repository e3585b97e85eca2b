"""A workshop room: the notebooks served to a whole class by JupyterHub, and the room's progress.

``make hub`` starts JupyterHub (:mod:`accelkit.hub.config`) with self sign-up behind a workshop code
(:mod:`accelkit.hub.auth`), one system user per attendee with their own copy of the notebooks
(:mod:`accelkit.hub.accounts`), idle servers culled, and the instructor as the hub's admin. Every
``teach.check`` an attendee runs is recorded (:mod:`accelkit.teach.progress`) and the instructor's
notebook shows the room (:mod:`accelkit.hub.room`). Settings: :mod:`accelkit.hub.settings`.
"""
