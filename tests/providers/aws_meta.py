#!/usr/bin/python3
"""aws_meta.py: a small IMDSv2 and STS endpoint on loopback for
tests/providers/test_aws_creds.c.  usage: aws_meta.py PORT_FILE SOURCE_KEY

IMDSv2: PUT /latest/api/token (needs X-aws-ec2-metadata-token-ttl-seconds),
then with X-aws-ec2-metadata-token: GET /latest/meta-data/iam/security-
credentials/ -> "role-a", and .../role-a -> JSON credentials.
STS: POST / Action=AssumeRole signed by SOURCE_KEY (the Credential of the
Authorization header; the signature itself is not checked) -> credentials
"ASIAROLE..."; otherwise ErrorResponse AccessDenied (403).
Each request is appended to PORT_FILE.log as one line."""
import http.server, sys, time, urllib.parse

TOKEN = 'imds-token-1'


def iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, body, ctype='text/plain'):
        b = body.encode()
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def note(self, extra=''):
        with open(sys.argv[1] + '.log', 'a') as f:
            f.write('%s %s %s\n' % (self.command, self.path, extra))

    def do_PUT(self):
        self.note()
        if self.path == '/latest/api/token' and self.headers.get('X-aws-ec2-metadata-token-ttl-seconds'):
            return self.send(200, TOKEN)
        self.send(400, 'no ttl')

    def do_GET(self):
        self.note()
        if self.headers.get('X-aws-ec2-metadata-token') != TOKEN:
            return self.send(401, 'no token')
        base = '/latest/meta-data/iam/security-credentials/'
        if self.path == base:
            return self.send(200, 'role-a\n')
        if self.path == base + 'role-a':
            return self.send(200, '{"Code": "Success", "AccessKeyId": "ASIAIMDS", '
                             '"SecretAccessKey": "imds-secret", "Token": "imds-session", '
                             '"Expiration": "%s"}' % iso(time.time() + 3600), 'application/json')
        self.send(404, 'not found')

    def do_POST(self):
        n = int(self.headers.get('Content-Length') or 0)
        form = urllib.parse.parse_qs(self.rfile.read(n).decode())
        auth = self.headers.get('Authorization') or ''
        self.note(' '.join('%s=%s' % (k, v[0]) for k, v in sorted(form.items())))
        if (form.get('Action') == ['AssumeRole'] and 'Credential=%s/' % sys.argv[2] in auth
                and '/sts/aws4_request' in auth):
            return self.send(200, '<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                             '<AssumeRoleResult><Credentials><AccessKeyId>ASIAROLE</AccessKeyId>'
                             '<SecretAccessKey>role-secret</SecretAccessKey><SessionToken>role-session'
                             '</SessionToken><Expiration>%s</Expiration></Credentials>'
                             '</AssumeRoleResult><ResponseMetadata><RequestId>r-1</RequestId>'
                             '</ResponseMetadata></AssumeRoleResponse>' % iso(time.time() + 900),
                             'text/xml')
        self.send(403, '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>'
                  '<Message>not allowed</Message></Error><RequestId>r-2</RequestId></ErrorResponse>',
                  'text/xml')


s = http.server.HTTPServer(('127.0.0.1', 0), H)
with open(sys.argv[1] + '.tmp', 'w') as f:
    f.write('http://127.0.0.1:%d' % s.server_address[1])
import os
os.rename(sys.argv[1] + '.tmp', sys.argv[1])
s.serve_forever()
