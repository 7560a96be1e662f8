#!/usr/bin/env python3
"""Checks the Python binding's cffi declarations against libfilecoord's header (issue 38). Standard library only.

    python3 scripts/check-cffi-declarations.py

Languages/python/src/filecoord/_library.py keeps a copy of the declarations of
Languages/c/CFileCoord/include/filecoord.h in its `CDEF` string, because cffi reads no preprocessor. This compares
the two, declaration by declaration (functions, typedefs, structs), with comments removed and whitespace normalised,
and reports every declaration that differs, every one of the header the binding lacks, and every one of the binding
the header lacks. It also checks the numbers the binding restates in Python: `ABI_VERSION` against
`FILECOORD_ABI_VERSION`, and each `NAME = value` of the package against the header's `FILECOORD_NAME = value`
enumerators. Run by scripts/check-generated.sh; exits 1 on any difference.
"""

import ast
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
HEADER = "Languages/c/CFileCoord/include/filecoord.h"
BINDING = "Languages/python/src/filecoord/_library.py"
PACKAGE = "Languages/python/src/filecoord"


def without_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def normalised(text):
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([*(),;{}\[\]=])\s*", r"\1", text)


def statements(text):
    """Top-level statements (ending in `;` outside braces), without the preprocessor and `extern "C"`."""
    text = without_comments(text)
    text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))
    text = re.sub(r'extern\s+"C"\s*\{', " ", text)
    result, depth, current = [], 0, []
    for character in text:
        current.append(character)
        if character == "{":
            depth += 1
        elif character == "}":
            depth = max(depth - 1, 0)
        elif character == ";" and depth == 0:
            statement = "".join(current).strip()
            current = []
            # A stray `}` of the `extern "C"` block lands in front of the next statement.
            statement = statement.lstrip("}").strip()
            if statement:
                result.append(statement)
    return result


def key(statement):
    """What a declaration declares: the function, the typedef name, or an anonymous enum's first constant."""
    flat = normalised(statement)
    if flat.startswith("enum{"):
        first = re.match(r"enum\{(\w+)", flat)
        return ("enum", first.group(1) if first else flat)
    if flat.startswith("typedef"):
        pointer = re.search(r"\(\*(\w+)\)\(", flat)
        if pointer and "{" not in flat:
            return ("typedef", pointer.group(1))
        return ("typedef", re.search(r"(\w+);$", flat).group(1))
    function = re.search(r"(\w+)\((?:[^()]|\([^()]*\))*\);$", flat)
    if function:
        return ("function", function.group(1))
    return ("other", flat)


def declarations(text):
    found = {}
    for statement in statements(text):
        found[key(statement)] = normalised(statement)
    return found


def binding_cdef():
    tree = ast.parse(open(os.path.join(ROOT, BINDING), encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CDEF" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def integer(expression):
    """The value of `1u << 3`, `0x10`, `7` (C or Python), or None."""
    expression = re.sub(r"(?<=\d)[uUlL]+\b", "", expression.strip())
    if not re.fullmatch(r"[0-9xXa-fA-F\s<|()+-]+", expression):
        return None
    try:
        return int(eval(expression, {"__builtins__": {}}))  # digits and operators only (checked above)
    except (SyntaxError, ValueError, TypeError):
        return None


def main():
    problems = []
    header_text = open(os.path.join(ROOT, HEADER), encoding="utf-8").read()
    header = declarations(header_text)
    cdef = binding_cdef()
    if cdef is None:
        print(f"check-cffi-declarations: {BINDING} has no CDEF string", file=sys.stderr)
        return 1
    binding = declarations(cdef)

    for name, declared in binding.items():
        if name not in header:
            problems.append(f"{BINDING}: declares {name[0]} `{name[1]}`, which {HEADER} does not: {declared}")
        elif header[name] != declared:
            problems.append(
                f"{BINDING}: {name[0]} `{name[1]}` differs from {HEADER}\n"
                f"    header:  {header[name]}\n    binding: {declared}"
            )
    for name, declared in header.items():
        if name[0] == "enum":
            continue  # constants: cffi needs none (the binding restates them in Python, checked below)
        if name not in binding:
            problems.append(f"{BINDING}: lacks {name[0]} `{name[1]}` of {HEADER}: {declared}")

    # Numbers restated in Python.
    constants = {}
    for match in re.finditer(r"\bFILECOORD_(\w+)\s*=\s*([^,\n}]+)", without_comments(header_text)):
        constants[match.group(1)] = integer(match.group(2))
    abi = re.search(r"#define\s+FILECOORD_ABI_VERSION\s+(\d+)", header_text)
    for path in sorted(glob.glob(os.path.join(ROOT, PACKAGE, "*.py"))):
        relative = os.path.relpath(path, ROOT)
        source = open(path, encoding="utf-8").read()
        for number, line in enumerate(source.split("\n"), 1):
            match = re.match(r"^([A-Z][A-Z0-9_]*)\s*=\s*([^#]+?)\s*(?:#.*)?$", line)
            if not match:
                continue
            name, value = match.group(1), integer(match.group(2))
            if name == "ABI_VERSION":
                if abi is None or value != int(abi.group(1)):
                    header_abi = abi.group(1) if abi else "none"
                    problems.append(f"{relative}:{number}: ABI_VERSION = {value}; FILECOORD_ABI_VERSION is {header_abi}")
            elif name in constants and value is not None and constants[name] is not None and value != constants[name]:
                problems.append(f"{relative}:{number}: {name} = {value}; {HEADER} has FILECOORD_{name} = {constants[name]}")

    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"check-cffi-declarations: {len(problems)} difference(s) between the binding and the header",
              file=sys.stderr)
        return 1
    print(f"check-cffi-declarations: {len(binding)} declarations of the binding match {HEADER}; "
          f"no declaration of the header is missing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
