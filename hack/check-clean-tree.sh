#!/usr/bin/env bash
# Fails when the git work tree in the given directory (default: the current one) differs from its
# last commit: a tracked file changed or deleted, or a new file that .gitignore does not cover.
# CI runs it after the build and package steps (.ci/run): they must write only ignored files, as the
# GitHub build workflow also requires (its "Find mutations" step fails the build on any change).
set -euo pipefail
dir=${1:-.}
if ! changes=$(git -C "$dir" status --porcelain --untracked-files=all); then
  echo "check-clean-tree: $dir is not a git work tree" >&2
  exit 2
fi
if [ -n "$changes" ]; then
  echo "check-clean-tree: the build left the work tree changed (commit the change, fix the step that writes it, or ignore the file in .projenrc.ts):" >&2
  printf '%s\n' "$changes" >&2
  exit 1
fi
echo "check-clean-tree: the work tree is clean"
