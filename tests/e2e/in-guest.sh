#!/bin/bash
# Runs inside the testbed guest (via tests/testbed/e2e): the e2e tier, against the checkout.
# -c /dev/null: the repo's pytest config excludes tests/e2e (host runs), so use none here and
# give the options the suite needs explicitly. The checkout is read-only: no cache provider.
set -u
cd "${SLICECTL_CHECKOUT:?not inside the testbed}" || exit 1
# Every e2e test, the evidence experiments' shortened runs and the Ansible collection's
# playbooks included (issues 15 and 17: CI runs them). The Ansible tests go last: their
# playbooks are the slowest part (every module task costs about 20 s under TCG,
# tests/testbed/README.md), and a failure elsewhere shows before them.
paths=()
for file in tests/e2e/test_*.py; do [[ $file == */test_ansible.py ]] || paths+=("$file"); done
paths+=(tests/e2e/test_ansible.py)
for arg in "$@"; do [[ $arg == tests/* ]] && paths=(); done  # caller chose the tests
exec python3 -m pytest -c /dev/null --rootdir="$SLICECTL_CHECKOUT" --confcutdir=tests/e2e \
    -p no:cacheprovider -o asyncio_mode=auto -o asyncio_default_fixture_loop_scope=function \
    -v -rfEs --durations=15 --junitxml="$SLICECTL_RESULTS/junit.xml" "$@" "${paths[@]}"
