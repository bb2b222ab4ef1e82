"""Resuming training where it stopped: `kdist.BackupAndRestore`, the Keras callback, and
`kdist.load_backup`, which reads its backups into a model in any program.

Rooms: `backup_and_restore` (the callback: when to save, what to put back, how a resumed
epoch skips what was trained), `load_backup` (the latest backup's variables into a built
model), `choosing` (which kept backup a restore loads: the newest that reads whole, agreed
by every process), `reading` (a backup's files checked, then its arrays onto a model's own
variables), `checksums` (each file's size and CRC-32), `arrays` (the arrays on Orbax),
`background` (one save at a time in the background), `store` (the backup directory: one
writer per file, the commit, the backups kept), `storage` (the folder checked before the
first step, a failed save named: kdist.BackupStorageError), `snapshot` (what a backup
records of the model's variables and of the job, and whether a backup fits a model),
`host_state` (Python's and NumPy's random states).

Imports: the leaves, `_together` (should_stop, barrier), `_keras` (Keras itself, through
`import_keras`: the callback is a Keras class; `load_backup` imports no Keras). Nothing
imports this wing but the lazy name table of kdist/__init__.py, so `import kdist` never
loads it (nor Keras, nor Orbax).
"""
