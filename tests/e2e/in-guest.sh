#!/bin/bash
# Runs inside the testbed guest (via tests/testbed/e2e): the e2e tier, against the checkout.
# -c /dev/null: the repo's pytest config excludes tests/e2e (host runs), so use none here and
# give the options the suite needs explicitly. The checkout is read-only: no cache provider.
set -u
cd "${SLICECTL_CHECKOUT:?not inside the testbed}" || exit 1
# Left out of the default tier (CI's), run by naming them, so that CI stays under 60 min with
# the release matrix's smoke: the evidence experiments' shortened runs (about 14 min under TCG
# on a quiet host), and the Ansible role on the real guest (tests/e2e/test_ansible.py: the role's
# two runs alone cost about 10 min, every Ansible task 10-20 s under TCG; the host's
# tests/test_ansible.py runs the same role and module with a real ansible-playbook against a
# fake systemd in CI's "external" tier). The default tier took about 26 min with the boot on a
# quiet host (tests/testbed/README.md). Tests that reboot the guest continue in the next boot,
# where the tests already done are left out (tests/e2e/conftest.py). Everything, in any order:
#   tests/testbed/e2e tests/e2e
# The release matrix's smoke (tests/testbed/matrix --smoke) passes `-m smoke`: the tests marked
# so in tests/e2e (the marker is registered in tests/e2e/conftest.py). --strict-markers: a
# misspelt marker fails instead of selecting nothing.
paths=(tests/e2e --ignore=tests/e2e/test_evidence.py --ignore=tests/e2e/test_ansible.py)
for arg in "$@"; do [[ $arg == tests/* ]] && paths=(); done  # caller chose the tests
boot=$(cat "$SLICECTL_RESULTS/boot" 2>/dev/null || echo 1)
exec python3 -m pytest -c /dev/null --rootdir="$SLICECTL_CHECKOUT" --confcutdir=tests/e2e \
    -p no:cacheprovider --strict-markers -o asyncio_mode=auto -o asyncio_default_fixture_loop_scope=function \
    -v -rfEs --durations=15 --junitxml="$SLICECTL_RESULTS/junit.$boot.xml" "$@" "${paths[@]}"
