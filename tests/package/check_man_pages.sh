#!/usr/bin/env bash
# The man pages render without groff warnings and document what the programs offer: every
# command `mantissa-cli --help` lists and every option `mantissa --help` lists.
#   check_man_pages.sh MANTISSA_CLI MANTISSA MAN_DIR
set -euo pipefail
cli=$1 gui=$2 man_dir=$3
status=0
for page in "$man_dir"/mantissa.1 "$man_dir"/mantissa-cli.1; do
    warnings=$(groff -man -ww -z "$page" 2>&1 || true)
    if [[ -n $warnings ]]; then
        echo "$page: groff warns:"
        echo "$warnings"
        status=1
    fi
done
# The commands are the indented words that start the lines of the "commands:" block.
mapfile -t commands < <("$cli" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
((${#commands[@]} > 5)) || { echo "could not read the commands from $cli --help"; exit 1; }
for command in "${commands[@]}"; do
    # Hyphens are escaped in man source: sweep-worker is written sweep\-worker or sweep-worker.
    pattern="^\.B ${command//-/\\\\?-}\$"
    if ! grep -Eq "$pattern" "$man_dir/mantissa-cli.1"; then
        echo "mantissa-cli.1 does not document the command $command"
        status=1
    fi
done
mapfile -t options < <(QT_QPA_PLATFORM=offscreen "$gui" --help | grep -oE '^ +(-[a-z], )?--[a-z-]+' | grep -oE -- '--[a-z-]+' | sort -u)
((${#options[@]} > 3)) || { echo "could not read the options from $gui --help"; exit 1; }
for option in "${options[@]}"; do
    escaped=${option//-/\\\\-}
    if ! grep -Eq -- "$escaped([^a-z-]|\$)" "$man_dir/mantissa.1"; then
        echo "mantissa.1 does not document the option $option"
        status=1
    fi
done
echo "checked ${#commands[@]} commands and ${#options[@]} options"
exit $status
