#!/usr/bin/env bash
# The README is the front door (issue 33 item 9): it stays under 250 lines,
# keeps the two set-up commands, and every relative link in it and in docs/
# leads somewhere. Checks, in README.md and docs/*.md:
#   - README.md has fewer than 250 lines and names ./deploy/quickstart.sh
#     and ./tests/run.sh;
#   - every relative markdown link ([text](path), ![alt](path); outside
#     fenced code blocks and `code spans`) names a file or folder that exists,
#     relative to the file that links it; a #fragment into a markdown file
#     names one of its headings (GitHub's anchors).
# Links with a scheme (https:, mailto:) are not followed: nothing here
# leaves the machine.
#   tests/readme_test.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: readme_test.sh SOURCE_DIR}"
exec python3 - <<'EOF'
import glob
import os
import re
import sys

failures = []
readme = open("README.md", encoding="utf-8").read()
lines = readme.count("\n") + (0 if readme.endswith("\n") else 1)
if lines >= 250:
    failures.append(f"README.md has {lines} lines; keep it under 250 and move the rest to docs/")
for cmd in ("./deploy/quickstart.sh", "./tests/run.sh"):
    if cmd not in readme:
        failures.append(f"README.md no longer names the set-up command {cmd}")


def anchors(path):
    """GitHub's heading anchors of a markdown file."""
    out, seen, fenced = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


link = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
files = ["README.md"] + sorted(glob.glob("docs/*.md"))
count = 0
for path in files:
    fenced = False
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in link.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # https:, mailto:, ...: not followed
            count += 1
            file_part, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                failures.append(f"{path}:{no}: link to {target}: {dest} does not exist")
                continue
            if fragment and dest.endswith(".md") and fragment not in anchors(dest):
                failures.append(f"{path}:{no}: link to {target}: {dest} has no heading #{fragment}")

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print(f"readme_test: README.md {lines} lines; {count} relative links in {len(files)} files, all resolve")
EOF
