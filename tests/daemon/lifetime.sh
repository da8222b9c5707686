#!/bin/sh
# lifetime.sh: max_instance_lifetime_s bounds any cloud instance.  A job
# longer than the bound sees its instance released at that age and is
# requeued as after a preemption (not a failure, no retry used); it then
# runs on a fresh instance.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 4

mkconfig "$T/life.yaml" 1 none
printf '  max_instance_lifetime_s: 3\n' >>"$T/life.yaml"
start_daemon "$T/life.yaml" "$T/state"
ok $? "spillway serve starts with max_instance_lifetime_s: 3"

# 2 GPUs never fit the 1-slot pool: the job bursts at once.
j=$(submit ml --gpus 2 --name long --est-runtime 10s -- sleep 10)
wait_for "$j" running 5 && [ "$(field "$j" 'd["where"]')" = cloud ]
ok $? "a 2-GPU job runs in the cloud ($j)"

requeued() { grep -q "instance .* reached max_instance_lifetime_s" "$DLOG"; }
wait_until 8 requeued
ok $? "its instance is released once it is 3 s old"

back() { grep -q "job $j requeued after its instance was preempted" "$DLOG"; }
wait_until 5 back && wait_for "$j" running 5
ok $? "the job is requeued (not failed) and runs again on a fresh instance"
