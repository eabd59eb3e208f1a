#!/usr/bin/env python3
"""The README and docs/ are for users: they name no issue of this project and say nothing of
how the work was organised, and every `mantissa-cli COMMAND` they quote exists.

usage: check_docs.py SOURCE_DIR MANTISSA_CLI
Fails naming the file, the line and the fix."""
import pathlib
import re
import subprocess
import sys

source, cli = pathlib.Path(sys.argv[1]), sys.argv[2]
files = [source / "README.md", source / "CHANGELOG.md"] + sorted((source / "docs").glob("*.md"))

# Another project's issue is cited with the project's name ("PyTorch issue 119131",
# "microxcaling issue 4"); a bare "issue 17" can only be this project's own tracker.
OWN_ISSUE = re.compile(r"(?<![\w/#.-])(?<!" + r")(?<!".join(
    [p + " " for p in ["PyTorch", "pytorch", "microxcaling", "torchao", "vllm", "vLLM", "marin", "verl", "torchtitan",
                       "DeepSpeed", "oneDNN", "GitHub"]]) + r")\b[Ii]ssues? #?\d+")
PROCESS = re.compile(r"\b(?:this|that|earlier|previous|next|later|each|every|no|one) sessions?\b|"
                     r"\b(?:first|second|third|fourth|fifth|\w+th) session\b|\bthrowaway build\b|"
                     r"\bthe brief\b|\bthe (?:helper|agent)s?\b", re.IGNORECASE)
COMMAND = re.compile(r"mantissa-cli ([a-z][a-z-]*)")

problems = []
commands = {}
for path in files:
    if not path.exists():
        continue
    in_changelog = path.name == "CHANGELOG.md"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.relative_to(source)}:{number}"
        if OWN_ISSUE.search(line):
            problems.append(f"{where}: names an issue of this project ({OWN_ISSUE.search(line).group(0)!r}); "
                            "say what the feature does, or cite another project's issue with its name")
        if PROCESS.search(line):
            problems.append(f"{where}: speaks of how the work was organised ({PROCESS.search(line).group(0)!r}); "
                            "state what the product does now")
        if not in_changelog:
            for command in COMMAND.findall(line):
                commands.setdefault(command, where)

for command, where in sorted(commands.items()):
    result = subprocess.run([cli, command, "--help"], capture_output=True, text=True)
    if result.returncode != 0:
        problems.append(f"{where}: quotes `mantissa-cli {command}`, but `mantissa-cli {command} --help` exits "
                        f"{result.returncode}: {(result.stderr or result.stdout).strip()[:200]}")

print(f"checked {len(files)} files and {len(commands)} commands")
for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
