"""Resuming training where it stopped: `kdist.BackupAndRestore`, the Keras callback.

Rooms: `backup_and_restore` (the callback: when to save, what to put back, how a resumed
epoch skips what was trained), `store` (the backup directory: one writer per file, the
commit, reading shards back), `snapshot` (what a backup records of the model's variables
and of the job, and whether a backup fits this job), `host_state` (Python's and NumPy's
random states).

Imports: the leaves, `_start` (should_stop, barrier), `_keras` (Keras itself, through
`import_keras`: the callback is a Keras class). Nothing imports this wing but the lazy
name table of kdist/__init__.py, so `import kdist` never loads it (nor Keras).
"""
