# cmax workload: a small decoder-only transformer trained data-parallel with
# torch.distributed, for the `workload` suite (benchmarks/workload/). Run by
# `cmax-bench workload`, one process per GPU (or one per CPU-only node), with
# the env:// variables MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK and
# WORLD_SIZE. Not started through torchrun (Debian's torch 1.13 with Python
# 3.11 fails in torch.distributed.elastic).
#
# Output: one JSON object a line on stdout.
#   {"header": {...}}  python, torch_version, device, backend, params, ...
#   {"comm_enter": K}  before step K's gradient all-reduce (the suite tells
#                      a rank that waits in the all-reduce from one that
#                      stopped before it)
#   {"step": K, "loss": ..., "step_time_s": ..., "compute_s": ...,
#    "tokens_per_s": ..., "optimizer_s": ..., "comm_s": ..., "peak_mem_bytes": ...}
#   {"error": "...", "step": K, "rank": R}  and exit 3 on a NaN/Inf loss
#   {"done": true}
#
# Data parallel with replicated data: every replica draws the SAME synthetic
# batch (seeded by the step), so with identical parameters every replica's
# own loss is identical, bit for bit on CPU with deterministic gloo. The
# loss logged is the replica's own (not an all-reduced mean, which would be
# equal everywhere by construction and hide a replica that departs). The work
# per replica (forward, backward, the all-reduce of every gradient) is that
# of ordinary data parallelism; only the batch contents are shared.
#
# Gradients are all-reduced after backward in one flat bucket (what DDP does,
# without overlapping it with backward), so the communication time is its
# own figure (comm_s).
#
# TEST-ONLY: --fault-perturb-rank R adds 1e-3 to rank R's final LayerNorm weight
# after step --fault-step's update, so that replica's loss departs from the
# others'. --fault-nan-step K makes step K's loss NaN. cmax-bench passes
# them only when it was given its own TEST-ONLY flags.
import argparse
import datetime
import json
import math
import os
import sys
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(description="cmax workload: data-parallel transformer training")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8, help="sequences per replica per step")
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--timeout", type=float, default=300, help="seconds one collective may take")
    p.add_argument("--fault-perturb-rank", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--fault-step", type=int, default=2, help=argparse.SUPPRESS)
    p.add_argument("--fault-nan-step", type=int, default=-1, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.width % a.heads != 0:
        p.error("--width must be a multiple of --heads")
    for name in ("layers", "width", "heads", "seq", "batch", "vocab", "steps"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be >= 1")
    if a.warmup_steps < 0 or a.warmup_steps >= a.steps:
        p.error("--warmup-steps must be >= 0 and below --steps")
    return a


def cpu_model():
    """The CPU's model name (x86: "model name"; Arm: implementer and part),
    so that a loss curve says which CPU computed it."""
    import platform
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    if fields.get("model name"):
        return fields["model name"]
    if fields.get("CPU part"):
        return (f"{platform.machine()} implementer {fields.get('CPU implementer', '?')} "
                f"part {fields['CPU part']}")
    return platform.machine()


def main(argv):
    a = parse_args(argv)
    # cuBLAS needs this for deterministic GEMMs (CUDA docs, "Results
    # reproducibility"); set before CUDA initialises.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    try:
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as e:
        emit({"error": f"no torch: {e}", "no_torch": True, "python": sys.version.split()[0]})
        return 2

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if a.device == "auto":
        use_cuda = torch.cuda.is_available()
    else:
        use_cuda = a.device == "cuda"
    if use_cuda and not torch.cuda.is_available():
        emit({"error": "torch has no CUDA here", "no_cuda": True,
              "python": sys.version.split()[0], "torch_version": torch.__version__})
        return 2
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(a.seed)

    backend = "nccl" if use_cuda else "gloo"
    if world > 1:
        dist.init_process_group(backend=backend, init_method="env://", rank=rank,
                                world_size=world,
                                timeout=datetime.timedelta(seconds=a.timeout))

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.out = nn.Linear(4 * d, d)

        def forward(self, x, mask):
            b, s, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (t.view(b, s, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.h))
            att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, s, d)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(a.vocab, a.width)
            self.pos = nn.Embedding(a.seq, a.width)
            self.blocks = nn.ModuleList(Block(a.width, a.heads) for _ in range(a.layers))
            self.ln = nn.LayerNorm(a.width)
            self.head = nn.Linear(a.width, a.vocab, bias=False)
            self.register_buffer("mask", torch.triu(torch.ones(a.seq, a.seq, dtype=torch.bool),
                                                    diagonal=1), persistent=False)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            for blk in self.blocks:
                x = blk(x, self.mask)
            return self.head(self.ln(x))

    model = Decoder().to(device)  # same seed: identical on every replica
    params = sum(p.numel() for p in model.parameters())
    embedding = model.tok.weight.numel() + model.pos.weight.numel()
    # Training FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B):
    # 6N for the weight matmuls forward and backward, N the parameters that
    # take part in matmuls (not the embedding lookups), plus 12*L*H*Q*T for
    # self-attention, H*Q = width and T = sequence length.
    flops_per_token = 6 * (params - embedding) + 12 * a.layers * a.width * a.seq
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)

    emit({"header": {
        "python": sys.version.split()[0], "torch_version": torch.__version__,
        "device": torch.cuda.get_device_name(device) if use_cuda else "cpu",
        "backend": backend if world > 1 else "none", "params": params,
        "flops_per_token": flops_per_token, "world_size": world, "rank": rank,
        "local_rank": local_rank, "dtype": "bf16" if use_cuda else "fp32",
        "threads": torch.get_num_threads(), "layers": a.layers, "width": a.width,
        "heads": a.heads, "seq": a.seq, "batch": a.batch, "steps": a.steps,
        "warmup_steps": a.warmup_steps, "cpu_model": cpu_model(),
        # What fixes the loss at each step (a baseline's curve is compared
        # only with a run whose model string is the same).
        "model": f"layers={a.layers} width={a.width} heads={a.heads} seq={a.seq} "
                 f"batch={a.batch} vocab={a.vocab} seed={a.seed} lr={a.lr}"}})

    tokens_per_step = a.batch * a.seq
    for step in range(a.steps):
        if use_cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        # The same batch on every replica: seeded by the step alone.
        g = torch.Generator().manual_seed(a.seed * 100003 + step)
        data = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=g).to(device)
        x, y = data[:, :-1], data[:, 1:]
        with torch.autocast(device_type="cuda" if use_cuda else "cpu", dtype=torch.bfloat16,
                            enabled=use_cuda):
            logits = model(x)
            loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), y.reshape(-1))
        if step == a.fault_nan_step:  # TEST-ONLY: a loss that is not finite
            loss = loss * float("nan")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        lv = float(loss.item())
        if not math.isfinite(lv):
            emit({"error": f"loss is {lv} at step {step} on rank {rank}", "step": step,
                  "rank": rank, "loss": str(lv)})
            return 3
        comm_s = None
        if world > 1:
            emit({"comm_enter": step})
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            flat = torch.cat([t.reshape(-1) for t in grads])
            if use_cuda:
                torch.cuda.synchronize()
            c0 = time.perf_counter()
            dist.all_reduce(flat)
            if use_cuda:
                torch.cuda.synchronize()
            comm_s = time.perf_counter() - c0
            flat.div_(world)
            off = 0
            for t in grads:
                n = t.numel()
                t.copy_(flat[off:off + n].view_as(t))
                off += n
        o0 = time.perf_counter()
        opt.step()
        if use_cuda:
            torch.cuda.synchronize()
        optimizer_s = time.perf_counter() - o0
        if rank == a.fault_perturb_rank and step == a.fault_step:
            with torch.no_grad():
                model.ln.weight.add_(1e-3)
        step_time = time.perf_counter() - t0
        if use_cuda:
            peak = torch.cuda.max_memory_allocated(device)
        else:
            peak = None
            try:
                import resource
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            except Exception:
                pass
        # Time outside the all-reduce: in synchronous data parallelism every
        # rank leaves the all-reduce together, so step times agree; a slow
        # rank shows in its own compute, the others' wait in their comm_s.
        compute_s = step_time - (comm_s or 0.0)
        emit({"step": step, "loss": lv, "loss_hex": float.hex(lv), "step_time_s": step_time,
              "compute_s": compute_s,
              "tokens_per_s": tokens_per_step / step_time, "optimizer_s": optimizer_s,
              "comm_s": comm_s, "peak_mem_bytes": peak, "time_unix": time.time()})
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    emit({"done": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
