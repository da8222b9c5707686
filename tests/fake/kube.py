#!/usr/bin/python3
"""kube.py: a fake Kubernetes API server for spillway's tests, on loopback.

Plain Python 3 (Debian's /usr/bin/python3, standard library only) plus the
`openssl` command.  No kube-apiserver can run on the test machines; this fake
follows the API conventions closely enough for the real kubectl (1.32) and
for spillway's Kubernetes backend, and it runs each pod's container command
as a real local process, so exit codes and logs are real.

CLI
  /usr/bin/python3 tests/fake/kube.py --dir DIR [options]

  --dir DIR            its files (created): ca.crt ca.key server.crt server.key
                       (a fresh self-signed CA and a server cert for
                       127.0.0.1/localhost, made with `openssl` at start),
                       kubeconfig, token, logs/NS/POD/CONTAINER.log (each
                       container's stdout+stderr), pods/NS/POD/ (a pod's
                       working directory when it names none)
  --url-file FILE      once listening, write the server URL there (atomically:
                       wait for the file, not for a sleep)
  --host ADDR          listen address (default 127.0.0.1; loopback only)
  --port N             listen port (default 0: a free one)
  --http               plain HTTP instead of HTTPS (kubectl then sends no token:
                       use --no-auth with it)
  --token TOK          the bearer token accepted (default fake-kube-token)
  --no-auth            accept requests without a token
  --namespace NS       the kubeconfig context's namespace (default default)
  --node SPEC          a node, repeatable: NAME:GPUS[:PRODUCT] (e.g.
                       gpu-a:8:NVIDIA-H100-80GB-HBM3); also POST /_fake/nodes
  --schemas DIR        the OpenAPI v3 documents (api__v1_openapi.json,
                       apis__batch__v1_openapi.json); default
                       REPO/../shared/data/contracts/kubernetes/openapi-v3.
                       Missing: exit status 3 with a message on stderr
  --watch-window N     watch events kept (default 1000): a watch or continue
                       token older than the window gets 410 Gone (Expired)
  --bookmark-s S       a BOOKMARK every S seconds to watches that allow them
                       (default 1)
  --log FILE           append one JSON line per call and per violation

Authentication (HTTPS): `DIR/kubeconfig` holds the cluster (server URL,
certificate-authority-data = DIR/ca.crt), the user (token: the --token value,
also in DIR/token), and a context "fake" (current) with the namespace.  A
request without `Authorization: Bearer TOK` gets 401 (Status reason
Unauthorized).  `DIR/kubeconfig-exec` is the same with an exec credential
plugin (client.authentication.k8s.io/v1, /bin/sh printing an ExecCredential)
in place of the token; `DIR/kubeconfig-cert` authenticates with a client
certificate (DIR/client.crt, DIR/client.key; CN fake-user, signed by the CA:
the server asks for one and accepts any its CA signed).  DIR/serviceaccount/
{token,ca.crt,namespace} is what a pod's service account mount holds (for
in-cluster configuration).  Clients verify the server with DIR/ca.crt.

Kubernetes API served (JSON only: a protobuf, CBOR or YAML body gets 415, so
`kubectl create job|run` fail while `kubectl create|apply -f` work; Table asks
get plain objects, which kubectl prints itself)
  /version, /api, /apis (plain APIVersions / APIGroupList), /api/v1,
  /apis/batch/v1, /apis/kueue.x-k8s.io/v1beta1 (APIResourceList),
  /openapi/v3 and /openapi/v3/{api/v1,apis/batch/v1} (the schema files).
  core/v1: pods (+ pods/log, pods/status), services, nodes (+ nodes/status),
  namespaces, events; batch/v1: jobs (+ jobs/status);
  kueue.x-k8s.io/v1beta1: workloads (not schema-checked: no schema shipped).
  Verbs: get, list, watch, create (POST), update (PUT), patch (merge-patch and
  strategic-merge-patch, both applied as a JSON merge patch), delete.
  - metadata: resourceVersion (one cluster-wide counter), uid,
    creationTimestamp, generation (bumped on spec change), generateName.
  - create of an existing name: 409 AlreadyExists; update with a stale
    resourceVersion: 409 Conflict; missing: 404 NotFound.
  - validation: every created/updated object is checked against the OpenAPI
    v3 schema of its kind (types, int32 range, required fields, unknown fields,
    $ref/allOf followed, Quantity and IntOrString, date-time) plus the enums
    of the API's Go types (the v3 documents list none: restartPolicy,
    completionMode, dnsPolicy, imagePullPolicy, Service type, taint effect,
    toleration operator, protocol) and the server's own rules (names are
    DNS-1123, containers non-empty with unique names and an image, a Job's
    template restartPolicy Never|OnFailure, Indexed needs completions, label
    syntax, nvidia.com/gpu requests equal to limits and whole).  Unknown fields:
    400 BadRequest "strict decoding error: unknown field ..."; other errors:
    422 Invalid with details.causes[].field.  Each one is recorded in
    "violations" (GET /_fake/state) and in --log.
  - list: labelSelector (=, ==, !=, in, notin, exists, !key), fieldSelector
    (metadata.name, metadata.namespace, spec.nodeName, status.phase; = == !=),
    limit + continue (a token older than the window: 410 Expired; the next
    chunk is read from the current state, not a snapshot), items without
    kind/apiVersion (as the real server), metadata.resourceVersion.
  - watch (?watch=1 or true): resourceVersion N streams every event after N
    (absent or 0: ADDED for every current object first), allowWatchBookmarks
    (BOOKMARK with metadata.resourceVersion every --bookmark-s), timeoutSeconds;
    N older than the window: an ERROR event with a 410 Expired Status, then the
    stream ends.  Chunked JSON lines {"type": ..., "object": ...}.
  - delete: DeleteOptions body or query (propagationPolicy, gracePeriodSeconds).
    A Job's default is Orphan (as batch/v1's); Background removes the Job at
    once and its pods (and Workload) after; Foreground marks the Job
    (deletionTimestamp, finalizer foregroundDeletion) until its pods are gone.
    A running pod gets SIGTERM to its process group, SIGKILL after its grace
    period, and goes once its processes have exited.
  - errors are Status objects (kind Status, status Failure, reason, code,
    details).

Controllers
  - job controller: NonIndexed and Indexed Jobs (pod names JOB-XXXXX and
    JOB-INDEX-XXXXX, label + annotation batch.kubernetes.io/job-completion-index,
    env JOB_COMPLETION_INDEX, hostname JOB-INDEX), parallelism, completions,
    backoffLimit (failed pods beyond it: Failed BackoffLimitExceeded),
    activeDeadlineSeconds (Failed DeadlineExceeded), spec.suspend (Suspended
    condition; pods deleted; unsuspend resumes), status active / ready /
    succeeded / failed / startTime / completionTime / completedIndexes /
    conditions SuccessCriteriaMet + Complete or FailureTarget + Failed,
    ttlSecondsAfterFinished (Background delete).  A pod of the Job that is
    gone before it ended counts as failed.  restartPolicy OnFailure is run as
    Never (a failed container fails its pod).
  - Kueue: a Job created suspended with label kueue.x-k8s.io/queue-name gets a
    Workload (kueue.x-k8s.io/v1beta1, owned by the Job, spec.queueName,
    conditions QuotaReserved/Admitted False); POST /_fake/admit admits it
    (conditions True, status.admission) and unsuspends the Job.
  - scheduler: a pod without spec.nodeName goes to a Ready, schedulable node
    whose labels match spec.nodeSelector, whose NoSchedule/NoExecute taints it
    tolerates and whose allocatable nvidia.com/gpu minus the GPUs of its
    non-terminal pods covers the pod's (limits, else requests); otherwise it
    stays Pending with PodScheduled False (reason Unschedulable).
  - kubelet: a bound pod on a Ready node runs each container's command + args
    (with $(VAR) expansion) as a real process in its own session: env from
    env[].value and valueFrom.fieldRef (metadata.name/namespace/uid,
    metadata.labels['k'], metadata.annotations['k'], spec.nodeName,
    status.podIP, status.hostIP), plus HOSTNAME, NVIDIA_VISIBLE_DEVICES (the
    node's GPU indices given to it), KUBERNETES_SERVICE_HOST/PORT and (not
    Kubernetes, for the tests' ledgers) SPILLWAY_TEST_HOST = the node; cwd
    workingDir (created if missing) or DIR/pods/NS/POD.  A container without
    command and args cannot run (the fake has no images): terminated exit 128
    reason StartError.  Statuses: phase Pending -> Running -> Succeeded|Failed,
    containerStatuses waiting/running/terminated (exitCode, reason Completed |
    Error, signal), conditions PodScheduled/Initialized/ContainersReady/Ready.
  - GET pods/NAME/log: the container's output (container=, tailLines=,
    follow=true streams until the container ends).

Control endpoints (not Kubernetes; no token; JSON in and out)
  GET  /_fake/state        {"url", "rv", "oldest_rv", "objects": {resource:
                            [objects]}, "calls": [...], "violations": [...],
                            "processes": {"NS/POD": [pid,...]}}
       a call: {"seq", "t", "method", "path", "query", "status", "agent"}
       a violation: {"seq", "t", "method", "path", "kind", "name", "field",
                     "message", "code"}
  POST /_fake/nodes        {"name", "gpus"?, "product"?, "labels"?, "taints"?,
                            "unschedulable"?, "ready"?} or a list of them:
                            create or patch nodes -> {"nodes": [names]}
  POST /_fake/node-notready {"name", "evict"? (true)}: Ready False (Unknown),
                            taint node.kubernetes.io/unreachable NoExecute;
                            with evict its pods' processes are killed and the
                            pods fail (DisruptionTarget, reason NodeLost) and go
  POST /_fake/node-ready   {"name"}: Ready True again, taint removed
  POST /_fake/pod-fail     {"name", "namespace"? (default), "exitCode"? (1),
                            "reason"? (Error)}: its processes get SIGKILL and
                            the pod fails with that exit code (a pod without
                            a process fails at once)
  POST /_fake/foreign-pod  {"name", "namespace"?, "node", "gpus"}: a Running
                            pod not made by any Job (no process) holding GPUs
  POST /_fake/admit        {"job", "namespace"?}: Kueue admission (above)
  POST /_fake/seed-jobs    {"namespace"?, "jobs": [Job objects]}: creates them
                           at once, as POSTs would (schema checks, defaults),
                           for benchmarks with thousands of Jobs
  POST /_fake/compact      {"expire_watches"?}: forget every watch event so far
                           (with expire_watches, every open watch gets the
                           410 Expired ERROR event and ends, as after an etcd
                           compaction) -> {"oldest_rv"}
  POST /_fake/config       {"watch_window"?, "bookmark_s"?, "delete_delay_s"?,
                           "start_delay_s"?} (delete_delay_s: each DELETE of
                           a Job is held that long before it is handled, as
                           by a slow server; start_delay_s: --start-delay-s)

SIGTERM or SIGINT: kills every pod's process group and exits.
"""

import argparse
import base64
import copy
import datetime
import json
import os
import random
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# resource -> (groupVersion, kind, namespaced, schema name or None, short names)
RES = {
    'pods': ('v1', 'Pod', True, 'io.k8s.api.core.v1.Pod', ['po']),
    'services': ('v1', 'Service', True, 'io.k8s.api.core.v1.Service', ['svc']),
    'nodes': ('v1', 'Node', False, 'io.k8s.api.core.v1.Node', ['no']),
    'namespaces': ('v1', 'Namespace', False, 'io.k8s.api.core.v1.Namespace', ['ns']),
    'events': ('v1', 'Event', True, 'io.k8s.api.core.v1.Event', ['ev']),
    'jobs': ('batch/v1', 'Job', True, 'io.k8s.api.batch.v1.Job', []),
    'workloads': ('kueue.x-k8s.io/v1beta1', 'Workload', True, None, ['wl']),
}
SUBRES = {'pods': ['log', 'status'], 'nodes': ['status'], 'jobs': ['status'],
          'workloads': ['status']}
GPU = 'nvidia.com/gpu'
# Enums of the API's Go types (the OpenAPI v3 documents carry none).
ENUMS = {
    'restartPolicy': ['Always', 'OnFailure', 'Never'],
    'completionMode': ['NonIndexed', 'Indexed'],
    'dnsPolicy': ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'],
    'imagePullPolicy': ['Always', 'Never', 'IfNotPresent'],
    'effect': ['NoSchedule', 'PreferNoSchedule', 'NoExecute'],
    'protocol': ['TCP', 'UDP', 'SCTP'],
    'propagationPolicy': ['Orphan', 'Background', 'Foreground'],
}
ENUM_IN = {  # field name -> schema names where the enum applies
    'restartPolicy': ('io.k8s.api.core.v1.PodSpec',),
    'completionMode': ('io.k8s.api.batch.v1.JobSpec',),
    'dnsPolicy': ('io.k8s.api.core.v1.PodSpec',),
    'imagePullPolicy': ('io.k8s.api.core.v1.Container',),
    'effect': ('io.k8s.api.core.v1.Taint', 'io.k8s.api.core.v1.Toleration'),
    'protocol': ('io.k8s.api.core.v1.ContainerPort', 'io.k8s.api.core.v1.ServicePort'),
}
EXTRA_ENUMS = {('io.k8s.api.core.v1.ServiceSpec', 'type'):
               ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'],
               ('io.k8s.api.core.v1.Toleration', 'operator'): ['Exists', 'Equal']}
DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
DNS_SUB = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
LABEL_VAL = re.compile(r'^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')
QUANTITY = re.compile(r'^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$')
DATE_TIME = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$')

ARGS = None
CV = threading.Condition(threading.RLock())   # guards everything below
STATE = None


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def parse_iso(s):
    return datetime.datetime.strptime(s, '%Y-%m-%dT%H:%M:%SZ').replace(
        tzinfo=datetime.timezone.utc).timestamp()


def rand5():
    return ''.join(random.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))


def status_obj(code, reason, message, details=None):
    s = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
         'message': message, 'reason': reason, 'code': code}
    if details:
        s['details'] = details
    return s


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        Exception.__init__(self, message)
        self.status = status_obj(code, reason, message, details)


def not_found(res, name):
    group = RES[res][0].split('/')[0] if '/' in RES[res][0] else ''
    d = {'name': name, 'kind': res}
    if group:
        d['group'] = group
    return ApiError(404, 'NotFound', '%s "%s" not found' %
                    (res + ('.' + group if group else ''), name), d)


def gpu_qty(v):
    """nvidia.com/gpu quantity -> int (None when not a whole number)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str) and re.match(r'^\d+$', v):
        return int(v)
    return None


# --------------------------------------------------------------- schemas ---

class Schemas:
    def __init__(self, d):
        self.comp = {}
        self.files = {}
        for f, key in (('api__v1_openapi.json', 'api/v1'),
                       ('apis__batch__v1_openapi.json', 'apis/batch/v1')):
            p = os.path.join(d, f)
            with open(p, 'rb') as fh:
                raw = fh.read()
            self.files[key] = raw
            self.comp.update(json.loads(raw)['components']['schemas'])

    def name_of(self, sch):
        if '$ref' in sch:
            return sch['$ref'].rsplit('/', 1)[1]
        if len(sch.get('allOf', [])) == 1:
            return self.name_of(sch['allOf'][0])
        return None

    def resolve(self, sch):
        while True:
            if '$ref' in sch:
                sch = self.comp[sch['$ref'].rsplit('/', 1)[1]]
            elif len(sch.get('allOf', [])) == 1 and 'type' not in sch:
                sch = sch['allOf'][0]
            else:
                return sch

    def check(self, sch, v, path, errs, sname=None):
        """Appends (field, cause reason, message) to errs."""
        n = self.name_of(sch)
        if n:
            sname = n
        sch = self.resolve(sch)
        if v is None:
            return
        if 'oneOf' in sch:
            types = [x.get('type') for x in sch['oneOf']]
            ok = any(self._is(t, v) for t in types)
            if not ok:
                errs.append((path, 'FieldValueInvalid', 'Invalid value: %s: must be %s'
                             % (json.dumps(v), ' or '.join(types))))
            elif 'number' in types and isinstance(v, str) and not QUANTITY.match(v):
                errs.append((path, 'FieldValueInvalid', 'Invalid value: "%s": quantities '
                             'must match the regular expression \'%s\'' % (v, QUANTITY.pattern)))
            return
        t = sch.get('type')
        if sch.get('x-kubernetes-preserve-unknown-fields') and 'properties' not in sch:
            return
        if t == 'object' or 'properties' in sch or 'additionalProperties' in sch:
            if not isinstance(v, dict):
                errs.append((path, 'FieldValueTypeInvalid',
                             'Invalid value: %s: must be an object' % json.dumps(v)[:80]))
                return
            props = sch.get('properties', {})
            for r in sch.get('required', []):
                if r not in v:
                    errs.append((path + '.' + r if path else r, 'FieldValueRequired',
                                 'Required value'))
            for k, x in v.items():
                sub = (path + '.' + k) if path else k
                if k in props:
                    self.check(props[k], x, sub, errs, None)
                    en = EXTRA_ENUMS.get((sname, k))
                    if en is None and k in ENUM_IN and sname in ENUM_IN[k]:
                        en = ENUMS[k]
                    if en is not None and isinstance(x, str) and x not in en:
                        errs.append((sub, 'FieldValueNotSupported',
                                     'Unsupported value: "%s": supported values: %s'
                                     % (x, ', '.join('"%s"' % e for e in en))))
                elif isinstance(sch.get('additionalProperties'), dict):
                    self.check(sch['additionalProperties'], x, '%s[%s]' % (path, k), errs)
                elif 'additionalProperties' in sch:
                    pass
                else:
                    errs.append((sub, 'FieldValueUnknown', 'unknown field "%s"' % sub))
        elif t == 'array':
            if not isinstance(v, list):
                errs.append((path, 'FieldValueTypeInvalid',
                             'Invalid value: %s: must be an array' % json.dumps(v)[:80]))
                return
            for i, x in enumerate(v):
                self.check(sch.get('items', {}), x, '%s[%d]' % (path, i), errs)
        elif t in ('string', 'integer', 'number', 'boolean'):
            if not self._is(t, v):
                errs.append((path, 'FieldValueTypeInvalid',
                             'Invalid value: %s: must be of type %s' % (json.dumps(v)[:80], t)))
                return
            f = sch.get('format')
            if t == 'integer' and f == 'int32' and not -2**31 <= v < 2**31:
                errs.append((path, 'FieldValueInvalid', 'Invalid value: %d: out of int32 range' % v))
            if t == 'string' and f == 'date-time' and not DATE_TIME.match(v):
                errs.append((path, 'FieldValueInvalid',
                             'Invalid value: "%s": must be an RFC 3339 date-time' % v))
            if 'enum' in sch and v not in sch['enum']:
                errs.append((path, 'FieldValueNotSupported', 'Unsupported value: "%s"' % v))

    @staticmethod
    def _is(t, v):
        if t == 'string':
            return isinstance(v, str)
        if t == 'integer':
            return isinstance(v, int) and not isinstance(v, bool)
        if t == 'number':
            return isinstance(v, (int, float)) and not isinstance(v, bool)
        if t == 'boolean':
            return isinstance(v, bool)
        if t == 'object':
            return isinstance(v, dict)
        if t == 'array':
            return isinstance(v, list)
        return True


def check_labels(m, path, errs):
    for what in ('labels', 'annotations'):
        d = m.get(what)
        if not isinstance(d, dict):
            continue
        for k, v in d.items():
            name = k.rsplit('/', 1)[-1]
            prefix = k[:-len(name) - 1] if '/' in k else ''
            if not (re.match(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$', name)
                    and len(name) <= 63 and (not prefix or (DNS_SUB.match(prefix)
                                                            and len(prefix) <= 253))):
                errs.append(('%s.%s' % (path, what), 'FieldValueInvalid',
                             'Invalid value: "%s": name part must consist of alphanumeric '
                             'characters, \'-\', \'_\' or \'.\', at most 63' % k))
            if what == 'labels' and isinstance(v, str) and (len(v) > 63 or not LABEL_VAL.match(v)):
                errs.append(('%s.labels' % path, 'FieldValueInvalid',
                             'Invalid value: "%s": a valid label must be an empty string or '
                             'consist of alphanumeric characters, \'-\', \'_\' or \'.\' '
                             '(at most 63)' % v))


def check_pod_spec(spec, path, errs, in_job):
    if not isinstance(spec, dict):
        return
    cs = spec.get('containers')
    if not cs:
        errs.append((path + '.containers', 'FieldValueRequired', 'Required value'))
        cs = []
    seen = set()
    for i, c in enumerate(cs if isinstance(cs, list) else []):
        if not isinstance(c, dict):
            continue
        p = '%s.containers[%d]' % (path, i)
        n = c.get('name')
        if isinstance(n, str):
            if not DNS_LABEL.match(n) or len(n) > 63:
                errs.append((p + '.name', 'FieldValueInvalid',
                             'Invalid value: "%s": a lowercase RFC 1123 label' % n))
            if n in seen:
                errs.append((p + '.name', 'FieldValueDuplicate', 'Duplicate value: "%s"' % n))
            seen.add(n)
        if not c.get('image'):
            errs.append((p + '.image', 'FieldValueRequired', 'Required value'))
        r = c.get('resources') or {}
        lim = (r.get('limits') or {}) if isinstance(r, dict) else {}
        req = (r.get('requests') or {}) if isinstance(r, dict) else {}
        for where, d in (('limits', lim), ('requests', req)):
            if isinstance(d, dict) and GPU in d and gpu_qty(d[GPU]) is None:
                errs.append(('%s.resources.%s[%s]' % (p, where, GPU), 'FieldValueInvalid',
                             'Invalid value: %s: must be an integer' % json.dumps(d[GPU])))
        if isinstance(req, dict) and GPU in req and (
                not isinstance(lim, dict) or gpu_qty(lim.get(GPU)) != gpu_qty(req[GPU])):
            errs.append(('%s.resources.requests[%s]' % (p, GPU), 'FieldValueInvalid',
                         'Invalid value: %s: must be equal to %s limit' %
                         (json.dumps(req[GPU]), GPU)))
    if in_job:
        rp = spec.get('restartPolicy')
        if rp not in ('Never', 'OnFailure'):
            if rp is None:
                errs.append((path + '.restartPolicy', 'FieldValueRequired',
                             'Required value: valid values: "OnFailure", "Never"'))
            else:
                errs.append((path + '.restartPolicy', 'FieldValueNotSupported',
                             'Unsupported value: "%s": supported values: "OnFailure", '
                             '"Never"' % rp))


# ----------------------------------------------------------------- state ---

class State:
    def __init__(self, window):
        self.rv = 0
        self.oldest = 0          # a watch from rv >= oldest sees every later event
        self.window = window     # events kept
        self.hist = []           # (rv, resource, type, object)
        self.objs = {r: {} for r in RES}   # resource -> {(ns, name): object}
        self.calls = []
        self.violations = []
        self.procs = {}          # pod uid -> {container: Popen}
        self.bound_at = {}       # pod uid -> time.time() the kubelet first saw it bound
        self.exit_override = {}  # pod uid -> (exit code, reason)
        self.gpu_idx = {}        # node -> {index: pod uid}
        self.jobctl = {}         # job uid -> {'succ': set, 'fail': set, 'idx': set}
        self.seq = 0
        self.url = ''
        self.bookmark_s = 1.0
        self.delete_delay_s = 0.0   # a Job's DELETE waits this long first
        self.start_delay_s = 0.2    # a bound pod starts this long after it is seen
        self.watch_epoch = 0     # bumped by compact with expire_watches: open watches get 410

    def emit(self, res, typ, obj):
        self.hist.append((self.rv, res, typ, copy.deepcopy(obj)))
        while len(self.hist) > self.window:
            self.oldest = self.hist[0][0]
            self.hist.pop(0)
        CV.notify_all()

    def put(self, res, obj, typ=None):
        m = obj['metadata']
        key = (m.get('namespace', ''), m['name'])
        if typ is None:
            typ = 'MODIFIED' if key in self.objs[res] else 'ADDED'
        self.rv += 1
        m['resourceVersion'] = str(self.rv)
        self.objs[res][key] = obj
        self.emit(res, typ, obj)
        return obj

    def remove(self, res, obj):
        m = obj['metadata']
        key = (m.get('namespace', ''), m['name'])
        if self.objs[res].get(key) is not obj:
            return
        del self.objs[res][key]
        self.rv += 1
        m['resourceVersion'] = str(self.rv)
        self.emit(res, 'DELETED', obj)

    def get(self, res, ns, name):
        return self.objs[res].get((ns if RES[res][2] else '', name))

    def log(self, rec):
        if ARGS.log:
            with open(ARGS.log, 'a') as f:
                f.write(json.dumps(rec) + '\n')

    def violation(self, method, path, kind, name, field, message, code):
        self.seq += 1
        v = {'seq': self.seq, 't': time.time(), 'method': method, 'path': path, 'kind': kind,
             'name': name, 'field': field, 'message': message, 'code': code}
        self.violations.append(v)
        self.log(dict(v, violation=True))


def new_meta(obj, res, ns):
    m = obj.setdefault('metadata', {})
    if RES[res][2]:
        m['namespace'] = ns
    else:
        m.pop('namespace', None)
    m['uid'] = str(uuid.uuid4())
    m['creationTimestamp'] = now_iso()
    m['generation'] = 1
    for k in ('resourceVersion', 'deletionTimestamp', 'selfLink'):
        m.pop(k, None)


def owned_by(obj, uid):
    return any(r.get('uid') == uid for r in obj['metadata'].get('ownerReferences') or [])


def cond(obj, typ):
    for c in (obj.get('status') or {}).get('conditions') or []:
        if c.get('type') == typ:
            return c
    return None


def set_cond(obj, typ, status, reason=None, message=None):
    """Sets a condition; returns True when it changed."""
    cs = obj.setdefault('status', {}).setdefault('conditions', [])
    c = cond(obj, typ)
    if c and c.get('status') == status and c.get('reason') == reason:
        return False
    t = now_iso()
    n = {'type': typ, 'status': status, 'lastTransitionTime': t}
    if obj.get('kind') == 'Job':
        n['lastProbeTime'] = t
    if reason:
        n['reason'] = reason
    if message:
        n['message'] = message
    if c:
        cs[cs.index(c)] = n
    else:
        cs.append(n)
    return True


def make_node(name, gpus=0, product=None, labels=None):
    ls = {'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64'}
    if product:
        ls['nvidia.com/gpu.product'] = product
    if gpus:
        ls['nvidia.com/gpu.count'] = str(gpus)
    ls.update(labels or {})
    res = {'cpu': '64', 'memory': '512Gi', 'pods': '110', GPU: str(gpus)}
    t = now_iso()
    return {'kind': 'Node', 'apiVersion': 'v1', 'metadata': {'name': name, 'labels': ls},
            'spec': {},
            'status': {'capacity': dict(res), 'allocatable': dict(res),
                       'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'KubeletReady',
                                       'message': 'kubelet is posting ready status',
                                       'lastHeartbeatTime': t, 'lastTransitionTime': t}],
                       'addresses': [{'type': 'InternalIP', 'address': '127.0.0.1'},
                                     {'type': 'Hostname', 'address': name}],
                       'nodeInfo': {'machineID': name, 'systemUUID': name, 'bootID': name,
                                    'kernelVersion': os.uname().release,
                                    'osImage': 'fake', 'containerRuntimeVersion': 'fake://1',
                                    'kubeletVersion': 'v1.32.0-fake',
                                    'kubeProxyVersion': 'v1.32.0-fake',
                                    'operatingSystem': 'linux', 'architecture': 'amd64'}}}


# ----------------------------------------------------- pods and processes ---

def pod_gpus(pod):
    n = 0
    for c in pod['spec'].get('containers') or []:
        r = c.get('resources') or {}
        v = (r.get('limits') or {}).get(GPU, (r.get('requests') or {}).get(GPU))
        n += gpu_qty(v) or 0
    return n


def terminal(pod):
    return (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed')


def node_ready(node):
    c = cond(node, 'Ready')
    return bool(c and c.get('status') == 'True')


def free_gpus(node):
    name = node['metadata']['name']
    alloc = gpu_qty(node['status'].get('allocatable', {}).get(GPU)) or 0
    used = sum(pod_gpus(p) for p in STATE.objs['pods'].values()
               if p['spec'].get('nodeName') == name and not terminal(p))
    return alloc - used


def tolerates(pod, taint):
    if taint.get('effect') == 'PreferNoSchedule':
        return True
    for t in pod['spec'].get('tolerations') or []:
        if t.get('effect') and t['effect'] != taint.get('effect'):
            continue
        if t.get('operator') == 'Exists' and (not t.get('key') or t['key'] == taint.get('key')):
            return True
        if t.get('key') == taint.get('key') and t.get('value', '') == taint.get('value', ''):
            return True
    return False


def schedule(pod):
    nodes = sorted(STATE.objs['nodes'].values(), key=lambda n: n['metadata']['name'])
    want = pod_gpus(pod)
    sel = pod['spec'].get('nodeSelector') or {}
    why = {}
    for n in nodes:
        ls = n['metadata'].get('labels') or {}
        if not node_ready(n):
            why['not ready'] = why.get('not ready', 0) + 1
        elif n['spec'].get('unschedulable'):
            why['unschedulable'] = why.get('unschedulable', 0) + 1
        elif any(ls.get(k) != v for k, v in sel.items()):
            why["didn't match Pod's node affinity/selector"] = why.get(
                "didn't match Pod's node affinity/selector", 0) + 1
        elif any(not tolerates(pod, t) for t in n['spec'].get('taints') or []):
            why['had untolerated taint'] = why.get('had untolerated taint', 0) + 1
        elif free_gpus(n) < want:
            why['Insufficient nvidia.com/gpu'] = why.get('Insufficient nvidia.com/gpu', 0) + 1
        else:
            pod['spec']['nodeName'] = n['metadata']['name']
            set_cond(pod, 'PodScheduled', 'True')
            STATE.put('pods', pod)
            return
    msg = '0/%d nodes are available: %s.' % (len(nodes), ', '.join(
        '%d %s' % (v, k) for k, v in sorted(why.items())))
    if set_cond(pod, 'PodScheduled', 'False', 'Unschedulable', msg):
        pod['status']['phase'] = 'Pending'
        STATE.put('pods', pod)


def field_value(pod, path, node_name):
    m = re.match(r"^metadata\.(labels|annotations)\['(.+)'\]$", path)
    if m:
        return (pod['metadata'].get(m.group(1)) or {}).get(m.group(2), '')
    return {'metadata.name': pod['metadata']['name'],
            'metadata.namespace': pod['metadata'].get('namespace', ''),
            'metadata.uid': pod['metadata']['uid'], 'spec.nodeName': node_name,
            'spec.serviceAccountName': pod['spec'].get('serviceAccountName', 'default'),
            'status.podIP': '127.0.0.1', 'status.hostIP': '127.0.0.1'}.get(path)


def expand(s, env):
    def f(m):
        if m.group(0) == '$$':
            return '$'
        return env.get(m.group(1), m.group(0))
    return re.sub(r'\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)', f, s)


def log_path(pod, cname):
    return os.path.join(ARGS.dir, 'logs', pod['metadata']['namespace'],
                        pod['metadata']['name'], cname + '.log')


def start_pod(pod):
    m, spec, st = pod['metadata'], pod['spec'], pod.setdefault('status', {})
    node = spec['nodeName']
    uid = m['uid']
    idx = STATE.gpu_idx.setdefault(node, {})
    want = pod_gpus(pod)
    mine = []
    for i in range(1024):
        if len(mine) >= want:
            break
        if i not in idx:
            idx[i] = uid
            mine.append(i)
    t = now_iso()
    st.update({'phase': 'Running', 'hostIP': '127.0.0.1', 'podIP': '127.0.0.1',
               'podIPs': [{'ip': '127.0.0.1'}], 'startTime': t})
    procs = {}
    STATE.procs[uid] = procs
    statuses = []
    for c in spec.get('containers') or []:
        env = {'PATH': os.environ.get('PATH', '/usr/local/bin:/usr/bin:/bin'),
               'HOME': os.environ.get('HOME', '/root'),
               'HOSTNAME': spec.get('hostname', m['name']),
               'KUBERNETES_SERVICE_HOST': '127.0.0.1',
               'KUBERNETES_SERVICE_PORT': str(ARGS.bound_port),
               'NVIDIA_VISIBLE_DEVICES': ','.join(map(str, mine)) if mine else 'void',
               # not Kubernetes: the node, as the tests' ssh hosts say theirs
               'SPILLWAY_TEST_HOST': spec.get('nodeName', '')}
        err = None
        for e in c.get('env') or []:
            if 'value' in e:
                env[e['name']] = expand(e.get('value') or '', env)
            elif (e.get('valueFrom') or {}).get('fieldRef'):
                v = field_value(pod, e['valueFrom']['fieldRef'].get('fieldPath', ''), node)
                if v is None:
                    err = 'unsupported fieldPath %s' % e['valueFrom']['fieldRef'].get('fieldPath')
                env[e['name']] = v or ''
            elif e.get('valueFrom'):
                err = 'env %s: the fake supports only value and fieldRef' % e['name']
            else:
                env[e['name']] = ''
        argv = [expand(a, env) for a in (c.get('command') or []) + (c.get('args') or [])]
        cs = {'name': c['name'], 'image': c.get('image', ''), 'imageID': '',
              'restartCount': 0, 'ready': True, 'started': True}
        lp = log_path(pod, c['name'])
        os.makedirs(os.path.dirname(lp), exist_ok=True)
        cwd = c.get('workingDir') or os.path.join(ARGS.dir, 'pods', m['namespace'], m['name'])
        if not argv and not err:
            err = 'no command: the fake runs commands, not images'
        p = None
        if not err:
            try:
                os.makedirs(cwd, exist_ok=True)
                with open(lp, 'ab') as out:
                    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
            except OSError as e:
                err = str(e)
        if p is None:
            with open(lp, 'ab') as out:
                out.write(('%s\n' % err).encode())
            cs.update({'ready': False, 'started': False, 'containerID': 'fake://none',
                       'state': {'terminated': {'exitCode': 128, 'reason': 'StartError',
                                                'message': err, 'startedAt': t,
                                                'finishedAt': t}}})
        else:
            procs[c['name']] = p
            cs.update({'containerID': 'fake://%d' % p.pid,
                       'state': {'running': {'startedAt': t}}})
            threading.Thread(target=wait_proc, args=(pod, c['name'], p), daemon=True).start()
        statuses.append(cs)
    st['containerStatuses'] = statuses
    for ty in ('Initialized', 'ContainersReady', 'Ready'):
        set_cond(pod, ty, 'True')
    settle_pod(pod)
    STATE.put('pods', pod)


def settle_pod(pod):
    """Running pod whose containers all ended: phase Succeeded or Failed."""
    st = pod['status']
    css = st.get('containerStatuses') or []
    if any('terminated' not in cs.get('state', {}) for cs in css):
        return
    if st.get('phase') in ('Succeeded', 'Failed'):
        return
    ok = all(cs['state']['terminated'].get('exitCode') == 0 for cs in css)
    st['phase'] = 'Succeeded' if ok else 'Failed'
    for ty in ('ContainersReady', 'Ready'):
        set_cond(pod, ty, 'False', 'PodCompleted')
    release_gpus(pod)


def release_gpus(pod):
    uid = pod['metadata']['uid']
    for idx in STATE.gpu_idx.values():
        for i in [i for i, u in idx.items() if u == uid]:
            del idx[i]


def wait_proc(pod, cname, p):
    rc = p.wait()
    with CV:
        uid = pod['metadata']['uid']
        ov = STATE.exit_override.get(uid)
        for cs in pod['status'].get('containerStatuses') or []:
            if cs['name'] != cname:
                continue
            started = cs['state'].get('running', {}).get('startedAt', now_iso())
            term = {'startedAt': started, 'finishedAt': now_iso(),
                    'containerID': cs.get('containerID')}
            if ov:
                term.update({'exitCode': ov[0], 'reason': ov[1]})
            elif rc < 0:
                term.update({'exitCode': 128 - rc, 'signal': -rc, 'reason': 'Error'})
            else:
                term.update({'exitCode': rc, 'reason': 'Completed' if rc == 0 else 'Error'})
            cs['state'] = {'terminated': term}
            cs['ready'] = False
            cs['started'] = False
        STATE.procs.get(uid, {}).pop(cname, None)
        if STATE.get('pods', pod['metadata']['namespace'], pod['metadata']['name']) is pod:
            settle_pod(pod)
            if pod['metadata'].get('deletionTimestamp') and not STATE.procs.get(uid):
                STATE.remove('pods', pod)
                release_gpus(pod)
            else:
                STATE.put('pods', pod)
        CV.notify_all()


def signal_pod(pod, sig):
    for p in list(STATE.procs.get(pod['metadata']['uid'], {}).values()):
        try:
            os.killpg(p.pid, sig)
        except OSError:
            pass


def delete_pod(pod, grace=None):
    """Graceful delete: SIGTERM, SIGKILL after grace; the object goes when the
    processes have exited."""
    if pod['metadata'].get('deletionTimestamp'):
        return
    if grace is None:
        grace = pod['spec'].get('terminationGracePeriodSeconds', 30)
    if not STATE.procs.get(pod['metadata']['uid']):
        release_gpus(pod)
        STATE.remove('pods', pod)
        return
    pod['metadata']['deletionTimestamp'] = now_iso()
    pod['metadata']['deletionGracePeriodSeconds'] = grace
    STATE.put('pods', pod)
    signal_pod(pod, signal.SIGTERM)

    def later():
        time.sleep(grace)
        with CV:
            signal_pod(pod, signal.SIGKILL)
    if grace <= 0:
        signal_pod(pod, signal.SIGKILL)
    else:
        threading.Thread(target=later, daemon=True).start()


def fail_pod(pod, code, reason, disruption=None):
    uid = pod['metadata']['uid']
    STATE.exit_override[uid] = (code, reason)
    if disruption:
        set_cond(pod, 'DisruptionTarget', 'True', disruption,
                 'the node of this pod is not ready')
    if STATE.procs.get(uid):
        signal_pod(pod, signal.SIGKILL)
        return
    t = now_iso()
    for c in pod['spec'].get('containers') or []:
        css = pod['status'].setdefault('containerStatuses', [])
        cs = next((x for x in css if x['name'] == c['name']), None)
        if cs is None:
            cs = {'name': c['name'], 'image': c.get('image', ''), 'imageID': '',
                  'restartCount': 0, 'ready': False}
            css.append(cs)
        if 'terminated' not in cs.get('state', {}):
            cs['state'] = {'terminated': {'exitCode': code, 'reason': reason,
                                          'startedAt': t, 'finishedAt': t}}
    settle_pod(pod)
    pod['status']['phase'] = 'Failed'
    release_gpus(pod)
    STATE.put('pods', pod)


# ------------------------------------------------------------ controllers ---

def compress_indexes(idx):
    out, s = [], sorted(idx)
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else '%d-%d' % (s[i], s[j]))
        i = j + 1
    return ','.join(out)


def make_pod(job, index):
    jm, spec = job['metadata'], job['spec']
    tpl = copy.deepcopy(spec['template'])
    meta = tpl.get('metadata') or {}
    name = jm['name']
    labels = dict(meta.get('labels') or {})
    labels.update({'batch.kubernetes.io/controller-uid': jm['uid'],
                   'batch.kubernetes.io/job-name': name,
                   'controller-uid': jm['uid'], 'job-name': name})
    ann = dict(meta.get('annotations') or {})
    ps = tpl.get('spec') or {}
    if index is not None:
        labels['batch.kubernetes.io/job-completion-index'] = str(index)
        ann['batch.kubernetes.io/job-completion-index'] = str(index)
        ps.setdefault('hostname', '%s-%d' % (name, index))
        for c in ps.get('containers') or []:
            c.setdefault('env', []).append({'name': 'JOB_COMPLETION_INDEX', 'valueFrom': {
                'fieldRef': {'apiVersion': 'v1', 'fieldPath':
                             "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
    pname = '%s-%s%s' % (name, '' if index is None else '%d-' % index, rand5())
    ps.setdefault('schedulerName', 'default-scheduler')
    ps.setdefault('terminationGracePeriodSeconds', 30)
    ps.setdefault('dnsPolicy', 'ClusterFirst')
    pod = {'kind': 'Pod', 'apiVersion': 'v1',
           'metadata': {'name': pname, 'generateName': pname[:-5], 'labels': labels,
                        'annotations': ann,
                        'ownerReferences': [{'apiVersion': 'batch/v1', 'kind': 'Job',
                                             'name': name, 'uid': jm['uid'], 'controller': True,
                                             'blockOwnerDeletion': True}]},
           'spec': ps, 'status': {'phase': 'Pending', 'qosClass': 'BestEffort'}}
    new_meta(pod, 'pods', jm['namespace'])
    STATE.put('pods', pod)


def finish_job(job, typ, reason, message, active, ctl):
    st = job['status']
    for p in active:
        # a pod killed because its Job failed counts as failed; one left over
        # from a complete Job does not
        (ctl['fail'] if typ == 'Failed' else ctl['ignore']).add(p['metadata']['uid'])
        delete_pod(p, 0 if typ == 'Failed' else None)
    st['failed'] = len(ctl['fail'])
    if typ == 'Failed':
        set_cond(job, 'FailureTarget', 'True', reason, message)
    else:
        set_cond(job, 'SuccessCriteriaMet', 'True', 'CompletionsReached',
                 'Reached expected number of succeeded pods')
        st['completionTime'] = now_iso()
    set_cond(job, typ, 'True', reason, message)
    st['active'] = 0
    st['ready'] = 0


def job_done(job):
    return any(cond(job, t) and cond(job, t)['status'] == 'True' for t in ('Complete', 'Failed'))


def reconcile_job(job, by_owner):
    m, spec = job['metadata'], job['spec']
    st = job.setdefault('status', {})
    if job_done(job) and spec.get('ttlSecondsAfterFinished') is None and \
            not m.get('deletionTimestamp'):
        return
    before = json.dumps(st, sort_keys=True)
    ctl = STATE.jobctl.setdefault(m['uid'], {'succ': set(), 'fail': set(), 'idx': set(),
                                             'seen': set(), 'ignore': set()})
    pods = [p for p in by_owner.get(m['uid'], [])
            if p['metadata'].get('namespace') == m['namespace']]
    # A pod of the Job gone before it was seen ending counts as failed (the
    # real controller tracks this with the batch.kubernetes.io/job-tracking
    # finalizer); pods the controller itself removed (suspend) do not.
    now_uids = {p['metadata']['uid'] for p in pods}
    for u in ctl['seen'] - now_uids - ctl['succ'] - ctl['ignore']:
        ctl['fail'].add(u)
    ctl['seen'] = now_uids | (ctl['seen'] & (ctl['succ'] | ctl['fail']))
    for p in pods:
        if terminal(p):
            (ctl['succ'] if p['status']['phase'] == 'Succeeded' else ctl['fail']).add(
                p['metadata']['uid'])
            if p['status']['phase'] == 'Succeeded' and 'batch.kubernetes.io/job-completion-index' \
                    in (p['metadata'].get('annotations') or {}):
                ctl['idx'].add(int(p['metadata']['annotations'][
                    'batch.kubernetes.io/job-completion-index']))
    active = [p for p in pods if not terminal(p) and not p['metadata'].get('deletionTimestamp')]
    indexed = spec.get('completionMode') == 'Indexed'
    if m.get('deletionTimestamp'):
        for p in pods:
            delete_pod(p)
        if not [p for p in STATE.objs['pods'].values() if owned_by(p, m['uid'])]:
            STATE.remove('jobs', job)
        return
    if job_done(job):
        ttl = spec.get('ttlSecondsAfterFinished')
        fin = st.get('completionTime') or (cond(job, 'Failed') or {}).get('lastTransitionTime')
        if ttl is not None and fin and time.time() >= parse_iso(fin) + ttl:
            delete_job(job, 'Background')
        return
    st['succeeded'] = len(ctl['succ'])
    st['failed'] = len(ctl['fail'])
    if indexed:
        st['completedIndexes'] = compress_indexes(ctl['idx'])
    if spec.get('suspend'):
        for p in active:
            ctl['ignore'].add(p['metadata']['uid'])
            delete_pod(p)
        set_cond(job, 'Suspended', 'True', 'JobSuspended', 'Job suspended')
        st.pop('startTime', None)
        st['active'] = 0
    else:
        c = cond(job, 'Suspended')
        if c and c['status'] == 'True':
            set_cond(job, 'Suspended', 'False', 'JobResumed', 'Job resumed')
        st.setdefault('startTime', now_iso())
        comps = spec.get('completions', 1)
        par = spec.get('parallelism', 1)
        ads = spec.get('activeDeadlineSeconds')
        if ads is not None and time.time() >= parse_iso(st['startTime']) + ads:
            finish_job(job, 'Failed', 'DeadlineExceeded',
                       'Job was active longer than specified deadline', active, ctl)
        elif len(ctl['fail']) > spec.get('backoffLimit', 6):
            finish_job(job, 'Failed', 'BackoffLimitExceeded',
                       'Job has reached the specified backoff limit', active, ctl)
        elif (indexed and len(ctl['idx']) >= comps) or (not indexed and len(ctl['succ']) >= comps):
            finish_job(job, 'Complete', None, None, active, ctl)
        else:
            if indexed:
                busy = {int(p['metadata']['annotations']['batch.kubernetes.io/job-completion-index'])
                        for p in active}
                for i in range(comps):
                    if len(active) >= par:
                        break
                    if i not in ctl['idx'] and i not in busy:
                        make_pod(job, i)
                        active.append(None)
            else:
                for _ in range(min(par, comps - len(ctl['succ'])) - len(active)):
                    make_pod(job, None)
                    active.append(None)
            st['active'] = len(active)
            st['ready'] = len([p for p in active if p and p['status'].get('phase') == 'Running'])
    if json.dumps(st, sort_keys=True) != before:
        STATE.put('jobs', job)


def make_workload(job):
    jm = job['metadata']
    wl = {'kind': 'Workload', 'apiVersion': 'kueue.x-k8s.io/v1beta1',
          'metadata': {'name': 'job-%s-%s' % (jm['name'], rand5()),
                       'labels': {'kueue.x-k8s.io/job-uid': jm['uid']},
                       'ownerReferences': [{'apiVersion': 'batch/v1', 'kind': 'Job',
                                            'name': jm['name'], 'uid': jm['uid'],
                                            'controller': True, 'blockOwnerDeletion': True}]},
          'spec': {'queueName': jm['labels']['kueue.x-k8s.io/queue-name'],
                   'podSets': [{'name': 'main', 'count': job['spec'].get('parallelism', 1),
                                'template': job['spec']['template']}]},
          'status': {'conditions': []}}
    new_meta(wl, 'workloads', jm['namespace'])
    set_cond(wl, 'QuotaReserved', 'False', 'Pending', 'waiting for quota')
    set_cond(wl, 'Admitted', 'False', 'Pending', 'waiting for quota')
    STATE.put('workloads', wl)


def delete_job(job, policy):
    m = job['metadata']
    deps = [p for r in ('pods', 'workloads') for p in STATE.objs[r].values()
            if owned_by(p, m['uid'])]
    if policy == 'Orphan':
        for d in deps:
            d['metadata']['ownerReferences'] = [r for r in d['metadata']['ownerReferences']
                                                if r.get('uid') != m['uid']]
            STATE.put('pods' if d['kind'] == 'Pod' else 'workloads', d)
        STATE.remove('jobs', job)
        return
    for d in deps:
        if d['kind'] == 'Pod':
            delete_pod(d)
        else:
            STATE.remove('workloads', d)
    if policy == 'Foreground' and [d for d in deps if d['kind'] == 'Pod' and
                                   STATE.get('pods', m['namespace'], d['metadata']['name'])]:
        m['deletionTimestamp'] = now_iso()
        m['finalizers'] = ['foregroundDeletion']
        STATE.put('jobs', job)
    else:
        STATE.remove('jobs', job)


def controller():
    seen_rv, last, waiting = -1, 0.0, False
    while True:
        with CV:
            CV.wait(0.1)
            # a pass after any change, and twice a second for deadlines and
            # TTLs (every 0.1 s while a bound pod waits for its start)
            if STATE.rv == seen_rv and time.time() - last < (0.1 if waiting else 0.5):
                continue
            seen_rv, last, waiting = STATE.rv, time.time(), False
            try:
                by_owner = {}
                for p in STATE.objs['pods'].values():
                    for r in p['metadata'].get('ownerReferences') or []:
                        by_owner.setdefault(r.get('uid'), []).append(p)
                for job in list(STATE.objs['jobs'].values()):
                    reconcile_job(job, by_owner)
                for pod in sorted(STATE.objs['pods'].values(),
                                  key=lambda p: p['metadata']['creationTimestamp']):
                    if pod['metadata'].get('deletionTimestamp') or terminal(pod):
                        continue
                    node = pod['spec'].get('nodeName')
                    if not node:
                        schedule(pod)
                    elif pod['status'].get('phase', 'Pending') == 'Pending' and \
                            pod['metadata']['uid'] not in STATE.procs:
                        n = STATE.get('nodes', '', node)
                        # A real kubelet takes a while (sandbox, image) to
                        # start a bound pod: --start-delay-s of it, so a
                        # delete right after a create finds the pod not
                        # started, as on a cluster (docs/kubernetes.md).
                        seen = STATE.bound_at.setdefault(pod['metadata']['uid'], time.time())
                        if time.time() - seen < STATE.start_delay_s:
                            waiting = True
                        elif n and node_ready(n):
                            start_pod(pod)
            except Exception as e:   # keep serving; the test sees the trace
                import traceback
                traceback.print_exc()
                STATE.log({'controller_error': repr(e)})


# -------------------------------------------------------------- selectors ---

def parse_label_selector(s):
    reqs = []
    for part in re.split(r',(?![^()]*\))', s or ''):
        p = part.strip()
        if not p:
            continue
        m = re.match(r'^(\S+)\s+(in|notin)\s+\((.*)\)$', p)
        if m:
            reqs.append((m.group(1), m.group(2), {v.strip() for v in m.group(3).split(',')}))
        elif p.startswith('!'):
            reqs.append((p[1:].strip(), '!', None))
        elif '!=' in p:
            k, v = p.split('!=', 1)
            reqs.append((k.strip(), '!=', v.strip()))
        elif '==' in p or '=' in p:
            k, v = p.split('==', 1) if '==' in p else p.split('=', 1)
            reqs.append((k.strip(), '=', v.strip()))
        elif re.match(r'^[A-Za-z0-9./_-]+$', p):
            reqs.append((p, 'exists', None))
        else:
            raise ApiError(400, 'BadRequest', 'unable to parse requirement: %s' % p)
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for k, op, v in reqs:
        has = k in labels
        if op == '=' and labels.get(k) != v:
            return False
        if op == '!=' and has and labels[k] == v:
            return False
        if op == 'in' and (not has or labels[k] not in v):
            return False
        if op == 'notin' and has and labels[k] in v:
            return False
        if op == 'exists' and not has:
            return False
        if op == '!' and has:
            return False
    return True


FIELDS = {'metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.phase',
          'spec.unschedulable'}


def parse_field_selector(s):
    reqs = []
    for p in (s or '').split(','):
        p = p.strip()
        if not p:
            continue
        m = re.match(r'^([A-Za-z.]+)\s*(!=|==|=)\s*(.*)$', p)
        if not m:
            raise ApiError(400, 'BadRequest', 'invalid selector: \'%s\'' % s)
        if m.group(1) not in FIELDS:
            raise ApiError(400, 'BadRequest', 'field label not supported: %s' % m.group(1))
        reqs.append((m.group(1), '!=' if m.group(2) == '!=' else '=', m.group(3)))
    return reqs


def fields_match(reqs, obj):
    for path, op, v in reqs:
        x = obj
        for k in path.split('.'):
            x = x.get(k) if isinstance(x, dict) else None
        x = '' if x is None else (str(x).lower() if isinstance(x, bool) else str(x))
        if (x == v) != (op == '='):
            return False
    return True


# ------------------------------------------------------------------- HTTP ---

def discovery(path):
    host = STATE.url.split('://', 1)[1]
    if path == '/version':
        return {'major': '1', 'minor': '32', 'gitVersion': 'v1.32.0-fake', 'gitCommit': 'fake',
                'gitTreeState': 'clean', 'buildDate': '2026-01-01T00:00:00Z',
                'goVersion': 'go1.23', 'compiler': 'gc', 'platform': 'linux/amd64'}
    if path == '/api':
        return {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': [
            {'clientCIDR': '0.0.0.0/0', 'serverAddress': host}]}
    groups = {'batch': 'v1', 'kueue.x-k8s.io': 'v1beta1'}
    if path == '/apis':
        return {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [
            {'name': g, 'versions': [{'groupVersion': '%s/%s' % (g, v), 'version': v}],
             'preferredVersion': {'groupVersion': '%s/%s' % (g, v), 'version': v}}
            for g, v in groups.items()]}
    gv = path[len('/api/'):] if path.startswith('/api/') else path[len('/apis/'):]
    if path.startswith('/apis/') and '/' not in gv and gv in groups:
        g, v = gv, groups[gv]
        return {'kind': 'APIGroup', 'apiVersion': 'v1', 'name': g,
                'versions': [{'groupVersion': '%s/%s' % (g, v), 'version': v}],
                'preferredVersion': {'groupVersion': '%s/%s' % (g, v), 'version': v}}
    rs = []
    for r, (rgv, kind, nsd, _, short) in RES.items():
        if rgv != gv:
            continue
        verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']
        e = {'name': r, 'singularName': kind.lower(), 'namespaced': nsd, 'kind': kind,
             'verbs': verbs}
        if short:
            e['shortNames'] = short
        if r == 'jobs':
            e['categories'] = ['all']
        rs.append(e)
        for sub in SUBRES.get(r, []):
            rs.append({'name': '%s/%s' % (r, sub), 'singularName': '', 'namespaced': nsd,
                       'kind': 'Pod' if sub == 'log' else kind,
                       'verbs': ['get'] if sub == 'log' else ['get', 'patch', 'update']})
    if not rs:
        return None
    return {'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': gv, 'resources': rs}


def parse_path(path):
    """-> (resource, namespace, name, subresource) or None."""
    parts = [p for p in path.split('/') if p]
    if parts[:2] == ['api', 'v1']:
        gv, rest = 'v1', parts[2:]
    elif len(parts) >= 3 and parts[0] == 'apis':
        gv, rest = parts[1] + '/' + parts[2], parts[3:]
    else:
        return None
    ns = ''
    if len(rest) >= 3 and rest[0] == 'namespaces':
        ns, rest = rest[1], rest[2:]
    if not rest or rest[0] not in RES or RES[rest[0]][0] != gv or len(rest) > 3:
        return None
    res = rest[0]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub and sub not in SUBRES.get(res, []):
        return None
    if RES[res][2] is False:
        ns = ''
    return res, ns, name, sub


def merge_patch(dst, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(dst, dict):
        dst = {}
    for k, v in patch.items():
        if k.startswith('$'):
            continue
        if v is None:
            dst.pop(k, None)
        else:
            dst[k] = merge_patch(dst.get(k), v)
    return dst


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'fake-kube/1'

    def log_message(self, fmt, *a):
        pass

    def setup(self):
        # the TLS handshake in this request's thread, not in accept()
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(30)
            self.request.do_handshake()
            self.request.settimeout(None)
        BaseHTTPRequestHandler.setup(self)

    # -- plumbing
    def send_json(self, code, obj, record=True):
        self.send_raw(code, 'application/json', json.dumps(obj).encode(), record)

    def send_raw(self, code, ctype, body, record=True):
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        self.send_header('Cache-Control', 'no-cache, private')
        self.end_headers()
        self.wfile.write(body)
        if record:
            self.record(code)

    def record(self, code):
        if self.path.startswith('/_fake/'):
            return
        with CV:
            STATE.seq += 1
            u = urllib.parse.urlsplit(self.path)
            c = {'seq': STATE.seq, 't': time.time(), 'method': self.command, 'path': u.path,
                 'query': u.query, 'status': code, 'agent': self.headers.get('User-Agent', '')}
            STATE.calls.append(c)
            del STATE.calls[:-5000]
            STATE.log(c)

    def start_stream(self, ctype):
        self.send_response(200)
        self.send_header('Content-Type', ctype)
        self.send_header('Transfer-Encoding', 'chunked')
        self.send_header('Cache-Control', 'no-cache, private')
        self.end_headers()
        self.record(200)

    def chunk(self, data):
        if data:
            self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
            self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b'0\r\n\r\n')
        self.wfile.flush()

    def body(self):
        n = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(n) if n else b''
        if not raw:
            return None
        ct = (self.headers.get('Content-Type') or '').split(';')[0].strip()
        if 'protobuf' in ct or 'cbor' in ct or 'yaml' in ct:
            raise ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an '
                           'unknown format - accepted media types include: application/json, '
                           'application/merge-patch+json, application/strategic-merge-patch+json')
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiError(400, 'BadRequest', 'the body of the request was not JSON '
                           '(the fake serves application/json only)')

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def dispatch(self):
        try:
            u = urllib.parse.urlsplit(self.path)
            q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
            if u.path.startswith('/_fake/'):
                return self.control(u.path, q)
            if not ARGS.no_auth and self.headers.get('Authorization') != 'Bearer ' + ARGS.token \
                    and not self.client_cert_user():
                with CV:
                    STATE.log({'auth_failure': self.path, 't': time.time()})
                raise ApiError(401, 'Unauthorized', 'Unauthorized')
            if self.command == 'DELETE' and '/jobs/' in u.path and STATE.delete_delay_s > 0:
                time.sleep(STATE.delete_delay_s)   # outside the lock: the kubelet goes on
            self.api(u.path.rstrip('/') or '/', q)
        except ApiError as e:
            self.send_json(e.status['code'], e.status)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass

    def client_cert_user(self):
        """The CN of a client certificate the handshake verified, else None."""
        if not isinstance(self.request, ssl.SSLSocket):
            return None
        cert = self.request.getpeercert()
        for rdn in (cert or {}).get('subject', ()):
            for k, v in rdn:
                if k == 'commonName':
                    return v
        return None

    # -- the Kubernetes API
    def api(self, path, q):
        if self.command == 'GET':
            if path.startswith('/openapi/v3'):
                return self.openapi(path)
            if path == '/openapi/v2':
                raise ApiError(404, 'NotFound', 'the fake serves /openapi/v3 only')
            d = discovery(path)
            if d is not None:
                return self.send_json(200, d)
        pp = parse_path(path)
        if pp is None:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        res, ns, name, sub = pp
        if RES[res][2] and not ns and name is not None:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        m = self.command
        if m == 'GET' and name is None:
            if q.get('watch') in ('1', 'true'):
                return self.watch(res, ns, q)
            return self.list(res, ns, q)
        if m == 'GET' and sub == 'log':
            return self.pod_log(ns, name, q)
        if m == 'GET':
            with CV:
                o = STATE.get(res, ns, name)
                if o is None:
                    raise not_found(res, name)
                return self.send_json(200, o)
        if m == 'POST' and name is None:
            return self.create(res, ns, self.body())
        if m in ('PUT', 'PATCH') and name is not None:
            return self.update(res, ns, name, sub, self.body())
        if m == 'DELETE' and name is not None:
            return self.delete(res, ns, name, q)
        raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on '
                       'the requested resource')

    def openapi(self, path):
        if path == '/openapi/v3':
            return self.send_json(200, {'paths': {k: {'serverRelativeURL': '/openapi/v3/%s?hash=%s'
                                                      % (k, 'F' * 16)} for k in SCHEMAS.files}})
        key = path[len('/openapi/v3/'):]
        raw = SCHEMAS.files.get(key)
        if raw is None:
            raise ApiError(404, 'NotFound', 'openapi document %s not served' % key)
        self.send_raw(200, 'application/json', raw)

    def invalid(self, res, obj, errs):
        kind = RES[res][1]
        group = RES[res][0].split('/')[0] if '/' in RES[res][0] else ''
        name = ((obj or {}).get('metadata') or {}).get('name') or \
            ((obj or {}).get('metadata') or {}).get('generateName', '')
        with CV:
            for f, _, msg in errs:
                STATE.violation(self.command, self.path, kind, name, f, msg,
                                400 if msg.startswith('unknown field') else 422)
        unknown = [e for e in errs if e[1] == 'FieldValueUnknown']
        if unknown:
            raise ApiError(400, 'BadRequest', 'strict decoding error: ' +
                           ', '.join(e[2] for e in unknown))
        causes = [{'reason': r, 'message': msg, 'field': f} for f, r, msg in errs]
        d = {'name': name, 'kind': kind, 'causes': causes}
        if group:
            d['group'] = group
        raise ApiError(422, 'Invalid', '%s%s "%s" is invalid: %s' % (
            kind, '.' + group if group else '', name,
            '; '.join('%s: %s' % (f, msg) for f, _, msg in errs) if len(errs) < 4 else
            '[%s]' % ', '.join('%s: %s' % (f, msg) for f, _, msg in errs)), d)

    def validate(self, res, obj, ns):
        errs = []
        gv, kind, nsd, sname, _ = RES[res]
        if not isinstance(obj, dict):
            raise ApiError(400, 'BadRequest', 'the body must be a JSON object')
        if obj.get('apiVersion') != gv or obj.get('kind') != kind:
            errs.append(('apiVersion' if obj.get('kind') == kind else 'kind', 'FieldValueInvalid',
                         'Invalid value: "%s, Kind=%s": this endpoint serves %s %s' %
                         (obj.get('apiVersion'), obj.get('kind'), gv, kind)))
        if sname:
            SCHEMAS.check({'$ref': '#/components/schemas/' + sname}, obj, '', errs)
        m = obj.get('metadata') if isinstance(obj.get('metadata'), dict) else {}
        name = m.get('name')
        if not name and not m.get('generateName'):
            errs.append(('metadata.name', 'FieldValueRequired', 'name or generateName is required'))
        elif name is not None and isinstance(name, str):
            lim = 63 if res in ('jobs', 'services', 'namespaces') else 253
            rx = DNS_LABEL if res in ('services', 'namespaces') else DNS_SUB
            if len(name) > lim or not rx.match(name):
                errs.append(('metadata.name', 'FieldValueInvalid',
                             'Invalid value: "%s": a lowercase RFC 1123 %s must consist of lower '
                             'case alphanumeric characters, \'-\' or \'.\' (at most %d)'
                             % (name, 'label' if rx is DNS_LABEL else 'subdomain', lim)))
        if nsd and m.get('namespace') and m['namespace'] != ns:
            errs.append(('metadata.namespace', 'FieldValueInvalid',
                         'Invalid value: "%s": does not match the namespace of the request'
                         % m['namespace']))
        check_labels(m, 'metadata', errs)
        spec = obj.get('spec') if isinstance(obj.get('spec'), dict) else {}
        if res == 'pods':
            check_pod_spec(spec, 'spec', errs, False)
        if res == 'jobs':
            t = spec.get('template') if isinstance(spec.get('template'), dict) else {}
            check_labels(t.get('metadata') or {}, 'spec.template.metadata', errs)
            check_pod_spec(t.get('spec') or {}, 'spec.template.spec', errs, True)
            if spec.get('completionMode') == 'Indexed' and spec.get('completions') is None:
                errs.append(('spec.completions', 'FieldValueRequired',
                             'Required value: when completion mode is Indexed'))
            for k in ('parallelism', 'completions', 'backoffLimit', 'activeDeadlineSeconds',
                      'ttlSecondsAfterFinished'):
                v = spec.get(k)
                if isinstance(v, int) and (v < 0 or (k == 'activeDeadlineSeconds' and v <= 0)):
                    errs.append(('spec.' + k, 'FieldValueInvalid',
                                 'Invalid value: %d: must be greater than%s 0' %
                                 (v, '' if k == 'activeDeadlineSeconds' else ' or equal to')))
        if errs:
            self.invalid(res, obj, errs)

    def create(self, res, ns, obj):
        if res == 'namespaces':
            ns = ''
        self.validate(res, obj, ns)
        with CV:
            m = obj['metadata']
            if not m.get('name'):
                m['name'] = m['generateName'] + rand5()
            if STATE.get(res, ns, m['name']) is not None:
                g = RES[res][0].split('/')[0] if '/' in RES[res][0] else ''
                d = {'name': m['name'], 'kind': res}
                if g:
                    d['group'] = g
                raise ApiError(409, 'AlreadyExists', '%s "%s" already exists' %
                               (res + ('.' + g if g else ''), m['name']), d)
            new_meta(obj, res, ns)
            if q_dry_run(self.path):
                return self.send_json(201, obj)
            if res == 'jobs':
                self.default_job(obj)
            if res == 'pods':
                obj['spec'].setdefault('restartPolicy', 'Always')
                obj['spec'].setdefault('terminationGracePeriodSeconds', 30)
                obj['status'] = {'phase': 'Pending'}
            if res == 'nodes':
                obj.setdefault('status', {})
            STATE.put(res, obj, 'ADDED')
            if res == 'jobs' and obj['spec'].get('suspend') and \
                    'kueue.x-k8s.io/queue-name' in (m.get('labels') or {}):
                make_workload(obj)
            CV.notify_all()
            return self.send_json(201, obj)

    @staticmethod
    def default_job(job):
        s = job['spec']
        s.setdefault('parallelism', 1)
        s.setdefault('completions', 1)
        s.setdefault('backoffLimit', 6)
        s.setdefault('completionMode', 'NonIndexed')
        s.setdefault('suspend', False)
        s.setdefault('manualSelector', False)
        uid = job['metadata']['uid']
        s['selector'] = {'matchLabels': {'batch.kubernetes.io/controller-uid': uid}}
        t = s['template'].setdefault('metadata', {})
        t.setdefault('labels', {}).update({'batch.kubernetes.io/controller-uid': uid,
                                           'batch.kubernetes.io/job-name': job['metadata']['name'],
                                           'controller-uid': uid,
                                           'job-name': job['metadata']['name']})
        ls = job['metadata'].setdefault('labels', {})
        ls.setdefault('batch.kubernetes.io/controller-uid', uid)
        ls.setdefault('batch.kubernetes.io/job-name', job['metadata']['name'])
        ls.setdefault('controller-uid', uid)
        ls.setdefault('job-name', job['metadata']['name'])
        job['status'] = {}

    def update(self, res, ns, name, sub, body):
        with CV:
            cur = STATE.get(res, ns, name)
            if cur is None:
                raise not_found(res, name)
            if self.command == 'PATCH':
                ct = (self.headers.get('Content-Type') or '').split(';')[0]
                if ct not in ('application/merge-patch+json',
                              'application/strategic-merge-patch+json'):
                    raise ApiError(415, 'UnsupportedMediaType', 'the body of the request was in '
                                   'an unknown format - accepted media types include: '
                                   'application/merge-patch+json, '
                                   'application/strategic-merge-patch+json')
                new = merge_patch(copy.deepcopy(cur), body or {})
            else:
                new = body
                rv = ((new or {}).get('metadata') or {}).get('resourceVersion')
                if rv and rv != cur['metadata']['resourceVersion']:
                    raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": '
                                   'the object has been modified; please apply your changes '
                                   'to the latest version and try again' % (res, name),
                                   {'name': name, 'kind': res})
        self.validate(res, new, ns)
        with CV:
            cur = STATE.get(res, ns, name)
            if cur is None:
                raise not_found(res, name)
            nm = new['metadata']
            for k in ('uid', 'creationTimestamp', 'namespace', 'name', 'generation',
                      'deletionTimestamp', 'ownerReferences') if sub != 'status' else ():
                if k in cur['metadata']:
                    nm.setdefault(k, cur['metadata'][k])
            if sub == 'status':
                cur['status'] = new.get('status', {})
                STATE.put(res, cur)
                return self.send_json(200, cur)
            if res == 'jobs':
                for k in ('template', 'completionMode', 'completions', 'selector'):
                    if json.dumps(new['spec'].get(k), sort_keys=True) != \
                            json.dumps(cur['spec'].get(k), sort_keys=True) and k != 'selector':
                        self.invalid(res, new, [('spec.' + k, 'FieldValueInvalid',
                                                 'Invalid value: field is immutable')])
                new['spec']['selector'] = cur['spec'].get('selector')
            new['status'] = cur.get('status', {})
            nm['uid'] = cur['metadata']['uid']
            nm['creationTimestamp'] = cur['metadata']['creationTimestamp']
            if json.dumps(new.get('spec'), sort_keys=True) != json.dumps(cur.get('spec'),
                                                                           sort_keys=True):
                nm['generation'] = cur['metadata'].get('generation', 1) + 1
            else:
                nm['generation'] = cur['metadata'].get('generation', 1)
            if RES[res][2]:
                nm['namespace'] = ns
            cur.clear()
            cur.update(new)
            STATE.put(res, cur)
            CV.notify_all()
            return self.send_json(200, cur)

    def delete(self, res, ns, name, q):
        opts = {}
        try:
            opts = self.body() or {}
        except ApiError:
            pass
        policy = opts.get('propagationPolicy') or q.get('propagationPolicy')
        if opts.get('orphanDependents') is True:
            policy = 'Orphan'
        grace = opts.get('gracePeriodSeconds', q.get('gracePeriodSeconds'))
        if policy is not None and policy not in ENUMS['propagationPolicy']:
            with CV:
                STATE.violation('DELETE', self.path, 'DeleteOptions', name, 'propagationPolicy',
                                'Unsupported value: "%s"' % policy, 422)
            raise ApiError(422, 'Invalid', 'DeleteOptions is invalid: propagationPolicy: '
                           'Unsupported value: "%s"' % policy)
        with CV:
            o = STATE.get(res, ns, name)
            if o is None:
                raise not_found(res, name)
            if res == 'jobs':
                delete_job(o, policy or 'Orphan')
            elif res == 'pods':
                delete_pod(o, None if grace is None else int(grace))
            else:
                STATE.remove(res, o)
            CV.notify_all()
            return self.send_json(200, o)

    def list(self, res, ns, q):
        lsel = parse_label_selector(q.get('labelSelector'))
        fsel = parse_field_selector(q.get('fieldSelector'))
        limit = int(q.get('limit') or 0)
        with CV:
            start = None
            if q.get('continue'):
                try:
                    tok = json.loads(base64.urlsafe_b64decode(q['continue'].encode()))
                    rv0, start = tok['rv'], tuple(tok['start'])
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, 'BadRequest', 'continue key is not valid')
                if rv0 < STATE.oldest:
                    raise ApiError(410, 'Expired', 'The provided continue parameter is too old '
                                   'to display a consistent list result. You can start a new '
                                   'list without the continue parameter.')
            rvq = q.get('resourceVersion')
            if rvq and rvq != '0' and q.get('resourceVersionMatch') == 'Exact' and \
                    int(rvq) < STATE.oldest:
                raise ApiError(410, 'Expired', 'too old resource version: %s (%d)' %
                               (rvq, STATE.oldest))
            items = [(k, o) for k, o in sorted(STATE.objs[res].items())
                     if (not ns or k[0] == ns) and (start is None or k > start)
                     and labels_match(lsel, o['metadata'].get('labels'))
                     and fields_match(fsel, o)]
            meta = {'resourceVersion': str(STATE.rv)}
            if limit and len(items) > limit:
                rest = len(items) - limit
                items = items[:limit]
                meta['continue'] = base64.urlsafe_b64encode(json.dumps(
                    {'rv': tok['rv'] if start else STATE.rv,
                     'start': list(items[-1][0])}).encode()).decode()
                meta['remainingItemCount'] = rest
            out = []
            for _, o in items:
                o = copy.deepcopy(o)
                o.pop('kind', None)
                o.pop('apiVersion', None)
                out.append(o)
            gv, kind = RES[res][0], RES[res][1]
            return self.send_json(200, {'kind': kind + 'List', 'apiVersion': gv,
                                        'metadata': meta, 'items': out})

    def watch(self, res, ns, q):
        lsel = parse_label_selector(q.get('labelSelector'))
        fsel = parse_field_selector(q.get('fieldSelector'))
        bookmarks = q.get('allowWatchBookmarks') in ('1', 'true')
        deadline = time.time() + float(q['timeoutSeconds']) if q.get('timeoutSeconds') else None
        rvq = q.get('resourceVersion')

        def match(o):
            return (not ns or o['metadata'].get('namespace') == ns) and \
                labels_match(lsel, o['metadata'].get('labels')) and fields_match(fsel, o)
        with CV:
            pending = []
            if not rvq or rvq == '0':
                pos = STATE.rv
                for _, o in sorted(STATE.objs[res].items()):
                    if match(o):
                        pending.append({'type': 'ADDED', 'object': o})
            else:
                try:
                    pos = int(rvq)
                except ValueError:
                    raise ApiError(400, 'BadRequest', 'invalid resource version: %s' % rvq)
            pending = [json.dumps(e).encode() + b'\n' for e in pending]
            epoch = STATE.watch_epoch
        self.start_stream('application/json')
        last_bm = time.time()
        while True:
            with CV:
                if pos < STATE.oldest or epoch != STATE.watch_epoch:
                    err = status_obj(410, 'Expired', 'too old resource version: %d (%d)'
                                     % (pos, max(STATE.oldest, pos + 1)))
                    pending.append(json.dumps({'type': 'ERROR', 'object': err}).encode() + b'\n')
                    done = True
                else:
                    done = False
                    for rv, r, typ, o in STATE.hist:
                        if rv > pos and r == res and match(o):
                            pending.append(json.dumps({'type': typ, 'object': o}).encode()
                                           + b'\n')
                    pos = max(pos, STATE.rv)
                    if bookmarks and time.time() - last_bm >= STATE.bookmark_s:
                        gv, kind = RES[res][0], RES[res][1]
                        pending.append(json.dumps({'type': 'BOOKMARK', 'object': {
                            'kind': kind, 'apiVersion': gv,
                            'metadata': {'resourceVersion': str(pos)}}}).encode() + b'\n')
                        last_bm = time.time()
            try:
                self.chunk(b''.join(pending))
                pending = []
                if done or (deadline and time.time() >= deadline):
                    self.end_stream()
                    return
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                return
            with CV:
                if STATE.rv == pos:
                    CV.wait(0.2)

    def pod_log(self, ns, name, q):
        with CV:
            pod = STATE.get('pods', ns, name)
            if pod is None:
                raise not_found('pods', name)
            cs = pod['spec'].get('containers') or []
            cname = q.get('container') or (cs[0]['name'] if len(cs) == 1 else None)
            if cname is None:
                raise ApiError(400, 'BadRequest', 'a container name must be specified for pod '
                               '%s, choose one of: [%s]' % (name, ' '.join(c['name'] for c in cs)))
            if cname not in [c['name'] for c in cs]:
                raise ApiError(400, 'BadRequest', 'container %s is not valid for pod %s'
                               % (cname, name))
            lp = log_path(pod, cname)
            if not os.path.exists(lp):
                raise ApiError(400, 'BadRequest', 'container "%s" in pod "%s" is waiting to '
                               'start: ContainerCreating' % (cname, name))
        follow = q.get('follow') in ('1', 'true')
        with open(lp, 'rb') as f:
            data = f.read()
        if q.get('tailLines'):
            n = int(q['tailLines'])
            lines = data.splitlines(True)
            data = b''.join(lines[-n:]) if n else b''
        if not follow:
            return self.send_raw(200, 'text/plain', data)
        self.start_stream('text/plain')
        pos = os.path.getsize(lp) if q.get('tailLines') else 0
        if q.get('tailLines'):
            self.chunk(data)
        try:
            with open(lp, 'rb') as f:
                f.seek(pos)
                while True:
                    with CV:
                        running = cname in STATE.procs.get(pod['metadata']['uid'], {})
                    d = f.read(65536)
                    if d:
                        self.chunk(d)
                        continue
                    if not running:
                        self.end_stream()
                        return
                    time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            return

    # -- control endpoints
    def control(self, path, q):
        body = self.body() if self.command == 'POST' else None
        with CV:
            if path == '/_fake/state' and self.command == 'GET':
                return self.send_json(200, {
                    'url': STATE.url, 'rv': STATE.rv, 'oldest_rv': STATE.oldest,
                    'objects': {r: list(d.values()) for r, d in STATE.objs.items()},
                    'calls': STATE.calls, 'violations': STATE.violations,
                    'processes': {'%s/%s' % (p['metadata']['namespace'], p['metadata']['name']):
                                  [x.pid for x in STATE.procs.get(p['metadata']['uid'], {})
                                   .values()] for p in STATE.objs['pods'].values()}}, False)
            if self.command != 'POST':
                raise ApiError(405, 'MethodNotAllowed', 'control endpoints: POST')
            b = body or {}
            if path == '/_fake/nodes':
                names = []
                for spec in (b if isinstance(b, list) else [b]):
                    names.append(upsert_node(spec))
                return self.send_json(200, {'nodes': names}, False)
            if path in ('/_fake/node-notready', '/_fake/node-ready'):
                n = STATE.get('nodes', '', b.get('name', ''))
                if n is None:
                    raise not_found('nodes', b.get('name', ''))
                taint = {'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute'}
                ts = [t for t in n['spec'].get('taints') or [] if t.get('key') != taint['key']]
                if path == '/_fake/node-ready':
                    set_cond(n, 'Ready', 'True', 'KubeletReady', 'kubelet is posting ready status')
                else:
                    set_cond(n, 'Ready', 'Unknown', 'NodeStatusUnknown',
                             'Kubelet stopped posting node status.')
                    ts.append(dict(taint, timeAdded=now_iso()))
                if ts:
                    n['spec']['taints'] = ts
                else:
                    n['spec'].pop('taints', None)
                STATE.put('nodes', n)
                if path == '/_fake/node-notready' and b.get('evict', True):
                    for p in list(STATE.objs['pods'].values()):
                        if p['spec'].get('nodeName') == n['metadata']['name'] and not terminal(p):
                            fail_pod(p, 137, 'NodeLost', 'DeletionByTaintManager')
                            delete_pod(p, 0)
                CV.notify_all()
                return self.send_json(200, {'node': n['metadata']['name']}, False)
            if path == '/_fake/pod-fail':
                p = STATE.get('pods', b.get('namespace', 'default'), b.get('name', ''))
                if p is None:
                    raise not_found('pods', b.get('name', ''))
                fail_pod(p, int(b.get('exitCode', 1)), b.get('reason', 'Error'))
                CV.notify_all()
                return self.send_json(200, {'pod': p['metadata']['name']}, False)
            if path == '/_fake/foreign-pod':
                ns = b.get('namespace', 'default')
                if STATE.get('pods', ns, b['name']) is not None:
                    raise ApiError(409, 'AlreadyExists', 'pods "%s" already exists' % b['name'])
                g = str(int(b.get('gpus', 1)))
                t = now_iso()
                pod = {'kind': 'Pod', 'apiVersion': 'v1',
                       'metadata': {'name': b['name'], 'labels': {'app': 'foreign'}},
                       'spec': {'nodeName': b['node'], 'restartPolicy': 'Never',
                                'containers': [{'name': 'main', 'image': 'foreign:latest',
                                                'resources': {'limits': {GPU: g},
                                                              'requests': {GPU: g}}}]},
                       'status': {'phase': 'Running', 'startTime': t, 'hostIP': '127.0.0.1',
                                  'containerStatuses': [{'name': 'main', 'ready': True,
                                                         'restartCount': 0, 'image': 'foreign',
                                                         'imageID': '', 'started': True,
                                                         'state': {'running': {'startedAt': t}}}]}}
                new_meta(pod, 'pods', ns)
                set_cond(pod, 'PodScheduled', 'True')
                set_cond(pod, 'Ready', 'True')
                STATE.procs[pod['metadata']['uid']] = {}
                STATE.put('pods', pod)
                return self.send_json(200, pod, False)
            if path == '/_fake/admit':
                ns = b.get('namespace', 'default')
                job = STATE.get('jobs', ns, b.get('job', ''))
                if job is None:
                    raise not_found('jobs', b.get('job', ''))
                for wl in STATE.objs['workloads'].values():
                    if owned_by(wl, job['metadata']['uid']):
                        set_cond(wl, 'QuotaReserved', 'True', 'QuotaReserved',
                                 'Quota reserved in ClusterQueue cluster-queue')
                        set_cond(wl, 'Admitted', 'True', 'Admitted',
                                 'The workload is admitted')
                        wl['status']['admission'] = {'clusterQueue': 'cluster-queue',
                                                     'podSetAssignments': [
                                                         {'name': 'main', 'count':
                                                          job['spec'].get('parallelism', 1)}]}
                        STATE.put('workloads', wl)
                job['spec']['suspend'] = False
                job['metadata']['generation'] = job['metadata'].get('generation', 1) + 1
                STATE.put('jobs', job)
                CV.notify_all()
                return self.send_json(200, {'job': job['metadata']['name']}, False)
            if path == '/_fake/seed-jobs':
                ns = b.get('namespace', 'default')
                for obj in b.get('jobs') or []:
                    self.validate('jobs', obj, ns)
                    if STATE.get('jobs', ns, obj['metadata']['name']) is not None:
                        raise ApiError(409, 'AlreadyExists', 'jobs.batch "%s" already exists'
                                       % obj['metadata']['name'])
                    new_meta(obj, 'jobs', ns)
                    self.default_job(obj)
                    STATE.put('jobs', obj, 'ADDED')
                CV.notify_all()
                return self.send_json(200, {'jobs': len(b.get('jobs') or [])}, False)
            if path == '/_fake/compact':
                STATE.oldest = STATE.rv
                STATE.hist = []
                if b.get('expire_watches'):
                    STATE.watch_epoch += 1
                CV.notify_all()
                return self.send_json(200, {'oldest_rv': STATE.oldest}, False)
            if path == '/_fake/config':
                if 'watch_window' in b:
                    STATE.window = int(b['watch_window'])
                if 'bookmark_s' in b:
                    STATE.bookmark_s = float(b['bookmark_s'])
                if 'delete_delay_s' in b:
                    STATE.delete_delay_s = float(b['delete_delay_s'])
                if 'start_delay_s' in b:
                    STATE.start_delay_s = float(b['start_delay_s'])
                return self.send_json(200, {'watch_window': STATE.window,
                                            'bookmark_s': STATE.bookmark_s,
                                            'delete_delay_s': STATE.delete_delay_s,
                                            'start_delay_s': STATE.start_delay_s}, False)
        raise ApiError(404, 'NotFound', 'no control endpoint %s' % path)


def q_dry_run(path):
    return 'dryRun=All' in path


def upsert_node(spec):
    name = spec['name']
    n = STATE.get('nodes', '', name)
    if n is None:
        n = make_node(name, int(spec.get('gpus', 0)), spec.get('product'), spec.get('labels'))
        new_meta(n, 'nodes', '')
    else:
        if 'gpus' in spec:
            for k in ('capacity', 'allocatable'):
                n['status'][k][GPU] = str(int(spec['gpus']))
            n['metadata']['labels']['nvidia.com/gpu.count'] = str(int(spec['gpus']))
        if spec.get('product'):
            n['metadata']['labels']['nvidia.com/gpu.product'] = spec['product']
        n['metadata']['labels'].update(spec.get('labels') or {})
    if 'taints' in spec:
        n['spec']['taints'] = spec['taints']
    if 'unschedulable' in spec:
        n['spec']['unschedulable'] = bool(spec['unschedulable'])
    if 'ready' in spec:
        set_cond(n, 'Ready', 'True' if spec['ready'] else 'False',
                 'KubeletReady' if spec['ready'] else 'KubeletNotReady')
    STATE.put('nodes', n)
    CV.notify_all()
    return name


# ------------------------------------------------------------------- main ---

def openssl(*a):
    subprocess.run(['openssl'] + list(a), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_certs(d):
    ca_key, ca_crt = os.path.join(d, 'ca.key'), os.path.join(d, 'ca.crt')
    key, csr, crt = (os.path.join(d, x) for x in ('server.key', 'server.csr', 'server.crt'))
    ext = os.path.join(d, 'server.ext')
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
    openssl('req', '-x509', *ec, '-keyout', ca_key, '-out', ca_crt, '-days', '2',
            '-subj', '/CN=fake-kube-ca', '-addext', 'basicConstraints=critical,CA:TRUE',
            '-addext', 'keyUsage=critical,keyCertSign,cRLSign')
    openssl('req', *ec, '-keyout', key, '-out', csr, '-subj', '/CN=fake-kube-apiserver')
    with open(ext, 'w') as f:
        f.write('subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'
                'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n')
    openssl('x509', '-req', '-in', csr, '-CA', ca_crt, '-CAkey', ca_key, '-CAcreateserial',
            '-out', crt, '-days', '2', '-extfile', ext)
    # a client certificate (CN fake-user) for kubeconfig-cert
    ccsr, cext = os.path.join(d, 'client.csr'), os.path.join(d, 'client.ext')
    openssl('req', *ec, '-keyout', os.path.join(d, 'client.key'), '-out', ccsr,
            '-subj', '/CN=fake-user/O=spillway')
    with open(cext, 'w') as f:
        f.write('extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n'
                'keyUsage=critical,digitalSignature,keyEncipherment\n')
    openssl('x509', '-req', '-in', ccsr, '-CA', ca_crt, '-CAkey', ca_key, '-CAcreateserial',
            '-out', os.path.join(d, 'client.crt'), '-days', '2', '-extfile', cext)
    return ca_crt, crt, key


def b64file(path):
    with open(path, 'rb') as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(d, url, ca_crt):
    ca = '    certificate-authority-data: %s\n' % b64file(ca_crt) if ca_crt else ''
    head = ('apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n'
            '    server: %s\n%s' % (url, ca))
    ctx = ('contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake-user\n'
           '    namespace: %s\ncurrent-context: fake\n' % ARGS.namespace)
    cred = json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',
                       'kind': 'ExecCredential', 'status': {'token': ARGS.token}})
    users = [('kubeconfig', '    token: %s\n' % ARGS.token),
             ('kubeconfig-exec', '    exec:\n      apiVersion: '
              'client.authentication.k8s.io/v1\n      command: /bin/sh\n'
              '      args: ["-c", %s]\n      interactiveMode: Never\n'
              % json.dumps("printf '%s\\n' '" + cred + "'"))]
    if ca_crt:
        users.append(('kubeconfig-cert', '    client-certificate-data: %s\n'
                      '    client-key-data: %s\n' % (b64file(os.path.join(d, 'client.crt')),
                                                     b64file(os.path.join(d, 'client.key')))))
    for fname, user in users:
        tmp = os.path.join(d, fname + '.tmp')
        with open(tmp, 'w') as f:
            f.write(head + 'users:\n- name: fake-user\n  user:\n' + user + ctx)
        os.chmod(tmp, 0o600)
        os.rename(tmp, os.path.join(d, fname))
    with open(os.path.join(d, 'token'), 'w') as f:
        f.write(ARGS.token + '\n')
    # what a pod's service account mount holds (in-cluster configuration)
    sa = os.path.join(d, 'serviceaccount')
    os.makedirs(sa, exist_ok=True)
    for name, text in (('token', ARGS.token), ('namespace', ARGS.namespace)):
        with open(os.path.join(sa, name), 'w') as f:
            f.write(text)
    if ca_crt:
        with open(ca_crt, 'rb') as src, open(os.path.join(sa, 'ca.crt'), 'wb') as dst:
            dst.write(src.read())


def stop(*_):
    with CV:
        for pod in STATE.objs['pods'].values():
            signal_pod(pod, signal.SIGKILL)
    os._exit(0)


def main():
    global ARGS, STATE, SCHEMAS
    ap = argparse.ArgumentParser(description='fake Kubernetes API server (see the docstring)')
    ap.add_argument('--dir', required=True)
    ap.add_argument('--url-file')
    ap.add_argument('--host', default='127.0.0.1')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--http', action='store_true')
    ap.add_argument('--token', default='fake-kube-token')
    ap.add_argument('--no-auth', action='store_true')
    ap.add_argument('--namespace', default='default')
    ap.add_argument('--node', action='append', default=[])
    ap.add_argument('--schemas', default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'shared', 'data',
        'contracts', 'kubernetes', 'openapi-v3'))
    ap.add_argument('--watch-window', type=int, default=1000)
    ap.add_argument('--bookmark-s', type=float, default=1.0)
    ap.add_argument('--start-delay-s', type=float, default=0.2)
    ap.add_argument('--log')
    ARGS = ap.parse_args()
    try:
        SCHEMAS = Schemas(ARGS.schemas)
    except (OSError, ValueError) as e:
        sys.stderr.write('kube.py: the OpenAPI v3 schemas cannot be read (%s); give --schemas '
                         'DIR\n' % e)
        sys.exit(3)
    os.makedirs(ARGS.dir, exist_ok=True)
    STATE = State(ARGS.watch_window)
    STATE.bookmark_s = ARGS.bookmark_s
    STATE.start_delay_s = ARGS.start_delay_s
    with CV:
        for ns in ('default', 'kube-system', ARGS.namespace):
            if STATE.get('namespaces', '', ns) is None:
                o = {'kind': 'Namespace', 'apiVersion': 'v1', 'metadata': {'name': ns},
                     'spec': {'finalizers': ['kubernetes']}, 'status': {'phase': 'Active'}}
                new_meta(o, 'namespaces', '')
                STATE.put('namespaces', o)
        for spec in ARGS.node:
            p = spec.split(':', 2)
            upsert_node({'name': p[0], 'gpus': int(p[1]) if len(p) > 1 else 0,
                         'product': p[2] if len(p) > 2 else None})
    srv = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    srv.daemon_threads = True
    ca = None
    if not ARGS.http:
        ca, crt, key = make_certs(ARGS.dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        ctx.load_verify_locations(ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL     # client certificates of the fake's CA
        ctx.set_alpn_protocols(['http/1.1'])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True,
                                       do_handshake_on_connect=False)
    ARGS.bound_port = srv.server_address[1]
    STATE.url = '%s://%s:%d' % ('http' if ARGS.http else 'https', ARGS.host, ARGS.bound_port)
    write_kubeconfig(ARGS.dir, STATE.url, ca)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=controller, daemon=True).start()
    if ARGS.url_file:
        tmp = ARGS.url_file + '.tmp'
        with open(tmp, 'w') as f:
            f.write(STATE.url + '\n')
        os.rename(tmp, ARGS.url_file)
    srv.serve_forever()


if __name__ == '__main__':
    main()
