#!/usr/bin/env python3
"""mantissa-cli train on an ONNX model: the MLP fixture trains as a run (given as MODEL.onnx, and
again from the config `show --config` prints, which names it in model.onnx); bad models and a
model whose input does not match the data exit 2 with the problem named and leave the run
database without a run. Usage: cli_train_test.py MANTISSA_CLI MODELS_DIR WORK_DIR"""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import numpy
import onnx
from onnx import numpy_helper

cli, models, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []
mlp = os.path.join(models, "torch", "mlp.onnx")
small = os.path.join(models, "small")
QUICK = ["--data", "synthetic", "--set", "data.synthetic_train=512", "--set", "data.synthetic_test=128",
         "--batch-size", "32", "--epochs", "2", "--threads", "1"]


def cli_run(*arguments):
    return subprocess.run([cli, *arguments], capture_output=True, text=True, timeout=300)


def expect(condition, what, result=None):
    if not condition:
        detail = "" if result is None else \
            f"\n  exit {result.returncode}\n  stdout: {result.stdout[-2000:]}\n  stderr: {result.stderr[-3000:]}"
        failures.append(what + detail)


def run_count(db):
    if not os.path.exists(db):
        return 0
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


db = os.path.join(work, "runs.sqlite")
# A copy of the fixture, which the test moves away later.
own = os.path.join(work, "mine", "mlp.onnx")
os.makedirs(os.path.dirname(own))
shutil.copyfile(mlp, own)
result = cli_run("train", own, *QUICK, "--db", db)
expect(result.returncode == 0, "train mlp.onnx exits 0", result)
summary = json.loads(result.stdout.splitlines()[-1]) if result.returncode == 0 else {}
expect(summary.get("status") == "finished", "the run finished", result)
expect(summary.get("steps") == 32, "two epochs of 16 steps", result)
expect(summary.get("test_accuracy", 0) > 0.9, "it learns the synthetic problem", result)
run_id = str(summary.get("run_id", ""))
result = cli_run("train", "--preset", "softmax", "--data", "synthetic", "--max-steps", "2", "--limit-train", "256",
                 "--limit-test", "128",
                 "--threads", "1", "--db", db)
expect(result.returncode == 0, "a preset's run beside it", result)
preset_run = str(json.loads(result.stdout.splitlines()[-1]).get("run_id", "")) if result.returncode == 0 else "0"
result = cli_run("runs", "--db", db)
expect("mlp-fp32" in result.stdout, "the run is named after the file", result)

# The stored config names the model; trained again from it, in another precision.
result = cli_run("show", run_id, "--config", "--db", db)
expect(result.returncode == 0, "show --config", result)
config = json.loads(result.stdout) if result.returncode == 0 else {"model": {}}
expect(config["model"].get("onnx") == os.path.abspath(own), "model.onnx is the file's absolute path", result)
expect(config["model"].get("input") == [3, 8, 8] and config["model"].get("classes") == 10,
       "model.input and model.classes are the file's", result)
config_path = os.path.join(work, "mlp-run.json")
with open(config_path, "w") as f:
    json.dump(config, f)
result = cli_run("train", config_path, "--precision", "mixed-bf16", "--db", db)
expect(result.returncode == 0 and '"status":"finished"' in result.stdout.replace(" ", ""),
       "train CONFIG.json with model.onnx, mixed-bf16", result)

# `show` names the model file and the hash of the stored copy.
with open(own, "rb") as f:
    sha256 = hashlib.sha256(f.read()).hexdigest()
result = cli_run("show", run_id, "--db", db)
expect(result.returncode == 0 and f"model:         {os.path.abspath(own)}" in result.stdout, "show: the model file",
       result)
expect(f"model sha256:  {sha256} (stored)" in result.stdout, "show: its SHA-256", result)
with sqlite3.connect(db) as connection:
    expect(connection.execute("SELECT COUNT(*) FROM model_files").fetchone()[0] == 1,
           "two runs of one file store its bytes once")

# The file gone, the run trains again from the stored copy, to the same loss bit for bit.
shutil.rmtree(os.path.dirname(own))
result = cli_run("train", "--from-run", run_id, "--db", db)
expect(result.returncode == 0, "train --from-run after the file was deleted", result)
again = json.loads(result.stdout.splitlines()[-1]) if result.returncode == 0 else {}
expect(again.get("train_loss") == summary.get("train_loss") and again.get("steps") == 32,
       f"the same training: train loss {again.get('train_loss')} vs {summary.get('train_loss')}", result)
expect(f"runs-models/{sha256}.onnx" in result.stderr, "it says where the stored copy was written", result)
result = cli_run("show", str(again.get("run_id", "")), "--db", db)
expect(f"model sha256:  {sha256} (stored)" in result.stdout, "the new run has the same model", result)

# The trained weights go back into the model's graph, read from the stored copy (the file is
# gone): the ONNX checker accepts the file, it holds the fixture's initializers by name and
# shape with the trained values, and it trains as a model again.
exported = os.path.join(work, "trained.onnx")
result = cli_run("export-model", run_id, "-o", exported, "--db", db)
expect(result.returncode == 0 and "6 trained tensors written" in result.stdout, "export-model exits 0", result)
if result.returncode == 0:
    written = onnx.load(exported)
    onnx.checker.check_model(written)
    before = {t.name: numpy_helper.to_array(t) for t in onnx.load(mlp).graph.initializer}
    after = {t.name: numpy_helper.to_array(t) for t in written.graph.initializer}
    expect(before.keys() == after.keys(), "the same initializers by name")
    expect(all(before[n].shape == after[n].shape for n in before), "of the same shapes")
    changed = [n for n in before if not numpy.array_equal(before[n], after[n])]
    expect(len(changed) == len(before), f"every initializer took trained values (changed: {changed})")
    result = cli_run("train", exported, *QUICK, "--db", db)
    expect(result.returncode == 0, "the exported model trains as a run", result)
for what, arguments, message in [
        ("no output file", ["export-model", run_id], "-o OUT.onnx"),
        ("an unknown run", ["export-model", "no-such-run", "-o", os.path.join(work, "never.onnx")], "no run"),
]:
    result = cli_run(*arguments, "--db", db)
    expect(result.returncode == 2 and message in result.stderr, f"export-model, {what}: exit 2 naming '{message}'",
           result)
expect(not os.path.exists(os.path.join(work, "never.onnx")), "nothing written for a refused export")
# A preset's run becomes a new graph, which the checker accepts and which trains as a model.
preset_onnx = os.path.join(work, "softmax.onnx")
result = cli_run("export-model", preset_run, "-o", preset_onnx, "--db", db)
expect(result.returncode == 0 and "a new graph of 2 nodes" in result.stdout, "export-model of a preset's run", result)
if result.returncode == 0:
    onnx.checker.check_model(onnx.load(preset_onnx))
    result = cli_run("train", preset_onnx, *QUICK, "--db", db)
    expect(result.returncode == 0, "the exported preset trains as a model", result)

# The transformer presets export too: the full checker (with shape inference) accepts the
# graphs, and each trains as a model again on the preset's kind of data.
for preset, data in [("vit-tiny", "synthetic"), ("char-gpt", "text")]:
    SHORT = ["--data", data, "--max-steps", "2", "--batch-size", "8", "--limit-train", "64", "--limit-test", "16",
             "--threads", "1"]
    result = cli_run("train", "--preset", preset, *SHORT, "--db", db)
    expect(result.returncode == 0, f"a {preset} run", result)
    if result.returncode != 0:
        continue
    run = str(json.loads(result.stdout.splitlines()[-1])["run_id"])
    written = os.path.join(work, preset + ".onnx")
    result = cli_run("export-model", run, "-o", written, "--db", db)
    expect(result.returncode == 0 and "into a new graph" in result.stdout, f"export-model of {preset}", result)
    if result.returncode != 0:
        continue
    onnx.checker.check_model(onnx.load(written), full_check=True)
    result = cli_run("train", written, *SHORT, "--db", db)
    expect(result.returncode == 0, f"the exported {preset} trains as a model", result)

# A model carrying its own loss (SoftmaxCrossEntropyLoss, mean) trains with it: the same
# training, bit for bit, as its twin whose output is the logits.
LOSS_RUN = ["--data", "synthetic", "--max-steps", "20", "--threads", "1", "--seed", "5"]
with_loss = cli_run("train", os.path.join(small, "with_loss.onnx"), *LOSS_RUN, "--db", db)
without_loss = cli_run("train", os.path.join(small, "without_loss.onnx"), *LOSS_RUN, "--db", db)
expect(with_loss.returncode == 0 and without_loss.returncode == 0, "the model with its own loss trains", with_loss)
if with_loss.returncode == 0 and without_loss.returncode == 0:
    a = json.loads(with_loss.stdout.splitlines()[-1])
    b = json.loads(without_loss.stdout.splitlines()[-1])
    expect(a["train_loss"] == b["train_loss"] and a["test_accuracy"] == b["test_accuracy"],
           f"with its loss as without: train loss {a['train_loss']} vs {b['train_loss']}")

# Regression: a PyTorch MLP with two outputs, trained on a table of three features and two real
# targets (data.task regression, two target columns); the run reports its test RMSE, which falls
# well below the targets' spread.
import torch
torch.manual_seed(3)
regressor = torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
regressor_path = os.path.join(work, "regressor.onnx")
torch.onnx.export(regressor.train(), torch.randn(1, 3), regressor_path, opset_version=17, input_names=["features"],
                  output_names=["predictions"], dynamic_axes={"features": {0: "batch"}},
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
generator = numpy.random.default_rng(7)
table_rows = generator.uniform(-2, 2, size=(600, 3))
targets = numpy.stack([2 * table_rows[:, 0] - table_rows[:, 1] + 0.5, table_rows[:, 1] * table_rows[:, 2]], axis=1)
regression_table = os.path.join(work, "two_targets.csv")
with open(regression_table, "w") as f:
    f.write("a,b,c,y1,y2\n")
    for features, target in zip(table_rows, targets):
        f.write(",".join(f"{v:.6f}" for v in (*features, *target)) + "\n")
REGRESSION = ["--data", regression_table, "--task", "regression", "--set", "data.targets=2", "--epochs", "30",
              "--batch-size", "32", "--threads", "1", "--set", "optimizer.type=adam", "--set", "optimizer.lr=0.01"]
spread = float(numpy.sqrt(numpy.mean((targets - targets.mean(axis=0)) ** 2)))
for precision in ("fp32", "mixed-bf16"):
    result = cli_run("train", regressor_path, *REGRESSION, "--precision", precision, "--db", db)
    expect(result.returncode == 0, f"the regressor trains in {precision}", result)
    if result.returncode != 0:
        continue
    trained = json.loads(result.stdout.splitlines()[-1])
    rmse = trained.get("test_rmse")
    expect(rmse is not None and rmse < 0.25 * spread,
           f"{precision}: test RMSE {rmse} well below the targets' spread {spread:.3f}", result)
    expect("test RMSE" in result.stderr, f"{precision}: each epoch prints its test RMSE", result)
    shown = cli_run("show", str(trained.get("run_id", "")), "--config", "--db", db)
    shown_config = json.loads(shown.stdout) if shown.returncode == 0 else {"model": {}, "data": {}}
    expect(shown_config["model"].get("classes") == 2 and shown_config["data"].get("task") == "regression",
           "the run stores two outputs and the regression task", shown)

# Bad input: exit 2, the problem named, no run stored.
table = os.path.join(work, "five_features.csv")
with open(table, "w") as f:
    f.write("a,b,c,d,e,label\n")
    for i in range(64):
        f.write(f"{i},{i + 1},{i + 2},{i + 3},{i + 4},{i % 2}\n")
not_onnx = os.path.join(work, "not_a_model.onnx")
with open(not_onnx, "w") as f:
    f.write("this is not a model\n")
cases = [
    ("not ONNX", [not_onnx, *QUICK], "not an ONNX model"),
    ("NaN in an initializer", [os.path.join(small, "nan.onnx"), *QUICK], "holds NaN"),
    ("an unsupported node", [os.path.join(small, "unsupported.onnx"), *QUICK], "node 'selu_node': Selu"),
    ("a dynamic dimension", [os.path.join(small, "dynamic.onnx"), *QUICK], "--input-shape"),
    ("an input shape that does not fit", [mlp, "--input-shape", "1x28x28", *QUICK], "does not fit the input shape"),
    ("data of another shape", [mlp, "--data", table, "--threads", "1"], "[3, 8, 8]"),
    ("a missing file", [os.path.join(work, "absent.onnx"), *QUICK], "absent.onnx"),
    ("a summed loss", [os.path.join(small, "summed_loss.onnx"), *QUICK], "reduction 'sum'"),
    ("its own loss on regression data", [os.path.join(small, "with_loss.onnx"), *QUICK, "--task", "regression"],
     "is a classification loss"),
]
for what, arguments, message in cases:
    bad_db = os.path.join(work, "bad.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(bad_db + suffix):
            os.remove(bad_db + suffix)
    result = cli_run("train", *arguments, "--db", bad_db)
    expect(result.returncode == 2, f"{what}: exit 2", result)
    expect(message in result.stderr and "mantissa-cli train:" in result.stderr, f"{what}: names '{message}'", result)
    expect("Traceback" not in result.stderr and "terminate" not in result.stderr, f"{what}: no crash", result)
    expect(run_count(bad_db) == 0, f"{what}: no run stored", result)
# The data case names the data's shape too.
result = cli_run("train", mlp, "--data", table, "--threads", "1", "--db", os.path.join(work, "bad2.sqlite"))
expect("[5]" in result.stderr, "the data's shape is named", result)

for failure in failures:
    print("FAIL:", failure)
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
