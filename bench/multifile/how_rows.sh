#!/bin/sh
# The "how" subset of set.jsonl (issue 29): SWE-QA-Bench repository-QA questions whose reference
# answer names 3 or more .py files of the project's tree (bench/multifile/README.md, "The how subset").
# Re-running it leaves set.jsonl unchanged (merge_rows.py tags rows already there, adds the others).
#
# Usage: sh bench/multifile/how_rows.sh SWE_QA_GIT_DIR MIRRORS
#   SWE_QA_GIT_DIR: a git directory of github.com/peng-weihan/SWE-QA-Bench holding commit d7bf283
#   MIRRORS: a folder of git directories, MIRRORS/<owner>+<name>/repo (the layout of the agents'
#            `fetch` tool), one per repository below
set -eu
QA=$1
MIRRORS=$2
HERE=$(dirname "$0")
BENCH=d7bf283d65f4bbdc86ead92fc130eee4986355f0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# project  owner/name  commit (SWE-QA-Bench's repo_commit.txt; conan: its pinned 52f43d9 is not in
# the snapshot fetched on 2026-12-01, so the snapshot's HEAD, and only names that exist there count)
while read -r project repo commit; do
    git --git-dir="$QA" show "$BENCH:Benchmark/$project.jsonl" >"$TMP/$project.jsonl"
    python "$HERE/swe_qa_rows.py" --questions "$TMP/$project.jsonl" \
        --git-dir "$MIRRORS/$(echo "$repo" | tr / +)/repo" --commit "$commit" --repo "$repo" \
        --max 48 --min-needed 3
done <<EOF | python "$HERE/merge_rows.py" --tag how
requests psf/requests 46e939b5525d9c72b677340985582b04b128478a
flask pallets/flask 85c5d93cbd049c4bd0679c36fd1ddcae8c37b642
pytest pytest-dev/pytest 5989efe
pylint pylint-dev/pylint 44740e5
conan conan-io/conan 814cbf12cc56cbc4a87405b5945a4f16968f9555
reflex reflex-dev/reflex fe0f946
sphinx sphinx-doc/sphinx 6c9e320
xarray pydata/xarray 40119bf
EOF
