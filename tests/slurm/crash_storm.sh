#!/bin/sh
# crash_storm.sh: the launch protocol of the Slurm backend under a kill -9
# storm (tests/daemon/storm-lib says what runs and what must hold), on a
# real Slurm 22.05 (nodes n1, n2, 2 fake GPUs each): the daemon killed -9
# and restarted 8 times while its jobs are submitted with sbatch, cancelled
# with scancel and end.  No job runs twice (never two Slurm jobs for one
# attempt, none after a cancel), no GPU of a node is held by two runs, no
# acknowledged submit or cancel is lost.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
# shellcheck source=tests/slurm/slurm-lib
. "$(dirname "$0")/slurm-lib"
slurm_up 14 "a Slurm cluster of 2 nodes x 2 GPUs is up" --nodes 2 --gpus 2 --cloud 0
SLURM_ON_EXIT='scancel --quiet --partition=onprem >/dev/null 2>&1'

cat >"$T/serve.yaml" <<EOF2
onprem:
  - {name: gpu, backend: slurm, partition: onprem, cost_usd_per_gpu_h: 1.10}
policy: {queue: fifo, backfill: easy, wait: never}
$(daemon_yaml)
EOF2
STORM_WHAT="a slurm pool of 2 nodes x 2 GPUs" STORM_HOSTS="n[12]" STORM_JOBS=15 STORM_WAIT_S=180

# shellcheck source=tests/daemon/storm-lib
. "$ROOT/tests/daemon/storm-lib"
# Slurm's own record: one Slurm job per launch token, never two.
squeue -h -t all -o '%k' | grep -E '^[0-9a-f]{12}\.j-' | sort | uniq -d >"$T/dup"
[ ! -s "$T/dup" ] && [ -n "$(squeue -h -t all -o '%k' | grep -E '^[0-9a-f]{12}\.j-')" ]
ok $? "Slurm holds one job per launch token ($(squeue -h -t all | wc -l) Slurm jobs)" || diag "$(cat "$T/dup")"
done_testing
