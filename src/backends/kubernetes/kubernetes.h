/* kubernetes.h: the Kubernetes backend, which runs each attempt of a job as
 * one batch/v1 Job in a namespace of a cluster (docs/kubernetes.md).
 *
 * How a job runs:
 * - launch() builds the Job (name "spw-JOBID-HASH" from the launch token;
 *   labels spillway.dev/daemon and spillway.dev/job, annotations
 *   spillway.dev/token and spillway.dev/job-id; one container "job" with the
 *   image (the job's, else the pool's; required), command or /bin/sh -c
 *   SCRIPT, env, workingDir, nvidia.com/gpu limits; backoffLimit 0,
 *   activeDeadlineSeconds from max_runtime, ttlSecondsAfterFinished; the
 *   pool's nodeSelector, tolerations and priorityClassName) and queues its
 *   create to the backend's thread: launch() returns at once.  A gang is an
 *   Indexed Job (parallelism = completions = nodes) with a headless Service
 *   of the Job's name: RANK is the completion index, MASTER_ADDR the host
 *   of index 0.  A create answered 409 AlreadyExists adopts the Job when it
 *   carries the same token, so a retried create never runs a job twice.
 * - With local_queue (Kueue), the Job is created suspended with label
 *   kueue.x-k8s.io/queue-name; changed() reports it (running) only once
 *   Kueue unsuspended it.
 * - Three threads follow the daemon's Jobs (label spillway.dev/daemon),
 *   the cluster's pods and its Nodes: each lists its collection once, then
 *   watches it from the list's resourceVersion (allowWatchBookmarks; a
 *   stream that ends is resumed from the last resourceVersion seen) and
 *   lists again only after 410 Gone.  They start at the first tick(),
 *   adopt(), find() or nodes_async().  tick() applies what they saw when
 *   something changed (and once a second for Jobs held as lost): a Job
 *   Complete exits 0; Failed gives its pods' container exit code (or
 *   signal); DeadlineExceeded is SIGNALED 9 cause MAX_RUNTIME; a Job whose
 *   pods failed with no exit code (their node was lost) or that is gone is
 *   LOST, 10 s later (so that the daemon sees a lost node go down first and
 *   fails the job over: then it is cancelled); a cancelled one SIGNALED 15
 *   cause CANCELLED.  While a pod runs, a thread of its own follows its
 *   log (pods/log?follow=true; at most 256 pods at once) into
 *   LOG_DIR/JOBID.out (rank 0) or LOG_DIR/JOBID.rankN.out; before an exit
 *   is reported the request thread reads each pod's whole log and appends
 *   what the file still lacks.
 * - cancel() queues a delete with propagationPolicy Background and
 *   gracePeriodSeconds kill_grace_s (the kubelet sends SIGTERM, then
 *   SIGKILL after it).  signal() of SIGTERM or SIGINT deletes the Job's
 *   pods with that grace, of SIGKILL with grace 0; other signals are
 *   refused (they would need pods/exec and a kill in the image).
 * - adopt() and find() read the watched Jobs (waiting, at start-up, for
 *   the first list); find() fences a token it does not find: a Job
 *   carrying it that appears later is deleted at once.
 * - nodes(): the cluster's Nodes, GPUs from allocatable nvidia.com/gpu,
 *   model from label nvidia.com/gpu.product, down when cordoned or not
 *   Ready (nodes() lists them; nodes_async() answers from the Nodes' watch
 *   when it changed); foreign_async(): GPUs (limits) of running or bound
 *   pods whose token annotation does not start with the daemon's prefix.
 *
 * Not thread-safe: call it from one thread.  Network I/O runs on the
 * backend's own threads (one for requests, three for watches), except
 * nodes() (start-up). */
#ifndef SPW_BACKENDS_KUBERNETES_KUBERNETES_H
#define SPW_BACKENDS_KUBERNETES_KUBERNETES_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "util/error.h"

typedef struct spw_kube spw_kube_t;

/* Options for spw_kube_create; all borrowed for the call only. */
typedef struct spw_kube_opts {
    const char *kubeconfig;     /* kubeconfig file; NULL = $KUBECONFIG,
                                   ~/.kube/config, else in-cluster */
    const char *context;        /* its context; NULL = current-context */
    const char *ns;             /* namespace of the Jobs; NULL = the
                                   context's, else "default" */
    const char *const *node_selector; /* NULL-terminated "KEY=VALUE"; may be NULL */
    const char *tolerations_json; /* a JSON array of Toleration objects; NULL = none */
    const char *priority_class; /* priorityClassName; NULL = none */
    const char *local_queue;    /* Kueue LocalQueue; NULL = no Kueue */
    const char *image;          /* default image for jobs that name none;
                                   NULL = a job must name one */
    const char *log_dir;        /* where JOBID.out is written; required */
    double kill_grace_s;        /* cancel's gracePeriodSeconds; 0 = 10 */
    double ttl_after_finished_s; /* ttlSecondsAfterFinished; 0 = 3600 */
    double timeout_s;           /* one API request, seconds; 0 = 30 */
    double watch_timeout_s;     /* a watch's timeoutSeconds (then it is
                                   resumed from its last resourceVersion),
                                   seconds; 0 = 300 */
} spw_kube_opts_t;

/* The function table: the core members, find and changed, and the node
 * inventory (nodes, nodes_async, set_nodes, node_index, foreign_async). */
extern const struct spw_backend_ops spw_kube_ops;

/* Makes a backend with no jobs: reads the kubeconfig, starts its thread,
 * asks the cluster nothing yet.  NULL with a sentence in err for a bad
 * kubeconfig or options. */
spw_kube_t *spw_kube_create(const spw_kube_opts_t *opts, spw_error_t *err);

/* Stops its thread (after the request in flight) and forgets every job
 * without deleting it.  NULL-safe. */
void spw_kube_destroy(spw_kube_t *kb);

/* The Job name of a launch token: "spw-" + the job id (lowercase, [a-z0-9-],
 * at most 40) + "-" + 10 hex digits of a hash of the token, into out (64
 * bytes). */
void spw_kube_job_name(const char *job_id, const char *token, char out[64]);

/* Jobs this backend created (a 409 adopted is not counted): for tests. */
uint64_t spw_kube_creates(const spw_kube_t *kb);

/* What the backend's watches did so far, for tests and benchmarks. */
typedef struct spw_kube_watch_stats {
    uint64_t lists;             /* lists of the Jobs, pods and Nodes made */
    uint64_t relists;           /* of which after a 410 Gone */
    uint64_t events;            /* ADDED/MODIFIED/DELETED events applied */
    uint64_t job_events;        /* of which of the daemon's Jobs */
} spw_kube_watch_stats_t;

/* Fills *out (under the backend's lock). */
void spw_kube_watch_stats(spw_kube_t *kb, spw_kube_watch_stats_t *out);

#endif
