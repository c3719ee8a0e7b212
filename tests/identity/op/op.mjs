// A real OpenID Provider for Cairn's SSO tests: panva/oidc-provider (OpenID Certified), configured
// from a JSON file (argv[2]): issuer, port, clients, accounts (sub -> claims) and the signing keys.
// Accounts sign in through oidc-provider's development interactions (login form, then consent).
// Configuration reference: https://github.com/panva/node-oidc-provider/blob/main/docs/README.md
import { readFileSync } from "node:fs";
import Provider from "oidc-provider";

const conf = JSON.parse(readFileSync(process.argv[2], "utf8"));

const provider = new Provider(conf.issuer, {
  clients: conf.clients,
  jwks: { keys: conf.keys },
  // Code flow: put the End-User claims into the ID token as well (Entra and Okta do this for email/tid/oid).
  conformIdTokenClaims: false,
  claims: {
    openid: ["sub", "tid", "oid"],
    email: ["email", "email_verified"],
    profile: ["name"],
  },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  ttl: { IdToken: conf.idTokenTtl || 3600 },
  async findAccount(ctx, id) {
    const claims = conf.accounts[id];
    if (!claims) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...claims }; } };
  },
});
// Loopback http issuer in tests: oidc-provider only warns about it.
provider.proxy = false;
provider.listen(conf.port, "127.0.0.1", () => {
  console.log(`op listening ${conf.issuer}`);
});
