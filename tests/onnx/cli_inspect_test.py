#!/usr/bin/env python3
"""mantissa-cli inspect on the test models: the node table and totals for a good model, exit
status 2 and the import's message for bad ones. Usage: cli_inspect_test.py MANTISSA_CLI MODELS_DIR"""
import os
import subprocess
import sys

cli, models = sys.argv[1], sys.argv[2]
failures = []


def inspect(*arguments):
    return subprocess.run([cli, "inspect", *arguments], capture_output=True, text=True, timeout=120)


def expect(condition, what, result):
    if not condition:
        failures.append(f"{what}\n  exit {result.returncode}\n  stdout: {result.stdout[-2000:]}\n  stderr: {result.stderr}")


mlp = os.path.join(models, "torch", "mlp.onnx")
result = inspect(mlp)
expect(result.returncode == 0, "inspect mlp.onnx exits 0", result)
lines = result.stdout.splitlines()
gemm_rows = [line for line in lines if " Gemm " in line]
expect(len(gemm_rows) == 3, "three Gemm rows", result)
# fc1: 192 inputs to 64 outputs: 12352 parameters, 2 * 192 * 64 = 24.576 k FLOPs per sample.
expect(any("/fc1/Gemm" in row and "4x64" in row and "12352" in row and "24.576 k" in row for row in gemm_rows),
       "fc1's row: output shape, parameters, FLOPs", result)
expect("6 nodes, 6 parameter tensors, 14762 parameters, 29.312 k FLOPs per sample" in result.stdout, "totals", result)
expect("NO" not in result.stdout.split(), "every node supported", result)

# --precision: each node's precision under the mode, and the alignment its GEMMs' format wants
# (fc1 192 -> 64, fc2 64 -> 32, head 32 -> 10, a batch of 4).
def rows_of(result, node):
    """The table's row of `node` (its third column), in a list; empty when there is none."""
    return [line for line in result.stdout.splitlines() if len(line.split()) > 2 and line.split()[2] == node]


result = inspect(mlp, "--precision", "mixed-bf16")
expect(result.returncode == 0, "--precision mixed-bf16 exits 0", result)
expect(all(" bf16 " in row for row in rows_of(result, "/fc1/Gemm") + rows_of(result, "/head/Gemm")),
       "the GEMMs compute in bf16", result)
expect("fp16/bf16 GEMMs want every extent a multiple of 8" in result.stdout, "the 16-bit rule", result)
expect("node /head/Gemm (Gemm), fp16/bf16: out features = 10 is not a multiple of 8" in result.stdout,
       "the head's 10 outputs named", result)
expect("/fc1/Gemm (Gemm)" not in result.stdout and "/fc2/Gemm (Gemm)" not in result.stdout,
       "the aligned GEMMs are not named", result)
expect("batch size 4 is not a multiple of 8" in result.stdout, "the batch named", result)

result = inspect(mlp, "--precision", "mxfp8")
expect(result.returncode == 0 and any(" mxfp8 GEMM " in row for row in rows_of(result, "/fc2/Gemm")),
       "mxfp8 quantises the GEMMs", result)
expect("mxfp8 GEMMs want the widths their blocks run along (K) a multiple of 32" in result.stdout,
       "MX's block of 32 along K", result)
expect("node /head/Gemm (Gemm), mxfp8: out features = 10 is not a multiple of 32" in result.stdout
       and "partial" in result.stdout, "the head's 10 outputs leave a partial block", result)
expect("batch size" not in result.stdout, "no batch advice where no GEMM follows the 16-bit rule", result)

result = inspect(mlp, "--precision", "fp8-hybrid")
expect(result.returncode == 0 and "fp8-hybrid GEMMs want every extent a multiple of 16" in result.stdout,
       "per-tensor FP8: FP8 tensor cores' 16", result)
expect("node /head/Gemm (Gemm), fp8-hybrid: out features = 10 is not a multiple of 16" in result.stdout,
       "the head named under FP8", result)

# NVFP4 keeps its first and last GEMMs in bf16: fc2 follows NVFP4's blocks of 16, the head bf16's 8.
result = inspect(mlp, "--precision", "nvfp4")
expect(result.returncode == 0 and "nvfp4 GEMMs want the widths their blocks run along (K) a multiple of 16"
       in result.stdout and "fp16/bf16 GEMMs want every extent a multiple of 8" in result.stdout,
       "nvfp4 and the kept GEMMs' rules", result)
expect("node /head/Gemm (Gemm), fp16/bf16: out features = 10" in result.stdout, "the kept head under bf16's rule",
       result)

result = inspect(mlp, "--precision", "fp32")
expect(result.returncode == 0 and "every GEMM computes in fp32" in result.stdout and
       any(" fp32 " in row for row in rows_of(result, "/fc1/Gemm")), "fp32: the column, and no advice", result)
result = inspect(mlp, "--precision", "fp7")
expect(result.returncode == 2 and "--precision is \"fp7\"" in result.stderr, "an unknown mode", result)

small = os.path.join(models, "small")
result = inspect(os.path.join(small, "unsupported.onnx"))
expect(result.returncode == 2, "an unsupported operator exits 2", result)
expect("node 'selu_node': Selu" in result.stderr and "node 'softplus_node': Softplus" in result.stderr,
       "every unsupported node on stderr", result)
expect("supported operators:" in result.stderr, "the supported list", result)
expect(any(" Selu " in line and line.rstrip().endswith("NO") for line in result.stdout.splitlines()),
       "the table marks the unsupported node", result)

result = inspect(os.path.join(small, "dynamic.onnx"))
expect(result.returncode == 2 and "--input-shape" in result.stderr, "a dynamic dimension asks for --input-shape",
       result)
result = inspect(os.path.join(small, "dynamic.onnx"), "--input-shape", "8", "--batch", "3")
expect(result.returncode == 0 and "input input: 3x8 float32" in result.stdout, "--input-shape and --batch", result)
result = inspect(os.path.join(small, "fixed.onnx"), "--input-shape", "9")
expect(result.returncode == 2 and "does not fit the input shape 9" in result.stderr, "a shape that does not fit",
       result)

for name, message in [("not_onnx.onnx", "not an ONNX model"), ("opset18.onnx", "opset 18 is newer than 17"),
                      ("nan.onnx", "initializer 'w' holds NaN"), ("no_parameters.onnx", "no float parameters"),
                      ("external_missing.onnx", "which is missing"), ("absent.onnx", "no such file")]:
    result = inspect(os.path.join(small, name))
    expect(result.returncode == 2 and message in result.stderr and "mantissa-cli inspect:" in result.stderr,
           f"{name}: exit 2 with '{message}'", result)
result = inspect(mlp, "--input-shape", "3xx8")
expect(result.returncode == 2 and "expected positive integers" in result.stderr, "a malformed --input-shape", result)
result = inspect()
expect(result.returncode == 2, "no model: exit 2", result)

for failure in failures:
    print("FAILED:", failure)
print(f"cli_inspect_test: {len(failures)} failures")
sys.exit(1 if failures else 0)
