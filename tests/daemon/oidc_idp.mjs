// oidc_idp.mjs: the OpenID provider tests/daemon/oidc.sh logs in with: npm's
// oidc-provider (OpenID Certified), two issuers in one process.
//   node oidc_idp.mjs PORTS_FILE K2_FLAG JWKS_LOG PORT1 KEYS_FILE [REDIRECT_URI]
// The first issuer signs access tokens (client_credentials, resource
// indicators, RFC 9068 JWTs) for the audience "spillway" with key k1, or k2
// for resource urn:spillway:k2; its JWKS hides k2 until K2_FLAG exists (a
// key rotation) and every JWKS fetch appends a line to JWKS_LOG.  The second
// issuer shares the keys, so its tokens verify but name another issuer.
// Each client stands for a user whose groups claim is fixed below; client
// "short" gets tokens that live 1 s.  The first issuer listens on PORT1 (0:
// any), the second on any port; PORTS_FILE gets "PORT1 PORT2" once both do.
// The two RSA keys are made once and kept in KEYS_FILE (making them took 2 s
// of a loaded machine's time).
// With REDIRECT_URI (the dashboard's /ui/, tests/cli/deb.sh), a public
// client "dashboard" logs users in with authorization code + PKCE through
// oidc-provider's own login page (devInteractions: any login name is
// accepted, the password is not checked; no consent page, as for a company's
// own application: loadExistingGrant grants it openid and the API's scope);
// its access tokens are
// JWTs for the audience "spillway" (the one resource it was granted), with
// the user's groups below, and its origin may call the token endpoint
// (CORS).
import http from 'node:http';
import fs from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const [portsFile, k2Flag, jwksLog, port1, keysFile, dashRedirect] = process.argv.slice(2);
const key = (kid) => ({
  ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid, use: 'sig', alg: 'RS256',
});
let keys;
try {
  keys = JSON.parse(fs.readFileSync(keysFile, 'utf8'));
} catch {
  keys = [key('k1'), key('k2')];
  fs.writeFileSync(`${keysFile}.${process.pid}`, JSON.stringify(keys), { mode: 0o600 });
  fs.renameSync(`${keysFile}.${process.pid}`, keysFile);
}
const groups = {
  'ml-user': ['ml', 'staff'], wall: ['wall-screens'], ops: ['platform'], nobody: ['guests'],
  short: ['ml'],
  alice: ['ml', 'staff'], // users of the dashboard's login
};
const clients = Object.keys(groups).map((id) => ({
  client_id: id, client_secret: `secret-${id}-0123456789abcdef`, grant_types: ['client_credentials'],
  redirect_uris: [], response_types: [], scope: 'api',
}));
if (dashRedirect) {
  clients.push({
    client_id: 'dashboard', token_endpoint_auth_method: 'none', application_type: 'web',
    grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: [dashRedirect],
    scope: 'openid api',
  });
}

function provider(issuer, logJwks) {
  const p = new Provider(issuer, {
    clients,
    jwks: { keys },
    scopes: ['api'],
    features: {
      devInteractions: { enabled: !!dashRedirect },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:spillway',
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, ri, client) => {
          const aud = { 'urn:spillway': 'spillway', 'urn:spillway:k2': 'spillway', 'urn:other': 'other-api' }[ri];
          if (!aud) throw new errors.InvalidTarget();
          return {
            scope: 'api', audience: aud, accessTokenFormat: 'jwt',
            accessTokenTTL: client.clientId === 'short' ? 1 : 600,
            jwt: { sign: { alg: 'RS256', kid: ri === 'urn:spillway:k2' ? 'k2' : 'k1' } },
          };
        },
      },
    },
    extraTokenClaims: (ctx, token) => ({ groups: groups[token.accountId || token.clientId] || [] }),
    findAccount: (ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, preferred_username: id, groups: groups[id] || [] }),
    }),
    loadExistingGrant: async (ctx) => {
      const { client, session, provider: op } = ctx.oidc;
      const id = ctx.oidc.result?.consent?.grantId || session.grantIdFor(client.clientId);
      if (id) return op.Grant.find(id);
      if (client.clientId !== 'dashboard') return undefined;
      const grant = new op.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope('openid api');
      grant.addResourceScope('urn:spillway', 'api');
      await grant.save();
      return grant;
    },
    clientBasedCORS: (ctx, origin, client) => !!dashRedirect && client.clientId === 'dashboard' &&
      origin === new URL(dashRedirect).origin,
  });
  if (logJwks) {
    p.use(async (ctx, next) => {
      await next();
      if (ctx.path !== '/jwks') return;
      fs.appendFileSync(jwksLog, 'jwks\n');
      if (!fs.existsSync(k2Flag)) {
        const body = typeof ctx.body === 'string' ? JSON.parse(ctx.body) : ctx.body;
        ctx.body = { keys: body.keys.filter((k) => k.kid !== 'k2') };
      }
    });
  }
  return p;
}

function serve(logJwks, want) {
  return new Promise((resolve) => {
    const srv = http.createServer();
    srv.listen(want, '127.0.0.1', () => {
      const port = srv.address().port;
      srv.on('request', provider(`http://127.0.0.1:${port}`, logJwks).callback());
      resolve(port);
    });
  });
}

const ports = [await serve(true, Number(port1 || 0)), await serve(false, 0)];
fs.writeFileSync(`${portsFile}.tmp`, ports.join(' ') + '\n');
fs.renameSync(`${portsFile}.tmp`, portsFile);
