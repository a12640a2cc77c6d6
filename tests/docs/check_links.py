"""Every relative link in the project's documents resolves: README.md, host_api/docs/*.md,
plugin/*/README.md and samples/**/README.md. A link's file (or directory) must exist, relative to
the document that holds it, and a #fragment must name a heading of its target document, spelled as
GitHub spells a heading's anchor: the heading's text without markup, lower-cased, every character
other than a letter, digit, space, '-' or '_' dropped, spaces made '-', and the second and later
headings of one spelling suffixed -1, -2, ... Links and headings inside fenced code blocks are
code, not links. Web addresses are not fetched (the tests run offline).

Usage: check_links.py SOURCE_DIR; prints each broken link as FILE:LINE: reason, exits 1 if any."""

import re
import sys
from pathlib import Path

LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """(line number, line) of every line outside fenced code blocks."""
    inside = None
    for number, line in enumerate(text.split("\n"), start=1):
        fence = FENCE.match(line)
        if fence:
            if inside is None:
                inside = fence.group(1)
            elif fence.group(1) == inside:
                inside = None
            continue
        if inside is None:
            yield number, line


def slug(heading):
    text = re.sub(r"`([^`]*)`", r"\1", heading)          # code spans keep their text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their label
    text = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", text)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            result.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
        for name in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
            result.add(name)
    return result


def documents(source):
    found = [source / "README.md"]
    found += sorted((source / "host_api" / "docs").glob("*.md"))
    found += sorted((source / "plugin").glob("*/README.md"))
    found += sorted((source / "samples").rglob("README.md"))
    return found


def broken_links(source):
    problems = []
    cache = {}
    for doc in documents(source):
        for number, line in prose_lines(doc.read_text(encoding="utf-8")):
            line = re.sub(r"`[^`]*`", "", line)  # a link inside a code span is code
            for target in LINK.findall(line) + IMAGE.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto:: not checked offline
                where = f"{doc.relative_to(source)}:{number}"
                path_part, _, fragment = target.partition("#")
                resolved = (doc.parent / path_part).resolve() if path_part else doc
                if not resolved.exists():
                    problems.append(f"{where}: {target}: no such file {path_part}")
                    continue
                if source.resolve() not in [resolved, *resolved.parents]:
                    problems.append(f"{where}: {target}: leaves the repository")
                    continue
                if fragment:
                    if resolved.suffix != ".md" or resolved.is_dir():
                        problems.append(f"{where}: {target}: #{fragment} in a file that is not Markdown")
                        continue
                    if resolved not in cache:
                        cache[resolved] = anchors(resolved)
                    if fragment not in cache[resolved]:
                        problems.append(f"{where}: {target}: no heading #{fragment} in "
                                        f"{resolved.relative_to(source.resolve())}")
    return problems


def main():
    source = Path(sys.argv[1]).resolve()
    docs = documents(source)
    problems = broken_links(source)
    for problem in problems:
        print(problem)
    links = sum(len(LINK.findall(line)) for d in docs
                for _, line in prose_lines(d.read_text(encoding="utf-8")))
    print(f"{len(docs)} documents, {links} links, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
