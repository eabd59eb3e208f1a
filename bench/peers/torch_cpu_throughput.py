#!/usr/bin/env python3
"""PyTorch reference for bench/engine_throughput on the CPU: the same preset models, the
preset's batch and optimizer, on random inputs of the preset's shape (integer token ids over
the vocabulary for a language model, labels [B, T]), timing training steps only, in fp32 and in
bf16 through torch.autocast("cpu", dtype=torch.bfloat16).

    /usr/bin/python3 bench/peers/torch_cpu_throughput.py --threads 2 --steps 60 \
        --models mlp,cnn,vgg-small,resnet-small

PyTorch is run at its best on this machine, or the ratio flatters Mantissa. The script sets
that up itself and re-executes under it:
- Debian's OpenMP build of OpenBLAS (LD_LIBRARY_PATH=/usr/lib/<arch>/openblas-openmp), which
  shares one thread pool with PyTorch's OpenMP; the pthreads build fights it for the cores.
- GLIBC_TUNABLES raising malloc's mmap and trim thresholds, so that large tensors are reused
  rather than mapped and unmapped every step.
- OPENBLAS_CORETYPE=SkylakeX where OpenBLAS 0.3.21 does not know the CPU and falls back to
  its SSE3 "Prescott" kernels on an AVX-512 machine (seen on Intel Xeons, ~32 GFLOP/s); an
  OPENBLAS_CORETYPE inherited from the environment is dropped on an AVX-512 machine, where
  OpenBLAS's own detection picks the best kernels it has.
The OpenBLAS core in use is printed. Debian's python3-torch is the reference (scripts/setup
installs it; MANTISSA_SETUP_PEERS=1 adds libopenblas0-openmp)."""
import argparse
import ctypes
import os
import pathlib
import sys
import sysconfig
import time

ARCH = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
OPENBLAS_DIR = f"/usr/lib/{ARCH}/openblas-openmp"
TUNABLES = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=17179869184"
# OpenBLAS cores that have no AVX2 kernels: on a CPU with AVX-512 they mean a failed detection.
FALLBACK_CORES = {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai", "coppermine"}


def openblas_core(env):
    """The kernel set OpenBLAS picks under `env` (OPENBLAS_CORETYPE honoured)."""
    saved = os.environ.get("OPENBLAS_CORETYPE")
    if "OPENBLAS_CORETYPE" in env:
        os.environ["OPENBLAS_CORETYPE"] = env["OPENBLAS_CORETYPE"]
    try:
        lib = ctypes.CDLL(str(pathlib.Path(OPENBLAS_DIR) / "libopenblas.so.0"))
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except OSError:
        return "unknown (no OpenMP OpenBLAS)"
    finally:
        if saved is None:
            os.environ.pop("OPENBLAS_CORETYPE", None)
        else:
            os.environ["OPENBLAS_CORETYPE"] = saved


def cpu_has_avx512():
    try:
        return " avx512f" in pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def ensure_best_environment():
    """Re-executes this script with PyTorch's best settings unless they are already in place."""
    if os.environ.get("MANTISSA_PEER_ENV") == "1":
        return
    env = dict(os.environ)
    env["MANTISSA_PEER_ENV"] = "1"
    env["LD_LIBRARY_PATH"] = OPENBLAS_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["GLIBC_TUNABLES"] = TUNABLES
    if cpu_has_avx512():
        # The peer at its best: OpenBLAS's own detection, not a core type inherited from a
        # shell profile (a machine of this project's kind sets Haswell, AVX2 kernels, on a CPU
        # whose detected core is Cooperlake), and SkylakeX where detection fails. Detection runs
        # in a child so that this process's OpenBLAS is not loaded yet.
        inherited = env.pop("OPENBLAS_CORETYPE", None)
        core = openblas_core(env).lower()
        if core in FALLBACK_CORES:
            env["OPENBLAS_CORETYPE"] = "SkylakeX"
        elif inherited:
            print(f"peer: OPENBLAS_CORETYPE={inherited} from the environment ignored; OpenBLAS detects {core}",
                  file=sys.stderr)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def measure(preset, batch, warmup, steps, bf16):
    import torch
    import torch.nn as nn

    from preset_models import build_model, build_optimizer, is_language_model

    torch.manual_seed(42)
    model, _ = build_model(preset)
    optimizer = build_optimizer(preset, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    classes = preset["model"]["classes"]
    if is_language_model(preset):
        # Token ids in, one target per token out; the loss averages over all B*T tokens, as
        # the engine's token-level cross-entropy does.
        tokens = preset["model"]["input"][0]
        x = torch.randint(0, classes, (batch, tokens))
        y = torch.randint(0, classes, (batch, tokens))
    else:
        x = torch.randn(batch, *preset["model"]["input"])
        y = torch.randint(0, classes, (batch,))

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
            loss = loss_fn(logits.reshape(-1, classes).float(), y.reshape(-1))
        loss.backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return batch * steps / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--modes", default="fp32,bf16-autocast")
    args = parser.parse_args()
    ensure_best_environment()

    import torch

    from preset_models import load_preset

    torch.set_num_threads(args.threads)
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; OpenBLAS core {openblas_core(os.environ)}"
          f" (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}), GLIBC_TUNABLES set, "
          f"LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH')}")
    print("| model | batch | precision | samples/s |")
    print("| --- | --- | --- | --- |")
    for name in args.models.split(","):
        preset = load_preset(name)
        batch = preset.get("training", {}).get("batch_size", 128)
        for mode in args.modes.split(","):
            if mode not in ("fp32", "bf16-autocast"):
                raise SystemExit(f"unknown mode {mode!r}; expected fp32 or bf16-autocast")
            rate = measure(preset, batch, args.warmup, args.steps, mode == "bf16-autocast")
            print(f"| {name} | {batch} | {mode} | {rate:.1f} |", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    main()
