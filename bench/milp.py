#!/usr/bin/python3
"""milp.py: bounds on the cloud cost of the cheapest schedule of a trace on
4 x 8 GPUs (or --nodes x --gpus) that meets a mean-wait target, from
time-indexed MILPs solved with CBC (Debian's coinor-cbc); bench/milp.sh.

usage: milp.py TRACE.csv TARGET_MEAN_WAIT_S SLOT_S [--gpus 32] [--nodes 4]
               [--price 2.5] [--late S] [--grow G] [--upper [--per-node]]
               [--sec 600] [--dir DIR]

The trace is spillway CSV (id,submit_s,gpus,runtime_s); every job counts in
the mean (N jobs), a job in the cloud costs gpus x runtime x price / 3600 and
runs at the same speed.  D = SLOT_S.

LOWER BOUND (default): a relaxation, so that every real schedule, whatever
its policy and with the future known, maps onto a solution at the same cost:

  y_j      1 if job j runs in the cloud; charged a wait of 0 (a real burst
           waits >= 0);
  x_{j,i}  1 if job j starts on-prem at a real time s in its i-th start
           interval [submit_j + W_i, submit_j + W_{i+1}); charged a wait of
           W_i (<= s - submit_j); it occupies only the slots of length D that
           its run covers whatever s in that interval: the slots inside
           [submit_j + W_{i+1}, submit_j + W_i + runtime_j).  W steps by D up
           to LATE (default 2 h) and then grows by GROW (1.25) a step; no
           interval starts past N x TARGET (a schedule meeting the target
           waits at most that in all);
  sum_i x_{j,i} + y_j = 1;
  per slot: the GPUs of the jobs occupying it <= GPUS (the pool as one,
           which also relaxes the packing onto nodes);
  sum of the charged waits <= N x TARGET;
  minimise the cloud cost.
A job that occupies no slot even when it starts at once is left out (it runs
on-prem at no wait in the model).  Smaller D, tighter bound.

UPPER BOUND (--upper): a restriction, so that its solution is a real
schedule: job j starts exactly at a slot boundary kD >= submit_j, charged its
real wait kD - submit_j, and occupies every slot its run touches (k ..
k + ceil(runtime/D) - 1), the pool's GPUs capped per slot.  It prints
node_packed=1 when that schedule also fits 4 nodes of 8 by best fit in start
order.  With --per-node each start has a node and each node's GPUs are capped
(every job on one node, as the engine places them): its solution is a
schedule the real fleet can run, so its cost bounds the optimum from above.

Prints key=value lines: bound_usd (the lower model: CBC's proven bound, the
optimum when status=optimal, else its best bound when it stopped on time;
the upper model: the same figure, but a schedule's cost is incumbent_usd),
incumbent_usd, status, the model's size and the solve seconds.
"""
import argparse
import csv
import math
import os
import re
import subprocess
import sys
import time


def packs(jobs, sol, D, nodes, per):
    """1 if the upper model's schedule (pool-level) also fits on NODES nodes
    of PER GPUs each, every job on one node, best fit in start order."""
    start = {}
    for line in open(sol):
        f = line.split()
        if len(f) >= 3 and f[1].startswith("x") and float(f[2]) > 0.5:
            j, k = f[1][1:].split("_")
            start[int(j)] = int(k) * D
    ev = sorted((start[j], j) for j in start)
    free = [per] * nodes
    running = []   # (end, node, gpus)
    for t, j in ev:
        g, rt = jobs[j][2], jobs[j][3]
        for e in [r for r in running if r[0] <= t + 1e-9]:
            free[e[1]] += e[2]
            running.remove(e)
        fit = [n for n in range(nodes) if free[n] >= g]
        if not fit:
            return 0
        n = min(fit, key=lambda n: free[n])
        free[n] -= g
        running.append((t + rt, n, g))
    return 1


def verify(jobs, sol, D, target, cap, per_node):
    """For an upper model's solution: 1 if it is a schedule meeting the
    target, checked on the exact times (start kD, end kD + runtime), each
    node's or the pool's GPUs never above cap; the jobs it does not start
    burst (wait 0)."""
    run = []   # (start, end, node, gpus)
    wsum = 0.0
    for line in open(sol):
        f = line.split()
        if len(f) >= 3 and f[1].startswith("x") and float(f[2]) > 0.5:
            p = f[1][1:].split("_")
            j, k = int(p[0]), int(p[1])
            node = int(p[2]) if per_node else 0
            sub, g, rt = jobs[j][1], jobs[j][2], jobs[j][3]
            if k * D < sub - 1e-6:
                return 0
            wsum += k * D - sub
            run.append((k * D, k * D + rt, node, g))
    if wsum > len(jobs) * target + 1e-6:
        return 0
    for s0, _, node, _ in run:
        busy = sum(g for s1, e1, n1, g in run if n1 == node and s1 <= s0 < e1)
        if busy > cap:
            return 0
    return 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("target", type=float)
    ap.add_argument("slot", type=float)
    ap.add_argument("--gpus", type=int, default=32)
    ap.add_argument("--price", type=float, default=2.5)
    ap.add_argument("--late", type=float, default=7200)
    ap.add_argument("--grow", type=float, default=1.25)
    ap.add_argument("--upper", action="store_true")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--per-node", action="store_true")
    ap.add_argument("--sec", type=float, default=600)
    ap.add_argument("--dir", default=".")
    a = ap.parse_args()
    D = a.slot

    jobs = []
    with open(a.trace) as f:
        for r in csv.DictReader(f):
            jobs.append((r["id"], float(r["submit_s"]), int(r["gpus"]), float(r["runtime_s"])))
    n = len(jobs)
    budget = n * a.target

    cost = {}      # j -> cloud cost of job j, $
    xs = {}        # j -> [(i, wait_s)]: its start intervals
    occ = {}       # slot m -> [(j, i, gpus)]
    small = 0
    # Start intervals [submit + W_i, submit + W_{i+1}): W steps by D up to
    # LATE, then grows by GROW a step; none starts past the budget.
    W = [0.0]
    while W[-1] <= budget:
        W.append(W[-1] + D if W[-1] < a.late else W[-1] * a.grow)
    for j, (_, sub, g, rt) in enumerate(jobs):
        lst = []
        if a.upper and rt > 0:
            # start at kD exactly, occupy every slot the run touches
            ks = []
            k = int(math.ceil(sub / D))
            while k * D - sub < a.late:
                ks.append(k)
                k += 1
            for w in W:
                if w >= a.late and int(math.ceil((sub + w) / D)) > ks[-1]:
                    ks.append(int(math.ceil((sub + w) / D)))
            for k in ks:
                if k * D - sub > budget:
                    break
                lst.append((k, k * D - sub))
                for m in range(k, k + int(math.ceil(rt / D))):
                    occ.setdefault(m, []).append((j, k, g))
        for i in range(len(W) - 1) if not a.upper else ():
            first = int(math.ceil((sub + W[i + 1]) / D))
            last = int(math.floor((sub + W[i] + rt) / D)) - 1
            if i == 0 and last < first:
                break   # occupies nothing even at once: free, left out
            lst.append((i, W[i]))
            for m in range(first, last + 1):
                occ.setdefault(m, []).append((j, i, g))
        if not lst:
            small += 1
            continue
        cost[j] = g * rt * a.price / 3600.0
        xs[j] = lst

    tag = "%s_D%g" % (("upper_nodes" if a.per_node else "upper") if a.upper else "milp", D)
    lp = os.path.join(a.dir, tag + ".lp")
    sol = os.path.join(a.dir, tag + ".sol")
    # --per-node (with --upper): one start variable a node, each node's
    # GPUs capped, so the schedule also places every job on one node
    nodesets = list(range(a.nodes)) if a.per_node else [None]
    per = a.gpus // a.nodes if a.per_node else a.gpus

    def v(j, k, n):
        return "x%d_%d" % (j, k) if n is None else "x%d_%d_%d" % (j, k, n)
    nx = sum(len(v) for v in xs.values()) * len(nodesets)
    rows = 0
    with open(lp, "w") as f:
        f.write("Minimize\n obj:")
        for j in cost:
            f.write(" + %.9f y%d" % (cost[j], j))
        f.write("\nSubject To\n")
        for j in xs:
            f.write(" one%d: y%d" % (j, j))
            for k, _ in xs[j]:
                for nd in nodesets:
                    f.write(" + " + v(j, k, nd))
            f.write(" = 1\n")
            rows += 1
        for m in sorted(occ):
            ent = occ[m]
            if sum(g for _, _, g in ent) <= per:
                continue   # cannot bind
            for nd in nodesets:
                f.write(" cap%d_%s:" % (m, nd))
                for j, k, g in ent:
                    f.write(" + %d %s" % (g, v(j, k, nd)))
                f.write(" <= %d\n" % per)
                rows += 1
        # waits in hours, so that the coefficients stay near 1
        f.write(" wait:")
        any_w = False
        for j in xs:
            for k, w in xs[j]:
                if w > 0:
                    for nd in nodesets:
                        f.write(" + %.9f %s" % (w / 3600.0, v(j, k, nd)))
                    any_w = True
        if not any_w:
            f.write(" + 0 y%d" % next(iter(cost)) if cost else " 0")
        f.write(" <= %.9f\n" % (budget / 3600.0))
        rows += 1
        f.write("Binaries\n")
        for j in cost:
            f.write(" y%d\n" % j)
            for k, _ in xs[j]:
                for nd in nodesets:
                    f.write(" %s\n" % v(j, k, nd))
        f.write("End\n")

    if not cost:
        print("bound_usd=0\nincumbent_usd=0\nstatus=optimal\nsolve_s=0")
        return
    t0 = time.time()
    p = subprocess.run(["cbc", lp, "sec", "%g" % a.sec, "ratio", "0", "allow", "0",
                        "solve", "solu", sol],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.time() - t0
    with open(os.path.join(a.dir, tag + ".log"), "w") as f:
        f.write(p.stdout)
    out = p.stdout
    m = re.search(r"^Result - (.*)$", out, re.M)
    result = m.group(1).strip() if m else "?"
    obj = re.search(r"^Objective value:\s+([-0-9.eE+]+)", out, re.M)
    lb = re.search(r"^Lower bound:\s+([-0-9.eE+]+)", out, re.M)
    if result.startswith("Optimal"):
        status = "optimal"
        bound = float(obj.group(1))
    elif "infeasible" in result.lower():
        status = "infeasible"
        bound = float("nan")
    else:
        status = "stopped"
        bound = float(lb.group(1)) if lb else float("nan")
    print("model=%s" % (("upper_nodes" if a.per_node else "upper") if a.upper else "lower"))
    print("jobs=%d" % n)
    print("jobs_in_model=%d" % len(cost))
    print("jobs_free=%d" % small)
    print("slot_s=%g" % D)
    print("late_s=%g" % a.late)
    print("grow=%g" % a.grow)
    print("binaries=%d" % (nx + len(cost)))
    print("rows=%d" % rows)
    print("status=%s" % status)
    print("bound_usd=%.4f" % bound)
    print("incumbent_usd=%s" % (obj.group(1) if obj else "-"))
    print("solve_s=%.1f" % dt)
    if a.upper and status in ("optimal", "stopped") and obj:
        print("schedule_ok=%d" % verify(jobs, sol, D, a.target,
                                        a.gpus // a.nodes if a.per_node else a.gpus, a.per_node))
        started = set()
        for line in open(sol):
            f = line.split()
            if len(f) >= 3 and f[1].startswith("x") and float(f[2]) > 0.5:
                started.add(int(f[1][1:].split("_")[0]))
        print("schedule_usd=%.4f" % sum(g * rt * a.price / 3600.0 for j, (_, _, g, rt)
                                         in enumerate(jobs) if j not in started and rt > 0))
    if a.upper and not a.per_node and status == "optimal":
        print("node_packed=%d" % packs(jobs, sol, D, a.nodes, a.gpus // a.nodes))
    if status == "infeasible" or math.isnan(bound):
        print("milp.py: CBC said: %s (log in %s)" % (result, a.dir), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
