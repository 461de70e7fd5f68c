"""The package's modules import one another without a cycle, counting the
imports inside functions too: each module stands on the ones below it."""

import ast

from conftest import HERE

PKG = HERE.parent / "src" / "pot"


def _edges():
    """module -> the package modules it imports (relative imports, any depth)."""
    edges = {}
    for path in sorted(PKG.glob("*.py")):
        name = path.stem
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names)  # from . import x
        edges[name] = {d for d in deps if (PKG / f"{d}.py").exists() and d != name}
    return edges


def _cycle(edges):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(edges.get(m, ())):
            if state.get(d) == "open":
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d, path + [d])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle():
    edges = _edges()
    assert "replay" in edges["torch"] and "_step" in edges["dispute"]  # the graph is read, not empty
    cycle = _cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_is_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
