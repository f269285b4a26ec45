#!/bin/bash
# Runs inside the testbed guest (via tests/testbed/e2e): the e2e tier, against the checkout.
# -c /dev/null: the repo's pytest config excludes tests/e2e (host runs), so use none here and
# give the options the suite needs explicitly. The checkout is read-only: no cache provider.
set -u
cd "${SLICECTL_CHECKOUT:?not inside the testbed}" || exit 1
# Two tiers of their own, run by naming them, because the default tier must keep CI under 45
# min: the evidence experiments' shortened runs (about 12 min under TCG on a quiet host) and
# the Ansible collection's playbooks (about 16 min: every module task costs about 20 s under
# TCG). Everything in one boot, the Ansible tests last (their fixture's clean-up stops every
# unit whose drop-in it removes, user.slice included, which later tests need running):
#   tests/testbed/e2e $(ls tests/e2e/test_*.py | grep -v ansible) tests/e2e/test_ansible.py
# (tests/testbed/README.md).
paths=(tests/e2e --ignore=tests/e2e/test_evidence.py --ignore=tests/e2e/test_ansible.py)
for arg in "$@"; do [[ $arg == tests/* ]] && paths=(); done  # caller chose the tests
exec python3 -m pytest -c /dev/null --rootdir="$SLICECTL_CHECKOUT" --confcutdir=tests/e2e \
    -p no:cacheprovider -o asyncio_mode=auto -o asyncio_default_fixture_loop_scope=function \
    -v -rfEs --durations=15 --junitxml="$SLICECTL_RESULTS/junit.xml" "$@" "${paths[@]}"
