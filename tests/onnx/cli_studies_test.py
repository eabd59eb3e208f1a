#!/usr/bin/env python3
"""Precision studies on an imported model, through mantissa-cli: the MLP fixture (mlp.onnx) trains
in mixed-bf16 with the shadow error track and saved states; `numerics --shadow` names the graph's
nodes and parameters; after the model file has moved away, a fork with no changes continues the
run bit for bit (losses and shadow rows) from the database's copy of the model, a fork to fp32
has an exact shadow track, a fork that changes the model's input is refused and leaves no run,
`runs` shows the lineage and a report draws the track's heatmaps.
Usage: cli_studies_test.py MANTISSA_CLI MODELS_DIR WORK_DIR"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

cli, models, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []
QUICK = ["--data", "synthetic", "--set", "data.synthetic_train=512", "--set", "data.synthetic_test=128",
         "--batch-size", "32", "--epochs", "2", "--threads", "1"]


def cli_run(*arguments):
    return subprocess.run([cli, *arguments], capture_output=True, text=True, timeout=300)


def expect(condition, what, result=None):
    if not condition:
        detail = "" if result is None else \
            f"\n  exit {result.returncode}\n  stdout: {result.stdout[-2000:]}\n  stderr: {result.stderr[-3000:]}"
        failures.append(what + detail)


def run_id_of(result):
    return json.loads(result.stdout.splitlines()[-1])["run_id"] if result.returncode == 0 else 0


db = os.path.join(work, "runs.sqlite")


def query(sql, *parameters):
    with sqlite3.connect(db) as connection:
        return connection.execute(sql, parameters).fetchall()


own = os.path.join(work, "mine", "mlp.onnx")
os.makedirs(os.path.dirname(own))
shutil.copyfile(os.path.join(models, "torch", "mlp.onnx"), own)
result = cli_run("train", own, *QUICK, "--precision", "mixed-bf16", "--shadow-every", "4", "--save-state-every", "8",
                 "--db", db)
expect(result.returncode == 0, "train mlp.onnx in mixed-bf16 with the shadow track", result)
parent = run_id_of(result)
shadowed = [row[0] for row in query("SELECT step FROM shadow_steps WHERE run_id = ? ORDER BY step", parent)]
expect(shadowed == [4, 8, 12, 16, 20, 24, 28, 32], f"a shadowed step every 4 steps: {shadowed}")

# The track names the imported graph's nodes and parameters, and bf16 is measurably off fp32.
result = cli_run("numerics", str(parent), "--shadow", "--db", db)
expect(result.returncode == 0, "numerics --shadow", result)
rows = {(line.split()[0], line.split()[1], line.split()[2] if line.split()[1] == "weight_grad" else "")
        for line in result.stdout.splitlines() if line.startswith("/")}
for row in [("/fc1/Gemm", "output", ""), ("/fc1/Gemm", "weight_grad", "fc1.weight"), ("/head/Gemm", "input_grad", ""),
            ("/head/Gemm", "weight_grad", "head.bias")]:
    expect(row in rows, f"numerics --shadow lists {row}", result)
errors = [row[0] for row in query("SELECT error_energy FROM shadow_errors WHERE run_id = ? AND step = 32", parent)]
expect(errors and all(e > 0 for e in errors), "every tensor of the bf16 run differs from fp32 at step 32")

# The model file moves away: forks read the database's copy.
shutil.move(own, os.path.join(work, "elsewhere.onnx"))
result = cli_run("fork", str(parent), "--at", "16", "--name", "unchanged", "--db", db)
expect(result.returncode == 0, "a fork of the imported model with no changes", result)
expect("the stored copy of" in result.stderr, "the fork says it reads the stored copy", result)
unchanged = run_id_of(result)
after = "SELECT step, loss FROM steps WHERE run_id = ? AND step > 16 ORDER BY step"
expect(query(after, unchanged) == query(after, parent) and len(query(after, unchanged)) == 16,
       "the unchanged fork's losses after step 16 are the parent's, bit for bit")
track = "SELECT step, ordinal, layer, kind, tensor, error_energy, dot FROM shadow_errors " \
        "WHERE run_id = ? AND step > 16 ORDER BY step, ordinal"
expect(query(track, unchanged) == query(track, parent) and len(query(track, unchanged)) > 0,
       "and so are its shadow rows")

result = cli_run("fork", str(parent), "--at", "8", "--precision", "fp32", "--name", "fp32-from-8", "--db", db)
expect(result.returncode == 0, "a fork of the imported model to fp32", result)
fp32 = run_id_of(result)
energies = query("SELECT error_energy FROM shadow_errors WHERE run_id = ?", fp32)
expect(energies and all(e[0] == 0 for e in energies), "an fp32 fork's shadow track is exact")
expect(query("SELECT min(step) FROM shadow_steps WHERE run_id = ?", fp32) == [(12,)],
       "its first shadowed step follows the fork step")

before = query("SELECT count(*) FROM runs")
result = cli_run("fork", str(parent), "--at", "8", "--set", "model.input=192", "--set", "data.synthetic_shape=192",
                 "--db", db)
# The imported graph itself refuses another input shape, before the fork's own rule is asked.
expect(result.returncode == 2 and "input 'input' has shape [4, 3, 8, 8]" in result.stderr,
       "a fork that changes the model's input is refused", result)
expect(query("SELECT count(*) FROM runs") == before, "and leaves no run behind")

result = cli_run("runs", "--tree", "--db", db)
lines = result.stdout.splitlines()
expect(result.returncode == 0 and any("\\_ unchanged" in l and f"#{parent} at step 16" in l for l in lines)
       and any("\\_ fp32-from-8" in l and f"#{parent} at step 8" in l for l in lines),
       "runs --tree shows both forks under their parent", result)

report = os.path.join(work, "report.html")
result = cli_run("report", str(parent), "--output", report, "--db", db)
expect(result.returncode == 0, "a report of the shadowed run", result)
html = open(report, encoding="utf-8").read() if os.path.exists(report) else ""
for kind in ["outputs", "input gradients", "weight gradients"]:
    expect(f'alt="Shadow error of the {kind}: ' in html, f"the report draws the {kind}' heatmap")

if failures:
    print("FAILED:\n" + "\n".join(failures))
    sys.exit(1)
print("ok")
