#!/usr/bin/env python3
"""A column projection of a Parquet file read by pyarrow, side by side:

  arrow-local    pq.read_table(path, columns=...)              pyarrow's own LocalFileSystem
  nowait-fs      pq.read_table(path, columns=..., filesystem=NowaitFileSystem())
  nowait-parts   fsspec.parquet.open_parquet_file(path, fs=NowaitFileSystem(), columns=...):
                 the projection's byte ranges in one cat_ranges, then pq.read_table on them
  dask-local     dd.read_parquet(dir, columns=...), each column summed (threads), plain paths
  dask-nowait    the same over nowait://dir

cached (the files read once before each set) and uncached (each file's
pages dropped with posix_fadvise(DONTNEED) before each run), in sets whose
order alternates (A B C ... then ... C B A), with the median and range of
the wall time and the bytes each variant read against the bytes the
projection needs (the projected column chunks plus the footer).

Bytes read: nowait's own count (File.stats()["bytes"]) for the nowait
variants, the process's rchar (/proc/self/io) for pyarrow's.

usage: parquet_projection.py DIR [SETS] [ROWS_PER_FILE] [FILES]
  DIR is made and filled once (16 columns: 8 float64, 4 int64, 4 strings);
  the projection is 4 of them (2 float64, 1 int64, 1 string).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import fsspec.parquet
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import nowait
from nowait.fsspec import NowaitFileSystem

COLUMNS = ["f0", "f5", "i2", "s1"]


def make(d: str, rows: int, files: int) -> List[str]:
    os.makedirs(d, exist_ok=True)
    paths = []
    for k in range(files):
        p = os.path.join(d, f"part-{k}.parquet")
        paths.append(p)
        if os.path.exists(p):
            continue
        rng = np.random.default_rng(k)
        cols: Dict[str, Any] = {}
        for i in range(8):
            cols[f"f{i}"] = rng.random(rows)
        for i in range(4):
            cols[f"i{i}"] = rng.integers(0, 1 << 40, rows)
        words = np.array([f"word-{j:06d}" for j in range(50_000)])
        for i in range(4):
            cols[f"s{i}"] = pa.array(words[rng.integers(0, len(words), rows)])
        pq.write_table(pa.table(cols), p + ".tmp", row_group_size=rows // 4)
        os.rename(p + ".tmp", p)
    return paths


def needed(paths: List[str]) -> int:
    """The bytes a projection must read: its column chunks and the footer."""
    total = 0
    for p in paths:
        md = pq.ParquetFile(p).metadata
        for rg in range(md.num_row_groups):
            for c in range(md.num_columns):
                col = md.row_group(rg).column(c)
                if col.path_in_schema in COLUMNS:
                    total += col.total_compressed_size
        # the footer: metadata, its length and the magic
        total += md.serialized_size + 8
    return total


def rchar() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


class Counting(NowaitFileSystem):
    """NowaitFileSystem that sums the bytes its files read."""

    read_bytes = 0

    def _nowait_open(self, path: str) -> nowait.File:
        f = super()._nowait_open(path)
        Counting.opened.append(f)
        return f

    opened: List[nowait.File] = []

    @classmethod
    def take(cls) -> int:
        n = sum(f.stats()["bytes"] for f in cls.opened)
        cls.opened = []
        return n


def arrow_local(paths: List[str]) -> Tuple[int, int]:
    before = rchar()
    n = sum(pq.read_table(p, columns=COLUMNS).num_rows for p in paths)
    return n, rchar() - before


def nowait_fs(paths: List[str]) -> Tuple[int, int]:
    fs = Counting(skip_instance_cache=True)
    n = sum(pq.read_table(p, columns=COLUMNS, filesystem=fs).num_rows for p in paths)
    return n, Counting.take()


def nowait_parts(paths: List[str]) -> Tuple[int, int]:
    fs = Counting(skip_instance_cache=True)
    n = 0
    for p in paths:
        with fsspec.parquet.open_parquet_file(p, fs=fs, columns=COLUMNS, engine="pyarrow") as f:
            n += pq.read_table(f, columns=COLUMNS).num_rows
    return n, Counting.take()


def dask_variant(url: str) -> Callable[[List[str]], Tuple[int, int]]:
    def run(paths: List[str]) -> Tuple[int, int]:
        import dask.dataframe as dd
        before = rchar()
        frame = dd.read_parquet(url, columns=COLUMNS)
        total = frame.f0.sum() + frame.f5.sum() + frame.i2.sum() + frame.s1.str.len().sum()
        n = int(total.compute(scheduler="threads"))
        got = Counting.take() if url.startswith("nowait") else rchar() - before
        return n, got
    return run


def drop(paths: List[str]) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def warm(paths: List[str]) -> None:
    for p in paths:
        with open(p, "rb") as f:
            while f.read(8 << 20):
                pass


def main() -> None:
    d = sys.argv[1]
    sets = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 2_000_000
    files = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    paths = make(d, rows, files)
    fsspec.register_implementation("nowait", Counting, clobber=True)
    need = needed(paths)
    size = sum(os.path.getsize(p) for p in paths)
    variants: Dict[str, Callable[[List[str]], Tuple[int, int]]] = {
        "arrow-local": arrow_local, "nowait-fs": nowait_fs, "nowait-parts": nowait_parts,
        "dask-local": dask_variant(d), "dask-nowait": dask_variant("nowait://" + d)}
    print(f"{files} files, {size / 2**20:.0f} MiB, columns {COLUMNS}: "
          f"the projection needs {need / 2**20:.1f} MiB; load {os.getloadavg()[0]:.1f}")
    for v in variants.values():  # imports and first-use costs, untimed
        v(paths[:1])
    Counting.take()
    for mode in ("cached", "uncached"):
        times: Dict[str, List[float]] = {v: [] for v in variants}
        got: Dict[str, List[int]] = {v: [] for v in variants}
        for s in range(sets):
            order = list(variants) if s % 2 == 0 else list(reversed(list(variants)))
            if mode == "cached":
                warm(paths)
            for v in order:
                if mode == "uncached":
                    drop(paths)
                t = time.perf_counter()
                _, nbytes = variants[v](paths)
                times[v].append(time.perf_counter() - t)
                got[v].append(nbytes)
        base = statistics.median(times["arrow-local"])
        dbase = statistics.median(times["dask-local"])
        print(f"\n{mode}, {sets} sets alternating, load {os.getloadavg()[0]:.1f}")
        print(f"{'variant':14} {'median s':>9} {'range s':>15} {'speed':>6} {'read MiB':>9} "
              f"{'/ needed':>8}")
        for v in variants:
            ref = dbase if v.startswith("dask") else base
            med = statistics.median(times[v])
            b = statistics.median(got[v])
            print(f"{v:14} {med:9.3f} {min(times[v]):7.3f}-{max(times[v]):<7.3f} "
                  f"{ref / med:5.2f}x {b / 2**20:9.1f} {b / need:8.2f}")


if __name__ == "__main__":
    main()
