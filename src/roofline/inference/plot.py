"""Charts of an :class:`~roofline.inference.model.Estimate`: a roofline with one point per phase
and batch size (plus a measured profile's program point and per-op points), and intensity and
tokens/s against batch size.

Artists carry a ``gid`` (``roof``, ``ridge``, ``model:prefill``, ``model:decode``,
``measured:program``, ``measured:ops``) so tests read the drawn points back, as in report/png.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import matplotlib

matplotlib.use("Agg")  # no display on clusters; must precede pyplot (as report/png.py)
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from roofline.analysis.aggregate import aggregate


class Estimate(Protocol):
    """What the charts read of an :class:`~roofline.inference.model.Estimate` (structural: the model module
    imports this one to draw itself, so this one names the fields instead of importing the class)."""

    model: Any
    hw: Any
    prec: Any
    prompt: int
    generate: int
    tp: int
    phases: pd.DataFrame
    scaling: pd.DataFrame


def measured_point(result: pd.DataFrame) -> dict[str, Any]:
    """A measured profile's program-level point, by the project's own rule (``aggregate(by="program")``):
    total FLOPs / total GPU time at total FLOPs / total DRAM bytes.

    Kernels whose FLOPs the profile does not give (trace kernels launched outside the capture
    window, ops without a FLOP model) still count in the time, so FLOP/s is then a lower bound;
    ``unknown_flop_s`` is their time and ``note`` says so.
    """
    prog = aggregate(result.assign(source_file="measured"), by="program")
    row = prog.sort_values("duration_s", ascending=False).iloc[0]  # one device in a profile of one model
    flop, time_s, dram = float(row["flop_total"]), float(row["duration_s"]), float(row["dram_bytes"])
    dur = pd.to_numeric(result["duration_s"], errors="coerce")
    unknown = pd.to_numeric(result["flop_total"], errors="coerce").isna() & (dur > 0)
    return {"flop": flop, "duration_s": time_s, "dram_bytes": dram, "kernel_count": int(row["kernel_count"]),
            "unknown_flop_kernels": int(unknown.sum()), "unknown_flop_s": float(dur[unknown].sum()),
            "achieved_flop_per_s": flop / time_s if time_s > 0 else float("nan"),
            "intensity_flop_per_byte": flop / dram if dram > 0 else float("nan"),
            "note": str(row.get("analysis_note") or "")}


def measured_ops(result: pd.DataFrame) -> pd.DataFrame:
    """The profile's per-op (per-kernel) points that can be drawn: finite DRAM intensity and FLOP/s > 0."""
    if "intensity_dram_flop_per_byte" not in result or "achieved_flop_per_s" not in result:
        return pd.DataFrame(columns=["intensity_flop_per_byte", "achieved_flop_per_s"])
    x = pd.to_numeric(result["intensity_dram_flop_per_byte"], errors="coerce")
    y = pd.to_numeric(result["achieved_flop_per_s"], errors="coerce")
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return pd.DataFrame({"intensity_flop_per_byte": x[ok], "achieved_flop_per_s": y[ok]})


def plot_estimate(est: Estimate | Sequence[Estimate], out_dir: Path,
                  measured: pd.DataFrame | None = None) -> list[Path]:
    """Write llm-roofline.png and llm-batch-scaling.png into ``out_dir`` (several estimates: one per prompt)."""
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    figures = ((roofline_figure(est, measured), "llm-roofline.png"), (scaling_figure(est), "llm-batch-scaling.png"))
    for fig, name in figures:
        paths.append(out_dir / name)
        fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    return paths


def _listed(est: Estimate | Sequence[Estimate]) -> list[Estimate]:
    return list(est) if isinstance(est, Sequence) else [est]


def roofline_figure(est: Estimate | Sequence[Estimate], measured: pd.DataFrame | None = None) -> Figure:
    """The spec roofs, one point per phase, batch size (and prompt length), and a measured profile's points."""
    import matplotlib.pyplot as plt

    ests = _listed(est)
    est, hw = ests[0], ests[0].hw  # one model and GPU: the estimates differ in prompt length only
    ph = pd.concat([e.phases for e in ests], ignore_index=True)
    several = len(ests) > 1
    fig, ax = plt.subplots(figsize=(8, 5.5))
    ops = measured_ops(measured) if measured is not None else measured_ops(pd.DataFrame())
    # the roof spans every point: a measured profile's elementwise ops sit near 0.1 FLOP/byte
    lo = min([0.1, *ph["intensity_flop_per_byte"].dropna() / 2, *ops["intensity_flop_per_byte"] / 2])
    x = np.logspace(np.log10(lo), 5, 200)
    ax.plot(x, np.minimum(hw.tensor_flop_per_s, x * hw.hbm_bytes_per_s), color="black", lw=1.5, gid="roof",
            label=f"roof: {hw.tensor_flop_per_s / 1e12:.0f} TFLOP/s, HBM {hw.hbm_bytes_per_s / 1e12:.2f} TB/s (spec)")
    ax.axvline(hw.ridge_flop_per_byte, color="grey", ls=":", lw=1, gid="ridge")
    for phase, marker in (("prefill", "s"), ("decode", "o")):
        rows = ph[ph["phase"] == phase]
        achieved = rows["flop"] / rows["step_time_s"]
        ax.scatter(rows["intensity_flop_per_byte"], achieved, marker=marker, s=50, zorder=3,
                   label=f"{phase} (model)", gid=f"model:{phase}")
        for i, (b, p, xi, yi) in enumerate(zip(rows["batch"], rows["prompt"], rows["intensity_flop_per_byte"],
                                                achieved, strict=True)):
            # alternate above/below: prefill points crowd together on the flat roof
            ax.annotate(f"b={b}" + (f" P={p}" if several else ""), (xi, yi), textcoords="offset points",
                        xytext=(4, 5 if i % 2 == 0 else -12), fontsize=8)
    if measured is not None:
        if len(ops):
            ax.scatter(ops["intensity_flop_per_byte"], ops["achieved_flop_per_s"], s=6, color="tab:red", alpha=0.3,
                       zorder=2, label=f"measured ops ({len(ops)})", gid="measured:ops")
        pt = measured_point(measured)
        if np.isfinite(pt["intensity_flop_per_byte"]) and np.isfinite(pt["achieved_flop_per_s"]):
            ax.scatter([pt["intensity_flop_per_byte"]], [pt["achieved_flop_per_s"]], marker="*", s=160,
                       color="red", zorder=4, label="measured profile (program)", gid="measured:program")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte, HBM)")
    ax.set_ylabel("FLOP/s")
    prompts = ",".join(str(e.prompt) for e in ests)
    ax.set_title(f"{est.model.name} on {hw.name}: prompt {prompts}, generate {est.generate}, "
                 f"W{est.prec.weight_bits}A{est.prec.act_bits}KV{est.prec.kv_bits}, TP {est.tp}", fontsize=9,
                 parse_math=False)  # a config path may hold "$"
    ax.legend(fontsize=8, loc="lower right")
    return fig


def scaling_figure(est: Estimate | Sequence[Estimate]) -> Figure:
    """Decode intensity (with the ridge) and decode tokens/s against batch size, a line per prompt length."""
    import matplotlib.pyplot as plt

    ests = _listed(est)
    est, hw = ests[0], ests[0].hw
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for e in ests:
        sc = e.scaling
        a1.plot(sc["batch"], sc["decode_intensity_flop_per_byte"], "o-", label=f"decode, prompt {e.prompt}",
                gid=f"scaling:intensity:{e.prompt}")
        a2.plot(sc["batch"], sc["decode_tokens_per_s"], "o-", label=f"decode tokens/s, prompt {e.prompt}",
                gid=f"scaling:tokens:{e.prompt}")
    a1.axhline(hw.ridge_flop_per_byte, color="grey", ls=":", label=f"ridge {hw.ridge_flop_per_byte:.0f}")
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.set_xlabel("batch size")
    a1.set_ylabel("intensity (FLOP/byte)")
    a1.legend(fontsize=8)
    a2.set_xscale("log", base=2)
    a2.set_xlabel("batch size")
    a2.set_ylabel("tokens/s (at the roof)")
    a2.legend(fontsize=8)
    fig.suptitle(f"{est.model.name} on {hw.name}: batch scaling", fontsize=10, parse_math=False)
    return fig
