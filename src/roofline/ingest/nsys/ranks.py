"""The distributed rank of each process of an nsys export, from what the export records, with its source.

An export records no rank as such. It does record, in order of trust:

1. NVTX ranges the program opened around its work naming a rank (``rank 3``, ``Rank_3``, ``rank=3``):
   when every launch of a process that is inside NVTX ranges is inside one naming the same number,
   that is the process's rank;
2. the environment and command line of the profiled command (``META_DATA_CAPTURE``:
   ``PROCESS_0:ENVIRONMENT_VARIABLE`` ``PMI_RANK="0"``, ``PROCESS_0:ARGUMENT_i`` ``--rank 0``) and of the
   profiler (``TARGET_INFO_SYSTEM_ENV`` ``DeviceEnvironment``): the launcher's rank variables
   (:data:`RANK_VARIABLES`) of ``mpirun/srun nsys profile app`` (one report per rank). These are the
   profiled command's own, so they are used only for a single GPU process whose name is that command
   (under ``torchrun`` the ranks are the children's, which the export does not keep).

Anything else (several GPU processes and no NVTX rank range) leaves ``rank`` NA, and ``rank_source``
says why and which processes there are: ranks are never guessed from pids or device order.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from roofline.schema import UNAVAILABLE

#: launcher variables holding the global rank, most specific first (Open MPI, PMIx, MPICH/Cray PMI,
#: MVAPICH, Slurm, Cray PALS, torch.distributed)
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID",
                  "PALS_RANKID", "RANK")
#: "rank 3", "Rank_3", "rank=3"; not "lora_rank=16" (RE2, Arrow's regex engine: no lookbehind)
NVTX_RANK = r"(?i)(?:^|[^A-Za-z0-9_])rank[\s_#:=-]*(?P<rank>\d+)"
ARG_RANK = re.compile(r"^--(?:global[-_])?rank(?:=(\d+))?$")


def _capture(con: sqlite3.Connection, tables: set[str]) -> tuple[str | None, list[str], dict[str, tuple[str, str]]]:
    """(profiled command, its arguments, rank variables → (value, where)) from the capture metadata."""
    command, args, env = None, [], {}
    if "META_DATA_CAPTURE" in tables:
        argv: dict[int, str] = {}
        for name, value in con.execute("SELECT name, value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_0:%'"):
            key = str(name).split(":", 1)[1]
            if key == "COMMAND":
                command = str(value)
            elif key.startswith("ARGUMENT_") and key[9:].isdigit():
                argv[int(key[9:])] = str(value)
            elif key == "ENVIRONMENT_VARIABLE" and "=" in str(value):
                k, v = str(value).split("=", 1)
                if k in RANK_VARIABLES:
                    env.setdefault(k, (v.strip().strip('"'), "META_DATA_CAPTURE PROCESS_0 environment"))
        args = [argv[i] for i in sorted(argv)]
    if "TARGET_INFO_SYSTEM_ENV" in tables:
        for (value,) in con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'"):
            for item in str(value).split(";"):
                k, _, v = item.partition("=")
                if k in RANK_VARIABLES:
                    env.setdefault(k, (v.strip(), "TARGET_INFO_SYSTEM_ENV DeviceEnvironment (the profiler's)"))
    return command, args, env


def _hostname(con: sqlite3.Connection, tables: set[str]) -> str | None:
    if "TARGET_INFO_SYSTEM_ENV" not in tables:
        return None
    row = con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'").fetchone()
    return None if row is None else str(row[0])


def _from_args(args: list[str]) -> tuple[int, str] | None:
    for i, a in enumerate(args):
        m = ARG_RANK.match(a)
        if m is None:
            continue
        value = m.group(1) if m.group(1) is not None else (args[i + 1] if i + 1 < len(args) else "")
        if value.isdigit():
            return int(value), f"command line `{a}{'' if m.group(1) else ' ' + value}` (META_DATA_CAPTURE PROCESS_0)"
    return None


def ranks(con: sqlite3.Connection, tables: set[str], labels: list[str | None], proc: np.ndarray,
          nvtx: pd.api.extensions.ExtensionArray | None) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Per launch of process ``labels[proc]``: rank (-1: none), the source texts, and an index into them."""
    n = len(proc)
    rank = np.full(n, -1, dtype=np.int64)
    code = np.zeros(n, dtype=np.int64)
    texts: list[str] = []
    gpu = sorted(x for x in labels if x is not None)

    def say(mask: np.ndarray, value: int, text: str) -> None:
        rank[mask] = value
        if text not in texts:
            texts.append(text)
        code[mask] = texts.index(text)

    done = np.zeros(n, dtype=bool)
    arrow = pa.array(nvtx) if nvtx is not None else None
    # the regex only where some range says "rank" at all (one vectorised substring test first)
    if arrow is not None and pc.any(pc.match_substring(arrow, "rank", ignore_case=True)).as_py():
        found = pc.struct_field(pc.extract_regex(arrow, NVTX_RANK), [0])
        value = pd.to_numeric(pd.Series(found.to_pandas()), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        ranged = pc.is_valid(arrow).to_numpy(zero_copy_only=False)
        for i, p in enumerate(labels):
            on = proc == i
            if p is None or not on.any():
                continue
            values = set(value[on & ranged].tolist())
            # every launch of the process inside a range names the same rank: a rank range around its work
            if len(values) == 1 and np.isfinite(v := values.pop()):
                say(on, int(v), f"NVTX range 'rank {int(v)}' around the launches of {p}")
                done |= on
    names_known = np.array([x is not None for x in labels], dtype=bool)[proc] if len(labels) else np.zeros(n, bool)
    if not done.all():
        command, args, env = _capture(con, tables)
        single = len(gpu) == 1 and command is not None and gpu[0].startswith(PurePosixPath(command).name + " (pid")
        left = ~done & names_known
        if single and left.any():
            var = next((k for k in RANK_VARIABLES if k in env and env[k][0].isdigit()), None)
            arg = _from_args(args)
            if var is not None:
                say(left, int(env[var][0]), f"{var}={env[var][0]} in {env[var][1]}")
                done |= left
            elif arg is not None:
                say(left, arg[0], arg[1])
                done |= left
    if not done.all():
        host = _hostname(con, tables)
        where = f" on host {host}" if host else ""
        if len(gpu) > 1:
            why = (f"{UNAVAILABLE}: the export holds {len(gpu)} GPU processes{where} ({', '.join(gpu)}) and records "
                   "no rank for them (their environments are not in the export, no NVTX 'rank N' range); "
                   "group by process (--by process)")
        else:
            why = (f"{UNAVAILABLE}: no rank variable ({', '.join(RANK_VARIABLES)}) or --rank argument of the profiled "
                   f"command and no NVTX 'rank N' range in the export{where}")
        texts.append(why)
        code[~done] = len(texts) - 1
    return rank, texts, code
