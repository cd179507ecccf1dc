# SPDX-License-Identifier: GPL-2.0
# A guest that keeps both its CPUs busy and prints a line now and then, for
# tools/testing/check-busy: the load another developer's guests put on the
# machine. It never ends; check-busy kills it.
check "started" true
for cpu in 0 1; do
	taskset -c $cpu sh -c 'while :; do i=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done; echo "# cpu '$cpu' busy"; done' &
done
wait
