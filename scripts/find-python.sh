#!/usr/bin/env bash
# Prints the Python interpreter the package's build and the tests use: the first of python3
# and /usr/bin/python3 that imports the modules named (numpy and pytest when none are named).
# Debian's packages (scripts/setup.sh) serve Debian's interpreter, and a python3 earlier on
# PATH (pyenv, say) sees none of them. Prints nothing and exits 1 when neither does.
#   bash scripts/find-python.sh [MODULE ...]
modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(numpy pytest)
imports=$(IFS=,; echo "${modules[*]}")
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import $imports" 2>/dev/null; then
    command -v "$candidate"
    exit 0
  fi
done
exit 1
