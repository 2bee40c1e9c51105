"""scripts/gpu-check's summary: summary.txt from summary.json's fields, and the verdict."""
from __future__ import annotations

import gpu_check_inference
import gpu_check_kernels
import gpu_check_learning
import gpu_check_unpadded


def text_summary(summary: dict) -> str:
    gpu = summary["gpu"]
    lines = [f"gpu-check {summary['finished']} ({summary['layout']}: {summary['root']}), {summary['seconds']:.0f} s",
             ("device     " + f"{gpu['name']} × {gpu['count']}, driver {gpu['driver']} (CUDA {gpu['driver_cuda_version']})"
              if gpu["available"] and "name" in gpu else f"device     none: {gpu['reason']}"),
             f"tests      {summary['tests']['passed']} passed, {summary['tests']['failed']} failed, "
             f"{summary['tests']['skipped']} skipped" + (" (LOOM_REQUIRE_GPU=1)" if summary["require_gpu"] else "")]
    if summary.get("budget") is not None or summary.get("order") != list(summary["parts"]):
        left_out = [name for name, part in summary["parts"].items() if str(part.get("reason", "")).startswith(
            ("--budget", "not in --parts"))]
        lines.append(f"budget     {summary['budget'] or 'none'}" + (" s" if summary.get("budget") else "")
                     + f", parts in the order {','.join(summary['order'])}"
                     + (f"; left out: {', '.join(left_out)}" if left_out else ""))
    for name, part in summary["parts"].items():
        if name in ("benchmarks", "attention_bench", "inference", "kernel_profile", "learning"):
            continue
        counts = [k for k in ("passed", "failed", "skipped") if part.get(k) is not None]
        shown = counts if any(part[k] for k in counts) else []
        detail = ", ".join(f"{k} {part[k]}" for k in shown + (["errors"] if part.get("errors") is not None else []))
        reason = part.get("reason") or part.get("refusal") or part.get("note") or ""
        lines.append(f"{name:<14} {part['status']}" + (f" ({detail})" if detail else "") + (f": {reason}" if reason else ""))
    bench = summary["parts"]["benchmarks"]
    lines.append(f"{'benchmarks':<14} {bench['status']}" + (f": {bench['reason']}" if bench.get("reason") else ""))
    for row in bench.get("workloads", []):
        if row["status"] != "passed":
            lines.append(f"  {row['workload']}: {row['status']}: {row.get('reason', '')}")
            continue
        torch = row.get("pytorch_sequences_per_second")
        memory = row.get("loom_peak_device_memory_bytes")
        torch_memory = row.get("pytorch_peak_memory_bytes")
        syncs = row.get("loom_synchronizations_per_step")
        lines.append(f"  {row['workload']}: loom {row['loom_sequences_per_second']:.1f} seq/s"
                     + (f", pytorch {torch:.1f} seq/s, ratio {row['ratio']:.2f}" if torch else ", pytorch not measured")
                     + (f", peak {memory / 2**30:.2f} GiB" if memory else "")
                     + (f" (pytorch {torch_memory / 2**30:.2f} GiB)" if memory and torch_memory else "")
                     + (f", {syncs:g} synchronisations/step" if syncs is not None else ""))
    attention = summary["parts"].get("attention_bench")
    if attention is not None:
        lines.append(f"{'attention_bench':<14} {attention['status']}"
                     + (f": {attention['reason']}" if attention.get("reason") else ""))
        for row in attention.get("shapes", []):
            lines.append(attention_line(row))
    if summary["parts"].get("inference") is not None:
        lines += gpu_check_inference.summary_lines(summary["parts"]["inference"])
    lines += gpu_check_unpadded.summary_lines(summary["parts"].get("unpadded", {}))
    if summary["parts"].get("kernel_profile") is not None:
        lines += gpu_check_kernels.summary_lines(summary["parts"]["kernel_profile"])
    learning = summary["parts"].get("learning")
    if learning is not None:
        lines += gpu_check_learning.summary_lines(learning)
    lines.append("result     " + ("OK" if summary["ok"] else "NOT OK"))
    return "\n".join(lines) + "\n"


def verdict(parts: dict, required: bool) -> bool:
    """True when every part passed. memcheck and races may be unavailable (no toolkit) or refused
    by the machine: reported as such, not a failure (stopped at their limit with no error so far,
    they have passed). A part skipped because the command line asked is no failure either; one skipped for
    want of a GPU only when no GPU is required (--allow-no-gpu)."""
    acceptable = {"passed", "not_available", "refused", "not_built"} | ({"skipped"} if not required else set())
    return all(part["status"] in acceptable or part.get("requested", False) for part in parts.values())


def attention_line(row: dict) -> str:
    """One shape of the attention benchmark for summary.txt."""
    def side(prefix):
        total = row.get(f"{prefix}_ms_forward_backward")
        if total is None:
            return f"{prefix} not measured ({row.get(prefix + '_unavailable')})"
        return f"{prefix} {total:.3f} ms (fwd {row[prefix + '_ms_forward']:.3f}, bwd {row[prefix + '_ms_backward']:.3f})"
    ratio, speedup = row.get("ratio"), row.get("tensor_core_speedup")
    return (f"  attention {row['shape']} (batch {row['batch']}, heads {row['heads']}, seq {row['seq']}, d "
            f"{row['head_dim']}, {row['dtype']}, dropout {row['dropout']:g}, key padding): {side('loom')}, "
            f"{side('pytorch')}" + (f", ratio {ratio:.2f}" if ratio is not None else "")
            + (f"; CUDA-core kernels {row['loom_cuda_core_ms_forward_backward']:.3f} ms, Tensor-Core speedup "
               f"{speedup:.2f}" if speedup is not None else ""))
