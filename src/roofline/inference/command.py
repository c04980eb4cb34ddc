"""``roofline llm``: the analytical inference roofline from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from roofline.inference.model import Estimate, estimate


def _batches(_ctx: click.Context, _param: click.Parameter, value: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"a comma-separated list of batch sizes, got {value!r}") from None
    if not out or min(out) < 1:
        raise click.BadParameter("batch sizes must be positive integers")
    return sorted(set(out))  # one row per batch size in every table


@click.command("llm")
@click.option("--model", required=True, help="Built-in model (llama-3-8b, mixtral-8x7b, ...) or a config.json path.")
@click.option("--gpu", required=True, help="GPU from the spec table (h100-sxm, a100 sxm, ...; see `roofline devices`).")
@click.option("--batch", "batches", default="1", callback=_batches, show_default=True, help="Batch sizes, e.g. 1,8,32.")
@click.option("--prompt", type=click.IntRange(min=1), default=512, show_default=True, help="Prompt tokens.")
@click.option("--generate", type=click.IntRange(min=1), default=128, show_default=True, help="Generated tokens.")
@click.option("--weight-bits", type=click.Choice(["4", "8", "16", "32"]), default="16", show_default=True)
@click.option("--act-bits", type=click.Choice(["8", "16", "32"]), default="16", show_default=True)
@click.option("--kv-bits", type=click.Choice(["4", "8", "16", "32"]), default="16", show_default=True)
@click.option("--no-flash", is_flag=True, help="Unfused attention: the score matrix goes to memory.")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor-parallel GPUs.")
@click.option("--link-gbps", type=click.FloatRange(min=0, min_open=True), default=None,
              help="GPU-to-GPU bandwidth per GPU (GB/s) for the all-reduce time under --tp.")
@click.option("--measured", type=click.Path(exists=True, path_type=Path), default=None,
              help="A torch trace or ncu report of the same model: its achieved point and the gap to the model.")
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Write llm-roofline.png, llm-batch-scaling.png and the tables as CSV here.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def llm(model: str, gpu: str, batches: list[int], prompt: int, generate: int, weight_bits: str, act_bits: str,
        kv_bits: str, no_flash: bool, tp: int, link_gbps: float | None, measured: Path | None, out_dir: Path | None,
        fmt: str) -> None:
    """Analytical roofline of LLM inference: prefill and decode per layer op, per batch size."""
    est = estimate(model, gpu, batches, prompt, generate, int(weight_bits), int(act_bits), int(kv_bits),
                   flash=not no_flash, tp=tp, link_gbps=link_gbps)
    result = None
    gap = None
    if measured is not None:
        import roofline
        from roofline.inference.plot import measured_point

        result = roofline.analyze(roofline.read(measured))
        gap = measured_point(result)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        est.ops.to_csv(out_dir / "llm-ops.csv", index=False)
        est.phases.to_csv(out_dir / "llm-phases.csv", index=False)
        est.scaling.to_csv(out_dir / "llm-scaling.csv", index=False)
        paths = est.plot(out_dir, result)
    if fmt == "json":
        click.echo(json.dumps({"model": est.model.name, "gpu": est.hw.name, "crossover_batch": est.crossover_batch,
                               "crossover_note": est.crossover_note,
                               "weights_only_crossover_batch": est.weights_only_crossover_batch,
                               "weight_bytes": est.weight_bytes, "params": est.model.params,
                               "active_params": est.model.active_params, "notes": est.notes,
                               "phases": est.phases.to_dict("records"), "scaling": est.scaling.to_dict("records"),
                               "measured": gap}, default=float))
        return
    click.echo(_summary(est))
    if gap is not None:
        click.echo(_gap_text(est, gap, measured))
    if out_dir is not None:
        for p in paths:
            click.echo(f"wrote {p}")


def _summary(est: Estimate) -> str:
    m, hw = est.model, est.hw
    lines = [f"{m.name}: {m.params / 1e9:.2f} B parameters ({m.active_params / 1e9:.2f} B active per token), "
             f"weights {est.weight_bytes / 1e9:.2f} GB per GPU at {est.prec.weight_bits}-bit; {hw.name}, "
             f"ridge {hw.ridge_flop_per_byte:.0f} FLOP/byte"]
    lines += [f"  {n}" for n in est.notes]
    sc = est.scaling
    table = pd.DataFrame({
        "batch": sc["batch"],
        "TTFT": [f"{v * 1e3:.2f} ms" for v in sc["ttft_s"]],
        "TPOT": [f"{v * 1e3:.3f} ms" for v in sc["tpot_s"]],
        "decode tok/s": [f"{v:,.0f}" for v in sc["decode_tokens_per_s"]],
        "I prefill": [f"{v:.1f}" for v in sc["prefill_intensity_flop_per_byte"]],
        "I decode": [f"{v:.2f}" for v in sc["decode_intensity_flop_per_byte"]],
        "prefill": sc["prefill_bound"], "decode": sc["decode_bound"],
        "request": [f"{v:.3f} s" for v in sc["request_time_s"]],
    })
    lines.append(table.to_string(index=False))
    lines.append(f"decode crossover: {est.crossover_note}; weights alone would put it at batch "
                 f"{est.weights_only_crossover_batch}")
    return "\n".join(lines)


def _gap_text(est: Estimate, pt: dict, path: Path) -> str:
    pre = est.phases[est.phases["phase"] == "prefill"].iloc[0]
    predicted = pre["step_time_s"]
    return (f"measured {path.name}: {pt['duration_s'] * 1e3:.3f} ms of GPU time, "
            f"{pt['achieved_flop_per_s'] / 1e12:.2f} TFLOP/s at {pt['intensity_flop_per_byte']:.1f} FLOP/byte; "
            f"model's prefill at batch {int(pre['batch'])}: {predicted * 1e3:.3f} ms at the roof "
            f"(measured / model = {pt['duration_s'] / predicted:.1f}x)")
