"""``roofline llm``: the analytical inference roofline from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pandas as pd

from roofline.errors import RooflineError
from roofline.inference.model import Estimate, sweep


def _positive_list(what: str):  # type: ignore[no-untyped-def]
    def parse(_ctx: click.Context, _param: click.Parameter, value: str) -> list[int]:
        try:
            out = [int(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise click.BadParameter(f"a comma-separated list of {what}, got {value!r}") from None
        if not out or min(out) < 1:
            raise click.BadParameter(f"{what} must be positive integers")
        return sorted(set(out))  # one row per value in every table

    return parse


@click.command("llm")
@click.option("--model", required=True, help="Built-in model (llama-3-8b, mixtral-8x7b, ...) or a config.json path.")
@click.option("--gpu", required=True, help="GPU from the spec table (h100-sxm, a100 sxm, ...; see `roofline devices`).")
@click.option("--batch", "batches", default="1", callback=_positive_list("batch sizes"), show_default=True,
              help="Batch sizes, e.g. 1,8,32.")
@click.option("--prompt", "prompts", default="512", callback=_positive_list("prompt lengths"), show_default=True,
              help="Prompt tokens; a list (512,2048,8192) gives the sequence-length scaling.")
@click.option("--generate", type=click.IntRange(min=1), default=128, show_default=True, help="Generated tokens.")
@click.option("--weight-bits", type=click.Choice(["4", "8", "16", "32"]), default="16", show_default=True)
@click.option("--act-bits", type=click.Choice(["8", "16", "32"]), default="16", show_default=True)
@click.option("--kv-bits", type=click.Choice(["4", "8", "16", "32"]), default="16", show_default=True)
@click.option("--no-flash", is_flag=True, help="Unfused attention: the score matrix goes to memory.")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor-parallel GPUs.")
@click.option("--link-gbps", type=click.FloatRange(min=0, min_open=True), default=None,
              help="GPU-to-GPU bandwidth per GPU (GB/s) for the all-reduce time under --tp.")
@click.option("--measured", type=click.Path(exists=True, path_type=Path), default=None,
              help="A torch trace or ncu report of the same model: its achieved points and the gap to the model "
                   "(compared with the prefill of the first --batch and --prompt: match them to the profile).")
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Write llm-roofline.png, llm-batch-scaling.png and the tables as CSV here.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def llm(model: str, gpu: str, batches: list[int], prompts: list[int], generate: int, weight_bits: str, act_bits: str,
        kv_bits: str, no_flash: bool, tp: int, link_gbps: float | None, measured: Path | None, out_dir: Path | None,
        fmt: str) -> None:
    """Analytical roofline of LLM inference: prefill and decode per layer op, per batch size and prompt length."""
    ests = sweep(model, gpu, batches, prompts, generate, weight_bits=int(weight_bits), act_bits=int(act_bits),
                 kv_bits=int(kv_bits), flash=not no_flash, tp=tp, link_gbps=link_gbps)
    est = ests[0]
    result = None
    gap = None
    if measured is not None:
        from roofline.pipeline import run

        analysis = run([measured])
        if analysis.failures:  # the one input failed: its typed error, one line (exit 1)
            first = analysis.failures[0]
            raise first.error if isinstance(first.error, RooflineError) else RooflineError(first.message)
        result = analysis.frame
        gap = est.gap(result)
    paths: list[Path] = []
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for attr in ("ops", "phases", "scaling"):
            _concat(ests, attr).to_csv(out_dir / f"llm-{attr}.csv", index=False)
        from roofline.inference.plot import plot_estimate

        paths = plot_estimate(ests, out_dir, result)
    if fmt == "json":
        click.echo(json.dumps(_json(ests, gap), default=float))
        return
    click.echo(_summary(ests))
    if gap is not None and measured is not None:
        click.echo(_gap_text(gap, measured))
    for p in paths:
        click.echo(f"wrote {p}")


def _concat(ests: list[Estimate], attr: str) -> pd.DataFrame:
    return pd.concat([getattr(e, attr) for e in ests], ignore_index=True)


def _json(ests: list[Estimate], gap: dict[str, Any] | None) -> dict[str, Any]:
    est, hw = ests[0], ests[0].hw
    return {"model": est.model.name, "gpu": hw.name,
            # the first (or only) prompt's crossover; "crossover" has one record per prompt
            "crossover_batch": est.crossover_batch, "crossover_note": est.crossover_note,
            "crossover": [{"prompt": e.prompt, "crossover_batch": e.crossover_batch, "note": e.crossover_note}
                          for e in ests],
            "weights_only_crossover_batch": est.weights_only_crossover_batch,
            "weight_bytes": est.weight_bytes, "params": est.model.params, "active_params": est.model.active_params,
            "notes": est.notes[:1] + [n for e in ests for n in e.notes[1:]],  # the roofs once, then per prompt
            "peaks": {"tensor_flop_per_s": hw.tensor_flop_per_s, "tensor_source": hw.tensor_source,
                      "vector_flop_per_s": hw.vector_flop_per_s, "vector_source": hw.vector_source,
                      "hbm_bytes_per_s": hw.hbm_bytes_per_s, "hbm_source": hw.hbm_source,
                      "ridge_flop_per_byte": hw.ridge_flop_per_byte},
            "phases": _concat(ests, "phases").to_dict("records"),
            "scaling": _concat(ests, "scaling").to_dict("records"),
            "measured": gap}


def _summary(ests: list[Estimate]) -> str:
    est = ests[0]
    m, hw = est.model, est.hw
    lines = [f"{m.name}: {m.params / 1e9:.2f} B parameters ({m.active_params / 1e9:.2f} B active per token), "
             f"weights {est.weight_bytes / 1e9:.2f} GB per GPU at {est.prec.weight_bits}-bit; {hw.name}, "
             f"ridge {hw.ridge_flop_per_byte:.0f} FLOP/byte",
             f"  roofs: {est.notes[0].removeprefix('roofs: ')}"]
    for e in ests:
        lines.append(f"prompt {e.prompt}, generate {e.generate}:")
        lines += [f"  {n}" for n in e.notes[1:]]
        sc = e.scaling
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
        lines.append(f"decode crossover: {e.crossover_note}; weights alone would put it at batch "
                     f"{e.weights_only_crossover_batch}")
    return "\n".join(lines)


def _gap_text(pt: dict[str, Any], path: Path) -> str:
    unknown = (f" ({pt['unknown_flop_s'] * 1e3:.2f} ms of it in {pt['unknown_flop_kernels']} kernels with no FLOP "
               "count: FLOPs and FLOP/s are lower bounds)" if pt["unknown_flop_kernels"] else "")
    lines = [f"measured {path.name}: {pt['duration_s'] * 1e3:.3f} ms of GPU time{unknown}, "
             f"{pt['flop'] / 1e12:.3f} TFLOP, {pt['achieved_flop_per_s'] / 1e12:.2f} TFLOP/s at "
             f"{pt['intensity_flop_per_byte']:.1f} FLOP/byte",
             f"model prefill at batch {pt['model_batch']}, prompt {pt['model_prompt']}: "
             f"{pt['model_flop'] / 1e12:.3f} TFLOP, {pt['model_time_at_roof_s'] * 1e3:.3f} ms at the roof; "
             f"measured / model: time {pt['time_ratio']:.2f}x, FLOPs {pt['flop_ratio']:.3f}"]
    if not 0.9 <= pt["flop_ratio"] <= 1.1:
        lines.append("  the profile's FLOPs differ from the model's by more than 10%: match --batch and --prompt to "
                     "the profiled workload (the ratio of times compares different work otherwise)")
    return "\n".join(lines)
