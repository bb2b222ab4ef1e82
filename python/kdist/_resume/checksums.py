"""The checksums of a backup's files: each file's size and CRC-32, so that a backup whose
files were overwritten, truncated or lost (a bad disk, a partial copy between buckets, a
truncated sync) is never loaded.

Orbax writes the arrays uncompressed (arrays.py) and TensorStore reads raw chunks without
a checksum of their own: a garbled chunk would load as other numbers. Process 0 sums every
file of a backup (Orbax's under `state/` and the host files) once the backup is complete,
before the manifest (which lists the sums) is written; `latest.json` holds the manifest's
own sum. A restore checks them: each process one share of the files (`share`), so that the
job reads each file once more in all, not once per process.

CRC-32 (zlib's) detects accidental damage, which is what it is for; it is no defence
against a file changed on purpose.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Bytes read at a time, into one buffer per file (zlib.crc32 releases the GIL over each):
# small, so that the check adds little to a restore's peak memory (a restore holds only this
# process's share of the model; 8 MiB chunks on two threads took its peak from 3 to 4
# shares in tests/resume/test_restore_sharding.py).
_CHUNK = 1 << 20

Sums = dict[str, list[int]]  # relative path -> [size in bytes, CRC-32]


def of_bytes(data: bytes) -> int:
    return zlib.crc32(data)


def of_file(path: Path) -> list[int]:
    """[size, CRC-32] of one file.

    Raises:
        OSError: it cannot be read.
    """
    crc, size = 0, 0
    buffer = memoryview(bytearray(_CHUNK))
    with open(path, "rb", buffering=0) as stream:
        while read := stream.readinto(buffer):
            crc = zlib.crc32(buffer[:read], crc)
            size += read
    return [size, crc]


def of_files(directory: Path, names: list[str]) -> Sums:
    """[size, CRC-32] of each of `names` (relative to `directory`), and of every file under
    those of them that are folders."""
    sums: Sums = {}
    for name in names:
        path = directory / name
        if path.is_dir():
            for folder, _, files in os.walk(path):
                for file in files:
                    full = Path(folder) / file
                    sums[full.relative_to(directory).as_posix()] = of_file(full)
        else:
            sums[name] = of_file(path)
    return dict(sorted(sums.items()))


def damaged(directory: Path, sums: Mapping[str, list[int]], share: tuple[int, int]) -> list[str]:
    """What is wrong with the files of `directory` in this process's share of `sums`
    (`share`: (index, count): every count-th file from the index-th, in sorted order):
    each missing, shorter or longer, or changed file, in words. Empty: whole."""
    index, count = share
    names = sorted(sums)[index::count]
    # zlib.crc32 releases the GIL: the files are summed on as many threads as cores.
    workers = max(1, min(len(names), os.cpu_count() or 1, 8))
    with ThreadPoolExecutor(workers, thread_name_prefix="kdist-backup-check") as pool:
        found = list(pool.map(lambda name: _problem(directory, name, sums[name]), names))
    return [problem for problem in found if problem is not None]


def _problem(directory: Path, name: str, expected: list[int]) -> str | None:
    """What is wrong with one file (None: it is as written)."""
    size, crc = (int(n) for n in expected)
    try:
        found_size, found_crc = of_file(directory / name)
    except FileNotFoundError:
        return f"{name} is missing"
    except OSError as error:
        return f"{name} cannot be read ({error})"
    if found_size != size:
        return f"{name} has {found_size} bytes, {size} were written"
    if found_crc != crc:
        return f"{name} was changed since it was written (its CRC-32 differs)"
    return None
