"""Draw the project's rooms and their imports, layer by layer: docs/layers.dot and docs/layers.svg.

A box is a room (the folder a module's file is in: lab/cli, grader/steps, ...) within one layer
of tests/layers.py; a folder whose modules lie in two layers (grader/ itself: the waist,
grading.py, and the engine) is a box in each.
An arrow is "imports": its number counts the pairs of modules (importer, imported) between the
two boxes, written at the top of a module, in a function or under TYPE_CHECKING alike. An arrow
within a layer is dashed, one that runs back up the layers red. The layers are drawn top to bottom.

    python3 scripts/import_graph.py                    # this checkout, into docs/
    python3 scripts/import_graph.py --checkout /tmp/old --out /tmp/old-layers

Needs graphviz's `dot` for the SVG (apt-get install graphviz); without it only the .dot is written.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
from tests.layers import LAYERS, imports, layer_index, modules  # noqa: E402 - this checkout's layer table

COLOURS = ("#fde2c8", "#f9f1a5", "#cfe3f7", "#d4ecd0")  # front doors, waist, engine, course and backends
SHOWN_NAMES = 5


def node_id(room: str, layer: int) -> str:
    return f'"{room}@{layer}"'


def graph(root: Path) -> str:
    """The dot text of the checkout at `root`."""
    known = modules(root)
    members: dict[tuple[str, int], list[str]] = defaultdict(list)
    for name, module in known.items():
        members[(module.room, layer_index(name))].append(module.path.stem)
    edges: Counter[tuple[tuple[str, int], tuple[str, int]]] = Counter()
    for found in imports(root):
        a = (known[found.importer].room, layer_index(found.importer))
        b = (known[found.imported].room, layer_index(found.imported))
        if a != b:
            edges[(a, b)] += 1
    lines = ["digraph layers {", '  rankdir=TB; newrank=true; nodesep=0.25; ranksep=0.6;',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9, color="#555555", arrowsize=0.6];']
    for index, layer in enumerate(LAYERS):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(f'    label="{index + 1}. {layer.name}"; labeljust=l; fontname="Helvetica-Bold"; '
                     f'fontsize=13; style="filled"; fillcolor="{COLOURS[index % len(COLOURS)]}40"; color="#999999";')
        for (room, at), names in sorted(members.items()):
            if at != index:
                continue
            shown = sorted(n for n in names if n != "__init__")
            listed = ", ".join(shown[:SHOWN_NAMES]) + (", ..." if len(shown) > SHOWN_NAMES else "")
            label = f"{room}/ ({len(names)})" + (f"\\n{listed}" if listed else "")
            lines.append(f'    {node_id(room, at)} [label="{label}", fillcolor="{COLOURS[index % len(COLOURS)]}"];')
        lines.append("  }")
    for (a, b), count in sorted(edges.items()):
        back = b[1] < a[1]
        style = (', color="#d62728", fontcolor="#d62728", penwidth=2.0, constraint=false' if back
                 else ', style=dashed' if a[1] == b[1] else "")
        width = 1.0 + min(count, 40) / 20
        lines.append(f'  {node_id(*a)} -> {node_id(*b)} [label="{count}", penwidth={width:.2f}{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=HERE, help="the checkout to draw (default: this one)")
    parser.add_argument("--out", type=Path, default=HERE / "docs" / "layers",
                        help="the files to write, without their suffix (default: docs/layers)")
    args = parser.parse_args()
    dot_text = graph(args.checkout.resolve())
    dot_file = args.out.with_suffix(".dot")
    dot_file.write_text(dot_text, encoding="utf-8")
    dot = shutil.which("dot")
    if dot is None:
        print(f"wrote {dot_file}; no graphviz `dot` here for the SVG (apt-get install graphviz)", file=sys.stderr)
        return
    svg = args.out.with_suffix(".svg")
    subprocess.run([dot, "-Tsvg", "-o", str(svg), str(dot_file)], check=True, timeout=120)
    print(f"wrote {dot_file} and {svg}", file=sys.stderr)


if __name__ == "__main__":
    main()
