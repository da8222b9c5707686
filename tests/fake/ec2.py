#!/usr/bin/python3
"""ec2.py: a fake Amazon EC2 endpoint for spillway's tests, on loopback.

Run it with Debian's python3 and python3-botocore (scripts/deps.sh test):

  /usr/bin/python3 tests/fake/ec2.py --url-file FILE [options]

  --host ADDR            listen address (default 127.0.0.1; loopback only)
  --port N               listen port (default 0: a free one)
  --url-file FILE        once listening, write "http://127.0.0.1:PORT" there
                         (atomically: wait for the file, not for a sleep)
  --access-key AKID      the fake's access key id (default AKIDFAKEEC2TEST;
                         STS AssumeRole adds temporary ones)
  --secret-key SECRET    its secret (default fake-secret-key)
  --session-token TOK    if given, every request must carry it as
                         X-Amz-Security-Token (signed); if not, any token is
                         accepted (it must still be signed)
  --zones Z,Z,...        availability zones served (default us-east-1a,
                         us-east-1b,us-east-1c,us-west-2a,us-west-2b); the
                         regions are the zones less their last letter
  --subnet ID=ZONE       a subnet in ZONE (repeatable); every zone also has
                         the subnet "subnet-ZONE" (e.g. subnet-us-east-1a)
  --spot-prices SPEC     spot price table: a CSV file (instance_type,zone,price
                         per line, '#' comments) or inline
                         "TYPE@ZONE=PRICE,..."; default: a few GPU types in
                         every zone (see DEFAULT_SPOT below)
  --boot-delay-s S       pending -> running after S seconds (default 0.3)
  --shutdown-delay-s S   shutting-down -> terminated after S seconds (default 0.3)
  --spot-notice-s S      a spot interruption's notice, before the instance is
                         terminated (default 2; EC2's is 120)
  --delay-s MIN:MAX      every EC2 call (not the control endpoints) waits a
                         random MIN..MAX seconds before it answers (slow mode)
  --boot-hosts CMD DIR   each instance is a host: `CMD add DIR INSTANCE_ID` at
                         launch (prints the host's address: the instance's
                         privateIpAddress and ipAddress), `CMD del DIR
                         INSTANCE_ID` at termination (scripts/netns-hosts.sh is
                         such a CMD; its client key is DIR/id_ed25519, whatever
                         KeyName says); #cloud-config ssh_authorized_keys in the
                         user data are appended to DIR/authorized_keys
  --imds-port N          with --boot-hosts: each instance's own IMDSv2, served
                         inside its network namespace at 169.254.169.254:N
                         (the address added to the namespace's lo), as EC2's
                         is on an instance: PUT /latest/api/token (header
                         X-aws-ec2-metadata-token-ttl-seconds), then with the
                         X-aws-ec2-metadata-token header
                         GET /latest/meta-data/spot/instance-action: the
                         instance's notice (POST /_fake/interrupt), 404 while
                         none, 401 without a valid token
  --imds-role NAME       serve IMDSv2 instance credentials (the fake's own
                         key, secret, token) under role NAME at /latest/...
  --role ARN             STS AssumeRole accepts only this role (repeatable);
                         default: any arn:aws:iam::ACCOUNT:role/NAME
  --log FILE             append one JSON line per call, violation and auth
                         failure (readable after the fake has stopped)

The EC2 API (Query protocol, Version 2016-11-15) is served at "/": form-encoded
POST (or GET with a query string), signed with SigV4 (Authorization header).
Implemented: RunInstances, DescribeInstances, TerminateInstances,
DescribeSpotPriceHistory, CreateTags, DescribeAvailabilityZones. Any other
operation of the model answers UnsupportedOperation (400).

STS is served at the same URL (a request signed for service "sts", checked
against botocore's STS model and the plain Query protocol: lists as
"Name.member.N"; Version 2011-06-15): AssumeRole hands out temporary
credentials (an ASIA... key, a secret, a session token, DurationSeconds
900..43200) that EC2 calls then accept, with that token only, until they
expire (ExpiredToken); GetCallerIdentity.  Errors in STS's shape
(<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>).

Every request is checked, in this order:
  1. signature: rebuilt as a botocore AWSRequest from the signed headers, the
     body and the URL, signed by botocore's SigV4Auth with the fake's
     credentials at the client's X-Amz-Date, the Signature compared.  Failures
     (AuthFailure 401 for a missing or unknown key or a region not served,
     SignatureDoesNotMatch 403, RequestExpired 400 for a clock skew over 15
     min) are recorded in "auth_failures".
  2. the model botocore ships (ec2 2016-11-15 service-2.json): the operation
     exists (InvalidAction), Version is 2016-11-15, every parameter is a
     member of the input shape under its EC2 query wire name (queryName, else
     locationName capitalised, else the member name; lists flattened "Name.N",
     nested "TagSpecification.1.Tag.1.Key") (UnknownParameter), values have the
     member's type (integer, boolean true/false, ISO 8601 timestamp, base64
     blob, enum values; newer instance types than the model's are accepted)
     (InvalidParameterValue), required members are present (MissingParameter).
     Each failure answers 400 and is recorded in "violations".
  3. injected errors (below), 4. DryRun=true -> DryRunOperation (412),
  5. the operation itself (its own EC2 errors: InvalidInstanceID.NotFound,
     IdempotentParameterMismatch, InvalidSubnetID.NotFound, SpotMaxPriceTooLow...).
Responses are generated from the model's output shapes (locationNames, <item>
lists, namespace http://ec2.amazonaws.com/doc/2016-11-15/, requestId first);
errors are EC2's <Response><Errors><Error><Code/><Message/></Error></Errors>
<RequestID/></Response>.

Control endpoints (not EC2; unsigned; JSON in and out):
  GET  /_fake/state       {"url", "regions", "zones", "subnets": {id: zone},
                           "instances": [...], "calls": [...],
                           "violations": [...], "auth_failures": [...],
                           "internal_errors": [...] (exceptions of the fake's
                           own: a bug, answered 500 InternalError),
                           "injections": [...], "spot_prices": [...],
                           "assumed_roles": [{"role_arn", "session_name",
                                              "access_key", "by"}],
                           "in_flight", "max_in_flight"}
       an instance: {"id", "reservation", "region", "zone", "subnet", "state",
                     "state_code", "state_reason", "type", "image", "key_name",
                     "market": "spot"|"on-demand", "max_price", "client_token",
                     "private_ip", "public_ip", "host", "launch_time",
                     "tags": {k: v}, "user_data" (decoded text), "spot_notice",
                     "security_groups", "imds": {"tokens", "reads", "notices_read",
                     "unauthorized"} (its own IMDS's requests, --imds-port)}
       a call: {"seq", "t" (answered), "t_arrived", "action", "region", "service": "ec2"|"sts",
                 "status", "code", "params" (as sent, wire names),
                 "client_gone": the client hung up before the answer (the call
                 took effect all the same, as on EC2)}
  POST /_fake/inject      {"action": "RunInstances", "code": "InsufficientInstanceCapacity",
                           "message"?, "zone"?, "market"?: "spot"|"on-demand",
                           "instance_type"?, "region"?, "count"?: N|"always" (1),
                           "http_status"? (EC2's: 500 capacity/internal, 503
                           Unavailable/RequestLimitExceeded, 401 AuthFailure,
                           403 UnauthorizedOperation/OptInRequired, else 400)}
                          -> {"id": N}.  The next matching calls fail with that
                          code (zone/market/instance_type match RunInstances
                          only).  Capacity-class errors do not fire on DryRun
                          calls; auth-class ones do.
  POST /_fake/inject/clear  drop every injection
  POST /_fake/interrupt   {"instance": "i-...", "notice_s"?, "notice"?: false (none
                          served: only the state tells)}: spot interruption:
                          the notice is served at once (here, by the
                          instance's own IMDS with --imds-port, and in a
                          file with --boot-hosts), then after notice_s the
                          instance goes shutting-down -> terminated with state
                          reason Server.SpotInstanceTermination
  GET  /_fake/imds/INSTANCE/latest/meta-data/spot/instance-action
                          IMDS's notice {"action": "terminate", "time": ISO}
                          (404 when none); with --boot-hosts also written to
                          DIR/inst-INSTANCE/imds/spot/instance-action
  POST /_fake/spot-price  {"instance_type", "zone", "price"}: set a price
  POST /_fake/config      {"delay_s": "MIN:MAX"|null, "boot_delay_s",
                           "shutdown_delay_s"}: change settings live
  IMDSv2 (with --imds-role): PUT /latest/api/token, then with the
  X-aws-ec2-metadata-token header GET /latest/meta-data/iam/security-credentials/
  and .../ROLE.

SIGTERM or SIGINT: stops; with --boot-hosts, first deletes every host still up.
"""

import argparse
import base64
import binascii
import ctypes
import datetime
import hashlib
import hmac
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.loaders import Loader
from botocore.model import ServiceModel

API_VERSION = '2016-11-15'
XMLNS = 'http://ec2.amazonaws.com/doc/2016-11-15/'
OWNER_ID = '123456789012'
MAX_SKEW_S = 15 * 60
IMDS_ADDR = '169.254.169.254'
CLONE_NEWNET = 0x40000000
STATES = {'pending': 0, 'running': 16, 'shutting-down': 32, 'terminated': 48,
          'stopping': 64, 'stopped': 80}
DEFAULT_ZONES = 'us-east-1a,us-east-1b,us-east-1c,us-west-2a,us-west-2b'
DEFAULT_SPOT = {'g4dn.xlarge': 0.1578, 'g4dn.12xlarge': 1.1740, 'g5.xlarge': 0.3012,
                'p3.2xlarge': 0.9180, 'p4d.24xlarge': 9.8300, 'm5.large': 0.0350}
# Operations that change something: a DryRun of them is a permission check.
MUTATING = {'RunInstances', 'TerminateInstances', 'CreateTags'}
# Injected codes that a DryRun call still meets (a permission check fails on them).
AUTH_CLASS = {'AuthFailure', 'UnauthorizedOperation', 'OptInRequired', 'Blocked',
              'PendingVerification', 'SignatureDoesNotMatch'}
HTTP_STATUS = {'InsufficientInstanceCapacity': 500, 'InsufficientHostCapacity': 500,
               'InsufficientAddressCapacity': 500, 'InsufficientCapacity': 500,
               'InsufficientReservedInstanceCapacity': 500, 'InternalError': 500,
               'InternalFailure': 500, 'Unavailable': 503, 'ServiceUnavailable': 503,
               'RequestLimitExceeded': 503, 'AuthFailure': 401, 'OptInRequired': 403,
               'UnauthorizedOperation': 403, 'Blocked': 403}


class Ec2Error(Exception):
    """An EC2 error answer: code, message, HTTP status."""

    def __init__(self, code, message, status=400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def now_iso(t=None):
    t = time.time() if t is None else t
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (int(t * 1000) % 1000)


def hexid(prefix, n=17):
    return prefix + '-' + uuid.uuid4().hex[:n]


# ---- the model -----------------------------------------------------------

class Model:
    """A model botocore ships (EC2's, or STS's for AssumeRole), and the checks
    of a request against it: EC2's query dialect or the plain Query protocol."""

    def __init__(self, service='ec2'):
        self.sm = ServiceModel(Loader().load_service_model(service, 'service-2'), service)
        self.ops = set(self.sm.operation_names)
        self.ec2 = self.sm.metadata['protocol'] == 'ec2'
        self.version = self.sm.api_version
        self.xmlns = self.sm.metadata.get('xmlNamespace', XMLNS)

    def wire_name(self, shape, name):
        s = shape.serialization
        if not self.ec2:
            return s.get('name', name)
        if 'queryName' in s:
            return s['queryName']
        if 'name' in s:
            return s['name'][0].upper() + s['name'][1:]
        return name

    def validate(self, action, params):
        """Raises Ec2Error for the first violation of params (a dict wire key
        -> value, without Action and Version) against action's input shape."""
        op = self.sm.operation_model(action)
        items = [(k.split('.'), v, k) for k, v in params.items()]
        if op.input_shape is None:
            if items:
                raise Ec2Error('UnknownParameter',
                               'The parameter %s is not recognized' % items[0][2])
            return
        self._check(op.input_shape, items, '')

    def _check(self, shape, items, path):
        t = shape.type_name
        if t == 'structure':
            by_wire = {self.wire_name(m, n): (n, m) for n, m in shape.members.items()}
            groups = {}
            for segs, v, key in items:
                if not segs or segs[0] == '':
                    raise Ec2Error('UnknownParameter',
                                   'The parameter %s is not recognized' % key)
                groups.setdefault(segs[0], []).append((segs[1:], v, key))
            for wire, sub in groups.items():
                if wire not in by_wire:
                    raise Ec2Error('UnknownParameter', 'The parameter %s%s is not recognized'
                                   % (path, wire))
                self._check(by_wire[wire][1], sub, path + wire + '.')
            for req in shape.required_members:
                w = self.wire_name(shape.members[req], req)
                if w not in groups:
                    raise Ec2Error('MissingParameter', 'The request must contain the '
                                   'parameter %s%s' % (path, w))
            return
        if t == 'list':
            groups = {}
            if not self.ec2 and not shape.serialization.get('flattened'):
                # Query protocol: Name.member.N (the member's own name if it has one).
                m = shape.member.serialization.get('name', 'member')
                for segs, v, key in items:
                    if not segs or segs[0] != m:
                        raise Ec2Error('UnknownParameter', 'The parameter %s is not recognized '
                                       '(a list is sent as %s%s.N)' % (key, path, m))
                items = [(segs[1:], v, key) for segs, v, key in items]
                path += m + '.'
            for segs, v, key in items:
                if not segs or not re.fullmatch(r'[1-9][0-9]*', segs[0]):
                    raise Ec2Error('UnknownParameter', 'The parameter %s is not recognized '
                                   '(a list is sent as %sN)' % (key, path))
                groups.setdefault(segs[0], []).append((segs[1:], v, key))
            for idx, sub in groups.items():
                self._check(shape.member, sub, path + idx + '.')
            return
        if t == 'map':
            for segs, v, key in items:
                ok = (len(segs) == 2 and segs[0].isdigit() and segs[1] in ('key', 'value')) or \
                     (len(segs) == 3 and segs[0] == 'entry' and segs[1].isdigit()
                      and segs[2] in ('key', 'value'))
                if not ok:
                    raise Ec2Error('UnknownParameter', 'The parameter %s is not recognized' % key)
            return
        # A scalar.
        name = path[:-1]
        if len(items) != 1 or items[0][0]:
            bad = [k for s, v, k in items if s]
            raise Ec2Error('UnknownParameter', 'The parameter %s is not recognized'
                           % (bad[0] if bad else name))
        v = items[0][1]
        self._check_scalar(shape, v, name)

    def _check_scalar(self, shape, v, name):
        t = shape.type_name

        def bad(what):
            raise Ec2Error('InvalidParameterValue', 'Value (%s) for parameter %s is invalid. %s'
                           % (v, name, what))
        if t in ('integer', 'long'):
            if not re.fullmatch(r'-?[0-9]+', v):
                bad('Expected an integer.')
            n = int(v)
            m = shape.metadata
            if 'min' in m and n < m['min']:
                bad('It must be at least %s.' % m['min'])
            if 'max' in m and n > m['max']:
                bad('It must be at most %s.' % m['max'])
        elif t == 'boolean':
            if v not in ('true', 'false'):
                bad('Expected true or false.')
        elif t in ('double', 'float'):
            try:
                float(v)
            except ValueError:
                bad('Expected a number.')
        elif t == 'timestamp':
            try:
                datetime.datetime.fromisoformat(v.replace('Z', '+00:00'))
            except ValueError:
                if not re.fullmatch(r'[0-9]+(\.[0-9]+)?', v):
                    bad('Expected an ISO 8601 timestamp.')
        elif t == 'blob':
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                bad('Expected base64.')
        elif t == 'string':
            enum = shape.enum
            if enum and v not in enum:
                # The model of Debian's botocore predates newer instance types.
                if not (shape.name == 'InstanceType'
                        and re.fullmatch(r'[a-z][a-z0-9-]*\.[a-z0-9]+', v)):
                    bad('Expected one of %s.' % ', '.join(enum[:8]) +
                        (' ...' if len(enum) > 8 else ''))

    def to_xml(self, shape, value, name):
        """value (dict/list/scalar, botocore member names) as XML under
        element name, per the output shape."""
        t = shape.type_name
        if value is None:
            return ''
        if t == 'structure':
            out = []
            for key in value:
                if key not in shape.members:
                    raise KeyError('%s has no member %s' % (shape.name, key))
            for key, m in shape.members.items():
                if key in value and value[key] is not None:
                    out.append(self.to_xml(m, value[key], m.serialization.get('name', key)))
            return '<%s>%s</%s>' % (name, ''.join(out), name)
        if t == 'list':
            iname = shape.member.serialization.get('name', 'item' if self.ec2 else 'member')
            return '<%s>%s</%s>' % (name, ''.join(self.to_xml(shape.member, x, iname)
                                                 for x in value), name)
        if t == 'boolean':
            s = 'true' if value else 'false'
        elif t == 'timestamp':
            s = now_iso(value) if isinstance(value, (int, float)) else value
        else:
            s = str(value)
        return '<%s>%s</%s>' % (name, escape(s), name)

    def response(self, action, value, request_id):
        op = self.sm.operation_model(action)
        body = ''
        if op.output_shape is not None:
            for key in value:
                if key not in op.output_shape.members:
                    raise KeyError('%s output has no member %s' % (action, key))
            for key, m in op.output_shape.members.items():
                if key in value and value[key] is not None:
                    body += self.to_xml(m, value[key], m.serialization.get('name', key))
        if not self.ec2:
            wrap = op.output_shape.serialization.get('resultWrapper') \
                if op.output_shape is not None else None
            if wrap:
                body = '<%s>%s</%s>' % (wrap, body, wrap)
            return ('<?xml version="1.0" encoding="UTF-8"?>\n<%sResponse xmlns="%s">%s'
                    '<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>'
                    '</%sResponse>' % (action, self.xmlns, body, request_id, action))
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<%sResponse xmlns="%s">'
                '<requestId>%s</requestId>%s</%sResponse>'
                % (action, XMLNS, request_id, body, action))

    def error(self, code, message, request_id):
        """The error document of the model's protocol."""
        if self.ec2:
            return error_xml(code, message, request_id)
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse xmlns="%s"><Error>'
                '<Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>'
                '<RequestId>%s</RequestId></ErrorResponse>'
                % (self.xmlns, escape(code), escape(message), request_id))


def error_xml(code, message, request_id):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
            '<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>'
            % (escape(code), escape(message), request_id))


# ---- the signature -------------------------------------------------------

AUTH_RE = re.compile(r'AWS4-HMAC-SHA256\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),'
                     r'\s*Signature=([0-9a-f]+)\s*$')


def verify_sigv4(method, path_qs, headers, body, creds, regions):
    """Returns the request's (region, service, access key), or raises
    Ec2Error.  headers: a list of (name, value) as received; creds: access
    key -> {"secret", "token" (None: any token), "expires" (None or a time)}."""
    h = {}
    for k, v in headers:
        h.setdefault(k.lower(), v)
    auth = h.get('authorization')
    if not auth:
        raise Ec2Error('AuthFailure', 'AWS was not able to validate the provided access '
                       'credentials (no Authorization header)', 401)
    m = AUTH_RE.match(auth)
    if not m:
        raise Ec2Error('AuthFailure', 'Authorization header is not AWS4-HMAC-SHA256 '
                       'Credential=..., SignedHeaders=..., Signature=...', 401)
    cred, signed, sig = m.groups()
    parts = cred.split('/')
    if len(parts) != 5 or parts[4] != 'aws4_request':
        raise Ec2Error('AuthFailure', 'Credential %s is not KEY/DATE/REGION/SERVICE/'
                       'aws4_request' % cred, 401)
    akid = parts[0]
    cred = creds.get(akid)
    if cred is None:
        raise Ec2Error('AuthFailure', 'AWS was not able to validate the provided access '
                       'credentials', 401)
    region, service = parts[2], parts[3]
    if service not in ('ec2', 'sts'):
        raise Ec2Error('SignatureDoesNotMatch', "Credential should be scoped to correct "
                       "service: 'ec2' (or 'sts')", 403)
    if region not in regions and not (service == 'sts' and region == 'us-east-1'):
        raise Ec2Error('AuthFailure', 'Credential should be scoped to a valid region, '
                       'not %s' % region, 401)
    names = signed.split(';')
    if 'host' not in names or 'x-amz-date' not in names:
        raise Ec2Error('SignatureDoesNotMatch', 'host and x-amz-date must be signed '
                       '(SignedHeaders=%s)' % signed, 403)
    missing = [n for n in names if n not in h]
    if missing:
        raise Ec2Error('SignatureDoesNotMatch', 'signed header %s is not in the request'
                       % missing[0], 403)
    date = h['x-amz-date']
    try:
        ts = datetime.datetime.strptime(date, '%Y%m%dT%H%M%SZ').replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        raise Ec2Error('AuthFailure', 'X-Amz-Date %s is not YYYYMMDDTHHMMSSZ' % date, 401)
    if abs(ts - time.time()) > MAX_SKEW_S:
        raise Ec2Error('RequestExpired', 'Request has expired (X-Amz-Date %s)' % date, 400)
    if parts[1] != date[:8]:
        raise Ec2Error('SignatureDoesNotMatch', 'Credential date %s is not the date of '
                       'X-Amz-Date %s' % (parts[1], date), 403)
    sent_token = h.get('x-amz-security-token')
    token, secret = cred['token'], cred['secret']
    if cred.get('expires') and time.time() > cred['expires']:
        raise Ec2Error('ExpiredToken', 'The security token included in the request is '
                       'expired', 400)
    if token is not None and sent_token != token:
        raise Ec2Error('AuthFailure', 'The security token included in the request is '
                       'invalid', 401)
    if sent_token is not None and 'x-amz-security-token' not in names:
        raise Ec2Error('SignatureDoesNotMatch', 'X-Amz-Security-Token is sent but not '
                       'signed', 403)
    req = AWSRequest(method=method, url='http://%s%s' % (h['host'], path_qs),
                     headers={n: h[n] for n in names}, data=body)
    req.context['timestamp'] = date
    signer = SigV4Auth(Credentials(akid, secret, sent_token), service, region)
    want = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
    if not hmac.compare_digest(want, sig):
        raise Ec2Error('SignatureDoesNotMatch', 'The request signature we calculated does '
                       'not match the signature you provided. Check your AWS Secret Access '
                       'Key and signing method.', 403)
    return region, service, akid


# ---- the cloud -----------------------------------------------------------

class Cloud:
    """Instances, calls and checks; every field is guarded by self.lock."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.model = Model('ec2')
        self.sts = Model('sts')
        # access key -> its secret, token (None: any) and expiry: the fake's
        # own, and those AssumeRole handed out.
        self.creds = {args.access_key: {'secret': args.secret_key,
                                        'token': args.session_token, 'expires': None,
                                        'arn': 'arn:aws:iam::%s:user/spillway-test' % OWNER_ID}}
        self.assumed = []           # AssumeRole calls: role arn, session name, key
        self.zones = [z for z in args.zones.split(',') if z]
        self.regions = sorted({z[:-1] for z in self.zones})
        self.subnets = {'subnet-' + z: z for z in self.zones}
        for s in args.subnet or []:
            sid, _, z = s.partition('=')
            if z not in self.zones:
                sys.exit('ec2.py: --subnet %s: zone %s is not served (--zones)' % (s, z))
            self.subnets[sid] = z
        self.prices = {}            # (type, zone) -> USD/h
        self._load_prices(args.spot_prices)
        self.instances = {}         # id -> dict (see /_fake/state)
        self.order = []             # instance ids, launch order
        self.tokens = {}            # (region, client token) -> (param digest, reservation)
        self.reservations = {}      # reservation id -> [instance ids]
        self.calls = []
        self.violations = []
        self.auth_failures = []
        self.internal_errors = []   # the fake's own exceptions (a bug)
        self.injections = []
        self.next_inject = 1
        self.seq = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.ip_n = 0
        self.delay = parse_delay(args.delay_s)
        self.boot_delay_s = args.boot_delay_s
        self.shutdown_delay_s = args.shutdown_delay_s
        self.logf = open(args.log, 'a', buffering=1) if args.log else None
        self.stopping = False
        self.imds_tokens = set()
        self.keys_lock = threading.Lock()   # DIR/authorized_keys appends

    def _load_prices(self, spec):
        if not spec:
            for z in self.zones:
                for i, (t, p) in enumerate(sorted(DEFAULT_SPOT.items())):
                    # A little different per zone, as real prices are.
                    self.prices[(t, z)] = round(p * (1 + 0.03 * (self.zones.index(z) % 3)), 4)
            return
        if os.path.exists(spec):
            with open(spec) as f:
                rows = [ln.strip() for ln in f if ln.strip() and not ln.startswith('#')]
            for r in rows:
                t, z, p = [x.strip() for x in r.split(',')]
                if t == 'instance_type':
                    continue
                self.prices[(t, z)] = float(p)
        else:
            for item in spec.split(','):
                tz, _, p = item.partition('=')
                t, _, z = tz.partition('@')
                self.prices[(t, z)] = float(p)

    def log(self, kind, rec):
        if self.logf:
            self.logf.write(json.dumps(dict(rec, kind=kind)) + '\n')

    # -- injections
    def take_injection(self, action, region, params, dry_run):
        zone = market = itype = None
        if action == 'RunInstances':
            zone = self._launch_zone(region, params, check=False)
            market = 'spot' if params.get('InstanceMarketOptions.MarketType') == 'spot' \
                else 'on-demand'
            itype = params.get('InstanceType', 'm1.small')
        with self.lock:
            for inj in self.injections:
                if inj['action'] not in (action, '*'):
                    continue
                if dry_run and inj['code'] not in AUTH_CLASS:
                    continue
                if inj.get('region') and inj['region'] != region:
                    continue
                if inj.get('zone') and inj['zone'] != zone:
                    continue
                if inj.get('market') and inj['market'] != market:
                    continue
                if inj.get('instance_type') and inj['instance_type'] != itype:
                    continue
                if inj['count'] != 'always':
                    if inj['count'] <= 0:
                        continue
                    inj['count'] -= 1
                inj['hits'] += 1
                msg = inj.get('message') or default_message(inj['code'], zone, itype)
                raise Ec2Error(inj['code'], msg, inj.get('http_status') or
                               HTTP_STATUS.get(inj['code'], 400))

    # -- state over time
    def tick(self):
        now = time.time()
        with self.lock:
            for iid in self.order:
                i = self.instances[iid]
                if i['state'] == 'pending' and now >= i['ready_at'] and i['booted']:
                    i['state'] = 'running'
                if i['state'] == 'running' and i['interrupt_at'] and now >= i['interrupt_at']:
                    self._shut(i, 'Server.SpotInstanceTermination',
                               'Server.SpotInstanceTermination: Spot instance termination',
                               'Service initiated (%s)' % time.strftime(
                                   '%Y-%m-%d %H:%M:%S GMT', time.gmtime()))
                if i['state'] == 'shutting-down' and now >= i['gone_at'] and i['deleted']:
                    i['state'] = 'terminated'

    def _shut(self, i, code, message, reason):
        i['state'] = 'shutting-down'
        i['state_reason'] = {'Code': code, 'Message': message}
        i['reason'] = reason
        i['gone_at'] = time.time() + self.shutdown_delay_s
        if self.args.boot_hosts:
            i['deleted'] = False
            threading.Thread(target=self._del_host, args=(i,), daemon=True).start()

    # -- hosts
    def _boot_host(self, i, keys):
        cmd, hd = self.args.boot_hosts
        try:
            r = subprocess.run([cmd, 'add', hd, i['id']], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
            addr = r.stdout.decode().strip().splitlines()[-1:] if r.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired) as e:
            r, addr = None, []
            err = str(e)
        else:
            err = r.stderr.decode()[-300:]
        if addr and keys:
            with self.keys_lock:
                ak = os.path.join(hd, 'authorized_keys')
                have = open(ak).read() if os.path.exists(ak) else ''
                with open(ak, 'a') as f:
                    for k in keys:
                        if k not in have:
                            f.write(k + '\n')
        if addr and self.args.imds_port:
            try:
                i['imds_server'] = self._start_imds(i)
            except (OSError, subprocess.SubprocessError, ValueError) as e:
                addr, err = [], 'its IMDS did not start: %s' % e
        with self.lock:
            if addr:
                i['host'] = i['private_ip'] = i['public_ip'] = addr[0]
                i['booted'] = True
            else:
                sys.stderr.write('ec2.py: boot of %s failed: %s\n' % (i['id'], err))
                i['boot_error'] = err
                i['booted'] = True
                if i['state'] == 'pending':
                    self._shut(i, 'Server.InternalError',
                               'Server.InternalError: Internal error on launch', '')

    def _start_imds(self, i):
        """Serves instance i's own IMDS inside its namespace (named in
        DIR/inst-ID/state by netns-hosts.sh): a thread enters the namespace
        (setns affects the calling thread only) and listens there."""
        hd = self.args.boot_hosts[1]
        ns = None
        with open(os.path.join(hd, 'inst-' + i['id'], 'state')) as f:
            for ln in f:
                k, _, v = ln.strip().partition(' ')
                if k == 'netns':
                    ns = v
        if not ns:
            raise ValueError('no namespace for %s' % i['id'])
        subprocess.run(['ip', '-n', ns, 'addr', 'add', IMDS_ADDR + '/32', 'dev', 'lo'],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=30)
        box, ready = {}, threading.Event()
        libc = ctypes.CDLL(None, use_errno=True)

        def serve():
            try:
                fd = os.open('/run/netns/' + ns, os.O_RDONLY)
                try:
                    if libc.setns(fd, CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), 'setns into %s' % ns)
                finally:
                    os.close(fd)
                srv = ThreadingHTTPServer((IMDS_ADDR, self.args.imds_port), ImdsHandler)
                srv.daemon_threads = True
                srv.cloud, srv.instance = self, i
                box['srv'] = srv
            except OSError as e:
                box['err'] = e
            ready.set()
            if 'srv' in box:
                box['srv'].serve_forever(0.2)

        threading.Thread(target=serve, daemon=True).start()
        ready.wait(30)
        if 'srv' not in box:
            raise OSError('IMDS in %s: %s' % (ns, box.get('err', 'timed out')))
        return box['srv']

    def _del_host(self, i):
        cmd, hd = self.args.boot_hosts
        # A boot still in flight ends first: a `del` before its `add` would
        # leave the host up.
        bt = i.get('boot_thread')
        if bt is not None and bt is not threading.current_thread():
            bt.join(200)
        srv = i.pop('imds_server', None)
        if srv is not None:
            srv.shutdown()
            srv.server_close()
        try:
            subprocess.run([cmd, 'del', hd, i['id']], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            sys.stderr.write('ec2.py: del of %s failed: %s\n' % (i['id'], e))
        with self.lock:
            i['deleted'] = True
            i['host'] = None

    def del_all_hosts(self):
        if not self.args.boot_hosts:
            return
        with self.lock:
            live = [i for i in self.instances.values() if not i.get('deleted', True)
                    or i['state'] in ('pending', 'running')]
        for i in live:
            self._del_host(i)   # after its boot, if one is in flight

    # -- operations
    def _launch_zone(self, region, p, check=True):
        sub = p.get('SubnetId')
        az = p.get('Placement.AvailabilityZone')
        if sub:
            z = self.subnets.get(sub)
            if z is None or z[:-1] != region:
                if not check:
                    return None
                raise Ec2Error('InvalidSubnetID.NotFound', "The subnet ID '%s' does not "
                               "exist" % sub)
            if az and az != z and check:
                raise Ec2Error('InvalidParameterCombination', 'The subnet %s is in %s, not '
                               'in the availability zone %s' % (sub, z, az))
            return z
        if az:
            if az not in self.zones or az[:-1] != region:
                if not check:
                    return az
                raise Ec2Error('InvalidParameterValue', "Invalid availability zone: [%s]"
                               % az)
            return az
        return next((z for z in self.zones if z[:-1] == region), None)

    def run_instances(self, region, p):
        digest = hashlib.sha256(json.dumps(
            sorted((k, v) for k, v in p.items() if k not in ('ClientToken', 'DryRun'))
        ).encode()).hexdigest()
        token = p.get('ClientToken')
        with self.lock:
            if token and (region, token) in self.tokens:
                d, rid = self.tokens[(region, token)]
                if d != digest:
                    raise Ec2Error('IdempotentParameterMismatch', 'The client token %s was '
                                   'used with other parameters' % token)
                return self._reservation(rid)
        if token and len(token) > 64:
            raise Ec2Error('InvalidParameterValue', 'ClientToken is longer than 64 characters')
        image = p.get('ImageId')
        if not image:
            raise Ec2Error('MissingParameter', 'The request must contain the parameter ImageId')
        if not re.fullmatch(r'ami-[0-9a-zA-Z]+', image):
            raise Ec2Error('InvalidAMIID.Malformed', 'Invalid id: "%s" (expecting "ami-...")'
                           % image)
        mn, mx = int(p['MinCount']), int(p['MaxCount'])
        if mn < 1 or mx < mn:
            raise Ec2Error('InvalidParameterValue', 'MinCount (%d) must be at least 1 and at '
                           'most MaxCount (%d)' % (mn, mx))
        zone = self._launch_zone(region, p)
        if zone is None:
            raise Ec2Error('Unsupported', 'No availability zone of %s is served' % region)
        itype = p.get('InstanceType', 'm1.small')
        spot = p.get('InstanceMarketOptions.MarketType') == 'spot'
        max_price = p.get('InstanceMarketOptions.SpotOptions.MaxPrice')
        if spot:
            price = self.prices.get((itype, zone))
            if price is None:
                raise Ec2Error('Unsupported', 'There is no Spot capacity for instance type '
                               '%s in availability zone %s.' % (itype, zone))
            if max_price is not None and float(max_price) < price:
                raise Ec2Error('SpotMaxPriceTooLow', 'Your Spot request price of %s is lower '
                               'than the minimum required Spot request fulfillment price of %s.'
                               % (max_price, price))
        tags = {}
        for k, v in p.items():
            m = re.fullmatch(r'TagSpecification\.(\d+)\.ResourceType', k)
            if m and v == 'instance':
                n = m.group(1)
                j = 1
                while 'TagSpecification.%s.Tag.%d.Key' % (n, j) in p:
                    tags[p['TagSpecification.%s.Tag.%d.Key' % (n, j)]] = \
                        p.get('TagSpecification.%s.Tag.%d.Value' % (n, j), '')
                    j += 1
        user_data = None
        keys = []
        if 'UserData' in p:
            try:
                user_data = base64.b64decode(p['UserData'], validate=True).decode('utf-8',
                                                                                 'replace')
            except (binascii.Error, ValueError):
                raise Ec2Error('InvalidParameterValue', 'Invalid BASE64 encoding of user data')
            keys = cloud_config_keys(user_data)
        groups = [v for k, v in sorted(p.items()) if k.startswith('SecurityGroupId.')]
        now = time.time()
        rid = hexid('r')
        ids = []
        with self.lock:
            for n in range(mx):
                self.ip_n += 1
                iid = hexid('i')
                zi = self.zones.index(zone)
                inst = {
                    'id': iid, 'reservation': rid, 'region': region, 'zone': zone,
                    'subnet': p.get('SubnetId') or 'subnet-' + zone, 'state': 'pending',
                    'state_reason': None, 'reason': '', 'type': itype, 'image': image,
                    'key_name': p.get('KeyName'), 'market': 'spot' if spot else 'on-demand',
                    'max_price': max_price, 'client_token': token or '',
                    'private_ip': '10.%d.%d.%d' % (zi, self.ip_n // 250 % 250,
                                                   self.ip_n % 250 + 4),
                    'public_ip': '203.0.113.%d' % (self.ip_n % 250 + 4), 'host': None,
                    'launch_time': now, 'launch_index': n, 'tags': dict(tags),
                    'user_data': user_data, 'spot_notice': None, 'groups': groups,
                    'sir': hexid('sir', 8) if spot else None,
                    'ready_at': now + self.boot_delay_s, 'gone_at': None,
                    'interrupt_at': None, 'booted': not self.args.boot_hosts,
                    'imds': {'tokens': 0, 'reads': 0, 'notices_read': 0, 'unauthorized': 0},
                    'deleted': not self.args.boot_hosts,
                }
                if self.args.boot_hosts:
                    inst['private_ip'] = inst['public_ip'] = None
                self.instances[iid] = inst
                self.order.append(iid)
                ids.append(iid)
            self.reservations[rid] = ids
            if token:
                self.tokens[(region, token)] = (digest, rid)
        if self.args.boot_hosts:
            for iid in ids:
                i = self.instances[iid]
                i['boot_thread'] = threading.Thread(target=self._boot_host, args=(i, keys),
                                                    daemon=True)
                i['boot_thread'].start()
        return self._reservation(rid)

    def _instance_out(self, i):
        o = {
            'InstanceId': i['id'], 'ImageId': i['image'],
            'State': {'Code': STATES[i['state']], 'Name': i['state']},
            'PrivateDnsName': 'ip-%s.ec2.internal' % i['private_ip'].replace('.', '-')
            if i['private_ip'] and i['state'] != 'terminated' else '',
            'PublicDnsName': '', 'StateTransitionReason': i['reason'],
            'KeyName': i['key_name'], 'AmiLaunchIndex': i['launch_index'], 'ProductCodes': [],
            'InstanceType': i['type'], 'LaunchTime': i['launch_time'],
            'Placement': {'AvailabilityZone': i['zone'], 'GroupName': '', 'Tenancy': 'default'},
            'Monitoring': {'State': 'disabled'},
            'Architecture': 'x86_64', 'RootDeviceType': 'ebs', 'RootDeviceName': '/dev/xvda',
            'BlockDeviceMappings': [], 'VirtualizationType': 'hvm',
            'ClientToken': i['client_token'], 'Hypervisor': 'xen', 'EbsOptimized': False,
            'EnaSupport': True,
            'SecurityGroups': [{'GroupId': g, 'GroupName': g} for g in i['groups']],
            'Tags': [{'Key': k, 'Value': v} for k, v in i['tags'].items()] or None,
        }
        if i['state'] != 'terminated':
            o.update({'SubnetId': i['subnet'], 'VpcId': 'vpc-fake' + i['region'].replace('-', ''),
                      'PrivateIpAddress': i['private_ip'], 'PublicIpAddress': i['public_ip']})
        if i['state_reason']:
            o['StateReason'] = i['state_reason']
        elif i['state'] == 'pending':
            o['StateReason'] = {'Code': 'pending', 'Message': 'pending'}
        if i['market'] == 'spot':
            o['InstanceLifecycle'] = 'spot'
            o['SpotInstanceRequestId'] = i['sir']
        return o

    def _reservation(self, rid, only=None):
        ids = [x for x in self.reservations[rid] if only is None or x in only]
        return {'ReservationId': rid, 'OwnerId': OWNER_ID, 'Groups': [],
                'Instances': [self._instance_out(self.instances[x]) for x in ids]}

    def _filter_ok(self, i, name, values):
        tags = i['tags']
        if name.startswith('tag:'):
            k = name[4:]
            return k in tags and any(match(v, tags[k]) for v in values)
        fields = {'instance-state-name': i['state'], 'instance-id': i['id'],
                  'availability-zone': i['zone'], 'instance-type': i['type'],
                  'client-token': i['client_token'], 'reservation-id': i['reservation'],
                  'subnet-id': i['subnet'], 'image-id': i['image'],
                  'key-name': i['key_name'] or '', 'instance-lifecycle':
                  'spot' if i['market'] == 'spot' else '',
                  'instance-state-code': str(STATES[i['state']]),
                  'private-ip-address': i['private_ip'] or ''}
        if name == 'tag-key':
            return any(match(v, k) for v in values for k in tags)
        if name == 'tag-value':
            return any(match(v, x) for v in values for x in tags.values())
        if name not in fields:
            raise Ec2Error('InvalidParameterValue', "The filter '%s' is invalid" % name)
        return any(match(v, fields[name]) for v in values)

    def describe_instances(self, region, p):
        ids = list_param(p, 'InstanceId')
        filters = filters_param(p)
        mr = p.get('MaxResults')
        if mr is not None:
            if ids:
                raise Ec2Error('InvalidParameterCombination', 'The parameter instancesSet '
                               'cannot be used with the parameter maxResults')
            mr = int(mr)
            if mr < 5 or mr > 1000:
                raise Ec2Error('InvalidParameterValue', 'Value ( %d ) for parameter maxResults'
                               ' is invalid. Expecting a value between 5 and 1000.' % mr)
        with self.lock:
            for x in ids:
                if not re.fullmatch(r'i-[0-9a-f]{8,17}', x):
                    raise Ec2Error('InvalidInstanceID.Malformed', 'Invalid id: "%s"' % x)
                if x not in self.instances or self.instances[x]['region'] != region:
                    raise Ec2Error('InvalidInstanceID.NotFound', "The instance ID '%s' does "
                                   "not exist" % x)
            sel = [x for x in self.order if self.instances[x]['region'] == region
                   and (not ids or x in ids)
                   and all(self._filter_ok(self.instances[x], n, v) for n, v in filters)]
            start = decode_token(p.get('NextToken'), 'DescribeInstances', len(sel))
            end = len(sel) if mr is None else min(len(sel), start + mr)
            page = sel[start:end]
            res = []
            for x in page:
                rid = self.instances[x]['reservation']
                if res and res[-1][0] == rid:
                    res[-1][1].append(x)
                else:
                    res.append((rid, [x]))
            out = {'Reservations': [self._reservation(rid, set(xs)) for rid, xs in res]}
            if end < len(sel):
                out['NextToken'] = encode_token('DescribeInstances', end)
            return out

    def terminate_instances(self, region, p):
        ids = list_param(p, 'InstanceId')
        out = []
        with self.lock:
            for x in ids:
                if x not in self.instances or self.instances[x]['region'] != region:
                    raise Ec2Error('InvalidInstanceID.NotFound', "The instance ID '%s' does "
                                   "not exist" % x)
            for x in ids:
                i = self.instances[x]
                prev = i['state']
                if prev in ('pending', 'running', 'stopping', 'stopped'):
                    self._shut(i, 'Client.UserInitiatedShutdown',
                               'Client.UserInitiatedShutdown: User initiated shutdown',
                               'User initiated (%s)' % time.strftime(
                                   '%Y-%m-%d %H:%M:%S GMT', time.gmtime()))
                out.append({'InstanceId': x,
                            'CurrentState': {'Code': STATES[i['state']], 'Name': i['state']},
                            'PreviousState': {'Code': STATES[prev], 'Name': prev}})
        return {'TerminatingInstances': out}

    def create_tags(self, region, p):
        ids = list_param(p, 'ResourceId')
        tags = {}
        j = 1
        while 'Tag.%d.Key' % j in p:
            tags[p['Tag.%d.Key' % j]] = p.get('Tag.%d.Value' % j, '')
            j += 1
        with self.lock:
            for x in ids:
                if x not in self.instances or self.instances[x]['region'] != region:
                    raise Ec2Error('InvalidID', "The ID '%s' is not valid" % x)
            for x in ids:
                self.instances[x]['tags'].update(tags)
        return {}

    def describe_spot_price_history(self, region, p):
        types = list_param(p, 'InstanceType')
        az = p.get('AvailabilityZone')
        prods = list_param(p, 'ProductDescription')
        filters = filters_param(p)
        rows = []
        now = time.time()
        with self.lock:
            for (t, z), price in sorted(self.prices.items()):
                if z[:-1] != region or (types and t not in types) or (az and z != az):
                    continue
                if prods and 'Linux/UNIX' not in prods and 'Linux/UNIX (Amazon VPC)' not in prods:
                    continue
                f = {'availability-zone': z, 'instance-type': t,
                     'product-description': 'Linux/UNIX', 'spot-price': '%.6f' % price}
                ok = True
                for n, vs in filters:
                    if n == 'timestamp':
                        continue
                    if n not in f:
                        raise Ec2Error('InvalidParameterValue', "The filter '%s' is invalid" % n)
                    ok = ok and any(match(v, f[n]) for v in vs)
                if ok:
                    rows.append({'AvailabilityZone': z, 'InstanceType': t,
                                 'ProductDescription': 'Linux/UNIX',
                                 'SpotPrice': '%.6f' % price, 'Timestamp': now})
        start = decode_token(p.get('NextToken'), 'DescribeSpotPriceHistory', len(rows))
        mr = int(p.get('MaxResults', 1000))
        end = min(len(rows), start + mr)
        out = {'SpotPriceHistory': rows[start:end], 'NextToken': ''}
        if end < len(rows):
            out['NextToken'] = encode_token('DescribeSpotPriceHistory', end)
        return out

    def describe_availability_zones(self, region, p):
        return {'AvailabilityZones': [
            {'ZoneName': z, 'State': 'available', 'RegionName': region, 'ZoneId':
             '%s-az%d' % (region.replace('-', '')[:6], k + 1), 'Messages': []}
            for k, z in enumerate(x for x in self.zones if x[:-1] == region)]}

    # -- STS
    def assume_role(self, region, p, akid):
        arn = p['RoleArn']
        m = re.fullmatch(r'arn:aws:iam::([0-9]{12}):role/(.+)', arn)
        if not m or (self.args.role and arn not in self.args.role):
            raise Ec2Error('AccessDenied', 'User %s is not authorized to perform: '
                           'sts:AssumeRole on resource: %s' % (self.creds[akid]['arn'], arn), 403)
        dur = int(p.get('DurationSeconds', 3600))
        if dur < 900 or dur > 43200:
            raise Ec2Error('ValidationError', 'DurationSeconds %d is not 900..43200' % dur)
        key = 'ASIA' + uuid.uuid4().hex[:16].upper()
        c = {'secret': uuid.uuid4().hex + uuid.uuid4().hex[:8],
             'token': 'FwoFakeSessionToken' + uuid.uuid4().hex * 2,
             'expires': time.time() + dur,
             'arn': 'arn:aws:sts::%s:assumed-role/%s/%s' % (m.group(1), m.group(2),
                                                           p['RoleSessionName'])}
        with self.lock:
            self.creds[key] = c
            self.assumed.append({'role_arn': arn, 'session_name': p['RoleSessionName'],
                                 'access_key': key, 'by': akid})
        return {'Credentials': {'AccessKeyId': key, 'SecretAccessKey': c['secret'],
                                'SessionToken': c['token'],
                                'Expiration': now_iso(c['expires'])},
                'AssumedRoleUser': {'AssumedRoleId': 'AROAFAKE:' + p['RoleSessionName'],
                                    'Arn': c['arn']}}

    def get_caller_identity(self, region, p, akid):
        return {'UserId': akid, 'Account': OWNER_ID, 'Arn': self.creds[akid]['arn']}

    # -- control
    def state(self):
        with self.lock:
            insts = []
            for x in self.order:
                i = self.instances[x]
                insts.append({
                    'id': x, 'reservation': i['reservation'], 'region': i['region'],
                    'zone': i['zone'], 'subnet': i['subnet'], 'state': i['state'],
                    'state_code': STATES[i['state']],
                    'state_reason': (i['state_reason'] or {}).get('Code'),
                    'type': i['type'], 'image': i['image'], 'key_name': i['key_name'],
                    'market': i['market'], 'max_price': i['max_price'],
                    'client_token': i['client_token'], 'private_ip': i['private_ip'],
                    'public_ip': i['public_ip'], 'host': i['host'],
                    'launch_time': now_iso(i['launch_time']), 'tags': i['tags'],
                    'user_data': i['user_data'], 'spot_notice': i['spot_notice'],
                    'imds': dict(i['imds']),
                    'security_groups': i['groups']})
            return {'url': self.url, 'regions': self.regions, 'zones': self.zones,
                    'subnets': self.subnets, 'instances': insts, 'calls': self.calls,
                    'violations': self.violations, 'auth_failures': self.auth_failures,
                    'internal_errors': self.internal_errors,
                    'injections': self.injections, 'assumed_roles': self.assumed,
                    'spot_prices': [{'instance_type': t, 'zone': z, 'price': p}
                                    for (t, z), p in sorted(self.prices.items())],
                    'in_flight': self.in_flight, 'max_in_flight': self.max_in_flight}

    def inject(self, d):
        if not isinstance(d, dict) or not d.get('action') or not d.get('code'):
            raise ValueError('an injection needs "action" and "code"')
        count = d.get('count', 1)
        if count != 'always' and not (isinstance(count, int) and count >= 0):
            raise ValueError('"count" is a number >= 0 or "always"')
        if d.get('market') not in (None, 'spot', 'on-demand'):
            raise ValueError('"market" is "spot" or "on-demand"')
        unknown = set(d) - {'action', 'code', 'message', 'zone', 'market', 'instance_type',
                            'region', 'count', 'http_status'}
        if unknown:
            raise ValueError('unknown keys: %s' % ', '.join(sorted(unknown)))
        with self.lock:
            inj = dict(d, count=count, id=self.next_inject, hits=0)
            self.next_inject += 1
            self.injections.append(inj)
            return inj['id']

    def interrupt(self, d):
        x = d.get('instance')
        notice_s = float(d.get('notice_s', self.args.spot_notice_s))
        with self.lock:
            i = self.instances.get(x)
            if i is None:
                raise ValueError('no instance %s' % x)
            if i['state'] not in ('pending', 'running'):
                raise ValueError('instance %s is %s' % (x, i['state']))
            i['interrupt_at'] = time.time() + notice_s
            if d.get('notice', True) is False:
                # Reclaimed with no notice served: only DescribeInstances
                # tells (the state and its reason).
                return {'interrupt_at': i['interrupt_at']}
            i['spot_notice'] = {'action': 'terminate', 'time': now_iso(i['interrupt_at'])[:19]
                                + 'Z'}
            notice = json.dumps(i['spot_notice'])
        if self.args.boot_hosts:
            d = os.path.join(self.args.boot_hosts[1], 'inst-' + x, 'imds', 'spot')
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, 'instance-action.tmp'), 'w') as f:
                f.write(notice)
            os.rename(os.path.join(d, 'instance-action.tmp'),
                      os.path.join(d, 'instance-action'))
        return i['spot_notice']


def match(pattern, value):
    """EC2 filter values: * and ? wildcards."""
    if '*' not in pattern and '?' not in pattern:
        return pattern == value
    rx = ''.join('.*' if c == '*' else '.' if c == '?' else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value) is not None


def list_param(p, name):
    out = []
    j = 1
    while '%s.%d' % (name, j) in p:
        out.append(p['%s.%d' % (name, j)])
        j += 1
    return out


def filters_param(p):
    out = []
    j = 1
    while 'Filter.%d.Name' % j in p:
        out.append((p['Filter.%d.Name' % j], list_param(p, 'Filter.%d.Value' % j)))
        j += 1
    return out


def encode_token(action, offset):
    return base64.urlsafe_b64encode(json.dumps({'a': action, 'o': offset}).encode()).decode()


def decode_token(tok, action, n):
    if not tok:
        return 0
    try:
        d = json.loads(base64.urlsafe_b64decode(tok.encode()))
        if d['a'] != action or not 0 <= int(d['o']) <= n:
            raise ValueError
        return int(d['o'])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise Ec2Error('InvalidPaginationToken', 'The pagination token %s is invalid' % tok)


def cloud_config_keys(text):
    """ssh_authorized_keys of a #cloud-config user data (a YAML list)."""
    if not text.startswith('#cloud-config'):
        return []
    keys, inside = [], False
    for ln in text.splitlines():
        if re.match(r'^\s*ssh_authorized_keys\s*:', ln):
            inside = True
            rest = ln.split(':', 1)[1].strip()
            if rest.startswith('['):
                keys += [k.strip().strip('"\'') for k in rest.strip('[]').split(',') if k.strip()]
                inside = False
            continue
        if inside:
            m = re.match(r'^\s*-\s*(.+?)\s*$', ln)
            if m:
                keys.append(m.group(1).strip('"\''))
            elif ln.strip():
                inside = False
    return keys


def default_message(code, zone, itype):
    if code.startswith('Insufficient'):
        return ('We currently do not have sufficient %s capacity in the Availability Zone you '
                'requested (%s). Our system will be working on provisioning additional '
                'capacity.' % (itype or 'instance', zone))
    return '%s (injected by the fake EC2)' % code


def parse_delay(s):
    if not s:
        return None
    a, _, b = s.partition(':')
    lo, hi = float(a), float(b or a)
    if lo < 0 or hi < lo:
        raise ValueError('--delay-s MIN:MAX with 0 <= MIN <= MAX')
    return (lo, hi)


# ---- HTTP ----------------------------------------------------------------

class ImdsHandler(BaseHTTPRequestHandler):
    """One instance's IMDSv2 (--imds-port), inside its namespace: a token,
    then spot/instance-action; server.cloud and server.instance are set."""
    protocol_version = 'HTTP/1.1'
    server_version = 'EC2ws'

    def log_message(self, fmt, *a):
        pass

    def _send(self, status, text, extra=()):
        data = text.encode()
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        c, i = self.server.cloud, self.server.instance
        n = int(self.headers.get('Content-Length') or 0)
        if n:
            self.rfile.read(n)
        ttl = self.headers.get('X-aws-ec2-metadata-token-ttl-seconds', '')
        if self.path != '/latest/api/token':
            return self._send(404, 'Not Found')
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return self._send(400, 'Bad Request')
        tok = uuid.uuid4().hex
        with c.lock:
            c.imds_tokens.add(tok)
            i['imds']['tokens'] += 1
        return self._send(200, tok, [('X-aws-ec2-metadata-token-ttl-seconds', ttl)])

    def do_GET(self):
        c, i = self.server.cloud, self.server.instance
        with c.lock:
            if self.headers.get('X-aws-ec2-metadata-token') not in c.imds_tokens:
                i['imds']['unauthorized'] += 1
                good, notice = False, None
            else:
                i['imds']['reads'] += 1
                good, notice = True, i['spot_notice']
                if notice and self.path == '/latest/meta-data/spot/instance-action':
                    i['imds']['notices_read'] += 1
        if not good:
            return self._send(401, 'Unauthorized')
        if self.path != '/latest/meta-data/spot/instance-action' or not notice:
            return self._send(404, 'Not Found')
        return self._send(200, json.dumps(notice))


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'AmazonEC2'
    cloud = None  # set in main

    def log_message(self, fmt, *a):
        pass

    def _send(self, status, body, ctype='text/xml;charset=UTF-8', extra=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        try:
            self.end_headers()
            if self.command != 'HEAD':
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client is gone (killed mid-call): what the call did stands,
            # as on EC2; the call's record says "client_gone".
            self.client_gone = True
            self.close_connection = True

    def _body(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            out = b''
            while True:
                n = int(self.rfile.readline().split(b';')[0].strip(), 16)
                if n == 0:
                    while self.rfile.readline().strip():
                        pass
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n) if n else b''

    def do_GET(self):
        self._dispatch('GET')

    def do_POST(self):
        self._dispatch('POST')

    def do_PUT(self):
        self._dispatch('PUT')

    def _dispatch(self, method):
        body = self._body()
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith('/_fake/'):
            return self._control(method, path, body)
        if path.startswith('/latest/'):
            return self._imds(method, path)
        self._ec2(method, body)

    def _json(self, status, obj):
        self._send(status, json.dumps(obj, indent=1), 'application/json')

    def _control(self, method, path, body):
        c = self.cloud
        try:
            d = json.loads(body) if body else {}
            if method == 'GET' and path == '/_fake/state':
                return self._json(200, c.state())
            m = re.fullmatch(r'/_fake/imds/([^/]+)/latest/meta-data/spot/instance-action', path)
            if method == 'GET' and m:
                with c.lock:
                    i = c.instances.get(m.group(1))
                    notice = i and i['spot_notice']
                if not notice:
                    return self._send(404, 'Not Found', 'text/plain')
                return self._send(200, json.dumps(notice), 'text/plain')
            if method == 'POST' and path == '/_fake/inject':
                return self._json(200, {'id': c.inject(d)})
            if method == 'POST' and path == '/_fake/inject/clear':
                with c.lock:
                    c.injections = []
                return self._json(200, {})
            if method == 'POST' and path == '/_fake/interrupt':
                return self._json(200, c.interrupt(d))
            if method == 'POST' and path == '/_fake/spot-price':
                with c.lock:
                    c.prices[(d['instance_type'], d['zone'])] = float(d['price'])
                return self._json(200, {})
            if method == 'POST' and path == '/_fake/config':
                with c.lock:
                    if 'delay_s' in d:
                        c.delay = parse_delay(d['delay_s'])
                    if 'boot_delay_s' in d:
                        c.boot_delay_s = float(d['boot_delay_s'])
                    if 'shutdown_delay_s' in d:
                        c.shutdown_delay_s = float(d['shutdown_delay_s'])
                return self._json(200, {})
            return self._json(404, {'error': 'no control endpoint %s %s' % (method, path)})
        except (ValueError, KeyError, TypeError) as e:
            return self._json(400, {'error': str(e)})

    def _imds(self, method, path):
        c = self.cloud
        role = c.args.imds_role
        if not role:
            return self._send(404, 'Not Found', 'text/plain')
        if method == 'PUT' and path == '/latest/api/token':
            ttl = self.headers.get('X-aws-ec2-metadata-token-ttl-seconds')
            if not ttl or not ttl.isdigit():
                return self._send(400, 'Bad Request', 'text/plain')
            tok = uuid.uuid4().hex
            with c.lock:
                c.imds_tokens.add(tok)
            return self._send(200, tok, 'text/plain',
                              [('X-aws-ec2-metadata-token-ttl-seconds', ttl)])
        with c.lock:
            good = self.headers.get('X-aws-ec2-metadata-token') in c.imds_tokens
        if not good:
            return self._send(401, 'Unauthorized', 'text/plain')
        base = '/latest/meta-data/iam/security-credentials/'
        if path == base:
            return self._send(200, role, 'text/plain')
        if path == base + role:
            return self._send(200, json.dumps({
                'Code': 'Success', 'LastUpdated': now_iso(), 'Type': 'AWS-HMAC',
                'AccessKeyId': c.args.access_key, 'SecretAccessKey': c.args.secret_key,
                'Token': c.args.session_token or 'fake-imds-session-token',
                'Expiration': now_iso(time.time() + 6 * 3600)[:19] + 'Z'}), 'text/plain')
        return self._send(404, 'Not Found', 'text/plain')

    def _ec2(self, method, body):
        c = self.cloud
        rid = str(uuid.uuid4())
        t_arrived = time.time()
        with c.lock:
            c.seq += 1
            seq = c.seq
            c.in_flight += 1
            c.max_in_flight = max(c.max_in_flight, c.in_flight)
            delay = c.delay
        action, region, params, status, code = None, None, {}, 200, None
        model, service = c.model, 'ec2'
        try:
            if delay:
                time.sleep(random.uniform(*delay))
            split = urllib.parse.urlsplit(self.path)
            pairs = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
            ctype = self.headers.get('Content-Type', '')
            if method == 'POST' and body:
                if not ctype.startswith('application/x-www-form-urlencoded'):
                    raise Ec2Error('InvalidParameterValue', 'Content-Type %s: EC2 takes '
                                   'application/x-www-form-urlencoded' % (ctype or 'none'))
                pairs += urllib.parse.parse_qsl(body.decode('utf-8', 'replace'),
                                                keep_blank_values=True)
            for k, v in pairs:
                if k in params:
                    raise Ec2Error('InvalidParameterValue', 'The parameter %s is given twice'
                                   % k)
                params[k] = v
            action = params.pop('Action', None)
            version = params.pop('Version', None)
            try:
                with c.lock:
                    creds = dict(c.creds)
                region, service, akid = verify_sigv4(method, self.path,
                                                     list(self.headers.items()), body, creds,
                                                     c.regions)
                if service == 'sts':
                    model = c.sts
            except Ec2Error as e:
                rec = {'seq': seq, 't': time.time(), 'action': action, 'code': e.code,
                       'message': e.message}
                with c.lock:
                    c.auth_failures.append(rec)
                c.log('auth_failure', rec)
                raise
            try:
                if not action:
                    raise Ec2Error('MissingAction', 'The request must contain the parameter '
                                   'Action')
                if action not in model.ops:
                    raise Ec2Error('InvalidAction', 'The action %s is not valid for this web '
                                   'service.' % action)
                if not version:
                    raise Ec2Error('MissingParameter', 'The request must contain the parameter '
                                   'Version')
                if version != model.version:
                    raise Ec2Error('InvalidParameterValue', 'Version %s: this endpoint serves '
                                   '%s' % (version, model.version))
                model.validate(action, params)
            except Ec2Error as e:
                rec = {'seq': seq, 't': time.time(), 'action': action, 'code': e.code,
                       'message': e.message, 'params': params}
                with c.lock:
                    c.violations.append(rec)
                c.log('violation', rec)
                raise
            dry = params.get('DryRun') == 'true'
            c.take_injection(action, region, params, dry)
            if dry:
                raise Ec2Error('DryRunOperation', 'Request would have succeeded, but DryRun '
                               'flag is set.', 412)
            if service == 'sts':
                fn = {'AssumeRole': c.assume_role,
                      'GetCallerIdentity': c.get_caller_identity}.get(action)
                if fn is None:
                    raise Ec2Error('UnsupportedOperation', 'The fake STS does not implement %s'
                                   % action)
                out = model.response(action, fn(region, params, akid), rid)
            else:
                fn = {'RunInstances': c.run_instances,
                      'DescribeInstances': c.describe_instances,
                      'TerminateInstances': c.terminate_instances, 'CreateTags': c.create_tags,
                      'DescribeSpotPriceHistory': c.describe_spot_price_history,
                      'DescribeAvailabilityZones': c.describe_availability_zones}.get(action)
                if fn is None:
                    raise Ec2Error('UnsupportedOperation', 'The fake EC2 does not implement %s'
                                   % action)
                out = model.response(action, fn(region, params), rid)
            self._send(200, out)
        except Ec2Error as e:
            status, code = e.status, e.code
            self._send(e.status, model.error(e.code, e.message, rid))
        except Exception as e:  # a bug of the fake's: said, counted, answered
            status, code = 500, 'InternalError'
            import traceback
            traceback.print_exc()
            with c.lock:
                c.internal_errors.append({'seq': seq, 'action': action, 'error': repr(e)})
            self._send(500, error_xml('InternalError', 'fake EC2 bug: %r' % e, rid))
        finally:
            rec = {'seq': seq, 't': time.time(), 't_arrived': t_arrived, 'action': action,
                   'region': region, 'service': service, 'status': status, 'code': code, 'params': params,
                   'client_gone': getattr(self, 'client_gone', False)}
            with c.lock:
                c.in_flight -= 1
                c.calls.append(rec)
            c.log('call', rec)


def main():
    ap = argparse.ArgumentParser(description='A fake EC2 endpoint for tests (see the top '
                                 'of this file).')
    ap.add_argument('--host', default='127.0.0.1')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--url-file', required=True)
    ap.add_argument('--access-key', default='AKIDFAKEEC2TEST')
    ap.add_argument('--secret-key', default='fake-secret-key')
    ap.add_argument('--session-token')
    ap.add_argument('--zones', default=DEFAULT_ZONES)
    ap.add_argument('--subnet', action='append')
    ap.add_argument('--spot-prices')
    ap.add_argument('--boot-delay-s', type=float, default=0.3)
    ap.add_argument('--shutdown-delay-s', type=float, default=0.3)
    ap.add_argument('--spot-notice-s', type=float, default=2.0)
    ap.add_argument('--delay-s')
    ap.add_argument('--boot-hosts', nargs=2, metavar=('CMD', 'DIR'))
    ap.add_argument('--imds-role')
    ap.add_argument('--imds-port', type=int, default=0)
    ap.add_argument('--role', action='append')
    ap.add_argument('--log')
    args = ap.parse_args()
    if not args.host.startswith('127.') and args.host != '::1':
        sys.exit('ec2.py: --host must be a loopback address')
    if any(not re.fullmatch(r'[a-z]+-[a-z]+-[0-9]+[a-z]', z) for z in args.zones.split(',')):
        sys.exit('ec2.py: --zones: each zone is REGION plus a letter (us-east-1a)')
    try:
        parse_delay(args.delay_s)
    except ValueError as e:
        sys.exit('ec2.py: %s' % e)
    cloud = Cloud(args)
    Handler.cloud = cloud
    ThreadingHTTPServer.request_queue_size = 1024
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True
    cloud.url = 'http://%s:%d' % (args.host, srv.server_address[1])

    def ticker():
        while not cloud.stopping:
            cloud.tick()
            time.sleep(0.02)
    threading.Thread(target=ticker, daemon=True).start()

    def stop(signum, frame):
        cloud.stopping = True
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    tmp = args.url_file + '.tmp'
    with open(tmp, 'w') as f:
        f.write(cloud.url + '\n')
    os.rename(tmp, args.url_file)
    srv.serve_forever()
    cloud.del_all_hosts()
    srv.server_close()


if __name__ == '__main__':
    main()
