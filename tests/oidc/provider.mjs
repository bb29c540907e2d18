// A real OpenID Connect provider (oidc-provider) for zhiku's identity tests; started and stopped
// by scripts/oidc-provider.sh, which documents the layout and the environment.
//
//   node provider.mjs keygen HOME [--drop-old]   add a new RSA signing key in front of HOME/jwks.json
//                                                (the one the provider signs with); its private
//                                                key also goes to HOME/keys/KID.pem (public: KID.pub.pem); --drop-old
//                                                withdraws every older key
//   node provider.mjs serve                       serve on ZHIKU_OIDC_PORT from ZHIKU_OIDC_HOME
//
// Who signs in: the authorization request's `login_hint` when it has one (tests), or the name
// typed into this provider's sign-in form (the browser test). Each person's groups are read from
// HOME/users.json ({"li.lei@corp": {"groups": ["hr"]}}) at every sign-in, so a test can change
// them. Access tokens are JWTs for the audience ZHIKU_OIDC_AUDIENCE (default "urn:zhiku"; the provider wants an absolute URI) and carry
// `email` and `groups`; consent is granted as asked.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const [, , command, ...args] = process.argv;

if (command === 'keygen') {
  const home = args[0];
  const dropOld = args.includes('--drop-old');
  fs.mkdirSync(path.join(home, 'keys'), { recursive: true });
  const file = path.join(home, 'jwks.json');
  const old = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')).keys : [];
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = `k-${Date.now().toString(36)}-${crypto.randomBytes(3).toString('hex')}`;
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  fs.writeFileSync(path.join(home, 'keys', `${kid}.pem`), privateKey.export({ format: 'pem', type: 'pkcs8' }));
  const publicKey = crypto.createPublicKey(privateKey);
  fs.writeFileSync(path.join(home, 'keys', `${kid}.pub.pem`), publicKey.export({ format: 'pem', type: 'spki' }));
  const keys = dropOld ? [jwk] : [jwk, ...old];
  fs.writeFileSync(file, JSON.stringify({ keys }), { mode: 0o600 });
  console.log(kid);
} else if (command === 'serve') {
  await serve();
} else {
  console.error('usage: provider.mjs keygen HOME [--drop-old] | serve');
  process.exit(2);
}

async function serve() {
  const { default: Provider } = await import('oidc-provider');
  const home = process.env.ZHIKU_OIDC_HOME;
  const port = Number(process.env.ZHIKU_OIDC_PORT);
  const host = process.env.ZHIKU_OIDC_HOST || '127.0.0.1';
  const audience = process.env.ZHIKU_OIDC_AUDIENCE || 'urn:zhiku';
  const issuer = `http://${host}:${port}`;
  const jwks = JSON.parse(fs.readFileSync(path.join(home, 'jwks.json'), 'utf8'));
  const users = () => {
    try {
      return JSON.parse(fs.readFileSync(path.join(home, 'users.json'), 'utf8'));
    } catch {
      return {};
    }
  };
  const groupsOf = (id) => users()[id]?.groups ?? [];

  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'zhiku-web',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      // Loopback redirects match on any port (RFC 8252), so a server on a test's free port fits.
      redirect_uris: ['http://127.0.0.1/', 'http://localhost/'],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    }],
    jwks,
    claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
    scopes: ['openid', 'email', 'groups'],
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => {
          if (resource !== audience) throw new Provider.errors.InvalidTarget();
          return {
            scope: 'openid email groups',
            audience,
            accessTokenTTL: Number(process.env.ZHIKU_OIDC_TOKEN_TTL || 600),
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    findAccount: (ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, email: id, groups: groupsOf(id) }),
    }),
    extraTokenClaims: (ctx, token) => (token.kind === 'AccessToken'
      ? { email: token.accountId, groups: groupsOf(token.accountId) }
      : undefined),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    clientBasedCORS: () => true,
    pkce: { required: () => true },
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  });
  provider.proxy = false;

  // The interaction: sign in (by login_hint, or by the form), then consent as asked.
  provider.use(async (ctx, next) => {
    const m = /^\/interaction\/([\w-]+)$/.exec(ctx.path);
    if (!m) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params, session, grantId } = details;
    let result;
    if (prompt.name === 'login') {
      let login = params.login_hint;
      if (!login && ctx.method === 'POST') {
        login = new URLSearchParams(await body(ctx.req)).get('login');
      }
      if (!login) {
        ctx.type = 'html';
        ctx.body = `<!doctype html><title>Sign in</title><form method="post">
<label>User <input name="login" autofocus></label> <button type="submit">Sign in</button></form>`;
        return undefined;
      }
      result = { login: { accountId: login.trim() } };
    } else if (prompt.name === 'consent') {
      const grant = grantId
        ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const d = prompt.details;
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      for (const [indicator, scope] of Object.entries(d.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scope.join(' '));
      }
      result = { consent: { grantId: await grant.save() } };
    } else {
      ctx.throw(501, `no interaction for ${prompt.name}`);
    }
    const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: prompt.name !== 'login' });
    ctx.status = 303;
    ctx.redirect(to);
    return undefined;
  });

  provider.listen(port, host, () => console.log(`listening ${issuer}`));
}

function body(req) {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      text += c;
      if (text.length > 4096) req.destroy();
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
