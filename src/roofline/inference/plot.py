"""Charts of an :class:`~roofline.inference.model.Estimate`: a roofline with one point per phase
and batch size (plus a measured profile's point), and intensity and tokens/s against batch size."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from roofline.inference.model import Estimate


def measured_point(result: pd.DataFrame) -> dict[str, float]:
    """A measured profile's program-level point: total FLOPs / total time at total FLOPs / DRAM bytes."""
    flop = result["flop_total"].sum(min_count=1) if "flop_total" in result else np.nan
    time_s = result["duration_s"].sum(min_count=1)
    dram = result["dram_bytes"].sum(min_count=1)
    return {"flop": float(flop), "duration_s": float(time_s), "dram_bytes": float(dram),
            "achieved_flop_per_s": float(flop / time_s) if time_s else np.nan,
            "intensity_flop_per_byte": float(flop / dram) if dram else np.nan}


def plot_estimate(est: Estimate, out_dir: Path, measured: pd.DataFrame | None = None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    hw, ph = est.hw, est.phases
    fig, ax = plt.subplots(figsize=(8, 5.5))
    x = np.logspace(-1, 5, 200)
    ax.plot(x, np.minimum(hw.tensor_flop_per_s, x * hw.hbm_bytes_per_s), color="black", lw=1.5,
            label=f"roof: {hw.tensor_flop_per_s / 1e12:.0f} TFLOP/s, HBM {hw.hbm_bytes_per_s / 1e12:.2f} TB/s")
    ax.axvline(hw.ridge_flop_per_byte, color="grey", ls=":", lw=1)
    for phase, marker in (("prefill", "s"), ("decode", "o")):
        rows = ph[ph["phase"] == phase]
        achieved = rows["flop"] / rows["step_time_s"]
        ax.scatter(rows["intensity_flop_per_byte"], achieved, marker=marker, s=50, zorder=3, label=f"{phase} (model)")
        for _, r in rows.assign(achieved=achieved).iterrows():
            ax.annotate(f"b={r['batch']}", (r["intensity_flop_per_byte"], r["achieved"]), textcoords="offset points",
                        xytext=(4, 4), fontsize=8)
    if measured is not None:
        pt = measured_point(measured)
        if np.isfinite(pt["intensity_flop_per_byte"]) and np.isfinite(pt["achieved_flop_per_s"]):
            ax.scatter([pt["intensity_flop_per_byte"]], [pt["achieved_flop_per_s"]], marker="*", s=160, color="red",
                       zorder=4, label="measured profile")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte, HBM)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(f"{est.model.name} on {hw.name}: prompt {est.prompt}, generate {est.generate}, "
                 f"W{est.prec.weight_bits}A{est.prec.act_bits}KV{est.prec.kv_bits}, TP {est.tp}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    roof = out_dir / "llm-roofline.png"
    fig.savefig(roof, dpi=120, bbox_inches="tight")
    plt.close(fig)

    sc = est.scaling
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(sc["batch"], sc["decode_intensity_flop_per_byte"], "o-", label="decode")
    a1.axhline(hw.ridge_flop_per_byte, color="grey", ls=":", label=f"ridge {hw.ridge_flop_per_byte:.0f}")
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.set_xlabel("batch size")
    a1.set_ylabel("intensity (FLOP/byte)")
    a1.legend(fontsize=8)
    a2.plot(sc["batch"], sc["decode_tokens_per_s"], "o-", label="decode tokens/s")
    a2.set_xscale("log", base=2)
    a2.set_xlabel("batch size")
    a2.set_ylabel("tokens/s (at the roof)")
    a2.legend(fontsize=8)
    fig.suptitle(f"{est.model.name} on {hw.name}: batch scaling", fontsize=10)
    scaling = out_dir / "llm-batch-scaling.png"
    fig.savefig(scaling, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [roof, scaling]
