#!/usr/bin/env python3
"""The layering test: every #include in the engine goes to its own layer or one below it.

Layers are the folders engine/<layer>/. Each one's CMakeLists.txt declares it with
`hearth_engine_layer(<layer> BELOW <lower layers>...)`; the layers a folder may include are its
BELOW list and, transitively, theirs. This script fails (exit 1, one line per violation) when:
  - an engine folder is not declared as a layer, or a BELOW entry names no layer;
  - the BELOW graph has a cycle;
  - a file in engine/<a>/ includes "engine/<b>/..." where b is neither a nor below a;
  - kernels/ includes anything from engine/ or app/, or the engine includes app/ or Qt;
  - app/desktop includes an engine layer other than core, api, quantizer and server (the
    desktop app talks to hearth::Engine, the quantizer's job API, the local server's serving
    loop and HTTP server, and core types only).

Usage: check_layers.py [ROOT]      check the repository at ROOT (default: this file's repo)
       check_layers.py --self-test build small trees with known faults and check each is found
"""
import os
import re
import sys
import tempfile

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inc")
DESKTOP_ALLOWED = {"core", "api", "quantizer", "server"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
LAYER_CALL = re.compile(r"hearth_engine_layer\(\s*(\w+)([^)]*)\)", re.S)


def declared_layers(root):
    """{layer: set of BELOW layers} from engine/<layer>/CMakeLists.txt, plus errors."""
    layers, errors = {}, []
    engine = os.path.join(root, "engine")
    for name in sorted(os.listdir(engine)):
        folder = os.path.join(engine, name)
        # An empty folder (git keeps none; a copied tree may) holds no code and is no layer.
        if not os.path.isdir(folder) or not any(files for _, _, files in os.walk(folder)):
            continue
        cmake = os.path.join(folder, "CMakeLists.txt")
        text = open(cmake, encoding="utf-8").read() if os.path.exists(cmake) else ""
        match = LAYER_CALL.search(text)
        if not match or match.group(1) != name:
            errors.append(f"engine/{name}/ is not declared with hearth_engine_layer({name} ...)")
            continue
        below, words = set(), match.group(2).split()
        if "BELOW" in words:
            for word in words[words.index("BELOW") + 1:]:
                if word in ("SOURCES", "LIBS"):
                    break
                below.add(word)
        layers[name] = below
    for name, below in layers.items():
        for lower in below - set(layers):
            errors.append(f"engine/{name}: BELOW names {lower}, which is not a layer")
    return layers, errors


def below_closure(layers):
    """{layer: every layer below it}; a layer in its own closure is on a cycle."""
    closure = {}
    for name in layers:
        seen, todo = set(), list(layers[name])
        while todo:
            lower = todo.pop()
            if lower in seen or lower not in layers:
                continue
            seen.add(lower)
            todo.extend(layers[lower])
        closure[name] = seen
    return closure


def includes(folder):
    """(path, line number, included path) for every #include under folder."""
    for directory, _, files in os.walk(folder):
        for file in sorted(files):
            if not file.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(directory, file)
            text = open(path, encoding="utf-8", errors="replace").read()
            for match in INCLUDE.finditer(text):
                yield path, text.count("\n", 0, match.start()) + 1, match.group(1)


def check(root):
    layers, errors = declared_layers(root)
    closure = below_closure(layers)
    for name in sorted(layers):
        if name in closure[name]:
            errors.append(f"engine/{name}: its BELOW list leads back to itself (a cycle)")
    rel = lambda p: os.path.relpath(p, root)
    for path, line, target in includes(os.path.join(root, "engine")):
        layer = rel(path).split(os.sep)[1]
        parts = target.split("/")
        if parts[0] == "engine" and len(parts) > 2 and layer in layers:
            lower = parts[1]
            if lower != layer and lower not in closure[layer]:
                errors.append(f"{rel(path)}:{line}: includes {target}, but {lower} is not below "
                              f"{layer} (BELOW of {layer}: {' '.join(sorted(closure[layer])) or '-'})")
        elif parts[0] == "app" or re.match(r"Q[A-Za-z]*(/|$)", target):
            errors.append(f"{rel(path)}:{line}: the engine includes {target} (it stays Qt-free "
                          "and below the app)")
    for path, line, target in includes(os.path.join(root, "kernels")):
        if target.startswith(("engine/", "app/")):
            errors.append(f"{rel(path)}:{line}: kernels/ includes {target} (kernels sit below "
                          "the engine)")
    desktop = os.path.join(root, "app", "desktop")
    if os.path.isdir(desktop):
        for path, line, target in includes(desktop):
            parts = target.split("/")
            if parts[0] == "engine" and len(parts) > 2 and parts[1] not in DESKTOP_ALLOWED:
                errors.append(f"{rel(path)}:{line}: the desktop app includes {target}; it may "
                              f"use engine/{{{','.join(sorted(DESKTOP_ALLOWED))}}} only")
    return layers, errors


def self_test():
    """Each planted fault must be reported; the clean tree must pass."""
    def errors_of(files):
        with tempfile.TemporaryDirectory(prefix="hearth-layers-") as root:
            for path, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
                if path.endswith("/"):
                    continue  # an empty folder
                with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                    f.write(text)
            return check(root)[1]
    clean = {
        "engine/core/CMakeLists.txt": "hearth_engine_layer(core SOURCES a.cpp)",
        "engine/core/a.h": "#include <vector>\n",
        "engine/io/CMakeLists.txt": "hearth_engine_layer(io BELOW core\n  SOURCES b.cpp)",
        "engine/io/b.h": '#include "engine/core/a.h"\n',
        "engine/api/CMakeLists.txt": "hearth_engine_layer(api BELOW io SOURCES c.cpp)",
        "engine/api/c.h": '#include "engine/core/a.h"\n#include "engine/io/b.h"\n',
        "engine/server/CMakeLists.txt": "hearth_engine_layer(server BELOW api SOURCES s.cpp)",
        "engine/server/s.h": '#include "engine/api/c.h"\n',
        "app/desktop/d.cpp": '#include "engine/api/c.h"\n#include "engine/server/s.h"\n',
        "kernels/k.cu": '#include "kernels/k.cuh"\n',
    }
    faults = {
        "upward include": {"engine/core/a.h": '#include "engine/io/b.h"\n'},
        "undeclared folder": {"engine/extra/e.h": "\n"},
        "unknown BELOW": {"engine/io/CMakeLists.txt": "hearth_engine_layer(io BELOW core nope)"},
        "cycle": {"engine/core/CMakeLists.txt": "hearth_engine_layer(core BELOW api)"},
        "desktop reaches below api": {"app/desktop/d.cpp": '#include "engine/io/b.h"\n'},
        "desktop reaches a layer it may not use": {
            "engine/bench/CMakeLists.txt": "hearth_engine_layer(bench BELOW io SOURCES f.cpp)",
            "engine/bench/f.h": '#include "engine/io/b.h"\n',
            "app/desktop/d.cpp": '#include "engine/bench/f.h"\n'},
        "kernels include the engine": {"kernels/k.cu": '#include "engine/core/a.h"\n'},
        "Qt in the engine": {"engine/io/b.h": "#include <QString>\n"},
    }
    ok = not errors_of(clean) and not errors_of({**clean, "engine/leftover/": ""})
    print(("ok  " if ok else "FAIL") + " clean tree passes, with an empty folder too")
    for name, change in faults.items():
        found = errors_of({**clean, **change})
        print(("ok  " if found else "FAIL") + f" {name}: " + (found[0] if found else "not found"))
        ok = ok and bool(found)
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    layers, errors = check(os.path.abspath(root))
    for error in errors:
        print(error)
    closure = below_closure(layers)
    order = sorted(layers, key=lambda name: (len(closure[name]), name))
    print(f"{len(layers)} layers, {len(errors)} violations; bottom first: {' '.join(order)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
