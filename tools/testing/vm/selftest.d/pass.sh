# SPDX-License-Identifier: GPL-2.0
# Control case: a test that passes must make the run pass.
check "true succeeds" true
expect_fail "false fails" false
