#!/usr/bin/env python3
"""Checks the mechanical parts of the documentation against the code (issue 38). Python 3, standard library only.

    python3 scripts/check-docs.py

Exits 1 and prints one line per mismatch, `file:line: what is wrong`, when any of these fails:

1. Modules. docs/ARCHITECTURE.md §1's table names exactly the targets of Package.swift: every backticked name in a
   row's first cell (a name ending in `/`, a folder such as `Benchmarks/`, is not a target) is a target, and every
   `.target`, `.executableTarget`, `.testTarget`, `.systemLibrary`, `.binaryTarget`, `.macro` or `.plugin` declared
   in Package.swift has a row.
2. Cited sections. Every "§N" or "section N" (N may be 8.3.1; "§2.5" may also be rule 5 of section 2, a numbered
   item of that section) in docs/*.md and README.md names a section heading ("## N." or "### N") of the document
   it cites: the one named just before it ("docs/SEMANTICS.md §13", "PROTOCOL section 10", "ARCHITECTURE §8.4"),
   or the one it follows in a list ("§13.1 and §13.3"), else the document it is written in. A bare citation in
   docs/ARCHITECTURE.md may also be a rule of docs/SEMANTICS.md, as that page's preface says; in README.md a bare
   citation has no document and is reported. In Swift, C and .proto files under Sources/ and Languages/, only
   citations that name the document are checked. "RFC 7530 §10.4" and other citations of outside documents are skipped.
3. Payload tags. Every message table row of docs/PROTOCOL.md that starts with "`Name` [N]" gives Name's number
   in `Frame`'s `oneof payload` of Sources/FCProtocol/filecoord.proto, every payload is in such a row, and fields
   written "`type name` [N]" or "`Message.name` [N]" are that field's number in the message of the row.
4. Test counts. A count written next to a test file or suite ("`ItemPathTests.swift` (18)", "`DeadlockTests`
   (11, §10)") equals the number of `@Test` functions and XCTest `func test…` methods in it; "N tests" or "N test
   functions" next to a `Tests/…` folder equals the number in that folder. Any other "N tests" is reported: name
   what is counted, or drop the number (the docs avoid numbers that drift).
"""

import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DOC_NAMES = ["ARCHITECTURE", "SEMANTICS", "PROTOCOL", "VERSIONS", "PORTING", "FCDUMP-SCHEMA"]

errors = []


def error(path, line, message):
    errors.append(f"{os.path.relpath(path, ROOT)}:{line}: {message}")


def read(relative):
    with open(os.path.join(ROOT, relative), encoding="utf-8") as f:
        return f.read()


def lines_outside_code(text):
    """(line number, line) for each line that is not inside a ``` block."""
    inside = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            yield number, line


# 1. Modules ----------------------------------------------------------------------------------------------------------

TARGET_RE = re.compile(
    r"\.(target|executableTarget|testTarget|systemLibrary|binaryTarget|macro|plugin)\(\s*name:\s*\"([^\"]+)\"([^)]*)"
)


def package_targets():
    text = read("Package.swift")
    targets = {}
    for match in TARGET_RE.finditer(text):
        kind, name, rest = match.groups()
        # `.plugin(name: "X", package: "y")` in a `plugins:` list uses a plugin; it declares none.
        if kind == "plugin" and "package:" in rest:
            continue
        targets[name] = text.count("\n", 0, match.start()) + 1
    return targets


def check_modules():
    path = os.path.join(ROOT, "docs/ARCHITECTURE.md")
    text = read("docs/ARCHITECTURE.md")
    section = None
    table_line = None
    listed = {}
    for number, line in lines_outside_code(text):
        heading = re.match(r"^##\s+(\d+)\.?\s", line)
        if heading:
            section = heading.group(1)
            continue
        if section != "1" or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "module" or set(cells[0]) <= set("-: "):
            table_line = table_line or number
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            if name.endswith("/"):
                continue
            if name in listed:
                error(path, number, f"§1's module table lists `{name}` twice (also line {listed[name]})")
            listed.setdefault(name, number)
    if table_line is None:
        error(path, 1, "§1 has no module table (a table whose first column is `module`)")
        return
    targets = package_targets()
    for name, number in sorted(listed.items(), key=lambda item: item[1]):
        if name not in targets:
            error(path, number, f"§1's module table lists `{name}`, which is not a target of Package.swift")
    for name, line in sorted(targets.items(), key=lambda item: item[1]):
        if name not in listed:
            error(path, table_line, f"§1's module table lacks `{name}`, a target of Package.swift (line {line})")


# 2. Cited sections ---------------------------------------------------------------------------------------------------


def anchors(relative):
    """The section numbers of a document's headings, and N.M for each numbered item M at the top of section N."""
    found = set()
    section = None
    for _, line in lines_outside_code(read(relative)):
        heading = re.match(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if heading:
            section = heading.group(1)
            found.add(section)
            continue
        if re.match(r"^#{1,6}\s", line):
            continue
        item = re.match(r"^(\d+)\.\s", line)
        if item and section:
            found.add(f"{section}.{item.group(1)}")
    return found


DOC_RE = r"`?(?:docs/)?(?P<doc>" + "|".join(re.escape(n) for n in DOC_NAMES) + r")(?:\.md)?`?"
NUM = r"\d+(?:\.\d+)*"
# One citation: an optional document, `§N` or `section(s) N`, an optional "rule(s) M", then more numbers joined
# by commas, "and", "or" or dashes (each another citation of the same document).
CITE_RE = re.compile(
    r"(?:(?P<outside>RFC\s+\d+|POSIX|C\d\d)\s*)?"
    r"(?:" + DOC_RE + r"\)?,?\s+)?"
    r"(?P<mark>§\s?|\b[Ss]ections?\s+)(?P<first>" + NUM + r")"
    r"(?P<rule>\s+rules?\s+\d+(?:\s*(?:-|–|,|and|to)\s*\d+)*)?"
    r"(?P<more>(?:\s*(?:,|and|or|to|-|–)\s*(?:§\s?)?" + NUM + r"(?!\s*(?:ms|s|bytes|MiB|KiB|%)))*)"
)


def cited_numbers(match):
    numbers = [match.group("first")]
    more = match.group("more") or ""
    numbers += re.findall(NUM, more)
    rule = match.group("rule")
    if rule:
        numbers += [f"{match.group('first')}.{r}" for r in re.findall(r"\d+", rule)]
    return numbers


def check_citations_in(relative, own_doc, bare_fallbacks, explicit_only, table):
    path = os.path.join(ROOT, relative)
    text = read(relative)
    # The whole text at once: a citation may be broken across lines ("docs/SEMANTICS.md\n  §12").
    previous_end = None
    previous_doc = None
    for match in CITE_RE.finditer(text):
        if match.group("outside"):
            continue
        number = text.count("\n", 0, match.start("mark")) + 1
        doc = match.group("doc")
        if doc is None and previous_doc and previous_end is not None:
            gap = text[previous_end : match.start()]
            if re.fullmatch(r"\s*(?:,|and|or|to|-|–|;)?\s*", gap):
                doc = previous_doc
        previous_end, previous_doc = match.end(), doc
        if doc is None and explicit_only:
            continue
        if doc is None and own_doc is None and match.group("mark").lower().startswith("section"):
            continue  # "section 3" of something unnamed (a man page, an RFC) in README.md
        for cited in cited_numbers(match):
            if doc is not None:
                if cited not in table[doc]:
                    error(path, number, f"cites {doc} §{cited}, which docs/{doc}.md has no heading for")
                continue
            if own_doc is None:
                error(path, number, f"§{cited} names no document: write e.g. `docs/ARCHITECTURE.md §{cited}`")
                continue
            if cited in table[own_doc] or any(cited in table[d] for d in bare_fallbacks):
                continue
            where = " or ".join([f"docs/{own_doc}.md"] + [f"docs/{d}.md" for d in bare_fallbacks])
            error(path, number, f"cites §{cited}, which {where} has no heading (or rule) for")


def check_citations():
    table = {}
    for name in DOC_NAMES:
        relative = f"docs/{name}.md"
        table[name] = anchors(relative) if os.path.exists(os.path.join(ROOT, relative)) else set()
    for relative in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        name = os.path.basename(relative)[:-3]
        fallbacks = ["SEMANTICS"] if name == "ARCHITECTURE" else []
        check_citations_in(os.path.relpath(relative, ROOT), name if name in table else None, fallbacks, False, table)
    check_citations_in("README.md", None, [], False, table)
    patterns = [f"{top}/**/*.{ext}" for top in ("Sources", "Languages") for ext in ("swift", "proto", "h", "c")]
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            if "/Generated/" in path or "/generated/" in path:
                continue  # generated from the .proto, whose comments are checked themselves
            check_citations_in(os.path.relpath(path, ROOT), None, [], True, table)


# 3. Payload tags -----------------------------------------------------------------------------------------------------


def parse_proto():
    """Frame's payload numbers by message type, and every message's fields by name (nested ones as Outer.Inner)."""
    text = read("Sources/FCProtocol/filecoord.proto")
    text = re.sub(r"//[^\n]*", "", text)
    fields = {}
    payload = {}
    stack = []  # (kind, name)
    for token in re.finditer(r"\b(message|enum|oneof)\s+(\w+)\s*\{|\}|([^;{}]+);", text):
        if token.group(1):
            stack.append((token.group(1), token.group(2)))
            continue
        if token.group(0) == "}":
            if stack:
                stack.pop()
            continue
        statement = token.group(3).strip()
        field = re.match(r"^(?:optional\s+|repeated\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+)", statement)
        if not field or not stack:
            continue
        messages = [name for kind, name in stack if kind == "message"]
        if not messages or stack[-1][0] == "enum":
            continue
        owner = ".".join(messages)
        fields.setdefault(owner, {})[field.group(2)] = int(field.group(3))
        if owner == "Frame" and stack[-1] == ("oneof", "payload"):
            payload[field.group(1)] = int(field.group(3))
    return payload, fields


def message_fields(fields, name):
    if name in fields:
        return fields[name]
    candidates = [key for key in fields if key.endswith("." + name)]
    return fields[candidates[0]] if len(candidates) == 1 else None


def check_payload_tags():
    relative = "docs/PROTOCOL.md"
    path = os.path.join(ROOT, relative)
    payload, fields = parse_proto()
    seen = {}
    for number, line in lines_outside_code(read(relative)):
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        first = cells[0]
        row = re.match(r"^`(\w+)`\s*\[(\d+)\]", first)
        if row:
            name, tag = row.group(1), int(row.group(2))
            if name not in payload:
                error(path, number, f"`{name}` [{tag}]: `{name}` is not a payload of Frame in filecoord.proto")
            elif payload[name] != tag:
                error(path, number, f"`{name}` [{tag}]: filecoord.proto numbers it {payload[name]} in Frame")
            seen[name] = number
        dotted = re.match(r"^`(\w+)\.(\w+)`\s*\[(\d+)\]", first)
        if dotted:
            owner, field, tag = dotted.group(1), dotted.group(2), int(dotted.group(3))
            known = message_fields(fields, owner) or {}
            if known.get(field) != tag:
                error(path, number, f"`{owner}.{field}` [{tag}]: filecoord.proto has "
                      + (f"number {known[field]}" if field in known else "no such field"))
        owners = [] if dotted else re.findall(r"`(\w+)`", first.split("(")[0])
        owner_fields = [message_fields(fields, o) for o in owners]
        if len(cells) < 2 or not owners or any(f is None for f in owner_fields):
            continue
        for field_match in re.finditer(r"`(?:(?:optional|repeated)\s+)?(?:[\w.]+\s+)?(\w+)`\s*\[(\d+)\]", cells[1]):
            field, tag = field_match.group(1), int(field_match.group(2))
            for owner, known in zip(owners, owner_fields):
                if field not in known:
                    # A type without a field name (a oneof member written `Type{...}`), or a field of another
                    # message quoted in passing: only a known field's number is checked.
                    continue
                if known[field] != tag:
                    error(path, number, f"`{owner}.{field}` [{tag}]: filecoord.proto numbers it {known[field]}")
    for name, tag in sorted(payload.items(), key=lambda item: item[1]):
        if name not in seen:
            error(path, 1, f"Frame's payload `{name}` = {tag} in filecoord.proto has no row \"`{name}` [{tag}]\"")


# 4. Test counts ------------------------------------------------------------------------------------------------------

TEST_RE = re.compile(r"^\s*@Test\b|^\s*(?:override\s+)?func\s+test\w*\s*\(", re.M)


def count_tests(paths):
    total = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        total += len(TEST_RE.findall(text))
    return total


def swift_files_under(folder, base="*"):
    """The .swift files named `base` under `folder`, recursively, without those seen again through
    Tests/ThreadSanitizer, whose test-target folders are links to Tests/FileCoordinationTests and
    Tests/SourceCompatibilityTests (glob follows links: each file would count twice)."""
    files = glob.glob(os.path.join(folder, "**", base + ".swift"), recursive=True)
    return [path for path in files if "/Tests/ThreadSanitizer/" not in path]


def test_files_named(name):
    base = name[:-6] if name.endswith(".swift") else name
    files = swift_files_under(os.path.join(ROOT, "Tests"), base)
    if files:
        return files
    # A suite declared in a file of another name.
    found = []
    for path in swift_files_under(os.path.join(ROOT, "Tests")):
        with open(path, encoding="utf-8") as f:
            if re.search(r"\b(?:struct|class|final class|enum)\s+" + re.escape(base) + r"\b", f.read()):
                found.append(path)
    return found


def check_test_counts():
    sources = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]
    named = re.compile(r"`([\w+]+(?:Tests|Test|Smoke)(?:\.swift)?)`\s*\((\d+)\b")
    counted = re.compile(r"\b(\d[\d,]*)\s+(?:test functions|tests|@Tests?|test cases)\b")
    for path in sources:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for number, line in lines_outside_code(text):
            for match in named.finditer(line):
                name, stated = match.group(1), int(match.group(2))
                files = test_files_named(name)
                if not files:
                    error(path, number, f"`{name}` ({stated}): no such test file or suite under Tests/")
                elif len(files) > 1:
                    where = ", ".join(os.path.relpath(p, ROOT) for p in files)
                    error(path, number, f"`{name}` ({stated}): the name is ambiguous ({where}); name the folder")
                elif count_tests(files) != stated:
                    error(path, number, f"`{name}` states {stated} tests; "
                          f"{os.path.relpath(files[0], ROOT)} has {count_tests(files)}")
            for match in counted.finditer(line):
                stated = int(match.group(1).replace(",", ""))
                folder = re.search(r"`(Tests/[\w/]+)`", line)
                if folder and os.path.isdir(os.path.join(ROOT, folder.group(1))):
                    files = swift_files_under(os.path.join(ROOT, folder.group(1)))
                    actual = count_tests(files)
                    if actual != stated:
                        error(path, number, f"states {stated} tests in {folder.group(1)}; it has {actual}")
                else:
                    error(path, number, f"states a test count ({match.group(0)}) that names no test file or "
                          "`Tests/` folder: name what is counted, or drop the number")


def check_c_manual():
    """docs/man/filecoord.3 names every function filecoord.h declares, in its NAME and SYNOPSIS (issue 43)."""
    header = read("Languages/c/CFileCoord/include/filecoord.h")
    manual = read("docs/man/filecoord.3")
    for function in sorted(set(re.findall(r"\b(filecoord_[a-z0-9_]+)\(", header))):
        if f".Nm {function}" not in manual:
            error("docs/man/filecoord.3", 1, f"{function} (filecoord.h) is missing from NAME")
        if f".Fn {function} " not in manual:
            error("docs/man/filecoord.3", 1, f"{function} (filecoord.h) is missing from SYNOPSIS")


def main():
    check_modules()
    check_citations()
    check_payload_tags()
    check_test_counts()
    check_c_manual()
    if errors:
        for line in errors:
            print(line, file=sys.stderr)
        print(f"check-docs: {len(errors)} mismatch(es) between the docs and the code", file=sys.stderr)
        return 1
    print("check-docs: module table, cited sections, payload tags, test counts and the C manual agree with the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
