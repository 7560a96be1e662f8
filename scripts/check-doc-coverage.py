#!/usr/bin/env python3
"""Fails when a public symbol of the documented modules has no doc comment (issue 27: "every public symbol
documented"). Reads the symbol graphs that `swift package dump-symbol-graph --minimum-access-level public` wrote.

    scripts/check-doc-coverage.py SYMBOLGRAPH_DIR MODULE...

Symbols the compiler synthesises (no source location: `hashValue`, `hash(into:)`, an option set's `insert(_:)`) are
documented by their protocols and are not counted."""
import json
import sys
from pathlib import Path


def undocumented(graph_dir: Path, module: str) -> list[str]:
    missing = []
    for path in sorted(graph_dir.glob(f"{module}.symbols.json")) + sorted(graph_dir.glob(f"{module}@*.symbols.json")):
        graph = json.loads(path.read_text())
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open") or "docComment" in symbol:
                continue
            location = symbol.get("location")
            if not location:
                continue
            name = ".".join(symbol["pathComponents"])
            file = location["uri"].split("/Sources/", 1)[-1]
            line = location["position"]["line"] + 1
            missing.append(f"Sources/{file}:{line}: {symbol['kind']['displayName'].lower()} {name}")
    return missing


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    graph_dir = Path(sys.argv[1])
    failed = False
    for module in sys.argv[2:]:
        if not (graph_dir / f"{module}.symbols.json").exists():
            print(f"no symbol graph for {module} in {graph_dir}", file=sys.stderr)
            return 2
        missing = undocumented(graph_dir, module)
        for line in missing:
            print(f"undocumented public symbol: {line}", file=sys.stderr)
        print(f"{module}: {'every public symbol documented' if not missing else f'{len(missing)} undocumented'}")
        failed = failed or bool(missing)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
