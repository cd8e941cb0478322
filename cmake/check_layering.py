#!/usr/bin/env python3
"""Fails the build when a component includes a header it has not declared a dependency on, or
when it is on a cycle of dependencies.

cmake/layering.cmake writes a map of every component (a library target): the folders it owns,
which of them other components may include (public; an entry may also name one header, for a
folder of headers several components share, such as the SDK's include/kdp/) and the components it
links directly. This
script checks one component: every `#include "..."` in the files of its folders must name a
header of its own folders or of a public folder of a component it links directly
(target_link_libraries). A header of a component linked only through another is refused, as
Bazel's layering_check refuses it: the dependency a file relies on is declared where the file is.

The dependencies among the components must have no cycle: CMake accepts cyclic static
libraries silently (it links them repeated), and the components of a cycle are one that can be
built, linked and tested only together. A component on a cycle fails with the cycle, written from
its first component in name order, so that every check on it prints the same line.

Include paths are the project root's ("manager/src/pod/pod.h"), the SDK's public headers
("kdp/topology.h" = sdk/include/kdp/topology.h) and the generated protobuf headers
("deviceplugin/v1beta1/api.pb.h" = proto/deviceplugin/v1beta1/api.proto). Anything else (the
standard library, Abseil, gRPC, "httplib.h") is not the project's and is not checked.

Usage: check_layering.py --map MAP.json --component NAME --stamp FILE
Exit 1 with one line per refused include: file:line, the header, its component, and the rule;
and one line for a cycle through the component: "layering: cycle: a -> b -> a".
"""
import argparse
import collections
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def owns(entry, path):
    """How specifically `entry` (a folder, "folder/**", or one header "dir/x.h") covers `path`:
    -1 when it does not, else the length of what it names (a file beats any folder)."""
    if entry.endswith(".h"):
        return 1 << 20 if path == entry else -1
    recursive = entry.endswith("/**")
    base = entry[:-3] if recursive else entry
    folder = os.path.dirname(path)
    if folder == base or (recursive and folder.startswith(base + "/")):
        return len(base)
    return -1


def owner(path, components):
    """The component owning a project-relative path: the one whose entry names it most
    specifically (the header itself, else the longest folder that contains it)."""
    best, best_len = None, -1
    for name, comp in components.items():
        for entry in comp["public"] + comp["private"]:
            length = owns(entry, path)
            if length > best_len:
                best, best_len = name, length
    return best


def is_public(path, comp):
    return any(owns(entry, path) >= 0 for entry in comp["public"])


def resolve(include, root):
    """The project-relative path an include names, or None when it is not the project's."""
    for suffix in (".grpc.pb.h", ".pb.h"):
        if include.endswith(suffix):
            proto = "proto/" + include[: -len(suffix)] + ".proto"
            return proto if os.path.exists(os.path.join(root, proto)) else None
    if include.startswith("kdp/"):
        candidate = "sdk/include/" + include
        if os.path.exists(os.path.join(root, candidate)):
            return candidate
    if os.path.exists(os.path.join(root, include)):
        return include
    return None


def cycle_through(name, components):
    """The shortest cycle of dependencies through component `name`, as the list of its components
    from the first in name order back to it (["a", "b", "a"]), or None."""
    parent = {}
    queue = collections.deque()
    for dep in components[name]["deps"]:
        if dep not in parent:
            parent[dep] = name
            queue.append(dep)
    while queue:
        current = queue.popleft()
        if current == name:
            path = [name]
            node = parent[name]
            while node != name:
                path.append(node)
                node = parent[node]
            path.reverse()  # in link order: a dependency of name, ..., name
            first = path.index(min(path))
            cycle = path[first:] + path[:first]
            return cycle + [cycle[0]]
        for dep in components.get(current, {}).get("deps", []):
            if dep not in parent:
                parent[dep] = current
                queue.append(dep)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--map", required=True)
    parser.add_argument("--component", required=True)
    parser.add_argument("--stamp", required=True)
    args = parser.parse_args()
    with open(args.map) as f:
        layering = json.load(f)
    root, components = layering["root"], layering["components"]
    me = components[args.component]
    errors = []
    cycle = cycle_through(args.component, components)
    if cycle:
        errors.append(
            f"cycle: {' -> '.join(cycle)} ({args.component} links, directly or not, a component "
            f"that links it: break the cycle, e.g. by moving what both need into a component of "
            f"its own)")
    for path in me["files"]:
        if owner(path, components) != args.component:
            continue  # A subfolder that another component owns.
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for match in INCLUDE.finditer(text):
            header = resolve(match.group(1), root)
            if header is None:
                continue
            target = owner(header, components)
            line = text.count("\n", 0, match.start()) + 1
            where = f"{path}:{line}: #include \"{match.group(1)}\""
            if target is None:
                errors.append(f"{where}: {header} belongs to no component (cmake/layering.cmake)")
            elif target == args.component:
                continue
            elif target not in me["deps"]:
                errors.append(
                    f"{where}: {args.component} does not link {target}, which owns {header} "
                    f"(declare it in target_link_libraries, or include what you link)")
            elif not is_public(header, components[target]):
                errors.append(
                    f"{where}: {header} is private to {target} (its public headers are in "
                    f"{', '.join(components[target]['public'])})")
    if errors:
        for e in errors:
            print(f"layering: {e}", file=sys.stderr)
        return 1
    with open(args.stamp, "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
