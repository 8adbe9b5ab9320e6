#!/usr/bin/env python3
"""Fails (exit 1) when a file under src/<layer>/ includes a header of a layer that is not below it.

The order is the one in CMakeLists.txt and docs/ARCHITECTURE.md; cli/ sits on top of everything. Run by the
build (target check_layers), so a back-edge fails `cmake --build`.
"""
import pathlib
import re
import sys

# Each layer and the layers it may include (its own included); transitive, lowest first.
ORDER = ["core", "model", "hardware", "plan", "cost", "pipeline", "search", "report", "app", "config", "cli"]
BELOW = {
    "core": {"core"},
    "model": {"core", "model"},
    "hardware": {"core", "hardware"},
    "plan": {"core", "model", "hardware", "plan"},
    "cost": {"core", "model", "hardware", "plan", "cost"},
    "pipeline": {"core", "model", "hardware", "plan", "cost", "pipeline"},
    "search": {"core", "model", "hardware", "plan", "cost", "search"},
    "report": {"core", "model", "hardware", "plan", "cost", "pipeline", "search", "report"},
    "app": {"core", "model", "hardware", "plan", "cost", "pipeline", "search", "report", "app"},
    "config": {"core", "model", "hardware", "plan", "cost", "pipeline", "search", "report", "app", "config"},
    "cli": set(ORDER),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    bad = []
    for path in sorted(src.glob("*/*.[ch]pp")):
        layer = path.parent.name
        if layer not in BELOW:
            bad.append(f"{path}: folder {layer!r} is not a known layer (add it to scripts/check_layers.py)")
            continue
        for target in INCLUDE.findall(path.read_text()):
            if target not in BELOW[layer]:
                bad.append(f'{path}: layer {layer!r} includes "{target}/...", which is not below it')
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
