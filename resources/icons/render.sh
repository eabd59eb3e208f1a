#!/usr/bin/env bash
# Renders mantissa.svg to the hicolor PNG sizes desktops look for. Run after editing the SVG;
# the PNGs are committed so that building needs no SVG renderer (librsvg2-bin provides this one).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
for size in 16 22 24 32 48 64 128 256 512; do
    mkdir -p "hicolor/${size}x${size}/apps"
    rsvg-convert -w "$size" -h "$size" mantissa.svg -o "hicolor/${size}x${size}/apps/io.mantissa.Mantissa.png"
done
